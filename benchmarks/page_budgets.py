"""Page budgets on every run set: DOM nodes and height of each page, as a reader at the top of it
meets them, for the default (tiny) set and every further set the build shows (the gpu set under
``gpu/``).

Budgets: a course page (``course/``, ``playgrounds/``) at most 4,000 DOM nodes at load and
10,000 px tall at 1280x900 (DESIGN.md, "Budgets"); a reference page (``reference/``, ``guides/``,
the home page) at most REFERENCE_NODES nodes and REFERENCE_HEIGHT px (benchmarks/README.md,
"Page budgets": a reference is read by searching and jumping, so it may be longer than a course
page, not without end). The figures are taken as benchmarks/reader_budget.py takes them (one load,
headless Chromium on 127.0.0.1); tests/browser/test_reader.py test_pages_keep_their_budgets fails
over them on both sets.

    .venv/bin/python benchmarks/page_budgets.py                    # build both sets, measure
    .venv/bin/python benchmarks/page_budgets.py --site-dir /tmp/site
    .venv/bin/python benchmarks/page_budgets.py --site-dir /tmp/site --json /tmp/budgets.json

A measurement: it exits 0 whatever the figures (the test is what fails).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from page_budget import site_to_measure  # noqa: E402  (the one way the benchmarks get a site to measure)
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


def budget_of(page: str) -> tuple[str, int, int]:
    """(kind, node budget, height budget) of a page path relative to its set's root."""
    if page.startswith(COURSE_PREFIXES):
        return "course", NODE_BUDGET, HEIGHT_BUDGET
    return "reference", REFERENCE_NODES, REFERENCE_HEIGHT


def over_budget(figures: dict[str, dict]) -> list[str]:
    """One line for each figure over its budget; keys are "<set prefix><page>"."""
    out = []
    for key, f in figures.items():
        kind, nodes, height = budget_of(f["page"])
        if f["nodes"] > nodes:
            out.append(f"{key or '/'}: {f['nodes']:,} DOM nodes over the {kind} page budget of {nodes:,}")
        if f["height"] > height:
            out.append(f"{key or '/'}: {f['height']:,} px tall, over the {kind} page budget of {height:,} px")
        if not f["ready"]:
            out.append(f"{key or '/'}: the views did not finish drawing (measured as they were)")
    return out


def measure_sets(site: Path) -> dict[str, dict] | str:
    """{"<prefix><page>": {set, page, nodes, height, ready}} for every page of every set."""
    keys: list[tuple[str, str]] = [(prefix, page) for prefix in set_prefixes(site) for page in pages_of(site, prefix)]
    figures = measure(site, [prefix + page for prefix, page in keys], 1)
    if isinstance(figures, str):
        return figures
    return {prefix + page: {"set": prefix.rstrip("/") or "default", "page": page, **figures[prefix + page]}
            for prefix, page in keys}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--site-dir", type=Path, help="measure this built site instead of building one")
    parser.add_argument("--json", type=Path, help="also write the figures to this JSON file")
    args = parser.parse_args(argv)
    with site_to_measure(args.site_dir, None, "the site (every run set)") as (site, _):
        started = time.strftime("%Y-%m-%d %H:%M")
        figures = measure_sets(site)
        if isinstance(figures, str):
            print(f"not measured: {figures}")
            return 0
        print(f"\n{started}; budgets: course pages {NODE_BUDGET:,} nodes and {HEIGHT_BUDGET:,} px, reference pages "
              f"{REFERENCE_NODES:,} nodes and {REFERENCE_HEIGHT:,} px (1280x900, at load)\n")
        width = max(len(p) for p in figures)
        print(f"{'page'.ljust(width)}  {'kind':9}  {'nodes':>6}  {'height px':>9}")
        for key, f in figures.items():
            kind, nodes, height = budget_of(f["page"])
            flag = "  OVER" if f["nodes"] > nodes or f["height"] > height else ""
            print(f"{(key or '/').ljust(width)}  {kind:9}  {f['nodes']:>6,}  {f['height']:>9,}{flag}")
        print()
        for prefix in set_prefixes(site):
            name = prefix.rstrip("/") or "default"
            for kind in ("course", "reference"):
                mine = [f for f in figures.values() if f["set"] == name and budget_of(f["page"])[0] == kind]
                if mine:
                    print(f"{name} set, {len(mine)} {kind} pages: most nodes {max(f['nodes'] for f in mine):,}, "
                          f"tallest {max(f['height'] for f in mine):,} px")
        over = over_budget(figures)
        print("\nwithin budget" if not over else f"\n{len(over)} over budget:\n  " + "\n  ".join(over))
        if args.json:
            args.json.write_text(json.dumps({"measured": started, "pages": figures}, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
