"""The Step Inspector's token colours (site/views/inspector/token_scale.py), with hand-worked numbers.

The browser's port (unipo_build/site/views/inspector/token-scale.js) is checked against these functions on a
real step in tests/browser/test_inspector.py; its heat-map fit (``chartScale``, which has no Python side) is
checked here under node.
"""

from __future__ import annotations

import json
import math
import shutil
import subprocess
from pathlib import Path

import pytest

from unipo_build.site.views.inspector import token_scale as T
from unipo_build.site.palette import DIVERGING, DIVERGING_DARK, SEQUENTIAL, SEQUENTIAL_DARK
from unipo_build.site.palette import (
    TOKEN_DIVERGING,
    TOKEN_DIVERGING_DARK,
    TOKEN_SEQUENTIAL,
    TOKEN_SEQUENTIAL_DARK,
)


def test_signed_quantities_are_diverging_symmetric_with_the_data_range():
    scale = T.scale_for(T.quantity("advantage"), [0.5, -0.25, 0.0, 1.5])
    assert (scale.kind, scale.lo, scale.hi, scale.half) == ("diverging", -0.25, 1.5, 1.5)
    # every value positive: still diverging around 0, the legend spans only the positive side
    positive = T.scale_for(T.quantity("objective"), [0.1, 0.4])
    assert (positive.kind, positive.lo, positive.hi, positive.half) == ("diverging", 0.1, 0.4, 0.4)


def test_one_signed_quantities_are_sequential_unless_the_data_has_both_signs():
    entropy = T.scale_for(T.quantity("entropy"), [0.2, 1.7, 0.9])
    assert (entropy.kind, entropy.lo, entropy.hi, entropy.half) == ("sequential", 0.2, 1.7, 1.5)
    k1 = T.scale_for(T.quantity("kl"), [-0.02, 0.05])  # the k1 estimator can be negative
    assert (k1.kind, k1.half) == ("diverging", 0.05)
    assert T.scale_for(T.quantity("kl"), []).half == 0


def test_positions_keep_small_values_visible_and_zero_neutral():
    scale = T.Scale("diverging", -2.0, 4.0, 4.0)
    assert T.position(scale, 0.0) == 0.0
    assert T.position(scale, 4.0) == 1.0 and T.position(scale, -2.0) == -0.5
    assert T.position(scale, 1e-9) == T.MIN_TINT and T.position(scale, -1e-9) == -T.MIN_TINT
    assert T.position(scale, 9.0) == 1.0  # beyond the range: the end colour
    seq = T.Scale("sequential", 1.0, 3.0, 2.0)
    assert T.position(seq, 1.0) == T.MIN_TINT and T.position(seq, 3.0) == 1.0
    assert T.position(seq, 2.0) == pytest.approx(T.MIN_TINT + (1 - T.MIN_TINT) * 0.5)
    assert T.position(T.Scale("sequential", 0.3, 0.3, 0.0), 0.3) == 1.0  # one value on the whole step


