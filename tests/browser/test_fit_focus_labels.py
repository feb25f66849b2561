"""Issue 47 items 3 and 6 in Chromium. The components reference shows one trainer at a time and one kind at a
time, and fits its column at 1280 and 390 px; a link to a kind opens its tab. A run card's tables and the
objectives fit their cards at 1280 (the CISPO chapter: the held-out table, the dual-clip objective); a box that
must scroll sideways (on a phone) shows the shadow cue, is in the tab order as a named region and shows focus.
Sliders show a focus outline. Every chart is labelled by what it shows, never "Vega visualization"."""

from __future__ import annotations

import pytest
from selenium.webdriver.common.by import By

import browser_harness as H

pytestmark = pytest.mark.browser

COMPONENTS = "reference/components/"
CISPO = "course/algorithms/cispo/"

#: Every box that may scroll sideways, as unipo.js markScroller finds them, once its pass has run.
_BOXES_JS = """
return [...document.querySelectorAll(arguments[0])].filter(b => b.getClientRects().length).map(b => ({
  wide: b.scrollWidth > b.clientWidth + 1, scrolls: b.hasAttribute('data-unipo-scrolls'),
  tabindex: b.getAttribute('tabindex'), role: b.getAttribute('role'), label: b.getAttribute('aria-label'),
  cue: getComputedStyle(b).backgroundImage, what: (b.textContent || '').trim().slice(0, 60)}));
"""
SCROLLERS = "div.arithmatex, .md-typeset__scrollwrap, .unipo-scroll-cue"


def _settled_boxes(driver, selector: str = SCROLLERS) -> list[dict]:
    """The boxes once unipo.js has measured them (its pass waits 120 ms after the last change)."""
    H.next_frame(driver, 2)
    driver.execute_script("window.dispatchEvent(new Event('resize'))")
    return H.wait_settled(driver, _BOXES_JS, selector, frames=12, what="the scrolling boxes measured")


def _cued(box: dict) -> bool:
    """A box wider than its content can show scrolls with the shadow cue, in the tab order, as a named region."""
    return (box["scrolls"] and box["tabindex"] == "0" and box["role"] == "region" and bool(box["label"])
            and "radial-gradient" in box["cue"])


@pytest.mark.parametrize("width", [1280, 390])
def test_the_trainer_tabs_fit_the_column(open_page, driver, width, console_errors):
    open_page(COMPONENTS, width=width)
    labels = driver.find_elements(By.CSS_SELECTOR, ".unipo-trainer-tabs > .tabbed-labels > label")
    assert [label.get_attribute("textContent").strip() for label in labels] == ["TRL 1.16", "verl", "prime-rl",
                                                                                 "OpenRLHF 0.11.2"]
    for label in labels:
        driver.execute_script("arguments[0].click()", label)
        H.next_frame(driver, 2)
        shown = driver.execute_script("""
            const blocks = [...document.querySelectorAll('.unipo-trainer-tabs .tabbed-block')].filter(b => b.getClientRects().length);
            const b = blocks[0], wrap = b.querySelector('.md-typeset__scrollwrap'), column = b.closest('article');
            return {n: blocks.length, trainer: b.dataset.trainer,
                    wrap: wrap && [wrap.scrollWidth, wrap.clientWidth], right: b.querySelector('table').getBoundingClientRect().right,
                    column: column.getBoundingClientRect().right, rows: b.querySelectorAll('tr.unipo-trainer-row').length,
                    lacks: (b.querySelector('.unipo-trainer-lacks') || {}).textContent || '', text: b.textContent};""")
        assert shown["n"] == 1, shown  # one trainer at a time
        # the table fits its column: no sideways scrolling, nothing past the column's edge
        assert shown["wrap"] and shown["wrap"][0] <= shown["wrap"][1] + 1, shown
        assert shown["right"] <= shown["column"] + 1, shown
        assert shown["rows"] >= 3 and "\u2014" not in shown["text"], shown
        if shown["trainer"] == "prime-rl":  # its missing kinds: one line, not a column of dashes
            assert shown["lacks"].startswith("Not in prime-rl (") and "of the" in shown["lacks"], shown
    assert driver.execute_script("return document.documentElement.scrollWidth - innerWidth") <= 0
    assert console_errors(driver) == []


