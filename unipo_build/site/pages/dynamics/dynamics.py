"""Comparison figures of the runs: their training dynamics side by side, and answer lengths.

    {{ dynamics_compare(["reward/mean", "length/mean"]) }}   small multiples of the runs' metrics
    {{ length_by_correctness(["grpo", "dr_grpo"]) }}         mean length of wrong and correct answers

Each run's colour is its algorithm's (``palette.ALGORITHMS``); series come from the run's one
reader (``series.run_series``). A run not in the build is named in a note under the figure.
"""

from __future__ import annotations

from typing import Sequence

from unipo_build.site.render import chart_spec, vega_embed
from unipo_build.core.schema import METRICS, metric_info
from unipo_build.core.numbers import fmt_num, fmt_pct
from unipo_build.site.fmt import escape_text, legend_html, note_html, panel_grid
from unipo_build.site.palette import algorithm_colour
from unipo_build.site.facts.run_facts import course_runs
from unipo_build.site.facts.series import (
    POINTS_PER_LINE,
    SMOOTH_FRACTION,
    absent_reason,
    robust_domain,
    round_to,
    run_series,
)
from unipo_build.site.context import AuthorError, Site, macro

DEFAULT_DYNAMICS = ("reward/mean", "length/mean", "entropy/mean", "kl/mean", "clip/frac_high", "clip/frac_low")
#: Line dashes for a second categorical channel (correct vs wrong answers).
DASHES = {"correct": [1, 0], "wrong": [6, 3]}


def x_encoding(x: str, title: str | None = None):
    import altair as alt

    if x == "fraction":
        return alt.X("x:Q", title=title or "fraction of training", scale=alt.Scale(domain=[0, 1], nice=False),
                     axis=alt.Axis(format="%", tickCount=5))
    return alt.X("x:Q", title=title or "update (step)", axis=alt.Axis(tickCount=5, format="~s"))


def metric_panel_spec(metric: str, rows: list[dict], domain: list[str], colours: list[str], x: str,
                      y_domain: tuple[float, float] | None = None) -> dict:
    import altair as alt

    info = metric_info(metric)
    y_title = info.label
    scale = alt.Scale(zero=False) if y_domain is None else alt.Scale(zero=False, domain=list(y_domain), nice=False)
    chart = alt.Chart(alt.Data(values=rows)).mark_line(strokeWidth=2, interpolate="linear", clip=True).encode(
        x=x_encoding(x),
        y=alt.Y("y:Q", title=y_title, scale=scale, axis=alt.Axis(tickCount=4)),
        color=alt.Color("algorithm:N", scale=alt.Scale(domain=domain, range=colours), legend=None),
        detail="run:N",
        tooltip=[alt.Tooltip("algorithm:N", title="Run"), alt.Tooltip("step:Q", title="Update"),
                 alt.Tooltip("y:Q", title=y_title, format=".4~g")],
    ).properties(width="container", height=170, autosize=alt.AutoSizeParams(type="fit-x", contains="padding"))
    spec = chart_spec(chart)
    spec["description"] = f"{info.label} over training, one line per run."
    return spec


