"""benchmarks/site_compare.py: two builds of the site compared file by file, a moved source file
told apart from a changed page (issue 31: "the built site is identical before and after")."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("site_compare", ROOT / "benchmarks" / "site_compare.py")
SC = importlib.util.module_from_spec(_spec)
sys.modules["site_compare"] = SC  # its dataclasses look their module up
_spec.loader.exec_module(SC)

RENAMES = [("unipo_build/components.py", "unipo_build/core/components.py"),
           ("unipo_build/views/explainer.py", "unipo_build/site/views/explainer/explainer.py")]


def _site(root: Path, files: dict[str, str | bytes]) -> Path:
    for name, content in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8"))
    return root


def test_renamed_paths_and_line_numbers_are_moves_and_a_changed_number_is_a_difference(tmp_path):
    before = _site(tmp_path / "a", {
        "index.html": "<p>Same page</p>",
        "grpo/index.html": '<code title="token_ratio in unipo_build/components.py, line 41">'
                           '<a href="https://x/blob/main/unipo_build/components.py#L41">components.py</a></code>',
        "explain/index.html": "<p>built by unipo_build.views.explainer (views/explainer.py)</p>",
        "ppo/index.html": "<p>entropy fell by 0.31 nats</p>",
        "old.js": "var a = 1;",
        "logo.png": b"\x89PNG\x00\x01",
    })
    after = _site(tmp_path / "b", {
        "index.html": "<p>Same page</p>",
        "grpo/index.html": '<code title="token_ratio in unipo_build/core/components.py, line 44">'
                           '<a href="https://x/blob/main/unipo_build/core/components.py#L44">core/components.py</a></code>',
        "explain/index.html": "<p>built by unipo_build.site.views.explainer.explainer (site/views/explainer/explainer.py)</p>",
        "ppo/index.html": "<p>entropy fell by 0.32 nats</p>",
        "new.js": "var a = 1;",
        "logo.png": b"\x89PNG\x00\x02",
    })
    result = SC.compare_sites(before, after, RENAMES)
    assert result.same == ["index.html"]
    assert result.moved == ["explain/index.html", "grpo/index.html"]
    assert [name for name, _ in result.differs] == ["logo.png", "ppo/index.html"]
    assert "0.31" in dict(result.differs)["ppo/index.html"]
    assert result.only_before == ["old.js"] and result.only_after == ["new.js"]
    assert not result.identical_but_for_moves
    text = SC.report(result)
    assert text.splitlines()[0].startswith("same: 1   moved (paths, module names, line numbers only): 2   differs: 2")


def test_without_the_renames_a_moved_path_is_a_difference(tmp_path):
    """The rename list is what makes a path change acceptable: without it the same pages differ."""
    before = _site(tmp_path / "a", {"p.html": "see unipo_build/components.py"})
    after = _site(tmp_path / "b", {"p.html": "see unipo_build/core/components.py"})
    assert [n for n, _ in SC.compare_sites(before, after, []).differs] == ["p.html"]
    assert SC.compare_sites(before, after, RENAMES).identical_but_for_moves


def test_the_sitemaps_build_date_and_gzip_stamp_are_not_content(tmp_path):
    import gzip
    day = "<url><loc>https://x/</loc><lastmod>{}</lastmod></url>"
    before = _site(tmp_path / "a", {"sitemap.xml": day.format("2026-11-27"),
                                    "sitemap.xml.gz": gzip.compress(day.format("2026-11-27").encode(), mtime=1)})
    after = _site(tmp_path / "b", {"sitemap.xml": day.format("2026-11-28"),
                                   "sitemap.xml.gz": gzip.compress(day.format("2026-11-27").encode(), mtime=2)})
    result = SC.compare_sites(before, after, [])
    assert result.moved == ["sitemap.xml"] and result.same == ["sitemap.xml.gz"]


def test_a_replacement_is_never_replaced_again():
    """Undoing core/components.py -> components.py must not then undo a shorter pair inside it."""
    pairs = SC.rename_pairs([("a/x.py", "a/core/x.py"), ("a/core.py", "a/y/core.py")])
    assert SC.normalise("a/core/x.py and a/y/core.py", pairs) == "a/x.py and a/core.py"
