"""The strict MkDocs build, the self-hosted browser libraries and same-origin loading."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path
from types import SimpleNamespace
from urllib.parse import urlsplit

import pytest

from site_build import build_env, invalid_charts, vega_lite_checker
from unipo_build.site import hooks, macros

LOADING_LINK_RELS = {"stylesheet", "preload", "modulepreload", "prefetch", "preconnect",
                     "dns-prefetch", "icon", "shortcut", "apple-touch-icon", "manifest"}


class _Refs(HTMLParser):
    """Collects URLs the browser fetches at page load, and JSON script elements."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.refs: list[tuple[str, str]] = []  # (what, url)
        self.json_scripts: list[str | None] = []

    def handle_starttag(self, tag, attrs):
        a = {k: (v or "") for k, v in attrs}
        if tag == "script":
            if a.get("src"):
                self.refs.append(("script src", a["src"]))
            if a.get("type") == "application/json":
                self.json_scripts.append(a.get("id"))
        elif tag == "link" and set(a.get("rel", "").lower().split()) & LOADING_LINK_RELS:
            self.refs.append((f"link rel={a['rel']}", a.get("href", "")))
        elif tag in ("img", "iframe", "embed", "video", "audio", "source", "track", "input"):
            for attr in ("src", "poster"):
                if a.get(attr):
                    self.refs.append((f"{tag} {attr}", a[attr]))
            for part in a.get("srcset", "").split(","):
                if part.strip():
                    self.refs.append((f"{tag} srcset", part.split()[0]))
        elif tag == "object" and a.get("data"):
            self.refs.append(("object data", a["data"]))


def _pages(site: Path) -> list[Path]:
    pages = sorted(site.rglob("*.html"))
    assert pages, f"no HTML in {site}"
    return pages


def _parse(page: Path) -> _Refs:
    parser = _Refs()
    parser.feed(page.read_text(encoding="utf-8"))
    return parser


def _is_remote(url: str) -> bool:
    parts = urlsplit(url.strip())
    return bool(parts.netloc) or parts.scheme not in ("", "data")


def test_build_is_strict_and_free_of_warnings(site_build):
    if site_build.log is None:
        pytest.skip("UNIPO_SITE_DIR given: the site was not built by this test session")
    assert site_build.returncode == 0, site_build.log[-6000:]
    noisy = [
        line for line in site_build.log.splitlines()
        if re.match(r"\s*(WARNING|ERROR)\b", line) or "DeprecationWarning" in line
    ]
    assert noisy == [], "\n".join(noisy)


