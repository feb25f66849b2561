"""The Step Inspector, the Algorithm Explainer and the comparison in Chromium, on the shipped runs.

The page is docs/reference/views.md: a Step Inspector of the GRPO run, the GRPO Algorithm
Explainer, a comparison and a comparison selector. The numbers the explainer shows are checked
against the token file the page fetched (the copy in the built site).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import Select

import browser_harness as H
from unipo_build.site.views.inspector import token_scale as TS
from unipo_build.core.numbers import fmt_num

pytestmark = pytest.mark.browser

PAGE = "reference/views/"


def _wait(driver, js: str, timeout: float = 20.0, what: str = ""):
    return H.wait_js(driver, js, timeout=timeout, what=what)


def _open_views(open_page, driver, run_set: str = "", **kwargs):
    drv = open_page(run_set + PAGE, **kwargs)
    if not driver.execute_script("return document.querySelector('.unipo-inspector') !== null"):
        pytest.skip("the views page has no Step Inspector: no GRPO run in the runs directory (data/runs)")
    # an inspector renders its tokens when it comes near the viewport
    driver.execute_script("document.querySelector('.unipo-inspector').scrollIntoView()")
    _wait(driver, "return document.querySelector('.unipo-inspector').getAttribute('data-ready')", what="inspector ready")
    assert driver.execute_script("return document.querySelector('.unipo-inspector').getAttribute('data-ready')") == "1"
    return drv


def _click(driver, css: str, index: int = 0):
    """Scroll an element to the middle of the viewport (clear of the sticky header), then click it."""
    element = driver.find_elements(By.CSS_SELECTOR, css)[index]
    driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", element)
    element.click()
    return element


def _explainer_values(driver) -> dict:
    """Each number the Algorithm Explainer shows, by key: [the text shown, the full value]."""
    return driver.execute_script("""
        const out = {};
        for (const el of document.querySelectorAll('.unipo-explainer .unipo-num-value[data-key]'))
          out[el.dataset.key] = [el.textContent, el.dataset.value];
        return out;""")


def _token_file(built_site: Path, run: str, step: int, run_set: str = "") -> dict:
    return json.loads((built_site / run_set / "assets" / "runs" / run / "steps" / f"step_{step:06d}.json").read_text())


def _rgb_hex(css: str) -> str:
    r, g, b = (int(float(x)) for x in re.findall(r"[\d.]+", css)[:3])
    return "#%02x%02x%02x" % (r, g, b)


def _parse_display(text: str) -> float:
    return float(text.replace("\u2212", "-").replace("+", ""))


def _pick_token(driver) -> dict:
    """A token of the open group with a nonzero advantage (its numbers are the interesting ones),
    else the open group's first (the other groups are folded: their tokens cannot be clicked)."""
    return driver.execute_script("""
        const toks = [...document.querySelectorAll('.unipo-inspector .unipo-tok')];
        const insp = document.querySelector('.unipo-inspector');
        const shown = toks.filter(t => t.getClientRects().length > 0);
        const pick = shown.find(t => {
          const r = t.closest('.unipo-response');
          return r && /advantage [+\u2212]/.test(r.querySelector('.unipo-response-meta').textContent);
        }) || shown[0];
        pick.scrollIntoView({block: 'center'});
        return {g: +pick.dataset.g, r: +pick.dataset.r, t: +pick.dataset.t, run: insp.dataset.run,
                step: +insp.dataset.step, index: toks.indexOf(pick)};
    """)


def _find(detail: dict, g: int, r: int) -> dict:
    group = next(p for p in detail["prompts"] if p["index"] == g and not p.get("filtered"))
    return next(x for x in group["responses"] if x["index"] == r)


def test_views_page_loads_without_console_errors(open_page, driver, console_errors):
    _open_views(open_page, driver)
    counts = driver.execute_script("""return {
        groups: document.querySelectorAll('.unipo-inspector .unipo-group').length,
        bars: document.querySelectorAll('.unipo-inspector .unipo-bar-row').length,
        buttons: document.querySelectorAll('.unipo-inspector .unipo-group-btn').length,
        tokens: document.querySelectorAll('.unipo-inspector .unipo-tok[role=button]').length,
        katexErrors: document.querySelectorAll('.katex-error').length,
        slots: document.querySelectorAll('.unipo-explainer-formula .unipo-slot[role=button]').length}""")
    # one group at a time; a bar for every group of the update, a button for each logged one
    assert counts["groups"] == 1 and counts["bars"] >= counts["buttons"] >= 1 and counts["tokens"] > 10
    assert counts["katexErrors"] == 0 and counts["slots"] >= 4
    assert console_errors(driver) == []


