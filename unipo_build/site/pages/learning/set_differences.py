"""What differs between run sets besides scale: how each core algorithm's runs were trained, and
their held-out gains at equal numbers of updates.

    {{ set_differences() }}    per set, a table of the core algorithms' runs (rollouts run and asked,
                               updates, runs cut by a time limit, answers generated per kept one, the
                               learning rate, the held-out gain, whether the curve was still rising)
                               and a gain table at matched update counts, with the sentences that say
                               what the tables show and what they cannot isolate (HTML)
    {{ cut_short_note() }}     a sentence: which runs of the build stopped before the rollouts they
                               asked for, and what the fraction-of-training axis hides about them

Every figure comes from the runs' headers and logs: ``hyperparameters.steps`` and ``steps_asked``
(a run stopped by ``--time-limit``), the steps table (updates, ``sampling/generated_per_kept``),
and the held-out evaluations (``heldout.compare``, paired problem by problem). The matched-update
gains compare each run's start evaluation with its evaluation after exactly U updates, on the
problems both scored (the periodic evaluations score the first rows of the held-out set).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from unipo_build.core.heldout import HeldOutChange, compare as heldout_compare, problem_count
from unipo_build.core.judge import Judgement, judge
from unipo_build.core.runs import Run
from unipo_build.core.numbers import fmt_num, fmt_signed_points, plain_num
from unipo_build.site.fmt import escape_text, note_html, table, two_lines
from unipo_build.site.facts.run_facts import COURSE_ALGORITHMS
from unipo_build.site.context import Site, macro
from unipo_build.site.facts.spec_facts import and_names, count_word
from unipo_build.site.pages.learning.effects import effect_text
from unipo_build.site.pages.learning.verdicts import changes_of


@dataclass(frozen=True)
class RunSetup:
    """How one run was trained, from its header and logs."""

    run: Run
    rollouts: int  # rollouts trained
    asked: int  # rollouts asked for (more than ``rollouts`` when a time limit stopped it)
    updates: int  # optimiser steps logged
    lr: float | None
    generated_per_kept: float | None  # answers generated per answer trained on (a sampling filter)
    gain: HeldOutChange | None  # held-out greedy, start to end
    rising: HeldOutChange | None  # held-out greedy between the last two evaluations

    @property
    def cut_short(self) -> bool:
        return self.rollouts < self.asked

    @property
    def per_rollout(self) -> float:
        return self.updates / self.rollouts if self.rollouts else 0.0

    @property
    def still_rising(self) -> bool:
        """The last evaluation is above the one before it, clear of the noise."""
        return self.rising is not None and self.rising.direction == "up"


def rollouts_of(run: Run) -> tuple[int, int]:
    """(rollouts trained, rollouts asked for): more asked than trained when a time limit stopped the run."""
    table_ = run.reader.table
    rollouts = int(table_.rollouts[-1]) + 1 if table_.n else 0
    hp = run.header.hyperparameters
    return rollouts, int(hp.get("steps_asked") or hp.get("steps") or rollouts)


def run_setup(run: Run) -> RunSetup:
    table_ = run.reader.table
    rollouts, asked = rollouts_of(run)
    hp = run.header.hyperparameters
    per_kept = table_.column("sampling/generated_per_kept")[table_.first_in_rollout] if table_.n else np.array([])
    per_kept = per_kept[~np.isnan(per_kept)]
    evals = [e for e in run.evals if e.accuracy_greedy is not None]
    rising = heldout_compare(evals[-2], evals[-1]) if len(evals) >= 3 else None
    return RunSetup(run, rollouts, asked, int(table_.n), hp.get("lr"),
                    float(np.mean(per_kept)) if len(per_kept) else None, changes_of(run)["greedy"], rising)


def core_setups(site: Site) -> dict[str, list[RunSetup]]:
    """The core algorithms' runs of a build, each algorithm's in seed order (absent ones left out)."""
    out = {}
    for algorithm in COURSE_ALGORITHMS:
        runs = [r for r in site.catalog.seeds_of(algorithm) if r.header.finished_at is not None]
        if runs:
            out[algorithm] = [run_setup(r) for r in runs]
    return out


def _range(values: Sequence[float], fmt) -> str:
    values = sorted(set(values))
    if not values:
        return "–"
    return fmt(values[0]) if len(values) == 1 else f"{fmt(values[0])} to {fmt(values[-1])}"


def _rollouts_cell(setups: list[RunSetup]) -> str:
    run = _range([s.rollouts for s in setups], fmt_num)
    asked = _range([s.asked for s in setups], fmt_num)
    cut = [s for s in setups if s.cut_short]
    detail = (f"{len(cut)} of {len(setups)} stopped by a time limit" if cut else "")
    return two_lines(f"{run} of {asked}" if cut else run, detail)


def _gain_cell(setups: list[RunSetup]) -> str:
    gains = [s.gain for s in setups if s.gain is not None]
    if not gains:
        return "–"
    clear = sum(1 for g in gains if g.direction != "flat")
    return two_lines(", ".join(fmt_signed_points(g.change) for g in gains),
                     f"{clear} of {len(gains)} intervals exclude zero")


def _rising_cell(setups: list[RunSetup]) -> str:
    measured = [s for s in setups if s.rising is not None]
    if not measured:
        return "–"
    up = sum(1 for s in measured if s.still_rising)
    return two_lines(f"{up} of {len(measured)}", ", ".join(fmt_signed_points(s.rising.change) for s in measured))


def setup_table(site: Site, label: str, setups: dict[str, list[RunSetup]]) -> str:
    rows = []
    for algorithm, runs in setups.items():
        kept = [s.generated_per_kept for s in runs if s.generated_per_kept is not None]
        rows.append([
            two_lines(site.algorithm_name(algorithm), f"{count_word(len(runs))} run" + ("" if len(runs) == 1 else "s")),
            _rollouts_cell(runs),
            two_lines(_range([s.updates for s in runs], fmt_num),
                      f"{_range([round(s.per_rollout, 2) for s in runs], fmt_num)} a rollout"),
            escape_text(fmt_num(float(np.mean(kept)), 2) if kept else "–"),
            _gain_cell(runs),
            _rising_cell(runs),
        ])
    lrs = sorted({s.lr for runs in setups.values() for s in runs if s.lr is not None})
    lr = f" Learning rate: {', '.join(plain_num(v) for v in lrs)}." if lrs else ""
    return table(["Algorithm", "Rollouts", "Updates", "Answers per kept one", "Held-out greedy change (points)",
                  "Still rising at the end"], rows,
                 caption=f"{label}: how each core algorithm's runs were trained, from their headers and logs.{lr} "
                         "\u201cStill rising\u201d: the last held-out evaluation above the one before it, clear "
                         "of the noise (paired, on the problems both scored).",
                 numeric=(1, 2, 3))


# ---------------------------------------------------------------------------
# Gains at matched numbers of updates
# ---------------------------------------------------------------------------

#: A run counts as evaluated after U updates when it has an evaluation within this share below U (a
#: run cut by a time limit after 30 updates stands beside others evaluated after 32).
MATCH_TOLERANCE = 0.1


def evaluation_at(run: Run, updates: int):
    """The run's last evaluation after between (1 - MATCH_TOLERANCE) U and U updates, or None."""
    low = updates * (1 - MATCH_TOLERANCE)
    at = [e for e in run.evals if e.phase != "start" and low <= e.step <= updates and e.accuracy_greedy is not None]
    return max(at, key=lambda e: e.step) if at else None


