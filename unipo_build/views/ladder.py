"""The ablation ladder, in the style of DAPO's table 1: one row per rung, each rung one slot away
from the rung above it, with what its runs measured.

    {{ ablation_ladder("dapo") }}          the table and the figure of one ladder (HTML)

The ladders are listed in ``data/suite.yaml`` (``ladders``: a name and its rungs' spec ids, in
order), the same file ``unipo suite`` trains the runs from. A rung is a spec: a course algorithm
(``data/algorithms/<id>.yaml``) or an ablation spec (``data/algorithms/ladder/<id>.yaml``). What
changed from the rung above is the registry-based slot diff of the two specs (``diff.py``), never
typed. Every run of the rung's spec in the build counts (several seeds give a spread); a rung
without a run says so.

Columns: held-out greedy accuracy at the end and its paired change from the start with the 95%
interval (``heldout.py``); response length, entropy and the clip fractions as the mean over the
last tenth of the run (rollouts for rollout-level metrics, updates otherwise), "final" values as
DAPO's table reports final scores. With several runs, the median and every run's value.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import yaml

from ..heldout import HeldOutChange
from ..render import vega_embed
from ..runs import Run
from ..specs import AlgorithmSpec
from .diff import SLOT_LABELS, SlotDiff, diff_algorithms
from .explainer import components_of, kind_label
from .fmt import escape_text, fmt_num, fmt_pct, fmt_signed_points, note_html, table
from .palette import role
from .seeds import algorithm_runs, seed_text, spread
from .series import edge_means, raw_series
from .site import AuthorError, Site, macro
from .verdicts import change_cell, changes_of

SUITE_FILE = ("data", "suite.yaml")
#: The run metrics of a rung's row: (column, metric, as a percentage).
FINAL_METRICS = (("Length (tokens)", "length/mean", False), ("Entropy", "entropy/mean", False),
                 ("Clipped high", "clip/frac_high", True), ("Clipped low", "clip/frac_low", True))


def suite_ladders(site: Site) -> dict[str, list[str]]:
    """``ladders`` of the project's data/suite.yaml (name -> rung spec ids); {} without the file."""
    path = site.root.joinpath(*SUITE_FILE)
    if not path.is_file():
        return {}
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as err:
        raise AuthorError(f"{path}: not valid YAML: {err}") from None
    ladders = raw.get("ladders", {}) if isinstance(raw, dict) else None
    if not isinstance(ladders, dict) or not all(
            isinstance(k, str) and isinstance(v, list) and all(isinstance(i, str) for i in v)
            for k, v in ladders.items()):
        raise AuthorError(f"{path}: ladders: a mapping of ladder name to a list of spec ids")
    return ladders


@dataclass
class Rung:
    """One row of the ladder."""

    spec_id: str
    spec: AlgorithmSpec | None
    base: str | None  # the rung it is compared with (None for the first)
    changed: list[SlotDiff]  # the slots that differ from the base
    runs: list[Run] = field(default_factory=list)
    changes: list[HeldOutChange | None] = field(default_factory=list)
    finals: dict[str, list[float | None]] = field(default_factory=dict)  # metric -> one value per run

    @property
    def name(self) -> str:
        return self.spec.name if self.spec else self.spec_id


def final_value(run: Run, metric: str) -> float | None:
    """The metric's mean over the last tenth of the run (None when not logged)."""
    means = edge_means(raw_series(run, metric)[1])
    return None if means is None else means[1]


def change_text(diffs: list[SlotDiff], above: AlgorithmSpec | None, spec: AlgorithmSpec | None) -> str:
    """'Clip: symmetric (ε 0.2) → asymmetric (ε_low 0.2, ε_high 0.28)' for each slot that differs."""
    if above is None or spec is None:
        return ""
    before, after = components_of(above), components_of(spec)
    return "; ".join(f"{SLOT_LABELS[d.slot]}: {kind_label(before[d.slot])} \u2192 {kind_label(after[d.slot])}"
                     for d in diffs)


