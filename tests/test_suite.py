"""The suite file (data/suite.yaml) and the runner: every run and rung names a spec, each ladder
changes one slot per rung, and the runner's bookkeeping (what is finished, resumable, stale)."""

from __future__ import annotations

import functools
import json

import pytest

from training.suite import DEFAULT_SUITE, SuiteError, load_suite, run_state
from training.suite import train_command as train_suite_run
from unipo_build.core.specs import load_algorithm, resolve

SLOTS = ("advantage", "ratio", "clip", "kl", "aggregation", "filter", "shaping")


def changed_slots(a: str, b: str) -> list[str]:
    ca = resolve(load_algorithm(a), max_new_tokens=96)
    cb = resolve(load_algorithm(b), max_new_tokens=96)
    return [s for s in SLOTS if ca.components[s].model_dump() != cb.components[s].model_dump()]


def test_every_run_names_a_spec_and_the_core_algorithms_have_three_seeds():
    suite = load_suite()
    for run in suite.runs:
        load_algorithm(run.algorithm)
    seeds = {}
    for run in suite.runs:
        seeds.setdefault(run.algorithm, set()).add(run.seed)
    for algorithm in ("reinforce", "ppo", "grpo", "dapo", "dr_grpo"):
        assert len(seeds[algorithm]) >= 3, algorithm
    assert seeds["gspo"] and seeds["dapo_dr"]
    detailed = {r.algorithm for r in suite.runs if r.detail}
    assert {"reinforce", "ppo", "grpo", "dapo", "dr_grpo", "gspo", "dapo_dr"} <= detailed


def test_each_ladder_changes_one_slot_per_rung_and_every_rung_has_a_run():
    suite = load_suite()
    trained = {r.algorithm for r in suite.runs}
    assert max(len(rungs) for rungs in suite.ladders.values()) >= 6
    for name, rungs in suite.ladders.items():
        for below, above in zip(rungs, rungs[1:]):
            assert len(changed_slots(below, above)) == 1, (name, below, above, changed_slots(below, above))
        assert set(rungs) <= trained, name


def test_hand_checked_rungs():
    assert changed_slots("grpo", "ladder_no_kl") == ["kl"]
    assert changed_slots("ladder_no_kl", "ladder_clip_higher") == ["clip"]
    assert changed_slots("ladder_dynamic_sampling", "dapo") == ["shaping"]
    assert changed_slots("ladder_mean_advantage", "dr_grpo") == ["aggregation"]


def test_bad_suite_files_are_named(tmp_path):
    bad = tmp_path / "suite.yaml"
    bad.write_text("rollouts: 0\nruns: []\n")
    with pytest.raises(SuiteError, match=r"suite\.yaml: rollouts"):
        load_suite(bad)
    bad.write_text("rollouts: 5\nruns:\n  - {name: a, algorithm: grpo}\n  - {name: a, algorithm: dapo}\n")
    with pytest.raises(SuiteError, match="names used twice: a"):
        load_suite(bad)
    with pytest.raises(SuiteError, match="no such suite file"):
        load_suite(tmp_path / "missing.yaml")


def test_run_state(tmp_path):
    run = tmp_path / "r"
    assert run_state(run) == "new"
    run.mkdir()
    (run / "steps.jsonl").write_text("{}\n")
    assert run_state(run) == "stale"
    (run / "checkpoint").mkdir()
    (run / "checkpoint" / "meta.json").write_text("{}")
    assert run_state(run) == "resumable"
    (run / "header.json").write_text(json.dumps({"finished_at": "2026-11-23T00:00:00Z"}))
    assert run_state(run) == "finished"


