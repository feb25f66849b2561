"""Training Explorer in a real browser: rings, chips, robust scale, fisheye, hover, open-step.

(Named test_explorer_browser.py: tests/test_explorer.py has the basename test_explorer, and
pytest's default import mode needs unique basenames across folders without __init__.py.)

Most tests build a small site of their own from a fixture run (tests/test_explorer.py's
``write_explorer_run``: 1,200 steps, 2 per rollout, token files every 50 steps, a spike in
clip/frac_high at step 700) with the repository's mkdocs.yml (site_build.write_mkdocs_config) and one page, so they
know the answers and do not depend on which runs are shipped. The screenshot test takes the
repository's own reference page with its real runs.
"""

from __future__ import annotations

import math
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.keys import Keys

import browser_harness as H
from site_build import write_mkdocs_config
from test_explorer import SPIKE_AT, drawn_fisheye, write_explorer_run
from unipo_build.site.views.explorer import explorer as explorer_module
from unipo_build.site.palette import METRIC_PALETTE, metric_colour

pytestmark = pytest.mark.browser

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
PAGE = "explorer/"

PAGE_SOURCE = """# Explorer test

{{ training_explorer("test-grpo") }}

## Robust scale

{{ training_explorer("test-grpo", metrics=["clip/frac_high", "reward/mean"], inspector=False) }}

## A run that does not load

{{ training_explorer("broken-run") }}

## A teaching-moment inspector of the same run

{{ step_inspector("test-grpo") }}
"""


@pytest.fixture(scope="module")
def explorer_site(tmp_path_factory):
    """Build the one-page site with the fixture run and serve it; yields its base URL and directory."""
    H.require_browser()
    tmp = tmp_path_factory.mktemp("explorer-site")
    write_explorer_run(tmp / "runs" / "grpo-run")
    broken = tmp / "runs" / "broken-run"
    write_explorer_run(broken, n_steps=10, run_id="broken", token_every=5)
    with (broken / "steps.jsonl").open("a", encoding="utf-8") as fh:
        fh.write('{"step": 12, "rollout": 6, "first_in_rollout": true, "metrics": {}}\n')
    docs = tmp / "docs"
    docs.mkdir()
    (docs / "index.md").write_text("# Home\n", encoding="utf-8")
    (docs / f"{PAGE.rstrip('/')}.md").write_text(PAGE_SOURCE, encoding="utf-8")
    site = tmp / "site"
    server = H.SiteServer(site)
    # the repository's config with this docs folder and one page, built for the server's URL
    config = write_mkdocs_config(tmp, docs_dir=str(docs), site_url=server.url,
                                 nav=[{"Home": "index.md"}, {"Explorer": f"{PAGE.rstrip('/')}.md"}])
    # site/hooks.py reads the pinned browser libraries from package.json next to the config.
    shutil.copyfile(REPO / "package.json", tmp / "package.json")
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1", UNIPO_RUNS=str(tmp / "runs"), UNIPO_SITE_URL=server.url,
               UNIPO_NODE_MODULES=str(REPO / "node_modules"))
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(config), "-d", str(site)],
                          cwd=tmp, env=env, capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        server.close()
        pytest.fail(f"mkdocs build of the explorer test site failed:\n{(proc.stdout + proc.stderr)[-6000:]}")
    with server as url:
        yield {"url": url, "site": site}


@pytest.fixture
def page(explorer_site, driver):
    """The explorer test page in a fresh tab (``page.open(width=None, scheme=None)`` loads it and
    returns the driver; ``page.site``: the built site); fails on console errors at the end."""
    def open_(width: int | None = None, scheme: str | None = None):
        if width:
            H.set_width(driver, width)
        driver.get(explorer_site["url"] + PAGE)
        H.wait_rendered(driver)
        if scheme:
            H.set_scheme(driver, scheme)
        wait_for(driver, "return document.querySelectorAll('.unipo-explorer__chart svg .ring0_marks path').length >= 2")
        return driver

    yield SimpleNamespace(open=open_, site=explorer_site["site"])
    errors = [e["message"] for e in H.console_errors(driver)]
    assert errors == [], errors


