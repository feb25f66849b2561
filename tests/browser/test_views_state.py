"""The views as one instrument (issue 21), in Chromium on the shipped runs:

- every choice in the URL hash: the inspector's step, group, token and colour survive a reload,
  Back and a shared link, and Back returns to the token where the reader was;
- the numbers follow the token: its Algorithm Explainer card opens right under it, one value per
  quantity; after Back the page's Explainer shows no token that is no longer selected;
- the two guided paths of the UNIPO paper (GRPO chapter; aggregation page), walked link by link;
- the comparison of any two algorithms on a chapter, its pair in the URL;
- the Explorer at a step without token detail says so where the reader looks and moves focus;
- a hash naming what the page does not have opens the default with a one-line note.
"""

from __future__ import annotations

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import Select

import browser_harness as H

pytestmark = pytest.mark.browser

GRPO = "course/algorithms/grpo/"
DAPO = "course/algorithms/dapo/"
AGGREGATION = "course/compare/aggregation/"


def _wait(driver, js: str, *args, timeout: float = 20.0, what: str = ""):
    return H.wait_js(driver, js, *args, timeout=timeout, what=what)


def _center_click(driver, element):
    driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", element)
    element.click()


def _explorer_inspector(driver) -> str:
    """The id of the GRPO chapter's Training Explorer's own Step Inspector (after it is ready)."""
    uid = driver.execute_script("return document.querySelector('.unipo-explorer[data-run]').getAttribute('data-inspector')")
    assert uid, "the GRPO chapter's explorer has no inspector"
    return uid


_INSPECTOR_STATE = """
const insp = document.getElementById(arguments[0]);
const sel = insp.querySelector('.unipo-tok--selected');
const readout = insp.querySelector('.unipo-token-readout');
const card = readout && readout.querySelector('details.unipo-token-card');
const r = sel && sel.getBoundingClientRect();
return {ready: insp.dataset.ready || null, step: insp.dataset.step, group: insp.dataset.group,
        selected: insp.dataset.selected || null, quantity: insp.dataset.quantity || null,
        status: (insp.querySelector('.unipo-inspector-status') || {}).textContent || '',
        tokenTop: r ? r.top : null, tokenInView: r ? (r.top >= 0 && r.bottom <= innerHeight) : false,
        cardOpen: !!(card && card.open), hash: location.hash,
        cardGap: card && sel ? card.getBoundingClientRect().top - r.bottom : null};
"""


def _istate(driver, uid: str) -> dict:
    return driver.execute_script(_INSPECTOR_STATE, uid)


def _walk_path(driver, path: str) -> list:
    links = driver.find_elements(By.CSS_SELECTOR, f'.unipo-path[data-path="{path}"] .unipo-path-link')
    assert links, f"no guided path {path!r} on the page"
    for link in links:
        assert link.get_attribute("data-path-ready") == "1", link.get_attribute("outerHTML")
        assert "#" in (link.get_attribute("href") or "")
    return links


# ------------------------------------------------------------------ item 1 and 2: state, token card


