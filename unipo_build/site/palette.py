"""The site's one palette: every colour a page uses, defined once.

- Algorithms, keyed by algorithm id (the spec id, as in run headers): one colour per algorithm
  on every page, light and dark (Okabe-Ito and Paul Tol hues, told apart with the common
  colour-vision deficiencies and readable on Material's light and slate schemes). A reader's own
  algorithm without a colour here takes :data:`EXTRA` in order of appearance.
- Metrics, keyed by the catalogue's names (``schema.METRICS``): one colour per metric on every ring
  of every page (:data:`METRIC_COLOURS`, :func:`metric_colour`), from a set of dark, muted
  colours a reader does not mistake for an algorithm's (a bright Okabe-Ito or Tol hue): indigo for
  rewards, browns for lengths, crimson for the KL, forest green for entropy, greys for clipping.
- Roles that are not algorithms: the diff statuses, categorical series of a figure, the KL
  estimators, each with a light and a dark value where they differ.
- Names: every colour has the name a caption uses for it (:func:`colour_name`), so a caption
  says the colour the figure draws.
- The token scales: diverging (ColorBrewer PiYG: pink negative, neutral zero, green positive) and
  sequential (ColorBrewer Blues), each with a ramp for dark pages.

The hook writes it as CSS custom properties (``assets/palette.css``, :func:`css`) and as JSON for
the browser's charts (``assets/palette.json``, :func:`as_json`); the Python figures read it
directly. Nothing else in the project spells a colour of these.
"""

from __future__ import annotations

import json

#: One colour per algorithm id, the same in light and dark.
# kind name: keyed by algorithm (spec) ids, not kinds; cispo, dual_clip and sapo are also their clip kinds' names
ALGORITHMS: dict[str, str] = {
    "reinforce": "#E69F00",  # Okabe-Ito orange
    "ppo": "#56B4E9",  # sky blue
    "grpo": "#009E73",  # bluish green
    "dapo": "#AA3377",  # Tol purple
    "dr_grpo": "#999933",  # Tol olive
    "gspo": "#EE6677",  # Tol red
    "dapo_dr": "#0072B2",  # Okabe-Ito blue
    "dual_clip": "#661100",  # Tol dark red
    "cispo": "#332288",  # Tol indigo
    "sapo": "#44AA99",  # Tol teal
    "grpo_tis": "#225522",  # Tol dark green: GRPO with a correction, beside its bluish green
    "grpo_mis": "#882255",  # Tol wine: the masking correction, apart from the truncating one's green
    "grpo_mis_seq": "#EE3377",  # Tol magenta: masking by the whole response, a lighter kin of the token test's wine
    "gmpo": "#CC6677",  # Tol rose: drawn beside GRPO and SAPO on the chapter of three changes to GRPO
    "grpo_batch_std": "#4477AA",  # Tol blue: GRPO's advantage changed, a hue apart from GRPO's green
    # Methods of the playgrounds that are not specs of the course.
    "dpo": "#D55E00",  # vermillion
    "dro": "#CC79A7",  # reddish purple
    "gdpo": "#7B61FF",  # violet: drawn beside GRPO's bluish green, so no green of its own
}
#: Algorithms without a colour above take these, in order of appearance.
EXTRA = ("#882255", "#117733", "#DDCC77", "#88CCEE")

