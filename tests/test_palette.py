"""The one palette (site/palette.py): colour by meaning, once."""

from __future__ import annotations

import math
import re
from pathlib import Path

from unipo_build.core.schema import METRICS
from unipo_build.site import palette as P

DOCS = Path(__file__).resolve().parents[1] / "docs"
COURSE = ("reinforce", "ppo", "grpo", "dapo", "dr_grpo", "gspo", "dapo_dr")


def oklab(colour: str) -> tuple[float, float, float]:
    """Björn Ottosson's OKLab (2020), from sRGB #rrggbb: a perceptual space, distance ~ difference."""
    def lin(c: int) -> float:
        s = c / 255
        return s / 12.92 if s <= 0.04045 else ((s + 0.055) / 1.055) ** 2.4
    r, g, b = (lin(int(colour[i:i + 2], 16)) for i in (1, 3, 5))
    l_, m_, s_ = (x ** (1 / 3) for x in (0.4122214708 * r + 0.5363325363 * g + 0.0514459929 * b,
                                         0.2119034982 * r + 0.6806995451 * g + 0.1073969566 * b,
                                         0.0883024619 * r + 0.2817188376 * g + 0.6299787005 * b))
    return (0.2104542553 * l_ + 0.7936177850 * m_ - 0.0040720468 * s_,
            1.9779984951 * l_ - 2.4285922050 * m_ + 0.4505937099 * s_,
            0.0259040371 * l_ + 0.7827717662 * m_ - 0.8086757660 * s_)


def distance(a: str, b: str) -> float:
    return 100 * math.dist(oklab(a), oklab(b))


def hue(colour: str) -> float:
    _, a, b = oklab(colour)
    return math.degrees(math.atan2(b, a)) % 360


def test_oklab_by_hand():
    assert oklab("#ffffff") == tuple(__import__("pytest").approx(v, abs=1e-4) for v in (1.0, 0.0, 0.0))
    assert distance("#000000", "#ffffff") == __import__("pytest").approx(100, abs=0.01)


def test_every_metric_has_one_colour():
    assert set(P.METRIC_COLOURS) == set(METRICS)
    assert set(P.METRIC_COLOURS.values()) <= set(P.METRIC_PALETTE)
    assert P.metric_colour("my/own_metric") == P.OTHER_METRIC


def test_the_rings_of_every_chapter_have_different_colours():
    """Each explorer of the course draws its metrics in colours of their own (no two rings alike)."""
    seen = 0
    for page in (DOCS / "course").rglob("*.md"):
        for metrics in re.findall(r"training_explorer\([^)]*metrics=\[([^\]]*)\]", page.read_text(encoding="utf-8")):
            names = re.findall(r'"([^"]+)"', metrics)
            colours = [P.metric_colour(m) for m in names]
            assert len(set(colours)) == len(colours), (page.name, dict(zip(names, colours)))
            seen += 1
    assert seen >= 7


def test_metric_colours_are_not_algorithm_colours():
    """A ring is never the colour of an algorithm of the course: dark, muted metric colours against
    bright algorithm hues, at least as far apart as the two closest algorithms are."""
    closest_algorithms = min(distance(P.ALGORITHMS[a], P.ALGORITHMS[b]) for a in COURSE for b in COURSE if a < b)
    for name, (light, dark) in P.METRIC_PALETTE.items():
        for algorithm in COURSE:
            assert distance(light, P.ALGORITHMS[algorithm]) >= closest_algorithms, (name, algorithm)
            assert distance(dark, P.ALGORITHMS[algorithm]) >= 0.55 * closest_algorithms, (name, algorithm)
    # each metric colour reads on its page (lines and swatches: 3:1, WCAG 1.4.11)
    for light, dark in P.METRIC_PALETTE.values():
        assert P._contrast(light, "#ffffff") >= 3 and P._contrast(dark, "#1e2129") >= 3


def test_diff_states_differ_in_hue():
    """modified, added and removed: hues at least 40 degrees apart (and each has its own line style
    and symbol in site/views/compare/compare.css and diff.py, so colour is never the only cue)."""
    states = [P.role(f"diff-{s}", dark) for dark in (False, True) for s in ("modified", "added", "removed")]
    for k in (0, 3):
        hues = [hue(c) for c in states[k:k + 3]]
        for i in range(3):
            for j in range(i + 1, 3):
                gap = abs(hues[i] - hues[j]) % 360
                assert min(gap, 360 - gap) >= 40, states[k:k + 3]


def test_captions_name_the_colours_drawn():
    assert P.colour_name(P.ALGORITHMS["grpo"]) == "bluish green"
    assert P.colour_name(P.ALGORITHMS["gdpo"]) == "violet"
    assert P.colour_name(P.METRIC_PALETTE["crimson"][1]) == "crimson"
    for colour in list(P.ALGORITHMS.values()) + list(P.EXTRA):
        assert P.colour_name(colour)
    # GDPO is drawn beside GRPO: its colour is not another green
    assert distance(P.ALGORITHMS["gdpo"], P.ALGORITHMS["grpo"]) > 25
    gdpo = (DOCS / "playgrounds" / "gdpo.md").read_text(encoding="utf-8")
    assert "GRPO ({colour:grpo}) against GDPO ({colour:gdpo})" in gdpo
