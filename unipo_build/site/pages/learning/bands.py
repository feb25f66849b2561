"""Training dynamics over seeds: one band per algorithm, from the lowest to the highest of its runs,
around the median of its runs.

    {{ seed_bands() }}                                          held-out accuracy, reward, length and
                                                                entropy against the fraction of training
    {{ seed_bands(["heldout/greedy", "sampled/accuracy"], x="tokens") }}
                                                                the same against the response tokens
                                                                generated so far (sampled/tokens)

Every run of an algorithm (``RunCatalog.seeds_of``: ``grpo``, ``grpo-s1``, ``grpo-s2``, ...) is
smoothed as in the other dynamics figures (``series.smoothed_series``), interpolated onto a common
grid of the horizontal axis and summarised there by its median, minimum and maximum. An algorithm
with one run is drawn as a line without a band, and the legend says how many runs each one has.

Horizontal axes: ``fraction`` (updates done over the run's updates; rollout-level metrics: rollouts
done) or ``tokens`` (every response token generated so far, groups the sampling filter dropped
included: the cumulative sum of ``sampled/tokens``), which compares a filtering algorithm such as
DAPO with one that trains on every group per generated token rather than per update. On the token
axis an algorithm's band ends where its shortest run ends.

``heldout/greedy`` and ``heldout/sampled`` are the held-out accuracy at each evaluation
(``heldout.accuracy_curve``): measured on the problems every evaluation of the run scored (the
periodic subset), so the points of one run compare with one another.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from unipo_build.core.heldout import accuracy_curve
from unipo_build.core.numbers import fmt_num, fmt_pct
from unipo_build.site.render import chart_spec, vega_embed
from unipo_build.core.runs import Run
from unipo_build.core.schema import METRICS, metric_info
from unipo_build.site.fmt import escape_text, legend_html, note_html
from unipo_build.site.palette import algorithm_colour
from unipo_build.site.facts.run_facts import OWN_CHAPTER, course_runs
from unipo_build.site.facts.spec_facts import and_names
from unipo_build.site.page_links import page_linker
from unipo_build.site.facts.seeds import finished_runs, still_training
from unipo_build.site.facts.series import SMOOTH_FRACTION, absent_reason, round_to, smoothed_series
from unipo_build.site.context import AuthorError, Site, macro

#: Pseudo-metrics: held-out accuracy at each evaluation.
HELDOUT = {
    "heldout/greedy": ("Held-out accuracy (greedy)",
                       "Greedy accuracy on held-out problems at each evaluation, on the problems every evaluation "
                       "of the run scored."),
    "heldout/sampled": ("Held-out accuracy (sampled)",
                        "Sampled accuracy (one answer per problem at the training temperature) on held-out problems "
                        "at each evaluation, on the problems every evaluation of the run scored."),
}
DEFAULT_BANDS = ("heldout/greedy", "reward/mean", "length/mean", "entropy/mean")
#: Metrics that are shares, drawn as percentages.
SHARES = {"sampled/accuracy", "accuracy/train", "clip/frac_high", "clip/frac_low", "length/truncated_frac",
          "groups/zero_variance_frac", "groups/all_correct_frac", "groups/all_wrong_frac", "sampling/pass_rate"}
AXES = ("fraction", "tokens")
#: Points of the common grid a band is drawn on.
GRID = 41


@dataclass
class Curve:
    """One run's smoothed metric against its own horizontal axis (increasing x)."""

    run: Run
    x: np.ndarray
    y: np.ndarray


@dataclass
class Band:
    """An algorithm's runs on one grid: median, minimum and maximum at each x."""

    x: np.ndarray
    median: np.ndarray
    low: np.ndarray
    high: np.ndarray
    runs: int


def cumulative_tokens(run: Run) -> np.ndarray | None:
    """Response tokens generated up to the end of each logged rollout's sampling (index: the
    rollout's position among the run's logged rollouts), or None without ``sampled/tokens``."""
    table = run.reader.table
    _, tokens = table.series("sampled/tokens", first_in_rollout=True)
    starts = table.rollout_starts()
    if len(tokens) == 0 or len(tokens) != len(starts):
        return None
    return np.cumsum(tokens)


