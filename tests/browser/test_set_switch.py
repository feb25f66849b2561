"""The run-set switch in Chromium (issue 20 item 5), on the course built with a stand-in gpu set
(tests/conftest.py sets_site_build): following it lands on the same page of the other set with
the reader's query and hash (the Step Inspector's step, group and token), by mouse and by
keyboard; after instant navigation it follows the page the reader is on; the gpu pages' banner
does the same; at 390 px the switch still shows both sets inside the header."""

from __future__ import annotations

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

import browser_harness as H

pytestmark = pytest.mark.browser

GRPO = "course/algorithms/grpo/"
DAPO = "course/algorithms/dapo/"
PPO = "course/algorithms/ppo/"


@pytest.fixture(scope="module")
def sets_url(sets_site_build):
    """The two-set site served at the address it was built for (instant navigation needs it)."""
    H.require_browser()
    assert sets_site_build.returncode == 0, (sets_site_build.log or "")[-6000:]
    with H.serving(sets_site_build.site_dir, sets_site_build.site_url) as url:
        assert url == sets_site_build.site_url, "the port the site was built for is taken"
        yield url


def _wait(driver, js: str, *args, what: str = "", timeout: float = 20.0):
    return H.wait_js(driver, js, *args, timeout=timeout, what=what)


def _open(driver, url: str) -> None:
    driver.get(url)
    H.wait_rendered(driver)


def _switch(driver, set_id: str):
    return driver.find_element(By.CSS_SELECTOR, f'.md-header .unipo-sets a[data-unipo-set="{set_id}"]')


def _landed(driver, url: str, what: str) -> None:
    _wait(driver, "return location.href.split('#')[0] === arguments[0] && document.readyState === 'complete'",
          url, what=what)
    H.wait_rendered(driver)


def _inspector_ready(driver) -> str:
    """The id of the page's Step Inspector (the GRPO chapter's Explorer names it), scrolled into view
    and drawn."""
    uid = driver.execute_script("return document.querySelector('.unipo-explorer[data-run]').getAttribute('data-inspector')")
    driver.execute_script("document.getElementById(arguments[0]).scrollIntoView()", uid)
    _wait(driver, "return document.getElementById(arguments[0]).dataset.ready === '1'", uid, what="inspector ready")
    return uid


def _pick_token(driver) -> tuple[str, dict]:
    """Select a token in the GRPO chapter's Step Inspector; (the page's hash, the selection)."""
    uid = _inspector_ready(driver)
    tokens = driver.find_elements(By.CSS_SELECTOR, f"#{uid} .unipo-group .unipo-tok:not(.unipo-tok--masked)")
    token = tokens[min(4, len(tokens) - 1)]
    driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", token)
    token.click()
    _wait(driver, "return document.getElementById(arguments[0]).dataset.selected", uid, what="token selected")
    return driver.execute_script("return location.hash"), _selection(driver, uid)


def _selection(driver, uid: str) -> dict:
    return driver.execute_script("const i = document.getElementById(arguments[0]);"
                                 "return {step: i.dataset.step, group: i.dataset.group, selected: i.dataset.selected};", uid)


def test_the_switch_keeps_path_query_and_hash_both_ways(driver, sets_url):
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
    assert H.console_errors(driver) == []


def test_the_switch_and_the_banner_follow_instant_navigation(driver, sets_url):
    H.watch_sitemap(driver)
    _open(driver, sets_url + GRPO)
    H.wait_instant_navigation(driver)
    driver.execute_script("window.unipoSameDocument = true")
    driver.execute_script(f"document.querySelector('.md-sidebar--primary a.md-nav__link[href$=\"{DAPO[len('course/algorithms/'):]}\"]').click()")
    _wait(driver, "return location.pathname.endsWith(arguments[0]) && window.unipoSameDocument", "/" + DAPO,
          what="instant navigation to DAPO")
    H.wait_rendered(driver)
    _switch(driver, "gpu").click()
    _landed(driver, sets_url + "gpu/" + DAPO, "the DAPO chapter of the gpu set")
    # within the gpu set, instant navigation again, then the banner's link back
    H.wait_instant_navigation(driver)
    driver.execute_script("window.unipoSameDocument = true")
    driver.execute_script(f"document.querySelector('.md-sidebar--primary a.md-nav__link[href$=\"{PPO[len('course/algorithms/'):]}\"]').click()")
    _wait(driver, "return location.pathname.endsWith(arguments[0]) && window.unipoSameDocument", "/gpu/" + PPO,
          what="instant navigation to PPO in the gpu set")
    H.wait_rendered(driver)
    driver.execute_script("history.replaceState(null, '', location.pathname + '#anchor-from-the-reader')")
    link = driver.find_element(By.CSS_SELECTOR, ".md-banner .unipo-set-banner a")
    driver.execute_script("arguments[0].scrollIntoView()", link)
    link.click()
    _landed(driver, sets_url + PPO, "the PPO chapter of the default set")
    assert driver.execute_script("return location.hash") == "#anchor-from-the-reader"
    assert H.console_errors(driver) == []


