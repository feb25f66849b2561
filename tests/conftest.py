"""Shared fixtures: the repository root and one strict build of the site per test session."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from site_build import REPO_ROOT, SiteBuild, build_site, free_port, make_standin_set, sitemap_root


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO_ROOT


@pytest.fixture(scope="session")
def site_build(tmp_path_factory) -> SiteBuild:
    """The site, built once per session (or the directory named by UNIPO_SITE_DIR)."""
    reuse = os.environ.get("UNIPO_SITE_DIR")
    if reuse:
        site_dir = Path(reuse).resolve()
        if not (site_dir / "index.html").is_file():
            pytest.fail(f"UNIPO_SITE_DIR={reuse} does not contain a built site (no index.html)")
        return SiteBuild(site_dir, None, None, sitemap_root(site_dir))
    # Built for a free local port under a subpath, as a GitHub Pages project site is.
    url = f"http://127.0.0.1:{free_port()}/unipo/"
    return build_site(tmp_path_factory.mktemp("site"), site_url=url)


@pytest.fixture(scope="session")
def built_site(site_build: SiteBuild) -> Path:
    """Path of the built site; fails the test if the build failed."""
    if site_build.returncode not in (0, None):
        pytest.fail(f"mkdocs build --strict failed:\n{(site_build.log or '')[-6000:]}")
    return site_build.site_dir


@pytest.fixture(scope="session")
def standin_set(tmp_path_factory) -> Path:
    return make_standin_set(tmp_path_factory.mktemp("standin") / "gpu")


@pytest.fixture(scope="session")
def sets_site_build(tmp_path_factory, standin_set) -> SiteBuild:
    """The course built with the stand-in as its gpu set (UNIPO_SET_GPU_RUNS), once per session."""
    url = f"http://127.0.0.1:{free_port()}/unipo/"
    return build_site(tmp_path_factory.mktemp("sets-site"), site_url=url,
                      extra_env={"UNIPO_SET_GPU_RUNS": str(standin_set)})
