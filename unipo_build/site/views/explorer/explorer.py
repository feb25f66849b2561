"""Training Explorer: a whole run as a radial plot, one concentric ring per metric.

Angle is the step (the first step at the top, clockwise), each ring one metric drawn as a
line whose distance from the ring's base is the metric's value (UNIPO paper, section 3.1).
The reader picks 1 to 4 metrics, switches a robust scale, magnifies a stretch of training
with an angular fisheye, hovers to read every ring at one step, and clicks to open the nearest
logged step in the Step Inspector.

Build time (this module, with ``explorer_series``)
    :func:`collect_series` takes the steps from the run's one reader and downsamples every metric
    to at most ``n_out`` points, with the rollout boundaries, min/max and 1st-99th percentiles
    (``explorer_series``). :func:`explorer_html` writes the
    chips, controls, held-out evaluation table and one ``<template>`` of JSON data
    holding a Vega-Lite spec (built with Altair) and the compact series of *all* the run's
    metrics. Nothing else is embedded; token files are fetched by the Step Inspector.

Browser (``unipo_build/site/views/explorer/explorer.js``)
    decodes the series, puts the chosen metrics' rows into the spec's ``series`` dataset and
    draws it with ``UNIPO.embed``.

Why Vega-Lite params rather than regenerating the spec in JavaScript: the spec is written
once, here, with the geometry as Vega expressions of six params (``metrics``, ``robust``,
``focus``, ``mag``, ``hover``, ``picked``). The robust scale and the fisheye only set signals
on the live view; choosing metrics also swaps the rows of ``series`` (the page holds every
metric, the view only the chosen ones: Vega's cost grows with the rows it holds). Vega's
dataflow then recomputes just the affected transforms (a few thousand points, not a new
chart), so dragging the fisheye stays smooth. There is no second copy of the layout in
JavaScript to keep in step with this one; the browser script holds the state, the controls,
the hover read-out and the inverse of the fisheye (pointer angle to step). Ring positions are computed as ``x = r sin(theta)``, ``y = r cos(theta)`` on
square linear scales (theta clockwise from the top) instead of Vega-Lite's arc/theta
encodings, because a ring is a *line* whose radius carries the value: arcs would draw bars.
"""

from __future__ import annotations

import hashlib
import json
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from unipo_build.core import runlog
from unipo_build.core.numbers import fmt_fixed, fmt_metric, fmt_num, fmt_pct
from unipo_build.core.heldout import accuracy_curve
from unipo_build.site.render import escape_text, json_data
from unipo_build.core.runs import Run
from unipo_build.core.schema import EvalRecord, metric_info
from unipo_build.site.palette import metric_colour
from unipo_build.site.views.explorer.explorer_series import (
    DEFAULT_METRICS,
    DOMAIN,
    MAGNIFICATIONS,
    MAX_BOUNDARIES,
    MAX_RINGS,
    MAX_TOKEN_STEPS,
    METRIC_UNITS,
    POINTS_PER_RING,
    R_IN,
    R_LABEL,
    R_OUT,
    RING_COLOURS,
    RING_GAP,
    ROBUST_MARGIN,
    ROBUST_QUANTILES,
    MetricSeries,
    RunSeries,
    _deltas,
    _num,
    collect_series,
    default_metrics,
    encode_values,
    fisheye_expr,
    nice_step,
    outlier_flattens,
    series_from_table,
    step_ticks,
)


# ---------------------------------------------------------------------------
# The Vega-Lite spec (Altair)
# ---------------------------------------------------------------------------

def _geometry_exprs(s0: int | str, span: int | str) -> dict[str, str]:
    """Vega expressions shared by the layers (datum fields u, ring slot j -> x, y)."""
    n = "max(1, length(metrics))"
    band = f"(({R_OUT} - {R_IN}) / {n})"
    return {
        "u": f"(datum.s - {s0}) / {span}",
        "phi": fisheye_expr("datum.u"),
        "base": f"{R_OUT} - (datum.j + 1) * {band} + {RING_GAP / 2} * {band}",
        "height": f"{1 - RING_GAP} * {band}",
    }