def test_group_and_token_survive_reload_back_and_a_shared_link(open_page, driver, run_set, console_errors):
    open_page(run_set + GRPO)
    uid = _explorer_inspector(driver)
    short = uid[len("unipo-"):]
    driver.execute_script("document.getElementById(arguments[0]).scrollIntoView()", uid)
    _wait(driver, "return document.getElementById(arguments[0]).dataset.ready === '1'", uid, what="inspector ready")
    first_group = _istate(driver, uid)["group"]
    # open another logged group, then a token of it whose advantage is 0 or not: any token
    # every group's bar (only the open group's shows at first)
    _center_click(driver, driver.find_element(By.CSS_SELECTOR, f"#{uid} .unipo-bars-toggle"))
    buttons = [b for b in driver.find_elements(By.CSS_SELECTOR, f"#{uid} .unipo-bars .unipo-group-btn")
               if b.get_attribute("data-key") != first_group and b.is_displayed()]
    key = buttons[-1].get_attribute("data-key")
    _center_click(driver, buttons[-1])
    _wait(driver, "return document.getElementById(arguments[0]).dataset.group === arguments[1]", uid, key)
    tokens = driver.find_elements(By.CSS_SELECTOR, f"#{uid} .unipo-group .unipo-tok:not(.unipo-tok--masked)")
    token = tokens[min(5, len(tokens) - 1)]
    _center_click(driver, token)
    chosen = _istate(driver, uid)
    assert chosen["selected"] and chosen["hash"].startswith(f"#{short}:")
    assert f"group={key}" in chosen["hash"] and "token=" in chosen["hash"] and "step=" in chosen["hash"]
    # the numbers follow the token: its Explainer card is open, directly under it
    assert chosen["cardOpen"] and 0 <= chosen["cardGap"] < 400, chosen
    # reload: the same group and token
    driver.refresh()
    _wait(driver, "return document.getElementById(arguments[0]).dataset.selected", uid, what="selection after reload")
    again = _istate(driver, uid)
    assert (again["group"], again["selected"], again["step"]) == (chosen["group"], chosen["selected"], chosen["step"])
    assert again["tokenInView"], "a reload should bring the named token into view"
    # another group (a new history entry), scroll away, then Back: the token and where it was
    _center_click(driver, driver.find_element(By.CSS_SELECTOR, f"#{uid} .unipo-group-step:not([disabled])"))
    _wait(driver, "return document.getElementById(arguments[0]).dataset.group !== arguments[1]", uid, key)
    assert not _istate(driver, uid)["selected"]
    driver.execute_script("window.scrollTo(0, 0)")
    driver.back()
    _wait(driver, "return document.getElementById(arguments[0]).dataset.selected === arguments[1]", uid, chosen["selected"],
          what="selection after Back")
    _wait(driver, "const s = document.querySelector('#' + arguments[0] + ' .unipo-tok--selected');"
                  "const r = s.getBoundingClientRect(); return r.top >= 0 && r.bottom <= innerHeight;", uid,
          what="the token in view after Back")
    # a shared link, in a fresh load of the page
    driver.get(driver.current_url.split("#")[0] + chosen["hash"])
    _wait(driver, "return document.getElementById(arguments[0]) && document.getElementById(arguments[0]).dataset.selected",
          uid, what="selection from a shared link")
    shared = _istate(driver, uid)
    assert (shared["group"], shared["selected"]) == (chosen["group"], chosen["selected"])
    assert console_errors(driver) == []


def test_back_after_token_clicks_stays_on_the_page(open_page, driver, run_set, console_errors):
    """Each token click is a history entry (issue 33): Back undoes the last click and stays on the
    page, down to the state before the first one; Forward redoes it. On both run sets."""
    open_page(run_set + GRPO)
    driver.execute_script("window.unipoSameDocument = true")
    page = driver.execute_script("return location.pathname")
    uid = _explorer_inspector(driver)
    driver.execute_script("document.getElementById(arguments[0]).scrollIntoView()", uid)
    _wait(driver, "return document.getElementById(arguments[0]).dataset.ready === '1'", uid, what="inspector ready")
    before = _istate(driver, uid)
    entries = driver.execute_script("return history.length")
    tokens = driver.find_elements(By.CSS_SELECTOR, f"#{uid} .unipo-group .unipo-tok:not(.unipo-tok--masked)")
    assert len(tokens) >= 4
    picked = []
    for token in (tokens[1], tokens[3]):
        _center_click(driver, token)
        _wait(driver, "return document.getElementById(arguments[0]).dataset.selected !== arguments[1] && "
                      "document.getElementById(arguments[0]).dataset.selected", uid, picked[-1] if picked else before["selected"],
              what="the clicked token selected")
        picked.append(_istate(driver, uid)["selected"])
    assert picked[0] != picked[1]
    assert driver.execute_script("return history.length") == entries + 2, "each token click adds one history entry"
    driver.back()
    _wait(driver, "return document.getElementById(arguments[0]).dataset.selected === arguments[1]", uid, picked[0],
          what="the first token again after Back")
    driver.back()
    _wait(driver, "return (document.getElementById(arguments[0]).dataset.selected || null) === arguments[1]", uid,
          before["selected"], what="the state before the first click after a second Back")
    assert driver.execute_script("return location.pathname") == page
    assert driver.execute_script("return window.unipoSameDocument") is True, "Back left the page"
    driver.forward()
    _wait(driver, "return document.getElementById(arguments[0]).dataset.selected === arguments[1]", uid, picked[0],
          what="Forward redoes the first click")
    assert console_errors(driver) == []


