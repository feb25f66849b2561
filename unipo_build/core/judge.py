"""How a difference between two variants is judged: one procedure for every verdict of the course.

The unit is the training run. Each variant (an algorithm, a spec, a sampler setting) has one value per
seed: a held-out gain, the mean entropy of a run, ... Two variants are compared across their seeds:

- Test: an exact two-sided permutation test of the difference of the means. Under "no difference" the
  labels of the runs are exchangeable, so every way of splitting the n_a + n_b values into groups of
  n_a and n_b is as likely; the p-value is the share of splits whose difference of means is at least as
  far from zero as the observed one. It assumes nothing about the values' distribution, and it is
  exact for any number of seeds.
- The smallest p a design can reach is 2 / C(n_a + n_b, n_a) with as many runs on each side (the two splits
  that put every run of one variant beyond every run of the other, as far from zero as each other): 0.10
  with three seeds against three, 0.0079 with five against five. With unequal sides the two extreme splits'
  differences differ, so the more extreme one can stand alone: 1 / C(n_a + n_b, n_a). Below ALPHA's reach,
  no outcome can be "clear": the verdict says how many seeds there are instead.
- Effect: the difference of the means, with the interval of shifts the same test does not reject at
  ALPHA (the test inverted: a shift d is inside when moving one variant's values by d leaves p above
  ALPHA). Where no shift can be rejected the interval is unbounded, and it is not printed.
- Words, by thresholds stated once (ALPHA two-sided, SUGGESTIVE): ``clear`` (p <= ALPHA), ``suggestive``
  (p <= SUGGESTIVE), ``not separable with N seeds`` (the design cannot reach ALPHA and the data did not
  reach SUGGESTIVE), ``not separated`` (within the noise). Only ``clear`` lets a page state a direction
  as a finding.

Per seed, the paired held-out difference of a run (start to end, or two runs of one seed on the same
problems) keeps its own interval (``core.heldout``); this module judges across seeds.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Literal, Sequence

import numpy as np

from unipo_build.core.numbers import count_word, fmt_fixed, fmt_num, plain_num

#: The two-sided level of a clear verdict.
ALPHA = 0.05
#: The two-sided level below which a difference is called suggestive, not clear.
SUGGESTIVE = 0.10
#: Exact enumeration up to this many splits (C(16, 8) = 12,870; five seeds against five: 252).
MAX_SPLITS = 1_000_000

Word = Literal["clear", "suggestive", "not separable", "not separated", "unmeasurable"]


def min_p(n_a: int, n_b: int) -> float:
    """The smallest two-sided p the exact permutation test can give with n_a runs against n_b: the extreme split
    and its mirror image with equal sides; with unequal sides the extreme split alone (five runs at 0 against
    three at 1: the mirror split, three of the zeros against the rest, differs by 0.6, not 1, so p = 1/56)."""
    if n_a < 1 or n_b < 1:
        return 1.0
    return min(1.0, (2.0 if n_a == n_b else 1.0) / math.comb(n_a + n_b, n_a))


def seeds_needed() -> int:
    """The fewest seeds per variant (the same on both sides) with which a clear verdict is possible."""
    n = 1
    while min_p(n, n) > ALPHA:
        n += 1
    return n


def permutation_p(a: Sequence[float], b: Sequence[float]) -> float:
    """Exact two-sided permutation p of mean(a) - mean(b) (every split of the pooled values)."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    n_a, n = len(a), len(a) + len(b)
    if len(a) == 0 or len(b) == 0:
        return 1.0
    if math.comb(n, n_a) > MAX_SPLITS:
        raise ValueError(f"{n_a} runs against {len(b)}: more than {fmt_num(MAX_SPLITS)} splits to enumerate")
    pooled = np.concatenate([a, b])
    total = pooled.sum()
    observed = abs(a.mean() - b.mean())
    tol = 1e-12 * max(1.0, float(np.abs(pooled).max()))
    hits = count = 0
    for idx in itertools.combinations(range(n), n_a):
        s = pooled[list(idx)].sum()
        diff = s / n_a - (total - s) / (n - n_a)
        hits += abs(diff) >= observed - tol
        count += 1
    return hits / count