def explorer_spec(s0: int, span: int, selected: Sequence[str], size: int = 480, *, validate: bool = False) -> dict:
    """The radial chart as a Vega-Lite spec; data comes in the named datasets
    ``series`` (m, s, v, lo, hi, qlo, qhi; interp = 1 on points the browser interpolated),
    ``boundaries`` (s, i, g) and ``ticks`` (s, l, g).

    Altair takes about a third of a second to assemble it, so it is assembled once per size, with the
    run's first step and span as placeholders in its expressions, which each run's copy fills, as it
    fills the metrics the chart opens on (the ``metrics`` parameter).
    Schema validation is off in the build and on in the tests (``validate=True``).
    """
    text = _explorer_spec_json(int(size), validate)
    s0, span = int(s0), int(span)
    for token, value in ((_S0, s0), (_SPAN, span), (_END, s0 + span)):
        text = text.replace(token, str(value))
    spec = json.loads(text)
    next(p for p in spec["params"] if p["name"] == "metrics")["value"] = list(selected)
    return spec


#: Placeholders for a run's first step, its span and its last step in the cached spec's expressions.
_S0, _SPAN, _END = "unipoFirstStep", "unipoStepSpan", "unipoLastStep"


@lru_cache(maxsize=8)
def _explorer_spec_json(size: int, validate: bool) -> str:
    s0, span, end = _S0, _SPAN, _END
    import altair as alt

    geo = _geometry_exprs(s0, span)
    two_pi = "2 * PI"
    scale = alt.Scale(domain=[-DOMAIN, DOMAIN], nice=False, zero=False)
    x_enc = alt.X("x:Q", scale=scale, axis=None)
    y_enc = alt.Y("y:Q", scale=scale, axis=None)
    px_per_unit = f"(width / {2 * DOMAIN})"

    def polar(chart: Any, radius: str, suffix: str = "") -> Any:
        return chart.transform_calculate(
            **{f"x{suffix}": f"({radius}) * sin(datum.theta)", f"y{suffix}": f"({radius}) * cos(datum.theta)"}
        )

    def at_step(chart: Any) -> Any:
        return chart.transform_calculate(u=geo["u"]).transform_calculate(phi=geo["phi"]).transform_calculate(
            theta=f"{two_pi} * datum.phi")

    layers = []

    # Faint circles: the base (lowest value) and top (highest) of every ring.
    guide = alt.Chart(alt.sequence(0, MAX_RINGS * 2 * 121, as_="k"), name="guide").transform_calculate(
        j="floor(datum.k / 242)", edge="floor((datum.k % 242) / 121)", a="datum.k % 121",
        circle="floor(datum.k / 121)",
    ).transform_filter("datum.j < length(metrics)").transform_calculate(
        theta=f"{two_pi} * datum.a / 120",
    ).transform_calculate(base=geo["base"], height=geo["height"])
    guide = polar(guide, "datum.base + datum.edge * datum.height")
    layers.append(guide.mark_line(strokeWidth=0.75, opacity=0.35, color="#888888").encode(
        x=x_enc, y=y_enc, detail="circle:N", order="a:Q",
        strokeDash=alt.StrokeDash("edge:N", scale=alt.Scale(domain=[0, 1], range=[[1, 0], [2, 3]]), legend=None)))

    # Rollout boundaries: thin radial ticks outside the outer ring, thinned where they would
    # fall closer than 5 px (datum.g: steps to the next boundary, datum.i: its ordinal).
    bnd = at_step(alt.Chart(alt.Data(name="boundaries"), name="boundary")).transform_calculate(
        phi2=fisheye_expr(f"(datum.s + datum.g - {s0}) / {span}"),
    ).transform_calculate(
        gap_px=f"max(0.01, {two_pi} * (datum.phi2 - datum.phi) * {R_OUT} * {px_per_unit})",
    ).transform_calculate(
        every="pow(2, max(0, ceil(log(5 / datum.gap_px) / LN2)))",
    ).transform_filter("datum.i % datum.every == 0")
    bnd = polar(polar(bnd, f"{R_OUT + 0.025}"), f"{R_OUT + 0.065}", "2")
    layers.append(bnd.mark_rule(strokeWidth=0.75, opacity=0.55, color="#888888").encode(
        x=x_enc, y=y_enc, x2="x2:Q", y2="y2:Q"))

    # Step ticks and labels on the rim; finer levels only where they have room.
    # (The room of the last label ends at the seam, where the first step's label is.)
    ticks = at_step(alt.Chart(alt.Data(name="ticks"), name="tick")).transform_calculate(
        phi2=fisheye_expr(f"(min(datum.s + datum.g, {end}) - {s0}) / {span}"),
    ).transform_calculate(
        gap_px=f"{two_pi} * (datum.phi2 - datum.phi) * {R_LABEL} * {px_per_unit}",
    ).transform_filter(
        f"datum.s == {s0} || datum.gap_px >= (datum.l == 0 ? 30 : 40)"
    ).transform_calculate(
        label="format(datum.s, ',')",
    )
    tick_marks = polar(polar(ticks, f"{R_OUT + 0.075}"), f"{R_OUT + 0.105}", "2")
    layers.append(tick_marks.mark_rule(strokeWidth=1, opacity=0.7, color="#888888").encode(
        x=x_enc, y=y_enc, x2="x2:Q", y2="y2:Q"))
    labels = polar(ticks.properties(name="ticklabel"), f"{R_LABEL + 0.02}")
    layers.append(labels.mark_text(fontSize=10, baseline="middle", align="center").encode(
        x=x_enc, y=y_enc, text="label:N"))

    # The rings: slot j shows metrics[j] (0 = outermost), value scaled into the ring's band.
    # robust: the metrics drawn on their robust range (explorer.js chooses them: the automatic
    # scale takes those one outlier would flatten).
    is_robust = "indexof(robust, datum.m) >= 0"
    norm = (f"{is_robust} ? clamp((datum.v - datum.qlo) / max(1e-12, datum.qhi - datum.qlo), 0, 1)"
            " : (datum.hi > datum.lo ? (datum.v - datum.lo) / (datum.hi - datum.lo) : 0.5)")
    clipped = f"{is_robust} && !datum.interp && (datum.v < datum.qlo || datum.v > datum.qhi) && datum.qhi > datum.qlo"

    def ring_points(j: int | None, name: str) -> Any:
        chart = alt.Chart(alt.Data(name="series"), name=name)
        if j is None:
            chart = chart.transform_filter("indexof(metrics, datum.m) >= 0").transform_calculate(
                j="indexof(metrics, datum.m)")
        else:
            chart = chart.transform_filter(f"datum.m === metrics[{j}]").transform_calculate(j=str(j))
        chart = at_step(chart).transform_calculate(norm=norm, clipped=clipped).transform_calculate(
            base=geo["base"], height=geo["height"])
        return polar(chart, "datum.base + datum.norm * datum.height")

    for j in range(MAX_RINGS):
        layers.append(ring_points(j, f"ring{j}").mark_line(
            strokeWidth=1.4, color=RING_COLOURS[j], strokeJoin="round", interpolate="linear",
        ).encode(x=x_enc, y=y_enc, order="s:Q"))
    layers.append(ring_points(None, "clipmark").transform_filter("datum.clipped").mark_point(
        size=14, strokeWidth=1, filled=False, color="#888888", opacity=0.9).encode(x=x_enc, y=y_enc))

    # Hover and picked step: radial rules across all rings.
    def rule_at(signal: str, name: str, width: float, dash: list[int] | None) -> Any:
        chart = alt.Chart(alt.Data(values=[{"kind": name}]), name=name).transform_filter(
            f"{signal} >= {s0}").transform_calculate(s=signal)
        chart = polar(polar(at_step(chart), f"{R_IN - 0.03}"), f"{R_OUT + 0.07}", "2")
        mark = {"strokeWidth": width, "color": "#888888"}
        if dash:
            mark["strokeDash"] = dash
        return chart.mark_rule(**mark).encode(x=x_enc, y=y_enc, x2="x2:Q", y2="y2:Q")

    layers.append(rule_at("hover", "hoverrule", 1, [3, 3]))
    layers.append(rule_at("picked", "pickrule", 2.5, None))
    # The magnified stretch: an arc inside the innermost ring where the fisheye spreads steps
    # at least sqrt(d+1) times (half the focus's magnification d+1, on a log scale). With
    # Sarkar-Brown's G'(x) = (d+1)/(dx+1)^2 that is x <= ((d+1)^(1/4) - 1)/d on each side.
    reach = "(mag > 0 ? (pow(mag + 1, 0.25) - 1) / mag : 0)"
    lens = alt.Chart(alt.sequence(0, 65, as_="k"), name="lens").transform_filter("mag > 0").transform_calculate(
        u=f"focus - focus * {reach} + datum.k / 64 * {reach}",  # from f - f*reach to f + (1-f)*reach
    ).transform_calculate(phi=fisheye_expr("datum.u")).transform_calculate(theta=f"{two_pi} * datum.phi")
    lens = polar(lens, f"{R_IN - 0.05}")
    layers.append(lens.mark_line(strokeWidth=2.5, strokeCap="round", color="#888888", opacity=0.85).encode(
        x=x_enc, y=y_enc, order="k:Q"))

    # Centre: the hovered step, or the number of steps.
    centre = alt.Chart(alt.Data(values=[{"kind": "centre"}]), name="centre").transform_calculate(
        x="0", y="0.05",
        big=f"hover >= {s0} ? format(hover, ',') : format({span}, ',')",
        small=f"hover >= {s0} ? 'step' : 'steps'",
    )
    layers.append(centre.mark_text(fontSize=20, fontWeight="bold", baseline="middle").encode(
        x=x_enc, y=y_enc, text="big:N"))
    layers.append(centre.properties(name="centresmall").transform_calculate(y="-0.14").mark_text(
        fontSize=11, baseline="middle").encode(x=x_enc, y=y_enc, text="small:N"))

    chart = alt.layer(*layers).add_params(
        alt.param(name="metrics", value=[]),  # explorer_spec fills the run's
        alt.param(name="robust", value=[]),
        alt.param(name="focus", value=0.5),
        alt.param(name="mag", value=0),
        alt.param(name="hover", value=-1),
        alt.param(name="picked", value=-1),
    ).properties(width=size, height=size, autosize={"type": "none"}, padding=0).configure_view(
        stroke=None
    ).configure(aria=False)  # the chart's container is the accessible slider; no ARIA per path
    spec = chart.to_dict(validate=validate)
    # Empty named datasets: the browser fills them from the compact payload.
    spec["datasets"] = {**spec.get("datasets", {}), "series": [], "boundaries": [], "ticks": []}
    return json.dumps(spec)


