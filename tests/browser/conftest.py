"""Fixtures of the browser tests, on the one harness in browser_harness.py (servers, Chromium, waits).

Fixtures
- ``site_url``: base URL of the session's built site (tests/conftest.py ``site_build``), served on
  127.0.0.1 under a subpath (``/unipo/``, as on GitHub Pages), so absolute paths show up as 404s.
  The test build is made for that URL, so its sitemap matches and instant navigation works.
- ``served_as_built``: False when a reused UNIPO_SITE_DIR was built for another URL.
- ``chromium``: the session's one headless Chromium (every host except 127.0.0.1 resolves to
  nothing, so a request to another host fails and shows in the console).
- ``driver``: a fresh tab of it for each test: no history, storage, cache, console entries,
  emulation or init scripts of an earlier test. Modules that build and serve a site of their own
  use it too (with ``browser_harness.serving`` / ``SiteServer`` / ``build_test_site``).
- ``open_page(path, scheme=None, width=None)``: load a page relative to ``site_url`` and wait
  until formulas, charts and the views it started are done.
- ``wait_rendered()``, ``set_scheme(scheme)``, ``set_width(width)``: the steps of open_page.
- ``console_errors(driver)``: SEVERE browser console entries (favicon 404s ignored).
- ``screenshot(path, name, scheme="default", width=1280)``: a full-page PNG in
  $UNIPO_SCREENSHOTS (default /tmp/unipo-shots); returns its path.
- ``run_set``: a test that checks a view takes it to run on each run set the build shows
  (parametrized: ``""`` for the default set at the site's root, ``"gpu/"`` for the gpu set); prefix
  its page paths with it. The gpu set is in a plain build whenever data/runs-gpu holds runs; a
  reused UNIPO_SITE_DIR built without it skips that case, saying so.

Every test in this directory is marked ``browser``. Without Chromium and chromedriver the
tests are skipped, unless UNIPO_REQUIRE_BROWSER=1 (set by .ci/test.sh), which fails them.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path
from urllib.parse import urlsplit

import pytest

import browser_harness as H

HERE = Path(__file__).resolve().parent


def pytest_collection_modifyitems(config, items):
    reason = H.browser_missing()
    require = os.environ.get("UNIPO_REQUIRE_BROWSER") == "1"
    for item in items:
        if HERE not in Path(str(item.path)).resolve().parents:
            continue
        item.add_marker(pytest.mark.browser)
        if reason and not require:
            item.add_marker(pytest.mark.skip(reason=reason))


@pytest.fixture(scope="session")
def site_url(site_build, built_site):
    H.require_browser()
    with H.serving(built_site, site_build.site_url) as url:
        yield url


@pytest.fixture(scope="session")
def served_as_built(site_build, site_url) -> bool:
    """Whether the site is served at the URL in its sitemap (needed by instant navigation)."""
    return bool(site_build.site_url) and urlsplit(site_build.site_url)[1:3] == urlsplit(site_url)[1:3]


@pytest.fixture(scope="session")
def chromium():
    H.require_browser()
    browser = H.Chromium()
    try:
        yield browser
    finally:
        browser.quit()


@pytest.fixture
def driver(chromium):
    return chromium.fresh()


@pytest.fixture(name="console_errors")
def console_errors_fixture():
    return H.console_errors


@pytest.fixture
def open_page(driver, site_url):
    def _open(path: str = "", *, scheme: str | None = None, width: int | None = None):
        if width:
            H.set_width(driver, width)
        driver.get(site_url + path.lstrip("/"))
        H.wait_rendered(driver)
        if scheme:
            H.set_scheme(driver, scheme)
        return driver

    return _open


#: The run sets a view's test runs on: (id, the path prefix of its pages in the built site).
RUN_SETS = (("tiny", ""), ("gpu", "gpu/"))


@pytest.fixture(params=[prefix for _, prefix in RUN_SETS], ids=[name for name, _ in RUN_SETS])
def run_set(request, built_site) -> str:
    """The path prefix of one run set's pages (see RUN_SETS); the gpu set's case is skipped only when
    the built site has no gpu set (a build on other runs, or a clone without data/runs-gpu)."""
    prefix = request.param
    if prefix and not (Path(built_site) / prefix / "index.html").is_file():
        pytest.skip(f"the built site has no {prefix!r} set (data/runs-gpu holds no runs, or UNIPO_RUNS names other runs)")
    return prefix


@pytest.fixture(name="wait_rendered")
def wait_rendered_fixture(driver):
    return functools.partial(H.wait_rendered, driver)


@pytest.fixture(name="set_scheme")
def set_scheme_fixture(driver):
    return functools.partial(H.set_scheme, driver)


@pytest.fixture(name="set_width")
def set_width_fixture(driver):
    return functools.partial(H.set_width, driver)


@pytest.fixture
def screenshot(driver, site_url):
    """``screenshot(path, name, scheme="default", width=1280, full_page=True)`` -> Path."""

    def _shoot(path: str, name: str, **kwargs) -> Path:
        return H.take_screenshot(driver, site_url + path.lstrip("/"), name, **kwargs)

    return _shoot
