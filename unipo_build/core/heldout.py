"""Did a run learn? A paired comparison of two held-out evaluations of the same problems.

Training reward moves with the prompts a rollout happens to draw, so claims of learning rest on a
fixed held-out set evaluated at the start and the end. Each evaluation logs every problem's result
(EvalRecord.correct_greedy / correct_sampled: one character per problem), so the two can be compared
problem by problem: of the n problems, ``gained`` were wrong at the start and right at the end,
``lost`` the reverse. The change in accuracy is (gained - lost) / n, and because each problem is its
own control the interval is much tighter than for two independent accuracies.

- Interval, paired, at least ``MIN_PROBLEMS`` (30) problems: the mean of the per-problem differences
  d_i in {-1, 0, 1} with its t-free normal 95% interval, mean +- 1.96 * sd(d) / sqrt(n) (sd with
  n - 1), cut to [-1, 1]. With n = 1,500 the normal approximation is accurate to the reported precision.
- Interval, paired, fewer problems: Newcombe's hybrid score interval for paired proportions (Newcombe
  1998, Statistics in Medicine 17:2635, method 10): the two accuracies' Wilson intervals combined with
  the correlation of the pairs. A normal interval runs past what is possible there (1 of 4 problems
  right, then 4 of 4: +75 points, +-49); Wilson-type bounds stay within [-1, 1] and within what each
  accuracy allows.
- Interval, unpaired (the log has no per-problem results, whatever the size): Newcombe's hybrid
  score interval for two independent proportions (Newcombe 1998, Statistics in Medicine 17:873,
  method 10); wider than the paired one, and ``paired`` is False.
- Test: McNemar's exact test (a two-sided binomial test of ``gained`` against ``lost`` at p = 1/2),
  which uses only the discordant problems.
- Under ``MIN_PROBLEMS`` problems a change is not judged (``HeldOutChange.too_few``): its interval is
  given with the words ``TOO_FEW`` instead of a verdict.

Two evaluations are comparable problem by problem when they name the same problems
(EvalRecord.problems "eval rows 1-N"): rows 1..min(N, M) are then the same problems in the same order.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Iterable, Literal

from unipo_build.core.schema import EvalRecord

Z95 = 1.959963984540054  # the standard normal's 97.5% quantile
Mode = Literal["greedy", "sampled"]
ROWS = re.compile(r"^eval rows 1-(\d+)$")
#: Below this many problems a held-out change is not judged: its interval is given with ``TOO_FEW`` instead of a
#: verdict, and a paired one is Newcombe's, not the normal interval.
MIN_PROBLEMS = 30
TOO_FEW = "too few problems to judge"


@dataclass(frozen=True)
class HeldOutChange:
    """start -> end accuracy on the same held-out problems, with a 95% interval of the change."""

    mode: str
    start: float
    end: float
    n: int
    paired: bool
    low: float
    high: float
    gained: int | None = None  # wrong at the start, right at the end (paired only)
    lost: int | None = None  # right at the start, wrong at the end (paired only)
    p_value: float | None = None  # McNemar's exact test (paired only)
    #: how the interval was computed: "normal" (paired, n >= MIN_PROBLEMS) or "newcombe" (hybrid score)
    method: str = "normal"

    @property
    def change(self) -> float:
        return self.end - self.start

    @property
    def too_few(self) -> bool:
        """Fewer than ``MIN_PROBLEMS`` problems: the interval is given, no verdict (``TOO_FEW``)."""
        return self.n < MIN_PROBLEMS

    @property
    def direction(self) -> str:
        """'up' or 'down' when the 95% interval excludes zero, else 'flat'."""
        if self.low > 0:
            return "up"
        if self.high < 0:
            return "down"
        return "flat"

    def as_dict(self) -> dict:
        return {"mode": self.mode, "start": self.start, "end": self.end, "change": self.change, "n": self.n,
                "paired": self.paired, "ci95": [self.low, self.high], "gained": self.gained, "lost": self.lost,
                "p_value": self.p_value, "direction": self.direction, "interval": self.method,
                "too_few": self.too_few}


def mcnemar_exact(gained: int, lost: int) -> float:
    """Two-sided exact McNemar p-value: P(a Binomial(gained + lost, 1/2) is at least as extreme)."""
    k, m = min(gained, lost), gained + lost
    if m == 0:
        return 1.0
    tail = sum(math.comb(m, i) for i in range(k + 1)) / 2.0**m
    return min(1.0, 2.0 * tail)


def wilson(p: float, n: int, z: float = Z95) -> tuple[float, float]:
    """Wilson's score interval of a proportion ``p`` observed on ``n`` trials (no continuity correction)."""
    if n <= 0:
        return 0.0, 1.0
    q = z * z / n
    centre = (p + q / 2) / (1 + q)
    half = z * math.sqrt(max(p * (1 - p), 0.0) / n + q / (4 * n)) / (1 + q)
    return max(0.0, centre - half), min(1.0, centre + half)