def wait_for(drv, script: str, *args, timeout: float = 15.0):
    return H.wait_js(drv, script, *args, timeout=timeout, poll=0.05)


# JavaScript helpers run in the page; `i` picks the explorer (0: with inspector, 1: robust demo).
_RINGS_JS = """
const s = document.querySelectorAll('.unipo-explorer')[arguments[0]];
const out = {};
for (let j = 0; j < 4; j++) {
  const p = s.querySelector(`.unipo-explorer__chart svg .ring${j}_marks path`);
  out['ring' + j] = p ? (p.getAttribute('d') || '') : '';
}
return out;
"""

_SIGNAL_JS = """
const s = document.querySelectorAll('.unipo-explorer')[arguments[0]];
const view = UNIPO.view(s.querySelector('.unipo-explorer__canvas'));
return view ? view.signal(arguments[1]) : null;
"""

# Offset from the centre of the chart's SVG, in CSS pixels, of a step at radius r (spec units),
# computed from the fisheye the chart draws (the spec's Vega expression, test_explorer.drawn_fisheye).
# Scrolls the chart to the middle of the viewport first: Selenium measures pointer offsets from
# the centre of the element's visible part.
_SVG_BOX_JS = """
const s = document.querySelectorAll('.unipo-explorer')[arguments[0]];
const svg = s.querySelector('.unipo-explorer__chart svg');
svg.scrollIntoView({block: 'center', inline: 'center'});
const r = svg.getBoundingClientRect();
return {width: r.width, height: r.height, visible: r.top >= 0 && r.bottom <= innerHeight};
"""


def rings(drv, i=0) -> dict[str, str]:
    return drv.execute_script(_RINGS_JS, i)


def signal(drv, name, i=0):
    return drv.execute_script(_SIGNAL_JS, i, name)


def step_offset(drv, step: int, *, i=0, radius=0.8, focus=0.5, mag=0.0, first=0, span=1200):
    box = drv.execute_script(_SVG_BOX_JS, i)
    assert box["visible"], "the chart does not fit in the viewport"
    unit = box["width"] / (2 * explorer_module.DOMAIN)
    # Aim at the middle of the step's angular slot.
    u = (step - first) / span
    theta = 2 * math.pi * drawn_fisheye(u, focus, mag)
    return round(radius * unit * math.sin(theta)), round(-radius * unit * math.cos(theta))


def svg_of(drv, i=0):
    return drv.find_elements("css selector", ".unipo-explorer__chart svg")[i]


def listen_open_step(drv):
    drv.execute_script(
        "window.__opened = []; document.addEventListener('unipo:open-step', e => window.__opened.push(e.detail));")


# ---------------------------------------------------------------------------- tests