def test_one_value_per_quantity_and_float_noise_reads_zero(open_page, driver, console_errors):
    """In the readout, the token objective and KL are shown once each and agree with the card."""
    open_page(GRPO)
    uid = _explorer_inspector(driver)
    link = _walk_path(driver, "all-correct")[2]
    _center_click(driver, link)
    _wait(driver, "return document.getElementById(arguments[0]).dataset.selected", uid, what="path token")
    values = driver.execute_script("""
        const ro = document.querySelector('#' + arguments[0] + ' .unipo-token-readout');
        const get = k => { const n = ro.querySelector('.unipo-readout-value[data-key=' + k + ']');
                           return n ? [n.querySelector('dd').textContent, +n.dataset.value] : null; };
        const card = k => { const n = ro.querySelector('.unipo-token-card .unipo-num-value[data-key=' + k + ']');
                            return n ? [n.textContent, +n.dataset.value] : null; };
        return {objective: get('objective'), kl: get('kl'), cardObjective: card('objective'), cardKl: card('kl'),
                sum: ro.querySelector('.unipo-readout-sum'),
                noise: !!ro.querySelector('.unipo-noise-note'), tiny: !!ro.querySelector('[data-tiny]')};
    """, uid)
    # one source: the readout's numbers are the card's numbers, to the last digit
    assert values["objective"][1] == values["cardObjective"][1]
    assert values["kl"][1] == values["cardKl"][1]
    assert values["sum"] is None  # the card says how it adds up, term by term: no second line
    # a value below float precision would read 0*, with its note; above it, no note
    for text, value in (values["objective"], values["kl"]):
        assert (text == "0*") == (0 < abs(value) < 1e-7)
    assert values["noise"] == (values["tiny"] or values["objective"][0] == "0*" or values["kl"][0] == "0*")
    # after the selection is gone (Escape), the page's Explainer shows no token
    driver.switch_to.active_element.send_keys(Keys.ESCAPE)
    _wait(driver, "return !document.getElementById(arguments[0]).dataset.selected", uid)
    assert driver.execute_script("return [...document.querySelectorAll('.unipo-explainer')]"
                                 ".every(e => !e.hasAttribute('data-token'))")
    assert console_errors(driver) == []


# ------------------------------------------------------------------ item 3: the guided paths


def test_guided_path_all_correct_group_on_the_grpo_chapter(open_page, driver, console_errors):
    open_page(GRPO)
    uid = _explorer_inspector(driver)
    links = _walk_path(driver, "all-correct")
    params = [dict(p.split("=") for p in link.get_attribute("data-path-params").split(",")) for link in links]
    step, group = params[1]["step"], params[1]["group"]
    # 1: the Training Explorer at the update, its inspector there
    _center_click(driver, links[0])
    _wait(driver, "return document.getElementById(arguments[0]).dataset.step === arguments[1]", uid, step)
    explorer_id = driver.execute_script("return document.querySelector('.unipo-explorer[data-run]').id")
    assert f"{explorer_id[len('unipo-'):]}:step={step}" in driver.execute_script("return location.hash")
    # 2: the all-correct group, every advantage 0
    _center_click(driver, links[1])
    _wait(driver, "return document.getElementById(arguments[0]).dataset.group === arguments[1]", uid, group)
    advantages = driver.execute_script(
        "return [...document.querySelectorAll('#' + arguments[0] + ' .unipo-group .unipo-response-adv')].map(n => n.textContent)", uid)
    assert advantages and set(advantages) == {"0"}
    # 3: the token: advantage 0, its objective the KL term alone, its card open beside it
    _center_click(driver, links[2])
    _wait(driver, "return document.getElementById(arguments[0]).dataset.selected", uid, what="the path's token")
    state = _istate(driver, uid)
    r, t = params[2]["token"].split(".")
    assert state["selected"] == f"{group}:{r}:{t}" and state["cardOpen"] and state["tokenInView"]
    card = driver.execute_script("""
        const ro = document.querySelector('#' + arguments[0] + ' .unipo-token-readout');
        const v = k => +ro.querySelector('.unipo-token-card .unipo-num-value[data-key=' + k + ']').dataset.value;
        return {adv: +ro.querySelector('.unipo-readout-value[data-key=advantage]').dataset.value,
                surrogate: v('surrogate'), objective: v('objective'), kl: v('kl'), klTerm: v('kl_term'),
                weight: !!ro.querySelector('.unipo-token-card .unipo-num-value[data-key=weight]')};
    """, uid)
    assert card["adv"] == 0 and card["surrogate"] == 0 and card["kl"] > 0 and card["weight"]
    assert card["objective"] == pytest.approx(card["klTerm"], rel=1e-12) and card["klTerm"] < 0
    # the path's sentence quotes the same token objective
    sentence = driver.execute_script("return document.querySelectorAll('.unipo-path[data-path=all-correct] .unipo-path-step p')[2].textContent")
    shown = driver.execute_script(
        "return document.querySelector('#' + arguments[0] + ' .unipo-readout-value[data-key=objective] dd').textContent", uid)
    assert shown in sentence
    # 4: coloured by KL; Back returns to the token coloured by objective
    _center_click(driver, links[3])
    _wait(driver, "return document.getElementById(arguments[0]).dataset.quantity === 'kl'", uid)
    driver.back()
    _wait(driver, "return document.getElementById(arguments[0]).dataset.quantity === 'objective'", uid)
    assert _istate(driver, uid)["selected"] == f"{group}:{r}:{t}"
    assert console_errors(driver) == []


