"""An algorithm's runs over seeds: which run a page shows, the others, and how far they spread.

    {{ run_choice("grpo") }}     which run of an algorithm a chapter shows, and where the others appear

A build may hold several runs of one algorithm (``grpo``, ``grpo-s1``, ``grpo-s2``: one per seed).
A page that names the algorithm shows one of them (the runs resolver's choice,
``runs.RunCatalog.chosen``); comparisons and verdicts use all of them, so no claim rests on one run
without saying so. The run catalogue (``runs.RunCatalog``: ``seeds_of``, ``with_seeds``) is the one
place that groups runs by algorithm and orders them by seed; the functions here word what it finds.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from unipo_build.core.runs import Run
from unipo_build.core.numbers import fmt_num
from unipo_build.site.facts.run_facts import COURSE_ALGORITHMS
from unipo_build.site.context import Site, macro
from unipo_build.site.facts.spec_facts import and_names


def still_training(run: Run) -> tuple[int, int] | None:
    """(rollouts logged, rollouts planned) for a run still training, else None (``Run.progress``)."""
    return run.progress()


def training_text(run: Run) -> str:
    """'still training: 23 of 100 rollouts logged' (empty for a finished run)."""
    progress = still_training(run)
    return "" if progress is None else f"still training: {fmt_num(progress[0])} of {fmt_num(progress[1])} rollouts logged"


def finished_runs(runs: Sequence[Run]) -> tuple[list[Run], list[Run]]:
    """(the finished runs, the runs still training), each in the given order."""
    training = [r for r in runs if still_training(r) is not None]
    return [r for r in runs if still_training(r) is None], training


def seed_text(run: Run) -> str:
    """'seed 0', or the run's id when its log records no seed."""
    return f"seed {run.header.seed}" if run.header.seed is not None else f"run {run.id}"


def with_seed(run: Run) -> str:
    """'grpo-s1 (seed 1)', or the run's id alone when its log records no seed."""
    return f"{run.id} (seed {run.header.seed})" if run.header.seed is not None else run.id


def seeds_list(runs: Sequence[Run]) -> str:
    """'seeds 0, 1 and 2' (or the run ids of runs without a seed)."""
    seeds = [r.header.seed for r in runs]
    if all(s is not None for s in seeds):
        words = [str(s) for s in seeds]
        return ("seed " if len(words) == 1 else "seeds ") + and_names(words)
    return and_names([seed_text(r) for r in runs])


@dataclass(frozen=True)
class Spread:
    """Values over seeds: each one, and their median, minimum and maximum."""

    values: tuple[float, ...]

    @property
    def n(self) -> int:
        return len(self.values)

    @property
    def median(self) -> float:
        return float(np.median(self.values))

    @property
    def low(self) -> float:
        return float(min(self.values))

    @property
    def high(self) -> float:
        return float(max(self.values))


def spread(values: Sequence[float | None]) -> Spread | None:
    """The spread of the values that are not None (None when there are none)."""
    kept = tuple(float(v) for v in values if v is not None)
    return Spread(kept) if kept else None


@macro(name="run_choice")
def run_choice_text(site: Site, name: str) -> str:
    """Which run a chapter shows for ``name`` and where the algorithm's other runs appear."""
    run, runs = site.catalog.with_seeds(name)
    if run is None:
        return f"There is no {name} run in this build."
    label = site.algorithm_name(run.variant)
    if len(runs) == 1:
        return (f"This chapter shows the run {with_seed(run)}, the only {label} run in this build, so "
                "what it shows rests on one seed.")
    others = [r for r in runs if r is not run]
    detail = [r for r in others if r.token_steps()]
    chosen = site.catalog.chosen(run.variant)
    why = site.catalog.why_chosen(run.variant) if chosen is run else "the page names it by its id"
    other_words = and_names([with_seed(r) for r in others])
    if not detail:
        logs = "log metrics and held-out evaluations only"
    elif len(detail) == len(others):
        logs = "log token detail too"
    else:
        logs = f"log metrics and held-out evaluations ({and_names([r.id for r in detail])} token detail too)"
    return (f"This chapter shows the run {with_seed(run)} of the {fmt_num(len(runs))} {label} runs in "
            f"this build: {why}. The other{'s' if len(others) > 1 else ''}, {other_words}, {logs}; "
            f"{'they appear' if len(others) > 1 else 'it appears'} in this chapter's held-out verdict (each "
            "seed's change) and in the training-dynamics chapter's seed bands and held-out table.")


@macro(name="seed_counts")
def seed_counts_text(site: Site, algorithms: Sequence[str] | None = None) -> str:
    """A sentence: how many runs (seeds) each algorithm of the build has, ablation rungs aside
    (``algorithms``: those only, any without a run left out), and which rest on one seed; "" when
    none has a run."""
    if algorithms is None:
        rungs = site.ablation_ids()
        order = {a: i for i, a in enumerate(COURSE_ALGORITHMS)}
        wanted = sorted({r.variant for r in site.catalog.loaded()} - rungs,
                        key=lambda a: (order.get(a, len(order)), a))
    else:
        wanted = [str(a) for a in algorithms]
    groups: dict[str, list[str]] = {}  # "three runs (seeds 0, 1 and 2)" -> algorithm names
    for algorithm in wanted:
        runs = site.catalog.seeds_of(algorithm)
        if not runs:
            continue
        words = f"{_count_word(len(runs))} run{'s' if len(runs) != 1 else ''} ({seeds_list(runs)})"
        groups.setdefault(words, []).append(site.algorithm_name(algorithm))
    parts = [f"{words} each of {and_names(names)}" if len(names) > 1 else f"{words} of {names[0]}"
             for words, names in groups.items()]
    text = f"This build has {and_names(parts)}." if parts else ""
    single = [n for words, names in groups.items() if words.startswith("one ") for n in names]
    if single:
        text += f" What it shows of {and_names(single)} rests on one seed."
    # an algorithm without a run is left out: a page that needs its runs says so once, in its note
    # (front matter needs_runs, site/run_needs.py), never in a sentence here
    return text


def _count_word(n: int) -> str:
    return {1: "one", 2: "two", 3: "three", 4: "four", 5: "five"}.get(n, fmt_num(n))
