"""An exit before MkDocs 1.x and Material's maintenance ends: the site builds identically with
ProperDocs (the maintained MkDocs 1.x fork, pinned in the dev extra) as with MkDocs.

ProperDocs reads mkdocs.yml, runs MkDocs' plugin entry points (macros, search) and Material
unchanged. The only byte that may differ is the generator's name in each page's
``<meta name="generator">``; every other byte of every file must be the same.
"""

from __future__ import annotations

import re

import pytest

from site_build import build_site

GENERATOR = re.compile(rb'<meta name="generator" content="[^"]*">')

pytestmark = pytest.mark.slow


def test_properdocs_builds_the_same_site(site_build, built_site, tmp_path):
    pytest.importorskip("properdocs")
    build = build_site(tmp_path / "properdocs-site", site_url=site_build.site_url, tool="properdocs")
    assert build.returncode == 0, (build.log or "")[-4000:]
    ours = {p.relative_to(built_site) for p in built_site.rglob("*") if p.is_file()}
    theirs = {p.relative_to(build.site_dir) for p in build.site_dir.rglob("*") if p.is_file()}
    assert ours == theirs, (sorted(ours - theirs)[:10], sorted(theirs - ours)[:10])
    differ, generators = [], set()
    for rel in sorted(ours):
        a, b = (built_site / rel).read_bytes(), (build.site_dir / rel).read_bytes()
        if a == b:
            continue
        generators.update(GENERATOR.findall(b))
        if GENERATOR.sub(b"", a) != GENERATOR.sub(b"", b):
            differ.append(str(rel))
    assert differ == [], differ[:20]
    # the builds did differ where they should: ProperDocs names itself in the pages
    assert generators and all(b"ProperDocs" in g for g in generators), generators