def test_clicking_a_token_fills_the_explainer_with_the_logs_numbers(open_page, driver, built_site, run_set, console_errors):
    _open_views(open_page, driver, run_set)
    pick = _pick_token(driver)
    _click(driver, ".unipo-inspector .unipo-tok", pick["index"])
    _wait(driver, "return document.querySelector('.unipo-explainer').getAttribute('data-live-ready')", what="explainer")
    response = _find(_token_file(built_site, pick["run"], pick["step"], run_set), pick["g"], pick["r"])
    tokens, t = response["tokens"], pick["t"]
    shown = _explainer_values(driver)
    for key in ("ratio", "objective", "logp", "old_logp", "advantage", "weight"):
        text, full = shown[key]
        logged = tokens[key][t]
        assert text == fmt_num(logged, 4), (key, text, logged)  # equal to the displayed precision
        assert float(full) == pytest.approx(logged, rel=1e-5, abs=1e-6), key
    # the readout in the inspector lists the same logged numbers
    readout = driver.execute_script(
        "return Object.fromEntries([...document.querySelectorAll('.unipo-token-readout [data-key]')]"
        ".map(e => [e.dataset.key, +e.dataset.value]))")
    assert readout["objective"] == pytest.approx(tokens["objective"][t])
    # every card says the recomputation equals the log
    notes = driver.execute_script(
        "return [...document.querySelectorAll('.unipo-explainer .unipo-num-note')].map(e => e.textContent)")
    assert notes and all("equals the log" in n for n in notes), notes
    where = driver.execute_script("return document.querySelector('.unipo-explainer .unipo-live-where').textContent")
    assert f"group {pick['g']}, response #{pick['r']}, token {t}" in where
    assert console_errors(driver) == []


def test_clicking_a_formula_part_opens_its_card(open_page, driver, console_errors):
    _open_views(open_page, driver)
    driver.execute_script("document.querySelectorAll('.unipo-explainer details.unipo-card').forEach(d => d.open = false)")
    part = driver.find_element(By.CSS_SELECTOR, ".unipo-explainer-formula .unipo-slot-aggregation")
    driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", part)
    part.click()
    assert driver.execute_script(
        "return document.querySelector('.unipo-explainer details[data-card=aggregation]').open") is True
    button = driver.find_element(By.CSS_SELECTOR, ".unipo-explainer .unipo-part[data-slot=clip]")
    driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", button)
    button.click()
    assert driver.execute_script("return document.querySelector('.unipo-explainer details[data-card=token]').open")
    assert driver.execute_script(
        "return document.querySelector('.unipo-slot-section--active').dataset.slot") == "clip"
    assert console_errors(driver) == []


def test_switching_the_colour_quantity_recolours_the_tokens(open_page, driver, built_site, run_set, console_errors):
    _open_views(open_page, driver, run_set)
    colours_js = "return [...document.querySelectorAll('.unipo-inspector .unipo-tok')].map(t => t.style.backgroundColor)"
    before = driver.execute_script(colours_js)
    select = Select(driver.find_element(By.CSS_SELECTOR, ".unipo-inspector .unipo-quantity-select"))
    select.select_by_value("ratio")
    after = driver.execute_script(colours_js)
    assert len(before) == len(after) and before != after
    assert driver.execute_script("return document.querySelector('.unipo-legend-title').textContent").startswith("Importance ratio")
    # the colours are the Python scale's (site/views/inspector/token_scale.py) on the step's token file: every
    # token of the open group, the ratio coloured by its log on a scale fitted to the whole step
    info = driver.execute_script("""const i = document.querySelector('.unipo-inspector');
        return {run: i.dataset.run, step: +i.dataset.step,
                toks: [...i.querySelectorAll('.unipo-tok:not(.unipo-tok--masked)')].map(t => [+t.dataset.g, +t.dataset.r,
                      +t.dataset.t, getComputedStyle(t).backgroundColor, getComputedStyle(t).color])};""")
    detail = _token_file(built_site, info["run"], info["step"], run_set)
    q = TS.quantity("ratio")
    scale = TS.scale_for(q, [TS.coloured_value(q, v) for p in detail["prompts"] for r in p["responses"]
                             if r.get("tokens") for v, m in zip(r["tokens"]["ratio"], r["tokens"]["mask"]) if m])
    assert info["toks"]
    for g, r, t, bg, fg in info["toks"]:
        expected = TS.colour(scale, TS.coloured_value(q, _find(detail, g, r)["tokens"]["ratio"][t]))
        assert _rgb_hex(bg) == expected
        assert _rgb_hex(fg) == TS.text_colour(expected)
    assert console_errors(driver) == []


