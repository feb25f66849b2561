"""Paired held-out comparison: hand-worked numbers for the change, its interval and McNemar's test."""

import math

import pytest

from unipo_build.core.heldout import (
    compare,
    mcnemar_exact,
    paired_change,
    problem_count,
    run_change,
    unpaired_change,
)
from unipo_build.core.schema import EvalRecord


def test_paired_change_by_hand():
    # start 1,1,0,0 -> end 1,0,1,1: gained 2 (problems 3, 4), lost 1 (problem 2)
    c = paired_change("1100", "1011")
    assert (c.gained, c.lost, c.n, c.paired) == (2, 1, 4, True)
    assert c.start == 0.5 and c.end == 0.75 and c.change == 0.25
    # d = (0, -1, 1, 1): sample variance (3 - 4 * 0.25**2) / 3 = 0.9166667; se = sqrt(0.9166667 / 4) = 0.4787136
    half = 1.959963984540054 * 0.47871355387816905
    assert c.low == pytest.approx(0.25 - half, abs=1e-12) and c.high == pytest.approx(0.25 + half, abs=1e-12)
    assert c.direction == "flat"
    # McNemar: min(2, 1) = 1 of 3 discordant: P(X <= 1) = (1 + 3) / 8 = 0.5, two-sided 1.0
    assert c.p_value == 1.0


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
    # se = sqrt(0.4*0.6/100 + 0.5*0.5/100) = 0.07
    u = unpaired_change(0.4, 100, 0.5, 100)
    assert u.low == pytest.approx(0.1 - 1.959963984540054 * 0.07) and u.high == pytest.approx(0.1 + 1.959963984540054 * 0.07)
    assert u.direction == "flat"


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
