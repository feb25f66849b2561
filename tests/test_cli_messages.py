"""Ordinary mistakes get one message naming what is wrong and what to do, never a traceback, and
nothing of the user's is changed; the --help pages describe themselves.

Each case runs the real `unipo` console script in a subprocess, as a user would.
"""

from __future__ import annotations

import json
import sys

import pytest

from cli_helpers import ROOT, unipo as _unipo
from helpers_runlog import checksums, write_run

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX paths")


def unipo(*args, cwd=ROOT, env_extra=None):
    """`unipo` run in ``cwd`` (outside the project, so nothing lands in it) on this checkout's project."""
    return _unipo(*args, cwd=cwd, env_extra={"UNIPO_ROOT": str(ROOT), **(env_extra or {})})


def _refused(result, *fragments: str) -> str:
    """The message of a refusal: exit status 2, no traceback, every fragment in it."""
    err = result.stderr
    assert result.returncode == 2, (result.returncode, err)
    assert "Traceback" not in err, err
    for fragment in fragments:
        assert fragment in err, (fragment, err)
    return err


def test_missing_model_or_task_path(tmp_path):
    err = _refused(unipo("train", "grpo", "--model", tmp_path / "nope", "--out", tmp_path / "run", cwd=tmp_path),
                   f"--model {tmp_path / 'nope'}: no such file or directory")
    assert len(err.strip().splitlines()) == 1
    not_a_checkpoint = tmp_path / "weights"
    not_a_checkpoint.mkdir()
    _refused(unipo("train", "grpo", "--model", not_a_checkpoint, cwd=tmp_path),
             "not a Hugging Face checkpoint directory (no config.json)")
    _refused(unipo("train", "grpo", "--task", tmp_path / "task.jsonl", cwd=tmp_path),
             f"--task {tmp_path / 'task.jsonl'}: no such file or directory")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["weights"]  # no run directory was started


@pytest.mark.parametrize("state, words", [
    ("finished", "already holds a finished run; nothing was changed: choose another --out"),
    ("checkpointed", "holds an unfinished run: add --resume to continue it"),
    ("started", "holds a run stopped before its first checkpoint: add --resume to start it over"),
])
def test_an_out_that_holds_a_run_is_never_touched(tmp_path, state, words):
    run = tmp_path / "run"
    write_run(run)
    if state != "finished":
        header = json.loads((run / "header.json").read_text())
        header.pop("finished_at")
        (run / "header.json").write_text(json.dumps(header))
    if state == "checkpointed":
        (run / "checkpoint").mkdir()
        (run / "checkpoint" / "meta.json").write_text('{"step": 2, "rollout": 2}')
    before = checksums(run)
    _refused(unipo("train", "grpo", "--out", run, cwd=tmp_path), f"{run} ", words)
    assert checksums(run) == before


def test_resume_of_a_finished_run_changes_nothing(tmp_path):
    run = tmp_path / "run"
    write_run(run)
    before = checksums(run)
    _refused(unipo("train", "grpo", "--out", run, "--resume", cwd=tmp_path), "already holds a finished run")
    assert checksums(run) == before


def test_unknown_preset_and_bad_values_are_one_line(tmp_path):
    for args, fragment in ((["train", "grpo", "--preset", "big"], "invalid choice: 'big' (choose from 'tiny', 'gpu', 'smollm2')"),
                           (["sft", "--preset", "huge"], "invalid choice: 'huge'"),
                           (["train", "grpo", "--steps", "many"], "invalid int value: 'many'")):
        err = _refused(unipo(*args, cwd=tmp_path), fragment)
        assert len(err.strip().splitlines()) == 1 and "--help" in err


def test_algorithm_names_in_any_case(tmp_path):
    # GRPO is grpo: the refusal is about the missing model, not the name
    _refused(unipo("train", "GRPO", "--model", tmp_path / "nope", cwd=tmp_path), "--model")
    assert unipo("openrlhf", "command", "DAPO").returncode == 0
    err = _refused(unipo("train", "grpoo", cwd=tmp_path), "unknown algorithm 'grpoo'", "did you mean 'grpo'?",
                   "known: ")
    from unipo_build.core.specs import load_specs

    known = err.split("known: ", 1)[1].split(";", 1)[0]
    assert known == ", ".join(sorted(load_specs(ROOT / "data" / "algorithms")))  # every spec, in order
    assert len(err.strip().splitlines()) == 1