def test_rings_render_the_default_metrics(page):
    drv = page.open()
    assert signal(drv, "metrics") == ["reward/mean", "length/mean", "kl/mean", "entropy/mean"]
    drawn = rings(drv)
    # One path per ring, each a polyline of (up to) 1,000 points: "M x,y L x,y ...".
    assert all(d.count("L") >= 500 for d in drawn.values()), {k: len(v) for k, v in drawn.items()}
    # The chips of the rings are pressed and carry the ring's colour slot.
    pressed = drv.execute_script(
        "return [...document.querySelectorAll('.unipo-explorer')[0].querySelectorAll('.unipo-explorer__chip[aria-pressed=true]')]"
        ".map(c => [c.dataset.metric, c.dataset.ring])")
    assert dict(pressed) == {"reward/mean": "0", "length/mean": "1", "kl/mean": "2", "entropy/mean": "3"}
    # The page holds every metric's series (switching needs no rebuild); the view, the chosen ones.
    embedded = drv.execute_script(
        "return UNIPO.data(document.querySelector('.unipo-explorer template.unipo-data').id).data.metrics.length")
    assert embedded == 8
    in_view = drv.execute_script(
        "const v = UNIPO.view(document.querySelector('.unipo-explorer__canvas'));"
        "return [...new Set(v.data('series').map(r => r.m))]")
    assert sorted(in_view) == sorted(["reward/mean", "length/mean", "kl/mean", "entropy/mean"])
    # The run that failed to load is named, with its error, in place of a chart.
    failure = drv.find_element("css selector", ".admonition.failure.unipo-explorer-error").text
    assert "broken-run" in failure and "expected step 10 next, found 12" in failure
    assert len(drv.find_elements("css selector", ".unipo-explorer")) == 2
    # Its steps were not published; the loaded run's were.
    assert not (page.site / "assets/runs/broken").exists()
    assert (page.site / "assets/runs/test-grpo/steps/step_000600.json").is_file()
    # Rim ticks for rollout boundaries are drawn (thinned where they crowd).
    ticks = drv.execute_script(
        "return document.querySelectorAll('.unipo-explorer__chart svg .boundary_marks line').length")
    assert 100 <= ticks <= 600


def test_choosing_another_metric_changes_the_rings(page):
    drv = page.open()
    before = rings(drv)

    def chip(metric):
        return drv.find_element("css selector", f'.unipo-explorer .unipo-explorer__chip[data-metric="{metric}"]')

    # The unchosen chips are folded behind a button.
    assert not chip("clip/frac_high").is_displayed()
    drv.find_element("css selector", ".unipo-explorer .unipo-explorer__more-metrics").click()
    # Four rings already: a fifth is refused with a message under the chart and next to the chip.
    chip("clip/frac_high").click()
    assert "At most 4 rings" in drv.find_element("css selector", ".unipo-explorer__status").text
    note = drv.execute_script("const n = document.querySelector('.unipo-explorer__chip-note');"
                              "return n && n.previousElementSibling.dataset.metric + ': ' + n.textContent")
    assert note == "clip/frac_high: At most 4 rings: remove one before adding Clipped high."
    assert signal(drv, "metrics") == ["reward/mean", "length/mean", "kl/mean", "entropy/mean"]
    # Remove entropy, add clipping: it becomes the innermost ring.
    chip("entropy/mean").click()
    wait_for(drv, "return !document.querySelector('.unipo-explorer__chart svg .ring3_marks path')?.getAttribute('d')")
    chip("clip/frac_high").click()
    assert signal(drv, "metrics") == ["reward/mean", "length/mean", "kl/mean", "clip/frac_high"]
    after = wait_for(drv, "const d = document.querySelector('.unipo-explorer__chart svg .ring3_marks path')"
                          "?.getAttribute('d'); return d && d !== arguments[0] ? d : null", before["ring3"])
    assert after != before["ring3"]
    assert chip("clip/frac_high").get_attribute("aria-pressed") == "true"
    assert chip("clip/frac_high").get_attribute("data-ring") == "3"
    assert chip("entropy/mean").get_attribute("aria-pressed") == "false"
    # With three rings the bands widen: the outer ring is redrawn too.
    chip("clip/frac_high").click()
    assert signal(drv, "metrics") == ["reward/mean", "length/mean", "kl/mean"]
    assert rings(drv)["ring0"] != before["ring0"]


def test_chip_shows_label_last_value_and_definition(page):
    drv = page.open()
    chip = drv.find_element("css selector", '.unipo-explorer .unipo-explorer__chip[data-metric="reward/mean"]')
    assert chip.text.startswith("Reward")
    assert "Mean scalar reward" in chip.get_attribute("title")
    described = drv.execute_script(
        "const c = arguments[0]; return document.getElementById(c.getAttribute('aria-describedby')).textContent", chip)
    assert "Mean scalar reward" in described and "Last value" in described