def test_the_test_builds_run_where_torch_cannot_be_imported():
    """The session's builds (both sets, site_build) and every other test build run in build_env, where
    `import torch` fails: the site must build as the README's first command and the Pages workflow
    build it, without torch. Numpy and the site's own modules still import there."""
    probe = "import numpy, unipo_build.site.macros\ntry:\n    import torch\nexcept ImportError as e:\n    print('no torch:', e)"
    proc = subprocess.run([sys.executable, "-c", probe], env=build_env(), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("no torch: No module named 'torch'"), proc.stdout


def test_vendor_files_are_copied_from_node_modules(built_site, repo_root):
    node_modules = repo_root / "node_modules"
    vendor = built_site / "assets" / "vendor"
    for package, src, dest in hooks.VENDOR_FILES:
        source, target = node_modules / package / src, vendor / dest
        assert target.exists(), f"missing {target}"
        if source.is_dir():
            names = sorted(p.name for p in source.iterdir())
            assert names and names == sorted(p.name for p in target.iterdir())
        else:
            assert target.read_bytes() == source.read_bytes(), dest
    assert any(p.suffix == ".woff2" for p in (vendor / "katex" / "fonts").iterdir())


def test_browser_libraries_are_pinned_exactly(repo_root):
    import altair

    package = json.loads((repo_root / "package.json").read_text())
    lock = json.loads((repo_root / "package-lock.json").read_text())
    pins = package["dependencies"]
    assert set(pins) == {"vega", "vega-lite", "vega-embed", "vega-interpreter", "katex"}
    for name, version in pins.items():
        assert re.fullmatch(r"\d+\.\d+\.\d+", version), f"{name}: {version} is not an exact version"
        assert lock["packages"][f"node_modules/{name}"]["version"] == version
    assert lock["packages"][""]["dependencies"] == pins
    schema = hooks._version_tuple(altair.SCHEMA_VERSION)
    runtime = hooks._version_tuple(pins["vega-lite"])
    assert runtime[0] == schema[0] == 6 and runtime >= schema


def test_nothing_at_page_load_comes_from_another_host(built_site):
    remote = []
    for page in _pages(built_site):
        for what, url in _parse(page).refs:
            if _is_remote(url):
                remote.append(f"{page.relative_to(built_site)}: {what} {url}")
    assert remote == []


def test_local_scripts_and_stylesheets_exist(built_site):
    missing = []
    for page in _pages(built_site):
        if page.name == "404.html":  # uses site_url's absolute path; checked in the browser
            continue
        for what, url in _parse(page).refs:
            if _is_remote(url) or not url or url.startswith("data:"):
                continue
            path = urlsplit(url).path
            target = (page.parent / path).resolve()
            if not target.exists():
                missing.append(f"{page.relative_to(built_site)}: {what} {url}")
    assert missing == []


def test_stylesheets_load_nothing_from_another_host(built_site):
    remote = []
    for css in built_site.rglob("*.css"):
        text = css.read_text(encoding="utf-8", errors="replace")
        for url in re.findall(r"url\(\s*['\"]?([^'\")]+)", text) + re.findall(
            r"@import\s+['\"]([^'\"]+)", text
        ):
            if _is_remote(url):
                remote.append(f"{css.relative_to(built_site)}: {url}")
    assert remote == []


def test_pages_use_no_json_script_elements(built_site):
    """Material's instant navigation re-creates <script> elements without their attributes:
    page data goes into <template> elements (unipo_build.site.render.json_data) instead."""
    found = {
        str(page.relative_to(built_site)): ids
        for page in _pages(built_site)
        if (ids := [i for i in _parse(page).json_scripts if i != "__config"])
    }
    assert found == {}


def test_no_macro_placeholder_is_left(built_site):
    left = [
        str(p.relative_to(built_site))
        for p in _pages(built_site)
        if macros.TOKEN_PREFIX in p.read_text(encoding="utf-8")
    ]
    assert left == []


def test_no_path_of_the_building_machine_is_published(built_site, repo_root):
    """Pages, search index and data name the runs directory relative to the project."""
    root = str(repo_root.resolve())
    found = [str(p.relative_to(built_site)) for p in sorted(built_site.rglob("*"))
             if p.is_file() and p.suffix in (".html", ".json", ".xml", ".js") and root in p.read_text(encoding="utf-8")]
    assert found == []
    own_logs = (built_site / "guides" / "own-logs" / "index.html").read_text(encoding="utf-8")
    assert "From <code>data/runs</code> (" in own_logs


def test_shipped_runs_name_no_path_of_the_machine_that_trained_them(repo_root):
    for header in sorted((repo_root / "data" / "runs").glob("*/header.json")):
        text = header.read_text(encoding="utf-8")
        absolute = re.findall(r'"(/[^"]+)"', text)
        assert absolute == [], f"{header}: {absolute}"


def test_rendering_page_has_math_and_chart(built_site):
    text = (built_site / "reference" / "rendering" / "index.html").read_text(encoding="utf-8")
    assert '<div class="arithmatex">\\[' in text
    assert re.search(r'<div class="unipo-vega" data-spec-id="unipo-vega-1-[0-9a-f]{8}"></div>', text)
    assert '<template class="unipo-data" id="unipo-vega-1-' in text


@pytest.fixture(scope="module")
def vega_lite_errors():
    return vega_lite_checker()


def test_every_chart_of_the_built_site_is_valid_vega_lite(built_site, vega_lite_errors):
    """The build makes its charts without Altair's schema check (a fifth of its time); every chart it
    embedded, on every page of every set, is checked here instead (the hostile site's too:
    tests/browser/test_hostile_site.py)."""
    checked, invalid = invalid_charts(built_site, vega_lite_errors)
    assert invalid == {}
    assert checked >= 100, f"only {checked} Vega-Lite specs found in the built site"


def test_the_chart_check_finds_a_bad_spec(vega_lite_errors):
    """The check above can fail: a mark Vega-Lite does not have and a field type it does not know."""
    spec = {"$schema": "https://vega.github.io/schema/vega-lite/v6.json", "data": {"values": []},
            "mark": "bar", "encoding": {"x": {"field": "a", "type": "quantitative"}}}
    assert vega_lite_errors(spec) == []
    assert vega_lite_errors({**spec, "mark": "spiral"})
    assert vega_lite_errors({**spec, "encoding": {"x": {"field": "a", "type": "continuous"}}})


def _fake_config(repo_root: Path, site_dir: Path):
    return SimpleNamespace(config_file_path=str(repo_root / "mkdocs.yml"), site_dir=str(site_dir))


def test_missing_node_modules_fails_with_the_fix(tmp_path, monkeypatch, repo_root):
    from mkdocs.exceptions import PluginError

    monkeypatch.setenv("UNIPO_NODE_MODULES", str(tmp_path / "node_modules"))
    with pytest.raises(PluginError, match=r"node_modules not found.*npm ci"):
        hooks.on_post_build(_fake_config(repo_root, tmp_path / "site"))


def test_missing_dist_file_is_named(tmp_path, monkeypatch, repo_root):
    from mkdocs.exceptions import PluginError

    fake = tmp_path / "node_modules"
    pins = json.loads((repo_root / "package.json").read_text())["dependencies"]
    for name, version in pins.items():
        (fake / name).mkdir(parents=True)
        (fake / name / "package.json").write_text(json.dumps({"version": version}))
    monkeypatch.setenv("UNIPO_NODE_MODULES", str(fake))
    with pytest.raises(PluginError, match=r"katex\.min\.js.*npm ci|vega\.min\.js.*npm ci"):
        hooks.check_vendor(_fake_config(repo_root, tmp_path / "site"))


def test_wrong_version_in_node_modules_is_reported(tmp_path, monkeypatch, repo_root):
    from mkdocs.exceptions import PluginError

    fake = tmp_path / "node_modules"
    for name in ("katex", "vega", "vega-embed", "vega-lite"):
        (fake / name).mkdir(parents=True)
        (fake / name / "package.json").write_text(json.dumps({"version": "0.0.1"}))
    monkeypatch.setenv("UNIPO_NODE_MODULES", str(fake))
    with pytest.raises(PluginError, match=r"0\.0\.1 but package\.json pins"):
        hooks.check_vendor(_fake_config(repo_root, tmp_path / "site"))
