"""Page budgets on every run set: DOM nodes and height of each page at two moments, as a reader at the
top of it meets it (at load) and once the reader has read it to its end (scrolled to the bottom, every
lazy view near the way drawn: benchmarks/page_read.py), for the default (tiny) set and every further set
the build shows (the gpu set under ``gpu/``).

Budgets, at both moments (issue 47 item 5: the pages held them at load, not once read): a course page
(``course/``, ``playgrounds/``) at most 4,000 DOM nodes and 10,000 px tall at 1280x900 (DESIGN.md,
"Budgets"); a reference page (``reference/``, ``guides/``, the home page) at most REFERENCE_NODES nodes and
REFERENCE_HEIGHT px (benchmarks/README.md, "Page budgets": a reference is read by searching and jumping,
so it may be longer than a course page, not without end). What a reader opens (a fold, a tab) is not
opened: its content is counted as the server wrote it. And every page, course or reference, at most
500 KB of HTML with its inline data (page_budget.PAGE_BUDGET; DESIGN.md, "Budgets"): the size of its
index.html as built, what a reader downloads before any view draws (issue 46 item 5). The figures are taken as
benchmarks/reader_budget.py takes them (one load, headless Chromium on 127.0.0.1);
tests/browser/test_reader.py test_pages_keep_their_budgets fails over them on both sets.

    .venv/bin/python benchmarks/page_budgets.py                    # build both sets, measure
    .venv/bin/python benchmarks/page_budgets.py --site-dir /tmp/site
    .venv/bin/python benchmarks/page_budgets.py --site-dir /tmp/site --json /tmp/budgets.json
    .venv/bin/python benchmarks/page_budgets.py --site-dir /tmp/site --page course/algorithms/ppo/

A measurement: it exits 0 whatever the figures (the test is what fails).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from page_budget import PAGE_BUDGET, site_to_measure  # noqa: E402  (the one way the benchmarks get a site to measure)
from reader_budget import COURSE_PREFIXES, HEIGHT_BUDGET, NODE_BUDGET, course_pages, measure  # noqa: E402

#: A reference page's budget (benchmarks/README.md, "Page budgets").
REFERENCE_NODES = 6_000
REFERENCE_HEIGHT = 20_000


def set_prefixes(site: Path) -> list[str]:
    """"" for the set at the site's root, then "<id>/" for every further set built under it (a
    directory with its own index.html and search index)."""
    found = [""]
    for child in sorted(site.iterdir()):
        if child.is_dir() and (child / "index.html").is_file() and (child / "search" / "search_index.json").is_file():
            found.append(child.name + "/")
    return found


def pages_of(site: Path, prefix: str) -> list[str]:
    """Every page of the set under ``prefix`` (relative to that set's root), course pages first."""
    root = site / prefix if prefix else site
    nested = {p.rstrip("/") for p in set_prefixes(site) if p}
    pages = [p for p in course_pages(root, True) if prefix or p.split("/", 1)[0] not in nested]
    return sorted(pages, key=lambda p: (not p.startswith(COURSE_PREFIXES), p))


def html_bytes(site: Path, key: str) -> int | None:
    """The size of a page's HTML as built (``key``: "<set prefix><page>"), None where it has none."""
    path = site / key / "index.html"
    return path.stat().st_size if path.is_file() else None


def html_over(site: Path) -> list[str]:
    """over_budget's lines for the HTML of every page of every set: no browser needed."""
    return over_budget({prefix + page: {"set": prefix.rstrip("/") or "default", "page": page,
                                        "html": html_bytes(site, prefix + page)}
                        for prefix in set_prefixes(site) for page in pages_of(site, prefix)})


def budget_of(page: str) -> tuple[str, int, int]:
    """(kind, node budget, height budget) of a page path relative to its set's root."""
    if page.startswith(COURSE_PREFIXES):
        return "course", NODE_BUDGET, HEIGHT_BUDGET
    return "reference", REFERENCE_NODES, REFERENCE_HEIGHT


MOMENTS = (("at load", None), ("once read", "read"))

def over_budget(figures: dict[str, dict]) -> list[str]:
    """One line for each figure over its budget: the page's HTML (a figure's "html": bytes, when measured),
    its DOM nodes and height at load and once read (a figure's "read": {nodes, height, ready}, when
    measured); keys are "<set prefix><page>"."""
    out = []
    for key, f in figures.items():
        kind, nodes, height = budget_of(f["page"])
        if f.get("html") is not None and f["html"] > PAGE_BUDGET:
            out.append(f"{key or '/'}: {f['html']:,} bytes of HTML, over the page budget of {PAGE_BUDGET:,}")
        for moment, field in MOMENTS:
            if field is None and "nodes" not in f:
                continue  # the HTML alone was measured
            g = f.get(field) if field else f
            if not g:
                continue
            if g["nodes"] > nodes:
                out.append(f"{key or '/'}: {g['nodes']:,} DOM nodes {moment}, over the {kind} page budget of {nodes:,}")
            if g["height"] > height:
                out.append(f"{key or '/'}: {g['height']:,} px tall {moment}, over the {kind} page budget of {height:,} px")
            if not g["ready"]:
                out.append(f"{key or '/'}: the views did not finish drawing {moment} (measured as they were)")
    return out


def measure_sets(site: Path, only: list[str] | None = None) -> dict[str, dict] | str:
    """{"<prefix><page>": {set, page, html, nodes, height, ready, read: {nodes, height, ready}}} for every page
    of every set (``only``: these paths, relative to the site)."""
    keys: list[tuple[str, str]] = [(prefix, page) for prefix in set_prefixes(site) for page in pages_of(site, prefix)
                                   if only is None or prefix + page in only]
    figures = measure(site, [prefix + page for prefix, page in keys], 1, read=True)
    if isinstance(figures, str):
        return figures
    return {prefix + page: {"set": prefix.rstrip("/") or "default", "page": page,
                            "html": html_bytes(site, prefix + page), **figures[prefix + page]}
            for prefix, page in keys}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--site-dir", type=Path, help="measure this built site instead of building one")
    parser.add_argument("--json", type=Path, help="also write the figures to this JSON file")
    parser.add_argument("--page", action="append", help="only this page (repeatable), e.g. gpu/course/algorithms/ppo/")
    args = parser.parse_args(argv)
    with site_to_measure(args.site_dir, None, "the site (every run set)") as (site, _):
        started = time.strftime("%Y-%m-%d %H:%M")
        only = [p.strip("/") + "/" if p.strip("/") else "" for p in args.page] if args.page else None
        figures = measure_sets(site, only)
        if isinstance(figures, str):
            print(f"not measured: {figures}")
            return 0
        if not figures:
            print(f"not measured: no such page in {site}")
            return 0
        print(f"\n{started}; budgets: every page {PAGE_BUDGET // 1000:,} KB of HTML; course pages "
              f"{NODE_BUDGET:,} nodes and {HEIGHT_BUDGET:,} px, reference pages {REFERENCE_NODES:,} nodes and "
              f"{REFERENCE_HEIGHT:,} px (1280x900), at load and once read to the end\n")
        width = max(len(p or "/") for p in figures)
        print(f"{'page'.ljust(width)}  {'kind':9}  {'HTML KB':>7}  {'nodes':>6}  {'height px':>9}  "
              f"{'read: nodes':>11}  {'height px':>9}")
        for key, f in figures.items():
            kind, nodes, height = budget_of(f["page"])
            read = f.get("read") or {"nodes": 0, "height": 0}
            worst = max(f["nodes"], read["nodes"]) > nodes or max(f["height"], read["height"]) > height \
                or (f["html"] or 0) > PAGE_BUDGET
            print(f"{(key or '/').ljust(width)}  {kind:9}  {(f['html'] or 0) / 1000:>7,.1f}  {f['nodes']:>6,}  "
                  f"{f['height']:>9,}  {read['nodes']:>11,}  {read['height']:>9,}{'  OVER' if worst else ''}")
        print()
        for prefix in set_prefixes(site):
            name = prefix.rstrip("/") or "default"
            for kind in ("course", "reference"):
                mine = [f for f in figures.values() if f["set"] == name and budget_of(f["page"])[0] == kind]
                if mine:
                    read = [f["read"] for f in mine if f.get("read")]
                    print(f"{name} set, {len(mine)} {kind} pages: heaviest HTML "
                          f"{max(f['html'] or 0 for f in mine) / 1000:,.1f} KB; most nodes "
                          f"{max(f['nodes'] for f in mine):,} at load, "
                          f"{max((r['nodes'] for r in read), default=0):,} once read; tallest {max(f['height'] for f in mine):,} px "
                          f"at load, {max((r['height'] for r in read), default=0):,} px once read")
        over = over_budget(figures)
        print("\nwithin budget" if not over else f"\n{len(over)} over budget (what the test fails on):\n  "
              + "\n  ".join(over))
        if args.json:
            args.json.write_text(json.dumps({"measured": started, "pages": figures}, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
