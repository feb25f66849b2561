"""Paired held-out comparison: hand-worked numbers for the change, its interval and McNemar's test; the Wilson
and Newcombe intervals of small and unpaired evaluations against published values."""

import math

import pytest

from unipo_build.core.heldout import (
    MIN_PROBLEMS,
    compare,
    mcnemar_exact,
    newcombe_paired,
    newcombe_unpaired,
    paired_change,
    problem_count,
    run_change,
    unpaired_change,
    wilson,
)
from unipo_build.core.schema import EvalRecord


def test_paired_change_by_hand():
    # 40 problems: start 1,1,0,0 -> end 1,0,1,1 ten times over: gained 20 (problems 3, 4), lost 10 (problem 2)
    c = paired_change("1100" * 10, "1011" * 10)
    assert (c.gained, c.lost, c.n, c.paired, c.method, c.too_few) == (20, 10, 40, True, "normal", False)
    assert c.start == 0.5 and c.end == 0.75 and c.change == 0.25
    # d = (0, -1, 1, 1) x 10: sample variance (30 - 40 * 0.25**2) / 39 = 0.7051282; se = sqrt(0.7051282 / 40)
    half = 1.959963984540054 * math.sqrt((30 - 40 * 0.0625) / 39 / 40)
    assert c.low == pytest.approx(0.25 - half, abs=1e-12) and c.high == pytest.approx(0.25 + half, abs=1e-12)
    # half = 1.96 x sqrt(0.0176282) = 1.96 x 0.132771 = 0.260226 > 0.25: the interval holds 0
    assert half == pytest.approx(0.260226, abs=1e-6) and c.direction == "flat"
    # McNemar: min(20, 10) = 10 of 30 discordant: 2 P(Binomial(30, 1/2) <= 10)
    assert c.p_value == pytest.approx(2 * sum(math.comb(30, i) for i in range(11)) / 2**30, abs=1e-15)


def test_wilson_interval_matches_newcombes_published_values():
    # Newcombe (1998), Statistics in Medicine 17:857, Table I, method 3 (Wilson's score, no continuity correction)
    for (x, n), (low, high) in {(81, 263): (0.2553, 0.3662), (15, 148): (0.0624, 0.1605), (0, 20): (0.0, 0.1611),
                                (1, 29): (0.0061, 0.1718)}.items():
        assert wilson(x / n, n) == pytest.approx((low, high), abs=5e-5), (x, n)
    # 0 of n by hand: the upper bound is z^2 / (n + z^2); 4 of 4: the lower bound 4 / (4 + z^2)
    z2 = 1.959963984540054**2
    assert wilson(0.0, 20) == (0.0, pytest.approx(z2 / (20 + z2), abs=1e-15))
    assert wilson(1.0, 4) == (pytest.approx(4 / (4 + z2), abs=1e-15), 1.0)


def test_unpaired_interval_matches_published_values():
    # Newcombe (1998), Statistics in Medicine 17:873, Table II, method 10: 56/70 - 48/80, 0/10 - 0/20, 5/56 - 0/29
    assert newcombe_unpaired(48 / 80, 80, 56 / 70, 70) == pytest.approx((0.0524, 0.3339), abs=5e-5)
    assert newcombe_unpaired(0.0, 20, 0.0, 10) == pytest.approx((-0.1611, 0.2775), abs=5e-5)
    assert newcombe_unpaired(0.0, 29, 5 / 56, 56) == pytest.approx((-0.0381, 0.1926), abs=5e-5)
    # Fagerland, Lydersen & Laake (2017), Statistical Analysis of Contingency Tables, chapter 4: Perondi et al.
    # (2004), 7 of 34 against 1 of 34: 0.1765 (0.0189 to 0.3404)
    assert newcombe_unpaired(1 / 34, 34, 7 / 34, 34) == pytest.approx((0.0189, 0.3404), abs=5e-5)


def test_paired_interval_matches_published_values():
    # Fagerland, Lydersen & Laake (2017), chapter 8, Newcombe's square-and-add interval: Cavo et al. (2012), 59 both,
    # 6 only before, 16 only after, 80 neither: after - before = 10/161 = 0.0621 (0.0046 to 0.1186)
    assert newcombe_paired(59, 16, 6, 80) == pytest.approx((0.0046, 0.1186), abs=5e-5)
    # Bentur et al. (2009): 1 both, 7 only after, 1 only before, 12 neither: +6/21, 0.0256 to 0.5069 (the book's
    # before - after reads -0.5069 to -0.0256)
    assert newcombe_paired(1, 7, 1, 12) == pytest.approx((0.0256, 0.5069), abs=5e-5)
    # phi by hand where a = both x neither - gained x lost = 0 (within [0, n/2]: phi 0): the unpaired interval
    assert newcombe_paired(1, 1, 1, 1) == pytest.approx(newcombe_unpaired(0.5, 4, 0.5, 4), abs=1e-15)


