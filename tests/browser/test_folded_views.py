"""Views a chapter folds or puts in a content tab (issue 47 item 5: the budgets once read) start when the reader
opens them, and not before: a teaching moment's Step Inspector in a tab not shown, an inspector in a closed fold,
and a second Algorithm Explainer written in a <template> (objective_card(..., fold=...)), which is not in the
page at all until its fold opens."""

from __future__ import annotations

import pytest
from selenium.webdriver.common.by import By

import browser_harness as H

pytestmark = pytest.mark.browser

GRPO = "course/algorithms/grpo/"
PPO = "course/algorithms/ppo/"
CISPO = "course/algorithms/cispo/"

_INSPECTOR_JS = """
const i = arguments[0], r = i.getBoundingClientRect();
return {active: i.hasAttribute('data-active'), ready: i.dataset.ready || null, width: r.width,
        tokens: i.querySelectorAll('.unipo-group .unipo-tok').length};
"""


def _open(driver, site_url: str, page: str) -> None:
    H.set_width(driver, 1280)
    driver.get(site_url + page)
    H.wait_rendered(driver, everything=False)  # as a reader meets it: nothing opened for them


def _scroll_to(driver, element) -> None:
    driver.execute_script("arguments[0].scrollIntoView({block: 'center', behavior: 'instant'})", element)
    H.next_frame(driver, 3)


def test_a_teaching_moment_in_a_tab_not_shown_starts_when_its_tab_is_chosen(driver, site_url, run_set,
                                                                               console_errors):
    _open(driver, site_url, run_set + GRPO)
    tabs = next(t for t in driver.find_elements(By.CSS_SELECTOR, ".tabbed-set")
                if t.find_elements(By.CSS_SELECTOR, ".unipo-inspector"))
    shown, hidden = tabs.find_elements(By.CSS_SELECTOR, ".unipo-inspector")
    _scroll_to(driver, tabs)
    H.wait_js(driver, "return arguments[0].dataset.ready === '1'", shown, what="the shown tab's inspector")
    H.wait_settled(driver, _INSPECTOR_JS, hidden, what="the hidden tab's inspector")
    assert driver.execute_script(_INSPECTOR_JS, hidden)["active"] is False  # read past, never drawn
    tabs.find_elements(By.CSS_SELECTOR, ":scope > .tabbed-labels > label")[1].click()
    H.wait_js(driver, "return arguments[0].dataset.ready === '1'", hidden, what="the chosen tab's inspector")
    state = driver.execute_script(_INSPECTOR_JS, hidden)
    assert state["width"] > 600 and state["tokens"] > 0, state  # drawn at the tab's width, its group open
    assert "all_wrong_group" == hidden.get_attribute("data-moment")
    assert console_errors(driver) == []


def test_an_inspector_in_a_closed_fold_starts_when_the_fold_opens(driver, site_url, console_errors):
    _open(driver, site_url, PPO)
    inspector = driver.find_element(By.CSS_SELECTOR, '.unipo-inspector[data-moment="max_kl_step"]')
    fold = driver.execute_script("return arguments[0].closest('details')", inspector)
    assert fold is not None and not fold.get_attribute("open")
    _scroll_to(driver, fold)
    H.wait_settled(driver, _INSPECTOR_JS, inspector, what="the folded inspector")
    assert driver.execute_script(_INSPECTOR_JS, inspector)["active"] is False
    fold.find_element(By.CSS_SELECTOR, ":scope > summary").click()
    H.wait_js(driver, "return arguments[0].dataset.ready === '1'", inspector, what="the opened fold's inspector")
    assert driver.execute_script(_INSPECTOR_JS, inspector)["width"] > 600
    assert console_errors(driver) == []


def test_a_folded_explainer_is_put_in_the_page_when_its_fold_opens(driver, site_url, console_errors):
    _open(driver, site_url, CISPO)
    explainers = "return [...document.querySelectorAll('.unipo-explainer')].map(e => e.dataset.algorithm)"
    assert driver.execute_script(explainers) == ["cispo"]  # dual-clip's card: a template, no DOM yet
    fold = driver.execute_script("return document.querySelector('details > template.unipo-fold-body').parentElement")
    assert "Dual-clip" in fold.find_element(By.CSS_SELECTOR, ":scope > summary").text
    _scroll_to(driver, fold)
    fold.find_element(By.CSS_SELECTOR, ":scope > summary").click()
    H.wait_rendered(driver, everything=False)
    assert driver.execute_script(explainers) == ["cispo", "dual_clip"]
    card = driver.find_element(By.CSS_SELECTOR, '.unipo-explainer[data-algorithm="dual_clip"]')
    # started as the page's own card is: its formula typeset, its parts clickable, a part opens its card
    H.wait_js(driver, "return arguments[0].querySelectorAll('.unipo-explainer-formula .unipo-slot[role=button]').length > 0",
              card, what="the folded card's formula decorated")
    assert card.size["width"] > 600
    driver.execute_script("arguments[0].querySelector('.unipo-explainer-formula .unipo-slot[role=button]').click()", card)
    H.wait_js(driver, "return [...arguments[0].querySelectorAll('details.unipo-card')].some(c => c.open)", card,
              what="a card opened from the folded formula")
    assert not driver.execute_script("return !!arguments[0].querySelector(':scope > template')", fold)
    assert console_errors(driver) == []
