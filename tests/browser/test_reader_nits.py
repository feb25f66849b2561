"""What a reader meets on both run sets (issue 33), in Chromium on the course as built:

- on a phone (390 px, mobile emulation) the Explainer card under a selected token keeps its
  computation ("how" column) under each row's label and value, inside the screen, and the group's
  prompt is not squeezed beside the group buttons (screenshots, light and dark);
- the token-objective legend draws no tick over an end label; "Why is J ≈ 0?" sits inside the
  inspector; a token is named one way everywhere (a leading space as ·);
- a group larger than the tiny set's shows its first answers with the rest one click away, and
  an update's bars fold to the open group's, so the gpu set's pages keep their budgets.
"""

from __future__ import annotations

import pytest
from selenium.webdriver.common.by import By

import browser_harness as H

pytestmark = pytest.mark.browser

GRPO = "course/algorithms/grpo/"


def _wait(driver, js: str, *args, what: str = "", timeout: float = 20.0):
    return H.wait_js(driver, js, *args, timeout=timeout, what=what)


def _inspector(driver) -> str:
    uid = driver.execute_script("return document.querySelector('.unipo-explorer[data-run]').getAttribute('data-inspector')")
    driver.execute_script("document.getElementById(arguments[0]).scrollIntoView()", uid)
    _wait(driver, "return document.getElementById(arguments[0]).dataset.ready === '1'", uid, what="inspector ready")
    return uid


def _select_token_with_signal(driver, uid: str):
    """Click a token whose response has a nonzero advantage (its card has rows to compute)."""
    token = driver.execute_script("""
        const insp = document.getElementById(arguments[0]);
        const toks = [...insp.querySelectorAll('.unipo-group .unipo-tok:not(.unipo-tok--masked)')];
        const pick = toks.find(t => /advantage [+\\u2212]/.test(t.closest('.unipo-response').querySelector('.unipo-response-meta').textContent)) || toks[0];
        pick.scrollIntoView({block: 'center'});
        return pick;""", uid)
    token.click()
    _wait(driver, "const c = document.querySelector('#' + arguments[0] + ' .unipo-token-readout details.unipo-token-card');"
                  "return c && c.open && c.querySelector('td.unipo-how')", uid, what="the token's card")


def test_the_phone_shows_the_explainers_computation(open_page, driver, run_set, console_errors):
    for scheme in ("default", "slate"):
        open_page(run_set + GRPO, width=390, scheme=scheme)
        uid = _inspector(driver)
        _select_token_with_signal(driver, uid)
        card = driver.execute_script("""
            const c = document.querySelector('#' + arguments[0] + ' .unipo-token-readout details.unipo-token-card');
            const hows = [...c.querySelectorAll('td.unipo-how')].filter(td => td.textContent.trim());
            const box = td => { const r = td.getBoundingClientRect(); return [r.left, r.right, r.width, r.height]; };
            return {n: hows.length, text: hows.map(td => td.textContent), boxes: hows.map(box),
                    rows: hows.map(td => { const tr = td.closest('tr'); const th = tr.querySelector('th').getBoundingClientRect();
                                           return td.getBoundingClientRect().top >= th.bottom - 1; }),
                    overflow: document.documentElement.scrollWidth - innerWidth};""", uid)
        assert card["n"] >= 2, card
        # every computation is shown, across the card under its label and value, inside the screen
        assert all(w > 100 and h > 0 and left >= 0 and right <= 390 for left, right, w, h in card["boxes"]), card
        assert all(card["rows"]), card
        assert any("\u00d7" in t for t in card["text"]), card  # e.g. "1 × −0.3536"
        assert card["overflow"] <= 0, card
        # the prompt has the group's width: the group buttons are on a line of their own
        prompt = driver.execute_script("""
            const g = document.querySelector('#' + arguments[0] + ' .unipo-group');
            const p = g.querySelector('.unipo-prompt').getBoundingClientRect();
            const steps = g.querySelector('.unipo-group-steps').getBoundingClientRect();
            const inner = g.clientWidth - parseFloat(getComputedStyle(g).paddingLeft) - parseFloat(getComputedStyle(g).paddingRight);
            return {ratio: p.width / inner, below: p.top >= steps.bottom - 1};""", uid)
        assert prompt["ratio"] > 0.95 and prompt["below"], prompt
        readout = driver.find_element(By.CSS_SELECTOR, f"#{uid} .unipo-token-readout")
        driver.execute_script("arguments[0].scrollIntoView({block: 'start'})", readout)
        name = f"phone-explainer-{run_set.strip('/') or 'tiny'}-{'dark' if scheme == 'slate' else 'light'}.png"
        readout.screenshot(str(H.screenshot_dir() / name))
    assert console_errors(driver) == []


