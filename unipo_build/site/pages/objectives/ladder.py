"""The ablation ladder, in the style of DAPO's table 1: one row per rung, each rung one slot away
from the rung above it, with what its runs measured.

    {{ ablation_ladder("dapo") }}          the table and the figure of one ladder (HTML)

The ladders are listed in ``data/suite.yaml`` (``ladders``: a name and its rungs' spec ids, in
order), the same file ``unipo suite`` trains the runs from. A rung is a spec: a course algorithm
(``data/algorithms/<id>.yaml``) or an ablation spec (``data/algorithms/ladder/<id>.yaml``). What
changed from the rung above is the registry-based slot diff of the two specs (``diff.py``), never
typed. Every run of the rung's spec in the build counts (several seeds give a spread); a rung
the set has no run of is left out, each rung then compared with the rungs shown, and one sentence
under the ladder names it.

Columns: held-out greedy accuracy at the end and its paired change from the start with the 95%
interval (``core/heldout.py``); response length, entropy and the clip fractions as the mean over the
last tenth of the run (rollouts for rollout-level metrics, updates otherwise), "final" values as
DAPO's table reports final scores. With several runs, the median and every run's value.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import yaml

from unipo_build.core import yamlfile
from unipo_build.core.heldout import HeldOutChange
from unipo_build.core.numbers import fmt_num, fmt_pct, fmt_signed_points
from unipo_build.site.render import chart_spec, vega_embed
from unipo_build.core.runs import Run
from unipo_build.core.specs import AlgorithmSpec
from unipo_build.site.facts.diff import SLOT_LABELS, SlotDiff, diff_algorithms
from unipo_build.site.views.explainer.explainer import components_of, kind_label
from unipo_build.site.fmt import escape_text, note_html, table, two_lines
from unipo_build.site.palette import ALGORITHMS, role
from unipo_build.site.facts.seeds import finished_runs, seed_text, spread, training_text
from unipo_build.site.facts.spec_facts import and_names
from unipo_build.site.facts.series import edge_means, raw_series
from unipo_build.site.context import AuthorError, Site, macro
from unipo_build.site.pages.learning.verdicts import change_cell, changes_of

SUITE_FILE = ("data", "suite.yaml")
#: The run metrics of a rung's row: (name, metric, as a percentage).
FINAL_METRICS = (("length", "length/mean", False), ("entropy", "entropy/mean", False),
                 ("clipped high", "clip/frac_high", True), ("clipped low", "clip/frac_low", True))


def suite_ladders(site: Site) -> dict[str, list[str]]:
    """``ladders`` of the project's data/suite.yaml (name -> rung spec ids); {} without the file."""
    path = site.root.joinpath(*SUITE_FILE)
    if not path.is_file():
        return {}
    try:
        raw = yamlfile.load(path) or {}
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
    training: list[Run] = field(default_factory=list)  # runs of the spec still training (not in ``runs``)

    @property
    def name(self) -> str:
        return self.spec.name if self.spec else self.spec_id


def final_value(run: Run, metric: str) -> float | None:
    """The metric's mean over the last tenth of the run (None when not logged)."""
    means = edge_means(raw_series(run, metric)[1])
    return None if means is None else means[1]


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
        runs, training = finished_runs(site.catalog.seeds_of(spec_id))
        rungs.append(Rung(spec_id, spec, None, [], runs, [changes_of(r)["greedy"] for r in runs],
                          {m: [final_value(r, m) for r in runs] for _, m, _ in FINAL_METRICS}, training))
    return based(rungs)


def based(rungs: list[Rung]) -> list[Rung]:
    """Each rung compared with its base: the earlier rung of ``rungs`` it differs from in the fewest slots,
    the nearest one on a tie; the rungs, rebased in place."""
    for i, rung in enumerate(rungs):
        base, diffs = None, []
        if rung.spec is not None:
            options = [(r, [d for d in diff_algorithms(r.spec, rung.spec) if d.status != "unchanged"])
                       for r in reversed(rungs[:i]) if r.spec is not None]
            if options:
                base, diffs = min(options, key=lambda o: len(o[1]))  # min keeps the first (nearest) on a tie
        elif i:
            base = rungs[i - 1]
        rung.base, rung.changed = (base.spec_id if base else None), diffs
    return rungs