def test_a_small_evaluation_stays_within_what_is_possible():
    """verl's 4-problem validation, 1 of 4 right then 4 of 4: the normal interval read +32.6 to +117.4 points."""
    c = paired_change("1000", "1111")
    assert (c.gained, c.lost, c.method, c.too_few) == (3, 0, "newcombe", True)
    # both 1, gained 3, lost 0, neither 0: a marginal is 0, so phi = 0 and the interval is the unpaired one:
    # end 4/4, Wilson (4 / (4 + z^2), 1) = (0.51010, 1); start 1/4: q = z^2 / 4 = 0.960365, centre (0.25 + q / 2) /
    # (1 + q) = 0.372473, half 1.959964 x sqrt(0.1875 / 4 + q / 16) / (1 + q) = 0.326886: (0.045587, 0.699359)
    z2 = 1.959963984540054**2
    l1 = 4 / (4 + z2)
    l2, u2 = wilson(0.25, 4)
    assert (l2, u2) == pytest.approx((0.045587, 0.699359), abs=1e-6)
    assert c.low == pytest.approx(0.75 - math.sqrt((1 - l1) ** 2 + (u2 - 0.25) ** 2), abs=1e-12)
    assert c.high == pytest.approx(0.75 + math.sqrt(0.0 + (0.25 - l2) ** 2), abs=1e-12)
    assert (c.low, c.high) == pytest.approx((0.0852, 0.9544), abs=5e-5)
    # the end cannot pass 100%: the upper bound is 1 minus the lowest start accuracy Wilson allows
    assert c.high == pytest.approx(1 - l2, abs=1e-12) and -1 <= c.low <= c.high <= 1
    u = unpaired_change(0.25, 4, 1.0, 4)
    assert (u.low, u.high) == (c.low, c.high) and not u.paired and u.too_few
    # every change of 4 problems stays within [-1, 1]
    for start in range(16):
        for end in range(16):
            a, b = format(start, "04b"), format(end, "04b")
            x = paired_change(a, b)
            assert -1 <= x.low <= x.change <= x.high <= 1, (a, b, x)
    assert MIN_PROBLEMS == 30 and paired_change("1" * 29, "1" * 29).too_few and not paired_change("1" * 30,
                                                                                                 "1" * 30).too_few


def test_a_large_paired_normal_interval_is_cut_at_one():
    # 30 problems, none right then all right: mean 1, every d_i = 1, variance 0: the interval is [1, 1]
    c = paired_change("0" * 30, "1" * 30)
    assert (c.low, c.high, c.method) == (1.0, 1.0, "normal")


def test_mcnemar_exact_by_hand():
    # 10 gained, 2 lost: (C(12,0) + C(12,1) + C(12,2)) / 2**12 = 79 / 4096, doubled
    assert mcnemar_exact(10, 2) == pytest.approx(2 * 79 / 4096, abs=1e-15)
    assert mcnemar_exact(2, 10) == mcnemar_exact(10, 2)
    assert mcnemar_exact(0, 0) == 1.0


def test_a_clear_paired_gain_is_up_and_the_same_accuracies_unpaired_are_wider():
    # 1,000 problems: 400 right at the start; 150 gained, 30 lost -> 520 right at the end
    start = "1" * 400 + "0" * 600
    end = "1" * 370 + "0" * 30 + "1" * 150 + "0" * 450
    c = paired_change(start, end)
    assert (c.gained, c.lost) == (150, 30) and c.change == pytest.approx(0.12)
    assert c.direction == "up" and c.p_value < 1e-15
    u = unpaired_change(0.4, 1000, 0.52, 1000)
    assert u.change == pytest.approx(0.12) and not u.paired
    assert (c.high - c.low) < (u.high - u.low)


def test_unpaired_by_hand():
    # 40 of 100 then 50 of 100, q = z^2 / 100 = 0.0384146: Wilson 0.4 -> centre 0.4192073 / 1.0384146 = 0.403699,
    # half 1.959964 x sqrt(0.0024 + 0.0000960) / 1.0384146 = 0.094298: (0.309401, 0.497997); 0.5 -> centre 0.5, half
    # 1.959964 x sqrt(0.0025 + 0.0000960) / 1.0384146 = 0.096169: (0.403831, 0.596169). low = 0.1 - sqrt((0.5 -
    # 0.403831)^2 + (0.497997 - 0.4)^2) = 0.1 - 0.137302; high = 0.1 + sqrt((0.596169 - 0.5)^2 + (0.4 - 0.309401)^2)
    # = 0.1 + 0.132124
    u = unpaired_change(0.4, 100, 0.5, 100)
    assert wilson(0.4, 100) == pytest.approx((0.309401, 0.497997), abs=1e-6)
    assert wilson(0.5, 100) == pytest.approx((0.403831, 0.596169), abs=1e-6)
    assert (u.low, u.high) == pytest.approx((0.1 - 0.137302, 0.1 + 0.132124), abs=2e-6)
    assert u.direction == "flat" and u.method == "newcombe" and not u.paired


def ev(step, phase, bits=None, acc=None, problems=True):
    n = len(bits) if bits else 4
    return EvalRecord(step=step, phase=phase, n=n, accuracy_greedy=acc if acc is not None else bits.count("1") / n,
                      correct_greedy=bits, problems=f"eval rows 1-{n}" if problems else None)


def test_compare_pairs_the_shared_rows_of_a_subset_and_the_full_set():
    full_start = ev(0, "start", "1100" + "0011")
    subset = ev(10, "periodic", "1111")  # the first 4 rows only
    c = compare(full_start, subset)
    assert c.paired and c.n == 4 and (c.gained, c.lost) == (2, 0)


def test_compare_falls_back_to_unpaired_without_per_problem_results():
    c = compare(ev(0, "start", acc=0.25, bits=None), ev(8, "end", acc=0.75, bits=None))
    assert not c.paired and c.change == 0.5 and c.gained is None
    c = compare(ev(0, "start", "1100", problems=False), ev(8, "end", "1111", problems=False))
    assert not c.paired


def test_run_change_uses_start_and_last_end():
    evals = [ev(0, "start", "0000"), ev(4, "periodic", "1000"), ev(8, "end", "1100")]
    c = run_change(evals)
    assert c.start == 0 and c.end == 0.5 and c.gained == 2
    assert run_change(evals[:2]) is None


def test_mismatched_lengths_and_problem_counts():
    with pytest.raises(ValueError, match="equal length"):
        paired_change("10", "1")
    assert problem_count(ev(0, "start", "10")) == 2
    assert math.isclose(paired_change("1", "1").change, 0.0)
