"""The site builds from a non-editable install without torch, as the Pages workflow builds it.

``pip install .`` copies ``unipo_build`` into site-packages and leaves ``data/`` behind, so every
spec, run and task must be found from the project (the MkDocs config's directory), never from the
package's own path. The test builds a wheel of the project, installs it without its
dependencies into a fresh virtual environment (the dependencies come from this environment's
site-packages through a path entry, which does not run this environment's editable-install
hook), checks that ``unipo_build`` is imported from the fresh environment, and runs
``mkdocs build --strict`` there in isolated mode (``python -I``: the checkout is not on the path).
The training pipeline installed so finds its task, warm start and suite in the project too.
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
NO_TORCH = Path(__file__).resolve().parent / "no_torch"


def _run(argv: list[str], **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(argv, capture_output=True, text=True, timeout=900, check=False, **kwargs)


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """(python, its site-packages, an environment without UNIPO_* and PYTHON*) of a fresh non-editable install."""
    tmp_path = tmp_path_factory.mktemp("install")
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

    # `import torch` fails there where UNIPO_TEST_NO_TORCH=1 (the site build's test), as on the Pages workflow
    (fresh_site / "_unipo_no_torch.py").write_text((NO_TORCH / "sitecustomize.py").read_text(encoding="utf-8"),
                                                   encoding="utf-8")
    (fresh_site / "zz_unipo_no_torch.pth").write_text("import _unipo_no_torch\n", encoding="utf-8")
    where = _run([str(python), "-I", "-c", "import unipo_build; print(unipo_build.__file__)"], cwd=REPO)
    assert where.returncode == 0, where.stderr
    assert Path(where.stdout.strip()).resolve().is_relative_to(fresh_site.resolve()), where.stdout
    assert not (fresh_site / "data").exists()  # the install carries no data: it must come from the project

    env = {k: v for k, v in os.environ.items() if not k.startswith(("UNIPO_", "PYTHON"))}
    env["NO_MKDOCS_2_WARNING"] = "1"
    return python, fresh_site, env


@pytest.mark.slow
def test_site_builds_from_a_non_editable_install(installed, tmp_path):
    python, _, env = installed
    site = tmp_path / "site"
    no_torch = _run([str(python), "-I", "-c", "import torch"], cwd=REPO, env=dict(env, UNIPO_TEST_NO_TORCH="1"))
    assert no_torch.returncode != 0 and "torch is blocked" in no_torch.stderr, no_torch.stderr
    build = _run([str(python), "-I", "-m", "mkdocs", "build", "--strict", "-q", "--site-dir", str(site)],
                 cwd=REPO, env=dict(env, UNIPO_TEST_NO_TORCH="1"))
    assert build.returncode == 0, (build.stdout + build.stderr)[-6000:]
    dapo = (site / "reference" / "algorithms" / "dapo" / "index.html").read_text(encoding="utf-8")
    assert "unipo-objective" in dapo and "clip" in dapo
    assert (site / "assets" / "palette.css").is_file() and (site / "assets" / "views" / "explainer.js").is_file()


@pytest.mark.slow
def test_training_from_a_non_editable_install_reads_the_project(installed, tmp_path):
    """From the project's directory, or from anywhere with UNIPO_ROOT, the installed pipeline's paths
    (task, warm start, suite, default run directory) are the project's, not site-packages'."""
    pytest.importorskip("torch")
    python, fresh_site, env = installed
    probe = ("import training, training.rl as rl, training.sft as sft, training.suite as suite; "
             "print(training.__file__); print(rl.REPO); print(suite.DEFAULT_SUITE); "
             "print(sft.warm_start_path('tiny', rl.REPO))")
    for cwd, extra in ((REPO, {}), (tmp_path, {"UNIPO_ROOT": str(REPO)})):
        out = _run([str(python), "-I", "-c", probe], cwd=cwd, env={**env, **extra})
        assert out.returncode == 0, out.stderr[-3000:]
        package, root, suite_file, warm_start = (Path(line) for line in out.stdout.split())
        assert package.resolve().is_relative_to(fresh_site.resolve())
        assert root == REPO and suite_file == REPO / "data" / "suite.yaml"
        assert warm_start in (REPO / "work" / "sft-tiny", REPO / "data" / "warm-start" / "tiny")
        assert (warm_start / "config.json").is_file()


@pytest.mark.slow
def test_an_installed_package_names_a_runs_algorithm_from_any_directory(installed, tmp_path):
    """The wheel carries the shipped specs (unipo_build/specs, MANIFEST.in): from a directory outside any project,
    without UNIPO_ROOT, the installed package finds them in site-packages and `unipo import` names the run's spec
    (issue 44 item 6). `unipo explain` needs the course (mkdocs.yml, docs/) the wheel does not carry: it says so in
    one line. UNIPO_ROOT still points it at a project."""
    python, fresh_site, env = installed
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    probe = ("from unipo_build.core import project; from unipo_build.core.specs import load_specs; "
             "d = project.spec_dir(); print(d); print(' '.join(sorted(load_specs(d))))")
    out = _run([str(python), "-I", "-c", probe], cwd=elsewhere, env=env)
    assert out.returncode == 0, out.stderr[-3000:]
    where, ids = out.stdout.splitlines()
    assert Path(where) == fresh_site / "unipo_build" / "specs" and not Path(where).is_symlink()
    assert ids.split() == sorted(p.stem for p in (REPO / "data" / "algorithms").glob("*.yaml"))
    assert sorted(p.name for p in (fresh_site / "unipo_build" / "specs" / "ladder").glob("*.yaml")) == \
        sorted(p.name for p in (REPO / "data" / "algorithms" / "ladder").glob("*.yaml"))
    run = tmp_path / "runs" / "verl"
    imported = _run([str(python), "-I", "-m", "unipo_build.cli.main", "import", "verl",
                     str(REPO / "tests" / "fixtures" / "verl" / "run"), "--out", str(run)], cwd=elsewhere, env=env)
    assert imported.returncode == 0, imported.stderr[-3000:]
    assert imported.stdout.splitlines()[0] == f"{run}: run 'verl', algorithm 'dual_clip' (with its spec's components)"
    explained = _run([str(python), "-I", "-m", "unipo_build.cli.main", "explain", str(run), "--out",
                      str(tmp_path / "site")], cwd=elsewhere, env=env)
    assert explained.returncode == 1 and explained.stderr.count("\n") == 1, explained.stderr[-3000:]
    assert "which an installed package does not carry" in explained.stderr
    explained = _run([str(python), "-I", "-m", "unipo_build.cli.main", "explain", str(run), "--out",
                      str(tmp_path / "site")], cwd=elsewhere, env={**env, "UNIPO_ROOT": str(REPO)})
    assert explained.returncode == 0, explained.stderr[-3000:]
