"""Playground 2 (unipo_build.site.playgrounds.multi_reward): GRPO vs GDPO advantages, hand-worked."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest

from unipo_build.site.playgrounds import multi_reward as mr

SQRT_HALF = math.sqrt(0.5)


def test_two_rollouts_grpo_maps_every_pair_of_totals_to_the_same_advantages():
    # totals (t, t') with t < t': mean (t+t')/2, n-1 std |t'-t|/sqrt(2), so A = -+1/sqrt(2)
    rows = {r.totals: r for r in mr.two_rollout_example()}
    for totals in ("(0, 1)", "(0, 2)", "(1, 2)"):
        low, high = rows[totals].grpo
        assert low == pytest.approx(-SQRT_HALF, abs=1e-5) and high == pytest.approx(SQRT_HALF, abs=1e-5)
        assert f"{high:.4f}" == "0.7071"


def test_two_rollouts_gdpo_separates_the_group_that_earned_both_rewards():
    rows = {r.totals: r for r in mr.two_rollout_example()}
    # (0,0) vs (1,1): each reward's z-scores are -+1/sqrt(2); their sum is -+sqrt(2)
    assert rows["(0, 2)"].gdpo_sum == pytest.approx((-math.sqrt(2), math.sqrt(2)), abs=1e-5)
    assert f"{rows['(0, 2)'].gdpo_sum[1]:.4f}" == "1.4142"
    # one reward differs, the other is equal within the group (z-score 0)
    assert rows["(0, 1)"].gdpo_sum == pytest.approx((-SQRT_HALF, SQRT_HALF), abs=1e-5)
    assert rows["(1, 2)"].gdpo_sum == pytest.approx((-SQRT_HALF, SQRT_HALF), abs=1e-5)


def test_gdpo_batch_renormalisation_by_hand():
    # the batch of the three groups: sums (-a, a, -2a, 2a, -a, a) with a = 1/sqrt(2) (to 1e-6)
    rows = mr.two_rollout_example()
    sums = np.array([x for r in rows for x in r.gdpo_sum])
    mean = sums.mean()
    std = math.sqrt(np.sum((sums - mean) ** 2) / (len(sums) - 1))  # n - 1
    assert mean == pytest.approx(0.0, abs=1e-12)
    assert std == pytest.approx(math.sqrt((4 * 0.5 + 2 * 2.0) / 5), abs=1e-5)
    got = np.array([x for r in rows for x in r.gdpo])
    assert np.allclose(got, (sums - mean) / (std + 1e-4), atol=1e-12)
    # one common factor for every group: ratios between groups survive the batch step
    assert np.allclose(got / sums, got[0] / sums[0])
    assert rows[1].gdpo[1] / rows[0].gdpo[1] == pytest.approx(2.0, abs=1e-5)


def test_batch_renormalisation_gives_zero_mean_and_unit_std():
    rng = np.random.default_rng(3)
    batch = rng.integers(0, 2, size=(5, 8, 3)).astype(float)
    adv = mr.gdpo_advantages(batch, [1.0, 2.0, 0.5]).reshape(-1)
    assert adv.mean() == pytest.approx(0.0, abs=1e-12)
    assert np.std(adv, ddof=1) == pytest.approx(1.0, abs=1e-3)


def test_a_reward_the_whole_group_earned_changes_nothing():
    grid = np.array(mr.DEFAULT_GRID, dtype=float)
    full = grid.copy()
    full[:, 1] = 1.0  # every rollout earns format
    dropped = np.delete(grid, 1, axis=1)
    assert np.allclose(mr.gdpo_sums(full[None]), mr.gdpo_sums(dropped[None]))
    assert np.allclose(mr.grpo_advantages(full[None]), mr.grpo_advantages(dropped[None]))


def test_collapse_in_the_default_grid():
    grid = np.array(mr.DEFAULT_GRID, dtype=float)
    totals = grid.sum(axis=1)
    adv = mr.grpo_advantages(grid[None])[0]
    sets = mr.collapsed_groups(grid, adv)
    # by hand: total 1 for rollouts 5, 6, 8, 10 and total 2 for 2, 3, 4, 7, 11 (1-based)
    assert sets == [[4, 5, 7, 9], [1, 2, 3, 6, 10]]
    for members in sets:
        assert len({totals[i] for i in members}) == 1
    # GDPO tells the members of a set apart by how rare their rewards are
    gdpo = mr.gdpo_advantages(grid[None])[0]
    for members in sets:
        assert len({round(gdpo[i], 6) for i in members}) > 1
    # #2 (correct, format) beats #3 (format, concise): correctness is the rarer reward
    assert gdpo[1] > gdpo[2]


def test_same_totals_grid_leaves_grpo_two_values():
    grid = np.array(mr.COLLIDE_GRID, dtype=float)
    assert set(grid.sum(axis=1)) == {1.0, 2.0}
    assert len({round(x, 6) for x in mr.grpo_advantages(grid[None])[0]}) == 2
    assert len({round(x, 6) for x in mr.gdpo_advantages(grid[None])[0]}) > 2


def test_weights_scale_the_rewards():
    grid = np.array(mr.DEFAULT_GRID, dtype=float)[None]
    doubled = mr.gdpo_sums(grid, [2.0, 2.0, 2.0])
    assert np.allclose(doubled, 2 * mr.gdpo_sums(grid))
    assert np.allclose(mr.gdpo_advantages(grid, [2.0, 2.0, 2.0]), mr.gdpo_advantages(grid), atol=1e-4)
    assert np.allclose(mr.grpo_advantages(grid, [3.0, 3.0, 3.0]), mr.grpo_advantages(grid), atol=1e-5)


def median_runs(method, toy, seeds=8):
    return np.median([mr.train_bernoulli(method, toy, seed=toy.seed + k) for k in range(seeds)], axis=0)


def test_toy_training_starts_where_told_and_learns():
    toy = mr.ToySettings()
    for method in mr.TOY_METHODS:
        h = mr.train_bernoulli(method, toy)
        assert h.shape == (toy.epochs + 1, 3)
        assert np.allclose(h[0], toy.init_probs)
        assert np.all(h[-1] > 0.9)


def test_the_pages_claims_about_the_toy_hold():
    toy = mr.ToySettings()
    grpo, gdpo = median_runs("grpo", toy), median_runs("gdpo", toy)
    # the rare reward (correct) is learned sooner under GDPO
    assert gdpo[75, 0] > grpo[75, 0] + 0.1
    # both end near certainty on every reward
    assert np.all(grpo[-1] > 0.95) and np.all(gdpo[-1] > 0.95)
    # a reward weighted down is learned more slowly under GDPO than under GRPO
    lopsided = replace(toy, weights=(1.0, 1.0, 0.25))
    assert median_runs("gdpo", lopsided)[75, 2] < median_runs("grpo", lopsided)[75, 2]