@pytest.mark.parametrize("scheme", ["default", "slate"])
def test_the_switch_fits_a_phone_header(driver, sets_url, scheme):
    H.set_width(driver, 390)
    _open(driver, sets_url + "gpu/" + GRPO)
    H.set_scheme(driver, scheme)
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


# ------------------------------------------------------------------ the reader's place (issue 33)
# On the course as built (tests/conftest.py site_build): the tiny set and the shipped gpu set,
# whose runs trained for other numbers of steps and whose views have other sizes.

_PLACE_JS = """
const top = document.querySelector('.md-header').getBoundingClientRect().bottom;
const hs = [...document.querySelectorAll('article h1[id], article h2[id], article h3[id], article h4[id]')];
let found = null;
for (const h of hs) if (h.getBoundingClientRect().top <= top + 1) found = h;
return found ? {id: found.id, offset: Math.round(top - found.getBoundingClientRect().top), y: Math.round(scrollY)}
             : {id: null, offset: null, y: Math.round(scrollY)};
"""


def _settled(driver, heading: str, what: str) -> dict:
    """The reader's place once the page has stopped moving (the same on ten frames in a row), in the
    section under ``heading``."""
    def place(drv):
        p = H.wait_settled(drv, _PLACE_JS, frames=10, what=what)
        return p if p["id"] == heading else None

    return H.wait_until(driver, place, what=what)


def _gpu_site(built_site) -> None:
    if not (built_site / "gpu" / "index.html").is_file():
        pytest.skip("this build has no gpu set (data/runs-gpu holds no runs, or UNIPO_RUNS names other runs)")


def _insp_data(driver, uid: str) -> dict:
    return driver.execute_script("return window.UNIPOViews.readData(document.getElementById(arguments[0]))", uid)


@pytest.mark.parametrize("start, other", [("", "gpu"), ("gpu/", "tiny")])
def test_the_switch_keeps_the_section_in_view(driver, site_url, built_site, start, other):
    """Scrolled into "Which tokens reach the upper bound?" on the DAPO chapter, with no hash: the
    other set's DAPO chapter opens in that section, as far into it as the reader was."""
    _gpu_site(built_site)
    _open(driver, site_url + start + DAPO)
    assert driver.execute_script("return location.hash") == ""
    heading = "which-tokens-reach-the-upper-bound"
    driver.execute_script("""const h = document.getElementById(arguments[0]);
        const header = document.querySelector('.md-header').getBoundingClientRect().bottom;
        window.scrollTo(0, h.getBoundingClientRect().top + scrollY - header + 120);""", heading)
    before = _settled(driver, heading, "the reader in the section")
    assert before["y"] > 3000 and before["offset"] > 20, before
    driver.execute_script("arguments[0].click()", _switch(driver, other))
    target = site_url + ("gpu/" if other == "gpu" else "") + DAPO
    _landed(driver, target, f"the DAPO chapter of the {other} set")
    assert driver.execute_script("return location.hash") == ""
    # the place holds once the page's formulas, charts and views are drawn
    H.wait_rendered(driver, everything=False)
    after = _settled(driver, heading, "the same section in the other set")
    assert after["y"] > 3000 and abs(after["offset"] - before["offset"]) <= 40, (before, after)
    assert H.console_errors(driver) == []


def test_a_step_maps_to_the_same_point_of_training_in_the_other_set(driver, site_url, built_site):
    """A token chosen at a step of the tiny GRPO run opens, on the gpu set, the step at the same
    fraction of training (the nearest with token detail), with a note naming the mapping; the hash
    then names the gpu set's own step."""
    _gpu_site(built_site)
    _open(driver, site_url + GRPO)
    uid = _inspector_ready(driver)
    tiny = _insp_data(driver, uid)
    # a step well into training: the third-last with token detail
    step = tiny["steps"][-3]
    driver.execute_script("const s = document.getElementById(arguments[0] + '-step'); s.value = String(arguments[1]);"
                          "s.dispatchEvent(new Event('change'));", uid, step)
    _wait(driver, "return document.getElementById(arguments[0]).dataset.step === String(arguments[1]) && "
                  "document.getElementById(arguments[0]).dataset.ready === '1'", uid, step, what="the step opened")
    _pick_token(driver)
    assert f"step={step}" in driver.execute_script("return location.hash")
    driver.execute_script("arguments[0].click()", _switch(driver, "gpu"))
    _landed(driver, site_url + "gpu/" + GRPO, "the GRPO chapter of the gpu set")
    _wait(driver, "const i = document.getElementById(arguments[0]); return i && i.dataset.mapped", uid,
          what="the mapped step on the gpu page")
    gpu = _insp_data(driver, uid)
    fraction = step / tiny["last_step"]
    want = min(gpu["steps"], key=lambda s: (abs(s - fraction * gpu["last_step"]), s))
    state = driver.execute_script("const i = document.getElementById(arguments[0]);"
                                  "return {step: i.dataset.step, mapped: i.dataset.mapped, note: i.dataset.stateNote || null,"
                                  " status: i.querySelector('.unipo-inspector-status').textContent, hash: location.hash};", uid)
    assert state["step"] == str(want) and state["mapped"] == "fraction" and state["note"] is None, state
    assert state["status"].startswith(f"From the CPU set (tiny): step {step} of {tiny['last_step']} there is "
                                      f"{round(100 * fraction)}% of the way through training; here that is step {want} "
                                      f"of {gpu['last_step']}"), state
    assert f"step={want}" in state["hash"] and "of=" not in state["hash"] and "from=" not in state["hash"], state
    assert H.console_errors(driver) == []