def newcombe_unpaired(start: float, n_start: int, end: float, n_end: int, z: float = Z95) -> tuple[float, float]:
    """Newcombe's hybrid score interval of ``end - start`` for two independent proportions (1998, method 10):
    each side of the difference from the Wilson bounds of the two accuracies, squared and added."""
    l1, u1 = wilson(end, n_end, z)
    l2, u2 = wilson(start, n_start, z)
    change = end - start
    low = change - math.sqrt((end - l1) ** 2 + (u2 - start) ** 2)
    high = change + math.sqrt((u1 - end) ** 2 + (start - l2) ** 2)
    return max(-1.0, low), min(1.0, high)


def newcombe_paired(both: int, gained: int, lost: int, neither: int, z: float = Z95) -> tuple[float, float]:
    """Newcombe's hybrid score interval of the paired change (gained - lost) / n (1998, method 10, as in Altman et
    al., Statistics with Confidence): the Wilson bounds of the end accuracy ((both + gained) / n) and the start
    accuracy ((both + lost) / n), combined with phi, the correlation of the pairs (its numerator
    both * neither - gained * lost taken 0 between 0 and n / 2, and less n / 2 above it)."""
    n = both + gained + lost + neither
    if n == 0:
        raise ValueError("a paired interval needs at least one problem")
    end, start = (both + gained) / n, (both + lost) / n
    l1, u1 = wilson(end, n, z)
    l2, u2 = wilson(start, n, z)
    marginals = (both + gained) * (lost + neither) * (both + lost) * (gained + neither)
    phi = 0.0
    if marginals > 0:
        a = both * neither - gained * lost
        phi = (a - n / 2) / math.sqrt(marginals) if a > n / 2 else (a / math.sqrt(marginals) if a < 0 else 0.0)
    change = end - start
    low = change - math.sqrt(max(0.0, (end - l1) ** 2 - 2 * phi * (end - l1) * (u2 - start) + (u2 - start) ** 2))
    high = change + math.sqrt(max(0.0, (u1 - end) ** 2 - 2 * phi * (u1 - end) * (start - l2) + (start - l2) ** 2))
    return max(-1.0, low), min(1.0, high)


def paired_change(start_bits: str, end_bits: str, mode: str = "greedy") -> HeldOutChange:
    """Compare two equal-length 0/1 strings of per-problem results (same problems, same order): the normal
    interval of the per-problem differences from ``MIN_PROBLEMS`` problems on, Newcombe's paired interval
    below."""
    if len(start_bits) != len(end_bits) or not start_bits:
        raise ValueError(f"paired comparison needs two non-empty results of equal length "
                         f"(got {len(start_bits)} and {len(end_bits)})")
    n = len(start_bits)
    gained = sum(1 for a, b in zip(start_bits, end_bits) if a == "0" and b == "1")
    lost = sum(1 for a, b in zip(start_bits, end_bits) if a == "1" and b == "0")
    start = start_bits.count("1") / n
    end = end_bits.count("1") / n
    mean = (gained - lost) / n
    p_value = mcnemar_exact(gained, lost)
    if n < MIN_PROBLEMS:
        both = sum(1 for a, b in zip(start_bits, end_bits) if a == "1" and b == "1")
        low, high = newcombe_paired(both, gained, lost, n - both - gained - lost)
        return HeldOutChange(mode, start, end, n, True, low, high, gained, lost, p_value, "newcombe")
    # sample variance of d_i in {-1, 0, +1}: (sum d^2 - n mean^2) / (n - 1)
    var = ((gained + lost) - n * mean * mean) / (n - 1)
    half = Z95 * math.sqrt(max(var, 0.0) / n)
    return HeldOutChange(mode, start, end, n, True, max(-1.0, mean - half), min(1.0, mean + half), gained, lost,
                         p_value)


