"""The one browser harness of the browser tests: servers, Chromium, waits, and what a page reports.

tests/browser/conftest.py turns it into fixtures; test modules import it by this name (a module of
its own, as tests/site_build.py is, because ``conftest`` is ambiguous between tests/ and
tests/browser/). No wait here is a fixed pause: each is a condition polled with WebDriverWait, or, where
the page is only observable frame by frame, a condition checked in the page on each animation frame.

- Serving: ``SiteServer`` binds a port on 127.0.0.1 at once (so a site can be built for its URL
  first) and serves a directory under a path prefix; every other path is a 404. ``serving`` is the
  same as a context manager. Every origin served is remembered, so a fresh tab can clear its storage.
- Test sites: ``build_test_site`` builds a few Markdown pages with the repository's theme, hooks,
  macros and style sheets (read from mkdocs.yml, so they follow the repository) into a directory.
- Chromium: ``Chromium`` is one headless Chromium (Debian's chromium and chromedriver, every host
  but 127.0.0.1 unresolvable); ``Chromium.fresh()`` hands out a new tab in which the previous
  test's tab, storage, cache, console log, device emulation and init scripts are gone.
- Waits: ``wait_until``, ``wait_js``, ``wait_rendered`` (formulas, charts and the views a page has
  started are done), ``wait_settled`` (nothing moves for a few frames), ``watch_sitemap`` and
  ``wait_instant_navigation`` (Material has read its sitemap: a click on a link is instant).
- Reports: ``console_errors`` (SEVERE entries), ``foreign_requests`` (any URL off the site).
- One walk: ``walk_every_page`` opens each page of a built site once and keeps what every test of
  all pages reads there (figures at load, console, requests), once per process.
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

from site_build import without_search, write_mkdocs_config

REPO = Path(__file__).resolve().parents[2]
CHROMIUM = os.environ.get("UNIPO_CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("UNIPO_CHROMEDRIVER", "/usr/bin/chromedriver")
DEFAULT_SUBPATH = "/unipo/"
PAGE_LOAD_TIMEOUT = 60
SCRIPT_TIMEOUT = 30

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


def browser_missing() -> str | None:
    """Why the browser tests cannot run here, or None."""
    missing = [p for p in (CHROMIUM, CHROMEDRIVER) if not os.access(p, os.X_OK)]
    try:
        import selenium  # noqa: F401
    except ImportError:
        missing.append("the selenium package (pip install -e '.[dev]')")
    if missing:
        return "browser tests need " + " and ".join(missing) + " (apt-get install chromium chromium-driver)"
    return None


def require_browser() -> None:
    """Skip the calling fixture or test when Chromium or selenium is missing; fail it instead under
    UNIPO_REQUIRE_BROWSER=1 (.ci/test.sh), where a missing browser is a broken machine, not a choice."""
    if reason := browser_missing():
        if os.environ.get("UNIPO_REQUIRE_BROWSER") == "1":
            pytest.fail(reason)
        pytest.skip(reason)


# ---------------------------------------------------------------------------- serving

#: Every origin a SiteServer has served in this process (a fresh tab clears their storage).
ORIGINS: set[str] = set()


class _SiteHandler(SimpleHTTPRequestHandler):
    """Serves the site directory under ``prefix``; everything else is a 404."""

    prefix = DEFAULT_SUBPATH
    # Keep-alive, as any real host: http.server's default HTTP/1.0 opens a connection per file, a few
    # dozen per page.
    protocol_version = "HTTP/1.1"

    def translate_path(self, path):
        url_path = unquote(urlsplit(path).path)
        if not url_path.startswith(self.prefix):
            return os.path.join(self.directory, "__outside_the_site__")
        return super().translate_path("/" + url_path[len(self.prefix):])

    def log_message(self, format, *args):  # keep pytest output clean
        pass


class SiteServer:
    """A directory served on 127.0.0.1 under ``prefix`` by a threaded http.server.

    The port is bound when the object is made (``url`` is known before the site is built, so a
    build can be made for it); ``with server:`` serves until the block ends. ``url``, when given,
    asks for that URL's port and path (the URL a site was built for); if the port is taken, a free
    one with ``prefix`` is used instead (``url`` then differs from the one asked for).
    """

    def __init__(self, site_dir: Path | str, *, url: str | None = None, prefix: str = DEFAULT_SUBPATH):
        candidates = []
        want = urlsplit(url or "")
        if want.hostname in ("127.0.0.1", "localhost") and want.port:
            candidates.append((want.port, want.path if want.path.endswith("/") else want.path + "/"))
        candidates.append((0, prefix))
        for port, path in candidates:
            handler = type("Handler", (_SiteHandler,), {"prefix": path})
            try:
                self._server = ThreadingHTTPServer(
                    ("127.0.0.1", port), functools.partial(handler, directory=str(site_dir)))
            except OSError:
                continue
            self._server.daemon_threads = True
            origin = f"http://127.0.0.1:{self._server.server_address[1]}"
            self.url = origin + path
            ORIGINS.add(origin)
            break
        else:
            raise RuntimeError(f"could not start a server for {site_dir}")
        self._thread: threading.Thread | None = None

    def __enter__(self) -> str:
        self._thread = threading.Thread(target=self._server.serve_forever, name="unipo-site", daemon=True)
        self._thread.start()
        return self.url

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        """Stop serving (if it started) and free the port; closing twice is harmless."""
        if self._thread is not None:
            self._server.shutdown()
            self._thread = None
        self._server.server_close()


@contextlib.contextmanager
def serving(site_dir: Path | str, built_for: str | None = None, *, prefix: str = DEFAULT_SUBPATH):
    """Serve ``site_dir`` until the block ends; yields its base URL (``built_for``'s when that port
    is free, else a free port under ``prefix``)."""
    with SiteServer(site_dir, url=built_for, prefix=prefix) as url:
        yield url


# ---------------------------------------------------------------------------- test sites


def build_test_site(root: Path, pages: dict[str, str], runs: Path) -> Path:
    """Build ``pages`` (path -> Markdown) with the repository's theme, hooks, macros and style sheets
    and the runs in ``runs``, into ``root/site`` (a MkDocs config in ``root``, nothing written to the
    repository). No search, no palette toggle: a page of views and nothing else."""
    docs = root / "docs"
    for name, text in pages.items():
        (docs / name).parent.mkdir(parents=True, exist_ok=True)
        (docs / name).write_text(text, encoding="utf-8")
    # The vendor check reads package.json next to the config; the libraries stay in the repo.
    shutil.copy(REPO / "package.json", root / "package.json")
    # The project's specs are found from the config's directory.
    (root / "data").mkdir(exist_ok=True)
    if not (root / "data" / "algorithms").exists():
        (root / "data" / "algorithms").symlink_to(REPO / "data" / "algorithms")
    write_mkdocs_config(root, site_name="UNIPO views test", docs_dir=str(docs), site_url=None, repo_url=None, nav=None,
                        theme=lambda theme: {**{k: v for k, v in theme.items() if k != "palette"},
                                             "features": ["navigation.instant"]},
                        plugins=without_search, extra={"unipo_runs": str(runs)})
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1", UNIPO_RUNS=str(runs), UNIPO_NODE_MODULES=str(REPO / "node_modules"))
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(root / "mkdocs.yml"),
                           "-d", str(root / "site")], cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return root / "site"


# ---------------------------------------------------------------------------- Chromium


def make_driver(user_data_dir: str):
    """A headless Chromium with its profile in ``user_data_dir``, logging the browser console."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in CHROME_ARGS:
        options.add_argument(arg)
    options.add_argument(f"--user-data-dir={user_data_dir}")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(PAGE_LOAD_TIMEOUT)
    driver.set_script_timeout(SCRIPT_TIMEOUT)
    return driver