def test_a_teaching_moment_maps_to_the_other_sets_own(driver, site_url, built_site):
    """An inspector showing a teaching moment both sets' runs have opens that moment of the other
    set's run, and says so."""
    _gpu_site(built_site)
    _open(driver, site_url + GRPO)
    uid = _inspector_ready(driver)
    tiny = {m["name"]: m for m in _insp_data(driver, uid)["moments"]}
    gpu_html = (built_site / "gpu" / GRPO / "index.html").read_text(encoding="utf-8")
    both = [name for name in tiny if f'"name":"{name}"' in gpu_html.split(f'id="{uid}-data"', 1)[1].split("</template>", 1)[0]]
    if not both:
        pytest.skip("no teaching moment in both sets' GRPO runs")
    name = both[0]
    driver.execute_script("const s = document.getElementById(arguments[0] + '-moment'); s.value = arguments[1];"
                          "s.dispatchEvent(new Event('change'));", uid, name)
    _wait(driver, "return document.getElementById(arguments[0]).dataset.atMoment === arguments[1] && "
                  "document.getElementById(arguments[0]).dataset.ready === '1'", uid, name, what="the moment opened")
    driver.execute_script("arguments[0].click()", _switch(driver, "gpu"))
    _landed(driver, site_url + "gpu/" + GRPO, "the GRPO chapter of the gpu set")
    _wait(driver, "const i = document.getElementById(arguments[0]); return i && i.dataset.mapped", uid,
          what="the mapped moment on the gpu page")
    gpu = {m["name"]: m for m in _insp_data(driver, uid)["moments"]}
    state = driver.execute_script("const i = document.getElementById(arguments[0]);"
                                  "return {step: i.dataset.step, mapped: i.dataset.mapped, at: i.dataset.atMoment || null,"
                                  " status: i.querySelector('.unipo-inspector-status').textContent};", uid)
    assert state["mapped"] == "moment" and state["step"] == str(gpu[name]["open_step"]) and state["at"] == name, state
    assert state["status"].startswith(f"From the CPU set (tiny): its teaching moment \u201c{gpu[name]['label']}\u201d"), state
    assert H.console_errors(driver) == []


def test_a_link_naming_a_step_the_set_lacks_lands_on_the_nearest(driver, site_url, built_site):
    """Bad input: a shared link naming a step, group and token the gpu run did not log keeps the
    honest note and opens the nearest step with token detail, never an error."""
    _gpu_site(built_site)
    _open(driver, site_url + "gpu/" + GRPO)
    uid = driver.execute_script("return document.querySelector('.unipo-explorer[data-run]').getAttribute('data-inspector')")
    steps = _insp_data(driver, uid)["steps"]
    asked = steps[-1] * 10 + 7
    driver.get(site_url + "gpu/" + GRPO + f"#{uid[len('unipo-'):]}:step={asked},group=5,token=5.20")
    _wait(driver, "const i = document.getElementById(arguments[0]); return i && i.dataset.ready === '1'", uid,
          what="the inspector from the link")
    state = driver.execute_script("const i = document.getElementById(arguments[0]);"
                                  "return {step: i.dataset.step, note: i.dataset.stateNote || null,"
                                  " status: i.querySelector('.unipo-inspector-status').textContent};", uid)
    assert state["step"] == str(steps[-1]) and state["note"] == "1", state
    assert state["status"].startswith(f"The link names step {asked}") and f"showing step {steps[-1]}" in state["status"], state
    assert H.console_errors(driver) == []


def _open_step(driver, uid: str, step: int) -> None:
    driver.execute_script("const s = document.getElementById(arguments[0] + '-step'); s.value = String(arguments[1]);"
                          "s.dispatchEvent(new Event('change'));", uid, step)
    _wait(driver, "return document.getElementById(arguments[0]).dataset.step === String(arguments[1]) && "
                  "document.getElementById(arguments[0]).dataset.ready === '1'", uid, step, what=f"step {step} opened")


