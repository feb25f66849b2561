"""The site read as one instrument (issue 21, items 6-9), in Chromium on the site built from the
shipped runs.

- Search shows the text a reader reads: no class names, no words glued to their neighbours.
- A metric keeps one colour on every ring of every page; captions name the colours drawn.
- Formulas: no row ends on an opening bracket; scrolled to its left end, a formula's first glyph
  shows whole, at 1280 and at 390 px.
- DAPO's dropped groups are named by what they are, and a reward stays on one line.
"""

from __future__ import annotations

import json
import re

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

import browser_harness as H

pytestmark = pytest.mark.browser

#: A class name of the site's own (two dashes at least: unipo-slot-aggregation, unipo-diff-added).
CLASS_NAME = re.compile(r"\bunipo-[a-z]+-[a-z0-9]")
#: One word written twice with nothing between ("AggregationAggregation", "rewardReward").
GLUED_TWICE = re.compile(r"(?i)\b([a-z]{3,})\1")


def _wait(driver, js: str, *args, timeout: float = 20.0, what: str = ""):
    return H.wait_js(driver, js, *args, timeout=timeout, what=what)


def _prose(html: str) -> str:
    """An index entry's text as a result shows it, code left out (code may name a class)."""
    return re.sub(r"<[^>]+>", "", re.sub(r"<code>.*?</code>|<pre>.*?</pre>", " ", html, flags=re.S))


# ---------------------------------------------------------------------------- 6. search


def test_every_page_of_the_index_reads_as_text(built_site):
    index = json.loads((built_site / "search" / "search_index.json").read_text(encoding="utf-8"))
    bad = []
    for doc in index["docs"]:
        for key in ("title", "text"):
            text = _prose(doc[key])
            for pattern in (CLASS_NAME, GLUED_TWICE):
                match = pattern.search(text)
                if match:
                    bad.append(f"{doc['location']} {key}: …{text[max(0, match.start() - 40):match.end() + 40]}…")
    assert bad == []
    texts = {doc["location"]: doc["text"] for doc in index["docs"]}
    # the objective reads as a formula, the explainer's parts as separate words
    objective = texts["course/algorithms/grpo/#the-objective"]
    assert "[1/G∑_i=1^G1/|o_i|∑_t=1^|o_i|(min(ρ_i,t" in objective
    assert "Aggregation mean per response, then over responses" in objective
    # table cells are words apart; hidden text (a chip's description) is not indexed
    assert "Field Type Required Description" in texts["reference/schema/#schema-header-runheader"]


def test_search_results_show_clean_text(open_page, driver, console_errors):
    open_page("")
    box = driver.find_element(By.CSS_SELECTOR, "input.md-search__input")
    driver.execute_script("document.querySelector('label.md-search__icon, .md-header__button[for=__search]')?.click();"
                          "document.getElementById('__search').checked = true;")
    box.send_keys("aggregation")
    results = _wait(driver, """const items = [...document.querySelectorAll('.md-search-result__item')];
        return items.length >= 3 ? items.map(i => i.innerText) : null;""", what="search results")
    joined = "\n".join(results)
    assert "mean per response" in joined
    for text in results:
        assert not CLASS_NAME.search(text), text[:300]
        assert not GLUED_TWICE.search(text), text[:300]
    box.send_keys(Keys.ESCAPE)
    assert console_errors(driver) == []


# ---------------------------------------------------------------------------- 7. colour

_RING_COLOURS_JS = """
const e = document.querySelector('.unipo-explorer');
e.scrollIntoView();
const out = {};
const rings = [...e.querySelectorAll('.unipo-explorer__ring')];
rings.forEach((li, j) => {
  const path = e.querySelector(`.ring${j}_marks path`);
  out[li.getAttribute('data-metric')] = {
    swatch: getComputedStyle(li.querySelector('.unipo-explorer__swatch')).backgroundColor,
    stroke: path ? getComputedStyle(path).stroke : null};
});
return out;
"""


def _rgb(css: str) -> str:
    r, g, b = (int(x) for x in re.findall(r"\d+", css)[:3])
    return "#%02X%02X%02X" % (r, g, b)


