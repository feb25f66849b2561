"""The run-set switch in Chromium (issue 20 item 5), on the course built with a stand-in gpu set
(tests/conftest.py sets_site_build): following it lands on the same page of the other set with
the reader's query and hash (the Step Inspector's step, group and token), by mouse and by
keyboard; after instant navigation it follows the page the reader is on; the gpu pages' banner
does the same; at 390 px the switch still shows both sets inside the header."""

from __future__ import annotations

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from test_security import _browser_harness

pytestmark = pytest.mark.browser

GRPO = "course/algorithms/grpo/"
DAPO = "course/algorithms/dapo/"
PPO = "course/algorithms/ppo/"


@pytest.fixture(scope="module")
def sets_url(sets_site_build):
    """The two-set site served at the address it was built for (instant navigation needs it)."""
    harness = _browser_harness()
    harness.require_browser()
    assert sets_site_build.returncode == 0, (sets_site_build.log or "")[-6000:]
    with harness.serving(sets_site_build.site_dir, sets_site_build.site_url) as url:
        assert url == sets_site_build.site_url, "the port the site was built for is taken"
        yield url


def _wait(driver, js: str, *args, what: str = "", timeout: float = 20.0):
    return _browser_harness().wait_js(driver, js, *args, timeout=timeout, what=what)


def _open(driver, url: str) -> None:
    driver.get(url)
    _browser_harness().wait_rendered(driver)


def _switch(driver, set_id: str):
    return driver.find_element(By.CSS_SELECTOR, f'.md-header .unipo-sets a[data-unipo-set="{set_id}"]')


def _landed(driver, url: str, what: str) -> None:
    _wait(driver, "return location.href.split('#')[0] === arguments[0] && document.readyState === 'complete'",
          url, what=what)
    _browser_harness().wait_rendered(driver)


def _pick_token(driver) -> tuple[str, dict]:
    """Select a token in the GRPO chapter's Step Inspector; (the page's hash, the selection)."""
    uid = driver.execute_script("return document.querySelector('.unipo-explorer[data-run]').getAttribute('data-inspector')")
    driver.execute_script("document.getElementById(arguments[0]).scrollIntoView()", uid)
    _wait(driver, "return document.getElementById(arguments[0]).dataset.ready === '1'", uid, what="inspector ready")
    tokens = driver.find_elements(By.CSS_SELECTOR, f"#{uid} .unipo-group .unipo-tok:not(.unipo-tok--masked)")
    token = tokens[min(4, len(tokens) - 1)]
    driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", token)
    token.click()
    _wait(driver, "return document.getElementById(arguments[0]).dataset.selected", uid, what="token selected")
    return driver.execute_script("return location.hash"), _selection(driver, uid)


def _selection(driver, uid: str) -> dict:
    return driver.execute_script("const i = document.getElementById(arguments[0]);"
                                 "return {step: i.dataset.step, group: i.dataset.group, selected: i.dataset.selected};", uid)


def test_the_switch_keeps_path_query_and_hash_both_ways(own_driver, sets_url):
    driver = own_driver
    harness = _browser_harness()
    _open(driver, sets_url + GRPO + "?from=switch")
    hash_, chosen = _pick_token(driver)
    assert hash_.startswith("#") and "token=" in hash_ and chosen["selected"]
    assert _switch(driver, "tiny").get_attribute("aria-current") == "page"
    assert driver.execute_script("return document.querySelector('.unipo-set-banner')") is None
    driver.execute_script("window.unipoSameDocument = true")
    gpu = _switch(driver, "gpu")
    assert gpu.text.strip() == "GPU set"
    gpu.click()
    _landed(driver, sets_url + "gpu/" + GRPO + "?from=switch", "the GRPO chapter of the gpu set")
    assert driver.execute_script("return location.hash") == hash_
    assert driver.execute_script("return window.unipoSameDocument") is None  # a page of the other build
    assert _switch(driver, "gpu").get_attribute("aria-current") == "page"
    banner = driver.find_element(By.CSS_SELECTOR, ".md-banner .unipo-set-banner").text
    assert banner.startswith("This page shows the GPU set"), banner
    # the gpu page's inspector opens the step, group and token the hash names, from the gpu set's data
    uid = driver.execute_script("return document.querySelector('.unipo-explorer[data-run]').getAttribute('data-inspector')")
    _wait(driver, "return document.getElementById(arguments[0]).dataset.selected", uid, what="selection on the gpu page")
    assert _selection(driver, uid) == chosen
    assert "grpo-standin" in driver.execute_script("return document.querySelector('.unipo-explorer[data-run]').dataset.run")
    # back by keyboard: focus the other set's link and press Enter
    _switch(driver, "tiny").send_keys(Keys.ENTER)
    _landed(driver, sets_url + GRPO + "?from=switch", "the GRPO chapter of the default set")
    assert driver.execute_script("return location.hash") == hash_
    assert harness.console_errors(driver) == []


