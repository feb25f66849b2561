"""Measured effects: a number per run, the runs of an algorithm over seeds, and a verdict on a
predicted direction that a page turns into words (``claims``).

A page that says what a run shows ("clip-higher keeps entropy up", "wrong answers grow longer")
must say it only when the logs show it. Every such sentence rests on a :class:`Verdict`:

- ``shown``: the effect has the predicted sign and is clear of the noise;
- ``contradicted``: it has the opposite sign and is clear of the noise;
- ``unclear``: it is within the noise (or the seeds disagree);
- ``unmeasurable``: the build lacks the runs or the metric, or the quantity is undefined here.

What "clear of the noise" means is one procedure for every comparison (``core.judge``, the reference
page "How a difference is judged"):

- two variants (algorithms, settings), one value per seed each: an exact two-sided permutation test of
  the difference of the means, clear at p <= 0.05 (``judge.ALPHA``); suggestive up to 0.10; with too few
  seeds to reach 0.05 at all (three against three can reach 0.10 at best, one run against one nothing)
  the verdict says "not separable with N seeds", never clear. The unit is the training run: a single
  run's own noise does not stand in for seeds;
- a change within each run (start to end): every seed's change exceeds its two standard errors in
  the same direction (the per-seed part of the procedure).

Pages word a verdict through :func:`finding` (what a shown, a contradicted and an unclear result say, then
the judgement) and :func:`judged` (the judgement alone: the difference, its interval where the test bounds
it, and ``Judgement.words()``), so every sentence of the course says a verdict the same way.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Literal, Sequence

import numpy as np

from unipo_build.core.judge import ALPHA, Judgement, judge
from unipo_build.core.runs import Run
from unipo_build.core.schema import metric_info
from unipo_build.core.numbers import fmt_pct, plain_num
from unipo_build.site.facts.series import logged_values, mean_se

Status = Literal["shown", "contradicted", "unclear", "unmeasurable"]
#: Share of a run's points averaged at its start and at its end.
EDGE = 0.1


class Unmeasurable(ValueError):
    """A quantity that cannot be computed on a run; the message says why, in a reader's words."""


@dataclass(frozen=True)
class RunValue:
    """A quantity measured on one run, with its standard error within the run (None: unknown)."""

    run: Run
    value: float
    se: float | None = None
    start: float | None = None  # for a change: the value at the start and at the end
    end: float | None = None

    @property
    def seed(self) -> int | None:
        return self.run.header.seed


@dataclass(frozen=True)
class Side:
    """One algorithm's runs (one per seed) and a quantity measured on each."""

    name: str
    values: tuple[RunValue, ...]
    reason: str = ""  # why nothing could be measured, when ``values`` is empty

    @property
    def n(self) -> int:
        return len(self.values)

    @property
    def mean(self) -> float:
        return float(np.mean([v.value for v in self.values]))

    @property
    def low(self) -> float:
        return min(v.value for v in self.values)

    @property
    def high(self) -> float:
        return max(v.value for v in self.values)

    @property
    def se(self) -> float | None:
        """Standard error of the side's mean: over seeds when there are several, else the run's own."""
        if self.n >= 2:
            return float(np.std([v.value for v in self.values], ddof=1) / math.sqrt(self.n))
        return self.values[0].se if self.values else None


@dataclass(frozen=True)
class Verdict:
    status: Status
    basis: str  # how the verdict was reached, in words (core.judge: "clear (five seeds each, ... p = 0.008)")
    reason: str = ""  # for unmeasurable: why; for unclear: what kept it unclear
    judgement: Judgement | None = None  # two variants compared across seeds: the effect, its interval, p

#: What kept a comparison from being clear, by the judgement's word.
UNCLEAR_REASONS = {
    "suggestive": "the seeds point one way, but not clearly",
    "not separable": "there are too few seeds to tell them apart",
    "not separated": "the seeds overlap",
}


def seeds_words(n: int) -> str:
    from unipo_build.site.facts.spec_facts import count_word

    return f"{count_word(n)} seed" + ("" if n == 1 else "s")


