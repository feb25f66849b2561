"""Downsampling for the Training Explorer: LTTB, and a bounded pre-reduction for huge logs.

A ring of the explorer is one metric over every step of a run. A log can hold 100,000 steps
or more; a ring needs about a thousand points to look exactly like the full series at the
size it is drawn. Two stages get there with bounded memory:

1. :class:`StreamingEnvelope` reads the series in chunks while ``steps.jsonl`` is streamed and
   keeps, for each of at most ``buckets`` step intervals, the first, last, smallest and largest
   point (the M4 envelope). When the run outgrows the buckets, neighbouring buckets are merged
   pairwise, so memory stays fixed whatever the length of the log. Every extreme of the
   series survives a merge. Up to ``buckets`` steps, nothing is dropped at all.
2. :func:`lttb_indices` (Largest-Triangle-Three-Buckets, Steinarsson 2013, "Downsampling Time
   Series for Visual Representation", MSc thesis, University of Iceland, ch. 4) picks
   ``n_out`` of those points: in each bucket, the point that makes the largest triangle with
   the point chosen before it and the mean of the next bucket. First and last points are
   always kept; a lone spike makes a large triangle and is kept too.

Min-max preselection followed by LTTB is the MinMaxLTTB scheme of Van Der Donckt et al. 2023
(arXiv:2305.00332, section 3), which shows it keeps LTTB's visual quality; here the
preselection also bounds memory while streaming. LTTB itself is the Rust implementation of
the maintained ``tsdownsample`` package.

:class:`StrideSample` keeps an evenly thinned subset of a stream of steps (rollout boundaries,
logged steps) with the same fixed memory.

Everything here is pure: numpy arrays in, numpy arrays out.
"""

from __future__ import annotations

import numpy as np
from tsdownsample import LTTBDownsampler

__all__ = ["lttb_indices", "lttb", "StreamingEnvelope", "StrideSample", "drop_repeats", "quantile_bounds"]

_LTTB = LTTBDownsampler()