# ---------------------------------------------------------------------------
# HTML
# ---------------------------------------------------------------------------

def _payload(run: Run, series: RunSeries, selected: list[str]) -> dict:
    token_steps = run.token_steps()
    tokens_total = len(token_steps)
    if tokens_total > MAX_TOKEN_STEPS:
        picks = np.unique(np.linspace(0, tokens_total - 1, MAX_TOKEN_STEPS).round().astype(int))
        token_steps = [token_steps[i] for i in picks]
    ticks = step_ticks(series.first_step, series.last_step)
    metrics = []
    for name, m in series.metrics.items():
        info = metric_info(name)
        metrics.append({
            "name": name, "label": info.label, "description": info.description, "group": info.group,
            "unit": METRIC_UNITS.get(name, ""), "flat": outlier_flattens(m),
            "last": _num(m.last, 6), "lo": _num(m.low, 6), "hi": _num(m.high, 6),
            "qlo": _num(m.q_low, 6), "qhi": _num(m.q_high, 6), "logged": m.logged, "exact": m.exact,
            "s": _deltas(m.steps), **encode_values(m.values, m.q_low, m.q_high),
        })
    return {
        "v": 1,
        "run": run.id,
        "first": series.first_step,
        "last": series.last_step,
        "selected": selected,
        "metrics": metrics,
        "tokens": _deltas(token_steps),
        "tokens_total": tokens_total,
        "boundaries": _deltas(series.boundaries),
        "boundaries_total": series.boundaries_total,
        "ticks": [_deltas(s for s, _, _ in ticks), [lv for _, lv, _ in ticks], [sp for _, _, sp in ticks]],
        "geometry": {"domain": DOMAIN, "r_in": R_IN, "r_out": R_OUT},
        "magnifications": list(MAGNIFICATIONS),
        "max_rings": MAX_RINGS,
        "metric_colours": {name: metric_colour(name) for name in series.metrics},
    }


