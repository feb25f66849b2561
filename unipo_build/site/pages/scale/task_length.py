"""The task's length lever, shown to readers: one prompt's solution styles, and how long the
starting policy's answers are.

    {{ task_styles() }}                          a real prompt of data/tasks with its solution in each style
    {{ length_probe() }}                         each run's length probe (run header), as a table
    {{ length_probe_summary("grpo") }}           a run's probe in sentences
    {{ length_probe_fact("grpo", "within_group_sd") }}   one figure of a run's probe as text

The task (``training/task.py``, data/tasks/meta.json) writes each problem's worked solution in one
of several styles: the bare equation, digit-by-digit column working, and the column working with a
check line. Each row of the data holds one of them (``solution``, ``style``). A row in the check
style holds the other two as well: its column working is the check solution without the
``Check:`` sentence, and its bare solution is the column working's ``So ...`` equations followed
by the answer (``styles_of_row``; a test holds this to the generator). A row that lists every
style itself (``solutions``: style -> text) is shown as it is.

The length probe (``RunHeader.length_probe``) samples G answers to held-out prompts with the
starting policy, before the first update: median and mean length, the mean within-group standard
deviation (how much answers to one prompt differ in length), the budget, and the shares in DAPO's
overlong band (the last fifth of the budget) and at the budget.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Sequence

from unipo_build.core import project
from unipo_build.core.paths import project_relative
from unipo_build.core.runs import Run
from unipo_build.core.schema import LengthProbe
from unipo_build.core.file_names import HELDOUT_POOL, TASK_META
from unipo_build.core.numbers import fmt_num, fmt_pct
from unipo_build.site.fmt import escape_text, note_html, table
from unipo_build.site.facts.run_facts import course_runs
from unipo_build.site.facts.seeds import seed_text
from unipo_build.site.facts.spec_facts import and_names
from unipo_build.site.context import AuthorError, Site, macro

_SENTENCE = re.compile(r"(?<=\.)\s+")
STYLE_ORDER = ("bare", "column", "check")


def sentences(solution: str) -> list[str]:
    return [s for s in _SENTENCE.split(solution.strip()) if s]


def styles_of_row(row: dict) -> dict[str, str] | None:
    """Every style of a row's solution (see the module docstring), or None when the row does not
    hold them."""
    given = row.get("solutions")
    if isinstance(given, dict) and all(isinstance(v, str) for v in given.values()) and len(given) > 1:
        return dict(given)
    if row.get("style") != "check" or not isinstance(row.get("solution"), str):
        return None
    parts = sentences(row["solution"])
    if len(parts) < 3 or not parts[-1].startswith("Answer:"):
        return None
    checks = [s for s in parts if s.startswith("Check:")]
    equations = [s[len("So "):] for s in parts if s.startswith("So ")]
    if len(checks) != 1 or not equations:
        return None
    column = [s for s in parts if not s.startswith("Check:")]
    return {"bare": " ".join(equations + [parts[-1]]), "column": " ".join(column), "check": row["solution"]}


def example_row(rows: Sequence[dict]) -> tuple[dict, dict[str, str]] | None:
    """The first row whose styles can all be shown, preferring one whose column working carries or
    borrows (where the long style earns its length)."""
    found = [(row, styles) for row in rows if (styles := styles_of_row(row)) is not None]
    for row, styles in found:
        if re.search(r"\b(carry|borrow)\b", styles.get("column", "")):
            return row, styles
    return found[0] if found else None


def read_rows(path: Path, limit: int = 2000) -> list[dict]:
    rows = []
    with path.open(encoding="utf-8") as fh:
        for number, line in enumerate(fh, start=1):
            if number > limit:
                break
            if line.strip():
                try:
                    row = json.loads(line)
                except json.JSONDecodeError as err:
                    raise AuthorError(f"{path}, line {number}: not valid JSON ({err.msg})") from None
                if isinstance(row, dict):
                    rows.append(row)
    return rows


def shown_task_dir(site: Site) -> tuple[Path, str | None]:
    """The task directory of the runs this build shows (the source most of them name, when the
    project holds it), else data/tasks; and, when the runs trained on a task this build does not
    hold, that task's name (the example then comes from data/tasks, and the page says so)."""
    sources = Counter(r.header.task.source for r in site.catalog.loaded() if r.header.task.source)
    default = project.task_dir(site.root)
    if not sources:
        return default, None
    source = sources.most_common(1)[0][0]  # a log's text: read only inside the project, never trusted
    try:
        path = (site.root / source).resolve()
        inside = path.is_relative_to(site.root.resolve())
        if inside and (path / HELDOUT_POOL).is_file():
            return path, None
        same = path == default.resolve()
    except (OSError, ValueError):
        same = False
    return default, (None if same else source[:120])


