"""Shared fixtures: the repository root and one strict build of the site per test session."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class SiteBuild:
    """Result of ``mkdocs build --strict``; ``log`` is None when UNIPO_SITE_DIR was reused.

    ``site_url`` is the URL the site was built for (its sitemap lists pages under it).
    Material's instant navigation only follows links found in the sitemap, so the browser
    tests serve the site at this URL when they can.
    """

    site_dir: Path
    returncode: int | None
    log: str | None
    site_url: str | None = None


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def sitemap_root(site_dir: Path) -> str | None:
    """The first <loc> of the built sitemap: the site_url the site was built for."""
    sitemap = site_dir / "sitemap.xml"
    if not sitemap.is_file():
        return None
    match = re.search(r"<loc>\s*([^<\s]+)\s*</loc>", sitemap.read_text(encoding="utf-8"))
    return match.group(1) if match else None


def build_site(
    site_dir: Path, *, site_url: str | None = None, extra_env: dict[str, str] | None = None
) -> SiteBuild:
    """Run ``mkdocs build --strict`` into ``site_dir`` in a subprocess."""
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1", **(extra_env or {}))
    if site_url:
        env["UNIPO_SITE_URL"] = site_url
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site_dir)],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    return SiteBuild(site_dir, proc.returncode, proc.stdout + proc.stderr, site_url)


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
