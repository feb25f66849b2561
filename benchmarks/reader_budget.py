"""The course as a reader meets it: DOM nodes, page height, time to first chart, view scripts.

Budgets (DESIGN.md, "Budgets"): a course page (chapters, comparisons, playgrounds) has at most
4,000 DOM nodes at load and is at most 10,000 px tall at 1280x900; its first chart is visible
within 1 s of navigation start on a loopback server (median of cold loads); a page loads the
view scripts (``assets/views/<name>.js``) of the views it shows and no others.

    .venv/bin/python benchmarks/reader_budget.py                   # build the site, measure
    .venv/bin/python benchmarks/reader_budget.py --site-dir site   # measure a site built before
    .venv/bin/python benchmarks/reader_budget.py --runs work/runs --repeat 5 --json /tmp/reader.json

Per page, in headless Chromium at 1280x900 on 127.0.0.1 (cache disabled, every load cold):

- DOM nodes: elements in the document (``document.getElementsByTagName('*')``) once formulas,
  the charts and the views' first render are done, with the reader at the top of the page (a
  Step Inspector renders its tokens when it comes near the viewport: those further down are
  counted as the server wrote them, with their open group as text);
- height: ``document.documentElement.scrollHeight`` at that moment, in CSS pixels;
- first chart: ``performance.now()`` (milliseconds from navigation start) when the first SVG
  ``path`` (or the canvas of a chart drawn on one) of any chart on the page exists, recorded by a script installed before the page's own
  (DevTools Protocol, ``Page.addScriptToEvaluateOnNewDocument``); the median of ``--repeat`` loads;
- view scripts: the ``assets/views/*.js`` the page loads, and the views it shows (inspector,
  explainer, explorer, playgrounds); a script without its view, or a view without its script,
  is flagged.

The machine's 1-minute load average is printed before and after the timed loads: on a shared
2-core machine timings move by a factor of two with the load. A measurement, not a test: it
exits 0 whatever the figures.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from page_budget import site_to_measure  # noqa: E402  (the one way the benchmarks get a site to measure)
from page_read import read_through  # noqa: E402  (a page read to its end, as the browser tests' walk reads it)

NODE_BUDGET = 4000
HEIGHT_BUDGET = 10_000
FIRST_CHART_BUDGET_MS = 1000.0
COURSE_PREFIXES = ("course/", "playgrounds/")

CHROMIUM = os.environ.get("UNIPO_CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("UNIPO_CHROMEDRIVER", "/usr/bin/chromedriver")

#: Which element shows which view (the names of unipo_build.site.macros.VIEW_SCRIPTS).
VIEW_SELECTORS = {
    "inspector": ".unipo-inspector",
    "explainer": ".unipo-explainer, .unipo-compare-selector",
    "explorer": ".unipo-explorer",
    "playgrounds": "[data-pg-chart], [data-pg-tabs], .pg-grid, [data-pg-control]",
}

FIRST_CHART_PROBE = """
(function () {
  window.__unipoFirstChart = null;
  function check() {
    if (window.__unipoFirstChart === null && document.querySelector('.unipo-vega svg path, .unipo-vega canvas, .unipo-explorer__chart svg path')) {
      window.__unipoFirstChart = performance.now();
      observer.disconnect();
    }
  }
  var observer = new MutationObserver(check);
  observer.observe(document, {childList: true, subtree: true});
})();
"""

#: A page's state (its formulas, charts and inspectors drawn; nodes, height, scripts, views): page_state.js,
#: which the browser tests' walk reads too.
STATE_JS = (Path(__file__).resolve().parent / "page_state.js").read_text(encoding="utf-8")


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, format, *args):
        pass


def course_pages(site: Path, everything: bool) -> list[str]:
    """Page paths relative to the site, in nav order where the sitemap gives it."""
    pages = []
    for html in sorted(site.rglob("index.html")):
        rel = html.relative_to(site).parent.as_posix()
        rel = "" if rel == "." else rel + "/"
        if rel.startswith("assets/"):
            continue
        if everything or rel.startswith(COURSE_PREFIXES):
            pages.append(rel)
    return pages


def load_average() -> float | None:
    try:
        return os.getloadavg()[0]
    except OSError:
        return None


def measure(site: Path, pages: list[str], repeat: int, read: bool = False) -> dict[str, dict] | str:
    """Each page's figures at load (see the module's docstring); ``read``: also once read to its end
    (benchmarks/page_read.py: scrolled to the bottom, every lazy view near the way drawn), as ``read``:
    {nodes, height, ready}."""
    if not (os.access(CHROMIUM, os.X_OK) and os.access(CHROMEDRIVER, os.X_OK)):
        return "no chromium/chromedriver"
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        return "selenium is not installed (pip install -e '.[dev]')"
    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(site)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}/"
    profile = tempfile.mkdtemp(prefix="unipo-bench-")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--disable-extensions", "--no-first-run", "--window-size=1280,900",
                f"--user-data-dir={profile}", "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1"):
        options.add_argument(arg)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    out: dict[str, dict] = {}
    try:
        driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                               {"width": 1280, "height": 900, "deviceScaleFactor": 1, "mobile": False})
        driver.execute_cdp_cmd("Network.enable", {})
        driver.execute_cdp_cmd("Network.setCacheDisabled", {"cacheDisabled": True})
        driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": FIRST_CHART_PROBE})
        for page in pages:
            loads = []
            state = None
            for _ in range(repeat):
                driver.get("about:blank")
                driver.get(base + page)
                deadline = time.monotonic() + 60
                while time.monotonic() < deadline:
                    state = driver.execute_script(STATE_JS, VIEW_SELECTORS)
                    if state["ready"]:
                        break
                    time.sleep(0.05)
                loads.append(state["chart"])
                if not state["has_chart"]:
                    break  # no chart to time: one load gives the counts
            time.sleep(0.3)  # charts sized to their container settle
            state = driver.execute_script(STATE_JS, VIEW_SELECTORS)
            charts = [x for x in loads if x is not None]
            out[page] = {
                "nodes": state["nodes"], "height": state["height"],
                "first_chart_ms": charts if state["has_chart"] else None,
                "scripts": sorted(state["scripts"]), "views": sorted(state["views"]),
                "ready": state["ready"],
            }
            if read:
                after = read_through(driver, STATE_JS, VIEW_SELECTORS)
                out[page]["read"] = {"nodes": after["nodes"], "height": after["height"], "ready": after["ready"]}
    finally:
        driver.quit()
        server.shutdown()
        shutil.rmtree(profile, ignore_errors=True)
    return out


def verdict(ok: bool) -> str:
    return "ok" if ok else "OVER"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--site-dir", type=Path, help="measure this built site instead of building one")
    parser.add_argument("--runs", help="runs directory for the build (default: UNIPO_RUNS or mkdocs.yml)")
    parser.add_argument("--repeat", type=int, default=5, help="cold loads per page with a chart (default 5)")
    parser.add_argument("--all-pages", action="store_true", help="every page, not only the course's")
    parser.add_argument("--page", action="append", help="only this page (repeatable), e.g. course/algorithms/grpo/")
    parser.add_argument("--json", type=Path, help="also write the figures to this JSON file")
    args = parser.parse_args(argv)

    with site_to_measure(args.site_dir, args.runs) as (site, _):
        pages = [p.strip("/") + "/" for p in args.page] if args.page else course_pages(site, args.all_pages)
        if not pages:
            print(f"not measured: no {'' if args.all_pages else 'course '}pages in {site} (is it a built site?)")
            return 0
        load_before = load_average()
        started = time.strftime("%Y-%m-%d %H:%M")
        figures = measure(site, pages, args.repeat)
        load_after = load_average()
        if isinstance(figures, str):
            print(f"not measured: {figures}")
            return 0
        print(f"\n{started}, {os.cpu_count()} CPUs, 1-minute load average {load_before:.2f} before, "
              f"{load_after:.2f} after\n")
        width = max(len(p) for p in figures)
        print(f"{'page'.ljust(width)}  {'nodes':>6}  {'height px':>9}  {'1st chart ms':>12}  scripts")
        over = []
        for page, f in figures.items():
            charts = f["first_chart_ms"]
            median = statistics.median(charts) if charts else None
            chart = "-" if charts is None else ("none" if median is None else f"{median:,.0f}")
            flags = []
            course = page.startswith(COURSE_PREFIXES)
            if course and f["nodes"] > NODE_BUDGET:
                flags.append("nodes OVER")
            if course and f["height"] > HEIGHT_BUDGET:
                flags.append("height OVER")
            if course and median is not None and median > FIRST_CHART_BUDGET_MS:
                flags.append("chart OVER")
            if not f["ready"]:
                flags.append("views not ready")
            extra = sorted(set(f["scripts"]) - set(f["views"]))
            missing = sorted(set(f["views"]) - set(f["scripts"]))
            if extra:
                flags.append("unused script " + ",".join(extra))
            if missing:
                flags.append("view without script " + ",".join(missing))
            over.extend(f"{page}: {x}" for x in flags)
            print(f"{page.ljust(width)}  {f['nodes']:>6,}  {f['height']:>9,}  {chart:>12}  "
                  f"{','.join(f['scripts']) or '-'}{'  ' + '; '.join(flags) if flags else ''}")
        course = {p: f for p, f in figures.items() if p.startswith(COURSE_PREFIXES)}
        if course:
            print(f"\ncourse pages: {len(course)}; most nodes {max(f['nodes'] for f in course.values()):,} "
                  f"(budget {NODE_BUDGET:,}); tallest {max(f['height'] for f in course.values()):,} px "
                  f"(budget {HEIGHT_BUDGET:,})")
        print("within budget" if not over else f"{len(over)} over budget:\n  " + "\n  ".join(over))
        if args.json:
            args.json.write_text(json.dumps({
                "measured": started, "load_average": [load_before, load_after], "cpus": os.cpu_count(),
                "pages": figures}, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