def gain_at(run: Run, updates: int, rows: int | None = None) -> HeldOutChange | None:
    """Held-out greedy change from the start to the evaluation after about ``updates`` updates (on at
    most ``rows`` problems)."""
    start = next((e for e in run.evals if e.phase == "start"), None)
    at = evaluation_at(run, updates)
    if start is None or at is None:
        return None
    return heldout_compare(start, at, rows=rows)


def column(setups: dict[str, list[RunSetup]], updates: int) -> dict[str, list[HeldOutChange]]:
    """Every algorithm evaluated after about ``updates`` updates (all its runs), with each run's
    held-out change, all read on the same problems: the first rows every one of those evaluations
    scored (periodic evaluations score the first rows of the held-out set)."""
    evaluated = {a: runs for a, runs in setups.items() if all(evaluation_at(s.run, updates) for s in runs)}
    counts = [problem_count(evaluation_at(s.run, updates)) for runs in evaluated.values() for s in runs]
    rows = None if any(c is None for c in counts) or not counts else min(counts)
    out = {}
    for algorithm, runs in evaluated.items():
        gains = [gain_at(s.run, updates, rows) for s in runs]
        if all(g is not None for g in gains):
            out[algorithm] = gains
    return out


def matched_steps(setups: dict[str, list[RunSetup]]) -> list[int]:
    """Update counts at which every run of at least two algorithms was evaluated."""
    steps = sorted({e.step for runs in setups.values() for s in runs for e in s.run.evals
                    if e.phase != "start" and e.step > 0})
    return [u for u in steps
            if sum(1 for runs in setups.values() if all(evaluation_at(s.run, u) is not None for s in runs)) >= 2]