@macro(name="task_styles", html=True)
def task_styles_html(site: Site) -> str:
    """A real prompt of the task with its worked solution in every style."""
    directory, elsewhere = shown_task_dir(site)
    meta_path, data = directory / TASK_META, directory / HELDOUT_POOL
    if not data.is_file():
        return note_html(f"There is no task data in {directory} ({HELDOUT_POOL}), so no example can be shown.",
                         "warning")
    meta = json.loads(meta_path.read_text(encoding="utf-8")) if meta_path.is_file() else {}
    picked = example_row(read_rows(data))
    if picked is None:
        return note_html("The task's rows do not hold solutions in several styles, so one prompt's styles cannot be "
                         "shown side by side.")
    row, styles = picked
    shares = meta.get("styles", {}) if isinstance(meta.get("styles"), dict) else {}
    meanings = meta.get("style_meaning", {}) if isinstance(meta.get("style_meaning"), dict) else {}
    order = [s for s in STYLE_ORDER if s in styles] + [s for s in styles if s not in STYLE_ORDER]
    items = []
    for style in order:
        share = shares.get(style)
        head = escape_text(style) + (f" <span style=\"opacity:.75\">({escape_text(fmt_pct(share, 0))} of the warm "
                                     "start's solutions)</span>" if isinstance(share, (int, float)) else "")
        meaning = (f'<p style="margin:.1em 0;font-size:.85em;opacity:.8">{escape_text(meanings[style])}</p>'
                   if isinstance(meanings.get(style), str) else "")
        items.append(f'<li style="margin:.6em 0"><p style="margin:0;font-weight:600">{head}</p>{meaning}'
                     f'<p style="margin:.2em 0"><code style="white-space:normal">{escape_text(styles[style])}</code>'
                     "</p></li>")
    where = project_relative(data, site.root)
    caption = (f"One held-out problem ({where}, row {row.get('id', '?')}) with its worked solution in "
               f"each style, the answer {row.get('answer', '?')}: the row holds the longest, and the shorter ones are "
               "parts of it."
               + (f" The runs this page shows trained on {elsewhere}, which this build does not hold, so the "
                  f"example comes from {project_relative(directory, site.root)}." if elsewhere else ""))
    return (f'<figure class="unipo-figure unipo-task-styles"><p style="margin:0"><strong>Prompt.</strong> '
            f"{escape_text(row.get('prompt', ''))}</p>"
            f'<ul style="list-style:none;padding-left:0">{"".join(items)}</ul>'
            f"<figcaption>{escape_text(caption)}</figcaption></figure>")


# ---------------------------------------------------------------------------
# The length probe
# ---------------------------------------------------------------------------

PROBE_FACT_KEYS = {
    "median_length": "median response length in tokens",
    "mean_length": "mean response length in tokens",
    "within_group_sd": "mean within-group standard deviation of the length, in tokens",
    "budget": "the generation budget (max new tokens)",
    "budget_over_median": "the budget as a multiple of the median length",
    "overlong_band": "share of responses in DAPO's overlong band, the last fifth of the budget (%)",
    "truncated": "share of responses that hit the budget (%)",
    "accuracy": "share of the probed responses that are right (%)",
    "prompts": "held-out prompts probed",
    "group_size": "responses sampled per prompt",
}
_PROBE_PERCENT = {"overlong_band", "truncated", "accuracy"}


def probe_value(run: Run, key: str):
    probe = run.header.length_probe
    if probe is None:
        return None
    if key == "budget_over_median":
        return probe.budget / probe.median_length if probe.median_length else None
    return getattr(probe, key)


@macro(name="length_probe_fact", with_site=False, run=True)
def length_probe_fact_text(run: Run | None, name: str, key: str) -> str:
    """One figure of a run's length probe as text (PROBE_FACT_KEYS)."""
    if key not in PROBE_FACT_KEYS:
        raise AuthorError(f"length_probe_fact: unknown key {key!r} (known: {', '.join(PROBE_FACT_KEYS)})")
    if run is None:
        return f"(no {name} run in this build)"
    value = probe_value(run, key)
    if value is None:
        return f"(the {run.id} log has no length probe)"
    return fmt_pct(value) if key in _PROBE_PERCENT else fmt_num(value, 3)


