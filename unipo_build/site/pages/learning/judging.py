"""How a difference is judged: the numbers of the reference page (docs/reference/judging.md), every one computed
from ``core.judge``, and the per-seed paired words the chapters give beside a verdict.

    {{ judge_level() }}                 the two-sided level of a clear verdict ("0.05")
    {{ judge_level("suggestive") }}     the level up to which a difference is called suggestive ("0.10")
    {{ judge_level("interval") }}       the level of the effect's interval ("95%")
    {{ judge_level("heldout") }}        the level of a run's paired held-out interval ("95%", ``core.heldout``)
    {{ judge_seeds_needed() }}          the fewest seeds per variant with which a clear verdict is possible ("four")
    {{ judge_min_p(3, 3) }}             the smallest two-sided p of a design ("0.10")
    {{ judge_designs_table() }}         one row per design (1 v 1 to 5 v 5): its splits, its smallest p and the
                                        best verdict it can give (HTML)
    {{ judge_example("cispo", "dapo") }}
                                        the procedure worked through on two algorithms' greedy held-out gains in
                                        the build: each seed's value, the splits, p, the effect and the words

Per seed, two runs of one seed are compared problem by problem at the end of training (:func:`paired_words`,
``core.heldout.paired_change``): the paired difference with its interval, the procedure's per-seed part. The
verdict across seeds is ``effects.compare`` (``core.judge``), worded by ``effects.finding``.
"""

from __future__ import annotations

import math
from typing import Sequence

from unipo_build.core import judge as J
from unipo_build.core.heldout import Z95, HeldOutChange, paired_change, run_change, start_and_end
from unipo_build.core.numbers import fmt_fixed, fmt_num, fmt_pct, fmt_signed_points, plain_num
from unipo_build.core.runs import Run
from unipo_build.site.context import AuthorError, Site, macro
from unipo_build.site.facts.seeds import finished_runs, seed_text
from unipo_build.site.facts.spec_facts import and_names, count_word
from unipo_build.site.fmt import escape_text, table
from unipo_build.site.pages.learning.effects import RunValue, Side, compare, judged

#: The designs the reference page lists: seeds of each variant, the same on both sides.
DESIGNS = (1, 2, 3, 4, 5)


# ---------------------------------------------------------------------------
# Per seed: two runs of one seed, paired problem by problem
# ---------------------------------------------------------------------------

def seed_pairs(a: Sequence[Run], b: Sequence[Run]) -> list[tuple[Run, Run]]:
    """The runs of two variants that share a seed, in seed order."""
    by_seed = {r.header.seed: r for r in b if r.header.seed is not None}
    return [(r, by_seed[r.header.seed]) for r in a if r.header.seed in by_seed]


def end_gaps(a: Sequence[Run], b: Sequence[Run], mode: str) -> list[tuple[Run, HeldOutChange]]:
    """For each seed both have: the first run's end accuracy minus the second's, on the same problems."""
    out = []
    for ra, rb in seed_pairs(a, b):
        ea, eb = start_and_end(ra.evals)[1], start_and_end(rb.evals)[1]
        if ea is None or eb is None:
            continue
        bits_a, bits_b = getattr(ea, f"correct_{mode}"), getattr(eb, f"correct_{mode}")
        if not bits_a or not bits_b or ea.problems != eb.problems:
            continue
        out.append((ra, paired_change(bits_b, bits_a, mode)))
    return out


def interval_words(c: HeldOutChange) -> str:
    return f"{fmt_signed_points(c.low)} to {fmt_signed_points(c.high)}"


def paired_words(a: Sequence[Run], b: Sequence[Run], mode: str, a_name: str, b_name: str) -> str:
    """'Paired problem by problem, each seed's CISPO run ended −1.4 (−3.4 to +0.6, seed 0), ... points from the DAPO
    run of the same seed, in greedy accuracy (95% intervals): one of the three intervals excludes zero.' ('' when no
    seed has both runs with per-problem results)."""
    gaps = end_gaps(a, b, mode)
    if not gaps:
        return ""
    n = len(gaps)
    level = interval_level(Z95)
    clear = sum(1 for _, c in gaps if c.direction != "flat")
    if n == 1:
        (r, c), = gaps
        tail = ("its interval excludes zero" if clear else
                "its interval includes zero, so the two runs are not told apart on their own")
        return (f"Paired problem by problem, the {a_name} run of {seed_text(r)} ended {fmt_signed_points(c.change)} "
                f"({interval_words(c)}) points from the {b_name} run of the same seed, in {mode} accuracy ({level} "
                f"interval): {tail}.")
    each = and_names([f"{fmt_signed_points(c.change)} ({interval_words(c)}, {seed_text(r)})" for r, c in gaps])
    if clear == 0:
        tail = "no seed's interval excludes zero, so no single pair of runs is told apart on its own"
    elif clear == n:
        tail = "every seed's interval excludes zero"
    else:
        tail = f"{count_word(clear)} of the {count_word(n)} intervals exclude{'s' if clear == 1 else ''} zero"
    if len({c.direction for _, c in gaps if c.direction != "flat"}) > 1:
        tail += ", on both sides of it: the seeds disagree on which ended higher"
    return (f"Paired problem by problem, each seed's {a_name} run ended {each} points from the {b_name} run of the "
            f"same seed, in {mode} accuracy ({level} intervals): {tail}.")


# ---------------------------------------------------------------------------
# The reference page's numbers
# ---------------------------------------------------------------------------

def interval_level(z: float) -> str:
    """The coverage of a two-sided normal interval of half-width z standard errors: '95%'."""
    return fmt_pct(math.erf(z / math.sqrt(2)), 0)