@macro(name="dynamics_compare", html=True)
def dynamics_compare_html(site: Site, metrics: Sequence[str] | str | None = None, runs: Sequence[str] | None = None,
                          x: str = "fraction") -> str:
    """Small multiples of the runs' metrics on a shared x axis (fraction of training or step)."""
    if metrics is None:
        metrics = DEFAULT_DYNAMICS
    if isinstance(metrics, str):
        metrics = [metrics]
    for m in metrics:
        if m not in METRICS:
            raise AuthorError(f"dynamics_compare: unknown metric {m!r} (known: {', '.join(METRICS)})")
    if x not in ("fraction", "step"):
        raise AuthorError(f"dynamics_compare: x must be 'fraction' or 'step', not {x!r}")
    found, missing = course_runs(site, runs)
    if not found:
        return note_html("No runs are in this build, so there is nothing to compare. Train the runs (see the README) "
                         "or point UNIPO_RUNS at a directory of runs, then rebuild.", "warning")
    extra_colours: dict[str, str] = {}
    labels = [site.run_label(r) for r in found]
    colours = [algorithm_colour(r.header.algorithm, extra_colours) for r in found]
    series = {r.id: run_series(r, list(metrics)) for r in found}
    panels = []
    for m in metrics:
        rows, absent, outliers = [], [], []
        for run, label in zip(found, labels):
            s = series[run.id][m]
            if s is None:
                absent.append(label + absent_reason(run, m))
                continue
            if s.outlier is not None:
                outliers.append((label, *s.outlier))
            for step, value, frac in zip(s.steps.tolist(), s.values.tolist(), s.fraction.tolist()):
                xv = frac if x == "fraction" else step
                rows.append({"run": run.id, "algorithm": label, "step": int(step), "x": round_to(xv, 5),
                             "y": round_to(value)})
        info = metric_info(m)
        title = (f'<p style="margin:0 0 .2em;font-weight:600">{escape_text(info.label)} '
                 f'<code style="font-weight:400">{escape_text(m)}</code></p>')
        clipped_note = ""
        if rows:
            y_domain = robust_domain([r["y"] for r in rows])
            spec = metric_panel_spec(m, rows, labels, colours, x, y_domain)
            chart = vega_embed(spec, chart_id=site.chart_id(spec))
            if y_domain is not None:
                peak = max(rows, key=lambda r: abs(r["y"]))
                clipped_note = (f'<p style="margin:.2em 0 0;font-size:.85em;opacity:.85">The axis spans the 1st to '
                                f"99th percentile; a peak of {escape_text(fmt_num(peak['y'], 3))} "
                                f"({escape_text(peak['algorithm'])}, update {escape_text(fmt_num(peak['step']))}) "
                                "runs off the chart.</p>")
            if outliers:
                label, step, value = max(outliers, key=lambda o: abs(o[2]))
                clipped_note += (f'<p style="margin:.2em 0 0;font-size:.85em;opacity:.85">Single updates reach '
                                 f"beyond the lines, which average values clipped to their 0.5th to 99.5th "
                                 f"percentile: the most extreme is {escape_text(label)}'s "
                                 f"{escape_text(fmt_num(value, 3))} at update {escape_text(fmt_num(step))}.</p>")
        else:
            chart = '<p style="margin:.5em 0;opacity:.8">No run in this build logs this metric.</p>'
        note = ""
        if absent and rows:
            note = (f'<p style="margin:.2em 0 0;font-size:.85em;opacity:.85">Not logged by: '
                    f"{escape_text(', '.join(absent))}.</p>")
        elif absent:
            note = (f'<p style="margin:.2em 0 0;font-size:.85em;opacity:.85">Runs: '
                    f"{escape_text(', '.join(absent))}.</p>")
        desc = escape_text(info.description)
        panels.append(f'<div class="unipo-course-panel" style="min-width:0">{title}{chart}{clipped_note}{note}'
                      f'<p style="margin:.2em 0 0;font-size:.8em;opacity:.75">{desc}</p></div>')
    legend = legend_html([(label, colour, None) for label, colour in zip(labels, colours)])
    smooth = (f"Each line is a moving average over {fmt_pct(SMOOTH_FRACTION, 0)} of its run's points (rollout-level "
              "metrics: one point per rollout; values clipped to their 0.5th to 99.5th percentile first), "
              f"downsampled to at most {POINTS_PER_LINE} points with LTTB; hover a line for its values.")
    x_note = ("The horizontal axis is the fraction of each run's updates, so runs of different lengths line up."
              if x == "fraction" else "The horizontal axis is the update (gradient step).")
    missing_note = ""
    if missing:
        missing_note = note_html("Not in this build: " + ", ".join(site.algorithm_name(m) for m in missing)
            + ". Their lines are missing from every panel.", "warning")
    grid = panel_grid(panels)
    return (f'<figure class="unipo-figure unipo-course-dynamics">{legend}{grid}'
            f"<figcaption>{escape_text(smooth + ' ' + x_note)}</figcaption></figure>{missing_note}")


# ---------------------------------------------------------------------------
# length_by_correctness (the sentences on the lengths are claims.length_verdict)
# ---------------------------------------------------------------------------

LENGTH_METRICS = ("length/correct", "length/incorrect")


