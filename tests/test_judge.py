"""The one procedure behind every verdict (core/judge.py): the exact permutation test by hand, the words
tied to their thresholds, and the interval by inverting the same test."""

from __future__ import annotations

import math

import pytest

from unipo_build.core import judge as J


def test_permutation_p_by_hand_two_against_two():
    # splits of {1,2,3,4} into two pairs, a's mean minus b's: -2, -1, 0, 0, 1, 2; |d| >= 2 in two of six
    assert J.permutation_p([1, 2], [3, 4]) == pytest.approx(2 / 6)
    # observed |d| = 1 ({1,3} against {2,4}): four of six splits are at least as far from zero
    assert J.permutation_p([1, 3], [2, 4]) == pytest.approx(4 / 6)
    assert J.permutation_p([1, 4], [2, 3]) == pytest.approx(1.0)


def test_complete_separation_reaches_the_design_minimum():
    assert J.permutation_p([4, 5, 6], [1, 2, 3]) == pytest.approx(2 / 20)
    assert J.permutation_p([5, 6, 7, 8, 9], [0, 1, 2, 3, 4]) == pytest.approx(2 / 252)
    assert J.min_p(3, 3) == pytest.approx(0.1) and J.min_p(5, 5) == pytest.approx(2 / 252)
    assert J.min_p(4, 4) == pytest.approx(2 / 70)
    assert J.seeds_needed() == 4


def test_unequal_sides_can_reach_one_split_alone():
    """Five against three: the extreme split's mirror (three of the five against the rest) is nearer zero, so the
    extreme split stands alone, p = 1/C(8, 3) = 1/56; min_p says so, and the word is clear."""
    assert J.permutation_p([0.0] * 5, [1.0] * 3) == pytest.approx(1 / 56)
    assert J.min_p(5, 3) == pytest.approx(1 / 56) and J.min_p(3, 5) == pytest.approx(1 / 56)
    j = J.judge([1.0, 2.0, 3.0, 4.0, 5.0], [10.0, 11.0, 12.0])
    assert j.word == "clear" and j.p == pytest.approx(1 / 56)
    assert j.words() == "clear (five seeds against three, two-sided permutation p = 0.018)"
    # one run against three: the test cannot reach 0.05 (1/4 at best), and the words count the runs right
    one = J.judge([9.0], [1.0, 2.0, 3.0])
    assert one.word == "not separable" and one.words() == (
        "not separable with one seed (the test cannot reach p \u2264 0.05 with one seed against three)")
    assert J.judge([1.0, 2.0, 3.0], [9.0]).seeds == "three seeds against one"


def test_short_words_for_a_list_or_a_table_cell():
    assert J.judge([5, 6, 7, 8, 9], [0, 1, 2, 3, 4]).short() == "clear, p = 0.008"
    assert J.judge([4, 5, 6], [1, 2, 3]).short() == "suggestive, p = 0.10"
    assert J.judge([9.0], [1.0]).short() == "not separable with one seed"
    assert J.judge([1, 3, 5, 7, 9], [2, 4, 6, 8, 10]).short().startswith("not separated, p = 0.")
    assert J.judge([], [1.0]).short() == "not measurable"


def test_three_against_three_is_never_clear():
    """The rule the course used before (every seed beyond every seed) reads 3 against 3 as clear at
    a one-sided 1/20, applied both ways: a two-sided 0.10. The procedure calls it suggestive at best."""
    j = J.judge([10.0, 11.0, 12.0], [1.0, 2.0, 3.0])
    assert j.word == "suggestive" and not j.clear and j.sign == 1
    assert j.p == pytest.approx(0.1)
    assert j.low is None and j.high is None  # the design cannot reject any shift at 0.05
    assert j.words() == "suggestive (three seeds each, two-sided permutation p = 0.10)"


def test_too_few_seeds_say_so_in_words():
    j = J.judge([5.0, 6.0], [1.0, 2.0])
    assert j.word == "not separable"
    assert j.words().startswith("not separable with two seeds")
    one = J.judge([9.0], [1.0])
    assert one.word == "not separable" and one.words().startswith("not separable with one seed ")


def test_five_against_five_separated_is_clear_with_a_bounded_interval():
    a, b = [5.0, 6.0, 7.0, 8.0, 9.0], [0.0, 1.0, 2.0, 3.0, 4.0]
    j = J.judge(a, b)
    assert j.word == "clear" and j.sign == 1 and j.effect == pytest.approx(5.0)
    assert j.p == pytest.approx(2 / 252)
    assert j.low is not None and j.high is not None and j.low < 5.0 < j.high
    # the bounds are where the inverted test turns: just inside p > 0.05, just outside p <= 0.05
    for bound, outward in ((j.low, -1e-6), (j.high, 1e-6)):
        assert J.permutation_p([x - bound for x in a], b) > J.ALPHA
        assert J.permutation_p([x - bound - outward for x in a], b) <= J.ALPHA
    assert j.words() == "clear (five seeds each, two-sided permutation p = 0.008)"


def test_overlapping_five_against_five_is_not_separated():
    j = J.judge([1.0, 3.0, 5.0, 7.0, 9.0], [2.0, 4.0, 6.0, 8.0, 10.0])
    assert j.word == "not separated" and j.sign == -1
    assert j.low < 0 < j.high  # the interval holds zero
    assert j.words().startswith("not separated (five seeds each, two-sided permutation p = ")


def test_suggestive_band_between_the_two_levels():
    # values 1..8; a = {4,6,7,8} (sum 25) against {1,2,3,5}: a split's difference is (2S - 36) / 4 for the
    # sum S of its first four, so |d| >= 3.5 where S >= 25 ({5,6,7,8}, {4,6,7,8}) or S <= 11 (their
    # complements): p = 4 / 70 = 0.057, between 0.05 and 0.10
    j = J.judge([4.0, 6.0, 7.0, 8.0], [1.0, 2.0, 3.0, 5.0])
    assert j.p == pytest.approx(4 / 70)
    assert j.word == "suggestive" and not j.clear
    assert j.low < 0 < j.high or j.low <= 0 <= j.high  # not rejected at 0.05: zero is a kept shift
    assert J.permutation_p([x - 0.0 for x in [4.0, 6.0, 7.0, 8.0]], [1.0, 2.0, 3.0, 5.0]) > J.ALPHA


def test_a_missing_side_is_unmeasurable_and_says_what_makes_it():
    j = J.judge([], [1.0, 2.0], missing="the build has no run of CISPO (data/suite.yaml: cispo)")
    assert j.word == "unmeasurable" and j.words() == "the build has no run of CISPO (data/suite.yaml: cispo)"
    assert J.judge([math.nan, 1.0], [1.0, 2.0]).word == "unmeasurable"