def _run_title(run: Run) -> str:
    h = run.header
    parts = [h.title or run.id]
    if h.algorithm and h.algorithm not in parts[0]:
        parts.append(h.algorithm)
    return " · ".join(parts)


def _chips_html(uid: str, series: RunSeries, selected: list[str]) -> str:
    groups: dict[str, list[str]] = {}
    for name in series.metrics:
        groups.setdefault(metric_info(name).group, []).append(name)
    out = []
    k = 0
    for group, names in groups.items():
        chips = []
        for name in names:
            info = metric_info(name)
            k += 1
            desc_id = f"{uid}-d{k}"
            ring = selected.index(name) if name in selected else -1
            # data-colour: the metric's own colour, the same on every page (site/palette.py).
            ring_attr = f' data-ring="{ring}" data-colour="{metric_colour(name)}"' if ring >= 0 else ""
            unit = METRIC_UNITS.get(name, "")
            title = f"{info.label} ({name}): {info.description}"
            chips.append(
                f'<button type="button" class="unipo-explorer__chip" data-metric="{escape_text(name)}"'
                f' aria-pressed="{"true" if ring >= 0 else "false"}"{ring_attr}'
                f' title="{escape_text(title)}" aria-describedby="{desc_id}">'
                f'<span class="unipo-explorer__swatch" aria-hidden="true"></span>'
                f'<span class="unipo-explorer__chip-label">{escape_text(info.label)}</span> '
                f'<span class="unipo-explorer__chip-value">{escape_text(fmt_metric(series.metrics[name].last, unit))}</span>'
                f'<span id="{desc_id}" hidden>{escape_text(info.description)} Last value '
                f'{escape_text(fmt_metric(series.metrics[name].last, unit))}.</span></button>'
            )
        out.append(
            f'<div class="unipo-explorer__group"><span class="unipo-explorer__group-name">{escape_text(group)}</span>'
            + "".join(chips) + "</div>"
        )
    # The unchosen chips fold away behind this button (explorer.css, explorer.js).
    more = (f'<button type="button" class="unipo-explorer__more-metrics" aria-expanded="false">'
            f"Choose rings: all {len(series.metrics)} metrics</button>")
    return (
        f'<div class="unipo-explorer__chips" role="group" aria-label="Metrics to draw as rings (1 to {MAX_RINGS})" data-search-exclude>'
        + "".join(out) + more + "</div>"
    )