def test_guided_path_dapo_against_dr_grpo(open_page, driver, set_width, console_errors):
    open_page(AGGREGATION)
    links = _walk_path(driver, "aggregation")
    _center_click(driver, links[0])
    _wait(driver, "return document.querySelector('.unipo-compare-selector').dataset.pair === 'dapo|dr_grpo'")
    assert driver.execute_script(
        "return document.querySelector('.unipo-compare-selector .unipo-diff-row[data-slot=aggregation] details').open")
    assert "a=dapo" in driver.execute_script("return location.hash")
    # the two aggregation cards side by side on a desktop, each with its run's numbers
    cards = driver.execute_script("""return [...document.querySelectorAll('.unipo-agg-card')].map(c => {
        const r = c.getBoundingClientRect();
        return {alg: c.dataset.algorithm, top: r.top, left: r.left,
                weights: [...c.querySelectorAll('tbody td.unipo-num')].map(n => +n.dataset.value)}; });""")
    assert [c["alg"] for c in cards] == ["dapo", "dr_grpo"]
    assert abs(cards[0]["top"] - cards[1]["top"]) < 2 and cards[1]["left"] > cards[0]["left"]
    for c in cards:
        # per token: the same weight for the long and the short answer (both aggregations);
        # per answer: the long answer's total exceeds the short one's
        long_token, long_total, short_token, short_total = c["weights"]
        assert long_token == pytest.approx(short_token) and long_total > short_total > 0
    # the length-bias figure: DAPO, GRPO and Dr. GRPO named on their lines
    panels = driver.execute_script("""
        const figure = [...document.querySelectorAll('figure')].find(f => /named at its end/.test(f.textContent));
        return figure ? [...figure.querySelectorAll('.unipo-vega')].map(v => [...v.querySelectorAll('svg text')].map(t => t.textContent)) : null;""")
    assert panels is not None and len(panels) == 2
    for texts, title in zip(panels, ("Wrong answers", "Right answers")):
        assert title in texts
        for name in ("DAPO", "GRPO", "Dr. GRPO"):
            assert name in texts, (name, texts)
    # on a phone the cards stack
    set_width(390, 844)
    stacked = driver.execute_script("return [...document.querySelectorAll('.unipo-agg-card')].map(c => c.getBoundingClientRect().top)")
    assert stacked[1] > stacked[0] + 50
    assert console_errors(driver) == []


# ------------------------------------------------------------------ item 4: any pair on a chapter