def test_colours_come_from_the_palette_ramps():
    scale = T.Scale("diverging", -1.0, 1.0, 1.0)
    assert T.colour(scale, 0.0) == TOKEN_DIVERGING[5] == DIVERGING[5] == "#f7f7f7"
    assert T.colour(scale, 1.0) == TOKEN_DIVERGING[-1] and T.colour(scale, -1.0) == TOKEN_DIVERGING[0]
    assert T.colour(scale, 0.0, dark=True) == TOKEN_DIVERGING_DARK[5]
    assert T.colour(scale, 1.0, dark=True) == TOKEN_DIVERGING_DARK[-1]
    seq = T.Scale("sequential", 0.0, 2.0, 2.0)
    assert T.colour(seq, 2.0) == TOKEN_SEQUENTIAL[-1] and T.colour(seq, 2.0, dark=True) == TOKEN_SEQUENTIAL_DARK[-1]
    # halfway between two anchors is their mean, rounded half up: #f7f7f7 and #e6f5d0 at u = 0.55
    assert T.ramp_colour(DIVERGING, 0.55) == "#%02x%02x%02x" % ((0xf7 + 0xe6 + 1) // 2, (0xf7 + 0xf5 + 1) // 2,
                                                                 (0xf7 + 0xd0 + 1) // 2)
    # dark mode: no near-white strip for a near-zero value
    assert T.relative_luminance(T.colour(scale, 1e-6, dark=True)) < 0.1


def test_the_ratio_is_coloured_by_its_log():
    q = T.quantity("ratio")
    values = [T.coloured_value(q, r) for r in (0.5, 1.0, 2.0)]
    assert values[1] == 0.0 and values[0] == pytest.approx(-math.log(2)) and values[2] == pytest.approx(math.log(2))
    scale = T.scale_for(q, values)
    assert T.position(scale, values[0]) == pytest.approx(-T.position(scale, values[2]))  # x2 as strong as /2
    assert T.coloured_value(T.quantity("prob"), math.log(0.25)) == pytest.approx(0.25)


def test_legend_stops_span_the_data():
    scale = T.Scale("diverging", -0.5, 2.0, 2.0)
    stops = T.legend_stops(scale)
    assert stops[0][0] == -0.5 and stops[-1][0] == 2.0 and len(stops) == 9
    assert stops[-1][1] == TOKEN_DIVERGING[-1] and stops[0][1] == T.colour(scale, -0.5)


def test_text_and_contrast():
    assert T.contrast("#000000", "#ffffff") == pytest.approx(21.0)
    assert T.text_colour(DIVERGING[0]) == "#ffffff" and T.text_colour(DIVERGING[5]) == "#000000"
    assert T.text_colour(SEQUENTIAL[-1]) == "#ffffff" and T.text_colour(SEQUENTIAL[0]) == "#000000"
    with pytest.raises(KeyError, match="no token quantity"):
        T.quantity("logp")


@pytest.mark.parametrize("dark", [False, True])
def test_token_text_never_flips(dark):
    """On the token ramps the page's own text colour reads at 4.5:1 on every colour, so two tokens
    of almost the same colour never get black and white text (one would look marked)."""
    text = "#ffffff" if dark else "#000000"
    for ramp in T.ramps(dark):
        colours = [T.ramp_colour(ramp, k / 400) for k in range(401)]
        assert {T.text_colour(c) for c in colours} == {text}
        assert min(T.contrast(c, text) for c in colours) >= 4.5
    # the whole ramps do flip: the token ramps are their text-safe part, strongest ends included
    whole = T.ramps(dark, tokens=False)[0]
    assert len({T.text_colour(T.ramp_colour(whole, k / 400)) for k in range(401)}) == 2
    assert T.contrast(T.ramps(dark)[0][0], T.ramps(dark)[0][5]) > 1.8  # still a strong colour at the ends


TOKEN_SCALE_JS = Path(__file__).resolve().parents[1] / "unipo_build" / "site" / "views" / "inspector" / "token-scale.js"


def _chart_scale_js(values: list[float], dark: bool = False) -> dict:
    """token-scale.js ``chartScale`` (the objective playground's heat-map fit, which has no Python
    side) run under node on the palette's ramps."""
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed")
    ramps = {"diverging": list(DIVERGING), "diverging_dark": list(DIVERGING_DARK), "sequential": list(SEQUENTIAL),
             "sequential_dark": list(SEQUENTIAL_DARK), "min_tint": T.MIN_TINT}
    script = (f"const s = require({json.dumps(str(TOKEN_SCALE_JS))});"
              f"process.stdout.write(JSON.stringify(s.chartScale({json.dumps(ramps)}, {json.dumps(values)}, "
              f"{json.dumps(dark)})));")
    out = subprocess.run([node, "-e", script], capture_output=True, text=True, timeout=60, check=True)
    return json.loads(out.stdout)


def test_the_heat_map_scale_spans_the_data_with_its_neutral_at_zero():
    fitted = _chart_scale_js([1.0, -0.5, 0.25])
    # nine even steps from the smallest value to the largest, and 0 put in among them
    assert fitted["domain"] == pytest.approx([-0.5, -0.3125, -0.125, 0.0, 0.0625, 0.25, 0.4375, 0.625, 0.8125, 1.0])
    assert fitted["ticks"] == [-0.5, 0, 1.0]
    # symmetric about 0 (half-width 1, the larger side): -0.5 is a quarter of the way along the whole
    # ramp, 0 its neutral centre, 1 its green end; no minimum tint on a surface
    colours = dict(zip(fitted["domain"], fitted["range"]))
    assert colours[-0.5] == "#e897c4" == T.ramp_colour(DIVERGING, 0.25)
    assert colours[0.0] == DIVERGING[5] and colours[1.0] == DIVERGING[-1] == "#276419"
    assert colours[0.0625] == T.ramp_colour(DIVERGING, 0.53125)
    dark = _chart_scale_js([1.0, -0.5], dark=True)
    assert dict(zip(dark["domain"], dark["range"]))[0.0] == DIVERGING_DARK[5]
    # one value: a domain from 0 to it (0 and the value alone: [-1, 1] when the value is 0)
    assert _chart_scale_js([0.4, 0.4])["domain"] == [0, 0.4] and _chart_scale_js([-0.4])["domain"] == [-0.4, 0]
    assert _chart_scale_js([0.0, 0.0])["domain"] == [-1, 1]
