"""A bad spec stops `mkdocs build` with one line naming the file and the field, with or without -q.

Before, a spec over a bound (a 250-character name) failed inside a macro: 30 lines of traceback, and
with -q nothing at all and exit 100. The project's hooks now read every spec before any page.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]


def _project_with_long_spec_name(tmp_path: Path) -> tuple[Path, Path]:
    project = tmp_path / "project"
    project.mkdir()
    shutil.copy(REPO / "mkdocs.yml", project / "mkdocs.yml")
    for name in ("docs", "overrides", "unipo_build", "node_modules", "package.json", "package-lock.json"):
        (project / name).symlink_to(REPO / name)
    data = project / "data"
    data.mkdir()
    for name in ("runs", "tasks", "suite.yaml"):
        (data / name).symlink_to(REPO / "data" / name)
    shutil.copytree(REPO / "data" / "algorithms", data / "algorithms")
    spec_path = data / "algorithms" / "gspo.yaml"
    spec = yaml.safe_load(spec_path.read_text(encoding="utf-8"))
    spec["name"] = "G" * 250
    spec_path.write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
    return project, spec_path


@pytest.mark.skipif(not (REPO / "node_modules").is_dir(), reason="npm ci has not been run")
@pytest.mark.parametrize("quiet", [False, True], ids=["plain", "quiet"])
def test_a_spec_over_a_bound_stops_the_build_with_one_line(tmp_path, quiet):
    project, spec_path = _project_with_long_spec_name(tmp_path)
    before = spec_path.read_bytes()
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1", PYTHONPATH=str(REPO))
    env.pop("UNIPO_RUNS", None)
    command = [sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(tmp_path / "site")]
    if quiet:
        command.append("-q")
    proc = subprocess.run(command, cwd=project, env=env, capture_output=True, text=True, timeout=300)
    output = proc.stdout + proc.stderr
    assert proc.returncode != 0, output[-3000:]
    assert "Traceback" not in output, output[-3000:]
    named = [line for line in output.splitlines() if "gspo.yaml" in line]
    assert len(named) == 1, output[-3000:]
    assert named[0].endswith("gspo.yaml: name: String should have at most 200 characters"), named[0]
    assert not (tmp_path / "site" / "index.html").exists()  # stopped before any page
    assert spec_path.read_bytes() == before  # the user's spec is not touched