#: The metrics' colours, (light, dark) per name: dark and muted on light pages, light on dark ones.
METRIC_PALETTE: dict[str, tuple[str, str]] = {
    "indigo": ("#5E3C99", "#B9A7E0"),
    "brown": ("#8C510A", "#D9B273"),
    "forest": ("#2D5016", "#B5D99C"),
    "crimson": ("#A50F15", "#F4A0A0"),
    "navy": ("#1F2A56", "#A9B8F0"),
    "grey": ("#4D4D4D", "#BDBDBD"),
    "petrol": ("#03464C", "#6FE0D8"),
    "plum": ("#5C1A45", "#E0A8D0"),
}
#: Each catalogue metric's colour (a name of METRIC_PALETTE); metrics a chapter draws together
#: differ (tests/test_palette.py checks every chapter's rings).
METRIC_COLOURS: dict[str, str] = {
    "reward/mean": "indigo", "reward/std": "plum", "reward/correct": "indigo", "reward/format": "plum",
    "reward/shaping": "brown", "accuracy/train": "indigo", "sampled/reward": "indigo", "sampled/accuracy": "indigo",
    "objective": "grey", "loss/policy": "grey", "loss/value": "petrol", "value/explained_variance": "grey",
    "kl/mean": "crimson", "entropy/mean": "forest",
    "clip/frac_high": "grey", "clip/frac_low": "petrol", "ratio/min": "petrol", "ratio/mean": "grey", "ratio/max": "grey",
    "mismatch/logp_abs_mean": "navy", "mismatch/logp_abs_max": "grey", "mismatch/tis_mean": "plum",
    "mismatch/tis_min": "petrol", "mismatch/tis_below_1_frac": "brown",
    "length/mean": "brown", "length/correct": "forest", "length/incorrect": "brown", "length/truncated_frac": "brown",
    "sampled/length": "brown", "sampled/tokens": "brown",
    "grad_norm": "grey", "lr": "petrol", "update/skipped": "crimson",
    "groups/zero_variance_frac": "petrol", "groups/all_correct_frac": "forest", "groups/all_wrong_frac": "crimson",
    "sampling/generated_per_kept": "plum", "sampling/pass_rate": "petrol", "sampling/rounds": "grey",
    "time/wall_s": "grey", "time/rollout_s": "navy", "time/update_s": "plum",
}
#: A metric the catalogue does not know.
OTHER_METRIC = "grey"

#: What a caption calls each colour of this file (lower case; the playgrounds read these).
NAMES: dict[str, str] = {
    "#E69F00": "orange", "#56B4E9": "sky blue", "#009E73": "bluish green", "#AA3377": "purple",
    "#999933": "olive", "#EE6677": "red", "#0072B2": "blue", "#D55E00": "vermillion",
    "#CC79A7": "reddish purple", "#44AA99": "teal", "#882255": "wine", "#117733": "green",
    "#DDCC77": "sand", "#88CCEE": "cyan", "#661100": "dark red", "#332288": "indigo", "#7B61FF": "violet",
    "#225522": "dark green", "#CC6677": "rose", "#4477AA": "steel blue", "#EE3377": "magenta",
}

#: (light, dark) per role.
ROLES: dict[str, tuple[str, str]] = {
    "diff-modified": ("#E69F00", "#E69F00"),
    "diff-added": ("#0072B2", "#56B4E9"),
    # removed: reddish purple, a hue apart from modified's amber (with its dashed line and "−")
    "diff-removed": ("#B0307F", "#E8A3CC"),
    "series-value": ("#0072B2", "#56B4E9"),
    "series-return": ("#009E73", "#2EC4A0"),
    "series-advantage": ("#D55E00", "#E69F00"),
    "series-kl": ("#CC79A7", "#E8A3CC"),
    "correct-mixed": ("#0072B2", "#0072B2"),
    "correct-same": ("#56B4E9", "#56B4E9"),
    "wrong-mixed": ("#D55E00", "#D55E00"),
    "wrong-same": ("#E69F00", "#E69F00"),
    "estimator-k1": ("#E69F00", "#E69F00"),
    "estimator-k2": ("#56B4E9", "#56B4E9"),
    "estimator-k3": ("#009E73", "#009E73"),
    "pos": ("#4D9221", "#7FBC41"),
    "neg": ("#C51B7D", "#DE77AE"),
    # the same signs as text (4.5:1 and more on the page and on a panel)
    "pos-text": ("#276419", "#B8E186"),
    "neg-text": ("#8E0152", "#F1B6DA"),
    "moment": ("#7B3294", "#C2A5CF"),
    "neutral": ("#8C8C8C", "#8C8C8C"),
    "ink": ("#1F1F1F", "#E8E8E8"),
}