def _check_xy(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    x = np.asarray(x)
    y = np.asarray(y, dtype=np.float64)
    if x.ndim != 1 or y.ndim != 1 or len(x) != len(y):
        raise ValueError(f"x and y must be 1-D arrays of one length (got shapes {x.shape} and {y.shape})")
    if len(x) > 1 and not np.all(np.diff(x) > 0):
        raise ValueError("x must be strictly increasing")
    if not np.all(np.isfinite(y)):
        raise ValueError("y must be finite (drop null steps before downsampling)")
    return x, y


def lttb_indices(x: np.ndarray, y: np.ndarray, n_out: int) -> np.ndarray:
    """Indices of the ``n_out`` points LTTB keeps (all of them when there are no more).

    ``x`` strictly increasing, ``y`` finite, ``n_out >= 3`` (LTTB keeps the first and last
    point and at least one in between). Returns sorted int64 indices into ``x``.
    """
    if n_out < 3:
        raise ValueError(f"n_out must be at least 3 (got {n_out})")
    x, y = _check_xy(x, y)
    if len(x) <= n_out:
        return np.arange(len(x), dtype=np.int64)
    # tsdownsample wants contiguous numeric arrays; steps are integers, LTTB's triangle areas
    # are computed in float64 either way.
    xs = np.ascontiguousarray(x if np.issubdtype(x.dtype, np.number) else x.astype(np.float64))
    idx = _LTTB.downsample(xs, np.ascontiguousarray(y), n_out=int(n_out))
    return np.asarray(idx, dtype=np.int64)


def lttb(x: np.ndarray, y: np.ndarray, n_out: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``(x, y)`` points LTTB keeps; see :func:`lttb_indices`."""
    idx = lttb_indices(x, y, n_out)
    return np.asarray(x)[idx], np.asarray(y, dtype=np.float64)[idx]


class StreamingEnvelope:
    """Bounded-memory M4 envelope of one series whose points arrive in increasing x.

    The x axis (steps) is cut into ``buckets`` intervals of ``width`` steps from the first
    point; each keeps its first, last, minimum and maximum point. When a point falls beyond
    the last interval, ``width`` doubles and neighbouring intervals merge. Memory: 8 arrays of
    ``buckets`` numbers, whatever the number of points fed.

    ``sample()`` returns the first value of every interval: a systematic sample (about one
    value every ``width`` steps) from which quantiles of the whole series are estimated.
    """

    def __init__(self, buckets: int = 2048):
        if buckets < 2 or buckets % 2:
            raise ValueError(f"buckets must be an even number >= 2 (got {buckets})")
        self.buckets = buckets
        self.width = 1
        self.origin: float | None = None
        self.count = 0  # points fed
        self.last_value: float | None = None
        self.last_x: float | None = None
        n = buckets
        self._used = np.zeros(n, dtype=bool)
        # first, last, min and max point of every bucket: x (float64 holds any step exactly
        # up to 2**53) and y
        self._fx, self._fy = np.zeros(n), np.zeros(n)
        self._lx, self._ly = np.zeros(n), np.zeros(n)
        self._nx, self._ny = np.zeros(n), np.zeros(n)
        self._mx, self._my = np.zeros(n), np.zeros(n)

    # ------------------------------------------------------------------ feeding

    def extend(self, x: np.ndarray, y: np.ndarray) -> None:
        """Add points; ``x`` increasing and beyond every x fed before. NaN values are skipped."""
        x = np.asarray(x, dtype=np.float64)
        y = np.asarray(y, dtype=np.float64)
        keep = np.isfinite(y)
        if not keep.all():
            x, y = x[keep], y[keep]
        if len(x) == 0:
            return
        if self.last_x is not None and x[0] <= self.last_x:
            raise ValueError(f"x must increase across calls (got {x[0]} after {self.last_x})")
        if len(x) > 1 and not np.all(np.diff(x) > 0):
            raise ValueError("x must be strictly increasing")
        if self.origin is None:
            self.origin = float(x[0])
        offset = x - self.origin
        while offset[-1] // self.width >= self.buckets:
            self._coarsen()
        b = (offset // self.width).astype(np.int64)

        # Group the chunk by bucket (b is sorted): segment starts and ends.
        starts = np.flatnonzero(np.r_[True, b[1:] != b[:-1]])
        ends = np.r_[starts[1:], len(b)]
        ub = b[starts]
        # Sorting by (bucket, value) puts each bucket's minimum first and maximum last; the
        # sort is stable, so ties keep the earliest (min) and the latest (max) point.
        order = np.lexsort((y, b))
        imin, imax = order[starts], order[ends - 1]
        ifirst, ilast = starts, ends - 1

        fresh = ~self._used[ub]
        nb, ob = ub[fresh], ub[~fresh]
        if len(nb):
            f = fresh
            self._fx[nb], self._fy[nb] = x[ifirst[f]], y[ifirst[f]]
            self._lx[nb], self._ly[nb] = x[ilast[f]], y[ilast[f]]
            self._nx[nb], self._ny[nb] = x[imin[f]], y[imin[f]]
            self._mx[nb], self._my[nb] = x[imax[f]], y[imax[f]]
            self._used[nb] = True
        if len(ob):  # a bucket continued from the previous chunk
            o = ~fresh
            self._lx[ob], self._ly[ob] = x[ilast[o]], y[ilast[o]]
            lower = y[imin[o]] < self._ny[ob]
            self._nx[ob] = np.where(lower, x[imin[o]], self._nx[ob])
            self._ny[ob] = np.where(lower, y[imin[o]], self._ny[ob])
            higher = y[imax[o]] >= self._my[ob]
            self._mx[ob] = np.where(higher, x[imax[o]], self._mx[ob])
            self._my[ob] = np.where(higher, y[imax[o]], self._my[ob])
        self.count += len(x)
        self.last_x, self.last_value = float(x[-1]), float(y[-1])

    def _coarsen(self) -> None:
        """Double the bucket width: merge buckets 2i and 2i+1 into bucket i."""
        half = self.buckets // 2
        used = self._used.reshape(half, 2)
        left, right = used[:, 0], used[:, 1]

        def pair(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            p = a.reshape(half, 2)
            return p[:, 0], p[:, 1]

        fx0, fx1 = pair(self._fx)
        fy0, fy1 = pair(self._fy)
        lx0, lx1 = pair(self._lx)
        ly0, ly1 = pair(self._ly)
        nx0, nx1 = pair(self._nx)
        ny0, ny1 = pair(self._ny)
        mx0, mx1 = pair(self._mx)
        my0, my1 = pair(self._my)
        take_left_min = left & (~right | (ny0 <= ny1))
        take_right_max = right & (~left | (my1 >= my0))
        merged = {
            "_fx": np.where(left, fx0, fx1), "_fy": np.where(left, fy0, fy1),
            "_lx": np.where(right, lx1, lx0), "_ly": np.where(right, ly1, ly0),
            "_nx": np.where(take_left_min, nx0, nx1), "_ny": np.where(take_left_min, ny0, ny1),
            "_mx": np.where(take_right_max, mx1, mx0), "_my": np.where(take_right_max, my1, my0),
        }
        for name, values in merged.items():
            array = getattr(self, name)
            array[:half] = values
            array[half:] = 0.0
        self._used[:half] = left | right
        self._used[half:] = False
        self.width *= 2

    # ------------------------------------------------------------------ reading

    def points(self) -> tuple[np.ndarray, np.ndarray]:
        """The envelope: every bucket's first, min, max and last point, sorted by x, unique."""
        u = self._used
        x = np.concatenate([self._fx[u], self._nx[u], self._mx[u], self._lx[u]])
        y = np.concatenate([self._fy[u], self._ny[u], self._my[u], self._ly[u]])
        xs, first = np.unique(x, return_index=True)
        return xs, y[first]

    def sample(self) -> np.ndarray:
        """First value of every bucket: all values while ``width`` is 1, else every ~width-th."""
        return self._fy[self._used].copy()

    def downsample(self, n_out: int) -> tuple[np.ndarray, np.ndarray]:
        """LTTB of the envelope to at most ``n_out`` points (x as int64 steps)."""
        x, y = self.points()
        if len(x) == 0:
            return np.zeros(0, dtype=np.int64), np.zeros(0)
        if len(x) <= n_out:
            return x.astype(np.int64), y
        idx = lttb_indices(x, y, n_out)
        return x[idx].astype(np.int64), y[idx]


def drop_repeats(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Keep the first and last point of every run of equal consecutive values.

    A line through the kept points is the same line: the dropped points lie on the flat
    segment between the two ends of their run. Rollout-level metrics repeat one value on every
    update of a rollout, and a constant metric shrinks to its two ends.
    """
    x, y = np.asarray(x), np.asarray(y)
    if len(y) <= 2:
        return x, y
    same_as_previous = np.r_[False, y[1:] == y[:-1]]
    same_as_next = np.r_[y[:-1] == y[1:], False]
    keep = ~(same_as_previous & same_as_next)
    return x[keep], y[keep]


class StrideSample:
    """Every ``stride``-th item of an increasing stream of integers, in at most ``capacity``.

    While fewer than ``capacity`` items have arrived, all are kept. When the sample is full,
    every other kept item is dropped and the stride doubles, so the result stays evenly spread
    over the whole stream (the first item is always kept). ``total`` counts every item seen.
    """

    def __init__(self, capacity: int = 1024):
        if capacity < 2:
            raise ValueError(f"capacity must be at least 2 (got {capacity})")
        self.capacity = capacity
        self.stride = 1
        self.total = 0
        self._items: list[int] = []

    def add(self, item: int) -> None:
        if self.total % self.stride == 0:
            self._items.append(int(item))
            if len(self._items) > self.capacity:
                self._items = self._items[::2]
                self.stride *= 2
        self.total += 1

    def items(self) -> list[int]:
        return list(self._items)


def quantile_bounds(values: np.ndarray, lower: float = 0.01, upper: float = 0.99) -> tuple[float, float]:
    """The ``lower`` and ``upper`` quantiles of the finite ``values`` (linear interpolation).

    The robust scale of the explorer maps this range onto a ring, so one outlier cannot flatten
    it. Raises ValueError when there is no finite value.
    """
    v = np.asarray(values, dtype=np.float64)
    v = v[np.isfinite(v)]
    if len(v) == 0:
        raise ValueError("no finite values")
    lo, hi = np.quantile(v, [lower, upper])
    return float(lo), float(hi)
