"""Page weight and time to first chart: the site's data-delivery budgets, measured.

Budgets (DESIGN.md): a page's own HTML with its inline data under 500 KB; one step's token
file under 300 KB (fetched only when a step is opened); the first chart of the Training
Explorer drawn within 1 s of load in headless Chromium on 127.0.0.1; the built site under
80 MB. This script builds the site (or takes a built one), measures each figure and prints a
table. It is a measurement, not a test: it exits 0 whatever the figures.

    .venv/bin/python benchmarks/page_budget.py                  # build, measure, print
    .venv/bin/python benchmarks/page_budget.py --site-dir site  # measure a built site
    .venv/bin/python benchmarks/page_budget.py --runs /path/to/runs --json figures.json

Time to first chart: a script installed before the page's own scripts (Chrome DevTools
Protocol, Page.addScriptToEvaluateOnNewDocument) watches the DOM and records
``performance.now()`` (milliseconds since navigation start) when the first SVG ``path`` of
an explorer chart exists. Each load is cold: the browser cache is disabled.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Iterator

REPO = Path(__file__).resolve().parents[1]
PAGE_BUDGET = 500_000
STEP_BUDGET = 300_000
SITE_BUDGET = 80_000_000
FIRST_CHART_BUDGET_MS = 1000.0
EXPLORER_PAGE = "reference/explorer/"

CHROMIUM = os.environ.get("UNIPO_CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("UNIPO_CHROMEDRIVER", "/usr/bin/chromedriver")

# Runs before any script of the page: records when the first chart path appears.
FIRST_CHART_PROBE = """
(function () {
  window.__unipoFirstChart = null;
  function check() {
    if (window.__unipoFirstChart === null && document.querySelector('.unipo-explorer__chart svg path')) {
      window.__unipoFirstChart = performance.now();
      observer.disconnect();
    }
  }
  var observer = new MutationObserver(check);
  observer.observe(document, {childList: true, subtree: true});
})();
"""


def build(site_dir: Path, runs: str | None) -> tuple[float, str]:
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    if runs:
        env["UNIPO_RUNS"] = runs
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--site-dir", str(site_dir)],
                          cwd=REPO, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        sys.exit(f"mkdocs build failed:\n{(proc.stdout + proc.stderr)[-4000:]}")
    return seconds, proc.stdout + proc.stderr


@contextlib.contextmanager
def site_to_measure(site_dir: Path | None, runs: str | None, what: str = "the site") -> Iterator[tuple[Path, float | None]]:
    """(the site, its build time): ``site_dir`` as it is (build time None), else ``what`` built into a
    temporary directory that is removed afterwards. The one way the benchmarks get a site to measure."""
    if site_dir:
        yield site_dir.resolve(), None
        return
    temp = tempfile.mkdtemp(prefix="unipo-bench-")
    try:
        print(f"building {what} ...", flush=True)
        seconds, _ = build(Path(temp) / "site", runs)
        print(f"built in {seconds:.1f} s", flush=True)
        yield Path(temp) / "site", seconds
    finally:
        shutil.rmtree(temp, ignore_errors=True)


def page_sizes(site: Path) -> list[tuple[str, int]]:
    pages = []
    for html in site.rglob("index.html"):
        rel = html.relative_to(site)
        if rel.parts[0] == "assets":
            continue
        pages.append((rel.parent.as_posix() + "/" if rel.parent.parts else "/", html.stat().st_size))
    return sorted(pages, key=lambda p: -p[1])


def step_files(site: Path) -> list[Path]:
    return list((site / "assets" / "runs").glob("*/steps/step_*.json"))


def site_size(site: Path) -> int:
    return sum(p.stat().st_size for p in site.rglob("*") if p.is_file())


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, format, *args):
        pass


def first_chart_ms(site: Path, page: str, repeat: int) -> list[float] | str:
    """Milliseconds from navigation start to the first explorer chart path, per cold load."""
    if not (os.access(CHROMIUM, os.X_OK) and os.access(CHROMEDRIVER, os.X_OK)):
        return "no chromium/chromedriver"
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        return "selenium is not installed (pip install -e '.[dev]')"
    if not (site / page / "index.html").is_file():
        return f"no page {page}"
    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(site)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/{page}"
    profile = tempfile.mkdtemp(prefix="unipo-bench-")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--disable-extensions", "--no-first-run", "--window-size=1280,900",
                f"--user-data-dir={profile}", "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1"):
        options.add_argument(arg)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    times: list[float] = []
    try:
        driver.execute_cdp_cmd("Network.enable", {})
        driver.execute_cdp_cmd("Network.setCacheDisabled", {"cacheDisabled": True})
        driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": FIRST_CHART_PROBE})
        for _ in range(repeat):
            driver.get("about:blank")
            driver.get(url)
            deadline = time.monotonic() + 30
            value = None
            while time.monotonic() < deadline:
                value, has_explorer, loaded = driver.execute_script(
                    "return [window.__unipoFirstChart, !!document.querySelector('.unipo-explorer'),"
                    " document.readyState === 'complete']")
                if value is not None:
                    break
                if loaded and not has_explorer:
                    return f"no Training Explorer on {page} (no run drawn?)"
                time.sleep(0.02)
            if value is None:
                return "no explorer chart appeared within 30 s"
            times.append(float(value))
    finally:
        driver.quit()
        server.shutdown()
        shutil.rmtree(profile, ignore_errors=True)
    return times


def kb(n: int) -> str:
    return f"{n / 1000:,.1f} KB"


def verdict(ok: bool) -> str:
    return "ok" if ok else "OVER"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--site-dir", type=Path, help="measure this built site instead of building one")
    parser.add_argument("--runs", help="runs directory for the build (default: UNIPO_RUNS or mkdocs.yml)")
    parser.add_argument("--page", default=EXPLORER_PAGE, help=f"page with a Training Explorer (default {EXPLORER_PAGE})")
    parser.add_argument("--repeat", type=int, default=5, help="cold loads to time (default 5)")
    parser.add_argument("--top", type=int, default=12, help="pages listed, heaviest first (default 12)")
    parser.add_argument("--json", type=Path, help="also write the figures to this JSON file")
    args = parser.parse_args(argv)

    with site_to_measure(args.site_dir, args.runs) as (site, build_s):
        pages = page_sizes(site)
        steps = step_files(site)
        largest_step = max(steps, key=lambda p: p.stat().st_size) if steps else None
        total = site_size(site)
        print("measuring time to first chart ...", flush=True)
        chart = first_chart_ms(site, args.page.strip("/") + "/", args.repeat)

        rows = []
        if build_s is not None:
            rows.append(("mkdocs build", f"{build_s:.1f} s", "well under 60 s", verdict(build_s < 60)))
        heaviest = pages[0] if pages else ("-", 0)
        rows.append((f"heaviest page HTML ({heaviest[0]})", kb(heaviest[1]), "< 500 KB", verdict(heaviest[1] < PAGE_BUDGET)))
        explorer_page = next((size for path, size in pages if path == args.page.strip("/") + "/"), None)
        if explorer_page is not None:
            rows.append((f"explorer page HTML ({args.page})", kb(explorer_page), "< 500 KB", verdict(explorer_page < PAGE_BUDGET)))
        if largest_step is not None:
            size = largest_step.stat().st_size
            rows.append((f"largest step file ({largest_step.relative_to(site).as_posix()})", kb(size), "< 300 KB",
                         verdict(size < STEP_BUDGET)))
            rows.append(("step files", f"{len(steps):,}", "", ""))
        else:
            rows.append(("largest step file", "no step files", "< 300 KB", ""))
        if isinstance(chart, list):
            median, worst = statistics.median(chart), max(chart)
            rows.append((f"first chart, median of {len(chart)} cold loads", f"{median:,.0f} ms", "< 1000 ms",
                         verdict(median < FIRST_CHART_BUDGET_MS)))
            rows.append(("first chart, slowest load", f"{worst:,.0f} ms", "< 1000 ms", verdict(worst < FIRST_CHART_BUDGET_MS)))
        else:
            rows.append(("first chart", chart, "< 1000 ms", ""))
        rows.append(("built site", f"{total / 1e6:,.1f} MB", "< 80 MB", verdict(total < SITE_BUDGET)))

        width = max(len(r[0]) for r in rows)
        value_width = max(14, *(len(r[1]) for r in rows))
        print()
        print(f"{'figure'.ljust(width)}  {'measured'.rjust(value_width)}  {'budget':>16}")
        for name, value, budget, ok in rows:
            print(f"{name.ljust(width)}  {value.rjust(value_width)}  {budget:>16}  {ok}")
        print()
        print(f"pages, heaviest first (of {len(pages)}):")
        for path, size in pages[: args.top]:
            print(f"  {kb(size):>11}  {verdict(size < PAGE_BUDGET):4}  {path}")

        if args.json:
            args.json.write_text(json.dumps({
                "build_s": build_s,
                "pages": dict(pages),
                "largest_step": {"path": largest_step.relative_to(site).as_posix(), "bytes": largest_step.stat().st_size}
                if largest_step else None,
                "step_files": len(steps),
                "first_chart_ms": chart,
                "site_bytes": total,
            }, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
