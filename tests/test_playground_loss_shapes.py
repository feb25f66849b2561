"""Playground 3 (unipo_build.site.playgrounds.loss_shapes): flat regions, DAPO's sides, weights."""

from __future__ import annotations

import numpy as np
import pytest

from unipo_build.core.components import clipped_surrogate
from unipo_build.site.playgrounds import loss_shapes as ls


def slopes(ratio, objective):
    return np.diff(objective) / np.diff(ratio)


def in_zone(lo, hi, zones):
    return any(start - 1e-12 <= lo and hi <= end + 1e-12 for start, end, _ in zones)


@pytest.mark.parametrize("eps", ls.EPS_CHOICES)
@pytest.mark.parametrize("sign", [1, -1])
def test_flat_exactly_where_the_clip_is_active(eps, sign):
    r = ls.curve_grid(eps, eps)
    obj, side = ls.surrogate_curve(r, float(sign), eps, eps)
    zones = ls.flat_zones(r, side)
    for k, slope in enumerate(slopes(r, obj)):
        if in_zone(r[k], r[k + 1], zones):
            assert slope == 0.0, (eps, sign, r[k])
        else:
            assert slope == pytest.approx(sign), (eps, sign, r[k])
    # the zone starts (A > 0) or ends (A < 0) exactly at the clip boundary
    (zone,) = zones
    if sign > 0:
        assert zone[0] == pytest.approx(1 + eps) and zone[1] == r[-1] and zone[2] == 1
    else:
        assert zone[0] == r[0] and zone[1] == pytest.approx(1 - eps) and zone[2] == -1
    # and the clip side is reported on exactly the points strictly past the boundary
    past = (r > 1 + eps) if sign > 0 else (r < 1 - eps)
    assert np.array_equal(side != 0, past)


def test_every_boundary_is_on_its_curves_grid():
    for eps in ls.EPS_CHOICES:
        grid = ls.curve_grid(eps, eps)
        assert len(grid) == len(ls.RATIO_GRID)  # moved onto the boundary, nothing added
        assert 1 - eps in grid and 1 + eps in grid
    gspo = ls.curve_grid(*ls.GSPO_EPS)
    assert len(gspo) == len(ls.RATIO_GRID) + 2


@pytest.mark.parametrize("low, high", [(0.2, 0.28), (0.1, 0.5), (0.3, 0.04)])
def test_dapo_each_sign_sees_only_its_own_clip(low, high):
    r = ls.RATIO_GRID
    for sign, eps in ((1.0, high), (-1.0, low)):
        adv = np.full_like(r, sign)
        asym, side_a = clipped_surrogate(r, adv, low, high)
        sym, side_s = clipped_surrogate(r, adv, eps, eps)
        assert np.array_equal(asym, sym) and np.array_equal(side_a, side_s)


def test_reinforce_is_never_flat():
    for sign in (1.0, -1.0):
        obj, side = ls.surrogate_curve(ls.RATIO_GRID, sign, None, None)
        assert not side.any() and ls.flat_zones(ls.RATIO_GRID, side) == []
        assert np.allclose(slopes(ls.RATIO_GRID, obj), sign)


def test_gspo_clip_starts_almost_at_one():
    rows = [r for r in ls.shape_rows() if r["k"] == "zone" and r["m"] == "gspo"]
    by_sign = {r["s"]: r for r in rows}
    assert by_sign[1]["r"] == pytest.approx(1 + ls.GSPO_EPS[1])
    assert by_sign[-1]["r2"] == pytest.approx(1 - ls.GSPO_EPS[0])


def test_shape_rows_cover_every_slider_value():
    rows = ls.shape_rows()
    for sign in (1, -1):
        for eps in ls.EPS_CHOICES:
            assert sum(1 for r in rows if r["k"] == "curve" and r["m"] == "clip" and r["e"] == eps
                       and r["s"] == sign) == len(ls.curve_grid(eps, eps))
    assert 0.2 in ls.EPS_CHOICES and 0.28 in ls.EPS_CHOICES  # DAPO's recipe is a slider stop


def test_aggregation_weights_by_hand():
    g = ls.GROUP_SIZE
    # equal lengths: every aggregation gives each response 1/G of the step
    for kind in ls.AGGREGATION_LABELS:
        _, share = ls.aggregation_row(kind, 128, 128)
        assert share == pytest.approx(1 / g)
    weight, share = ls.aggregation_row("seq_mean_token_mean", 10, 100)
    assert weight == pytest.approx(1 / (g * 10)) and share == pytest.approx(1 / g)
    weight, share = ls.aggregation_row("token_mean", 10, 100)
    assert weight == pytest.approx(1 / (10 + 3 * 100)) and share == pytest.approx(10 / 310)
    weight, share = ls.aggregation_row("constant_normalizer", 10, 100)
    assert weight == pytest.approx(1 / (g * ls.MAX_LENGTH)) and share == pytest.approx(10 / 310)
    weight, share = ls.aggregation_row("seq_mean_token_sum", 10, 100)
    assert weight == pytest.approx(1 / g) and share == pytest.approx(10 / 310)


def test_aggregation_rows_cover_the_slider():
    rows = ls.aggregation_rows()
    assert {r["o"] for r in rows} == set(ls.OTHER_LENGTHS)
    assert ls.DEFAULT_OTHER_LENGTH in ls.OTHER_LENGTHS
    assert len(rows) == len(ls.AGGREGATION_LABELS) * len(ls.OTHER_LENGTHS) * len(ls.LENGTH_GRID)
