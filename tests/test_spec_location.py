"""Where the specs are found (issue 44 item 6): from any directory, an installed unipo names a run's algorithm from
the specs the package carries (``unipo_build/specs``: in the checkout a link to data/algorithms, in a wheel a copy);
a project at or above the current directory, or one named by UNIPO_ROOT, comes first. The packaged location is
simulated here (``project.SHIPPED_SPECS`` pointed at a copy); tests/test_install.py checks a real wheel."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from cli_helpers import unipo
from unipo_build.core import project
from unipo_build.trainers import common as K

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def packaged(tmp_path, monkeypatch) -> Path:
    """Two shipped specs (reinforce, ppo: a lineage of their own) where the package keeps them; the current directory
    outside any project."""
    specs = tmp_path / "site-packages" / "unipo_build" / "specs"
    specs.mkdir(parents=True)
    for name in ("reinforce", "ppo"):
        shutil.copy(ROOT / "data" / "algorithms" / f"{name}.yaml", specs)
    monkeypatch.setattr(project, "SHIPPED_SPECS", specs)
    monkeypatch.delenv(project.ENV_ROOT, raising=False)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    return specs


def test_outside_any_project_the_packaged_specs_are_read(packaged):
    assert project.spec_dir() == packaged
    notes = K.Notes()
    assert sorted(K.known_specs(notes)) == ["ppo", "reinforce"]
    assert notes.lines() == [f"matched against the specs shipped with unipo ({packaged}): no data/algorithms at or "
                             f"above {Path.cwd()}"]
    # runs and tasks are never looked for there: the project root itself is still not found
    with pytest.raises(project.ProjectError, match="no UNIPO project at or above"):
        project.find_root()


def test_a_project_and_unipo_root_come_first(packaged, tmp_path, monkeypatch):
    mine = tmp_path / "mine"
    (mine / "data" / "algorithms").mkdir(parents=True)
    shutil.copy(ROOT / "data" / "algorithms" / "reinforce.yaml", mine / "data" / "algorithms")
    (mine / "sub").mkdir()
    monkeypatch.chdir(mine / "sub")
    assert project.spec_dir() == mine / "data" / "algorithms"  # the project at or above the current directory
    assert sorted(K.known_specs()) == ["reinforce"]
    monkeypatch.chdir(tmp_path / "elsewhere")
    monkeypatch.setenv(project.ENV_ROOT, str(mine))
    assert project.spec_dir() == mine / "data" / "algorithms"  # UNIPO_ROOT overrides the packaged specs
    monkeypatch.setenv(project.ENV_ROOT, str(tmp_path / "nowhere"))
    with pytest.raises(project.ProjectError, match="UNIPO_ROOT="):  # a wrong UNIPO_ROOT is an error, not a fallback
        project.spec_dir()
    monkeypatch.delenv(project.ENV_ROOT)
    assert project.spec_dir(mine) == mine / "data" / "algorithms"  # an explicit root, as the site build passes


def test_without_packaged_specs_the_search_fails_as_before(packaged, monkeypatch):
    monkeypatch.setattr(project, "SHIPPED_SPECS", packaged.parent / "missing")
    with pytest.raises(project.ProjectError, match="no UNIPO project at or above"):
        project.spec_dir()
    notes = K.Notes()
    assert K.known_specs(notes) == {} and "no spec directory found" in notes.lines()[0]


def test_the_checkout_ships_its_specs_through_the_link():
    """unipo_build/specs is the link a wheel's copy is made from (MANIFEST.in): the checkout's spec files, and
    every spec file of data/algorithms (the ladder's too)."""
    link = ROOT / "unipo_build" / "specs"
    assert link.is_symlink() and link.resolve() == (ROOT / "data" / "algorithms").resolve()
    assert "graft unipo_build/specs" in (ROOT / "MANIFEST.in").read_text().splitlines()
    assert project.SHIPPED_SPECS == link and project.shipped_spec_dir() == link


def test_import_names_the_algorithm_from_any_directory(tmp_path):
    """The console script, run from a directory outside the project with UNIPO_ROOT unset: the import names the
    run's spec (verl's GRPO with its vanilla loss: every kind of dual_clip)."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    out = tmp_path / "runs" / "verl"
    result = unipo("import", "verl", ROOT / "tests" / "fixtures" / "verl" / "run", "--out", out, cwd=elsewhere,
                   env_extra={"UNIPO_ROOT": ""})
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[0] == f"{out}: run 'verl', algorithm 'dual_clip' (with its spec's components)"


@pytest.mark.slow
def test_explain_names_the_algorithm_from_any_directory(tmp_path):
    """`unipo explain` from a directory outside the project, UNIPO_ROOT unset: the editable install's checkout builds
    the site, and the run is explained by its spec."""
    import json

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    run = tmp_path / "runs" / "verl"
    assert unipo("import", "verl", ROOT / "tests" / "fixtures" / "verl" / "run", "--out", run).returncode == 0
    result = unipo("explain", run, "--out", tmp_path / "site", cwd=elsewhere, env_extra={"UNIPO_ROOT": ""},
                   timeout=600)
    assert result.returncode == 0, result.stderr
    marker = json.loads((tmp_path / "site" / ".unipo-explain.json").read_text())
    assert marker["specs"] == {"verl": "dual_clip"}