def test_keyboard_tab_to_a_token_and_enter_selects_it(open_page, driver, run_set, console_errors):
    _open_views(open_page, driver, run_set)
    _click(driver, ".unipo-inspector .unipo-mode-btn[data-mode=tokens]")
    active = None
    for _ in range(40):
        driver.switch_to.active_element.send_keys(Keys.TAB)
        active = driver.switch_to.active_element
        if "unipo-tok" in (active.get_attribute("class") or ""):
            break
    else:
        pytest.fail("Tab never reached a token")
    assert active.get_attribute("role") == "button" and active.get_attribute("tabindex") == "0"
    assert active.get_attribute("aria-label")
    active.send_keys(Keys.ENTER)
    assert active.get_attribute("aria-pressed") == "true"
    _wait(driver, "return document.querySelector('.unipo-explainer').getAttribute('data-token')", what="explainer token")
    # arrow keys move along the response; Space selects
    active.send_keys(Keys.ARROW_RIGHT)
    moved = driver.switch_to.active_element
    assert moved.get_attribute("data-t") == str(int(active.get_attribute("data-t")) + 1)
    moved.send_keys(Keys.SPACE)
    assert moved.get_attribute("aria-pressed") == "true" and active.get_attribute("aria-pressed") == "false"
    assert driver.execute_script("return document.querySelector('.unipo-inspector').dataset.selected").endswith(
        ":" + moved.get_attribute("data-t"))
    assert console_errors(driver) == []


def test_previous_and_next_load_other_steps(open_page, driver, run_set, console_errors):
    _open_views(open_page, driver, run_set)
    steps = driver.execute_script(
        "return UNIPO.data(document.querySelector('.unipo-inspector').id + '-data').steps")
    if len(steps) < 2:
        pytest.skip("the run has one step with token data")
    first = int(driver.execute_script("return document.querySelector('.unipo-inspector').dataset.step"))
    i = steps.index(first)
    # towards the side that has a neighbour, then back
    there, back = (".unipo-next", ".unipo-prev") if i + 1 < len(steps) else (".unipo-prev", ".unipo-next")
    expected = steps[i + 1] if there == ".unipo-next" else steps[i - 1]
    _click(driver, ".unipo-inspector " + there)
    _wait(driver, f"return document.querySelector('.unipo-inspector').dataset.step === '{expected}' && "
                  "!document.querySelector('.unipo-inspector').hasAttribute('data-loading')", what="another step")
    fetched = driver.execute_script("return performance.getEntriesByType('resource').map(e => e.name)")
    assert any(u.endswith(f"step_{expected:06d}.json") for u in fetched)
    assert driver.execute_script("return document.querySelector('.unipo-step-title').textContent").startswith(f"Step {expected}")
    _click(driver, ".unipo-inspector " + back)
    _wait(driver, f"return document.querySelector('.unipo-inspector').dataset.step === '{first}'", what="back again")
    # the step list jumps to a step
    Select(driver.find_element(By.CSS_SELECTOR, ".unipo-inspector .unipo-step-select")).select_by_value(str(steps[0]))
    _wait(driver, f"return document.querySelector('.unipo-inspector').dataset.step === '{steps[0]}'", what="go to step")
    # the Training Explorer's event opens a step
    last = steps[-1] if steps[-1] != steps[0] else steps[1]
    driver.execute_script("document.dispatchEvent(new CustomEvent('unipo:open-step', {detail: "
                          "{run: document.querySelector('.unipo-inspector').dataset.run, step: arguments[0]}}))", last)
    _wait(driver, f"return document.querySelector('.unipo-inspector').dataset.step === '{last}'", what="open-step")
    assert console_errors(driver) == []