def tokens_at_steps(run: Run, steps: np.ndarray) -> np.ndarray | None:
    """Tokens generated before each update in ``steps`` trained (its rollout's sampling included)."""
    cum = cumulative_tokens(run)
    if cum is None:
        return None
    table = run.reader.table
    rollout_of_step = np.searchsorted(table.rollout_starts(), np.asarray(steps), side="right") - 1
    return cum[np.clip(rollout_of_step, 0, len(cum) - 1)]


def run_curve(run: Run, metric: str, axis: str) -> Curve | None:
    """The run's curve of ``metric`` on ``axis``; None when it lacks the metric (or the tokens)."""
    if metric in HELDOUT:
        points = accuracy_curve(run.evals, metric.split("/")[1])
        if len(points) < 2:
            return None
        steps = np.array([p.step for p in points])
        y = np.array([p.accuracy for p in points])
        if axis == "fraction":
            x = steps / max(1, run.reader.table.n)
        else:
            before = tokens_at_steps(run, np.maximum(steps - 1, 0))
            if before is None:
                return None
            x = np.where(steps == 0, 0.0, before)
        return Curve(run, x.astype(np.float64), y)
    s = smoothed_series(run, metric)
    if s is None:
        return None
    if axis == "fraction":
        return Curve(run, s.fraction, s.values)
    x = tokens_at_steps(run, s.steps)
    return None if x is None else Curve(run, x.astype(np.float64), s.values)


def band_of(curves: Sequence[Curve], grid: int = GRID, at: np.ndarray | None = None) -> Band | None:
    """Median, minimum and maximum of the curves at common x: ``at``, else ``grid`` points from the
    largest first x to the smallest last x of the curves (where every curve has a value)."""
    curves = [c for c in curves if len(c.x) > 0]
    if not curves:
        return None
    lo_x = max(float(c.x[0]) for c in curves)
    hi_x = min(float(c.x[-1]) for c in curves)
    if at is None:
        if hi_x < lo_x:
            return None
        at = np.linspace(lo_x, hi_x, grid) if hi_x > lo_x else np.array([lo_x])
    else:
        at = np.asarray([v for v in at if lo_x - 1e-12 <= v <= hi_x + 1e-12], dtype=np.float64)
        if len(at) == 0:
            return None
    ys = np.vstack([np.interp(at, c.x, c.y) for c in curves])
    return Band(at, np.median(ys, axis=0), ys.min(axis=0), ys.max(axis=0), len(curves))


def metric_words(metric: str) -> tuple[str, str]:
    """(label, description) of a metric or held-out pseudo-metric."""
    if metric in HELDOUT:
        return HELDOUT[metric]
    info = metric_info(metric)
    return info.label, info.description


def band_panel_spec(label: str, rows: list[dict], domain: list[str], colours: list[str], axis: str, percent: bool,
                    points: bool, y_domain: tuple[float, float] | None = None) -> dict:
    """One panel: a line per algorithm (the median, ``m``) and, where it has several runs (``n``), a
    band from the lowest (``lo``) to the highest (``hi``); one data set, short keys (page weight)."""
    import altair as alt

    x_title = "fraction of training" if axis == "fraction" else "response tokens generated"
    x_axis = (alt.Axis(tickCount=4, format="%") if axis == "fraction" else  # "0", not "0M", at the origin
              alt.Axis(tickCount=4, format="~s", labelExpr="datum.value == 0 ? '0' : datum.label"))
    x = alt.X("x:Q", title=x_title, axis=x_axis,
              scale=alt.Scale(nice=False, domain=[0, 1]) if axis == "fraction" else alt.Scale(nice=False))
    colour = alt.Color("a:N", scale=alt.Scale(domain=domain, range=colours), legend=None)
    y_fmt = ".2~%" if percent else "~r"
    y_scale = alt.Scale(zero=False) if y_domain is None else alt.Scale(zero=False, domain=list(y_domain), nice=False)
    y_axis = alt.Axis(tickCount=4, format=y_fmt)
    value_fmt = ".3~%" if percent else ".4~g"
    base = alt.Chart(alt.Data(values=rows))
    band = base.transform_filter(alt.datum.n > 1).mark_area(opacity=0.22, clip=True).encode(
        x=x, y=alt.Y("lo:Q", title=label, scale=y_scale, axis=y_axis), y2="hi:Q", color=colour, detail="a:N")
    tooltip = [alt.Tooltip("a:N", title="Algorithm"),
               alt.Tooltip("x:Q", title=x_title, format=".0%" if axis == "fraction" else ",.0f"),
               alt.Tooltip("m:Q", title="Median of the runs", format=value_fmt),
               alt.Tooltip("lo:Q", title="Lowest run", format=value_fmt),
               alt.Tooltip("hi:Q", title="Highest run", format=value_fmt)]
    line = base.mark_line(strokeWidth=2, clip=True, point=points).encode(
        x=x, y=alt.Y("m:Q", title=label, scale=y_scale, axis=y_axis), color=colour, detail="a:N", tooltip=tooltip)
    chart = alt.layer(band, line).properties(width="container", height=170,
                                             autosize=alt.AutoSizeParams(type="fit-x", contains="padding"))
    spec = chart_spec(chart)
    spec["description"] = f"{label}: the median of each algorithm's runs, with a band from the lowest to the highest."
    return spec