def test_a_chapter_compares_any_two_algorithms_and_keeps_the_pair_in_the_url(open_page, driver, console_errors):
    open_page(DAPO)
    selector = driver.find_element(By.CSS_SELECTOR, ".unipo-compare-selector")
    driver.execute_script("arguments[0].closest('details').open = true", selector)
    Select(selector.find_element(By.CSS_SELECTOR, 'select[data-side="a"]')).select_by_value("dr_grpo")
    _wait(driver, "return document.querySelector('.unipo-compare-selector').dataset.pair === 'dr_grpo|dapo'")
    assert "a=dr_grpo" in driver.execute_script("return location.hash")
    driver.refresh()
    _wait(driver, "return document.querySelector('.unipo-compare-selector').dataset.pair === 'dr_grpo|dapo'",
          what="pair after reload")
    # a selected token's card shows the chosen algorithm's weight for it
    uid = driver.execute_script("return document.querySelector('.unipo-explorer[data-run]').getAttribute('data-inspector')")
    driver.execute_script("document.getElementById(arguments[0]).scrollIntoView()", uid)
    _wait(driver, "return document.getElementById(arguments[0]).dataset.ready === '1'", uid)
    token = driver.find_element(By.CSS_SELECTOR, f"#{uid} .unipo-group .unipo-tok:not(.unipo-tok--masked)")
    _center_click(driver, token)
    other = _wait(driver, "const c = document.querySelector('#' + arguments[0] + ' .unipo-token-card');"
                          "return c && c.dataset.comparison", uid)
    assert other == "dr_grpo"
    weight = driver.execute_script("return +document.querySelector('#' + arguments[0] + ' [data-key=other_weight]').dataset.value", uid)
    assert weight > 0
    # Back undoes the token click (a history entry of its own), the pair stays; Back again goes to
    # the entry before the pair was chosen: the default pair
    clicked = driver.execute_script("return document.getElementById(arguments[0]).dataset.selected", uid)
    driver.back()
    _wait(driver, "return document.getElementById(arguments[0]).dataset.selected !== arguments[1]", uid, clicked,
          what="the token click undone")
    assert driver.execute_script("return document.querySelector('.unipo-compare-selector').dataset.pair") == "dr_grpo|dapo"
    driver.back()
    _wait(driver, "return document.querySelector('.unipo-compare-selector').dataset.pair === 'grpo|dapo'", what="pair after Back")
    assert console_errors(driver) == []


# ------------------------------------------------------------------ item 5: explorer and keyboard


def test_keyboard_opens_a_step_without_detail_and_focus_follows(open_page, driver, console_errors):
    open_page(GRPO)
    uid = _explorer_inspector(driver)
    chart = driver.find_element(By.CSS_SELECTOR, ".unipo-explorer .unipo-explorer__chart")
    driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", chart)
    # Tab reaches the chart (the keyboard's way in)
    driver.execute_script("document.querySelector('.unipo-explorer .unipo-explorer__chip').focus()")
    for _ in range(30):
        if "unipo-explorer__chart" in (driver.switch_to.active_element.get_attribute("class") or ""):
            break
        driver.switch_to.active_element.send_keys(Keys.TAB)
    else:
        pytest.fail("Tab never reached the explorer's chart")
    active = driver.switch_to.active_element
    active.send_keys(Keys.HOME)
    # a step well inside the run: the shipped runs log tokens on a few steps only (start, middle, end)
    for _ in range(3):
        active.send_keys(Keys.PAGE_UP)
    active.send_keys(Keys.ENTER)
    _wait(driver, "return /no token data/.test(document.getElementById(arguments[0]).querySelector('.unipo-inspector-status').textContent)",
          uid, what="the inspector saying the step has no token data")
    # the news is where the reader looks, and the keyboard focus went there with the scroll
    H.wait_settled(driver, what="the smooth scroll to the status line")
    seen = driver.execute_script("""
        const line = document.getElementById(arguments[0]).querySelector('.unipo-inspector-status');
        const r = line.getBoundingClientRect();
        return {focused: document.activeElement === line, inView: r.top >= 0 && r.bottom <= innerHeight};""", uid)
    assert seen == {"focused": True, "inView": True}
    # on from there by keyboard to a token; Enter selects it and opens its card
    for _ in range(60):
        driver.switch_to.active_element.send_keys(Keys.TAB)
        if "unipo-tok" in (driver.switch_to.active_element.get_attribute("class") or ""):
            break
    else:
        pytest.fail("Tab never reached a token")
    driver.switch_to.active_element.send_keys(Keys.ENTER)
    _wait(driver, "const c = document.querySelector('#' + arguments[0] + ' .unipo-token-card'); return c && c.open", uid)
    assert console_errors(driver) == []


