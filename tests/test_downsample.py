"""LTTB and the bounded streaming envelope on series whose answer is known."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from unipo_build.core.downsample import (
    StreamingEnvelope,
    StrideSample,
    drop_repeats,
    lttb,
    lttb_indices,
    quantile_bounds,
)


def triangle_wave(n: int, period: int) -> np.ndarray:
    """0 -> 1 -> 0 zigzag (a symmetric sawtooth): peaks at period/2 + k*period."""
    phase = np.arange(n) % period
    return 1.0 - np.abs(phase - period / 2) / (period / 2)


# ---------------------------------------------------------------- LTTB


def test_lttb_keeps_first_last_and_respects_n_out():
    x = np.arange(10_000)
    y = np.sin(x / 300.0)
    for n_out in (3, 10, 999, 1000):
        idx = lttb_indices(x, y, n_out)
        assert len(idx) == n_out
        assert idx[0] == 0 and idx[-1] == len(x) - 1
        assert np.all(np.diff(idx) > 0)


def test_lttb_returns_everything_when_short():
    x = np.arange(7)
    assert lttb_indices(x, x * 1.0, 1000).tolist() == list(range(7))
    assert lttb_indices(x, x * 1.0, 7).tolist() == list(range(7))


def test_lttb_keeps_a_lone_spike_and_a_dip():
    x = np.arange(20_000)
    y = np.zeros(len(x))
    y[12_345] = 50.0
    y[777] = -20.0
    kept_x, kept_y = lttb(x, y, 100)
    assert 12_345 in kept_x and 777 in kept_x
    assert kept_y.max() == 50.0 and kept_y.min() == -20.0


def test_lttb_keeps_every_extreme_of_a_sawtooth():
    # 10 teeth of 1,000 points, 200 points out: 20 per tooth, every peak and trough kept.
    x = np.arange(10_000)
    y = triangle_wave(len(x), 1000)
    kept = set(lttb_indices(x, y, 200).tolist())
    peaks = set(range(500, 10_000, 1000))
    troughs = set(range(1000, 10_000, 1000))
    assert peaks <= kept
    assert troughs <= kept


def test_lttb_on_a_ramp_sawtooth_keeps_global_extremes():
    # A ramp that drops at once: LTTB picks one point per bucket, so at each drop it keeps the
    # top or the bottom of the cliff; the overall maximum and minimum are kept.
    x = np.arange(10_000)
    y = (x % 1000).astype(float)
    _, kept_y = lttb(x, y, 100)
    assert kept_y.max() >= 990 and kept_y.min() == 0


def test_lttb_rejects_bad_input():
    x = np.arange(10)
    with pytest.raises(ValueError, match="at least 3"):
        lttb_indices(x, x * 1.0, 2)
    with pytest.raises(ValueError, match="increasing"):
        lttb_indices(np.array([0, 2, 1]), np.array([1.0, 2.0, 3.0]), 3)
    with pytest.raises(ValueError, match="finite"):
        lttb_indices(x, np.where(x == 3, np.nan, 1.0), 5)


# ---------------------------------------------------------------- streaming envelope


def feed(env: StreamingEnvelope, x: np.ndarray, y: np.ndarray, chunk: int) -> StreamingEnvelope:
    for i in range(0, len(x), chunk):
        env.extend(x[i:i + chunk], y[i:i + chunk])
    return env


def test_envelope_is_exact_while_the_run_fits():
    x = np.arange(1500)
    y = np.cos(x / 50.0)
    env = feed(StreamingEnvelope(2048), x, y, 100)
    px, py = env.points()
    assert env.width == 1
    assert px.tolist() == x.tolist() and py.tolist() == pytest.approx(y.tolist())
    assert env.sample().tolist() == pytest.approx(y.tolist())


def test_envelope_memory_is_bounded_and_keeps_extremes_per_bucket():
    n, buckets = 100_000, 256
    x = np.arange(n)
    rng = np.random.default_rng(0)
    y = rng.normal(0, 1, n)
    y[54_321], y[99_998] = 40.0, -40.0
    env = feed(StreamingEnvelope(buckets), x, y, 4096)
    px, py = env.points()
    assert len(px) <= 4 * buckets
    assert env.width == 512  # 100,000 steps / 256 buckets -> 390.6, rounded up to a power of 2
    assert env.count == n
    # First and last point, and the global extremes, survive every merge.
    assert px[0] == 0 and px[-1] == n - 1
    assert 54_321 in px and 99_998 in px
    # Per bucket, the kept min and max are the true ones.
    for b in (0, 17, 100):
        lo, hi = b * env.width, min(n, (b + 1) * env.width)
        inside = (px >= lo) & (px < hi)
        assert py[inside].min() == y[lo:hi].min() and py[inside].max() == y[lo:hi].max()


def test_envelope_chunking_does_not_matter():
    x = np.arange(30_000)
    y = triangle_wave(len(x), 777) + np.sin(x / 91.0)
    a = feed(StreamingEnvelope(512), x, y, 30_000).points()
    b = feed(StreamingEnvelope(512), x, y, 1000).points()
    c = feed(StreamingEnvelope(512), x, y, 7).points()
    for other in (b, c):
        assert a[0].tolist() == other[0].tolist()
        assert a[1].tolist() == other[1].tolist()


def test_envelope_then_lttb_keeps_the_spike_of_a_long_series():
    x = np.arange(200_000)
    y = np.sin(x / 20_000.0)
    y[123_457] = 5.0
    env = feed(StreamingEnvelope(2048), x, y, 4096)
    sx, sy = env.downsample(1000)
    assert len(sx) == 1000
    assert sx[0] == 0 and sx[-1] == 199_999
    assert 123_457 in sx and sy.max() == 5.0


def test_envelope_skips_nulls_and_requires_increasing_steps():
    env = StreamingEnvelope(8)
    env.extend(np.array([0, 1, 2, 3]), np.array([1.0, np.nan, 3.0, np.nan]))
    assert env.count == 2 and env.points()[0].tolist() == [0, 2]
    assert env.last_value == 3.0
    with pytest.raises(ValueError, match="increase"):
        env.extend(np.array([2]), np.array([1.0]))
    with pytest.raises(ValueError, match="even"):
        StreamingEnvelope(7)


@settings(max_examples=40, deadline=None)
@given(
    n=st.integers(1, 3000),
    buckets=st.sampled_from([2, 4, 16, 64]),
    chunk=st.integers(1, 500),
    seed=st.integers(0, 2**16),
)
def test_envelope_properties(n, buckets, chunk, seed):
    rng = np.random.default_rng(seed)
    x = np.cumsum(rng.integers(1, 4, n))
    y = rng.normal(0, 1, n)
    env = feed(StreamingEnvelope(buckets), x, y, chunk)
    px, py = env.points()
    assert len(px) <= 4 * buckets
    assert px[0] == x[0] and px[-1] == x[-1]
    assert py.min() == y.min() and py.max() == y.max()
    assert set(px.tolist()) <= set(x.tolist())
    lookup = dict(zip(x.tolist(), y.tolist()))
    assert all(lookup[a] == b for a, b in zip(px.tolist(), py.tolist()))


# ---------------------------------------------------------------- stride sample and quantiles


def test_stride_sample_keeps_an_even_subset():
    sample = StrideSample(capacity=100)
    for item in range(0, 10_000, 4):  # 2,500 items
        sample.add(item)
    items = sample.items()
    assert sample.total == 2500
    assert 50 <= len(items) <= 100
    assert items[0] == 0
    gaps = set(np.diff(items).tolist())
    assert gaps == {4 * sample.stride}


def test_stride_sample_keeps_all_when_small():
    sample = StrideSample(capacity=10)
    for item in (3, 5, 8):
        sample.add(item)
    assert sample.items() == [3, 5, 8] and sample.stride == 1


def test_quantile_bounds_ignore_one_outlier():
    values = np.r_[np.linspace(0.0, 1.0, 999), 1000.0]
    lo, hi = quantile_bounds(values, 0.01, 0.99)
    assert lo == pytest.approx(0.01, abs=1e-3) and hi < 1.0
    with pytest.raises(ValueError):
        quantile_bounds(np.array([np.nan]))


def test_drop_repeats_keeps_the_ends_of_flat_runs():
    x = np.arange(10)
    y = np.array([1.0, 1, 1, 1, 2, 2, 3, 3, 3, 3])
    kx, ky = drop_repeats(x, y)
    assert kx.tolist() == [0, 3, 4, 5, 6, 9]
    assert ky.tolist() == [1, 1, 2, 2, 3, 3]
    # The line through the kept points passes through every dropped point.
    assert np.interp(x, kx, ky).tolist() == y.tolist()
    # A constant series keeps its two ends; short ones stay as they are.
    assert drop_repeats(x, np.zeros(10))[0].tolist() == [0, 9]
    assert drop_repeats(x[:2], y[:2])[0].tolist() == [0, 1]
