"""`unipo validate` as a user runs it: the console script from the venv, in a subprocess."""

from __future__ import annotations

import pytest
import yaml

from cli_helpers import ROOT, UNIPO, unipo
from helpers_runlog import checksums, read_json, write_json, write_run


def test_console_script_is_installed():
    assert UNIPO.exists(), f"{UNIPO}: the console script is missing (pip install -e .)"


def test_shipped_specs_are_valid():
    specs = sorted((ROOT / "data" / "algorithms").glob("*"))
    # the five of the course, plus algorithms contributed through the scaffold path
    assert {p.stem for p in specs} >= {"reinforce", "ppo", "grpo", "dapo", "dr_grpo"}
    result = unipo("validate", *specs)
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    for spec in specs:
        assert f"{spec}: valid" in result.stdout


def test_spec_directory_is_valid():
    result = unipo("validate", "-q", "data/algorithms")
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")


@pytest.fixture
def run(tmp_path):
    run_dir = tmp_path / "run"
    write_run(run_dir)
    return run_dir


def test_valid_run(run):
    result = unipo("validate", run)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == f"{run}: valid"


def test_token_array_one_element_short(run):
    path = run / "tokens" / "step_000002.json"
    detail = read_json(path)
    detail["prompts"][0]["responses"][1]["tokens"]["advantage"].pop()
    write_json(path, detail)
    before = checksums(run)
    result = unipo("validate", run)
    assert checksums(run) == before  # nothing written over the input
    assert result.returncode == 1
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert lines == [f"{path} (step 2, prompt 0, response 1): tokens.advantage: has 3 elements, "
                     "expected 4 (the length of tokens.ids)"]
    # the same problem through the single file and through the directory of runs
    single = unipo("validate", path)
    assert single.returncode == 1 and single.stderr.strip().splitlines() == lines
    parent = unipo("validate", run.parent)
    assert parent.returncode == 1 and parent.stderr.strip().splitlines() == lines


def test_mixed_arguments_fail_if_any_fails(run, tmp_path):
    bad = yaml.safe_load((ROOT / "data" / "algorithms" / "grpo.yaml").read_text())
    bad["components"]["clip"]["params"] = {"eps": "wide"}
    spec = tmp_path / "grpo.yaml"
    spec.write_text(yaml.safe_dump(bad))
    result = unipo("validate", run, spec)
    assert result.returncode == 1
    assert f"{run}: valid" in result.stdout
    assert f"{spec}: components.clip.params.eps:" in result.stderr


def test_non_finite_metric_names_the_field(run):
    path = run / "steps.jsonl"
    path.write_text(path.read_text().replace('"reward/mean":0.5', '"reward/mean":NaN', 1))
    result = unipo("validate", run)
    assert result.returncode == 1
    assert result.stderr.strip() == (f"{path} (line 1, step 0): metrics.reward/mean: "
                                     "NaN or infinity is not allowed here")


def test_truncated_line(run):
    path = run / "evals.jsonl"
    path.write_text(path.read_text()[:-12])
    result = unipo("validate", path)
    assert result.returncode == 1
    assert f"{path} (line 3): not valid JSON" in result.stderr and "cut off" in result.stderr


def test_paths_that_are_not_logs(tmp_path):
    (tmp_path / "empty").mkdir()
    (tmp_path / "notes.txt").write_text("hi")
    result = unipo("validate", tmp_path / "empty", tmp_path / "notes.txt", tmp_path / "nope")
    assert result.returncode == 1
    err = result.stderr
    assert f"{tmp_path / 'empty'}: neither a run directory" in err
    assert f"{tmp_path / 'notes.txt'}: not a spec (.yaml) or a file of a run log" in err
    assert f"{tmp_path / 'nope'}: no such file or directory" in err


def test_usage_error_without_paths():
    result = unipo("validate")
    assert result.returncode == 2 and "paths" in result.stderr