def test_hover_shows_every_ring_at_the_step(page):
    drv = page.open()
    dx, dy = step_offset(drv, 300)
    ActionChains(drv, duration=0).move_to_element_with_offset(svg_of(drv), dx, dy).perform()
    tip = wait_for(drv, "const t = document.querySelector('.unipo-explorer__tip'); return t.hidden ? null : t.innerText")
    # About one pixel per step without magnification: the pointer lands within a step of 300.
    step = int(re.match(r"Step ([\d,]+)", tip).group(1).replace(",", ""))
    assert abs(step - 300) <= 1
    assert signal(drv, "hover") == step
    for label in ("Reward", "Response length", "KL to reference", "Entropy"):
        assert label in tip
    if step == 300:
        assert "Click to open this step." in tip
    else:
        assert "Click to open the nearest logged step, 300." in tip
    # The centre of the chart names the hovered step.
    centre = drv.execute_script("return document.querySelector('.unipo-explorer__chart svg .centre_marks text').textContent")
    assert centre == f"{step:,}"


def test_click_opens_the_nearest_logged_step(page):
    drv = page.open()
    listen_open_step(drv)
    dx, dy = step_offset(drv, 613)  # token data every 50 steps: the nearest is 600
    ActionChains(drv, duration=0).move_to_element_with_offset(svg_of(drv), dx, dy).click().perform()
    opened = wait_for(drv, "return window.__opened.length ? window.__opened : null")
    own = drv.execute_script("return document.querySelector('.unipo-explorer').getAttribute('data-inspector')")
    assert [{k: o[k] for k in ("run", "step", "inspector")} for o in opened] == [
        {"run": "test-grpo", "step": 600, "inspector": own}]
    status = drv.find_element("css selector", ".unipo-explorer__status").text
    assert "nearest logged step, 600" in status
    assert signal(drv, "picked") == 600
    # Both explorers of this run on the page mark the opened step.
    assert drv.execute_script("return document.querySelectorAll('.unipo-explorer__chart svg .pickrule_marks line').length") == 2
    assert signal(drv, "picked", 1) == 600
    # The Step Inspector under the chart, when this build has it, opens that step.
    # The explorer's own Step Inspector opens that step; any other inspector of the same run
    # on the page (here the second explorer's) stays where it was.
    wait_for(drv, f"return document.querySelector('#{own} .unipo-inspector-step[data-step=\"600\"]')")
    # (the step each shows, or opens on when the reader scrolls to it: inspector.js renders a step
    # only when its inspector comes near the viewport)
    others = drv.execute_script(
        f"return Array.from(document.querySelectorAll('.unipo-inspector:not(#{own})'))"
        ".map(el => el.getAttribute('data-step'))")
    assert others and None not in others and "600" not in others


def test_keyboard_moves_along_the_steps_and_opens(page):
    drv = page.open()
    listen_open_step(drv)
    chart = drv.find_element("css selector", ".unipo-explorer__chart")
    assert chart.get_attribute("role") == "slider"
    chart.send_keys(Keys.END)
    assert chart.get_attribute("aria-valuenow") == "1199"
    chart.send_keys(Keys.ARROW_LEFT, Keys.ARROW_LEFT)
    assert chart.get_attribute("aria-valuenow") == "1197"
    assert chart.get_attribute("aria-valuetext").startswith("step 1,197, Reward")
    chart.send_keys(Keys.ENTER)
    opened = wait_for(drv, "return window.__opened.length ? window.__opened : null")
    assert [(o["run"], o["step"]) for o in opened] == [("test-grpo", 1200 - 50)]


def _scale(drv, i, value):
    from selenium.webdriver.support.ui import Select

    Select(drv.find_elements("css selector", ".unipo-explorer__scale")[i]).select_by_value(value)