class Chromium:
    """One headless Chromium for the session; ``fresh()`` gives each test a tab of its own.

    A new tab has no history, no session storage, no device emulation (width, touch, media) and no
    init scripts; the storage of every origin served (local storage, cookies, IndexedDB) and the
    HTTP cache are cleared and the console log of earlier tabs is dropped, so a test starts where a
    new browser would. If Chromium died (a crashed renderer, a lost chromedriver), a new one starts.
    """

    def __init__(self):
        self.driver = None
        self._profile: str | None = None

    def _start(self):
        self._profile = tempfile.mkdtemp(prefix="unipo-chrome-")
        self.driver = make_driver(self._profile)

    def fresh(self):
        from selenium.common.exceptions import WebDriverException

        if self.driver is None:
            self._start()
        try:
            self._new_tab()
        except WebDriverException:
            self.quit()
            self._start()
            self._new_tab()
        return self.driver

    def _new_tab(self) -> None:
        from selenium.common.exceptions import NoAlertPresentException

        drv = self.driver
        old = drv.window_handles
        for handle in old:
            drv.switch_to.window(handle)
            with contextlib.suppress(NoAlertPresentException):
                drv.switch_to.alert.dismiss()
        drv.switch_to.new_window("tab")
        new = drv.current_window_handle
        for handle in old:
            drv.switch_to.window(handle)
            drv.close()
        drv.switch_to.window(new)
        for origin in sorted(ORIGINS):
            drv.execute_cdp_cmd("Storage.clearDataForOrigin", {"origin": origin, "storageTypes": "all"})
        drv.execute_cdp_cmd("Network.clearBrowserCache", {})
        drv.set_page_load_timeout(PAGE_LOAD_TIMEOUT)
        drv.set_script_timeout(SCRIPT_TIMEOUT)
        drv.get_log("browser")  # what earlier tabs logged is theirs

    def quit(self) -> None:
        if self.driver is not None:
            with contextlib.suppress(Exception):
                self.driver.quit()
            self.driver = None
        if self._profile:
            shutil.rmtree(self._profile, ignore_errors=True)
            self._profile = None