def _controls_html(uid: str, series: RunSeries) -> str:
    mags = MAGNIFICATIONS
    return (
        '<div class="unipo-explorer__controls">'
        f'<label class="unipo-explorer__control" for="{uid}-scale" title="Robust: a ring spans its 1st to 99th '
        'percentile plus a 10% margin; values beyond are drawn at its edge and circled. Automatic: robust for a ring '
        'that one outlier would flatten, the full range for the others.">Scale '
        f'<select id="{uid}-scale" class="unipo-explorer__scale">'
        '<option value="auto" selected>automatic</option><option value="full">full range</option>'
        '<option value="robust">robust</option></select></label>'
        f'<label class="unipo-explorer__control" for="{uid}-mag">Magnify '
        f'<input type="range" id="{uid}-mag" class="unipo-explorer__mag" min="0" max="{len(mags) - 1}" step="1" value="0">'
        f' <output class="unipo-explorer__mag-out" for="{uid}-mag">{mags[0]}×</output></label>'
        f'<label class="unipo-explorer__control" for="{uid}-focus">around step '
        f'<input type="range" id="{uid}-focus" class="unipo-explorer__focus" min="{series.first_step}"'
        f' max="{series.last_step}" step="1" value="{(series.first_step + series.last_step) // 2}" disabled>'
        f' <output class="unipo-explorer__focus-out" for="{uid}-focus">{fmt_num((series.first_step + series.last_step) // 2)}</output></label>'
        "</div>"
    )


