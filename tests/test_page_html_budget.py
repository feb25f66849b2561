"""Every page of the built site, on every run set, within 500 KB of HTML with its inline data (issue 46
item 5; DESIGN.md, "Budgets"): what a reader downloads before any view draws. No browser: the sizes of the
built files, as benchmarks/page_budgets.py reports them (its HTML KB column); tests/browser/test_reader.py
holds the same figure on its walk over every page."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


def _budgets():
    spec = importlib.util.spec_from_file_location("unipo_page_budgets", BENCHMARKS / "page_budgets.py")
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(BENCHMARKS))
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(BENCHMARKS))
    return module


def test_every_page_is_within_500_kb_of_html(built_site):
    budgets = _budgets()
    prefixes = budgets.set_prefixes(built_site)
    assert "gpu/" in prefixes  # both run sets are read
    chapters = [p for p in budgets.pages_of(built_site, "") if p.startswith("course/algorithms/")]
    assert len(chapters) >= 8 and budgets.PAGE_BUDGET == 500_000
    assert budgets.html_over(built_site) == []


def test_a_page_over_500_kb_of_html_is_named(tmp_path):
    budgets = _budgets()
    for page, size in (("course/algorithms/dapo/", 500_001), ("reference/schema/", 500_000), ("", 10)):
        (tmp_path / page).mkdir(parents=True, exist_ok=True)
        (tmp_path / page / "index.html").write_bytes(b"x" * size)
    assert budgets.html_bytes(tmp_path, "reference/schema/") == 500_000
    assert budgets.html_over(tmp_path) == ["course/algorithms/dapo/: 500,001 bytes of HTML, over the page budget of "
                                           "500,000"]