def test_a_round_trip_returns_to_the_step_it_left(driver, site_url, built_site):
    """A token at a step well into the tiny GRPO run, switched to the gpu set (mapped to the same fraction of
    training) and straight back, opens the step, group and token it left: a fraction mapped twice lands
    elsewhere (issue 47: step 101 came back as 100), so the way back is the state it came with."""
    _gpu_site(built_site)
    _open(driver, site_url + GRPO)
    uid = _inspector_ready(driver)
    tiny = _insp_data(driver, uid)
    step = tiny["steps"][-3]
    _open_step(driver, uid, step)
    _pick_token(driver)
    left = _selection(driver, uid)
    assert left["step"] == str(step)
    driver.execute_script("arguments[0].click()", _switch(driver, "gpu"))
    _landed(driver, site_url + "gpu/" + GRPO, "the GRPO chapter of the gpu set")
    _wait(driver, "const i = document.getElementById(arguments[0]); return i && i.dataset.mapped && i.dataset.ready === '1'",
          uid, what="the mapped step on the gpu page")
    landed = _selection(driver, uid)
    # straight back: the link names the tiny set's own step again (no of=, from=)
    back = _switch(driver, "tiny")
    driver.execute_script("arguments[0].dispatchEvent(new Event('pointerover', {bubbles: true}))", back)
    href = back.get_attribute("href")
    assert f"step={step}" in href and "of=" not in href.split("#", 1)[1].split(";")[0], (href, landed)
    driver.execute_script("arguments[0].click()", back)
    _landed(driver, site_url + GRPO, "the GRPO chapter of the tiny set")
    _wait(driver, "const i = document.getElementById(arguments[0]); return i && i.dataset.ready === '1' && i.dataset.selected",
          uid, what="the inspector back at its step")
    assert _selection(driver, uid) == left
    state = driver.execute_script("const i = document.getElementById(arguments[0]);"
                                  "return {mapped: i.dataset.mapped || null, other: i.dataset.otherPrompt || null};", uid)
    assert state == {"mapped": None, "other": None}, state
    # having moved on the gpu page, the way back maps the new step as before
    assert H.console_errors(driver) == []


def test_the_switch_says_when_the_group_is_another_prompt(driver, site_url, built_site):
    """Arriving at the same step from the other set keeps the group and token; when that group of this run is
    another prompt than the reader had there (the prompt's fingerprint the switch carries, prompt=), one line
    says so; with the same prompt, nothing is added. The switch's link carries the open group's fingerprint."""
    _gpu_site(built_site)
    _open(driver, site_url + GRPO)
    uid = _inspector_ready(driver)
    tiny = _insp_data(driver, uid)
    step = tiny["steps"][0]
    _open_step(driver, uid, step)
    _pick_token(driver)
    mine = driver.execute_script("return document.getElementById(arguments[0]).dataset.prompt", uid)
    assert mine and len(mine) == 8
    link = _switch(driver, "gpu")
    driver.execute_script("arguments[0].dispatchEvent(new Event('pointerover', {bubbles: true}))", link)
    assert f"prompt={mine}" in link.get_attribute("href")
    selection = _selection(driver, uid)
    group = selection["group"]
    token = driver.execute_script("return location.hash").split("token=", 1)[1].split(",")[0].split(";")[0]
    short = uid[len("unipo-"):]
    last = tiny["last_step"]
    for prompt, other in ((mine, False), ("0badc0de", True)):
        # as the gpu page's switch writes it: a step of a run as long as this one, so the step is kept
        driver.get("about:blank")
        driver.get(site_url + GRPO + f"#{short}:step={step},group={group},token={token},of={last},from=gpu,prompt={prompt}")
        _wait(driver, "const i = document.getElementById(arguments[0]); return i && i.dataset.mapped && i.dataset.ready === '1'",
              uid, what="the inspector from the other set's link")
        state = driver.execute_script("const i = document.getElementById(arguments[0]);"
                                      "return {step: i.dataset.step, group: i.dataset.group, other: i.dataset.otherPrompt || null,"
                                      " status: i.querySelector('.unipo-inspector-status').textContent, hash: location.hash};", uid)
        assert state["step"] == str(step) and state["group"] == group, state
        assert state["status"].startswith("From the GPU set: step "), state
        line = (f"Group {group.rstrip('f')} here is another prompt than in the GPU set (each set's run drew its own "
                "prompts), so the token marked is at the same place in another response.")
        assert (line in state["status"]) is other and (state["other"] == "1") is other, state
        assert "prompt=" not in state["hash"] and "of=" not in state["hash"], state
    assert H.console_errors(driver) == []
