"""The three playground pages in a real browser: they load cleanly and their controls work.

For each page: no console error, every chart drawn, and moving a control (a slider, a select,
a toggle) changes the figure it drives, both in the drawn SVG and in the data of the Vega view.
Screenshots (light, dark, 390 px wide) go to $UNIPO_SCREENSHOTS for a person to look at.
"""

from __future__ import annotations

import pytest

import browser_harness as H
from unipo_build.site.palette import role

pytestmark = pytest.mark.browser

PAGES = {
    "objective": "playgrounds/objective-1d/",
    "gdpo": "playgrounds/gdpo/",
    "shapes": "playgrounds/loss-shapes/",
}

_READY_JS = """
const scripts = [...document.querySelectorAll('template.unipo-data[id^="pg-data-"]')];
return scripts.length > 0 && scripts.every(s => s.getAttribute('data-pg-ready') === 'true');
"""

# A digest of a chart's drawn SVG (marks only, so a tooltip or focus ring does not count).
_SVG_JS = """
const fig = document.querySelector(`[data-pg-chart="${arguments[0]}"] .unipo-vega svg`);
if (!fig) return null;
const marks = [...fig.querySelectorAll('.mark-line path, .mark-area path, .mark-rect path, .mark-symbol path, .mark-text text')];
const text = marks.map(m => (m.getAttribute('d') || m.textContent || '') + '|' + (m.getAttribute('fill') || '')).join(';');
let h = 0;
for (let i = 0; i < text.length; i++) h = (Math.imul(h, 31) + text.charCodeAt(i)) | 0;
return marks.length + ':' + h;
"""

_DATA_JS = """
const el = document.querySelector(`[data-pg-chart="${arguments[0]}"] .unipo-vega`);
const view = window.UNIPO.view(el);
if (!view) return null;
try { return JSON.stringify(view.data(arguments[1])); } catch (e) { return 'error: ' + e.message; }
"""

_SIGNAL_JS = """
const el = document.querySelector(`[data-pg-chart="${arguments[0]}"] .unipo-vega`);
const view = window.UNIPO.view(el);
return view ? view.signal(arguments[1]) : null;
"""

_SET_CONTROL_JS = """
const input = document.querySelector(`[data-pg-control="${arguments[0]}"]`);
input.value = String(arguments[1]);
const kind = input.tagName === 'SELECT' || input.type === 'number' ? 'change' : 'input';
input.dispatchEvent(new Event(kind, {bubbles: true}));
return input.value;
"""


def wait_for(driver, script, *args, timeout=30.0, predicate=bool):
    """Run ``script`` until ``predicate`` holds for its value; that value."""
    def check(drv):
        value = drv.execute_script(script, *args)
        return (value,) if predicate(value) else None

    return H.wait_until(driver, check, timeout=timeout, what=script[:200])[0]


def open_playground(open_page, driver, page, **kwargs):
    drv = open_page(PAGES[page], **kwargs)
    wait_for(driver, _READY_JS)
    return drv


def settle(driver, chart, before, timeout=30.0):
    """Wait until the chart's SVG differs from ``before``; returns the new digest."""
    return wait_for(driver, _SVG_JS, chart, timeout=timeout, predicate=lambda v: v and v != before)


def test_objective_page_sliders_change_the_figures(open_page, driver, console_errors):
    open_playground(open_page, driver, "objective")
    assert console_errors(driver) == []
    charts = driver.execute_script(
        "return [...document.querySelectorAll('[data-pg-chart] .unipo-vega svg, [data-pg-chart] .unipo-vega canvas')].length")
    assert charts == 3  # the heat map is a canvas
    # beta moves pi*, the surface and every trajectory
    surface = driver.execute_script(_DATA_JS, "surface", "pg_surface")
    traj = driver.execute_script(_DATA_JS, "surface", "pg_traj")
    axis = driver.execute_script(_SVG_JS, "axis")
    driver.execute_script(_SET_CONTROL_JS, "beta", 6)  # beta = 1.0
    wait_for(driver, _DATA_JS, "surface", "pg_surface", predicate=lambda v: v and v != surface)
    settle(driver, "axis", axis)
    assert driver.execute_script(_DATA_JS, "surface", "pg_traj") != traj
    # the copies of a control next to other figures follow
    copies = driver.execute_script(
        "return [...document.querySelectorAll('[data-pg-control=\"beta\"]')].map(i => i.value)")
    assert len(copies) >= 2 and set(copies) == {"6"}
    # the group size changes GRPO's path only
    before = driver.execute_script(_DATA_JS, "surface", "pg_traj")
    band = driver.execute_script(_SVG_JS, "band")
    driver.execute_script(_SET_CONTROL_JS, "groupSize", 5)  # G = 64
    settle(driver, "band", band)
    after = driver.execute_script(_DATA_JS, "surface", "pg_traj")
    import json

    old = {row["method"]: row["mu"] for row in json.loads(before)}
    new = {row["method"]: row["mu"] for row in json.loads(after)}
    assert old["GRPO"] != new["GRPO"]
    assert old["Exact gradient"] == new["Exact gradient"] and old["DPO"] == new["DPO"]
    # a preset is a select
    surface = driver.execute_script(_DATA_JS, "surface", "pg_surface")
    driver.execute_script(_SET_CONTROL_JS, "preset", "trap")
    wait_for(driver, _DATA_JS, "surface", "pg_surface", predicate=lambda v: v and v != surface)
    assert console_errors(driver) == []