@macro(name="seed_bands", html=True)
def seed_bands_html(site: Site, metrics: Sequence[str] | str | None = None, algorithms: Sequence[str] | None = None,
                    x: str = "fraction", same_scale: bool = False) -> str:
    metrics = list(DEFAULT_BANDS if metrics is None else [metrics] if isinstance(metrics, str) else metrics)
    for m in metrics:
        if m not in METRICS and m not in HELDOUT:
            raise AuthorError(f"seed_bands: unknown metric {m!r} (known: {', '.join([*HELDOUT, *METRICS])})")
    if x not in AXES:
        raise AuthorError(f"seed_bands: x must be one of {', '.join(AXES)}, not {x!r}")
    shown, missing = course_runs(site, algorithms)
    elsewhere: list[str] = []  # compared in a chapter of their own (drawn here only when asked for)
    if algorithms is None:
        elsewhere = [r.header.algorithm for r in shown if r.header.algorithm in OWN_CHAPTER]
        shown = [r for r in shown if r.header.algorithm not in OWN_CHAPTER]
    if not shown:
        return note_html("No runs are in this build, so there is nothing to compare. Train the runs (see the README) "
                         "or point UNIPO_RUNS at a directory of runs, then rebuild.", "warning")
    groups, training = [], []
    for run in shown:
        done, still = finished_runs(site.catalog.seeds_of(run.variant))
        training += still
        if done:
            groups.append((run.header.algorithm, done))
    if not groups:
        return note_html("Every run this figure would draw is still training: " + _training_list(site, training) + ". The "
                         "bands are drawn once runs finish; rebuild then.", "warning")
    extra: dict[str, str] = {}
    labels = [f"{site.algorithm_name(a)} ({len(rs)} run{'s' if len(rs) != 1 else ''})" for a, rs in groups]
    colours = [algorithm_colour(a, extra) for a, _ in groups]
    computed = []
    for metric in metrics:
        label, description = metric_words(metric)
        percent = metric in HELDOUT or metric in SHARES
        rows, absent = [], []
        for (algorithm, runs), name in zip(groups, labels):
            curves = [c for c in (run_curve(r, metric, x) for r in runs) if c is not None]
            band = None
            if curves:
                at = np.unique(np.concatenate([c.x for c in curves])) if metric in HELDOUT else None
                band = band_of(curves, at=at)
            if band is None:
                absent.append(site.algorithm_name(algorithm) + _absent_why(runs[0], metric, x))
                continue
            rows += [{"a": name, "x": round_to(band.x[i], 4), "m": round_to(band.median[i], 3),
                      "lo": round_to(band.low[i], 3), "hi": round_to(band.high[i], 3), "n": band.runs}
                     for i in range(len(band.x))]
        computed.append((metric, label, description, percent, rows, absent))
    y_domain = None
    if same_scale:
        values = [v for *_, rows, _ in computed for r in rows for v in (r["lo"], r["hi"])]
        if values:
            pad = 0.05 * (max(values) - min(values) or 1.0)
            y_domain = (min(values) - pad, max(values) + pad)
    panels = []
    for metric, label, description, percent, rows, absent in computed:
        title = (f'<p class="unipo-band-title" style="margin:0 0 .2em;font-weight:600">{escape_text(label)} '
                 f'<code style="font-weight:400">{escape_text(metric)}</code></p>')
        if rows:
            spec = band_panel_spec(label, rows, labels, colours, x, percent, metric in HELDOUT, y_domain)
            chart = vega_embed(spec, chart_id=site.chart_id(spec))
        else:
            chart = '<p style="margin:.5em 0;opacity:.8">No run in this build logs this.</p>'
        note = ""
        if absent and rows:
            note = (f'<p style="margin:.2em 0 0;font-size:.85em;opacity:.85">Not logged by: '
                    f"{escape_text(', '.join(absent))}.</p>")
        panels.append(f'<div class="unipo-course-panel" style="min-width:0">{title}{chart}{note}'
                      f'<p style="margin:.2em 0 0;font-size:.8em;opacity:.75">{escape_text(description)}</p></div>')
    legend = legend_html([(label, colour, None) for label, colour in zip(labels, colours)])
    single = [site.algorithm_name(a) for a, rs in groups if len(rs) == 1]
    caption = ("Each line is the median of an algorithm's runs (one per seed), each band spans the lowest to the "
               f"highest of them; a run's metrics are first smoothed by a moving average over "
               f"{fmt_pct(SMOOTH_FRACTION, 0)} of its points. Held-out accuracy is measured at each evaluation on the "
               "problems every evaluation of the run scored. ")
    caption += ("The horizontal axis is the fraction of each run's updates." if x == "fraction" else
                "The horizontal axis counts every response token generated so far, including the groups a sampling "
                "filter dropped; a band ends where the algorithm's shortest run ends.")
    if single:
        caption += f" One run only, so no band: {', '.join(single)}."
    if same_scale:
        caption += " The panels share one vertical scale."
    own = ""
    if elsewhere:
        link = page_linker(site.env)
        names = []
        for algorithm in elsewhere:
            href = link(OWN_CHAPTER[algorithm])
            name = escape_text(site.algorithm_name(algorithm))
            names.append(f'<a href="{escape_text(href)}">{name}</a>' if href else name)
        own = (f' <span class="unipo-bands-elsewhere">Not drawn here: {and_names(names)}, each compared with the '
               "algorithm it changes in a chapter of its own.</span>")
    missing_note = ""
    if missing:
        missing_note = note_html("Not in this build: " + ", ".join(site.algorithm_name(m) for m in missing)
                                 + ". Their lines are missing from every panel.", "warning")
    if training:
        missing_note += note_html("Still training, so not drawn until it finishes: " + _training_list(site, training)
                                  + ".", "info")
    grid = ('<div class="unipo-course-grid" style="display:grid;grid-template-columns:repeat(auto-fit,minmax(15rem,1fr));'
            'gap:1.2rem 1.6rem">' + "".join(panels) + "</div>")
    return (f'<figure class="unipo-figure unipo-seed-bands">{legend}{grid}'
            f"<figcaption>{escape_text(caption)}{own}</figcaption></figure>{missing_note}")


def _absent_why(run: Run, metric: str, axis: str) -> str:
    """Why an algorithm has no line in a panel: no tokens to place it on, too few evaluations, or
    what its objective leaves out."""
    if axis == "tokens" and cumulative_tokens(run) is None:
        return " (no sampled/tokens in the log)"
    if metric in HELDOUT:
        return " (fewer than two held-out evaluations)"
    return absent_reason(run, metric)


def _training_list(site: Site, runs: Sequence[Run]) -> str:
    """'GSPO (gspo, 23 of 100 rollouts)' for each run still training."""
    items = []
    for run in runs:
        logged, planned = still_training(run) or (0, 0)
        items.append(f"{site.algorithm_name(run.header.algorithm)} ({run.id}, {fmt_num(logged)} of "
                     f"{fmt_num(planned)} rollouts)")
    return ", ".join(items)
