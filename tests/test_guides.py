"""The guides, walked as a reader walks them (tests/guide_walk.py): a fresh copy of the project,
the environment activated, every command run exactly as written, in order.

- Contribute an algorithm: a new filter kind, the accuracy band (its code exactly as the guide shows
  it), then GRPO with it from the scaffold to a trained run, a strict build and a green `pytest -m specs`.
- Rebuild the site with your own logs: a trained run and two imported ones, validated, built.
- Every guide states the one convention (activate .venv first) once, at its top, and quotes a
  measured time and size for each training command.

The walks train at smoke size: the guide's `unipo train` with --steps 2 --eval-n 8 instead of its
--steps 10 --eval-n 200 (guide_walk.smoke_sized, checked below to change those two values and nothing
else); benchmarks/guide_commands.py runs the guides' commands at their own size for the figures they quote.

Both walks train from the warm start the project ships (data/warm-start/tiny), as the guides say a fresh
clone does: the accuracy band needs groups with some right answers, which a random policy does not give,
and a trained policy's short answers make the own-logs run a quarter quicker than a random policy's.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from cli_helpers import ROOT, guide_commands
from guide_walk import (CONTRIBUTE, OWN_LOGS, fresh_copy, named_paths, reader_paths, shell_runner,
                        smoke_runner, smoke_sized, walk_contribute, walk_own_logs)

GUIDES = sorted(p.name for p in (ROOT / "docs" / "guides").glob("*.md") if p.name != "index.md")


def _walk(walk, tmp_path) -> tuple[Path, dict]:
    """Walk a guide on a fresh copy, training from the shipped warm start (data/warm-start/tiny, as a reader
    who has not run `unipo sft` does) at smoke size; every command must succeed (a grep may find nothing)."""
    project = fresh_copy(tmp_path / "project")
    done = dict(walk(project, smoke_runner(shell_runner(project))))
    for command, result in done.items():
        if not command.startswith("grep "):
            assert result.returncode == 0, f"{command}\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
        assert "Traceback" not in result.stderr, f"{command}\n{result.stderr[-3000:]}"
    return project, done


@pytest.mark.parametrize("page", GUIDES)
def test_each_guide_states_the_convention_once_at_its_top(page):
    text = (ROOT / "docs" / "guides" / page).read_text(encoding="utf-8")
    assert text.count("source .venv/bin/activate") == 1, page
    assert text.index("source .venv/bin/activate") < text.index("\n## "), f"{page}: not stated before the first section"
    for command in guide_commands(page):  # bare commands: the environment is active, not named each time
        assert ".venv/bin/" not in command, (page, command)


@pytest.mark.parametrize("page", GUIDES)
def test_training_commands_say_what_they_cost(page):
    """Every `unipo train` of a guide has its measured time and size next to it, from the benchmark's file."""
    text = (ROOT / "docs" / "guides" / page).read_text(encoding="utf-8")
    results = json.loads((ROOT / "benchmarks" / "results" / "guide_commands.json").read_text())
    quoted = re.findall(r'\{\{ measured\("([^"]+)"', text)
    for command in guide_commands(page):
        if command.startswith("unipo train "):
            assert "--threads 1" in command and "--steps " in command, command
            assert command in quoted, f"{page}: no measured(...) for `{command}`"
    for command in quoted:
        assert command in results["commands"], f"{page}: `{command}` was not measured (benchmarks/guide_commands.py)"


def test_named_paths_of_a_command():
    assert named_paths("unipo import trl trl-output --tap trl-tap --out runs/my-trl-run") == \
        ["trl-output", "trl-tap", "runs/my-trl-run"]
    assert named_paths("UNIPO_RUNS=runs/grpo-mine:data/runs mkdocs build      # your run") == ["runs/grpo-mine", "data/runs"]
    assert named_paths("unipo import unipo my-unipo-log.jsonl --out runs/u") == ["my-unipo-log.jsonl", "runs/u"]
    assert named_paths("python3 -m http.server -d site -b 127.0.0.1 8000") == ["site"]


def test_what_the_guides_write_stays_out_of_git_and_of_fresh_copies(tmp_path):
    """A reader's checkout after following the guides and the README: every path their commands name
    outside the project's own folders (runs/grpo-mine, work/explain, the trainers' logs brought in,
    ...) exists there. git must ignore each, and the tests' fresh copy of that checkout (which the
    guide walks and the OpenRLHF guide test start from) must hold exactly the tracked files: an
    untracked runs/grpo-mine made the own-logs walk's `unipo train --out runs/grpo-mine` and the
    OpenRLHF guide's `UNIPO_RUNS=runs` build fail."""
    made = reader_paths()
    assert {"runs/grpo-mine", "work/explain", "trl-output", "my-unipo-log.jsonl", "runs/dapo-openrlhf"} <= set(made)
    checkout = fresh_copy(tmp_path / "checkout")
    for name in made:
        path = checkout / name
        if path.suffix:  # a log file
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("{}\n")
        else:  # a run or log directory
            path.mkdir(parents=True, exist_ok=True)
            (path / "steps.jsonl").write_text("{}\n")
    untracked = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=checkout,
                               capture_output=True, text=True, check=True).stdout.splitlines()
    assert untracked == [], f"not ignored by .gitignore: {untracked}"
    copy = fresh_copy(tmp_path / "copy", root=checkout)
    tracked = subprocess.run(["git", "ls-files"], cwd=checkout, capture_output=True, text=True, check=True).stdout
    copied = subprocess.run(["git", "ls-files"], cwd=copy, capture_output=True, text=True, check=True).stdout
    assert copied.splitlines() == tracked.splitlines()
    assert [name for name in made if (copy / name).exists()] == []


