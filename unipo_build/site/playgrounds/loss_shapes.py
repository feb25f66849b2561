"""Playground 3: a gallery of per-token loss shapes and aggregation weights.

Everything here is computed by ``unipo_build.core.components``, the functions the trainer
builds its loss from, on grids fixed at build time; Vega-Lite parameters pick the rows
for the reader's slider values. Nothing is simulated in the browser, because the controls
are few and one-dimensional:

- the objective of one token as a function of its ratio rho (x axis), for A = +1 and
  A = -1. For A > 0 only the upper clip can act and for A < 0 only the lower one
  (``clipped_surrogate``), so DAPO's curve for A > 0 is the symmetric curve at eps_high
  and for A < 0 the one at eps_low: one table over eps serves PPO, GRPO, Dr. GRPO and
  both DAPO sliders (tested);
- the weight each token of a response gets in the step objective as a function of that
  response's length, for the four aggregations of ``aggregation_weights``.

Sources: PPO (arXiv 1707.06347), GRPO (arXiv 2402.03300), DAPO (arXiv 2503.14476),
Dr. GRPO (arXiv 2503.20783), GSPO (arXiv 2507.18071).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from unipo_build.core.numbers import plain_num, round_sig
from unipo_build.core.components import clipped_surrogate
from unipo_build.core.objective import aggregation_weights
from unipo_build.core.registry import REGISTRY

RATIO_STEP = 0.02
RATIO_GRID = np.round(np.arange(1, 101) * RATIO_STEP, 6)  # 0.02 .. 2.0; see curve_grid
EPS_CHOICES = tuple(round(0.02 * k, 2) for k in range(1, 26))  # 0.02 .. 0.5, incl. 0.2 and 0.28
DEFAULT_EPS = 0.2
DAPO_DEFAULT = (0.2, 0.28)  # eps_low, eps_high: DAPO's recipe
GSPO_EPS = (3e-4, 4e-4)  # GSPO's paper values (sequence ratio, so far tighter)


@dataclass(frozen=True)
class ShapeMethod:
    key: str
    label: str
    clip: str  # "none" | "symmetric" | "asymmetric" | "sequence"
    note: str


SHAPE_METHODS = (
    ShapeMethod("reinforce", "REINFORCE", "none", "no clip: the slope is A at every ratio"),
    ShapeMethod("grpo", "PPO / GRPO", "symmetric", "clip(ρ, 1 − ε, 1 + ε)"),
    ShapeMethod("dapo", "DAPO", "asymmetric", "clip(ρ, 1 − ε_low, 1 + ε_high)"),
    ShapeMethod("dr_grpo", "Dr. GRPO", "symmetric", "GRPO's clip; differs in A and in the weights"),
    ShapeMethod("gspo", "GSPO", "sequence",
                f"one clipped ratio per response, range 1 − {plain_num(GSPO_EPS[0])} to 1 + {plain_num(GSPO_EPS[1])}"),
)


def surrogate_curve(ratio, advantage: float, eps_low, eps_high):
    """(objective, clip side) of one token over ``ratio``, by ``clipped_surrogate``."""
    adv = np.full_like(np.asarray(ratio, dtype=np.float64), advantage)
    objective, side = clipped_surrogate(np.asarray(ratio, dtype=np.float64), adv, eps_low, eps_high)
    return np.asarray(objective), np.asarray(side)


def flat_zones(ratio, side) -> list[tuple[float, float, int]]:
    """Intervals of ``ratio`` on which the objective is flat (zero gradient), with the side.

    An upper-clip run (side +1) starts at the breakpoint 1 + eps_high (the last unclipped
    grid point) and runs to the end of the grid; a lower-clip run (side -1) starts at the
    grid's first point and ends at the breakpoint 1 - eps_low.
    """
    ratio = np.asarray(ratio)
    side = np.asarray(side)
    zones = []
    i = 0
    while i < len(side):
        if side[i] == 0:
            i += 1
            continue
        j = i
        while j + 1 < len(side) and side[j + 1] == side[i]:
            j += 1
        # the upper clip's run starts at its breakpoint, the lower clip's ends at its own
        start = ratio[i - 1] if (side[i] == 1 and i > 0) else ratio[i]
        end = ratio[j + 1] if (side[i] == -1 and j + 1 < len(side)) else ratio[j]
        zones.append((float(start), float(end), int(side[i])))
        i = j + 1
    return zones


def curve_grid(eps_low: float | None = None, eps_high: float | None = None) -> np.ndarray:
    """RATIO_GRID with the clip boundaries 1 - eps_low and 1 + eps_high on it, as floats.

    ``1 - 0.42`` is 0.5800000000000001 in floating point, not the grid's 0.58, and the clip
    compares against the former: a grid point that close to a boundary is moved onto it
    (others are added), so every flat region starts exactly where the clip does.
    """
    grid = RATIO_GRID.copy()
    extra = []
    for boundary in ([] if eps_low is None else [1.0 - eps_low]) + ([] if eps_high is None else [1.0 + eps_high]):
        nearest = int(np.argmin(np.abs(grid - boundary)))
        if abs(grid[nearest] - boundary) < 1e-9:
            grid[nearest] = boundary
        else:
            extra.append(boundary)
    return np.sort(np.concatenate([grid, extra]))


def shape_rows() -> list[dict]:
    """The gallery's data: curve rows and flat-zone rows, compact keys for the page.

    Curve rows: m (method table: "clip" for the eps-dependent family, "none", "gspo"),
    e (eps; 0 where none), s (sign of A), r (ratio), j (objective), c (clip side).
    Zone rows: k = "zone", m, e, s, r (start), r2 (end), c.
    """
    rows: list[dict] = []

    def add(table: str, eps: float, sign: int, ratio, objective, side):
        for r, j, c in zip(ratio, objective, side):
            rows.append({"m": table, "e": eps, "s": sign, "r": float(r), "j": float(j), "c": int(c)})
        for start, end, c in flat_zones(ratio, side):
            rows.append({"k": "zone", "m": table, "e": eps, "s": sign, "r": start, "r2": end, "c": c})

    for sign in (1, -1):
        obj, side = surrogate_curve(RATIO_GRID, float(sign), None, None)
        add("none", 0.0, sign, RATIO_GRID, obj, side)
        for eps in EPS_CHOICES:
            grid = curve_grid(eps, eps)
            obj, side = surrogate_curve(grid, float(sign), eps, eps)
            add("clip", eps, sign, grid, obj, side)
        grid = curve_grid(*GSPO_EPS)
        obj, side = surrogate_curve(grid, float(sign), *GSPO_EPS)
        add("gspo", 0.0, sign, grid, obj, side)
    for row in rows:
        row.setdefault("k", "curve")
    return rows


# ---------------------------------------------------------------------------
# Aggregation weights
# ---------------------------------------------------------------------------

#: The aggregation kinds the playground draws, in the registry's order, with their legend: each kind's own
#: playground words (core/kinds_playground.py).
AGGREGATION_LABELS = {name: k.words["playground_label"]() for name, k in REGISTRY["aggregation"].items()
                      if "playground_label" in k.words}
GROUP_SIZE = 4  # one response whose length varies + three others of a common length
MAX_LENGTH = 1024  # Dr. GRPO's constant L: the generation budget
LENGTH_GRID = tuple(int(round(x)) for x in np.geomspace(8, MAX_LENGTH, 22))
OTHER_LENGTHS = (16, 32, 64, 128, 256, 512, 1024)
DEFAULT_OTHER_LENGTH = 128


def aggregation_row(kind: str, length: int, others: int) -> tuple[float, float]:
    """(weight of one token of the varying response, that response's share of the total).

    The group: the varying response (``length`` tokens) and ``GROUP_SIZE - 1`` responses
    of ``others`` tokens; weights from ``aggregation_weights`` on the padded mask.
    """
    lengths = np.array([length] + [others] * (GROUP_SIZE - 1))
    mask = (np.arange(lengths.max())[None, :] < lengths[:, None]).astype(np.float64)
    weights = aggregation_weights(kind, mask, MAX_LENGTH)  # L: a kind without a constant ignores it
    per_response = weights.sum(axis=-1)
    return float(weights[0, 0]), float(per_response[0] / per_response.sum())


def aggregation_rows() -> list[dict]:
    rows = []
    for kind in AGGREGATION_LABELS:
        for others in OTHER_LENGTHS:
            for length in LENGTH_GRID:
                weight, share = aggregation_row(kind, length, others)
                rows.append({"a": kind, "o": others, "l": length,
                             "w": round_sig(weight, 6), "sh": round(share, 6)})
    return rows