def add_init_script(driver, source: str) -> None:
    """Run ``source`` in every document the tab loads from now on, before the page's own scripts
    (gone with the tab)."""
    driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": source})


# ---------------------------------------------------------------------------- waits


def wait_until(driver, condition, *, timeout: float = 20.0, what: str = "", poll: float = 0.05):
    """Poll ``condition(driver)`` until it returns something truthy; that value, or an AssertionError
    naming ``what`` and the last value seen."""
    from selenium.common.exceptions import TimeoutException
    from selenium.webdriver.support.ui import WebDriverWait

    seen = []

    def check(drv):
        value = condition(drv)
        seen[:] = [value]
        return value

    try:
        return WebDriverWait(driver, timeout, poll_frequency=poll).until(check)
    except TimeoutException:
        last = repr(seen[0])[:300] if seen else "none"
        raise AssertionError(f"timed out after {timeout}s waiting for {what or condition} (last value {last})") from None


def wait_js(driver, js: str, *args, timeout: float = 20.0, what: str = "", poll: float = 0.05):
    """Run ``js`` (with ``args``) until it returns something truthy; that value."""
    return wait_until(driver, lambda drv: drv.execute_script(js, *args), timeout=timeout, what=what or js, poll=poll)


_RENDER_STATE_JS = """
const scheme = document.body.getAttribute('data-md-color-scheme') || 'default';
const math = [...document.querySelectorAll('.arithmatex')];
const charts = [...document.querySelectorAll('.unipo-vega')];
return {
  ready: document.readyState === 'complete' && !!window.UNIPO,
  math: math.filter(e => !e.hasAttribute('data-unipo-rendered')).length,
  charts: charts.filter(e => {
    const s = e.getAttribute('data-unipo-rendered');
    return s !== scheme && s !== 'error' && s !== 'deferred'; // deferred: in a closed fold (renderAll draws it)
  }).length,
  // views that started: a Step Inspector near the viewport loading its step, a playground drawing
  views: document.querySelectorAll('.unipo-inspector[data-active]:not([data-ready]), .unipo-inspector[data-loading],'
                                   + ' template.unipo-data[data-pg-ready="pending"]').length,
};
"""