def present_rungs(rungs: list[Rung]) -> tuple[list[Rung], list[Rung]]:
    """(the rungs the set has a run of, finished or training, each rebased on those; the rungs it has
    none of): a rung without a run is left out of the figure and the table (issue 47 item 1)."""
    shown = [r for r in rungs if r.runs or r.training]
    absent = [r for r in rungs if not (r.runs or r.training)]
    if not absent:
        return rungs, []
    return based([Rung(r.spec_id, r.spec, None, [], r.runs, r.changes, r.finals, r.training) for r in shown]), absent


def _values_cell(values: Sequence[float | None], fmt) -> str:
    """One run: its value; several: the median, and each run's value under it."""
    s = spread(values)
    if s is None:
        return "–"
    if s.n == 1:
        return two_lines(fmt(s.values[0]))
    return two_lines(f"{fmt(s.median)} (median)", " · ".join(fmt(v) for v in s.values))


def _change_cell(rung: Rung) -> str:
    measured = [c for c in rung.changes if c is not None]
    if not measured:
        return "–"
    if len(measured) == 1:
        return two_lines(change_cell(measured[0]))
    s = spread([c.change for c in measured])
    clear = sum(1 for c in measured if c.direction != "flat")
    return two_lines(f"{fmt_signed_points(s.median)} (median)",
                      f"{' · '.join(fmt_signed_points(c.change) for c in measured)}; {clear} of {len(measured)} "
                      "intervals exclude zero")


def _clip_cell(rung: Rung) -> str:
    high, low = spread(rung.finals["clip/frac_high"]), spread(rung.finals["clip/frac_low"])
    if high is None and low is None:
        return "–"
    text = lambda s: "–" if s is None else fmt_pct(s.median, 2)  # noqa: E731
    return two_lines(f"{text(high)} / {text(low)}", "median of the runs" if max(
        (x.n for x in (high, low) if x is not None), default=1) > 1 else "")


def rung_components(rung: Rung):
    """The rung's components, with the parameters its first run resolved (budget-dependent lengths)."""
    config = rung.runs[0].config if rung.runs and rung.runs[0].config is not None else None
    return components_of(rung.spec, config)


def ladder_table_html(site: Site, ladder: str, rungs: list[Rung]) -> str:
    rows = []
    by_id = {r.spec_id: r for r in rungs}
    for i, rung in enumerate(rungs):
        base = by_id.get(rung.base) if rung.base else None
        if rung.spec is None:
            changed = "no spec with this id"
        elif base is None or base.spec is None:
            changed = "the starting rung"
        else:
            before, after = rung_components(base), rung_components(rung)
            changed = "; ".join(f"{SLOT_LABELS[d.slot]}: {kind_label(before[d.slot], inline=True)} \u2192 "
                                f"{kind_label(after[d.slot], inline=True)}" for d in rung.changed
                                ) or "nothing (same components)"
            if base is not rungs[i - 1]:
                changed = f"from {base.name}: {changed}"
        changed_html = f'<span style="display:inline-block;min-width:12em">{escape_text(changed)}</span>'
        name = f'{escape_text(rung.name)}<br><code>{escape_text(rung.spec_id)}</code>'
        if not rung.runs:
            rows.append([name, changed_html, escape_text(_absent_words(rung)), "–", "–", "–", "–", "–"])
            continue
        ends = [c.end for c in rung.changes if c is not None]
        rows.append([name, changed_html, two_lines(str(len(rung.runs)),
                                                             ", ".join(seed_text(r) for r in rung.runs)),
                     _values_cell(ends, fmt_pct), _change_cell(rung),
                     _values_cell(rung.finals["length/mean"], lambda v: fmt_num(v, 3)),
                     _values_cell(rung.finals["entropy/mean"], lambda v: fmt_num(v, 3)), _clip_cell(rung)])
    head = ["Rung", "Changed from the rung above", "Runs", "Held-out greedy, end", "Greedy change [95% interval]",
            "Length (tokens)", "Entropy", "Clipped high / low"]
    return table(head, rows, caption=f"The {ladder} ladder: one rung per row", numeric=(2, 3, 4, 5, 6, 7))