@pytest.mark.parametrize("scheme", ["default", "slate"])
def test_a_metric_keeps_its_colour_on_every_page(open_page, driver, scheme, console_errors):
    """Clipped high is the third ring on GRPO's chapter and the third on DAPO's, the second on
    GSPO's: one colour on all of them, its palette's, and never an algorithm's."""
    from unipo_build.site import palette as P

    seen = {}
    for page in ("course/algorithms/grpo/", "course/algorithms/dapo/", "course/algorithms/gspo/"):
        open_page(page, scheme=scheme)
        rings = _wait(driver, "const r = (function () {" + _RING_COLOURS_JS + "})();"
                              "return Object.values(r).every(v => v.stroke && v.stroke !== 'none') ? r : null;",
                      what="rings drawn")
        for metric, colours in rings.items():
            swatch, stroke = _rgb(colours["swatch"]), _rgb(colours["stroke"])
            assert swatch == stroke, (page, metric, swatch, stroke)
            expected = P.METRIC_PALETTE[P.metric_colour(metric)][1 if scheme == "slate" else 0].upper()
            assert swatch == expected, (page, metric)
            seen.setdefault(metric, set()).add(swatch)
        assert len(set(rings_colour := [_rgb(v["swatch"]) for v in rings.values()])) == len(rings_colour)
        assert not {c for c in rings_colour} & {c.upper() for c in P.ALGORITHMS.values()}
    assert len(seen["clip/frac_high"]) == 1 and len(seen["reward/mean"]) == 1
    assert console_errors(driver) == []


def test_the_gdpo_caption_names_the_colours_it_draws(open_page, driver, console_errors):
    from unipo_build.site import palette as P

    open_page("playgrounds/gdpo/")
    caption = driver.execute_script("""return [...document.querySelectorAll('figcaption')].map(c => c.textContent)
        .find(t => t.includes('against GDPO'));""")
    assert f"GRPO ({P.colour_name(P.ALGORITHMS['grpo'])}) against GDPO ({P.colour_name(P.ALGORITHMS['gdpo'])})" in caption
    drawn = driver.execute_script("""const f = document.querySelector('[data-pg-chart="toy"]');
        return [...f.querySelectorAll('svg path, svg line, svg rect')].map(p => getComputedStyle(p).stroke)
          .concat([...f.querySelectorAll('svg path, svg rect')].map(p => getComputedStyle(p).fill))
          .filter(c => c && c.startsWith('rgb'));""")
    drawn = {_rgb(c) for c in drawn}
    assert {P.ALGORITHMS["grpo"].upper(), P.ALGORITHMS["gdpo"].upper()} <= drawn
    assert console_errors(driver) == []


# ---------------------------------------------------------------------------- 8. formulas

_FORMULA_LAYOUT_JS = r"""
await document.fonts.ready;
const OPENING = /[(\[{⟨]$/;
const canvas = document.createElement('canvas').getContext('2d');
const out = {formulas: 0, orphans: [], cut: [], unreachable: []};
for (const box of document.querySelectorAll('div.arithmatex[data-unipo-rendered="katex"]')) {
  if (!box.offsetParent) continue;
  const html = box.querySelector('.katex-html');
  if (!html) continue;
  out.formulas += 1;
  const tex = (box.querySelector('annotation') || {}).textContent || '';
  // rows of aligned environments: no cell ends on an opening bracket
  for (const cell of html.querySelectorAll('.mtable > [class*="col-align"] > .vlist-t > .vlist-r > .vlist > span')) {
    const text = cell.textContent.replace(/[\s\u200b]+/g, '');
    if (OPENING.test(text)) out.orphans.push(text.slice(-30));
  }
  // scrolled to its left end, the leftmost ink (each text's first glyph, with its overhang)
  // lies inside the box
  box.scrollLeft = 0;
  const inner = box.getBoundingClientRect().left + box.clientLeft;
  let ink = Infinity;
  const walker = document.createTreeWalker(html, NodeFilter.SHOW_TEXT);
  while (walker.nextNode()) {
    const node = walker.currentNode;
    const first = node.textContent.search(/\S/);
    if (first < 0) continue;
    const range = document.createRange();
    range.setStart(node, first); range.setEnd(node, first + 1);
    const rect = range.getBoundingClientRect();
    if (!rect.width) continue;
    const cs = getComputedStyle(node.parentElement);
    canvas.font = `${cs.fontStyle} ${cs.fontWeight} ${cs.fontSize} ${cs.fontFamily}`;
    const m = canvas.measureText(node.textContent[first]);
    ink = Math.min(ink, rect.left - Math.max(0, m.actualBoundingBoxLeft));
  }
  if (ink < inner - 0.5) out.cut.push([tex.slice(0, 40), Math.round(inner - ink)]);
  // a formula wider than its box scrolls inside it to its right end
  if (box.scrollWidth > box.clientWidth + 1) {
    const scrolls = ['auto', 'scroll'].includes(getComputedStyle(box).overflowX);
    box.scrollLeft = box.scrollWidth;
    const reached = box.scrollLeft + box.clientWidth >= box.scrollWidth - 1;
    box.scrollLeft = 0;
    if (!scrolls || !reached) out.unreachable.push(tex.slice(0, 40));
  }
}
out.page = document.documentElement.scrollWidth - innerWidth;
return out;
"""