def wait_rendered(driver, timeout: float = 30.0, *, everything: bool = True) -> None:
    """Wait until every formula is typeset, every chart drawn for the current scheme, and every view
    the page started (an inspector loading its step, a playground) is done.

    The site typesets a formula when it comes near the viewport (or its <details> opens);
    ``everything`` typesets the deferred ones first (``UNIPO.renderAll``), so a test can read
    every formula of the page. ``everything=False``: the page as a reader at its top has it.
    """
    def state(drv):
        if everything:
            drv.execute_script("if (window.UNIPO && window.UNIPO.renderAll) window.UNIPO.renderAll();")
        return drv.execute_script(_RENDER_STATE_JS)

    last = {}

    def done(drv):
        last.update(state(drv))
        return last["ready"] and last["math"] == 0 and last["charts"] == 0 and last["views"] == 0

    try:
        wait_until(driver, done, timeout=timeout, poll=0.1)
    except AssertionError:
        raise AssertionError(f"page not rendered after {timeout}s: {last}") from None


def explain_first_token(driver, page_url: str, run: str) -> str:
    """Open ``page_url``, wait for its Step Inspector, click the first token of its opening step (group 0,
    response 0, token 0) and wait for the run's Algorithm Explainer to fill; the JS expression of that
    explainer card, for the caller's reads."""
    from selenium.webdriver.common.by import By

    driver.get(page_url)
    wait_rendered(driver)
    driver.execute_script("document.querySelector('.unipo-inspector').scrollIntoView()")
    wait_js(driver, "return document.querySelector('.unipo-inspector').getAttribute('data-ready') === '1'",
            what="the Step Inspector")
    token = driver.find_elements(By.CSS_SELECTOR, ".unipo-inspector .unipo-tok")[0]
    assert (token.get_attribute("data-g"), token.get_attribute("data-r"), token.get_attribute("data-t")) == ("0", "0", "0")
    driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", token)
    token.click()
    card = f"document.querySelector('.unipo-explainer[data-run=\"{run}\"]')"
    wait_js(driver, f"return {card}.getAttribute('data-live-ready')", what="the Algorithm Explainer")
    return card


#: What moves on a page: the scroll position, the document's size, the charts' sizes and the
#: inspectors loading a step; the caller's probe adds its own value.
_SETTLED_JS = """
const done = arguments[arguments.length - 1];
const args = Array.prototype.slice.call(arguments, 0, -1);
const frames = args.shift(), limit = args.shift();
const probe = function () { PROBE };
function signature() {
  const root = document.documentElement;
  const value = probe.apply(null, args);
  return JSON.stringify([scrollX, scrollY, root.scrollWidth, root.scrollHeight,
    [...document.querySelectorAll('.unipo-vega svg, .unipo-explorer svg')].map(s => {
      const r = s.getBoundingClientRect(); return [Math.round(r.width), Math.round(r.height)]; }),
    document.querySelectorAll('.unipo-inspector[data-loading]').length,
    value === undefined ? null : value]);
}
const start = performance.now();
let last = signature(), same = 0;
function frame() {
  const now = signature();
  same = now === last ? same + 1 : 0;
  last = now;
  if (same >= frames) done({value: JSON.parse(now)[6]});
  else if (performance.now() - start > limit) done({timeout: now});
  else requestAnimationFrame(frame);
}
requestAnimationFrame(frame);
"""