def compare(a: Side, b: Side, predicted: int) -> Verdict:
    """Is ``a`` above ``b`` (``predicted`` +1) or below it (-1), clear of the noise? Judged across seeds
    by the one procedure (``core.judge``); only a clear judgement shows or contradicts a direction."""
    for side in (a, b):
        if side.n == 0:
            return Verdict("unmeasurable", "", side.reason or f"the build has no run of {side.name}")
    j = judge([v.value for v in a.values], [v.value for v in b.values])
    if j.word == "unmeasurable":
        return Verdict("unmeasurable", "", f"a value of {a.name} or {b.name} is not finite", judgement=j)
    if j.clear:
        return Verdict("shown" if j.sign == predicted else "contradicted", j.words(), judgement=j)
    return Verdict("unclear", j.words(), UNCLEAR_REASONS[j.word], judgement=j)


#: How the effect's interval is named: the shifts the test does not reject at ALPHA.
INTERVAL = f"{plain_num(100 * (1 - ALPHA))}% interval"


def effect_text(j: Judgement, fmt: Callable[[float], str], unit: str = "") -> str:
    """The judgement's effect (a's mean minus b's) in ``fmt`` and ``unit``, with its interval when the test bounds
    it: '−2.6 points (95% interval −4.0 to −1.1 points)', or '−2.6 points'."""
    text = f"{fmt(j.effect)}{unit}"
    if j.low is not None and j.high is not None:
        text += f" ({INTERVAL} {fmt(j.low)} to {fmt(j.high)}{unit})"
    return text


def judged(v: Verdict, fmt: Callable[[float], str] | None = None, what: str = "the difference",
           unit: str = "") -> str:
    """A verdict's basis in a reader's words, the same on every page. Across seeds (``v.judgement``): with
    ``fmt``, 'the difference, −2.6 points, is suggestive (three seeds each, two-sided permutation
    p = 0.10)', the interval after the effect when it is bounded; without, the judgement's words. A change
    within runs (:func:`direction`): its basis. Unmeasurable: why."""
    j = v.judgement
    if j is None:
        return v.basis or v.reason
    if fmt is None or j.word == "unmeasurable":
        return j.words()
    return f"{what}, {effect_text(j, fmt, unit)}, is {j.words()}"


def finding(v: Verdict, fmt: Callable[[float], str] | None, shown: str, contradicted: str, unclear: str,
            unmeasurable: str = "", what: str = "the difference", sep: str = ": ", unit: str = "") -> str:
    """The one frame of a verdict's words: what the page says for the verdict's status (only a clear
    judgement states a direction: ``shown`` or ``contradicted``; ``unclear`` must not), then
    :func:`judged`: 'CISPO gained less than DAPO: the difference, −10.0 points (95% interval ...), is
    clear (five seeds each, two-sided permutation p = 0.008)'; ``sep`` joins the two ('; ' after a list of
    numbers)."""
    if v.status == "unmeasurable":
        return f"{unmeasurable or 'this cannot be measured'}: {v.reason}"
    head = {"shown": shown, "contradicted": contradicted, "unclear": unclear}[v.status]
    return f"{head}{sep}{judged(v, fmt, what, unit)}"


def direction(side: Side, predicted: int) -> Verdict:
    """Does each run's change (its value) have the predicted sign, beyond two standard errors?"""
    if side.n == 0:
        return Verdict("unmeasurable", "", side.reason or f"the build has no run of {side.name}")
    basis = seeds_words(side.n) + (", its change against two standard errors" if side.n == 1 else
                                   ", each seed's change against two standard errors")
    signs = []
    for v in side.values:
        if v.se is None:
            return Verdict("unclear", basis, "the noise of the run cannot be estimated from its log")
        signs.append(0 if abs(v.value) <= 2 * v.se else (1 if v.value > 0 else -1))
    if all(s == predicted for s in signs):
        return Verdict("shown", basis)
    if all(s == -predicted for s in signs):
        return Verdict("contradicted", basis)
    if any(s == predicted for s in signs) and any(s == -predicted for s in signs):
        return Verdict("unclear", basis, "the seeds disagree")
    return Verdict("unclear", basis, "the change is within two standard errors" + ("" if side.n == 1 else
                                                                                       " in some seeds"))


# ---------------------------------------------------------------------------
# Quantities of one run
# ---------------------------------------------------------------------------