def ladder_figure_spec(rows: list[dict], rung_names: list[str], rung_colours: list[str], lane_domain: list[str],
                       value: str, title: str, percent: bool, with_interval: bool,
                       absent: dict[str, str] | None = None) -> dict:
    """One panel; a rung without a mark says why in its row (``absent``: rung name -> words,
    "no run" when not given)."""
    import altair as alt

    # A rung's name comes from a spec: it stays data, never a domain list that Vega-Lite would compile
    # into a sort expression (an offset channel sorts by the colour's domain). Rows are ordered by a
    # number, and each mark carries its colour.
    order = {name: i for i, name in enumerate(rung_names)}
    rows = [{**r, "order": order[r["rung"]], "colour": rung_colours[order[r["rung"]]]} for r in rows]
    colour = alt.Color("colour:N", scale=None, legend=None)
    y = alt.Y("rung:N", sort=alt.EncodingSortField(field="order", op="min"), title=None,
              axis=alt.Axis(labelLimit=150))
    offset = alt.YOffset("lane:N", sort=None, scale=alt.Scale(domain=lane_domain, paddingOuter=0.6))
    # a signed change: "+10", "0", "−10" (d3's "+" format would write "+0")
    x_axis = (alt.Axis(format="~r", tickCount=4, labelExpr="datum.value > 0 ? '+' + datum.label : datum.label")
              if with_interval and not percent else alt.Axis(format=".0%" if percent else "~r", tickCount=4))
    tooltip = [alt.Tooltip("rung:N", title="Rung"), alt.Tooltip("seed:N", title="Run"),
               alt.Tooltip("text:N", title=title)]
    base = alt.Chart(alt.Data(values=rows))
    layers = []
    if with_interval:
        layers.append(base.mark_rule(strokeWidth=2, opacity=0.6).encode(
            x=alt.X("low:Q", title=title, axis=x_axis), x2="high:Q", y=y, yOffset=offset, color=colour,
            tooltip=tooltip))
    layers.append(base.mark_point(filled=True, size=55, opacity=1).encode(color=colour,
        x=alt.X(f"{value}:Q", title=title, axis=x_axis, scale=alt.Scale(zero=with_interval, padding=10)), y=y,
        yOffset=offset, tooltip=tooltip))
    missing = [name for name in rung_names if name not in {r["rung"] for r in rows}]
    if missing:  # say so in the row, at the left of the data
        left = min(min(r.get("low", r[value]), r[value]) for r in rows)
        if with_interval:
            left = min(left, 0.0)
        middle = lane_domain[len(lane_domain) // 2]  # on the row's line, like a rung's single run
        layers.append(alt.Chart(alt.Data(values=[{"rung": m, "lane": middle, "at": left, "order": order[m],
                                                  "note": (absent or {}).get(m, "no run")} for m in missing]))
                      .mark_text(align="left", dx=4, fontStyle="italic", opacity=0.7)
                      .encode(x="at:Q", y=y, yOffset=offset, text="note:N"))
    chart = alt.layer(*layers).properties(width="container", height=max(120, 30 * len(rung_names)),
                                          autosize=alt.AutoSizeParams(type="fit-x", contains="padding"))
    spec = chart_spec(chart)
    spec["description"] = f"{title} of each rung of the ablation ladder, one mark per run."
    return spec


def lanes(rungs: list[Rung]) -> tuple[dict[tuple[str, str], str], list[str]]:
    """(rung id, run id) -> the lane its mark sits in within its rung's row, and every lane: a
    rung's runs are centred, so a rung with one run sits on its row's line."""
    most = max((len(r.runs) for r in rungs), default=1) or 1
    out = {(r.spec_id, run.id): str(2 * j + most - len(r.runs)) for r in rungs for j, run in enumerate(r.runs)}
    return out, [str(i) for i in range(2 * most - 1)]


def ladder_figure_html(site: Site, rungs: list[Rung]) -> str:
    names = [r.name for r in rungs]
    # A course algorithm in its own colour, the rungs between them in the neutral one.
    colours = [ALGORITHMS.get(r.spec_id, role("neutral")) for r in rungs]
    lane, lane_domain = lanes(rungs)
    panels = []
    change_rows = [{"rung": r.name, "lane": lane[(r.spec_id, run.id)], "seed": seed_text(run),
                    "change": round(100 * c.change, 3), "low": round(100 * c.low, 3), "high": round(100 * c.high, 3),
                    "text": change_cell(c)}
                   for r in rungs for run, c in zip(r.runs, r.changes) if c is not None]
    # in percentage points (a difference of two accuracies), not a percentage of anything
    charts = [("Held-out greedy change (points)", change_rows, "change", False, True)]
    for column, metric, pct in FINAL_METRICS[:2]:
        rows = [{"rung": r.name, "lane": lane[(r.spec_id, run.id)], "seed": seed_text(run), "value": round(v, 6),
                 "text": fmt_num(v, 3)}
                for r in rungs for run, v in zip(r.runs, r.finals[metric]) if v is not None]
        charts.append((f"Final {column}" + (" (tokens)" if metric == "length/mean" else ""), rows, "value", pct,
                       False))
    for title, rows, value, pct, interval in charts:
        if not rows:
            continue
        spec = ladder_figure_spec(rows, names, colours, lane_domain, value, title, pct, interval,
                                  {r.name: "still training" for r in rungs if r.training and not r.runs})
        panels.append(f'<div class="unipo-course-panel" style="min-width:0">'
                      f'<p style="margin:0 0 .2em;font-weight:600">{escape_text(title)}</p>'
                      f"{vega_embed(spec, chart_id=site.chart_id(spec))}</div>")
    if not panels:
        return ""
    caption = ("One mark per run, the seeds of a rung side by side in its row; the held-out change with its 95% "
               "interval as a bar. The course's algorithms in their colours, the rungs between them in grey.")
    return ('<figure class="unipo-figure unipo-ladder"><div class="unipo-course-grid" style="display:grid;'
            'grid-template-columns:repeat(auto-fit,minmax(15rem,1fr));gap:1.2rem 1.6rem">' + "".join(panels)
            + f"</div><figcaption>{escape_text(caption)}</figcaption></figure>")


@macro(name="ablation_ladder", html=True)
def ablation_ladder_html(site: Site, ladder: str = "dapo") -> str:
    """A ladder of data/suite.yaml: its figure and its table, one row per rung."""
    rungs = ladder_rungs(site, ladder)
    if not rungs:
        return note_html(f"The {ladder} ladder of data/suite.yaml has no rungs.", "warning")
    rungs, absent = present_rungs(rungs)
    if not rungs:  # the set has no run of any rung: the ladder is left out
        return ""
    missing = [r.name for r in absent]
    training = [run for r in rungs for run in r.training]
    note = ""
    if training:
        note += note_html("Still training, so not shown yet (the end evaluation and the last tenth of a run exist "
                          "only once it has finished): " + ", ".join(f"{run.id} ({training_text(run)})"
                                                                    for run in training)
                          + ". Rebuild when they finish.", "info")
    if missing:  # a reader's sentence; how to train a run is the guides' (docs/guides/own-logs.md)
        one = len(missing) == 1
        note += (f"<p>This set has no run of the rung{'' if one else 's'} {escape_text(and_names(missing))}, so the "
                 f"ladder leaves {'it' if one else 'them'} out.</p>")
    single = [r.name for r in rungs if len(r.runs) == 1]
    if single:
        note += note_html(f"One run (one seed) only: {', '.join(single)}. What these rungs show, and how they differ "
                          "from the rungs around them, rests on one seed.")
    return ladder_figure_html(site, rungs) + ladder_table_html(site, ladder, rungs) + note


def _absent_words(rung: Rung) -> str:
    """The Runs cell of a rung without a finished run (one without any run is left out)."""
    if rung.training:
        return "; ".join(training_text(r) for r in rung.training)
    return "no run"
