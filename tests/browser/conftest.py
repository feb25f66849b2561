"""Browser test harness: the built site on a local server, headless Chromium, helpers.

Fixtures
- ``site_url``: base URL of the built site, served by a threaded http.server on 127.0.0.1
  under a subpath (``/unipo/``, as on GitHub Pages), so absolute paths show up as 404s. The
  test build is made for that URL, so its sitemap matches and instant navigation works.
- ``served_as_built``: False when a reused UNIPO_SITE_DIR was built for another URL.
- ``driver``: a fresh headless Chromium (selenium) per test; every host except 127.0.0.1
  resolves to nothing, so a request to another host fails and shows in the console.
- ``open_page(path, scheme=None, width=None)``: load a page relative to ``site_url`` and wait
  until formulas, charts and registered renderers are done.
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

import contextlib
import functools
import os
import shutil
import tempfile
import threading
import time
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

CHROMIUM = os.environ.get("UNIPO_CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("UNIPO_CHROMEDRIVER", "/usr/bin/chromedriver")
DEFAULT_SUBPATH = "/unipo/"
HERE = Path(__file__).resolve().parent

CHROME_ARGS = [
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-default-apps",
    "--disable-extensions",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-quic",
    "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1",
    "--window-size=1280,900",
]


def _browser_missing() -> str | None:
    missing = [p for p in (CHROMIUM, CHROMEDRIVER) if not os.access(p, os.X_OK)]
    try:
        import selenium  # noqa: F401
    except ImportError:
        missing.append("the selenium package (pip install -e '.[dev]')")
    if missing:
        return "browser tests need " + " and ".join(missing) + " (apt-get install chromium chromium-driver)"
    return None


def pytest_collection_modifyitems(config, items):
    reason = _browser_missing()
    require = os.environ.get("UNIPO_REQUIRE_BROWSER") == "1"
    for item in items:
        if HERE not in Path(str(item.path)).resolve().parents:
            continue
        item.add_marker(pytest.mark.browser)
        if reason and not require:
            item.add_marker(pytest.mark.skip(reason=reason))


# ---------------------------------------------------------------------------- server


class _SiteHandler(SimpleHTTPRequestHandler):
    """Serves the site directory under ``prefix``; everything else is a 404."""

    prefix = DEFAULT_SUBPATH

    def translate_path(self, path):
        url_path = unquote(urlsplit(path).path)
        if not url_path.startswith(self.prefix):
            return os.path.join(self.directory, "__outside_the_site__")
        return super().translate_path("/" + url_path[len(self.prefix):])

    def log_message(self, format, *args):  # keep pytest output clean
        pass


def _serve(site_dir: Path, built_for: str | None) -> tuple[ThreadingHTTPServer, str]:
    """Serve at the URL the site was built for when that is a free local port, else anywhere."""
    want = urlsplit(built_for or "")
    candidates = []
    if want.hostname in ("127.0.0.1", "localhost") and want.port:
        candidates.append((want.port, want.path if want.path.endswith("/") else want.path + "/"))
    candidates.append((0, DEFAULT_SUBPATH))
    for port, prefix in candidates:
        handler = type("Handler", (_SiteHandler,), {"prefix": prefix})
        try:
            server = ThreadingHTTPServer(
                ("127.0.0.1", port), functools.partial(handler, directory=str(site_dir))
            )
        except OSError:
            continue
        return server, f"http://127.0.0.1:{server.server_address[1]}{prefix}"
    raise RuntimeError("could not start the site server")


def require_browser() -> None:
    """Skip the calling fixture or test when Chromium or selenium is missing; fail it instead under
    UNIPO_REQUIRE_BROWSER=1 (.ci/test.sh), where a missing browser is a broken machine, not a choice."""
    if reason := _browser_missing():
        if os.environ.get("UNIPO_REQUIRE_BROWSER") == "1":
            pytest.fail(reason)
        pytest.skip(reason)


@pytest.fixture(scope="session")
def site_url(site_build, built_site):
    require_browser()
    with serving(built_site, site_build.site_url) as url:
        yield url


@contextlib.contextmanager
def serving(site_dir, built_for: str | None = None):
    """A built site served on 127.0.0.1 in a background thread (``_serve``'s address) until the
    block ends; yields its base URL."""
    server, url = _serve(site_dir, built_for)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, name="unipo-site", daemon=True)
    thread.start()
    try:
        yield url
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="session")
def served_as_built(site_build, site_url) -> bool:
    """Whether the site is served at the URL in its sitemap (needed by instant navigation)."""
    return bool(site_build.site_url) and urlsplit(site_build.site_url)[1:3] == urlsplit(site_url)[1:3]


# ---------------------------------------------------------------------------- browser


def make_driver(user_data_dir: str):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in CHROME_ARGS:
        options.add_argument(arg)
    options.add_argument(f"--user-data-dir={user_data_dir}")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)


@contextlib.contextmanager
def fresh_driver():
    """A headless Chromium with its own empty profile, quit and removed afterwards."""
    profile = tempfile.mkdtemp(prefix="unipo-chrome-")
    drv = make_driver(profile)
    drv.set_page_load_timeout(60)
    try:
        yield drv
    finally:
        drv.quit()
        shutil.rmtree(profile, ignore_errors=True)


@pytest.fixture
def driver(site_url):
    with fresh_driver() as drv:
        yield drv


@pytest.fixture
def own_driver():
    """A fresh headless Chromium for a module that builds its own site (not the session's)."""
    with fresh_driver() as drv:
        yield drv


def wait_js(driver, js: str, *args, timeout: float = 20.0, what: str = "", poll: float = 0.1):
    """Poll ``js`` (with ``args``) every ``poll`` s until it returns something truthy; that value, or a
    failure naming ``what``."""
    deadline = time.monotonic() + timeout
    value = None
    while time.monotonic() < deadline:
        value = driver.execute_script(js, *args)
        if value:
            return value
        time.sleep(poll)
    raise AssertionError(f"timed out waiting for {what or js} (last value {value!r})")


def console_errors(driver) -> list[dict]:
    """SEVERE console entries since the last call (reading the log empties it)."""
    return [
        entry
        for entry in driver.get_log("browser")
        if entry.get("level") == "SEVERE" and "favicon" not in entry.get("message", "")
    ]


@pytest.fixture(name="console_errors")
def console_errors_fixture():
    return console_errors


_RENDER_STATE_JS = """
const scheme = document.body.getAttribute('data-md-color-scheme') || 'default';
const math = [...document.querySelectorAll('.arithmatex')];
const charts = [...document.querySelectorAll('.unipo-vega')];
return {
  ready: document.readyState === 'complete' && !!window.UNIPO,
  math: math.filter(e => !e.hasAttribute('data-unipo-rendered')).length,
  charts: charts.filter(e => {
    const s = e.getAttribute('data-unipo-rendered');
    return s !== scheme && s !== 'error';
  }).length,
};
"""


def wait_rendered(driver, timeout: float = 30.0, *, everything: bool = True) -> None:
    """Wait until every formula is typeset and every chart drawn for the current scheme.

    The site typesets a formula when it comes near the viewport (or its <details> opens);
    ``everything`` typesets the deferred ones first (``UNIPO.renderAll``), so a test can read
    every formula of the page. ``everything=False``: the page as a reader at its top has it.
    """
    deadline = time.monotonic() + timeout
    state = None
    while time.monotonic() < deadline:
        if everything:
            driver.execute_script("if (window.UNIPO && window.UNIPO.renderAll) window.UNIPO.renderAll();")
        state = driver.execute_script(_RENDER_STATE_JS)
        if state["ready"] and state["math"] == 0 and state["charts"] == 0:
            return
        time.sleep(0.1)
    raise AssertionError(f"page not rendered after {timeout}s: {state}")


def set_scheme(driver, scheme: str) -> None:
    """Switch Material's palette to 'default' (light) or 'slate' (dark) as the toggle does."""
    driver.execute_script(
        """
        const scheme = arguments[0];
        if ((document.body.getAttribute('data-md-color-scheme') || 'default') === scheme) return;
        const input = document.querySelector(`input[name="__palette"][data-md-color-scheme="${scheme}"]`);
        if (!input) throw new Error('no palette option for scheme ' + scheme);
        input.click();
        """,
        scheme,
    )
    wait_rendered(driver)


def set_width(driver, width: int, height: int = 900) -> None:
    """Emulate a viewport ``width`` CSS pixels wide (a phone at 390)."""
    driver.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride",
        {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": width < 600},
    )


@pytest.fixture
def open_page(driver, site_url):
    def _open(path: str = "", *, scheme: str | None = None, width: int | None = None):
        if width:
            set_width(driver, width)
        driver.get(site_url + path.lstrip("/"))
        wait_rendered(driver)
        if scheme:
            set_scheme(driver, scheme)
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
    return functools.partial(wait_rendered, driver)


@pytest.fixture(name="set_scheme")
def set_scheme_fixture(driver):
    return functools.partial(set_scheme, driver)


@pytest.fixture(name="set_width")
def set_width_fixture(driver):
    return functools.partial(set_width, driver)


def screenshot_dir() -> Path:
    path = Path(os.environ.get("UNIPO_SCREENSHOTS") or "/tmp/unipo-shots")
    path.mkdir(parents=True, exist_ok=True)
    return path


def take_screenshot(
    driver, url: str, name: str, *, scheme: str = "default", width: int = 1280, full_page: bool = True
) -> Path:
    """Load ``url`` at ``width`` in ``scheme`` and save a PNG named ``name``; returns its path."""
    set_width(driver, width)
    driver.get(url)
    wait_rendered(driver)
    set_scheme(driver, scheme)
    if full_page:
        height = int(driver.execute_script("return document.documentElement.scrollHeight"))
        set_width(driver, width, min(max(height, 900), 12000))
        wait_rendered(driver)
        time.sleep(0.3)  # let charts with width "container" settle after the resize
    target = screenshot_dir() / (name if name.endswith(".png") else f"{name}.png")
    target.write_bytes(driver.get_screenshot_as_png())
    set_width(driver, width)
    return target


@pytest.fixture
def screenshot(driver, site_url):
    """``screenshot(path, name, scheme="default", width=1280, full_page=True)`` -> Path."""

    def _shoot(path: str, name: str, **kwargs) -> Path:
        return take_screenshot(driver, site_url + path.lstrip("/"), name, **kwargs)

    return _shoot