def test_robust_scale_by_default_where_one_outlier_would_flatten_a_ring(page):
    drv = page.open()
    # The second explorer draws clip/frac_high (a spike at step 700) outside, reward inside: the
    # automatic scale draws the spiky ring robust, the other on its full range.
    assert signal(drv, "robust", 1) == ["clip/frac_high"]
    robust = rings(drv, 1)
    assert robust["ring0"] and robust["ring1"] and not robust["ring2"]
    note = drv.execute_script("return [...document.querySelectorAll('.unipo-explorer')[1]"
                              ".querySelectorAll('.unipo-explorer__ring-note')].map(n => n.textContent)")
    assert note[0].startswith("robust scale: the whole run spans ") and note[1] == ""
    _scale(drv, 1, "full")
    assert signal(drv, "robust", 1) == []
    full = wait_for(drv, "const s = document.querySelectorAll('.unipo-explorer')[1];"
                         "const d = s.querySelector('svg .ring0_marks path').getAttribute('d');"
                         "return d !== arguments[0] ? d : null", robust["ring0"])
    assert full != robust["ring0"]
    wait_for(drv, "return document.querySelectorAll('.unipo-explorer')[1].querySelectorAll('svg .clipmark_marks path').length === 0")
    _scale(drv, 1, "robust")
    assert signal(drv, "robust", 1) == ["clip/frac_high", "reward/mean"]
    # The spike is clipped and circled; nothing else of that ring is.
    clipped = drv.execute_script(
        "const v = UNIPO.view(document.querySelectorAll('.unipo-explorer')[1].querySelector('.unipo-explorer__canvas'));"
        "return v.data('series').filter(r => r.m === 'clip/frac_high' && !r.interp && (r.v > r.qhi || r.v < r.qlo)).map(r => r.s)")
    assert SPIKE_AT in clipped and len(clipped) <= 12
    marks = wait_for(drv, "const n = document.querySelectorAll('.unipo-explorer')[1].querySelectorAll("
                          "'svg .clipmark_marks path').length; return n >= arguments[0] ? n : null", len(clipped))
    assert marks >= len(clipped)
    # The first explorer is not affected.
    assert signal(drv, "robust", 0) == []