PHASES = {"start": "before training", "periodic": "during training", "end": "after training"}


def evals_html(evals: Sequence[EvalRecord], max_rows: int = 8) -> str:
    """The held-out evaluation as a small table: start, some periodic rows, end."""
    if not evals:
        return ('<aside class="unipo-explorer__evals"><p class="unipo-explorer__evals-title">Held-out evaluation</p>'
                "<p>This log has no held-out evaluation: the rings show training metrics only, which "
                "can rise without the model getting better.</p></aside>")
    rows = list(evals)
    if len(rows) > max_rows:
        keep = {0, len(rows) - 1}
        keep.update(int(i) for i in np.linspace(0, len(rows) - 1, max_rows).round())
        rows = [rows[i] for i in sorted(keep)]
    start, end = evals[0], evals[-1]
    headline = ""
    if start.accuracy_greedy is not None and end.accuracy_greedy is not None and end is not start:
        a, b, n, on = start.accuracy_greedy, end.accuracy_greedy, end.n, "held-out problems"
        if (start.problems, start.n) != (end.problems, end.n):
            # e.g. the whole set at the start, a periodic subset last (a run still training): compare
            # the two on the problems both scored, or not at all
            curve = accuracy_curve([start, end])
            if len(curve) == 2 and curve[0].common:
                a, b, n, on = curve[0].accuracy, curve[1].accuracy, curve[0].n, "held-out problems both scored"
            else:
                a = None
        if a is not None:
            headline = (f'<p class="unipo-explorer__evals-headline">Greedy accuracy <strong>{fmt_pct(a)}'
                        f" → {fmt_pct(b)}</strong> on the {fmt_num(n)} {on} "
                        f"(step {fmt_num(start.step)} to {fmt_num(end.step)}).</p>")
    def step_cell(e: EvalRecord) -> str:
        phase = {"start": "start", "end": "end"}.get(e.phase)
        return f"{fmt_num(e.step)}" + (f' <span class="unipo-explorer__hint">{phase}</span>' if phase else "")

    body = "".join(
        f'<tr title="{escape_text(PHASES.get(e.phase, e.phase))}"><td>{step_cell(e)}</td>'
        f"<td>{fmt_pct(e.accuracy_greedy)}</td><td>{fmt_pct(e.accuracy_sampled)}</td>"
        f"<td>{'–' if e.mean_length is None else fmt_fixed(e.mean_length, 1)}</td></tr>"
        for e in rows
    )
    note = "" if len(rows) == len(evals) else f"<p class=\"unipo-explorer__hint\">{len(rows)} of {len(evals)} evaluations shown.</p>"
    return (
        '<aside class="unipo-explorer__evals"><p class="unipo-explorer__evals-title">Held-out evaluation</p>'
        f"{headline}"
        '<table><thead><tr><th>Step</th><th title="Greedy decoding">Greedy</th>'
        '<th title="Sampled at the evaluation temperature">Sampled</th><th title="Mean response length in tokens">Length</th>'
        f"</tr></thead><tbody>{body}</tbody></table>{note}</aside>"
    )


def failed_run_html(name: str, error: str) -> str:
    """An admonition instead of a chart: the run, what went wrong, and that the page goes on."""
    return (
        '<div class="admonition failure unipo-explorer-error">'
        f'<p class="admonition-title">Training Explorer: run “{escape_text(name)}” could not be loaded</p>'
        f"<p>The chart is left out; the rest of the site was built. The log reported:</p>"
        f"<pre><code>{escape_text(error)}</code></pre></div>"
    )


def missing_run_html(name: str, directory: str | Path, available: Sequence[str]) -> str:
    known = ", ".join(f"“{escape_text(a)}”" for a in available) or "none"
    return (
        '<div class="admonition warning unipo-explorer-error">'
        f'<p class="admonition-title">Training Explorer: no run “{escape_text(name)}”</p>'
        f"<p>No run with this id or algorithm was found in <code>{escape_text(directory)}</code> "
        f"(runs found: {known}). Train it, or point <code>UNIPO_RUNS</code> at a directory of runs.</p></div>"
    )