def test_unipo_sft_refuses_an_existing_checkpoint_and_a_missing_task(tmp_path):
    out = tmp_path / "sft"
    out.mkdir()
    (out / "config.json").write_text("{}")
    before = checksums(out)
    _refused(unipo("sft", "--out", out, cwd=tmp_path), f"{out} already holds a checkpoint; nothing was changed")
    assert checksums(out) == before
    _refused(unipo("sft", "--out", tmp_path / "new", "--task-dir", tmp_path / "task", cwd=tmp_path),
             f"{tmp_path / 'task' / 'train.jsonl'} and {tmp_path / 'task' / 'eval.jsonl'} not found",
             "python -m training.task")
    assert not (tmp_path / "new").exists()


def test_openrlhf_engine_checks_the_machine_before_anything_starts(tmp_path):
    """On this CPU machine: no GPU, no vLLM, no warm start. Every lack is named; nothing is written."""
    from unipo_build.trainers.openrlhf import installed_version

    result = unipo("train", "DAPO", "--engine", "openrlhf", cwd=tmp_path)
    if installed_version() == "0.11.2":
        _refused(result, "this machine cannot run it yet; nothing was started or written",
                 "no CUDA GPU is visible", "vLLM is not installed", f"--model {tmp_path / 'work' / 'sft-tiny'}: no "
                 "Hugging Face checkpoint")
    else:
        _refused(result, "OpenRLHF")
    assert list(tmp_path.iterdir()) == []


def test_sft_prints_one_line_not_its_metadata(capsys, monkeypatch, tmp_path):
    """`unipo sft` ends with a line naming the checkpoint and its accuracy; the details stay in sft_meta.json."""
    import training.sft
    from unipo_build.cli import main as cli

    task = tmp_path / "task"
    task.mkdir()
    for name in ("train.jsonl", "eval.jsonl"):
        (task / name).write_text("")
    seen = {}

    def fake_sft(out, **kwargs):
        seen.update(kwargs)
        return {"steps": 1050, "wall_seconds": 771.4,
                "final_eval": {"n": 1500, "accuracy_greedy": 0.4333, "accuracy_sampled": 0.351}}

    monkeypatch.setattr(training.sft, "run_sft", fake_sft)
    out = tmp_path / "ckpt"
    assert cli.main(["sft", "--out", str(out), "--task-dir", str(task), "--threads", "1", "--no-progress"]) == 0
    printed = capsys.readouterr().out.strip().splitlines()
    assert printed == [f"warm start written to {out}: 1050 steps, held-out accuracy 0.433 greedy / 0.351 sampled on "
                       f"1500 problems, 771 s (details in {out / 'sft_meta.json'})"]
    assert seen["threads"] == 1 and seen["progress"] is False


def test_help_pages_describe_themselves():
    sft = unipo("sft", "--help").stdout
    assert "Train the tokenizer and the preset's model from scratch" in sft
    assert "--threads" in sft and "(default tiny)" in sft
    assert "(default: the preset's task directory: data/tasks for tiny, data/tasks-gpu for gpu)" in " ".join(sft.split())
    summary = unipo("summary", "--help").stdout
    assert "Print a run in a few numbers" in summary and "a run directory" in summary
    train = unipo("train", "--help").stdout
    from training.presets import PRESETS

    steps = ", ".join(f"{name} {p.rl.steps}" for name, p in PRESETS.items())
    assert f"the preset's: {steps})" in " ".join(train.split())
    assert "(default tiny)" in train and "(default auto)" in train
    openrlhf = train[train.index("OpenRLHF run options (with --engine openrlhf):"):]
    in_house = train[train.index("in-house trainer:"):train.index("OpenRLHF run options")]
    assert "--dry-run" in openrlhf and "--tap-dir" in openrlhf and "--dry-run" not in in_house
    assert "--threads" in in_house and "--checkpoint-every" in in_house