def _edges(values: np.ndarray) -> tuple[float, float, float, float]:
    """(first mean, its SE, last mean, its SE) over the first and last tenth of the points."""
    k = max(1, int(round(len(values) * EDGE)))
    first, last = values[:k], values[-k:]
    se = (lambda x: float(np.std(x, ddof=1) / math.sqrt(len(x))) if len(x) >= 2 else 0.0)
    return float(np.mean(first)), se(first), float(np.mean(last)), se(last)


def _need(run: Run, metric: str, values: np.ndarray) -> None:
    label = metric_info(metric).label.lower()
    if len(values) == 0:
        raise Unmeasurable(f"the {run.id} run does not log {label} ({metric})")
    if len(values) < 2:
        raise Unmeasurable(f"the {run.id} run logs {label} ({metric}) only once, too few to measure a change")


def run_mean(*metrics: str, later_updates: bool = False) -> Callable[[Run], RunValue]:
    """The mean over the whole run of a metric, or of the sum of several (``later_updates``: leaving
    out the first update of each rollout, whose ratios are all 1), with the SE of that mean."""
    def measure(run: Run) -> RunValue:
        columns = [logged_values(run, m, later_updates) for m in metrics]
        for m, c in zip(metrics, columns):
            _need(run, m, c)
        n = min(len(c) for c in columns)
        values = np.sum([c[:n] for c in columns], axis=0)
        return RunValue(run, *mean_se(values))
    return measure


def edge_change(metric: str, relative: bool = False) -> Callable[[Run], RunValue]:
    """The change of a metric from the first tenth of the run to the last (``relative``: as a
    fraction of the first), with its SE."""
    def measure(run: Run) -> RunValue:
        values = logged_values(run, metric)
        _need(run, metric, values)
        first, se_first, last, se_last = _edges(values)
        if not relative:
            return RunValue(run, last - first, math.hypot(se_first, se_last), first, last)
        if first <= 0:
            raise Unmeasurable(f"the {run.id} run's {metric_info(metric).label.lower()} starts at zero")
        ratio = last / first
        se = math.hypot(se_first * last / first ** 2, se_last / first)
        return RunValue(run, ratio - 1.0, se, first, last)
    return measure


def gap_change(longer: str, shorter: str) -> Callable[[Run], RunValue]:
    """The change, first tenth to last, of the gap between two metrics (e.g. wrong minus right
    answers' lengths), on the rollouts that log both."""
    def measure(run: Run) -> RunValue:
        table = run.reader.table
        a, b = table.column(longer)[table.first_in_rollout], table.column(shorter)[table.first_in_rollout]
        both = ~np.isnan(a) & ~np.isnan(b)
        gap = (a - b)[both]
        if len(gap) < 2:
            raise Unmeasurable(f"the {run.id} run does not log both {longer} and {shorter}")
        first, se_first, last, se_last = _edges(gap)
        return RunValue(run, last - first, math.hypot(se_first, se_last), first, last)
    return measure


def measure_side(name: str, runs: Sequence[Run], measure: Callable[[Run], RunValue]) -> Side:
    """One side of a claim: the quantity measured on each finished run; the reasons for those left out."""
    values, reasons = [], []
    for run in runs:
        if run.header.finished_at is None:  # a run still training: its last tenth is not the end
            reasons.append(f"the {run.id} run is still training (its log has no finish time)")
            continue
        try:
            values.append(measure(run))
        except Unmeasurable as why:
            reasons.append(str(why))
    return Side(name, tuple(values), "; ".join(dict.fromkeys(reasons)))


# ---------------------------------------------------------------------------
# Numbers in words
# ---------------------------------------------------------------------------

def values_text(side: Side, fmt: Callable[[float], str], range_fmt: Callable[[float], str] | None = None) -> str:
    """One value, or the mean over seeds and their range (``range_fmt``: how the range's ends read)."""
    if side.n == 1:
        return fmt(side.values[0].value)
    ends = range_fmt or fmt
    return f"{fmt(side.mean)} (seeds: {ends(side.low)} to {ends(side.high)})"


def relative_change_words(value: float) -> str:
    """'fell 30%', 'rose 5%', 'stayed level' (a signed relative change)."""
    if abs(value) < 0.005:
        return "stayed level"
    return f"{'rose' if value > 0 else 'fell'} {fmt_pct(abs(value), 0)}"