def test_the_switch_and_the_banner_follow_instant_navigation(own_driver, sets_url):
    driver = own_driver
    harness = _browser_harness()
    _open(driver, sets_url + GRPO)
    driver.execute_script("window.unipoSameDocument = true")
    driver.execute_script(f"document.querySelector('.md-sidebar--primary a.md-nav__link[href$=\"{DAPO[len('course/algorithms/'):]}\"]').click()")
    _wait(driver, "return location.pathname.endsWith(arguments[0]) && window.unipoSameDocument", "/" + DAPO,
          what="instant navigation to DAPO")
    harness.wait_rendered(driver)
    _switch(driver, "gpu").click()
    _landed(driver, sets_url + "gpu/" + DAPO, "the DAPO chapter of the gpu set")
    # within the gpu set, instant navigation again, then the banner's link back
    driver.execute_script("window.unipoSameDocument = true")
    driver.execute_script(f"document.querySelector('.md-sidebar--primary a.md-nav__link[href$=\"{PPO[len('course/algorithms/'):]}\"]').click()")
    _wait(driver, "return location.pathname.endsWith(arguments[0]) && window.unipoSameDocument", "/gpu/" + PPO,
          what="instant navigation to PPO in the gpu set")
    harness.wait_rendered(driver)
    driver.execute_script("history.replaceState(null, '', location.pathname + '#anchor-from-the-reader')")
    link = driver.find_element(By.CSS_SELECTOR, ".md-banner .unipo-set-banner a")
    driver.execute_script("arguments[0].scrollIntoView()", link)
    link.click()
    _landed(driver, sets_url + PPO, "the PPO chapter of the default set")
    assert driver.execute_script("return location.hash") == "#anchor-from-the-reader"
    assert harness.console_errors(driver) == []


@pytest.mark.parametrize("scheme", ["default", "slate"])
def test_the_switch_fits_a_phone_header(own_driver, sets_url, scheme):
    driver = own_driver
    harness = _browser_harness()
    harness.set_width(driver, 390)
    _open(driver, sets_url + "gpu/" + GRPO)
    harness.set_scheme(driver, scheme)
    box = driver.execute_script("""
        const s = document.querySelector('.md-header .unipo-sets').getBoundingClientRect();
        const h = document.querySelector('.md-header').getBoundingClientRect();
        const items = [...document.querySelectorAll('.unipo-sets__item')];
        const cur = document.querySelector('.unipo-sets__item--current');
        return {left: s.left, right: s.right, top: s.top, bottom: s.bottom, hTop: h.top, hBottom: h.bottom,
                shown: items.map(a => [...a.children].filter(c => c.getBoundingClientRect().width > 2).map(c => c.textContent).join('')), names: items.map(a => a.textContent.replace(/\\s+/g, ' ').trim()),
                fg: getComputedStyle(cur).color, bg: getComputedStyle(cur).backgroundColor,
                otherFg: getComputedStyle(items[0]).color, headerBg: getComputedStyle(document.querySelector('.md-header')).backgroundColor};
    """)
    assert 0 <= box["left"] < box["right"] <= 390 and box["hTop"] <= box["top"] < box["bottom"] <= box["hBottom"], box
    assert box["shown"] == ["tiny", "gpu"], box  # the ids on a phone
    assert box["names"] == ["CPU set (tiny)tiny", "GPU setgpu"], box  # the labels stay in the text a reader's aids read
    assert box["fg"] != box["bg"] and box["otherFg"] != box["headerBg"], box