# ------------------------------------------------------------------ bad input


def test_a_hash_naming_what_the_page_lacks_opens_the_default_with_a_note(open_page, driver, console_errors):
    open_page(GRPO)
    uid = _explorer_inspector(driver)
    explorer = driver.execute_script("return document.querySelector('.unipo-explorer[data-run]').id")[len("unipo-"):]
    selector = driver.execute_script("return document.querySelector('.unipo-compare-selector').id")[len("unipo-"):]
    bad = (f"#{uid[len('unipo-'):]}:step=999999,group=77,token=9.99999,colour=sparkle;"
           f"{explorer}:step=-40,metrics=no/such;{selector}:a=nosuch,b=grpo")
    driver.get(driver.current_url.split("#")[0] + bad)
    _wait(driver, "const i = document.getElementById(arguments[0]); return i && i.dataset.ready === '1'", uid,
          what="inspector at its default")
    state = _istate(driver, uid)
    assert "does not have" in state["status"] and "step 999999" in state["status"] and "group 77" in state["status"]
    assert state["status"].count("\n") == 0
    assert driver.execute_script("return document.querySelectorAll('#' + arguments[0] + ' .unipo-group .unipo-tok').length", uid) > 0
    notes = driver.execute_script("return [...document.querySelectorAll('.unipo-state-note')].map(n => n.textContent)")
    assert any("step -40" in n and "no/such" in n for n in notes), notes
    assert any("nosuch" in n for n in notes), notes
    assert driver.execute_script("return document.querySelector('.unipo-compare-selector').dataset.pair") == "ppo|grpo"
    assert driver.execute_script("return document.querySelectorAll('.unipo-explorer svg, .unipo-explorer canvas').length") > 0
    assert console_errors(driver) == []


# ------------------------------------------------------------------ item 1: playground settings


def test_playground_settings_survive_reload_back_and_a_bad_link(open_page, driver, console_errors):
    page = "playgrounds/loss-shapes/"
    signal = """const el = document.querySelector('[data-pg-chart="shapes"] .unipo-vega');
                const view = window.UNIPO.view(el); return view ? view.signal('eps_high') : null;"""
    ready = """return [...document.querySelectorAll('template.unipo-data[id^="pg-data-"]')]
               .every(s => s.getAttribute('data-pg-ready') === 'true');"""
    open_page(page)
    _wait(driver, ready, what="playground ready")
    default = driver.execute_script(signal)
    # a slider let go: its value in the URL, the figure follows
    driver.execute_script("""const i = document.querySelector('[data-pg-control="eps_high"]'); i.value = '24';
        i.dispatchEvent(new Event('input', {bubbles: true})); i.dispatchEvent(new Event('change', {bubbles: true}));""")
    _wait(driver, "return location.hash === '#pg-shapes:eps_high=24'", what="the setting in the URL")
    _wait(driver, "const v = (function () {" + signal + "})(); return v !== null && Math.abs(v - 0.5) < 1e-9;",
          what="the figure at the new setting")
    # reload: the slider and the figure at the setting
    driver.refresh()
    _wait(driver, ready, what="playground ready after reload")
    _wait(driver, "const v = (function () {" + signal + "})(); return v !== null && Math.abs(v - 0.5) < 1e-9;",
          what="the figure at the restored setting")
    assert driver.execute_script("return document.querySelector('[data-pg-control=\"eps_high\"]').value") == "24"
    # Back: the defaults again
    driver.back()
    _wait(driver, "const v = (function () {" + signal + "})(); return v !== null && Math.abs(v - arguments[0]) < 1e-9;",
          default, what="the default after Back")
    # a value the control cannot take: its default, and one line saying so
    driver.get(driver.current_url.split("#")[0] + "#pg-shapes:eps_high=999,eps=abc")
    _wait(driver, ready, what="playground ready with a bad link")
    note = _wait(driver, "const n = document.querySelector('.unipo-state-note[data-for=\"pg-shapes\"]'); return n && n.textContent",
                 what="the note")
    assert "eps_high = 999" in note and "eps = abc" in note and "\n" not in note
    assert driver.execute_script(signal) == pytest.approx(default)
    assert console_errors(driver) == []
