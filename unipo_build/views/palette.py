"""The site's one palette: every colour a page uses, defined once.

- Algorithms, keyed by algorithm id (the spec id, as in run headers): one colour per algorithm
  on every page, light and dark (Okabe-Ito and Paul Tol hues, told apart with the common
  colour-vision deficiencies and readable on Material's light and slate schemes). A reader's own
  algorithm without a colour here takes :data:`EXTRA` in order of appearance.
- Roles that are not algorithms: the diff statuses, the explorer's rings, categorical series of
  a figure, the KL estimators, each with a light and a dark value where they differ.
- The token scales: diverging (ColorBrewer PiYG: pink negative, neutral zero, green positive) and
  sequential (ColorBrewer Blues), each with a ramp for dark pages.

The hook writes it as CSS custom properties (``assets/palette.css``, :func:`css`) and as JSON for
the browser's charts (``assets/palette.json``, :func:`as_json`); the Python figures read it
directly. Nothing else in the project spells a colour of these.
"""

from __future__ import annotations

import json

#: One colour per algorithm id, the same in light and dark.
ALGORITHMS: dict[str, str] = {
    "reinforce": "#E69F00",  # Okabe-Ito orange
    "ppo": "#56B4E9",  # sky blue
    "grpo": "#009E73",  # bluish green
    "dapo": "#AA3377",  # Tol purple
    "dr_grpo": "#999933",  # Tol olive
    "gspo": "#EE6677",  # Tol red
    "dapo_dr": "#0072B2",  # Okabe-Ito blue
    # Methods of the playgrounds that are not specs of the course.
    "dpo": "#D55E00",  # vermillion
    "dro": "#CC79A7",  # reddish purple
    "gdpo": "#44AA99",  # Tol teal
}
#: Algorithms without a colour above take these, in order of appearance.
EXTRA = ("#882255", "#117733", "#DDCC77", "#88CCEE", "#661100", "#332288")

#: (light, dark) per role.
ROLES: dict[str, tuple[str, str]] = {
    "diff-modified": ("#E69F00", "#E69F00"),
    "diff-added": ("#0072B2", "#56B4E9"),
    "diff-removed": ("#D55E00", "#FF8C42"),
    "ring-0": ("#0072B2", "#56B4E9"),
    "ring-1": ("#D55E00", "#E69F00"),
    "ring-2": ("#009E73", "#2EC4A0"),
    "ring-3": ("#CC79A7", "#E8A3CC"),
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


def css() -> str:
    """The palette as CSS custom properties: ``--unipo-algo-<id>``, ``--unipo-<role>``,
    ``--unipo-div-<k>``; roles switch with Material's colour scheme."""
    def block(selector: str, dark: bool) -> str:
        lines = [f"  --unipo-{name}: {values[1 if dark else 0]};" for name, values in ROLES.items()]
        if not dark:
            lines += [f"  --unipo-algo-{key.replace('_', '-')}: {colour};" for key, colour in ALGORITHMS.items()]
            lines += [f"  --unipo-div-{k}: {colour};" for k, colour in enumerate(DIVERGING)]
        return selector + " {\n" + "\n".join(lines) + "\n}\n"

    return ("/* Written by unipo_build/hooks.py from unipo_build/views/palette.py: edit that file. */\n"
            + block(":root, [data-md-color-scheme=\"default\"]", False)
            + block("[data-md-color-scheme=\"slate\"]", True))


def as_json() -> str:
    return json.dumps({"algorithms": ALGORITHMS, "extra": list(EXTRA),
                       "roles": {k: {"light": v[0], "dark": v[1]} for k, v in ROLES.items()},
                       "diverging": list(DIVERGING), "diverging_dark": list(DIVERGING_DARK),
                       "sequential": list(SEQUENTIAL), "sequential_dark": list(SEQUENTIAL_DARK)}, indent=1)