def unit_suffix(unit: str) -> str:
    """What follows a value's number: 'tokens', or 'of groups' after a percentage."""
    return unit[1:].strip() if unit.startswith("%") else unit


def ring_range_text(m: MetricSeries, unit: str, robust: bool) -> tuple[str, str]:
    """(the range a ring spans, a note when it is drawn robust); explorer.js ``ringText`` agrees."""
    lo, hi = (m.q_low, m.q_high) if robust else (m.low, m.high)
    span = f"{fmt_metric(lo, unit)} to {fmt_metric(hi, unit)}" + (f" {unit_suffix(unit)}" if unit else "")
    note = (f"robust scale: the whole run spans {fmt_metric(m.low, unit)} to {fmt_metric(m.high, unit)}; "
            "values beyond the ring are drawn at its edge and circled") if robust else ""
    return span, note


def rings_html(series: RunSeries, selected: Sequence[str]) -> str:
    """The rings, outermost first: colour, metric, the range the ring spans and its unit
    (explorer.js redraws it as the reader changes the rings or the scale)."""
    items = []
    for ring, name in enumerate(selected):
        m = series.metrics[name]
        span, note = ring_range_text(m, METRIC_UNITS.get(name, ""), outlier_flattens(m))
        items.append(
            f'<li class="unipo-explorer__ring" data-metric="{escape_text(name)}" data-colour="{metric_colour(name)}">'
            f'<span class="unipo-explorer__swatch" data-colour="{metric_colour(name)}" aria-hidden="true"></span>'
            f'<span class="unipo-explorer__ring-name">{escape_text(metric_info(name).label)}</span> '
            f'<span class="unipo-explorer__ring-range">{escape_text(span)}</span>'
            f'<span class="unipo-explorer__ring-note">{escape_text(note)}</span></li>')
    return ('<div class="unipo-explorer__rings"><p class="unipo-explorer__evals-title">Rings, outside in</p>'
            f'<ol class="unipo-explorer__ring-list">{"".join(items)}</ol></div>')