def test_the_walks_train_the_guides_commands_at_smoke_size():
    """The one change the walks make to a guide's command: the sizes of its training, nothing else."""
    assert smoke_sized(CONTRIBUTE[4]) == "unipo train grpo_band --steps 2 --eval-n 8 --threads 1 --out data/runs/grpo_band"
    assert smoke_sized(OWN_LOGS[7]) == "unipo train grpo --steps 2 --eval-n 8 --threads 1 --out runs/grpo-mine"
    assert [c for c in CONTRIBUTE + OWN_LOGS if c.startswith("unipo train ")] == [CONTRIBUTE[4], OWN_LOGS[7]]
    with pytest.raises(AssertionError, match="--eval-n"):
        smoke_sized("unipo train grpo --steps 10 --threads 1")
    ran = []
    smoke_runner(ran.append)("unipo validate runs")
    assert ran == ["unipo validate runs"]


@pytest.mark.slow
def test_contribute_guide_walk(tmp_path):
    project, done = _walk(walk_contribute, tmp_path)
    assert list(done) == CONTRIBUTE
    # the kind's hand-worked test and the check that its function has a browser port, both run and green
    assert " 2 passed," in done[CONTRIBUTE[0]].stdout.splitlines()[-1], done[CONTRIBUTE[0]].stdout[-2000:]
    # the scaffold lists the new kind among the filters; right after it, the marks the author is to
    # rewrite are there; afterwards none is left
    spec_text = (project / "data" / "algorithms" / "grpo_band.yaml").read_text()
    assert "accuracy_band" in next(line for line in spec_text.splitlines() if line.startswith("#   filter "))
    assert done[CONTRIBUTE[2]].stdout.count("TODO(author)") >= 10
    for path in ("data/algorithms/grpo_band.yaml", "docs/course/algorithms/grpo_band.md"):
        assert "TODO(author)" not in (project / path).read_text(), path
    assert "data/algorithms/grpo_band.yaml: valid" in done["unipo validate data/algorithms/grpo_band.yaml"].stdout
    assert "data/runs/grpo_band: valid" in done["unipo validate data/runs/grpo_band"].stdout
    summary = done["unipo summary data/runs/grpo_band"].stdout
    assert summary.startswith("run grpo_band: algorithm grpo_band") and "teaching moments" in summary
    assert "\n  4 updates over 2 rollouts," in summary  # GRPO's 2 updates a rollout, at smoke size
    run = project / "data" / "runs" / "grpo_band"
    header = json.loads((run / "header.json").read_text())
    assert header["algorithm_config"]["components"]["filter"]["kind"] == "accuracy_band"
    # the band acted in training: every group trained on has an accuracy strictly inside (0.2, 0.8), and
    # the groups it dropped, those outside, are logged
    trained, dropped = [], []
    for step_file in sorted((run / "tokens").glob("step_*.json")):
        detail = json.loads(step_file.read_text())
        trained += [g["n_correct"] / g["size"] for g in detail["groups"]]
        dropped += [g["n_correct"] / g["size"] for g in detail["filtered_groups"]]
    assert trained and all(0.2 < a < 0.8 for a in trained), trained
    assert dropped and not any(0.2 < a < 0.8 for a in dropped), dropped
    chapter = (project / "site" / "course" / "algorithms" / "grpo_band" / "index.html").read_text()
    assert "Training Explorer: no run" not in chapter and "The Step Inspector has no run" not in chapter
    assert "accuracy band" in chapter
    # the components reference, generated from the registry, lists the kind with its OpenRLHF setting
    components = (project / "site" / "reference" / "components" / "index.html").read_text()
    assert "accuracy_band" in components and "dynamic_filtering_range" in components
    specs = done["pytest -m specs -k grpo_band"].stdout
    assert re.search(r"\d+ passed", specs) and " failed" not in specs and " error" not in specs, specs[-2000:]


@pytest.mark.slow
def test_own_logs_guide_walk(tmp_path):
    project, done = _walk(walk_own_logs, tmp_path)
    assert list(done) == OWN_LOGS
    assert sorted(p.name for p in (project / "runs").iterdir()) == ["grpo-mine", "my-openrlhf-run", "my-prime-run",
                                                                     "my-trl-run", "my-unipo-run", "my-verl-run"]
    assert done["unipo validate runs"].stdout == "runs: valid\n"
    # `unipo explain` of a shipped run first (what the guide quotes it prints), then of the reader's
    # three runs into the same --out, which replaces the first site
    assert done[OWN_LOGS[0]].stdout.splitlines()[0] == "built a site for 1 run: open work/explain/index.html"
    explained = project / "work" / "explain"
    # a page per run, named by its id (the UNIPO import takes its id from the log file: my-unipo-log)
    assert sorted(p.name for p in (explained / "runs").iterdir()) == ["grpo-mine", "my-openrlhf-run", "my-unipo-log"]
    assert sorted(p.name for p in (explained / "course" / "algorithms").iterdir()) == ["dapo", "grpo"]
    # the last build: the reader's run directory alone, which the GRPO chapter then shows
    page = (project / "site" / "guides" / "own-logs" / "index.html").read_text()
    assert "From <code>runs/grpo-mine</code> (UNIPO_RUNS): 1 run loaded: <code>grpo-mine</code> (grpo)" in page
    grpo = (project / "site" / "course" / "algorithms" / "grpo" / "index.html").read_text()
    assert "grpo-mine" in grpo