def test_teaching_moment_picker_opens_and_outlines_it(open_page, driver, console_errors):
    _open_views(open_page, driver)
    moments = driver.execute_script(
        "return UNIPO.data(document.querySelector('.unipo-inspector').id + '-data').moments")
    if not moments:
        pytest.skip("the run has no teaching moments")
    m = next((x for x in moments if x.get("group") is not None), moments[0])
    Select(driver.find_element(By.CSS_SELECTOR, ".unipo-inspector .unipo-moment-select")).select_by_value(m["name"])
    _wait(driver, f"return document.querySelector('.unipo-inspector').dataset.step === '{m['open_step']}' && "
                  "document.querySelector('.unipo-inspector-status').textContent.startsWith('Teaching moment')",
          what="moment")
    if m.get("group") is not None:
        assert driver.execute_script(
            "return document.querySelector('.unipo-group.unipo-moment').dataset.group") == str(m["group"])
    assert console_errors(driver) == []


def test_comparison_selector_changes_the_diff(open_page, driver, console_errors):
    open_page(PAGE)
    if not driver.execute_script("return document.querySelector('.unipo-compare-selector') !== null"):
        pytest.fail("the views page has no comparison selector")
    status = ("return document.querySelector('.unipo-compare-selector .unipo-diff-row[data-slot=kl]')"
              ".dataset.status")
    assert driver.execute_script(status) == "unchanged"  # DAPO vs Dr. GRPO: no KL in either
    Select(driver.find_element(By.CSS_SELECTOR, ".unipo-compare-selector select[data-side=a]")).select_by_value("grpo")
    assert driver.execute_script(status) == "removed"  # GRPO's KL is gone in Dr. GRPO
    badge = driver.execute_script("return document.querySelector('.unipo-compare-selector .unipo-diff-row[data-slot=kl] "
                                  ".unipo-diff-badge').textContent")
    assert badge == "\u2212 removed"
    # the formulas are typeset again and carry the same status
    _wait(driver, "return document.querySelectorAll('.unipo-compare-selector .arithmatex:not([data-unipo-rendered])').length === 0",
          what="formulas typeset")
    assert driver.execute_script("return document.querySelectorAll('.unipo-compare-selector .katex .unipo-slot-kl.unipo-diff-removed').length") >= 1
    _click(driver, ".unipo-compare-selector .unipo-compare-swap")
    assert driver.execute_script(status) == "added"
    assert console_errors(driver) == []


def _overflow(driver) -> int:
    return driver.execute_script("return document.documentElement.scrollWidth - window.innerWidth")


def test_narrow_screen_and_dark_mode(open_page, driver, screenshot, console_errors):
    _open_views(open_page, driver, width=390)
    assert _overflow(driver) <= 0
    # open every card and select a token: still no horizontal overflow
    driver.execute_script("document.querySelectorAll('details.unipo-card').forEach(d => d.open = true)")
    _click(driver, ".unipo-inspector .unipo-tok", _pick_token(driver)["index"])
    _wait(driver, "return document.querySelector('.unipo-explainer').getAttribute('data-live-ready')", what="explainer")
    _click(driver, ".unipo-inspector .unipo-mode-btn[data-mode=tokens]")
    assert _overflow(driver) <= 0
    # dark mode: token text stays readable (black or white by luminance), panels follow the scheme
    open_page(PAGE, scheme="slate", width=1280)
    driver.execute_script("document.querySelector('.unipo-inspector').scrollIntoView()")
    _wait(driver, "return document.querySelector('.unipo-inspector').getAttribute('data-ready') === '1'")
    pairs = driver.execute_script("return [...document.querySelectorAll('.unipo-tok')].slice(0, 60)"
                                  ".map(t => [getComputedStyle(t).backgroundColor, getComputedStyle(t).color])")
    for bg, fg in pairs:
        if "rgba(0, 0, 0, 0)" in bg:
            continue
        assert _rgb_hex(fg) == TS.text_colour(_rgb_hex(bg))
    shots = [screenshot(PAGE, "views-light", scheme="default", width=1280),
             screenshot(PAGE, "views-dark", scheme="slate", width=1280),
             screenshot(PAGE, "views-390", scheme="default", width=390)]
    for shot in shots:
        assert shot.stat().st_size > 10_000
    assert _overflow(driver) <= 0
    assert console_errors(driver) == []


