"""The site skeleton in a real browser: formulas, charts, instant navigation, colour schemes."""

from __future__ import annotations

import re

import pytest

import browser_harness as H

pytestmark = pytest.mark.browser

RENDERING = "reference/rendering/"


def _luminance(css_colour: str) -> float:
    r, g, b = (float(x) for x in re.findall(r"[\d.]+", css_colour)[:3])
    return (0.2126 * r + 0.7152 * g + 0.0722 * b) / 255.0


def _axis_label_luminance(driver) -> float:
    colour = driver.execute_script(
        "const t = document.querySelector('.unipo-vega svg .role-axis-label text');"
        "return t ? getComputedStyle(t).fill : null;"
    )
    assert colour, "no axis label in the chart"
    return _luminance(colour)


def test_rendering_page_typesets_math_and_draws_chart(open_page, site_url, console_errors):
    driver = open_page(RENDERING)
    assert driver.execute_script("return document.querySelectorAll('.katex').length") >= 5
    assert driver.execute_script("return document.querySelectorAll('.katex-display').length") == 1
    # \htmlClass is trusted: the highlighted part of the formula carries its class.
    assert driver.execute_script("return document.querySelectorAll('.katex .unipo-tex-em').length") == 1
    assert driver.execute_script("return document.querySelectorAll('.katex-error').length") == 0
    # The chart is an SVG with the three estimator lines.
    assert driver.execute_script("return document.querySelectorAll('.unipo-vega svg').length") == 1
    lines = driver.execute_script(
        "return document.querySelectorAll('.unipo-vega svg .mark-line path').length"
    )
    assert lines == 3
    assert console_errors(driver) == []
    assert H.foreign_requests(driver, site_url) == []


def test_every_page_loads_without_errors_or_foreign_requests(driver, site_url, built_site):
    """Every page of every run set renders (formulas, charts, started views) with a clean console and
    nothing fetched off the site; read from the one walk over all pages (browser_harness.walk_every_page),
    which test_reader's budgets read too."""
    pages = H.site_pages(built_site)
    assert "" in pages and RENDERING in pages
    visits = H.walk_every_page(driver, site_url, built_site)
    assert sorted(visits) == pages
    problems = {}
    for page in pages:
        visit = visits[page]
        if "rendered" in visit.waits or visit.console or visit.foreign:
            problems[page or "/"] = {"rendered": visit.waits.get("rendered"), "console": visit.console,
                                     "foreign": visit.foreign}
    assert problems == {}


def test_instant_navigation_renders_new_page(
    open_page, driver, site_url, served_as_built, console_errors
):
    if not served_as_built:
        pytest.skip("the reused site was built for another URL; instant navigation follows the sitemap")
    H.watch_sitemap(driver)
    open_page("")
    # Material attaches its link handler once it has read the sitemap.
    H.wait_instant_navigation(driver)
    driver.execute_script("window.__unipoSamePage = 42;")
    link = driver.find_element(
        "css selector", f'.md-sidebar--primary a.md-nav__link[href$="{RENDERING}"]'
    )
    link.click()
    H.wait_until(driver, lambda d: d.current_url.endswith(RENDERING), what=f"the URL to end with {RENDERING}")
    H.wait_js(
        driver,
        "return document.querySelectorAll('.katex').length > 0 &&"
        " document.querySelectorAll('.unipo-vega svg').length === 1",
        what="formulas and chart rendered after instant navigation",
    )
    # Instant navigation replaced the content without reloading the page.
    assert driver.execute_script("return window.__unipoSamePage") == 42
    assert console_errors(driver) == []
    assert H.foreign_requests(driver, site_url) == []


def test_charts_follow_the_colour_scheme(open_page, set_scheme, driver, console_errors):
    open_page(RENDERING)
    light = _axis_label_luminance(driver)
    set_scheme("slate")
    dark = _axis_label_luminance(driver)
    assert light < 0.5 < dark, (light, dark)
    set_scheme("default")
    assert _axis_label_luminance(driver) == pytest.approx(light)
    assert console_errors(driver) == []


def test_renderers_registry_is_idempotent(open_page, driver, console_errors):
    open_page(RENDERING)
    calls = driver.execute_script(
        """
        window.__calls = [];
        UNIPO.register('probe', root => window.__calls.push(root.getAttribute('data-md-component')));
        // The page pass already ran: the renderer runs at once, exactly once.
        return window.__calls;
        """
    )
    assert calls == ["content"]
    # A second pass over the same page does nothing (formulas and charts keep their output).
    before = driver.execute_script("return document.querySelector('.unipo-vega svg').outerHTML.length")
    driver.execute_script("UNIPO.render(document.querySelector('[data-md-component=content]'))")
    assert driver.execute_script("return document.querySelectorAll('.unipo-vega svg').length") == 1
    after = driver.execute_script("return document.querySelector('.unipo-vega svg').outerHTML.length")
    assert before == after
    assert console_errors(driver) == []


def test_narrow_screen_has_no_horizontal_overflow(open_page, driver):
    open_page(RENDERING, width=390)
    overflow = driver.execute_script(
        "return document.documentElement.scrollWidth - document.documentElement.clientWidth"
    )
    assert overflow <= 0
    widths = driver.execute_script(
        "return [...document.querySelectorAll('.unipo-vega svg')].map(s => s.getBoundingClientRect().width)"
    )
    assert widths and all(w <= 390 for w in widths)