def test_train_command_is_the_ordinary_cli(tmp_path):
    """Each run is `unipo train`, which the CLI hands down (training does not name the layer above it)."""
    from unipo_build.cli.commands import SUITE_TRAIN

    suite = load_suite(DEFAULT_SUITE)
    detailed = next(r for r in suite.runs if r.detail)
    plain = next(r for r in suite.runs if not r.detail)
    train_command = functools.partial(train_suite_run, train=SUITE_TRAIN)
    cmd = train_command(suite, detailed, tmp_path / detailed.name, "cpu", resume=False)
    assert cmd[1:5] == ["-m", "unipo_build.cli.main", "train", detailed.algorithm]
    assert cmd[cmd.index("--steps") + 1] == str(suite.rollouts) and "--resume" not in cmd
    assert cmd[cmd.index("--detail-every") + 1] == str(suite.detail_every)
    cmd = train_command(suite, plain, tmp_path / plain.name, "cpu", resume=True)
    assert cmd[cmd.index("--detail-every") + 1] == "0" and cmd[-1] == "--resume"
    assert cmd[cmd.index("--threads") + 1] == "1"
    assert "--eval-every" not in cmd and "--checkpoint-every" not in cmd  # the preset's, unipo train's
    gpu = load_suite(DEFAULT_SUITE.parent / "suite-gpu.yaml")
    cmd = train_command(gpu, gpu.runs[0], tmp_path / "g", "cuda", resume=False)
    assert gpu.eval_every and cmd[cmd.index("--eval-every") + 1] == str(gpu.eval_every)
    assert cmd[cmd.index("--checkpoint-every") + 1] == str(gpu.checkpoint_every) == str(gpu.rollouts)
    assert cmd[cmd.index("--preset") + 1] == "gpu" and cmd[cmd.index("--steps") + 1] == str(gpu.rollouts)
    assert "--time-limit" not in cmd
    cmd = train_command(gpu, gpu.runs[0], tmp_path / "g", "cuda", resume=False, time_limit=312.4)
    assert cmd[cmd.index("--time-limit") + 1] == "312"


def test_the_commit_comes_from_the_environment_when_named_else_from_git(tmp_path, monkeypatch):
    """A GPU machine gets a copy of the tree whose .git (if any) may be an older checkout's: the H200's
    copy reported the session's first commit +dirty. So UNIPO_COMMIT, set by the caller
    (benchmarks/gpu_set.sh), wins; without it the checkout's HEAD; outside a checkout, None."""
    import training.run_info as info

    monkeypatch.delenv("UNIPO_COMMIT", raising=False)
    head = info.git_commit()
    assert head and len(head.split("+")[0]) == 40  # this checkout
    monkeypatch.setenv("UNIPO_COMMIT", "0123abc")
    assert info.git_commit() == "0123abc"
    monkeypatch.delenv("UNIPO_COMMIT")
    monkeypatch.setattr(info, "REPO", tmp_path)  # not a git checkout
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path.parent))
    assert info.git_commit() is None


def test_train_starts_from_a_warm_start_trained_here_else_the_shipped_one(tmp_path, monkeypatch):
    """work/sft-<preset> (trained here) wins; else data/warm-start/<preset> (shipped, so a first
    `unipo train` skips SFT); else work/sft-<preset>, where SFT writes (never into data/). The
    trainer and the suite ask the same function."""
    import training.rl as rl
    import training.suite as suite_mod
    from training.presets import TINY
    from training.sft import warm_start_path
    from training_fixtures import save_tiny_checkpoint

    own, shipped = tmp_path / "work" / "sft-tiny", tmp_path / "data" / "warm-start" / "tiny"
    assert warm_start_path("tiny", tmp_path) == own
    save_tiny_checkpoint(shipped)
    assert warm_start_path("tiny", tmp_path) == shipped
    monkeypatch.setattr(rl, "REPO", tmp_path)
    trainer = rl.Trainer.__new__(rl.Trainer)
    trainer.opts = rl.TrainOptions(algorithm="grpo")
    trainer.preset = TINY
    assert trainer._warm_start() == str(shipped)  # no SFT run: it would take minutes and write work/
    assert not own.exists()
    save_tiny_checkpoint(own)
    assert warm_start_path("tiny", tmp_path) == own and trainer._warm_start() == str(own)
    monkeypatch.setattr(suite_mod, "REPO", tmp_path)
    (tmp_path / "data" / "tasks").mkdir(parents=True)
    (tmp_path / "data" / "tasks" / "train.jsonl").write_text("")
    said = []
    suite_mod.ensure_inputs(suite_mod.Suite(rollouts=1, runs=[]), threads=1, device="cpu", say=said.append)
    assert said == []  # neither the task nor the warm start had to be made