def unpaired_change(start: float, n_start: int, end: float, n_end: int, mode: str = "greedy") -> HeldOutChange:
    """Two independent binomial accuracies (no per-problem results): Newcombe's hybrid score 95% interval."""
    low, high = newcombe_unpaired(start, n_start, end, n_end)
    return HeldOutChange(mode, start, end, min(n_start, n_end), False, low, high, method="newcombe")


def problem_count(record: EvalRecord) -> int | None:
    """N for an evaluation of "eval rows 1-N"; None when it does not say which problems it used."""
    m = ROWS.match(record.problems or "")
    return int(m.group(1)) if m else None


def compare(start: EvalRecord, end: EvalRecord, mode: Mode = "greedy", rows: int | None = None) -> HeldOutChange | None:
    """The change from `start` to `end` in `mode` accuracy; paired when both logged their problems
    (on their common first rows, and on at most ``rows`` of them when given, so that changes of
    several runs can be read on the same problems)."""
    a, b = getattr(start, f"accuracy_{mode}"), getattr(end, f"accuracy_{mode}")
    if a is None or b is None:
        return None
    bits_a, bits_b = getattr(start, f"correct_{mode}"), getattr(end, f"correct_{mode}")
    na, nb = problem_count(start), problem_count(end)
    if bits_a and bits_b and na is not None and nb is not None:
        n = min(na, nb) if rows is None else min(na, nb, rows)
        return paired_change(bits_a[:n], bits_b[:n], mode)
    return unpaired_change(a, start.n, b, end.n, mode)


def start_and_end(evals: Iterable[EvalRecord]) -> tuple[EvalRecord | None, EvalRecord | None]:
    """The run's first 'start' evaluation and its last 'end' one."""
    evals = list(evals)
    start = next((e for e in evals if e.phase == "start"), None)
    end = next((e for e in reversed(evals) if e.phase == "end"), None)
    return start, end


def run_change(evals: Iterable[EvalRecord], mode: Mode = "greedy") -> HeldOutChange | None:
    """A run's held-out change from its start evaluation to its end evaluation."""
    start, end = start_and_end(evals)
    if start is None or end is None:
        return None
    return compare(start, end, mode)


@dataclass(frozen=True)
class EvalPoint:
    """One evaluation's accuracy, measured on ``n`` problems."""

    step: int
    phase: str
    accuracy: float
    n: int
    #: True when every point of the curve is measured on the same problems (rows 1..n).
    common: bool


def accuracy_curve(evals: Iterable[EvalRecord], mode: Mode = "greedy") -> list[EvalPoint]:
    """``mode`` accuracy at every evaluation, on the problems all of them share.

    Periodic evaluations may use a subset of the held-out set ("eval rows 1-500") while the start
    and end ones use all of it ("eval rows 1-1500"). When every evaluation logged its per-problem
    results, each point is the accuracy on rows 1..n with n the smallest N of them, so the points
    are comparable with one another (``common``). Otherwise each point is the evaluation's own
    accuracy, comparable only where the evaluations name the same problems.
    """
    evals = [e for e in evals if getattr(e, f"accuracy_{mode}") is not None]
    counts = [problem_count(e) for e in evals]
    bits = [getattr(e, f"correct_{mode}") for e in evals]
    if evals and all(c is not None for c in counts) and all(bits):
        n = min(counts)
        return [EvalPoint(e.step, e.phase, b[:n].count("1") / n, n, True) for e, b in zip(evals, bits)]
    same = len({(e.problems, e.n) for e in evals}) == 1 and evals[0].problems is not None if evals else False
    return [EvalPoint(e.step, e.phase, getattr(e, f"accuracy_{mode}"), e.n, same) for e in evals]