@macro(name="length_by_correctness", html=True)
def length_by_correctness_html(site: Site, runs: Sequence[str] | None = None) -> str:
    """Mean length of wrong and correct answers over training, each line named at its end (default: GRPO vs Dr. GRPO)."""
    import altair as alt

    runs = list(runs) if runs is not None else ["grpo", "dr_grpo"]
    found, missing = course_runs(site, runs)
    if not found:
        return note_html("None of the runs " + ", ".join(runs) + " is in this build, so the lengths of right and "
                         "wrong answers cannot be shown.", "warning")
    extra_colours: dict[str, str] = {}
    rows, labels, colours, absent = [], [], [], []
    for run in found:
        label = site.run_label(run)
        labels.append(label)
        colours.append(algorithm_colour(run.header.algorithm, extra_colours))
        series = run_series(run, list(LENGTH_METRICS))
        for metric, kind in zip(LENGTH_METRICS, ("correct", "wrong")):
            s = series[metric]
            if s is None:
                absent.append(f"{label} ({kind} answers)")
                continue
            for step, value, frac in zip(s.steps.tolist(), s.values.tolist(), s.fraction.tolist()):
                rows.append({"run": run.id, "algorithm": label, "answers": f"{kind} answers",
                             "line": f"{label}: {kind}", "step": int(step),
                             "x": round_to(frac, 5), "y": round_to(value)})
    if not rows:
        return note_html("The runs in this build do not log the lengths of correct and wrong answers "
                         "(length/correct, length/incorrect).", "warning")
    # One panel for the wrong answers, one for the right ones: each line named at its end (an end
    # dot and its algorithm's name, spread apart where lines end close) and dashed by algorithm,
    # so the figure reads in print and without colour.
    dashes = [ALGORITHM_DASHES[i % len(ALGORITHM_DASHES)] for i in range(len(labels))]
    figures = []
    for kind, title in (("wrong", "Wrong answers"), ("correct", "Right answers")):
        panel = [dict(r, name=r["algorithm"]) for r in rows if r["answers"] == f"{kind} answers"]
        if not panel:
            continue
        colour = alt.Color("algorithm:N", scale=alt.Scale(domain=labels, range=colours), legend=None)
        lines = alt.Chart(alt.Data(values=panel)).mark_line(strokeWidth=2.2).encode(
            x=x_encoding("fraction"),
            y=alt.Y("y:Q", title="mean length (tokens)", scale=alt.Scale(zero=False)),
            color=colour,
            strokeDash=alt.StrokeDash("algorithm:N", scale=alt.Scale(domain=labels, range=dashes), legend=None),
            detail="line:N",
            tooltip=[alt.Tooltip("line:N", title="Line"), alt.Tooltip("step:Q", title="Update"),
                     alt.Tooltip("y:Q", title="Mean length", format=".1f")],
        )
        ends = direct_labels(panel)
        dots = alt.Chart(alt.Data(values=ends)).mark_point(filled=True, size=28).encode(
            x=alt.X("x:Q"), y=alt.Y("y:Q"), color=colour)
        names = alt.Chart(alt.Data(values=ends)).mark_text(align="left", baseline="middle", dx=6, fontSize=12).encode(
            x=alt.X("x:Q"), y=alt.Y("label_y:Q"), text="label:N")
        chart = alt.layer(lines, dots, names).properties(
            title=title, width="container", height=190,
            padding={"left": 5, "top": 5, "bottom": 5, "right": LABEL_ROOM},
            autosize=alt.AutoSizeParams(type="fit-x", contains="padding"))
        spec = chart_spec(chart)
        spec["description"] = f"Mean length of the {kind} answers over training, one line per run, each named at its end."
        figures.append(vega_embed(spec, chart_id=site.chart_id(spec)))
    caption = ("Mean length in tokens of the wrong (upper panel) and the right (lower panel) answers of each rollout, "
               f"each line named at its end, as a moving average over {fmt_pct(SMOOTH_FRACTION, 0)} of the rollouts; "
               "the horizontal axis is the fraction of each run's updates.")
    legend = legend_html([(label, colour, dash) for label, colour, dash in zip(labels, colours, dashes)])
    html = (legend + '<figure class="unipo-figure unipo-length-panels">' + "".join(figures) +
            f"<figcaption>{escape_text(caption)}</figcaption></figure>")
    notes = []
    if missing:
        notes.append(note_html("Not in this build: " + ", ".join(site.algorithm_name(m) for m in missing) + ".",
                               "warning"))
    if absent:
        notes.append(note_html("No data (no such answers were sampled): " + ", ".join(absent) + "."))
    return html + "".join(notes)


#: Room right of the plot for the lines' names (px).
LABEL_ROOM = 80


#: Line dashes that tell the algorithms apart without colour (solid, dashed, dotted, dash-dot).
ALGORITHM_DASHES = ([1, 0], [7, 3], [2, 2], [8, 3, 2, 3])


def direct_labels(rows: list[dict], gap: float = 0.09) -> list[dict]:
    """One label per line of ``rows`` ({line, algorithm, answers, x, y}) at its last point, with
    ``label_y`` moved apart so labels keep ``gap`` of the value range between them."""
    last: dict[str, dict] = {}
    for row in rows:
        if row["line"] not in last or row["x"] >= last[row["line"]]["x"]:
            last[row["line"]] = row
    if not last:
        return []
    ys = [r["y"] for r in rows]
    span = (max(ys) - min(ys)) or 1.0
    ends = sorted(last.values(), key=lambda r: r["y"])
    placed: list[float] = []
    for row in ends:
        y = row["y"] if not placed else max(row["y"], placed[-1] + gap * span)
        placed.append(y)
    # pushed above the range: shift the whole stack down so the top label stays inside
    overflow = placed[-1] - max(ys)
    if overflow > 0:
        placed = [y - overflow for y in placed]
        for i in range(len(placed) - 2, -1, -1):
            placed[i] = min(placed[i], placed[i + 1] - gap * span)
    return [{"line": r["line"], "algorithm": r["algorithm"], "x": r["x"], "y": r["y"], "label_y": round_to(y),
             "label": r.get("name") or f"{r['algorithm']} {r['answers'].split()[0]}"} for r, y in zip(ends, placed)]