def test_objective_tabs_highlight_one_method(open_page, driver, console_errors):
    open_playground(open_page, driver, "objective")
    assert driver.execute_script(_SIGNAL_JS, "surface", "focus") == "all"
    driver.execute_script(
        "const set = document.querySelector('[data-pg-tabs] .tabbed-set');"
        "set.querySelectorAll(':scope > label, .tabbed-labels > label')[4].click();")
    wait_for(driver, _SIGNAL_JS, "surface", "focus", predicate=lambda v: v == "GRPO")
    assert console_errors(driver) == []


def test_gdpo_page_toggles_and_training_controls(open_page, driver, console_errors):
    open_playground(open_page, driver, "gdpo")
    assert console_errors(driver) == []
    status = driver.execute_script("return document.querySelector('[data-pg-status=\"gdpo\"]').textContent")
    assert "share their GRPO advantage" in status
    bars = driver.execute_script(_SVG_JS, "advantages")
    data = driver.execute_script(_DATA_JS, "advantages", "gd_adv")
    driver.execute_script("document.querySelector('[data-pg-cell=\"0,0\"]').click()")
    settle(driver, "advantages", bars)
    assert driver.execute_script(_DATA_JS, "advantages", "gd_adv") != data
    assert driver.execute_script(
        "return document.querySelector('[data-pg-cell=\"0,0\"]').getAttribute('aria-pressed')") == "false"
    # Same totals: GRPO hands out two values only
    driver.execute_script("document.querySelector('[data-pg-grid-action=\"collide\"]').click()")
    import json

    rows = json.loads(wait_for(driver, _DATA_JS, "advantages", "gd_adv",
                               predicate=lambda v: v and '"tag":"A"' in v and '"tag":"B"' in v))
    grpo = {round(r["adv"], 6) for r in rows if r["method"] == "GRPO"}
    gdpo = {round(r["adv"], 6) for r in rows if r["method"] == "GDPO"}
    assert len(grpo) == 2 and len(gdpo) > 2
    # the toy training re-runs when G changes
    toy = driver.execute_script(_SVG_JS, "toy")
    driver.execute_script(_SET_CONTROL_JS, "toyGroup", 1)  # G = 3
    settle(driver, "toy", toy)
    assert console_errors(driver) == []


def test_shapes_page_sliders_move_the_clip(open_page, driver, console_errors):
    open_playground(open_page, driver, "shapes")
    assert console_errors(driver) == []
    shapes = driver.execute_script(_SVG_JS, "shapes")
    driver.execute_script(_SET_CONTROL_JS, "eps_high", 24)  # 0.5
    shapes = settle(driver, "shapes", shapes)
    assert driver.execute_script(_SIGNAL_JS, "shapes", "eps_high") == pytest.approx(0.5)
    driver.execute_script(_SET_CONTROL_JS, "eps", 2)  # 0.06
    settle(driver, "shapes", shapes)
    agg = driver.execute_script(_SVG_JS, "aggregation")
    driver.execute_script(_SET_CONTROL_JS, "other_len", 6)  # 1024
    settle(driver, "aggregation", agg)
    assert driver.execute_script(_SIGNAL_JS, "aggregation", "other_len") == 1024
    assert console_errors(driver) == []


