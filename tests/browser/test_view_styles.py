"""Each view's style sheet is linked only on the pages that show the view (unipo_build/site/macros.py
VIEW_STYLES), in the page's head, where Material's instant navigation adds and drops it with the
page; the pages' own figures are styled by the one site-wide sheet, assets/pages.css."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from selenium.webdriver.common.by import By

import browser_harness as H
from unipo_build.site import macros

VIEW_LINK = re.compile(r'<link rel="stylesheet" href="((?:\.\./)*)assets/views/([\w.-]+\.css)">')
ANY_LINK = re.compile(r'<link rel="stylesheet" href="([^"]+)">')
CLASS_ATTR = re.compile(r'class="([^"]*)"')

#: A page without a view, and a chapter with the explainer and the inspector.
PLAIN, CHAPTER = "reference/components/", "course/algorithms/grpo/"


def pages(site: Path) -> list[Path]:
    return sorted(p for p in site.rglob("*.html") if "assets" not in p.relative_to(site).parts)


def head_and_body(html: str) -> tuple[str, str]:
    end = html.index("</head>")
    return html[:end], html[end:]


def view_sheets(html: str) -> list[str]:
    return [m.group(2) for m in VIEW_LINK.finditer(html)]


def test_a_page_links_the_style_sheets_of_its_views_and_no_others(built_site):
    site = Path(built_site)
    checked = {"inspector": 0, "plain": 0}
    for page in pages(site):
        html = page.read_text(encoding="utf-8")
        if "</head>" not in html:
            continue
        head, body = head_and_body(html)
        sheets = view_sheets(head)
        where = page.relative_to(site)
        assert view_sheets(body) == [], f"{where}: a view style sheet outside the head"
        assert len(sheets) == len(set(sheets)), f"{where}: a view style sheet linked twice: {sheets}"
        for m in VIEW_LINK.finditer(head):
            assert (page.parent / m.group(1) / "assets" / "views" / m.group(2)).is_file(), f"{where}: {m.group(0)}"
        assert any(h.endswith("assets/pages.css") for h in ANY_LINK.findall(head)), f"{where}: no pages.css"
        # the inspector's sheet exactly where an inspector is
        has_inspector = 'class="unipo-inspector"' in body
        assert ("inspector.css" in sheets) == has_inspector, f"{where}: inspector {has_inspector}, sheets {sheets}"
        assert ("explorer.css" in sheets) == ('class="unipo-explorer"' in body), f"{where}: {sheets}"
        if 'class="unipo-compare-view"' in body or 'class="unipo-compare-selector"' in body:
            assert "compare.css" in sheets, f"{where}: a comparison without its sheet"
        checked["inspector" if has_inspector else "plain"] += 1
    assert checked["inspector"] and checked["plain"], checked
    chapter = view_sheets(head_and_body((site / CHAPTER / "index.html").read_text(encoding="utf-8"))[0])
    # in the cascade order of STYLE_SHEETS: the common rules first, a view's own after them
    assert chapter == [Path(s).name for s in macros.STYLE_SHEETS if Path(s).name in chapter]
    assert {"views-common.css", "inspector.css", "explainer.css"} <= set(chapter)
    assert view_sheets((site / PLAIN / "index.html").read_text(encoding="utf-8")) == []


def _selectors(css: str) -> set[frozenset[str]]:
    """Each selector of a sheet as the set of classes it names (rules naming no class left out)."""
    css = re.sub(r"/\*.*?\*/", "", css, flags=re.S)
    out = set()
    for group in re.findall(r"([^{}]+)\{", css):
        if group.strip().startswith("@"):
            continue
        for selector in group.split(","):
            classes = frozenset(re.findall(r"\.([\w-]+)", selector))
            if classes:
                out.add(classes)
    return out


def test_every_rule_a_page_could_use_is_in_a_sheet_it_loads(built_site):
    """A selector whose classes all occur in a page's HTML styles something there: the page loads its
    sheet. (What the views' scripts draw comes with the views, whose sheets the page links.)"""
    site = Path(built_site)
    sheets = {p.name: _selectors(p.read_text(encoding="utf-8")) for p in (site / "assets" / "views").glob("*.css")}
    assert {Path(s).name for s in macros.STYLE_SHEETS} == set(sheets)
    missing = []
    for page in pages(site):
        html = page.read_text(encoding="utf-8")
        if "</head>" not in html:
            continue
        linked = set(view_sheets(head_and_body(html)[0]))
        classes = {c for attr in CLASS_ATTR.findall(html) for c in attr.split()}
        for name, selectors in sheets.items():
            if name not in linked:
                missing += [f"{page.relative_to(site)}: .{' .'.join(sorted(s))} ({name})"
                            for s in selectors if s <= classes]
    assert not missing, "rules in sheets the page does not load:\n" + "\n".join(missing[:40])


def _wait(driver, js: str, what: str, timeout: float = 30.0):
    return H.wait_js(driver, js, timeout=timeout, what=what)


def _follow(driver, href: str) -> None:
    """Click a link to ``href`` put at the top of the page's content (Material intercepts it)."""
    driver.execute_script("""const a = document.createElement('a'); a.href = arguments[0];
        a.id = 'unipo-style-link'; a.textContent = 'go';
        document.querySelector('[data-md-component=content]').prepend(a);""", href)
    driver.find_element(By.ID, "unipo-style-link").click()


HEAD_SHEETS = """return [...document.head.querySelectorAll('link[rel=stylesheet]')]
    .map(l => l.href).filter(h => h.includes('/assets/views/')).map(h => h.split('/').pop())"""
SHEET_APPLIED = """return [...document.styleSheets].some(s => s.href && s.href.endsWith('/assets/views/' + arguments[0])
    && s.cssRules.length > 0)"""


def test_instant_navigation_brings_and_drops_a_views_styles(open_page, driver, site_url, served_as_built,
                                                            console_errors):
    if not served_as_built:
        pytest.skip("the reused site was built for another URL; instant navigation follows the sitemap")
    H.watch_sitemap(driver)
    open_page(PLAIN)
    assert driver.execute_script(HEAD_SHEETS) == []
    # Material intercepts links once it has read the sitemap
    H.wait_instant_navigation(driver)
    driver.execute_script("window.__unipoSamePage = 11")
    _follow(driver, site_url + CHAPTER)
    _wait(driver, f"return location.pathname.endsWith('/{CHAPTER}') && document.querySelector('.unipo-inspector')",
          "the chapter swapped in")
    assert driver.execute_script("return window.__unipoSamePage") == 11, "the chapter was loaded anew"
    sheets = _wait(driver, HEAD_SHEETS.replace("return ", "const s = ", 1) + "; return s.length ? s : null",
                   "the chapter's view sheets in the head")
    assert {"views-common.css", "inspector.css", "explainer.css"} <= set(sheets)
    for name in ("views-common.css", "inspector.css", "explainer.css"):
        _wait(driver, SHEET_APPLIED.replace("arguments[0]", repr(name)), f"{name} loaded")
    # the views drawn in their own styles (their frame is views-common.css's)
    assert driver.execute_script(
        "return getComputedStyle(document.querySelector('.unipo-inspector')).borderTopStyle") == "solid"
    assert driver.execute_script(
        "return getComputedStyle(document.querySelector('.unipo-explainer')).borderTopStyle") == "solid"
    _follow(driver, site_url + PLAIN)
    _wait(driver, f"return location.pathname.endsWith('/{PLAIN}') && !document.querySelector('.unipo-inspector')",
          "the plain page swapped back in")
    assert driver.execute_script("return window.__unipoSamePage") == 11
    _wait(driver, HEAD_SHEETS.replace("return ", "const s = ", 1) + "; return s.length === 0",
          "the view sheets dropped from the head")
    assert console_errors(driver) == []