def wait_settled(driver, probe: str = "", *args, frames: int = 6, timeout: float = 20.0, what: str = ""):
    """Wait until the page stops moving: the scroll position, the document's and the charts' sizes,
    the inspectors' loading and ``probe`` (a function body returning JSON-able data, with ``args``)
    read the same on ``frames`` animation frames in a row; returns the probe's value.

    A smooth scroll, a chart resizing to its container and a redraw all change one of these on every
    frame they last, so a run of equal frames is the end of them, however slow the machine."""
    script = _SETTLED_JS.replace("PROBE", probe or "return null;")
    before = driver.timeouts.script
    if timeout + 5 > before:
        driver.set_script_timeout(timeout + 5)
    try:
        result = driver.execute_async_script(script, frames, timeout * 1000, *args)
    finally:
        if timeout + 5 > before:
            driver.set_script_timeout(before)
    if "timeout" in result:
        raise AssertionError(f"the page kept moving for {timeout}s{': ' + what if what else ''} "
                             f"(last state {result['timeout'][:300]})")
    return result["value"]


#: Passive: marks the moment Material's sitemap has been parsed (its instant navigation intercepts
#: a click on a link only from then on; before, the browser loads the page anew). The mark is set on
#: the next task, after Material's synchronous handling of the parsed document.
_SITEMAP_WATCH_JS = """
(function () {
  const parse = DOMParser.prototype.parseFromString;
  DOMParser.prototype.parseFromString = function (text, type) {
    const doc = parse.call(this, text, type);
    if (/xml/.test(type) && doc.querySelector('urlset')) setTimeout(function () { window.__unipoSitemapRead = true; });
    return doc;
  };
})();
"""


def watch_sitemap(driver) -> None:
    """Before loading a page: mark when Material has read its sitemap (see wait_instant_navigation)."""
    add_init_script(driver, _SITEMAP_WATCH_JS)


def wait_instant_navigation(driver, timeout: float = 20.0) -> None:
    """Wait until Material's instant navigation intercepts links on the current page (it has read
    the sitemap). The tab must have called ``watch_sitemap`` before loading the page."""
    wait_js(driver, "return window.__unipoSitemapRead === true", timeout=timeout,
            what="Material's instant navigation (the sitemap read)")


def next_frame(driver, frames: int = 1) -> None:
    """Wait until the page has drawn ``frames`` more animation frames."""
    driver.execute_async_script(
        "const done = arguments[1]; let n = arguments[0];"
        "(function f() { if (n-- <= 0) done(); else requestAnimationFrame(f); })();", frames)


# ---------------------------------------------------------------------------- what a page reports


def console_errors(driver) -> list[dict]:
    """SEVERE console entries since the last call (reading the log empties it; favicon 404s ignored)."""
    return [
        entry
        for entry in driver.get_log("browser")
        if entry.get("level") == "SEVERE" and "favicon" not in entry.get("message", "")
    ]


_REQUESTS_JS = """
const urls = performance.getEntriesByType('resource').map(e => e.name);
urls.push(document.URL);
for (const el of document.querySelectorAll('script[src]')) urls.push(el.src);
for (const el of document.querySelectorAll('link[href]')) {
  if (/stylesheet|preload|icon|manifest|prefetch|preconnect/.test(el.rel)) urls.push(el.href);
}
for (const el of document.querySelectorAll('img[src], iframe[src], source[src], video[src], audio[src]')) urls.push(el.src);
return urls;
"""


def foreign_requests(driver, site_url: str) -> list[str]:
    """Every URL the page fetched or refers to for loading (resources, scripts, style sheets, images,
    frames) that is not on the site's origin or a data: URL."""
    origin = re.match(r"https?://[^/]+", site_url).group(0)
    urls = driver.execute_script(_REQUESTS_JS)
    return sorted({u for u in urls if not (u.startswith(origin + "/") or u.startswith("data:"))})


# ---------------------------------------------------------------------------- scheme, width, screenshots


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
        # charts with width "container" redraw after the resize
        wait_settled(driver, frames=10, what="the charts after the resize")
    target = screenshot_dir() / (name if name.endswith(".png") else f"{name}.png")
    target.write_bytes(driver.get_screenshot_as_png())
    set_width(driver, width)
    return target


# ---------------------------------------------------------------------------- one walk over every page


#: The views a page can hold, by the elements that show them (the budgets test: view scripts only where
#: their views are).
VIEW_SELECTORS = {
    "inspector": ".unipo-inspector",
    "explainer": ".unipo-explainer, .unipo-compare-selector, .unipo-compare-view",
    "explorer": ".unipo-explorer",
    "playgrounds": "[data-pg-chart], [data-pg-tabs], .pg-grid, [data-pg-control]",
}