def group_method(run: Run) -> bool:
    """A run whose advantage is centred within each prompt's group (GRPO, DAPO, Dr. GRPO)."""
    return run.config is not None and run.config.component("advantage").group_baseline


@dataclass(frozen=True)
class MatchedGap:
    """At one matched update count: the group methods' gains against the others'."""

    updates: int
    group: dict[str, list[float]]  # algorithm -> one gain per run (a share)
    other: dict[str, list[float]]

    @property
    def judgement(self) -> Judgement:
        """The group methods' runs against the others', judged by the one procedure (``core.judge``)."""
        return judge([v for vs in self.group.values() for v in vs], [v for vs in self.other.values() for v in vs])

    @property
    def ahead(self) -> int:
        """+1: the group methods' runs gained clearly more than the others'; -1: clearly less; 0: not clear."""
        j = self.judgement
        return j.sign if j.clear else 0


def matched_gap(site: Site, setups: dict[str, list[RunSetup]]) -> MatchedGap | None:
    """The largest matched update count at which both group methods and others were evaluated."""
    for updates in reversed(matched_steps(setups)):
        group, other = {}, {}
        for algorithm, gains in column(setups, updates).items():
            (group if group_method(setups[algorithm][0].run) else other)[algorithm] = [g.change for g in gains]
        if group and other:
            return MatchedGap(updates, group, other)
    return None


def matched_table(site: Site, label: str, setups: dict[str, list[RunSetup]]) -> str:
    steps = matched_steps(setups)
    if not steps:
        return note_html(f"{label}: no update count at which two algorithms were both evaluated.", "info")
    columns = {u: column(setups, u) for u in steps}
    rows = []
    for algorithm, runs in setups.items():
        cells = [escape_text(site.algorithm_name(algorithm))]
        for u in steps:
            gains = columns[u].get(algorithm)
            if gains is None:
                cells.append("–")
                continue
            clear = sum(1 for g in gains if g.direction != "flat")
            steps_at = sorted({evaluation_at(s.run, u).step for s in runs})
            at = "" if steps_at == [u] else f"; evaluated after {_range(steps_at, fmt_num)} updates"
            cells.append(two_lines(", ".join(fmt_signed_points(g.change) for g in gains),
                                   f"{clear} of {len(gains)} clear of zero{at}"))
        rows.append(cells)
    problems = [next(iter(c.values()))[0].n for c in columns.values() if c]
    return table(["Algorithm"] + [f"after {fmt_num(u)} updates" for u in steps], rows,
                 caption=f"{label}: held-out greedy change (points) from the start to the evaluation after the same "
                         "number of updates, one figure per run, paired, every column on the problems all its "
                         f"evaluations scored ({' / '.join(fmt_num(n) for n in problems)} problems).",
                 numeric=tuple(range(1, len(steps) + 1)))


# ---------------------------------------------------------------------------
# Sentences
# ---------------------------------------------------------------------------

def _mean_gain(runs: list[RunSetup]) -> float | None:
    gains = [s.gain.change for s in runs if s.gain is not None]
    return float(np.mean(gains)) if gains else None


def relative_gains_words(site: Site, label: str, setups: dict[str, list[RunSetup]]) -> str:
    """'In the GPU set PPO gained 18% and REINFORCE 19% of the group methods' mean gain (...)'."""
    group = [g for a, runs in setups.items() if group_method(runs[0].run) for g in [_mean_gain(runs)] if g is not None]
    others = [(a, _mean_gain(runs)) for a, runs in setups.items() if not group_method(runs[0].run)]
    others = [(a, g) for a, g in others if g is not None]
    if not group or not others:
        return f"In the {label} the group methods and the others cannot be compared: one of the two kinds has no run."
    base = float(np.mean(group))
    if base <= 0:
        return (f"In the {label} the group methods gained {fmt_signed_points(base)} points on average, so the others' "
                "gains cannot be read as a share of theirs.")
    parts = and_names([f"{site.algorithm_name(a)} {fmt_num(100 * g / base, 2)}%" for a, g in others])
    return (f"In the {label}, measured against the group methods' mean held-out gain ({fmt_signed_points(base)} "
            f"points), {parts} of it.")