def _shift_interval(a: np.ndarray, b: np.ndarray) -> tuple[float | None, float | None]:
    """The shifts d of mean(a) - mean(b) the test does not reject at ALPHA (a - d against b): the
    bounds found by bisection between the observed effect and a shift far beyond the data's range."""
    effect = float(a.mean() - b.mean())
    spread = float(max(np.ptp(np.concatenate([a, b])), abs(effect), 1e-9))
    far = 10 * spread

    def kept(d: float) -> bool:
        return permutation_p(a - d, b) > ALPHA

    bounds = []
    for direction in (-1, 1):
        outer = effect + direction * far
        if kept(outer):
            bounds.append(None)
            continue
        inner = effect
        for _ in range(60):
            mid = (inner + outer) / 2
            if kept(mid):
                inner = mid
            else:
                outer = mid
        bounds.append(inner)
    return bounds[0], bounds[1]


@dataclass(frozen=True)
class Judgement:
    """Two variants' values across seeds, judged by the procedure of this module."""

    word: Word
    sign: int  # +1: a above b, -1: below, 0: equal means
    effect: float  # mean(a) - mean(b)
    p: float | None  # the exact two-sided permutation p (None: unmeasurable)
    low: float | None  # the effect's interval at ALPHA (None: unbounded)
    high: float | None
    n_a: int
    n_b: int
    reason: str = ""  # unmeasurable: why

    @property
    def clear(self) -> bool:
        return self.word == "clear"

    @property
    def seeds(self) -> str:
        """The runs of each side in words: "five seeds each", "three seeds against one"."""
        if self.n_a == self.n_b:
            return f"{count_word(self.n_a)} seed{'s' if self.n_a != 1 else ''} each"
        return f"{count_word(self.n_a)} seed{'s' if self.n_a != 1 else ''} against {count_word(self.n_b)}"

    def words(self) -> str:
        """The verdict in a reader's words, with its basis: what every page prints for it."""
        if self.word == "unmeasurable":
            return self.reason
        if self.word == "not separable":
            n = min(self.n_a, self.n_b)
            return (f"not separable with {count_word(n)} seed{'s' if n != 1 else ''}"
                    f" (the test cannot reach p \u2264 {plain_num(ALPHA)} with {self.seeds})")
        p = p_text(self.p)
        if self.word == "not separated":
            return f"not separated ({self.seeds}, two-sided permutation p = {p})"
        return f"{self.word} ({self.seeds}, two-sided permutation p = {p})"

    def short(self) -> str:
        """The verdict in a few words, for a table cell or a list: "clear, p = 0.008", "suggestive, p = 0.10",
        "not separable with one seed", "not separated, p = 0.42" (the seeds are said elsewhere)."""
        if self.word == "unmeasurable":
            return "not measurable"
        if self.word == "not separable":
            n = min(self.n_a, self.n_b)
            return f"not separable with {count_word(n)} seed{'s' if n != 1 else ''}"
        return f"{self.word}, p = {p_text(self.p)}"


def p_text(p: float | None) -> str:
    if p is None:
        return "n/a"
    return fmt_fixed(p, 3) if p < 0.1 else fmt_fixed(p, 2)


def judge(a: Sequence[float], b: Sequence[float], *, missing: str = "") -> Judgement:
    """Judge variant a against variant b from one value per run (seed) of each.

    ``missing``: what to say when a side has no run (e.g. "the build has no run of CISPO: data/suite.yaml's
    entry cispo-s1 makes one")."""
    a_arr, b_arr = np.asarray(list(a), dtype=float), np.asarray(list(b), dtype=float)
    n_a, n_b = len(a_arr), len(b_arr)
    if n_a == 0 or n_b == 0 or not (np.all(np.isfinite(a_arr)) and np.all(np.isfinite(b_arr))):
        reason = missing or ("a value is not finite" if n_a and n_b else "a side has no run")
        return Judgement("unmeasurable", 0, math.nan, None, None, None, n_a, n_b, reason)
    effect = float(a_arr.mean() - b_arr.mean())
    sign = (effect > 0) - (effect < 0)
    p = permutation_p(a_arr, b_arr)
    low, high = _shift_interval(a_arr, b_arr) if min_p(n_a, n_b) <= ALPHA else (None, None)
    if p <= ALPHA:
        word: Word = "clear"
    elif p <= SUGGESTIVE:
        word = "suggestive"
    elif min_p(n_a, n_b) > ALPHA:
        word = "not separable"
    else:
        word = "not separated"
    return Judgement(word, sign, effect, p, low, high, n_a, n_b)
