"""How the Step Inspector colours tokens: one scale per quantity, fitted to the step's data.

A quantity is *signed* (the token objective, the advantage, the log of the importance ratio:
the sign is the message) or *one-signed* (entropy, probability, a KL estimate that is never
negative). Signed quantities get the palette's diverging scale centred on zero and symmetric
(the same colour strength for the same size either way); one-signed ones get the sequential
scale from the step's smallest to its largest value. A KL estimator that can be negative (k1)
is drawn diverging on a step where it is.

Legends show the data's range: a diverging legend whose values are all positive shows only the
green half, never a pink half no token has. Any nonzero value is drawn at least at
:data:`MIN_TINT` of the scale, so a tiny value stays distinguishable from an exact zero and from
the group's background; exact zeros take the scale's neutral centre.

Dark pages use the palette's dark ramps (neutral dark centre, bright ends), so near-zero tokens
are not white strips on a dark page.

Where the scale is drawn (issue 31, "one view, one rendering"): in the browser only.
``unipo_build/site/views/inspector/token-scale.js`` (``scaleFor``, ``colourOf``, ``legendStops``,
``chartScale``) colours every token and legend of the Step Inspector, and fits the objective
playground's heat map each time it is drawn (playgrounds.js ``fitColours``, on every draw and
colour-scheme change). The build draws no token: the inspector's page holds data, not coloured
text. This module stays in Python for what is not drawing:

- the definitions the browser is sent as data: :data:`QUANTITIES` (what each colouring means and
  how it is computed) and :data:`MIN_TINT`, in every inspector's data (inspector.py);
- the reference the browser's port is tested against, with hand-worked numbers
  (tests/test_token_scale.py) and on real token files (tests/browser/test_inspector.py,
  test_reader.py and test_playgrounds.py compare the colours the browser drew with these functions).

The playground's heat-map fit (``chartScale``) has no Python side: the spec the build writes
carries an unfitted scale (playgrounds/charts.py ``UNFITTED_SCALE``) and tests/test_token_scale.py
checks the browser's fit with hand-worked numbers under node.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable, Sequence

from unipo_build.site.palette import (
    DIVERGING,
    DIVERGING_DARK,
    SEQUENTIAL,
    SEQUENTIAL_DARK,
    TOKEN_DIVERGING,
    TOKEN_DIVERGING_DARK,
    TOKEN_SEQUENTIAL,
    TOKEN_SEQUENTIAL_DARK,
)

#: Nonzero values are drawn at least this far from the scale's neutral end (fraction of the ramp).
MIN_TINT = 0.15


@dataclass(frozen=True)
class Quantity:
    key: str  # the quantity's name in the browser (and its TokenArrays field, but for prob)
    label: str
    kind: str  # "signed" | "one-signed"
    description: str
    source: str  # the TokenArrays field it is computed from
    transform: str = ""  # "log" (coloured by log: the ratio), "exp" (probability from logp)


QUANTITIES: tuple[Quantity, ...] = (
    Quantity("objective", "Token objective", "signed",
             "What this token adds to the objective before aggregation: green tokens are made more likely by "
             "the update, pink ones less likely.", "objective"),
    Quantity("advantage", "Advantage", "signed", "How much better than expected the response (or token) did.",
             "advantage"),
    Quantity("ratio", "Importance ratio", "signed",
             "Probability now over probability when sampled. Coloured by its logarithm: 1 is neutral, green "
             "above, pink below, and \u00d72 is as strong as \u00f72.", "ratio", "log"),
    Quantity("kl", "KL to reference", "one-signed",
             "The per-token KL estimate the objective or the reward used (darker: further from the reference "
             "model).", "kl"),
    Quantity("entropy", "Entropy", "one-signed",
             "Entropy of the policy's distribution at this position, in nats (darker: less certain).", "entropy"),
    Quantity("prob", "Probability", "one-signed",
             "The policy's probability of this token, \u03c0\u03b8(token) (darker: more likely).", "logp", "exp"),
)
QUANTITY_KEYS = tuple(q.key for q in QUANTITIES)
DEFAULT_QUANTITY = "objective"


def quantity(key: str) -> Quantity:
    for q in QUANTITIES:
        if q.key == key:
            return q
    raise KeyError(f"no token quantity {key!r} (known: {', '.join(QUANTITY_KEYS)})")


def coloured_value(q: Quantity, value: float) -> float:
    """The number the scale colours: log for the ratio, exp(logp) for the probability."""
    if q.transform == "log":
        return math.log(value) if value > 0 else -math.inf
    if q.transform == "exp":
        return math.exp(value)
    return value


@dataclass(frozen=True)
class Scale:
    kind: str  # "diverging" | "sequential"
    lo: float  # the data's smallest coloured value
    hi: float  # the data's largest
    half: float  # diverging: the largest |value| (the scale is symmetric); sequential: hi - lo

    @property
    def empty(self) -> bool:
        return self.half == 0


def scale_for(q: Quantity, values: Iterable[float]) -> Scale:
    """The scale of quantity ``q`` for these (coloured) values of a step's tokens."""
    finite = [v for v in values if math.isfinite(v)]
    if not finite:
        return Scale("diverging" if q.kind == "signed" else "sequential", 0.0, 0.0, 0.0)
    lo, hi = min(finite), max(finite)
    if q.kind == "signed" or (lo < 0 < hi):
        return Scale("diverging", lo, hi, max(abs(lo), abs(hi)))
    return Scale("sequential", lo, hi, hi - lo)