def ladder_rungs(site: Site, ladder: str) -> list[Rung]:
    """The rungs of a ladder, each compared with its base: the earlier rung it differs from in the
    fewest slots, the nearest one on a tie (the rung above, unless two changes are each tried
    alone on the same rung, as Dr. GRPO's are)."""
    ladders = suite_ladders(site)
    if ladder not in ladders:
        known = ", ".join(sorted(ladders)) or "none"
        raise AuthorError(f"ablation_ladder: data/suite.yaml has no ladder {ladder!r} (its ladders: {known})")
    rungs: list[Rung] = []
    for spec_id in ladders[ladder]:
        spec = site.any_spec(spec_id)
        base, diffs = None, []
        if spec is not None:
            options = [(r, [d for d in diff_algorithms(r.spec, spec) if d.status != "unchanged"])
                       for r in reversed(rungs) if r.spec is not None]
            if options:
                base, diffs = min(options, key=lambda o: len(o[1]))  # min keeps the first (nearest) on a tie
        elif rungs:
            base = rungs[-1]
        runs = algorithm_runs(site, spec_id)
        rungs.append(Rung(spec_id, spec, base.spec_id if base else None, diffs, runs,
                          [changes_of(r)["greedy"] for r in runs],
                          {m: [final_value(r, m) for r in runs] for _, m, _ in FINAL_METRICS}))
    return rungs


def _values_cell(values: Sequence[float | None], fmt) -> str:
    """One run: its value; several: the median and each run's value."""
    s = spread(values)
    if s is None:
        return "–"
    if s.n == 1:
        return fmt(s.values[0])
    return f"{fmt(s.median)} ({', '.join(fmt(v) for v in s.values)})"


def _metric_fmt(percent: bool):
    return (lambda v: fmt_pct(v, 2)) if percent else (lambda v: fmt_num(v, 3))


def _change_cell(rung: Rung) -> str:
    measured = [c for c in rung.changes if c is not None]
    if not measured:
        return "–"
    if len(measured) == 1:
        return change_cell(measured[0])
    s = spread([c.change for c in measured])
    clear = sum(1 for c in measured if c.direction != "flat")
    return (f"{fmt_signed_points(s.median)} (each: {', '.join(fmt_signed_points(c.change) for c in measured)}; "
            f"{clear} of {len(measured)} intervals exclude zero)")


def ladder_table_html(site: Site, ladder: str, rungs: list[Rung]) -> str:
    rows = []
    by_id = {r.spec_id: r for r in rungs}
    for i, rung in enumerate(rungs):
        base = by_id.get(rung.base) if rung.base else None
        if rung.spec is None:
            changed = "no spec with this id"
        elif base is None:
            changed = "the starting rung"
        else:
            changed = change_text(rung.changed, base.spec, rung.spec) or "nothing (same components)"
            if i > 0 and base is not rungs[i - 1]:
                changed = f"from {base.name}: {changed}"
        name = escape_text(rung.name) + f' <code>{escape_text(rung.spec_id)}</code>'
        if not rung.runs:
            rows.append([name, escape_text(changed), "no run in this build"] + ["–"] * (2 + len(FINAL_METRICS)))
            continue
        ends = [c.end for c in rung.changes if c is not None]
        runs_text = (f"{len(rung.runs)} ({', '.join(seed_text(r) for r in rung.runs)})" if len(rung.runs) > 1 else
                     f"1 ({seed_text(rung.runs[0])})")
        rows.append([name, escape_text(changed), escape_text(runs_text),
                     escape_text(_values_cell(ends, fmt_pct)),
                     escape_text(_change_cell(rung))]
                    + [escape_text(_values_cell(rung.finals[m], _metric_fmt(pct))) for _, m, pct in FINAL_METRICS])
    head = ["Rung", "Changed from the rung above (or the rung named)", "Runs", "Held-out greedy, end", "Greedy change [95% interval]",
            *[c for c, _, _ in FINAL_METRICS]]
    caption = (f"The {ladder} ladder of data/suite.yaml, one rung per row. Held-out greedy accuracy at the end and its "
               "paired change from the start (percentage points, 95% interval); length, entropy and clip fractions "
               "as the mean over the last tenth of each run. With several runs: the median, then each run.")
    return table(head, rows, caption=caption, numeric=(3, 4, 5, 6, 7, 8))