def test_fisheye_magnifies_and_picks_single_steps(page):
    drv = page.open()
    listen_open_step(drv)
    section = drv.find_elements("css selector", ".unipo-explorer")[0]
    focus_input = section.find_element("css selector", ".unipo-explorer__focus")
    assert focus_input.get_attribute("disabled") is not None  # no magnification yet
    drv.execute_script(
        "const m = arguments[0]; m.value = 3; m.dispatchEvent(new Event('input'));"
        "const f = arguments[1]; f.value = 700; f.dispatchEvent(new Event('input'));",
        section.find_element("css selector", ".unipo-explorer__mag"), focus_input)
    assert signal(drv, "mag") == 7  # 8x
    assert signal(drv, "focus") == pytest.approx(700 / 1200)
    assert section.find_element("css selector", ".unipo-explorer__mag-out").text == "8×"
    assert drv.execute_script("return document.querySelectorAll('.unipo-explorer__chart svg .lens_marks path').length") == 1
    # The pointer's fisheye (explorer.js) is the one the chart draws (the spec's Vega expression):
    # forward where the keyboard's tooltip goes, inverse where a pointer's angle lands.
    cases = [(k / 20, focus, mag) for k in range(21) for focus in (0.0, 0.13, 700 / 1200, 1.0) for mag in (0, 3, 7, 15)]
    forward, inverse = drv.execute_script(
        "const F = window.UNIPOExplorer; const c = arguments[0];"
        "return [c.map(x => F.fisheye(x[0], x[1], x[2])), c.map(x => F.fisheyeInverse(x[3], x[1], x[2]))];",
        [[u, f, d, drawn_fisheye(u, f, d)] for u, f, d in cases])
    assert forward == pytest.approx([drawn_fisheye(u, f, d) for u, f, d in cases], abs=1e-12)
    assert inverse == pytest.approx([u for u, _, _ in cases], abs=1e-9)
    # Near the focus, neighbouring steps are far enough apart to pick one by one; the pixel
    # position comes from the fisheye the chart draws, the step from the inverse in explorer.js.
    for step in (650, 699, 700, 701):
        dx, dy = step_offset(drv, step, focus=700 / 1200, mag=7)
        ActionChains(drv, duration=0).move_to_element_with_offset(svg_of(drv), dx, dy).perform()
        wait_for(drv, "return document.querySelector('.unipo-explorer__tip').innerText.startsWith(arguments[0])",
                 f"Step {step}\n")
    ActionChains(drv, duration=0).click().perform()
    opened = wait_for(drv, "return window.__opened.length ? window.__opened : null")
    assert [(o["run"], o["step"]) for o in opened] == [("test-grpo", 700)]
    # Dragging with the mouse moves the lens (and opens nothing): the focus follows the pointer.
    drv.execute_script("window.__opened = []")
    start = step_offset(drv, 700, focus=700 / 1200, mag=7)
    end = step_offset(drv, 300, focus=700 / 1200, mag=7)
    svg = svg_of(drv)
    (ActionChains(drv, duration=0).move_to_element_with_offset(svg, *start).click_and_hold()
     .move_to_element_with_offset(svg, *end).release().perform())
    focus_step = int(section.find_element("css selector", ".unipo-explorer__focus").get_attribute("value"))
    angle_step = 1200 * drawn_fisheye(300 / 1200, 700 / 1200, 7)  # where 300 was drawn
    assert abs(focus_step - angle_step) <= 3
    assert signal(drv, "focus") == pytest.approx(focus_step / 1200)
    assert drv.execute_script("return window.__opened") == []
    # Finer rim labels appear where the fisheye makes room for them.
    labels = drv.execute_script(
        "return [...document.querySelectorAll('.unipo-explorer__chart svg .ticklabel_marks text')].map(t => t.textContent)")
    fine = {str(s) for s in range(focus_step - 60, focus_step + 60) if s % 10 == 0 and s % 50}
    assert fine & set(labels), (focus_step, labels)


def test_state_survives_a_colour_scheme_redraw(page):
    drv = page.open()
    _scale(drv, 0, "robust")
    drv.find_element("css selector", '.unipo-explorer .unipo-explorer__chip[data-metric="kl/mean"]').click()
    views = drv.execute_script("return document.querySelector('.unipo-explorer__chart').dataset.explorerView")
    H.set_scheme(drv, "slate")
    wait_for(drv, "return document.querySelector('.unipo-explorer__chart').dataset.explorerView !== arguments[0]", views)
    assert signal(drv, "robust") == ["reward/mean", "length/mean", "entropy/mean"]
    assert signal(drv, "metrics") == ["reward/mean", "length/mean", "entropy/mean"]
    # Rings follow the dark scheme's palette through CSS: the reward's own colour, dark variant.
    stroke = drv.execute_script(
        "return getComputedStyle(document.querySelector('.unipo-explorer__chart svg .ring0_marks path')).stroke")
    dark = METRIC_PALETTE[metric_colour("reward/mean")][1]
    assert stroke == "rgb(%d, %d, %d)" % tuple(int(dark[i:i + 2], 16) for i in (1, 3, 5))


def test_narrow_screen_scales_the_chart(page):
    drv = page.open(width=390)
    width = drv.execute_script("return document.querySelector('.unipo-explorer__chart svg').getBoundingClientRect().width")
    assert 300 <= width <= 390
    overflow = drv.execute_script("return document.documentElement.scrollWidth - document.documentElement.clientWidth")
    assert overflow <= 0
    # A tap opens a step on a phone too.
    listen_open_step(drv)
    dx, dy = step_offset(drv, 100)
    ActionChains(drv, duration=0).move_to_element_with_offset(svg_of(drv), dx, dy).click().perform()
    opened = wait_for(drv, "return window.__opened.length ? window.__opened : null")
    assert [(o["run"], o["step"]) for o in opened] == [("test-grpo", 100)]