def test_a_link_to_a_kind_opens_its_tab(driver, site_url, console_errors):
    H.set_width(driver, 1280)
    driver.get(site_url + COMPONENTS + "#component-clip-cispo")
    H.wait_rendered(driver)

    def shown(anchor: str) -> dict:
        return H.wait_settled(driver, """
            const h = document.getElementById(arguments[0]), r = h.getBoundingClientRect();
            const block = h.closest('.tabbed-block'), set = block.closest('.tabbed-set');
            const i = [...block.parentElement.children].indexOf(block);
            return {laid: h.getClientRects().length > 0, top: Math.round(r.top), bottom: innerHeight,
                    checked: set.querySelectorAll(':scope > input')[i].checked,
                    formula: block.querySelector('div.arithmatex') ? block.querySelector('div.arithmatex').dataset.unipoRendered : 'none'};
            """, anchor, what=anchor)

    cispo = shown("component-clip-cispo")
    assert cispo["laid"] and cispo["checked"] and 0 <= cispo["top"] < cispo["bottom"], cispo
    H.wait_rendered(driver, everything=False)
    assert shown("component-clip-cispo")["formula"] == "katex"
    # a link on the page to a kind in a tab not shown (TRL's line of the kinds it lacks names kl: in_reward)
    link = driver.find_element(By.CSS_SELECTOR, '.unipo-trainer-lacks[data-trainer="trl"] a[href$="#component-kl-in_reward"]')
    driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", link)
    link.click()
    H.wait_js(driver, "return location.hash === '#component-kl-in_reward'", what="the kind's anchor")
    in_reward = shown("component-kl-in_reward")
    assert in_reward["laid"] and in_reward["checked"] and 0 <= in_reward["top"] < in_reward["bottom"], in_reward
    # the slot's tab labels say the slot to a screen reader, so two tabs named "none" are not linked
    names = driver.execute_script("return [...document.querySelectorAll('.unipo-kind-tabs label')].map(l => l.innerText.replace(/\\s+/g, ' ').trim())")
    assert "none (clip)" in names and "none (kl)" in names and len(names) == len(set(names))
    assert console_errors(driver) == []


def test_a_run_cards_table_and_the_objectives_fit_at_1280(open_page, driver, console_errors):
    """At 1280 the CISPO chapter's held-out table (seven columns) fits its run card and the dual-clip objective
    fits its Explainer card; any other box that scrolls says so."""
    open_page(CISPO, width=1280)
    driver.execute_script("document.querySelectorAll('.unipo-run-card details').forEach(d => d.open = true)")
    H.wait_rendered(driver)
    boxes = _settled_boxes(driver)
    evals = driver.execute_script(_BOXES_JS, ".unipo-run-evals .md-typeset__scrollwrap")
    objectives = driver.execute_script(_BOXES_JS, ".unipo-explainer-formula div.arithmatex")
    assert evals and not any(b["wide"] for b in evals), evals
    assert len(objectives) >= 2 and not any(b["wide"] for b in objectives), objectives
    assert all(_cued(b) for b in boxes if b["wide"]), [b for b in boxes if b["wide"] and not _cued(b)]
    assert console_errors(driver) == []


def test_a_box_that_scrolls_on_a_phone_shows_a_cue_and_takes_focus(open_page, driver, console_errors):
    open_page(CISPO, width=390)
    driver.execute_script("document.querySelectorAll('.unipo-run-card details').forEach(d => d.open = true)")
    H.wait_rendered(driver)
    boxes = _settled_boxes(driver)
    wide = [b for b in boxes if b["wide"]]
    assert wide, "nothing scrolls sideways on a phone: the test has nothing to check"
    assert all(_cued(b) for b in wide), [b for b in wide if not _cued(b)]
    table = driver.find_element(By.CSS_SELECTOR, ".unipo-run-evals .md-typeset__scrollwrap")
    assert table.get_attribute("aria-label").startswith("Table: Held-out evaluations")
    # the shadow is painted under the table: the table lets it through
    assert driver.execute_script("return getComputedStyle(arguments[0].querySelector('table')).backgroundColor",
                                 table) in ("rgba(0, 0, 0, 0)", "transparent")
    focus = _keyboard_focus(driver, table)
    assert focus["visible"] and focus["outline"] != "none" and focus["width"] >= 1.5, focus
    assert driver.execute_script("return document.documentElement.scrollWidth - innerWidth") <= 0
    assert console_errors(driver) == []