def test_legend_ticks_j_note_and_token_names(open_page, driver, run_set, console_errors):
    open_page(run_set + GRPO)
    uid = _inspector(driver)
    # every step with token detail: no tick of the legend touches another
    steps = driver.execute_script("return [...document.getElementById(arguments[0] + '-step').options].map(o => o.value)", uid)
    for step in steps:
        driver.execute_script("const s = document.getElementById(arguments[0] + '-step'); s.value = arguments[1];"
                              "s.dispatchEvent(new Event('change'));", uid, step)
        _wait(driver, "const i = document.getElementById(arguments[0]); return i.dataset.step === arguments[1] && i.dataset.ready === '1'",
              uid, step, what=f"step {step}")
        ticks = driver.execute_script("""
            return [...document.querySelectorAll('#' + arguments[0] + ' .unipo-legend-tick')].map(t => {
              const r = t.getBoundingClientRect(); return [t.textContent, r.left, r.right]; });""", uid)
        assert len(ticks) >= 1
        for (a, _, a_right), (b, b_left, _) in zip(ticks, ticks[1:]):
            assert a_right <= b_left, (step, ticks)
        note = driver.execute_script("""
            const n = document.querySelector('#' + arguments[0] + ' details.unipo-step-note > summary');
            if (!n) return null;
            const box = n.closest('.unipo-inspector-body').getBoundingClientRect(), r = n.getBoundingClientRect();
            return [r.left - box.left, box.right - r.right];""", uid)
        if note is not None:
            assert note[0] >= 0 and note[1] >= 0, (step, note)
    # a token is named as the Tokens display shows it: a leading space as ·, between quotes
    shown = driver.execute_script("""
        const insp = document.getElementById(arguments[0]);
        const tok = [...insp.querySelectorAll('.unipo-group .unipo-tok')].find(t => /^ \\S/.test(t.textContent));
        if (!tok) return null;
        tok.scrollIntoView({block: 'center'}); tok.click();
        return [tok.textContent, insp.querySelector('.unipo-readout-token').textContent];""", uid)
    if shown is not None:
        text, label = shown
        assert label == "\u201c\u2068" + "\u00b7" + text[1:] + "\u2069\u201d", shown
    for link in driver.find_elements(By.CSS_SELECTOR, ".unipo-path-link"):
        label = link.text
        if "token \u201c" in label:
            assert " " not in label.split("\u201c", 1)[1].split("\u201d", 1)[0], label
    assert console_errors(driver) == []


def test_large_groups_fold_their_answers_and_bars(open_page, driver, run_set, console_errors):
    open_page(run_set + GRPO)
    uid = _inspector(driver)
    state = driver.execute_script("""
        const insp = document.getElementById(arguments[0]);
        const data = window.UNIPOViews.readData(document.getElementById(arguments[0]));
        const g = insp.querySelector('.unipo-group');
        return {shown: g.querySelectorAll('.unipo-response').length, more: !!g.querySelector('.unipo-responses-more'),
                right: g.querySelectorAll('.unipo-response-mark--correct').length, wrong: g.querySelectorAll('.unipo-response-mark--wrong').length,
                correct: +g.querySelector('.unipo-group-head .unipo-fact').textContent.split('/')[0],
                bars: insp.querySelectorAll('.unipo-bars .unipo-bar-row').length,
                toggle: (insp.querySelector('.unipo-bars-toggle') || {}).textContent || ''};""", uid)
    size = driver.execute_script("""
        const insp = document.getElementById(arguments[0]);
        const key = insp.dataset.group;
        const row = [...insp.querySelectorAll('.unipo-bar-row')].find(r => r.dataset.key === key);
        return row ? +row.querySelector('.unipo-bar-facts').textContent.split('/')[1].split(' ')[0] : null;""", uid)
    if size is not None and size <= 8:
        assert state["shown"] == size and not state["more"], state  # the tiny set's groups show every answer
    elif size is not None:
        # the first 4, and the first right and the first wrong answer wherever they are
        assert 4 <= state["shown"] <= 6 and state["more"], state
        if 0 < state["correct"] < size:
            assert state["right"] >= 1 and state["wrong"] >= 1, state
        more = driver.find_element(By.CSS_SELECTOR, f"#{uid} .unipo-group .unipo-responses-more")
        driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", more)
        more.click()
        _wait(driver, "return document.querySelectorAll('#' + arguments[0] + ' .unipo-group .unipo-response').length === arguments[1]",
              uid, size, what="every answer of the group")
        order = driver.execute_script("return [...document.querySelectorAll('#' + arguments[0] + ' .unipo-group .unipo-response')]"
                                      ".map(r => +r.dataset.response)", uid)
        assert order == sorted(order), order
        coloured = driver.execute_script("return [...document.querySelectorAll('#' + arguments[0] + ' .unipo-group .unipo-tok:not(.unipo-tok--masked)')]"
                                         ".every(t => t.style.background)", uid)
        assert coloured
    # the bars: the open group's while folded, every group's unfolded
    assert state["bars"] == 1, state
    toggle = driver.find_element(By.CSS_SELECTOR, f"#{uid} .unipo-bars-toggle")
    driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", toggle)
    toggle.click()
    n = int(state["toggle"].split("Show all ")[1].split(" ")[0])
    _wait(driver, "return document.querySelectorAll('#' + arguments[0] + ' .unipo-bars .unipo-bar-row').length === arguments[1]",
          uid, n, what="every group's bar")
    assert console_errors(driver) == []