@pytest.mark.parametrize("width", [1280, 390])
@pytest.mark.parametrize("page", ["course/algorithms/grpo/", "course/algorithms/dapo/", "course/compare/objectives/"])
def test_formulas_break_at_operators_and_show_their_left_edge(open_page, driver, page, width, console_errors):
    open_page(page, width=width)
    driver.execute_script("document.querySelectorAll('details').forEach(d => d.open = true); UNIPO.renderAll();")
    H.wait_rendered(driver)
    H.wait_settled(driver, what="the opened details")
    layout = driver.execute_async_script("const done = arguments[arguments.length - 1];"
                                         "(async () => {" + _FORMULA_LAYOUT_JS + "})().then(done);")
    assert layout["formulas"] >= 3
    assert layout["orphans"] == [], "a row ends on an opening bracket"
    assert layout["cut"] == [], "scrolled to its left end, a formula's first glyph is cut"
    assert layout["unreachable"] == []
    assert layout["page"] <= 0
    assert console_errors(driver) == []


# ---------------------------------------------------------------------------- 9. DAPO's dropped group


@pytest.mark.parametrize("width", [1280, 390])
def test_a_dropped_group_is_named_and_its_rewards_read_as_one_number(open_page, driver, width, console_errors):
    open_page("course/algorithms/dapo/", width=width)
    # the inspector that opens on the dropped-group moment (inspector.js renders it when it comes into view),
    # in the content tab of its own the chapter gives it beside the clipped token's: the reader picks that tab
    uid = driver.execute_script("""const i = [...document.querySelectorAll('.unipo-inspector')]
        .find(i => i.getAttribute('data-moment') === 'filtered_group');
        if (!i) return null;
        const block = i.closest('.tabbed-block');
        if (block) block.closest('.tabbed-set').querySelectorAll(':scope > .tabbed-labels > label')[
            [...block.parentElement.children].indexOf(block)].click();
        i.scrollIntoView(); return i.id;""")
    assert uid, "no inspector on the DAPO chapter opens a dropped group"
    _wait(driver, "return document.getElementById(arguments[0]).getAttribute('data-ready') === '1'", uid)
    assert driver.execute_script(
        "return !!document.getElementById(arguments[0]).querySelector('.unipo-group[data-filtered=\"1\"]')", uid)
    state = driver.execute_script("""const i = document.getElementById(arguments[0]);
        const g = i.querySelector('.unipo-group[data-filtered="1"]');
        return {name: g.querySelector('.unipo-group-name').textContent,
                listed: [...i.querySelectorAll('.unipo-filtered-list li')].map(li => li.textContent),
                status: (i.querySelector('.unipo-inspector-status, [role=status]') || {}).textContent || '',
                rewards: [...g.querySelectorAll('.unipo-response-reward')].map(r => [r.textContent, r.getClientRects().length,
                          r.getBoundingClientRect().right <= r.parentElement.getBoundingClientRect().right + 1])};""", uid)
    assert re.fullmatch(r"Filtered group \d+", state["name"]), state["name"]
    assert state["listed"] and all(re.match(r"Filtered group \d+: \d+/\d+ correct, dropped", li) for li in state["listed"])
    assert not any("1000" in text for text in [state["name"], *state["listed"], state["status"]])
    # Every reward one number on one line inside its row: a shaped one (e.g. −0.3421, when the group has an
    # answer near the length budget) as much as a plain 0 or 1.
    assert state["rewards"] and all(re.fullmatch(r"[−+]?\d+(\.\d+)?", text) for text, _, _ in state["rewards"])
    assert all(lines == 1 and inside for _, lines, inside in state["rewards"]), state["rewards"]
    assert console_errors(driver) == []