_FOCUS_JS = """
const el = arguments[0], s = getComputedStyle(el);
return {active: document.activeElement === el, visible: el.matches(':focus-visible'), outline: s.outlineStyle,
        width: parseFloat(s.outlineWidth), colour: s.outlineColor};
"""


def _keyboard_focus(driver, element) -> dict:
    """Focus ``element`` as the keyboard does (Tab from the element before it in the tab order) and read its
    outline."""
    driver.execute_script("""
        const el = arguments[0];
        const before = document.createElement('button'); before.textContent = 'before';
        before.setAttribute('data-test-before', ''); el.parentNode.insertBefore(before, el); before.focus();""", element)
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.keys import Keys

    ActionChains(driver).send_keys(Keys.TAB).perform()
    H.next_frame(driver, 2)
    state = driver.execute_script(_FOCUS_JS, element)
    driver.execute_script("document.querySelectorAll('[data-test-before]').forEach(b => b.remove())")
    return state


@pytest.mark.parametrize("page, selector", [
    ("playgrounds/objective-1d/", "input[type=range]"),
    ("playgrounds/loss-shapes/", "input[type=range]"),
    ("course/algorithms/grpo/", ".unipo-explorer__mag"),
])
@pytest.mark.parametrize("scheme", ["default", "slate"])
def test_sliders_show_focus(open_page, driver, page, selector, scheme, console_errors):
    open_page(page, scheme=scheme)
    sliders = [s for s in driver.find_elements(By.CSS_SELECTOR, selector) if s.is_displayed()]
    assert sliders, selector
    for slider in sliders[:4]:
        driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", slider)
        focus = _keyboard_focus(driver, slider)
        assert focus["active"] and focus["visible"], focus
        assert focus["outline"] == "solid" and focus["width"] >= 2, focus
    assert console_errors(driver) == []


_CHARTS_JS = """
return [...document.querySelectorAll('.unipo-vega[data-unipo-rendered]')].map(e => ({
  id: e.dataset.specId || e.className, state: e.dataset.unipoRendered, role: e.getAttribute('role'),
  label: e.getAttribute('aria-label'), canvas: !!e.querySelector('canvas')}));
"""


@pytest.mark.parametrize("page", ["playgrounds/objective-1d/", "playgrounds/gdpo/", "playgrounds/loss-shapes/",
                                  "course/algorithms/ppo/", "course/algorithms/reinforce/", "reference/rendering/",
                                  "reference/explorer/"])
def test_every_chart_says_what_it_shows(open_page, driver, page, run_set, console_errors):
    open_page(run_set + page)
    driver.execute_script("window.scrollTo(0, document.documentElement.scrollHeight)")
    H.wait_rendered(driver)
    charts = H.wait_settled(driver, _CHARTS_JS, what="the charts drawn")
    assert charts, page
    for chart in charts:
        assert chart["state"] != "error", chart
        assert chart["role"] == "graphics-document", chart
        assert chart["label"] and chart["label"] != "Vega visualization" and len(chart["label"]) >= 15, chart
        assert "\\(" not in chart["label"] and "  " not in chart["label"], chart
    if page == "playgrounds/objective-1d/":
        assert any(c["canvas"] for c in charts)  # the heat map is drawn on a canvas, labelled as the others
    assert console_errors(driver) == []



# ---------------------------------------------------------------------------- what a fold holds (issue 47 item 5)

_FOLDED_CHARTS_JS = """
return [...document.querySelectorAll('.unipo-vega')].filter(v => v.closest('details')).map(v => ({
  open: !!v.closest('details').open, state: v.dataset.unipoRendered, drawn: !!v.querySelector('svg, canvas'),
  width: Math.round(v.getBoundingClientRect().width),
  summary: v.closest('details').querySelector('summary').textContent.trim().slice(0, 50)}));
"""