def ladder_figure_spec(rows: list[dict], rung_names: list[str], value: str, title: str, percent: bool,
                       with_interval: bool) -> dict:
    import altair as alt

    colour = role("series-value")
    y = alt.Y("rung:N", sort=rung_names, title=None, scale=alt.Scale(domain=rung_names),
              axis=alt.Axis(labelLimit=150))
    x_axis = alt.Axis(format=".0%" if percent else "~g", tickCount=4)
    tooltip = [alt.Tooltip("rung:N", title="Rung"), alt.Tooltip("seed:N", title="Run"),
               alt.Tooltip("text:N", title=title)]
    base = alt.Chart(alt.Data(values=rows))
    layers = []
    if with_interval:
        layers.append(base.mark_rule(color=colour, strokeWidth=2, opacity=0.55).encode(
            x=alt.X("low:Q", title=title, axis=x_axis), x2="high:Q", y=y, yOffset=alt.YOffset("seed:N"),
            tooltip=tooltip))
    layers.append(base.mark_point(color=colour, filled=True, size=55).encode(
        x=alt.X(f"{value}:Q", title=title, axis=x_axis, scale=alt.Scale(zero=with_interval)), y=y,
        yOffset=alt.YOffset("seed:N"), tooltip=tooltip))
    chart = alt.layer(*layers).properties(width="container", height=max(120, 30 * len(rung_names)),
                                          autosize=alt.AutoSizeParams(type="fit-x", contains="padding"))
    spec = chart.to_dict()
    spec["description"] = f"{title} of each rung of the ablation ladder, one mark per run."
    return spec


def ladder_figure_html(site: Site, rungs: list[Rung]) -> str:
    names = [r.name for r in rungs]
    panels = []
    change_rows = [{"rung": r.name, "seed": seed_text(run), "change": round(c.change, 5), "low": round(c.low, 5),
                    "high": round(c.high, 5), "text": change_cell(c)}
                   for r in rungs for run, c in zip(r.runs, r.changes) if c is not None]
    charts = [("Held-out greedy change", change_rows, "change", True, True)]
    for column, metric, pct in FINAL_METRICS[:2]:
        rows = [{"rung": r.name, "seed": seed_text(run), "value": round(v, 6), "text": fmt_num(v, 3)}
                for r in rungs for run, v in zip(r.runs, r.finals[metric]) if v is not None]
        charts.append((f"Final {column.split(' (')[0].lower()}", rows, "value", pct, False))
    for title, rows, value, pct, interval in charts:
        if not rows:
            continue
        spec = ladder_figure_spec(rows, names, value, title, pct, interval)
        panels.append(f'<div class="unipo-course-panel" style="min-width:0">'
                      f'<p style="margin:0 0 .2em;font-weight:600">{escape_text(title)}</p>'
                      f"{vega_embed(spec, chart_id=site.chart_id(spec))}</div>")
    if not panels:
        return ""
    caption = ("One mark per run (each seed on its own line within its rung); the held-out change with its 95% "
               "interval as a bar. Rungs without a run have no marks.")
    return ('<figure class="unipo-figure unipo-ladder"><div class="unipo-course-grid" style="display:grid;'
            'grid-template-columns:repeat(auto-fit,minmax(15rem,1fr));gap:1.2rem 1.6rem">' + "".join(panels)
            + f"</div><figcaption>{escape_text(caption)}</figcaption></figure>")


def ablation_ladder_html(site: Site, ladder: str) -> str:
    rungs = ladder_rungs(site, ladder)
    if not rungs:
        return note_html(f"The {ladder} ladder of data/suite.yaml has no rungs.", "warning")
    missing = [r.name for r in rungs if not r.runs]
    note = ""
    if missing:
        note = note_html(f"No run in this build for: {', '.join(missing)}. Train them with `unipo suite` (or point "
                         "UNIPO_RUNS at a directory that holds them) and rebuild.", "warning")
    single = [r.name for r in rungs if len(r.runs) == 1]
    if single:
        note += note_html(f"One run (one seed) only: {', '.join(single)}. What these rungs show, and how they differ "
                          "from the rungs around them, rests on one seed.")
    return ladder_figure_html(site, rungs) + ladder_table_html(site, ladder, rungs) + note


@macro(html=True)
def ablation_ladder(site: Site, ladder: str = "dapo") -> str:
    """A ladder of data/suite.yaml: its figure and its table, one row per rung."""
    return ablation_ladder_html(site, str(ladder))
