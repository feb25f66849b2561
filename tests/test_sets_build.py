"""The course built on two run sets (issue 20 item 5): with a stand-in gpu set (a few of
data/runs' runs copied into a temporary directory, GRPO's under a run id only it has; pointed at
by UNIPO_SET_GPU_RUNS), one ``mkdocs build --strict`` writes the default set at the site's root
and the whole course again under gpu/, each page from its own set's runs, with assets, run data
and a search index of its own."""

from __future__ import annotations

import html
import json
import posixpath
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from site_build import STANDIN_GRPO_ID, STANDIN_RUNS

GRPO = "course/algorithms/grpo/index.html"
OWN_LOGS = "guides/own-logs/index.html"


@pytest.fixture(scope="module")
def site(sets_site_build) -> Path:
    assert sets_site_build.returncode == 0, (sets_site_build.log or "")[-6000:]
    noisy = [line for line in sets_site_build.log.splitlines() if re.match(r"\s*(WARNING|ERROR)\b", line)]
    assert noisy == [], "\n".join(noisy)
    return sets_site_build.site_dir


def _text(path: Path) -> str:
    raw = path.read_text(encoding="utf-8")
    raw = re.sub(r"<(script|style|template)\b.*?</\1>", " ", raw, flags=re.S)
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", raw)))


class _Loads(HTMLParser):
    """Local files a page loads: script src, stylesheet links, and the set switch's links."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.loads: list[str] = []
        self.switch: list[dict] = []

    def handle_starttag(self, tag, attrs):
        a = {k: v or "" for k, v in attrs}
        if tag == "script" and a.get("src"):
            self.loads.append(a["src"])
        elif tag == "link" and "stylesheet" in a.get("rel", ""):
            self.loads.append(a["href"])
        elif tag == "a" and "unipo-sets__item" in a.get("class", ""):
            self.switch.append(a)


def _parse(path: Path) -> _Loads:
    parser = _Loads()
    parser.feed(path.read_text(encoding="utf-8"))
    return parser


def _resolve(site: Path, page: Path, href: str) -> Path:
    """A relative URL of ``page`` as a file of the site (a directory URL is its index.html)."""
    base = posixpath.dirname(page.relative_to(site).as_posix())
    target = posixpath.normpath(posixpath.join(base, href.split("#")[0].split("?")[0]))
    path = site / target
    return path / "index.html" if href.endswith("/") or path.is_dir() else path


def test_every_page_is_built_again_under_gpu(site):
    root_pages = {p.relative_to(site) for p in site.rglob("*.html") if not p.relative_to(site).parts[0] == "gpu"}
    gpu_pages = {p.relative_to(site / "gpu") for p in (site / "gpu").rglob("*.html")}
    assert len(root_pages) > 20 and gpu_pages == root_pages
    assert (site / "gpu" / GRPO).is_file()


def test_computed_numbers_come_from_the_set_shown(site, standin_set, repo_root):
    # the GRPO chapter names the run it shows: the stand-in's own id only under gpu/
    assert STANDIN_GRPO_ID in _text(site / "gpu" / GRPO)
    assert STANDIN_GRPO_ID not in _text(site / GRPO)
    # the runs status, counted by the build from each set's directory
    shipped = len([p for p in (repo_root / "data" / "runs").iterdir() if p.is_dir() and not p.name.startswith(".")])
    assert f"{shipped} runs loaded" in _text(site / OWN_LOGS)
    gpu = _text(site / "gpu" / OWN_LOGS)
    assert f"{len(STANDIN_RUNS)} runs loaded" in gpu and "extra.unipo_sets (gpu)" in gpu
    # the Step Inspector's step files of the stand-in's run, where the gpu pages fetch them
    # (the shipped runs' token files are gzipped: the site serves them plain, under the plain name)
    steps = sorted(p.name.removesuffix(".gz") for p in (standin_set / STANDIN_GRPO_ID / "tokens").iterdir())
    assert steps and sorted(p.name for p in (site / "gpu" / "assets" / "runs" / STANDIN_GRPO_ID / "steps").iterdir()) == steps
    assert not (site / "assets" / "runs" / STANDIN_GRPO_ID).exists()


def test_gpu_pages_load_their_assets_from_their_own_set(site):
    for rel in (GRPO, "index.html", "course/compare/dynamics/index.html", "playgrounds/objective-1d/index.html"):
        page = site / "gpu" / rel
        loads = _parse(page).loads
        assert any("vendor/katex" in u for u in loads) and any("unipo.js" in u for u in loads)
        for url in loads:
            target = _resolve(site, page, url)
            assert target.is_file(), f"{page}: {url} -> {target} does not exist"
            assert (site / "gpu") in target.parents, f"{page}: {url} loads from outside the gpu set"
    for name in ("palette.json", "palette.css", "vendor/vega/vega.min.js", "views/inspector.js"):
        assert (site / "gpu" / "assets" / name).is_file(), name


SCALE_PAGE = "course/compare/scale/"
# the pages about both sets: the scale page compares them, the run-sets reference lists each set's runs
BOTH_SETS_PAGES = (SCALE_PAGE, "reference/run_sets/")


def test_each_set_has_its_own_search_index_and_sitemap(site, sets_site_build):
    index = json.loads((site / "gpu" / "search" / "search_index.json").read_text(encoding="utf-8"))
    text = " ".join(d.get("text", "") for d in index["docs"])
    assert STANDIN_GRPO_ID in text
    # the default set's own pages name none of the other set's runs (the pages about both sets do,
    # on purpose)
    default = json.loads((site / "search" / "search_index.json").read_text(encoding="utf-8"))["docs"]
    naming = [d["location"] for d in default
              if STANDIN_GRPO_ID in d.get("text", "") and not d["location"].startswith(BOTH_SETS_PAGES)]
    assert naming == []
    assert any(STANDIN_GRPO_ID in d.get("text", "") for d in default if d["location"].startswith(SCALE_PAGE))
    locs = re.findall(r"<loc>([^<]+)</loc>", (site / "gpu" / "sitemap.xml").read_text(encoding="utf-8"))
    assert locs and all(loc.startswith(sets_site_build.site_url + "gpu/") for loc in locs)


def test_the_switch_and_the_banner_name_the_set_and_link_the_same_page(site):
    for rel in (GRPO, "index.html"):
        for prefix, current in (("", "tiny"), ("gpu/", "gpu")):
            page = site / prefix / rel
            switch = _parse(page).switch
            assert [a["data-unipo-set"] for a in switch] == ["tiny", "gpu"]
            assert [a["data-unipo-set"] for a in switch if a.get("aria-current") == "page"] == [current]
            for a in switch:
                want = site / ("" if a["data-unipo-set"] == "tiny" else "gpu") / rel
                assert _resolve(site, page, a["href"]) == want, (page, a["href"])
    banner = _text(site / "gpu" / GRPO)
    assert "This page shows the GPU set" in banner and "The same page on the CPU set (tiny)" in banner
    assert "This page shows the" not in _text(site / GRPO)