def test_a_closed_folds_charts_are_drawn_when_it_opens(driver, site_url, console_errors):
    """A chart in a closed fold waits for the fold, as its formulas do: nothing drawn until the reader opens it,
    then drawn at the fold's width (DAPO's chapter held some 700 DOM nodes of charts in folds nobody opened)."""
    H.set_width(driver, 1280)
    driver.get(site_url + "course/algorithms/dapo/")
    H.wait_rendered(driver, everything=False)
    charts = driver.execute_script(_FOLDED_CHARTS_JS)
    folded = [c for c in charts if not c["open"]]
    assert folded and all(c["state"] == "deferred" and not c["drawn"] for c in folded), folded
    summary = driver.find_element(By.XPATH, "//details[not(@open)][.//*[contains(@class, 'unipo-vega')]]/summary")
    driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", summary)
    summary.click()
    H.wait_rendered(driver, everything=False)
    opened = [c for c in driver.execute_script(_FOLDED_CHARTS_JS) if c["open"]]
    assert opened and all(c["state"] == "default" and c["drawn"] and c["width"] > 300 for c in opened), opened
    # the rest still wait; everything=True (UNIPO.renderAll: printing, tests) draws them all
    H.wait_rendered(driver)
    assert all(c["state"] == "default" and c["drawn"] for c in driver.execute_script(_FOLDED_CHARTS_JS))
    assert console_errors(driver) == []


def test_a_long_folded_list_is_in_the_page_once_opened(driver, site_url, built_site, console_errors):
    """The anatomy figure's folded rows (the gpu set's other 56 groups, other 11 answers...) are written in a
    <template>: no DOM until the fold opens, then the rows, formulas typeset."""
    page = "gpu/course/anatomy/" if (built_site / "gpu" / "index.html").is_file() else "course/anatomy/"
    H.set_width(driver, 1280)
    driver.get(site_url + page)
    H.wait_rendered(driver, everything=False)
    folds = driver.execute_script("""return [...document.querySelectorAll('details.unipo-fold:not(.unipo-run-diagnoses)')].map(d => ({
        template: !!d.querySelector(':scope > template.unipo-fold-body'), rows: d.querySelectorAll('tr, li').length,
        summary: d.querySelector('summary').textContent.trim()}));""")
    if not folds:
        pytest.skip(f"{page}: the anatomy figure folds nothing in this build")
    assert all(f["template"] and f["rows"] == 0 for f in folds), folds
    summary = driver.find_element(By.CSS_SELECTOR, "details.unipo-fold:not(.unipo-run-diagnoses) > summary")
    driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", summary)
    summary.click()
    H.wait_rendered(driver, everything=False)
    first = driver.execute_script("""const d = document.querySelector('details.unipo-fold:not(.unipo-run-diagnoses)');
        return {open: d.open, template: !!d.querySelector(':scope > template'), rows: d.querySelectorAll('tr, li').length,
                math: d.querySelectorAll('.arithmatex:not([data-unipo-rendered="katex"])').length};""")
    assert first["open"] and not first["template"] and first["rows"] > 0 and first["math"] == 0, first
    assert console_errors(driver) == []


def test_a_teaching_moments_token_card_is_folded_and_a_chosen_tokens_open(open_page, driver, console_errors):
    """The token a teaching moment opens at shows its numbers with the Explainer's card folded under them (one
    click away); a token the reader clicks opens its card."""
    open_page(CISPO)
    uid = driver.execute_script("return [...document.querySelectorAll('.unipo-inspector[data-moment]')][0].id")
    driver.execute_script("document.getElementById(arguments[0]).scrollIntoView()", uid)
    H.wait_js(driver, "const i = document.getElementById(arguments[0]); return i.dataset.ready === '1' && i.dataset.selected",
              uid, what="the moment's token")
    card = driver.execute_script("const c = document.querySelector('#' + arguments[0] + ' details.unipo-token-card');"
                                 "return c && {open: c.open, summary: c.querySelector('summary').textContent}", uid)
    assert card and not card["open"] and "how this token" in card["summary"], card
    token = driver.find_element(By.CSS_SELECTOR, f"#{uid} .unipo-group .unipo-tok:not(.unipo-tok--masked):not(.unipo-tok--selected)")
    driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", token)
    token.click()
    H.wait_js(driver, "const c = document.querySelector('#' + arguments[0] + ' details.unipo-token-card'); return c && c.open",
              uid, what="the chosen token's card, open")
    assert console_errors(driver) == []