#: A page at load (before anything typesets the deferred formulas): whether its formulas near the top,
#: charts and active inspectors are drawn, its DOM nodes, height, view scripts and views (argument:
#: VIEW_SELECTORS); the reader budgets' own probe (benchmarks/page_state.js), so both measure alike.
AT_LOAD_JS = (Path(__file__).resolve().parents[2] / "benchmarks" / "page_state.js").read_text(encoding="utf-8")


def _page_read():
    """benchmarks/page_read.py: a page read to its end, as the budgets measure it."""
    import importlib.util

    path = Path(__file__).resolve().parents[2] / "benchmarks" / "page_read.py"
    spec = importlib.util.spec_from_file_location("unipo_page_read", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


PAGE_READ = _page_read()


class PageVisit:
    """What one visit of a page found: ``at_load`` (AT_LOAD_JS once ready and settled, None if it never
    was), ``read`` (AT_LOAD_JS once the page was read to its end: benchmarks/page_read.py; None if it was
    not), ``waits`` ({"at load", "read" or "rendered": why that wait timed out}), ``console`` (SEVERE
    console messages once rendered) and ``foreign`` (foreign_requests)."""

    def __init__(self, at_load: dict | None, waits: dict[str, str], console: list[str], foreign: list[str],
                 read: dict | None = None):
        self.at_load, self.waits, self.console, self.foreign, self.read = at_load, waits, console, foreign, read


def site_pages(site_dir: Path | str) -> list[str]:
    """Every page of a built site, every run set's, as paths under its root ("" for the root, else "<dir>/")."""
    site_dir = Path(site_dir)
    pages = (p.relative_to(site_dir).parent.as_posix() for p in site_dir.rglob("index.html")
             if "assets" not in p.relative_to(site_dir).parts)
    return sorted("" if p == "." else p + "/" for p in pages)


_WALKS: dict[tuple[str, str], dict[str, PageVisit]] = {}


def walk_every_page(driver, site_url: str, site_dir: Path | str) -> dict[str, PageVisit]:
    """Each page of the site served at ``site_url`` opened once in ``driver`` at 1280x900: first measured at
    load (AT_LOAD_JS, ready and settled), then once read to its end (scrolled to the bottom, every lazy view
    on the way drawn: benchmarks/page_read.py), then rendered in full (wait_rendered), then its console and
    requests read. {page path (site_pages): PageVisit}.

    Made once per process for a site, and handed to every test that reads it (the console and requests of
    every page in test_skeleton, the budgets of each run set in test_reader), so the walk, which is most of
    their time, is not made once per test. A walk that fails midway (the browser died) is not kept."""
    key = (site_url, str(Path(site_dir).resolve()))
    if key in _WALKS:
        return _WALKS[key]
    set_width(driver, 1280, 900)
    visits = {}
    for page in site_pages(site_dir):
        driver.get(site_url + page)
        waits, state = {}, None
        try:
            wait_js(driver, "const s = (function () {" + AT_LOAD_JS + "}).apply(null, arguments);"
                            "return s.ready ? s : null", VIEW_SELECTORS, what=page or "/")
            state = wait_settled(driver, AT_LOAD_JS, VIEW_SELECTORS, what=page or "/")
        except AssertionError as err:
            waits["at load"] = str(err)
        read = PAGE_READ.read_through(driver, AT_LOAD_JS, VIEW_SELECTORS, timeout=60)
        if not read["ready"]:
            waits["read"] = f"{page or '/'}: the views did not finish drawing while the page was read"
        try:
            wait_rendered(driver)
        except AssertionError as err:
            waits["rendered"] = str(err)
        visits[page] = PageVisit(state, waits, [e["message"] for e in console_errors(driver)],
                                 foreign_requests(driver, site_url), read=read)
    _WALKS[key] = visits
    return visits