def explorer_html(run: Run, metrics: Sequence[str] | None = None, *, inspector: Callable[[str], str] | None = None,
                  element_id: str | None = None) -> str:
    """The Training Explorer of a run (or an admonition when it failed to load).

    ``metrics``: 1 to 4 ring metrics, outermost first (names the run lacks are noted and
    skipped). ``inspector``: the run's own Step Inspector to put under the chart, as a function of the
    inspector's element id (the caller's: ``inspector.step_inspector``; a view does not import another), so that
    a click opens steps there and nowhere else. ``element_id``: the section's id (unique on the page).
    """
    if not run.ok:
        return failed_run_html(run.id, run.error or "unknown error")
    try:
        series = collect_series(run.path)
    except (runlog.LogError, runlog.LogErrors) as err:
        return failed_run_html(run.id, str(err))
    available = list(series.metrics)
    if not available:
        return failed_run_html(run.id, "steps.jsonl has no metric with a value")
    notes = []
    if metrics is None:
        selected = default_metrics(available)
    else:
        metrics = list(metrics)
        if not 1 <= len(metrics) <= MAX_RINGS:
            raise ValueError(f"training_explorer: choose 1 to {MAX_RINGS} metrics, got {len(metrics)}")
        selected = [m for m in metrics if m in series.metrics]
        missing = [m for m in metrics if m not in series.metrics]
        if missing:
            notes.append(f"Not in this run's log: {', '.join(missing)}.")
        if not selected:
            selected = default_metrics(available)
    uid = element_id or "unipo-explorer-" + hashlib.sha256(f"{run.id}|{selected}".encode()).hexdigest()[:8]

    spec = explorer_spec(series.first_step, series.span, selected)
    payload = {"spec": spec, "data": _payload(run, series, selected)}
    n_tokens = len(run.token_steps())
    caption = (
        f"{fmt_num(series.n_steps)} steps clockwise from the top; each ring one metric, from its smallest value (inner "
        "edge) to its largest (outer edge), in the order of the list \u201cRings, outside in\u201d. ")
    # Mouse and touch readers are told what their device does (explorer.css shows one of the two).
    how_mouse = ("Hover (or focus the chart and use the arrow keys) to read every ring at a step; click to open "
                 f"the nearest logged step ({fmt_num(n_tokens)} of {fmt_num(series.n_steps)} have token data).")
    how_touch = ("Tap a ring to read every ring at that step and open the nearest logged step "
                 f"({fmt_num(n_tokens)} of {fmt_num(series.n_steps)} have token data).")
    boundary_note = (
        f"Ticks just outside the outer ring mark the {fmt_num(series.boundaries_total)} rollout boundaries"
        + (f" ({fmt_num(len(series.boundaries))} of them are embedded, one in {series.boundary_stride})"
           if series.boundary_stride > 1 else "")
        + "; where they would crowd, only every second (fourth, ...) one is drawn."
    )
    details = (
        f"Every ring is downsampled to at most {fmt_num(POINTS_PER_RING)} points with LTTB, which keeps peaks and "
        f"dips; a value read between kept points is marked ≈. {boundary_note} Robust scale: a ring spans "
        "its 1st to 99th percentile plus a 10% margin, so one outlier cannot flatten it; values beyond are "
        "drawn at the edge and circled. The automatic scale (the default) draws a ring robust when its 1st to 99th "
        "percentile covers under a quarter of its full range, and says so in the list of rings. Magnify spreads the steps around the chosen one like a fisheye lens "
        "(drag the chart with the mouse to move it); the accent arc inside the rings marks the magnified stretch."
    )
    note_html = "".join(f'<p class="unipo-explorer__hint">{escape_text(n)}</p>' for n in notes)
    header = run.header
    meta = f"{fmt_num(series.n_steps)} steps"
    if header.model and header.model.name:
        meta += f" · model {header.model.name}"
    if header.task and header.task.name:
        meta += f" · task {header.task.name}"
    html_parts = [
        f'<section class="unipo-explorer" id="{escape_text(uid)}" data-run="{escape_text(run.id)}"'
        # its last step: a link from another run set maps its step to the same fraction of training
        f' data-last-step="{series.last_step}"'
        f'{f" data-inspector={chr(34)}{escape_text(uid)}-inspector{chr(34)}" if inspector else ""}>',
        f'<p class="unipo-explorer__title"><strong>{escape_text(_run_title(run))}</strong> '
        f'<span class="unipo-explorer__meta">{escape_text(meta)}</span></p>',
        _chips_html(uid, series, selected),
        _controls_html(uid, series),
        note_html,
        '<div class="unipo-explorer__body"><figure class="unipo-explorer__figure">',
        # A slider over the steps for keyboards and screen readers: the arrow keys move the
        # hovered step (aria-valuetext reads every ring there), Enter opens it.
        f'<div class="unipo-explorer__chart" tabindex="0" role="slider" aria-roledescription="radial training chart" '
        f'aria-valuemin="{series.first_step}" aria-valuemax="{series.last_step}" aria-valuenow="{series.first_step}" '
        f'aria-label="{escape_text(f"Training Explorer for {run.id}: one ring per metric, step as angle. Arrow keys move along the steps, Enter opens the nearest logged step.")}">'
        '<div class="unipo-explorer__canvas" aria-hidden="true"></div></div>',
        '<div class="unipo-explorer__tip" hidden></div>',
        '<p class="unipo-explorer__status" role="status" aria-live="polite"></p>',
        f"<figcaption>{escape_text(caption)}<span class=\"unipo-explorer__for-mouse\">{escape_text(how_mouse)}</span>"
        f"<span class=\"unipo-explorer__for-touch\">{escape_text(how_touch)}</span> "
        f"<details class=\"unipo-explorer__more\"><summary>More about "
        f"this chart</summary>{escape_text(details)}</details></figcaption></figure>",
        '<div class="unipo-explorer__side">',
        rings_html(series, selected),
        evals_html(run.evals),
        "</div></div>",
        # Page data in a <template>: instant navigation re-creates <script> elements without
        # their type, which would run the JSON as code (see render.json_data).
        json_data(payload, data_id=f"{uid}-data"),
    ]
    html_parts.append("</section>")
    if inspector:
        html_parts.append(inspector(f"{uid}-inspector"))
    return "".join(html_parts)