@macro(name="length_probe_summary", run=True)
def length_probe_summary_text(site: Site, run: Run | None, name: str) -> str:
    """Sentences: the median length, the budget, the spread within groups and the overlong share."""
    if run is None:
        return f"There is no {name} run in this build, so the length of its starting policy's answers is unknown."
    p = run.header.length_probe
    if p is None:
        return (f"The {run.id} log has no length probe, so how long the starting policy's answers were, and how much "
                "they varied for one prompt, is not known from it.")
    label = site.algorithm_name(run.header.algorithm)
    ratio = f" ({fmt_num(p.budget / p.median_length, 3)} times the median)" if p.median_length else ""
    band = ("" if p.overlong_band is None else
            f" {fmt_pct(p.overlong_band)} of the answers fell in the last fifth of the budget, where DAPO's overlong "
            f"shaping starts to penalise, and {fmt_pct(p.truncated)} hit the budget.")
    return (f"In the {label} run ({fmt_num(p.prompts)} held-out prompts, {fmt_num(p.group_size)} answers each) the "
            f"median answer was {fmt_num(p.median_length, 3)} tokens long and the generation budget "
            f"{fmt_num(p.budget)} tokens{ratio}; answers to the same prompt differed in length by "
            f"{fmt_num(p.within_group_sd, 3)} tokens on average (the standard deviation within a group).{band}")


def probe_groups(site: Site, runs: Sequence[str] | None) -> list[tuple[list[Run], LengthProbe]]:
    """Every run of the shown algorithms (all seeds) that has a probe, grouped by identical probes:
    runs that start from the same warm start and sample the probe with the same seed measure the
    same answers, and one row says so instead of repeating them."""
    found, _ = course_runs(site, runs)
    groups: dict[str, tuple[list[Run], LengthProbe]] = {}
    for shown in found:
        for run in site.catalog.seeds_of(shown.variant):
            p = run.header.length_probe
            if p is not None:
                groups.setdefault(p.model_dump_json(), ([], p))[0].append(run)
    return list(groups.values())


def _runs_cell(site: Site, runs: Sequence[Run], named: set[tuple[str, str]]) -> str:
    """'GRPO (seed 0)'; 'REINFORCE, PPO and GRPO (seed 0)' when they share a seed. A run is named by
    its algorithm, and by its id too when another run of the table has the same algorithm and seed
    (``named``)."""
    def label(r: Run) -> str:  # one name never breaks across lines (no-break spaces)
        return (site.run_label(r) if (r.header.algorithm, seed_text(r)) in named else site.algorithm_name(
            r.header.algorithm)).replace(" ", "\u00a0")

    seeds = {seed_text(r) for r in runs}
    if len(seeds) == 1:
        return f"{and_names([label(r) for r in runs])} ({seeds.pop()})"
    return and_names([f"{label(r)} ({seed_text(r)})" for r in runs])


@macro(name="length_probe", html=True)
def length_probe_html(site: Site, runs: Sequence[str] | None = None) -> str:
    """The length probe of each run (median, spread within groups, budget, overlong share) as a table."""
    groups = probe_groups(site, runs)
    keys = [(r.header.algorithm, seed_text(r)) for members, _ in groups for r in members]
    twice = {k for k in keys if keys.count(k) > 1}
    rows = []
    for members, p in groups:
        rows.append([f'<span style="display:inline-block;min-width:12em">'
                     f"{escape_text(_runs_cell(site, members, twice))}</span>",
                     escape_text(f"{fmt_num(p.prompts)} × {fmt_num(p.group_size)}"),
                     escape_text(fmt_num(p.median_length, 3)), escape_text(fmt_num(p.mean_length, 3)),
                     escape_text(fmt_num(p.within_group_sd, 3)),
                     escape_text(f"{fmt_num(p.budget)} ({fmt_num(p.budget / p.median_length, 3)}× the median)"
                                 if p.median_length else fmt_num(p.budget)),
                     escape_text("–" if p.overlong_band is None else fmt_pct(p.overlong_band)),
                     escape_text(fmt_pct(p.truncated)), escape_text(fmt_pct(p.accuracy))])
    if not rows:
        return note_html("No run of this build records a length probe (RunHeader.length_probe), so the length of the "
                         "starting policy's answers cannot be shown.")
    shared = (" Runs whose probes measured exactly the same figures share a row (runs with one seed start from "
              "the same policy and sample the same answers)." if any(len(m) > 1 for m, _ in groups) else "")
    return table(["Runs", "Prompts × answers", "Median length", "Mean length", "Within-group sd", "Budget",
                  "In the overlong band", "At the budget", "Right"], rows,
                 caption="The starting policy's answers (length probe)", numeric=(1, 2, 3, 4, 5, 6, 7, 8)) + (
        "<p>Sampled before the first update. Lengths are in tokens; the within-group standard deviation is the mean "
        "over prompts of the spread of one prompt's answers; the overlong band is the last fifth of the budget."
        f"{shared}</p>")