def position(scale: Scale, value: float, min_tint: float = MIN_TINT) -> float:
    """Where ``value`` sits on the ramp: -1..1 (diverging, 0 neutral) or 0..1 (sequential)."""
    if scale.kind == "diverging":
        if value == 0 or scale.half == 0 or math.isnan(value):
            return 0.0
        t = max(-1.0, min(1.0, value / scale.half))
        return math.copysign(max(abs(t), min_tint), t)
    if scale.half == 0:
        return 1.0 if scale.hi != 0 else 0.0  # one value on the whole step: drawn full (0 stays neutral)
    u = max(0.0, min(1.0, (value - scale.lo) / scale.half))
    return min_tint + (1.0 - min_tint) * u


def _rgb(colour: str) -> tuple[int, int, int]:
    return int(colour[1:3], 16), int(colour[3:5], 16), int(colour[5:7], 16)


def ramp_colour(anchors: Sequence[str], u: float) -> str:
    """Piecewise-linear RGB between ``anchors`` at ``u`` in 0..1 (rounded half up)."""
    u = max(0.0, min(1.0, u))
    at = u * (len(anchors) - 1)
    lo = min(int(math.floor(at)), len(anchors) - 2)
    frac = at - lo
    a, b = _rgb(anchors[lo]), _rgb(anchors[lo + 1])
    return "#%02x%02x%02x" % tuple(int(math.floor(x + (y - x) * frac + 0.5)) for x, y in zip(a, b))


def ramps(dark: bool, tokens: bool = True) -> tuple[Sequence[str], Sequence[str]]:
    """(diverging, sequential) anchors for the page's scheme: the token ramps (the page's text
    colour reads on every one: palette.text_safe), or with ``tokens=False`` the whole ramps (a
    chart's surface, which carries no text)."""
    if tokens:
        return (TOKEN_DIVERGING_DARK, TOKEN_SEQUENTIAL_DARK) if dark else (TOKEN_DIVERGING, TOKEN_SEQUENTIAL)
    return (DIVERGING_DARK, SEQUENTIAL_DARK) if dark else (DIVERGING, SEQUENTIAL)


def colour(scale: Scale, value: float, dark: bool = False, min_tint: float = MIN_TINT, tokens: bool = True) -> str:
    diverging, sequential = ramps(dark, tokens)
    t = position(scale, value, min_tint)
    if scale.kind == "diverging":
        return ramp_colour(diverging, (t + 1.0) / 2.0)
    return ramp_colour(sequential, t)


def relative_luminance(colour_hex: str) -> float:
    """WCAG 2 relative luminance of a #rrggbb colour."""
    def channel(c: int) -> float:
        s = c / 255.0
        return s / 12.92 if s <= 0.04045 else ((s + 0.055) / 1.055) ** 2.4
    r, g, b = (channel(c) for c in _rgb(colour_hex))
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast(a: str, b: str) -> float:
    """WCAG 2 contrast ratio of two #rrggbb colours."""
    la, lb = sorted((relative_luminance(a), relative_luminance(b)), reverse=True)
    return (la + 0.05) / (lb + 0.05)


def text_colour(background: str) -> str:
    """Black or white, whichever has the higher WCAG contrast on ``background``."""
    return "#000000" if contrast(background, "#000000") >= contrast(background, "#ffffff") else "#ffffff"


def legend_stops(scale: Scale, dark: bool = False, n: int = 9) -> list[tuple[float, str]]:
    """The legend's gradient: (value, colour) from the data's smallest value to its largest."""
    if scale.lo == scale.hi:
        return [(scale.lo, colour(scale, scale.lo, dark))]
    return [(v, colour(scale, v, dark)) for v in (scale.lo + (scale.hi - scale.lo) * k / (n - 1) for k in range(n))]