@macro(name="judge_level", with_site=False)
def level_text(which: str = "clear") -> str:
    """A level of the procedure: clear (the two-sided level), suggestive, interval (the effect's), heldout."""
    if which == "clear":
        return fmt_fixed(J.ALPHA, 2)
    if which == "suggestive":
        return fmt_fixed(J.SUGGESTIVE, 2)
    if which == "interval":
        return f"{plain_num(100 * (1 - J.ALPHA))}%"
    if which == "heldout":
        return interval_level(Z95)
    raise AuthorError(f"judge_level: unknown level {which!r} (clear, suggestive, interval, heldout)")


def best_word(n_a: int, n_b: int) -> str:
    """The strongest verdict a design can give: what every run of one beyond every run of the other gets."""
    p = J.min_p(n_a, n_b)
    if p <= J.ALPHA:
        return "clear"
    if p <= J.SUGGESTIVE:
        return "suggestive"
    return f"not separable with {count_word(min(n_a, n_b))} seed{'s' if min(n_a, n_b) != 1 else ''}"


@macro(name="judge_designs_table", html=True, with_site=False)
def designs_html() -> str:
    """One row per design, one to five seeds each: its splits, its smallest p and its best verdict."""
    rows = []
    for n in DESIGNS:
        splits = math.comb(2 * n, n)
        rows.append([escape_text(f"{n} against {n}"), escape_text(fmt_num(splits)),
                     escape_text(J.p_text(J.min_p(n, n)) if n > 1 else "1"), escape_text(best_word(n, n))])
    caption = (f"Each design, its number of ways to split the runs into the two groups, the smallest two-sided p its "
               f"exact permutation test can give (every run of one variant beyond every run of the other) and the "
               f"strongest verdict that p allows (clear at p \u2264 {level_text()}, suggestive at p \u2264 "
               f"{level_text('suggestive')}). Computed by core/judge.py.")
    return table(["Seeds of each variant", "Splits", "Smallest p", "Best verdict"], rows, caption=caption,
                 numeric=(1, 2))


def gain_values(runs: Sequence[Run], mode: str = "greedy") -> list[tuple[Run, float]]:
    return [(r, c.change) for r in runs for c in [run_change(r.evals, mode)] if c is not None]


@macro(name="judge_example")
def example_text(site: Site, first: str = "cispo", second: str = "dapo", mode: str = "greedy") -> str:
    """The procedure worked through on two algorithms' held-out gains in the build; "" when the build
    lacks a finished run of either with that held-out evaluation at start and end."""
    na, nb = site.algorithm_name(first), site.algorithm_name(second)
    a = gain_values(finished_runs(site.catalog.seeds_of(first))[0], mode)
    b = gain_values(finished_runs(site.catalog.seeds_of(second))[0], mode)
    if not a or not b:  # the page tries another pair, or leaves the example out (issue 47 item 1)
        return ""
    side_a = Side(na, tuple(RunValue(r, v) for r, v in a))
    side_b = Side(nb, tuple(RunValue(r, v) for r, v in b))
    verdict = compare(side_a, side_b, +1)
    j = verdict.judgement
    each = (lambda vs: and_names([fmt_signed_points(v) for _, v in vs]))  # noqa: E731
    splits = math.comb(len(a) + len(b), len(a))
    at_least = round(j.p * splits)
    text = (f"In this build, {na}'s {count_word(len(a))} run{'s' if len(a) != 1 else ''} gained {each(a)} points of "
            f"{mode} held-out accuracy and {nb}'s {count_word(len(b))} gained {each(b)}. The difference of the means is "
            f"{fmt_signed_points(j.effect)} points. Of the {fmt_num(splits)} ways to split these "
            f"{count_word(len(a) + len(b))} values into a group of {count_word(len(a))} and one of {count_word(len(b))}, "
            f"{fmt_num(at_least)} give a difference at least as far from zero, so p = {fmt_num(at_least)} / "
            f"{fmt_num(splits)} = {J.p_text(j.p)}: {judged(verdict, fmt_signed_points, unit=' points')}.")
    if j.low is None:
        text += (f" With {j.seeds}, no shift can be rejected at p \u2264 {level_text()}, so the effect's interval is "
                 "unbounded and the pages give the difference alone.")
    else:
        text += (f" The shifts the test does not reject at p \u2264 {level_text()} run from "
                 f"{fmt_signed_points(j.low)} to {fmt_signed_points(j.high)} points: the effect's "
                 f"{level_text('interval')} interval.")
    return text


# ---------------------------------------------------------------------------
# Macros
# ---------------------------------------------------------------------------

@macro
def judge_seeds_needed(site: Site) -> str:
    """The fewest seeds per variant, the same on both sides, with which a clear verdict is possible, in words."""
    return count_word(J.seeds_needed())


@macro
def judge_min_p(site: Site, n_a: int, n_b: int) -> str:
    """The smallest two-sided p the exact permutation test can give with n_a runs against n_b."""
    return J.p_text(J.min_p(int(n_a), int(n_b)))


@macro(name="judge_example_pair")
def example_pair(site: Site, *pairs: Sequence[str], mode: str = "greedy") -> list[str] | None:
    """The first of ``pairs`` ([a, b], ...) of which the build has finished runs of both with a ``mode``
    held-out evaluation at start and end; None when it has none. For ``{% set pair =
    judge_example_pair(["cispo", "dapo"], ["dr_grpo", "grpo"]) %}``: the worked example uses runs the set
    has, and the page leaves it out when the set has none (issue 47 item 1)."""
    for pair in pairs:
        if not isinstance(pair, (list, tuple)) or len(pair) != 2:
            raise AuthorError(f"judge_example_pair: pairs of algorithm ids, not {pair!r}")
        if example_text(site, str(pair[0]), str(pair[1]), mode):
            return [str(pair[0]), str(pair[1])]
    return None