def test_reference_page_screenshots(open_page, screenshot, driver, console_errors):
    """docs/reference/explorer.md with the shipped runs: light, dark and 390 px wide."""
    path = "reference/explorer/"
    open_page(path)
    assert console_errors(driver) == []
    has_chart = driver.execute_script("return document.querySelectorAll('.unipo-explorer__chart svg').length")
    shots = [
        screenshot(path, "explorer-light", scheme="default"),
        screenshot(path, "explorer-dark", scheme="slate"),
        screenshot(path, "explorer-390", scheme="default", width=390),
    ]
    assert all(p.stat().st_size > 10_000 for p in shots)
    if not has_chart:
        pytest.skip("no shipped run is drawn on the reference page (data/runs is empty); screenshots taken")
    widths = driver.execute_script(
        "return [...document.querySelectorAll('.unipo-explorer__chart svg')].map(s => s.getBoundingClientRect().width)")
    assert widths and all(w <= 390 for w in widths)


def test_a_metric_keeps_its_colour_and_the_list_gives_each_rings_range(page):
    drv = page.open()
    colours_js = ("return Object.fromEntries([...document.querySelector('.unipo-explorer').querySelectorAll("
                  "'.unipo-explorer__chip[aria-pressed=true]')].map(c => [c.dataset.metric, c.dataset.colour]))")
    stroke_js = ("const s = document.querySelector('.unipo-explorer'); const i = arguments[0];"
                 "return getComputedStyle(s.querySelector(`.unipo-explorer__chart svg .ring${i}_marks path`)).stroke")
    # data-colour: the metric's own colour (site/palette.py), whatever ring it is on
    own = {m: metric_colour(m) for m in ("reward/mean", "length/mean", "kl/mean", "entropy/mean", "clip/frac_high")}
    assert drv.execute_script(colours_js) == {m: own[m] for m in ("reward/mean", "length/mean", "kl/mean", "entropy/mean")}
    kl_stroke = drv.execute_script(stroke_js, 2)
    # Removing the second ring moves KL inward (ring 1) with its colour.
    drv.find_element("css selector", '.unipo-explorer .unipo-explorer__chip[data-metric="length/mean"]').click()
    assert signal(drv, "metrics") == ["reward/mean", "kl/mean", "entropy/mean"]
    assert drv.execute_script(colours_js) == {m: own[m] for m in ("reward/mean", "kl/mean", "entropy/mean")}
    assert drv.execute_script(stroke_js, 1) == kl_stroke
    # A new ring takes its metric's own colour.
    drv.find_element("css selector", ".unipo-explorer .unipo-explorer__more-metrics").click()
    drv.find_element("css selector", '.unipo-explorer .unipo-explorer__chip[data-metric="clip/frac_high"]').click()
    assert drv.execute_script(colours_js)["clip/frac_high"] == own["clip/frac_high"]
    # The list beside the chart: each ring outside in, with the range it spans and its unit.
    payload = drv.execute_script(
        "return UNIPO.data(document.querySelector('.unipo-explorer template.unipo-data').id).data.metrics")
    info = {m["name"]: m for m in payload}
    listed = drv.execute_script(
        "return [...document.querySelector('.unipo-explorer').querySelectorAll('.unipo-explorer__ring')]"
        ".map(li => [li.dataset.metric, li.dataset.colour, li.querySelector('.unipo-explorer__ring-range').textContent])")
    assert [x[0] for x in listed] == ["reward/mean", "kl/mean", "entropy/mean", "clip/frac_high"]
    assert [x[1] for x in listed] == [own[m] for m in ("reward/mean", "kl/mean", "entropy/mean", "clip/frac_high")]
    for name, _, text in listed:
        m = info[name]
        robust = m["flat"]
        lo, hi = (m["qlo"], m["qhi"]) if robust else (m["lo"], m["hi"])
        unit = m["unit"]
        expected = f"{explorer_module.fmt_metric(lo, unit)} to {explorer_module.fmt_metric(hi, unit)}"
        assert text.startswith(expected), (name, text, expected)
        if unit:
            assert text.endswith(explorer_module.unit_suffix(unit))
    # The rings and the scale are in the URL: a reload (a shared link) draws the same chart.
    assert "metrics=reward/mean+kl/mean+entropy/mean+clip/frac_high" in drv.execute_script("return location.hash")
    drv.refresh()
    H.wait_rendered(drv)
    wait_for(drv, "return document.querySelectorAll('.unipo-explorer__chart svg .ring0_marks path').length >= 2")
    assert signal(drv, "metrics") == ["reward/mean", "kl/mean", "entropy/mean", "clip/frac_high"]


