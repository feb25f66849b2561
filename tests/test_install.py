"""The site builds from a non-editable install, as the Pages workflow builds it.

``pip install .`` copies ``unipo_build`` into site-packages and leaves ``data/`` behind, so every
spec, run and task must be found from the project (the MkDocs config's directory), never from the
package's own path. The test builds a wheel of the project, installs it without its
dependencies into a fresh virtual environment (the dependencies come from this environment's
site-packages through a path entry, which does not run this environment's editable-install
hook), checks that ``unipo_build`` is imported from the fresh environment, and runs
``mkdocs build --strict`` there in isolated mode (``python -I``: the checkout is not on the path).
"""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
import venv
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def _run(argv: list[str], **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(argv, capture_output=True, text=True, timeout=900, check=False, **kwargs)


@pytest.mark.slow
def test_site_builds_from_a_non_editable_install(tmp_path):
    wheels = tmp_path / "wheels"
    built = _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(wheels),
                  str(REPO)])
    assert built.returncode == 0, built.stdout + built.stderr
    wheel = next(wheels.glob("unipo-*.whl"))

    fresh = tmp_path / "venv"
    venv.EnvBuilder(with_pip=False).create(fresh)
    python = fresh / "bin" / "python"
    fresh_site = Path(_run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).stdout.strip())
    # the dependencies (mkdocs, material, altair, ...) from this environment, without its .pth files
    (fresh_site / "deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n", encoding="utf-8")
    installed = _run([sys.executable, "-m", "pip", "install", "--no-deps", "--no-index", "-q",
                      "--target", str(fresh_site), str(wheel)])
    assert installed.returncode == 0, installed.stdout + installed.stderr

    where = _run([str(python), "-I", "-c", "import unipo_build; print(unipo_build.__file__)"], cwd=REPO)
    assert where.returncode == 0, where.stderr
    assert Path(where.stdout.strip()).resolve().is_relative_to(fresh_site.resolve()), where.stdout
    assert not (fresh_site / "data").exists()  # the install carries no data: it must come from the project

    env = {k: v for k, v in os.environ.items() if not k.startswith(("UNIPO_", "PYTHON"))}
    env["NO_MKDOCS_2_WARNING"] = "1"
    site = tmp_path / "site"
    build = _run([str(python), "-I", "-m", "mkdocs", "build", "--strict", "-q", "--site-dir", str(site)],
                 cwd=REPO, env=env)
    assert build.returncode == 0, (build.stdout + build.stderr)[-6000:]
    dapo = (site / "reference" / "algorithms" / "dapo" / "index.html").read_text(encoding="utf-8")
    assert "unipo-objective" in dapo and "clip" in dapo
    assert (site / "assets" / "palette.css").is_file() and (site / "assets" / "views" / "explainer.js").is_file()