@macro(name="cut_short_note")
def cut_short_words(site: Site, setups: dict[str, list[RunSetup]] | None = None, where: str = "this build") -> str:
    """Which core runs stopped before the rollouts they asked for (``where``: how the runs' set is named)."""
    setups = core_setups(site) if setups is None else setups
    cut = [s for runs in setups.values() for s in runs if s.cut_short]
    if not cut:
        return f"Every core run of {where} trained all the rollouts it asked for."
    names = and_names([f"{s.run.id} ({fmt_num(s.rollouts)} of {fmt_num(s.asked)} rollouts, {fmt_num(s.updates)} "
                       "updates)" for s in cut])
    return (f"Not every run trained all the rollouts it asked for: {names} stopped early, by a time limit (the note in "
            "each header says why). On the fraction-of-training axis their end sits at 100% beside runs that trained "
            "longer, so compare them at equal updates or rollouts, not at equal fractions.")


def matched_words(site: Site, label: str, gap: MatchedGap | None) -> str:
    if gap is None:
        return (f"In the {label} no update count was evaluated for both a group method and another algorithm, so the "
                "gains cannot be compared at equal updates.")

    def ranges(side: dict[str, list[float]]) -> str:
        return and_names([f"{site.algorithm_name(a)} {_range(vs, fmt_signed_points)}" for a, vs in side.items()])
    text = (f"After the same {fmt_num(gap.updates)} updates in the {label}, the group methods had gained "
            f"{ranges(gap.group)} held-out points and the others {ranges(gap.other)}")
    j = gap.judgement
    judged = f"the difference of the means, {effect_text(j, fmt_signed_points, ' points')}, is {j.words()}"
    if gap.ahead > 0:
        return text + (f": the group methods were ahead at equal updates, so the number of updates alone does not "
                       f"explain the difference; {judged}.")
    if gap.ahead < 0:
        return text + f": the other algorithms were ahead at equal updates; {judged}."
    return text + f": at equal updates the two kinds are not clearly apart; {judged}."


def set_differences_html(site: Site, views: Sequence[tuple[str, Site]]) -> str:
    """For each (label, site) of the build's sets: its setup table, its matched-update table and
    their sentences; then what the sets differ in that the page cannot separate."""
    parts = []
    leads = []
    for label, view in views:
        setups = core_setups(view)
        if not setups:
            parts.append(note_html(f"{label}: no run of the course's core algorithms.", "info"))
            continue
        gap = matched_gap(view, setups)
        leads.append(relative_gains_words(site, label, setups))
        parts.append(f'<div class="unipo-scale-setup"><p class="unipo-scale-set-title">{escape_text(label)}</p>'
                     f"<p>{escape_text(cut_short_words(view, setups, f'the {label}'))} "
                     f"{escape_text(matched_words(site, label, gap))}</p>"
                     f'<details class="abstract"><summary>{escape_text(label)}: the runs, and their gains at '
                     f"matched updates (two tables)</summary>{setup_table(site, label, setups)}"
                     f"{matched_table(site, label, setups)}</details></div>")
    if len(views) > 1:
        leads.append(confounds_words(views))
    lead = " ".join(leads)
    return (f"<p>{escape_text(lead)}</p>" if lead else "") + "".join(parts)


#: Header settings that differ between sets and could each change how far an algorithm gets.
CONFOUNDS = (("the model's size", lambda r: r.header.model.parameters),
             ("the task", lambda r: r.header.task.source if r.header.task else None),
             ("the prompts per rollout", lambda r: r.header.hyperparameters.get("prompts_per_step")),
             ("the answers per prompt", lambda r: r.header.hyperparameters.get("group_size")),
             ("the generation budget", lambda r: r.header.hyperparameters.get("max_new_tokens")),
             ("the learning rate", lambda r: r.header.hyperparameters.get("lr")),
             ("the rollouts per run", lambda r: r.header.hyperparameters.get("steps_asked")
              or r.header.hyperparameters.get("steps")))


def confounds_words(views: Sequence[tuple[str, Site]]) -> str:
    """Which of the settings in CONFOUNDS differ between the sets: every one is a candidate cause."""
    values = []
    for _, view in views:
        runs = [s.run for setups in core_setups(view).values() for s in setups]
        values.append([{get(r) for r in runs} for _, get in CONFOUNDS])
    differ = [name for i, (name, _) in enumerate(CONFOUNDS) if len({frozenset(v[i]) for v in values}) > 1]
    if not differ:
        return "The sets share the settings this page reads from the headers."
    return (f"The sets differ in {count_word(len(differ))} of these settings at once ({and_names(differ)}), so this page "
            "cannot isolate which of them changes how far each algorithm gets; a cause would need runs that change "
            "one of them at a time.")
