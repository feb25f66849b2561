"""The Training Explorer's data: a run's metrics downsampled for the rings, and the pure helpers
of the radial chart (ticks, the fisheye's Vega expression, compact encoding). See ``explorer`` for the chart itself.

:func:`collect_series` takes the run's steps from its one reader (``unipo_build.core.reader``) and
downsamples every metric to at most ``n_out`` points (:mod:`unipo_build.core.downsample`: bounded M4
envelope, then LTTB), with the rollout boundaries, min/max and 1st-99th percentiles.

The fisheye is Sarkar and Brown's graphical fisheye (Sarkar & Brown 1992, "Graphical fisheye
views of graphs", CHI, eq. for the distortion function ``G(x) = (d+1)x / (dx+1)``), applied
to the angle on each side of the focus; the first and last step stay at the top. It exists
once as a formula for the chart (:func:`fisheye_expr`, a Vega expression the browser evaluates)
and once for the pointer in explorer.js (its inverse, pointer angle to step); the build
computes no fisheye positions of its own.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np

from unipo_build.core import runlog
from unipo_build.core.cache import Cache
from unipo_build.core.downsample import StreamingEnvelope, StrideSample, drop_repeats, quantile_bounds
from unipo_build.core.numbers import round_sig
from unipo_build.core.reader import StepTable, reader_for
from unipo_build.core.schema import METRICS
from unipo_build.site.palette import role

#: At most this many points per ring (LTTB output).
POINTS_PER_RING = 1000
#: Buckets of the streaming envelope (memory per metric: 8 x this many floats).
ENVELOPE_BUCKETS = 2048
#: Step records parsed before their metrics are handed to the envelopes as arrays.
CHUNK = 4096
#: Rollout boundaries and logged steps embedded at most (evenly thinned beyond).
MAX_BOUNDARIES = 1024
MAX_TOKEN_STEPS = 4096
MAX_RINGS = 4
#: Robust scale: the ring spans these quantiles, widened on each side by ROBUST_MARGIN times
#: their distance (so a steady trend's last 1% is not clipped), never beyond min and max.
#: Values beyond are drawn at the ring's edge and circled.
ROBUST_QUANTILES = (0.01, 0.99)
ROBUST_MARGIN = 0.1
#: The automatic scale draws a ring robust when its robust range is less than this share of its
#: full range: one outlier (a KL spike of 40 over values near 0.05) would flatten the rest.
FLAT_SHARE = 0.25
#: Units of the catalogue's metrics as the ring legend and the read-out print them; a unit
#: starting with "%" means the metric is a fraction, shown as a percentage.
METRIC_UNITS = {
    "kl/mean": "nats per token", "entropy/mean": "nats per token",
    "clip/frac_low": "% of tokens", "clip/frac_high": "% of tokens",
    "length/mean": "tokens", "length/correct": "tokens", "length/incorrect": "tokens",
    "length/truncated_frac": "% of responses", "sampled/length": "tokens", "sampled/tokens": "tokens",
    "accuracy/train": "% of responses", "sampled/accuracy": "% of responses",
    "groups/zero_variance_frac": "% of groups", "groups/all_correct_frac": "% of groups",
    "groups/all_wrong_frac": "% of groups", "sampling/pass_rate": "% of groups",
    "sampling/generated_per_kept": "\u00d7", "sampling/rounds": "rounds",
    "time/wall_s": "s", "time/rollout_s": "s", "time/update_s": "s",
}
#: Default rings, outermost first; the third is KL when the run has it, else clipping.
DEFAULT_METRICS = ("reward/mean", "length/mean", ("kl/mean", "clip/frac_high"), "entropy/mean")
#: Magnification steps offered by the slider (1 = no distortion).
MAGNIFICATIONS = (1, 2, 4, 8, 16)

# Geometry, in the units of the square x/y scales: rings fill radii R_IN..R_OUT, step labels
# sit just outside, the domain leaves room for them.
R_IN, R_OUT, R_LABEL, DOMAIN = 0.36, 1.0, 1.14, 1.27
RING_GAP = 0.22  # fraction of a ring's band left empty between neighbouring rings

#: Ring colours in the chart's spec: neutral. The page's CSS draws each ring in its metric's
#: colour (--unipo-metric-<name> of the palette, set per ring by explorer.js), in either scheme.
RING_COLOURS = tuple(role("neutral") for _ in range(MAX_RINGS))


# ---------------------------------------------------------------------------
# Reading a run: one streaming pass
# ---------------------------------------------------------------------------

@dataclass
class MetricSeries:
    """One metric of a run, downsampled for a ring (runs of equal values kept as their ends)."""

    name: str
    steps: np.ndarray  # int64, increasing
    values: np.ndarray  # float64, same length
    logged: int  # steps where the metric is not null
    exact: bool  # no LTTB: every step's value is a kept point or inside a run of equal ones
    last: float  # the last logged value
    low: float  # min over every logged step
    high: float  # max over every logged step
    q_low: float  # robust range (ROBUST_QUANTILES), estimated from a systematic sample
    q_high: float


@dataclass
class RunSeries:
    """What the explorer draws of a run, independent of which metrics are shown."""

    first_step: int
    last_step: int
    n_steps: int
    metrics: dict[str, MetricSeries]  # catalogue order, then unknown metrics by name
    boundaries: list[int]  # rollout starts (evenly thinned to MAX_BOUNDARIES)
    boundaries_total: int
    boundary_stride: int

    @property
    def span(self) -> int:
        """Steps around the circle: last - first + 1."""
        return self.last_step - self.first_step + 1


def _ordered_names(names: Iterable[str]) -> list[str]:
    names = set(names)
    return [m for m in METRICS if m in names] + sorted(n for n in names if n not in METRICS)


def series_from_table(table: StepTable, n_out: int = POINTS_PER_RING, buckets: int = ENVELOPE_BUCKETS,
                      chunk: int = CHUNK) -> RunSeries:
    """Every metric of a parsed steps.jsonl downsampled to at most ``n_out`` points (bounded
    envelope, then LTTB), with the rollout boundaries, min/max and robust range."""
    if table.n == 0:
        raise runlog.LogError(runlog.STEPS, "no steps logged yet")
    boundaries = StrideSample(MAX_BOUNDARIES)
    for step in table.rollout_starts().tolist():
        boundaries.add(step)
    metrics: dict[str, MetricSeries] = {}
    for name in _ordered_names(table.metrics):
        env = StreamingEnvelope(buckets)
        column = table.metrics[name]
        for start in range(0, table.n, chunk):  # NaN (a null metric) is skipped by the envelope
            env.extend(table.steps[start:start + chunk], column[start:start + chunk])
        if env.count == 0:
            continue  # null at every step
        xs, ys = drop_repeats(*env.downsample(n_out))
        _, all_y = env.points()
        q_low, q_high = robust_range(env.sample(), float(all_y.min()), float(all_y.max()))
        metrics[name] = MetricSeries(
            name=name, steps=xs, values=ys, logged=env.count, exact=env.width == 1 and env.count <= n_out,
            last=float(env.last_value),
            low=float(all_y.min()), high=float(all_y.max()), q_low=q_low, q_high=q_high,
        )
    first, last = int(table.steps[0]), int(table.steps[-1])
    return RunSeries(first_step=first, last_step=last, n_steps=last - first + 1, metrics=metrics,
                     boundaries=boundaries.items(), boundaries_total=boundaries.total,
                     boundary_stride=boundaries.stride)


#: Kept while the run's reader is the same (a new reader when the run's files change).
_SERIES: Cache[RunSeries] = Cache(16)


def collect_series(run_dir: str | Path, *, n_out: int = POINTS_PER_RING, buckets: int = ENVELOPE_BUCKETS,
                   chunk: int = CHUNK) -> RunSeries:
    """Every metric of a run downsampled to at most ``n_out`` points, from the run's one reader
    (steps.jsonl parsed once per build). Raises LogError / LogErrors as ``runlog.iter_steps``."""
    reader = reader_for(run_dir)
    return _SERIES.get((str(reader.path), n_out, buckets, chunk), reader,
                       lambda: series_from_table(reader.table, n_out, buckets, chunk))


# ---------------------------------------------------------------------------
# Pure helpers: metric choice, ticks, fisheye, number formatting
# ---------------------------------------------------------------------------

def default_metrics(available: Sequence[str]) -> list[str]:
    """DEFAULT_METRICS that the run has; filled up from its other metrics to 4 rings at most."""
    chosen: list[str] = []
    for entry in DEFAULT_METRICS:
        options = entry if isinstance(entry, tuple) else (entry,)
        for name in options:
            if name in available and name not in chosen:
                chosen.append(name)
                break
    for name in available:
        if len(chosen) >= min(MAX_RINGS, len(available)) or len(chosen) >= MAX_RINGS:
            break
        if name not in chosen:
            chosen.append(name)
    return chosen[:MAX_RINGS]


def robust_range(values: np.ndarray, low: float, high: float) -> tuple[float, float]:
    """ROBUST_QUANTILES of ``values`` widened by ROBUST_MARGIN, within [low, high]."""
    q_low, q_high = quantile_bounds(values, *ROBUST_QUANTILES)
    margin = ROBUST_MARGIN * (q_high - q_low)
    return max(low, q_low - margin), min(high, q_high + margin)


def nice_step(span: float, target: int) -> int:
    """A step of 1, 2 or 5 x 10^k that cuts ``span`` into about ``target`` parts (at least 1)."""
    if span <= 0 or target <= 0:
        return 1
    raw = span / target
    power = 10 ** math.floor(math.log10(raw)) if raw >= 1 else 1
    for m in (1, 2, 5, 10):
        if m * power >= raw:
            return max(1, int(m * power))
    return max(1, int(10 * power))


def step_ticks(first: int, last: int, targets: Sequence[int] = (8, 40, 200)) -> list[tuple[int, int, int]]:
    """Step labels for the rim: (step, level, spacing of that level), coarsest level first.

    Level 0 is always shown; finer levels appear where the fisheye spreads the steps enough
    for their labels to fit (the browser checks their spacing in pixels).
    """
    span = last - first + 1
    ticks: dict[int, tuple[int, int]] = {first: (0, nice_step(span, targets[0]))}
    for level, target in enumerate(targets):
        spacing = nice_step(span, target)
        start = math.ceil(first / spacing) * spacing
        for s in range(start, last + 1, spacing):
            ticks.setdefault(s, (level, spacing))
        if spacing == 1:
            break
    return sorted((s, lv, sp) for s, (lv, sp) in ticks.items())


def fisheye_expr(u: str, focus: str = "focus", mag: str = "mag") -> str:
    """The fisheye as a Vega expression of the expression ``u`` and two signals: the distorted
    angle fraction of position ``u`` in [0, 1], with ``mag`` = d >= 0 (magnification d + 1).

    Both sides of ``focus`` are stretched with G(x) = (d+1)x/(dx+1), so positions near the focus
    spread ``mag + 1`` times and 0 and 1 stay where they are. This expression is the one that
    draws (Vega evaluates it in the chart's dataflow); the build never evaluates the fisheye
    itself. explorer.js holds the pointer's side of it: ``fisheye`` (a step's angle, where the
    keyboard's tooltip goes) and ``fisheyeInverse`` (a pointer's angle to a step), checked
    against this expression by tests/test_explorer.py and tests/browser/test_explorer_browser.py.
    """

    def g(t: str) -> str:
        return f"(({mag} + 1) * ({t}) / ({mag} * ({t}) + 1))"

    right = f"{focus} + (1 - {focus}) * {g(f'(({u}) - {focus}) / max(1e-9, 1 - {focus})')}"
    left = f"{focus} - {focus} * {g(f'({focus} - ({u})) / max(1e-9, {focus})')}"
    return f"(({u}) >= {focus} ? {right} : {left})"


def outlier_flattens(m: MetricSeries) -> bool:
    """Whether a few outliers squeeze the ring: its robust range is under FLAT_SHARE of its full range."""
    full = m.high - m.low
    return full > 0 and (m.q_high - m.q_low) < FLAT_SHARE * full


def _num(value: float, digits: int = 4) -> float | int:
    """A value rounded to ``digits`` significant digits, as an int when whole (shorter JSON)."""
    rounded = round_sig(value, digits)
    return int(rounded) if rounded.is_integer() and abs(rounded) < 1e15 else rounded


def encode_values(values: np.ndarray, q_low: float, q_high: float, digits: int = 4) -> dict:
    """Values as integers times a power of ten: ``{"e": e, "v": [k, ...]}``, value = k * 10**e.

    ``e`` gives ``digits`` significant digits to the largest magnitude of the robust range, so
    typical values cost 4 or 5 characters of JSON instead of 8 or 9 as decimals; an outlier far
    beyond the range keeps its size with more digits. The error is at most half a unit of the
    4th digit of that magnitude: invisible on a ring, and below the 3 digits a read-out shows.
    """
    magnitude = max(abs(q_low), abs(q_high))
    if magnitude == 0 or not math.isfinite(magnitude):
        magnitude = float(np.max(np.abs(values))) if len(values) else 0.0
    e = math.floor(math.log10(magnitude)) - (digits - 1) if magnitude > 0 else 0
    return {"e": e, "v": [int(k) for k in np.rint(np.asarray(values, dtype=np.float64) / 10.0 ** e)]}


def _deltas(steps: Iterable[int]) -> list[int]:
    """Steps as the first value and then differences (small numbers, short JSON)."""
    out, previous = [], 0
    for s in steps:
        out.append(int(s) - previous)
        previous = int(s)
    return out
