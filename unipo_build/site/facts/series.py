"""A run's metrics as the figures draw them: smoothed and downsampled, from the run's one reader.

Every series comes from the run's :class:`unipo_build.core.reader.StepTable` (steps.jsonl parsed once
per build). Rollout-level metrics (``schema.metric_info(name).scope == "rollout"``) keep one point
per rollout, placed at rollout / last rollout; the others one per update, at step / last step.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from unipo_build.core.numbers import round_sig
from unipo_build.core.downsample import lttb_indices, quantile_bounds
from unipo_build.core.runs import Run
from unipo_build.core.schema import metric_info

#: Points kept per run and metric after LTTB.
POINTS_PER_LINE = 150
#: Moving-average window as a fraction of the run's points.
SMOOTH_FRACTION = 0.05


def absent_reason(run, metric: str) -> str:
    """Why a run logs no ``metric``, when its objective says why (" (no clipping)"), else ""."""
    cfg = run.config
    if cfg is None:
        return ""
    if metric == "kl/mean" and cfg.component("kl").is_none:
        return " (no KL term, no reference model)"
    if metric in ("clip/frac_high", "clip/frac_low") and cfg.component("clip").is_none:
        return " (no clipping)"
    return ""


def moving_average(values: np.ndarray, window: int) -> np.ndarray:
    """Centred moving average; near the ends the window shrinks to the points there are."""
    values = np.asarray(values, dtype=np.float64)
    if window <= 1 or len(values) < 3:
        return values.copy()
    half = window // 2
    csum = np.concatenate([[0.0], np.cumsum(values)])
    idx = np.arange(len(values))
    lo = np.clip(idx - half, 0, len(values))
    hi = np.clip(idx + half + 1, 0, len(values))
    return (csum[hi] - csum[lo]) / (hi - lo)


@dataclass
class Series:
    steps: np.ndarray  # the update of each point (a rollout-level point: its rollout's first update)
    values: np.ndarray
    fraction: np.ndarray  # position in the run, 0 to 1: updates done, or rollouts done for rollout-level metrics
    window: int  # points averaged (rollouts for rollout metrics, updates otherwise)
    outlier: tuple[int, float] | None = None  # (update, value) of a raw point far outside the clipped range


def raw_series(run: Run, name: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(steps, values, fraction of the run) of one metric, unsmoothed (see the module docstring)."""
    table = run.reader.table
    rollout_level = metric_info(name).scope == "rollout"
    steps, values = table.series(name, first_in_rollout=rollout_level)
    progress = run.progress()  # a run still training ends where it has got to, not at 1
    if rollout_level:
        index = np.searchsorted(table.steps, steps)
        positions = table.rollouts[index].astype(np.float64)
        span = max(1, int(table.rollouts[-1])) if table.n else 1
        if progress is not None:
            span = max(1, progress[1] - 1)
    else:
        positions = steps.astype(np.float64)
        span = max(1, int(table.steps[-1])) if table.n else 1
        per_rollout = run.header.steps_per_rollout if run.header is not None else None
        if progress is not None and per_rollout:
            span = max(1, progress[1] * per_rollout - 1)
    return steps, values, positions / span


def logged_values(run: Run, name: str, later_updates: bool = False) -> np.ndarray:
    """A metric's logged values over the run, in order (:func:`raw_series`); ``later_updates``:
    every update's but the first of each rollout (whose ratios are all 1)."""
    if later_updates:
        table = run.reader.table
        values = table.column(name)[~table.first_in_rollout]
        return values[~np.isnan(values)]
    return raw_series(run, name)[1]


def mean_se(values: np.ndarray) -> tuple[float, float | None]:
    """The mean of a run's values and its standard error, the points taken as independent (None
    from a single point)."""
    se = float(np.std(values, ddof=1) / math.sqrt(len(values))) if len(values) >= 2 else None
    return float(np.mean(values)), se


def smoothed_series(run: Run, name: str, smooth: float = SMOOTH_FRACTION) -> Series | None:
    """One metric at every logged point, smoothed (centred moving average over ``smooth`` of its
    points, of values clipped to their 0.5th-99.5th percentiles); None when the run does not log it."""
    x, y, frac = raw_series(run, name)
    if len(x) == 0:
        return None
    window = max(1, int(round(len(y) * smooth)))
    # Average values clipped to their 0.5th-99.5th percentiles, so one extreme update shows as
    # itself (reported as an outlier) rather than as a plateau as wide as the window.
    lo, hi = np.quantile(y, [0.005, 0.995]) if len(y) >= 50 else (y.min(), y.max())
    outlier = None
    far = np.abs(y - np.clip(y, lo, hi)) > max(hi - lo, 1e-12)
    if far.any():
        i = int(np.argmax(np.abs(y - np.clip(y, lo, hi))))
        outlier = (int(x[i]), float(y[i]))
    return Series(np.asarray(x), moving_average(np.clip(y, lo, hi), window), np.asarray(frac), window, outlier)


def run_series(run: Run, names: Sequence[str], points: int = POINTS_PER_LINE,
               smooth: float = SMOOTH_FRACTION) -> dict[str, Series | None]:
    """Each metric smoothed (:func:`smoothed_series`) and reduced to at most ``points`` points
    with LTTB; None for a metric the run does not log."""
    out: dict[str, Series | None] = {}
    for n in names:
        s = smoothed_series(run, n, smooth)
        if s is not None and len(s.steps) > points:
            keep = lttb_indices(s.steps, s.values, points)
            s = Series(s.steps[keep], s.values[keep], s.fraction[keep], s.window, s.outlier)
        out[n] = s
    return out


def edge_means(values: np.ndarray, fraction: float = 0.1) -> tuple[float, float] | None:
    """Mean of the first and of the last ``fraction`` of the points (None without points)."""
    if len(values) == 0:
        return None
    k = max(1, int(round(len(values) * fraction)))
    return float(np.mean(values[:k])), float(np.mean(values[-k:]))


def round_to(value: float, digits: int = 4) -> float:
    """A chart value rounded to ``digits`` significant digits (smaller pages)."""
    if value == 0 or not math.isfinite(value):
        return 0.0
    return round_sig(value, digits)


def robust_domain(values: Sequence[float]) -> tuple[float, float] | None:
    """A y range that a lone spike does not flatten: the 1st to 99th percentile, padded, when the
    extremes lie far outside it; None (the scale's own range) otherwise."""
    y = np.asarray(values, dtype=np.float64)
    if len(y) < 20:
        return None
    lo, hi = quantile_bounds(y, 0.01, 0.99)
    span = hi - lo
    if span <= 0 or (y.max() <= hi + 0.5 * span and y.min() >= lo - 0.5 * span):
        return None
    pad = 0.08 * span
    return float(lo - pad), float(hi + pad)