#: ColorBrewer PiYG, 11 classes (d3-scale-chromatic's schemePiYG[11]): colour-blind safe.
DIVERGING = ("#8e0152", "#c51b7d", "#de77ae", "#f1b6da", "#fde0ef", "#f7f7f7",
             "#e6f5d0", "#b8e186", "#7fbc41", "#4d9221", "#276419")
#: The same hues for dark pages: a dark neutral centre and bright ends (luminance grows with
#: the size of the value either way), so a near-zero token is no white strip on a dark page.
DIVERGING_DARK = ("#fbd2ea", "#f08cc2", "#d6549c", "#a8326f", "#6b2149", "#34343c",
                  "#2e4a1c", "#4a7a26", "#6fa83a", "#9fd15e", "#d2f0a4")
#: ColorBrewer Blues, 9 classes: one hue, light to dark, for one-signed quantities.
SEQUENTIAL = ("#f7fbff", "#deebf7", "#c6dbef", "#9ecae1", "#6baed6", "#4292c6", "#2171b5", "#08519c",
              "#08306b")
#: Blues for dark pages: from a dark neutral to a bright blue.
SEQUENTIAL_DARK = ("#2a2d3a", "#1f3552", "#1d4a72", "#1f5f94", "#2b77b5", "#4a93cf", "#73b0e0", "#a3cdef",
                   "#d6e9fa")


def _luminance(colour: str) -> float:
    """WCAG 2 relative luminance of #rrggbb (site/views/inspector/token_scale.py has the same, for its callers)."""
    def channel(c: int) -> float:
        s = c / 255.0
        return s / 12.92 if s <= 0.04045 else ((s + 0.055) / 1.055) ** 2.4
    r, g, b = (channel(int(colour[i:i + 2], 16)) for i in (1, 3, 5))
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def _contrast(a: str, b: str) -> float:
    la, lb = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (la + 0.05) / (lb + 0.05)


def _at(anchors: tuple[str, ...], u: float) -> str:
    """The ramp's colour at ``u`` in 0..1, linear in RGB between anchors (as token_scale.ramp_colour)."""
    at = max(0.0, min(1.0, u)) * (len(anchors) - 1)
    lo = min(int(at), len(anchors) - 2)
    frac = at - lo
    a, b = anchors[lo], anchors[lo + 1]
    return "#" + "".join("%02x" % int((int(a[i:i + 2], 16) + (int(b[i:i + 2], 16) - int(a[i:i + 2], 16)) * frac) + 0.5)
                         for i in (1, 3, 5))


def text_safe(anchors: tuple[str, ...], text: str, other: str, diverging: bool, n: int = 11) -> tuple[str, ...]:
    """The part of a ramp on which ``text`` reads at 4.5:1 and better than ``other``, as ``n`` anchors
    (a diverging ramp symmetric about its neutral middle). Tokens drawn on it all take ``text``:
    no token's text flips between black and white against a neighbour of almost the same colour."""
    def fine(u: float) -> bool:
        c = _at(anchors, u)
        return _contrast(c, text) >= 4.5 and _contrast(c, text) >= _contrast(c, other)

    steps = 1000
    if diverging:
        k = 0
        while k < steps // 2 and not (fine(k / steps) and fine(1 - k / steps)):
            k += 1
        lo, hi = k / steps, 1 - k / steps
    else:
        lo = 0.0
        k = steps
        while k > 0 and not fine(k / steps):
            k -= 1
        hi = k / steps
    return tuple(_at(anchors, lo + (hi - lo) * j / (n - 1)) for j in range(n))