def test_instant_navigation_renders_the_views_once(open_page, driver, served_as_built, console_errors):
    if not served_as_built:
        pytest.skip("the reused site was built for another URL; instant navigation follows the sitemap")
    H.watch_sitemap(driver)
    open_page("")
    H.wait_instant_navigation(driver)
    driver.execute_script("""window.__samePage = 7;
        const a = document.createElement('a'); a.href = 'reference/views/'; a.id = 'unipo-test-link'; a.textContent = 'views';
        document.querySelector('[data-md-component=content]').prepend(a);""")
    driver.find_element(By.ID, "unipo-test-link").click()
    _wait(driver, "return location.pathname.endsWith('/reference/views/') && "
                  "document.querySelector('.unipo-inspector') && "
                  "(document.querySelector('.unipo-inspector').scrollIntoView() || true) && "
                  "document.querySelector('.unipo-inspector').getAttribute('data-ready') === '1'", what="views page")
    assert driver.execute_script("return window.__samePage") == 7
    # one set of controls per inspector, even though the renderers ran again on the new page
    assert driver.execute_script("return document.querySelectorAll('.unipo-inspector .unipo-step-select').length") == 1
    assert console_errors(driver) == []


# ---------------------------------------------------------------------------
# Every algorithm of the runs directory, each explained on a page of its own
# ---------------------------------------------------------------------------

@pytest.fixture(scope="module")
def every_run_site(tmp_path_factory):
    from unipo_build.core.runs import discover, runs_source

    runs = [r for r in discover() if r.ok and r.config is not None and r.token_steps()]
    if not runs:
        pytest.skip(f"no run with token files in {runs_source().describe()}")
    pages = {f"{r.id}.md": f'# {r.id}\n\n{{{{ step_inspector("{r.id}") }}}}\n\n'
                           f'{{{{ objective_card("{r.header.algorithm}", run="{r.id}") }}}}\n' for r in runs}
    pages["index.md"] = "# Runs\n"
    root = tmp_path_factory.mktemp("every-run")
    site = H.build_test_site(root, pages, runs_source().paths[0])
    with H.serving(site, prefix="/") as url:
        yield url, [r.id for r in runs]


def test_every_algorithm_explains_a_selected_token(every_run_site, driver, console_errors):
    """For every run (REINFORCE, PPO with GAE, GRPO, DAPO, Dr. GRPO...), clicking tokens of several
    responses fills the explainer, and every recomputed number it shows equals the log."""
    url, run_ids = every_run_site
    for run_id in run_ids:
        driver.get(f"{url}{run_id}/")
        _wait(driver, "return document.querySelector('.unipo-inspector') && "
                      "(document.querySelector('.unipo-inspector').scrollIntoView() || true) && "
                      "document.querySelector('.unipo-inspector').getAttribute('data-ready')", what=f"{run_id} ready")
        n = driver.execute_script("return document.querySelectorAll('.unipo-inspector .unipo-tok').length")
        for index in sorted({0, n // 3, (2 * n) // 3, n - 1}):
            driver.execute_script("document.querySelector('.unipo-explainer').removeAttribute('data-live-ready')")
            _click(driver, ".unipo-inspector .unipo-tok", index)
            _wait(driver, "return document.querySelector('.unipo-explainer').getAttribute('data-live-ready')",
                  what=f"{run_id} token {index}")
            notes = driver.execute_script(
                "return [...document.querySelectorAll('.unipo-explainer .unipo-num-note')].map(e => e.textContent)")
            warnings = driver.execute_script(
                "return [...document.querySelectorAll('.unipo-explainer .unipo-live-warn')].map(e => e.textContent)")
            assert notes and all("equals the log" in note for note in notes), (run_id, index, notes)
            assert warnings == [], (run_id, index, warnings)
        assert console_errors(driver) == [], run_id