def test_a_click_answers_under_the_chart_and_shows_the_inspector(page):
    drv = page.open()
    window_top = drv.execute_script("window.__unipoSamePage = 1; return scrollY")
    dx, dy = step_offset(drv, 613)
    ActionChains(drv, duration=0).move_to_element_with_offset(svg_of(drv), dx, dy).click().perform()
    own = drv.execute_script("return document.querySelector('.unipo-explorer').getAttribute('data-inspector')")
    wait_for(drv, f"return document.querySelector('#{own}').getAttribute('data-step') === '600' && "
                  f"document.querySelector('#{own}').getAttribute('data-ready') === '1'")
    # the status sits right under the chart (the reader's eyes are there)
    gap = drv.execute_script("const c = document.querySelector('.unipo-explorer__chart').getBoundingClientRect();"
                             "const s = document.querySelector('.unipo-explorer__status').getBoundingClientRect();"
                             "return s.top - c.bottom")
    assert 0 <= gap <= 40
    # the inspector is brought into view (smoothly), with the way back to the chart
    wait_for(drv, f"const r = document.querySelector('#{own}').getBoundingClientRect();"
                  "return r.top >= 0 && r.top < innerHeight / 2")
    status = drv.execute_script(f"return document.querySelector('#{own} .unipo-inspector-status').textContent")
    assert status.startswith("Step 600, opened from the Training Explorer.") and "Back to the chart" in status
    assert drv.execute_script("return scrollY") != window_top
    # the way back is a same-page link: it scrolls, the page and the inspector's step stay
    drv.find_element("css selector", f"#{own} .unipo-inspector-status a").click()
    wait_for(drv, "const r = document.querySelector('.unipo-explorer').getBoundingClientRect(); return r.top < innerHeight && r.bottom > 0")
    assert drv.execute_script("return window.__unipoSamePage") == 1
    assert drv.execute_script(f"return document.querySelector('#{own}').getAttribute('data-step')") == "600"


def test_the_caption_says_tap_on_a_touch_screen(page):
    drv = page.open()
    shown_js = ("return [...document.querySelectorAll('.unipo-explorer__for-mouse, .unipo-explorer__for-touch')]"
                ".filter(e => e.getClientRects().length).map(e => e.className)")
    assert set(drv.execute_script(shown_js)) == {"unipo-explorer__for-mouse"}
    drv.execute_cdp_cmd("Emulation.setTouchEmulationEnabled", {"enabled": True, "maxTouchPoints": 5})
    drv.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": [{"name": "pointer", "value": "coarse"},
                                                                    {"name": "hover", "value": "none"}]})
    assert set(drv.execute_script(shown_js)) == {"unipo-explorer__for-touch"}
    assert "Tap a ring" in drv.find_element("css selector", ".unipo-explorer__for-touch").text