def test_scheme_toggle_keeps_the_readers_state(open_page, driver, set_scheme, console_errors):
    open_playground(open_page, driver, "objective")
    initial = driver.execute_script(_DATA_JS, "surface", "pg_marks")
    driver.execute_script(_SET_CONTROL_JS, "preset", "two")
    marks = wait_for(driver, _DATA_JS, "surface", "pg_marks", predicate=lambda v: v and v != initial)
    set_scheme("slate")
    wait_for(driver, _READY_JS)
    # the figures are drawn again in the dark palette, then nothing moves any more
    wait_for(driver, _SIGNAL_JS, "surface", "ink", predicate=lambda ink: ink == role("ink", dark=True))
    H.wait_settled(driver, _DATA_JS, "surface", "pg_marks")
    assert driver.execute_script(_DATA_JS, "surface", "pg_marks") == marks
    assert driver.execute_script(_SIGNAL_JS, "surface", "ink") == role("ink", dark=True)
    assert console_errors(driver) == []


def _heat_scale(driver):
    import json

    rows = json.loads(driver.execute_script(_DATA_JS, "surface", "pg_surface"))
    values = [v for row in rows for v in row["J"]]
    return (values, driver.execute_script(_SIGNAL_JS, "surface", "jdomain"),
            driver.execute_script(_SIGNAL_JS, "surface", "jrange"), driver.execute_script(_SIGNAL_JS, "surface", "jticks"))


def test_heat_map_legend_spans_the_surface_with_its_neutral_at_zero(open_page, driver, set_scheme, console_errors):
    from unipo_build.site.palette import DIVERGING, DIVERGING_DARK
    from unipo_build.site.views.inspector.token_scale import contrast, ramp_colour

    open_playground(open_page, driver, "objective")
    for preset in ("two", "trap"):
        driver.execute_script(_SET_CONTROL_JS, "preset", preset)
        values, domain, colours, ticks = _heat_scale(driver)
        wait_for(driver, "return 1", predicate=lambda v: True)
        values, domain, colours, ticks = _heat_scale(driver)
        lo, hi = min(values), max(values)
        # the legend's range is the surface's own, with 0 among its ticks and neutral exactly there
        assert domain[0] == pytest.approx(lo, abs=1e-9) and domain[-1] == pytest.approx(hi, abs=1e-9)
        assert ticks[0] == pytest.approx(lo, abs=1e-9) and ticks[-1] == pytest.approx(hi, abs=1e-9)
        if lo < 0 < hi:
            assert 0 in ticks and colours[domain.index(0)] == DIVERGING[5]
        # nine even steps of the surface's range (and 0), each the symmetric ramp's colour there, the
        # larger side at the ramp's end (token-scale.js chartScale, the one fit; no minimum tint)
        steps = [lo + (hi - lo) * k / 8 for k in range(9)]
        assert domain == pytest.approx(sorted(set(steps) | ({0.0} if lo < 0 < hi else set())))
        half = max(abs(lo), abs(hi))
        assert colours == [ramp_colour(DIVERGING, (v / half + 1) / 2) for v in domain]
    # dark page: a dark neutral, and the exact gradient (the ink) drawn over a casing of page colour
    set_scheme("slate")
    wait_for(driver, _READY_JS)
    values, domain, colours, _ = wait_for(driver, "return 1", predicate=lambda v: True) and _heat_scale(driver)
    wait_for(driver, _SIGNAL_JS, "surface", "jrange", predicate=lambda v: v and v != colours or DIVERGING_DARK[5] in (v or []))
    values, domain, colours, _ = _heat_scale(driver)
    if min(values) < 0 < max(values):
        assert colours[domain.index(0)] == DIVERGING_DARK[5]
    ink = driver.execute_script(_SIGNAL_JS, "surface", "ink")
    paper = driver.execute_script(_SIGNAL_JS, "surface", "paper")
    assert ink == role("ink", dark=True) and paper.startswith(("hsl", "#", "rgb"))
    assert contrast(ink, DIVERGING_DARK[5]) >= 4.5
    assert console_errors(driver) == []


@pytest.mark.parametrize("page", sorted(PAGES))
def test_screenshots(screenshot, page):
    for scheme, width in (("default", 1280), ("slate", 1280), ("default", 390)):
        name = f"playground-{page}-{scheme}-{width}"
        path = screenshot(PAGES[page], name, scheme=scheme, width=width)
        assert path.stat().st_size > 10_000