#: The token ramps: the ramps above where the page's own text colour reads on every token
#: (black on light pages, white on dark ones), so text never flips between neighbouring tokens.
TOKEN_DIVERGING = text_safe(DIVERGING, "#000000", "#ffffff", True)
TOKEN_DIVERGING_DARK = text_safe(DIVERGING_DARK, "#ffffff", "#000000", True)
TOKEN_SEQUENTIAL = text_safe(SEQUENTIAL, "#000000", "#ffffff", False)
TOKEN_SEQUENTIAL_DARK = text_safe(SEQUENTIAL_DARK, "#ffffff", "#000000", False)


def algorithm_colour(algorithm_id: str, used: dict[str, str] | None = None) -> str:
    """The algorithm's colour; an unknown one takes the next of :data:`EXTRA` (``used`` remembers)."""
    if algorithm_id in ALGORITHMS:
        return ALGORITHMS[algorithm_id]
    used = used if used is not None else {}
    if algorithm_id not in used:
        used[algorithm_id] = EXTRA[len(used) % len(EXTRA)]
    return used[algorithm_id]


def role(name: str, dark: bool = False) -> str:
    return ROLES[name][1 if dark else 0]


def metric_colour(metric: str) -> str:
    """The name of a metric's colour (``METRIC_PALETTE``), the same on every page."""
    return METRIC_COLOURS.get(metric, OTHER_METRIC)


def colour_name(colour: str) -> str:
    """What a caption calls ``colour`` (a colour of this file); raises KeyError for another."""
    key = colour.upper()
    if key in NAMES:
        return NAMES[key]
    for name, values in METRIC_PALETTE.items():
        if key in (v.upper() for v in values):
            return name
    raise KeyError(f"{colour} is not a colour of unipo_build/site/palette.py")


def css() -> str:
    """The palette as CSS custom properties: ``--unipo-algo-<id>``, ``--unipo-<role>``,
    ``--unipo-div-<k>``; roles switch with Material's colour scheme."""
    def block(selector: str, dark: bool) -> str:
        lines = [f"  --unipo-{name}: {values[1 if dark else 0]};" for name, values in ROLES.items()]
        lines += [f"  --unipo-metric-{name}: {values[1 if dark else 0]};" for name, values in METRIC_PALETTE.items()]
        if not dark:
            lines += [f"  --unipo-algo-{key.replace('_', '-')}: {colour};" for key, colour in ALGORITHMS.items()]
            lines += [f"  --unipo-div-{k}: {colour};" for k, colour in enumerate(DIVERGING)]
        return selector + " {\n" + "\n".join(lines) + "\n}\n"

    # a metric's swatch, wherever the explorer shows one (data-colour: the metric's colour name)
    swatches = "".join(
        f'.unipo-explorer [data-colour="{name}"] .unipo-explorer__swatch,\n'
        f'.unipo-explorer .unipo-explorer__swatch[data-colour="{name}"] '
        f"{{ background: var(--unipo-metric-{name}); border-color: var(--unipo-metric-{name}); }}\n"
        for name in METRIC_PALETTE)
    return ("/* Written by unipo_build/site/hooks.py from unipo_build/site/palette.py: edit that file. */\n"
            + block(":root, [data-md-color-scheme=\"default\"]", False)
            + block("[data-md-color-scheme=\"slate\"]", True) + swatches)


def as_json() -> str:
    return json.dumps({"algorithms": ALGORITHMS, "extra": list(EXTRA), "names": NAMES,
                       "metrics": METRIC_COLOURS,
                       "metric_palette": {k: {"light": v[0], "dark": v[1]} for k, v in METRIC_PALETTE.items()},
                       "roles": {k: {"light": v[0], "dark": v[1]} for k, v in ROLES.items()},
                       "diverging": list(DIVERGING), "diverging_dark": list(DIVERGING_DARK),
                       "sequential": list(SEQUENTIAL), "sequential_dark": list(SEQUENTIAL_DARK)}, indent=1)
