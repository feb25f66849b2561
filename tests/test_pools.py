"""Issue 20's pools in the trainer: RL draws prompts from the RL pool only, refuses prompts the warm
start trained on (one line: the file, the count, the way out; nothing written), records the
memorisation check of rollout 0 in the run header, and a suite naming a preset the machine cannot run
stops before anything is written."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from cli_helpers import unipo  # noqa: E402
from training_fixtures import coin_flip_score  # noqa: E402
from training.evaluate import evaluate  # noqa: E402
from training.model import load_policy  # noqa: E402
from training.runstate import TrainError  # noqa: E402
from training.task import file_sha256, generate_task, load_task  # noqa: E402
from unipo_build.core import runlog  # noqa: E402
from unipo_build.core.reader import validate_run  # noqa: E402
from unipo_build.core.schema import MemorisationCheck  # noqa: E402
from unipo_build.core.summary import summarize  # noqa: E402

SMOKE = {"prompts_per_step": 4, "group_size": 4, "max_new_tokens": 12, "probe_prompts": 0}


def warm_start(tiny: Path, directory: Path, sft_file: Path) -> Path:
    """The random tiny policy with an sft_meta.json naming `sft_file` as its SFT data."""
    shutil.copytree(tiny, directory)
    meta = {"kind": "unipo-sft", "task_dir": str(sft_file.parent),
            "sft_data": {"file": str(sft_file), "rows": len(load_task(sft_file)), "sha256": file_sha256(sft_file)}}
    (directory / "sft_meta.json").write_text(json.dumps(meta))
    return directory


@pytest.fixture(scope="module")
def tiny(tiny_policy):
    return tiny_policy


@pytest.fixture(scope="module")
def pools(tmp_path_factory):
    out = tmp_path_factory.mktemp("pools")
    generate_task(out, seed=11, n_train=60, n_eval=12, n_rl=30)
    return out


def _opts(model, task, out, steps=1, **extra):
    import training.rl as rl

    return rl.TrainOptions(algorithm="grpo", steps=steps, model=str(model), task=str(task), out=str(out),
                           progress=False, eval_n=8, detail_every=1, rl_overrides=dict(SMOKE), **extra)


def test_memorisation_check_agrees_within_five_points():
    """Hand-worked: 4 points apart agree, issue 20's memorised run (0.998 against 0.778) does not."""
    check = MemorisationCheck(train_reward=0.30, train_responses=128, heldout_sampled=0.26, heldout_n=1500)
    assert check.gap == pytest.approx(0.04) and check.agrees()
    assert check.as_dict()["gap_points"] == 4.0 and check.as_dict()["agree"] is True
    assert MemorisationCheck(train_reward=0.35, train_responses=8, heldout_sampled=0.30, heldout_n=8).agrees()
    assert not MemorisationCheck(train_reward=0.36, train_responses=8, heldout_sampled=0.30, heldout_n=8).agrees()
    memorised = MemorisationCheck(train_reward=0.998, train_responses=1024, heldout_sampled=0.778, heldout_n=1500)
    assert not memorised.agrees() and memorised.as_dict()["gap_points"] == 22.0


def test_memorisation_check_judges_by_the_rl_pool_measure_when_logged():
    """Hand-worked: rollout 0's 64-prompt reward may sit 6 points off by the draw alone; with the RL
    pool's 1,500-prompt sampled accuracy logged, the verdict compares that one with the held-out."""
    check = MemorisationCheck(train_reward=0.467, train_responses=1024, heldout_sampled=0.415, heldout_n=1500,
                              pool_sampled=0.43, pool_n=1500)
    assert check.measure == "rl_pool" and check.gap == pytest.approx(0.015) and check.agrees()
    d = check.as_dict()
    assert (d["gap_points"], d["rollout_gap_points"], d["measure"]) == (1.5, 5.2, "rl_pool")
    assert not MemorisationCheck(train_reward=0.40, train_responses=1024, heldout_sampled=0.40, heldout_n=1500,
                                 pool_sampled=0.46, pool_n=1500).agrees()
    old = MemorisationCheck(train_reward=0.467, train_responses=1024, heldout_sampled=0.415, heldout_n=1500)
    assert old.measure == "rollout_0" and not old.agrees()
    with pytest.raises(ValueError, match="pool_sampled and pool_n"):
        MemorisationCheck(train_reward=0.4, train_responses=8, heldout_sampled=0.4, heldout_n=8, pool_sampled=0.4)


@pytest.mark.parametrize("run, responses", [("grpo", 16 * 8), ("dapo", None)])
def test_runs_without_the_header_field_get_the_check_from_their_logs(run, responses, tmp_path):
    """A run logged before the header field (a shipped run with the field taken out): rollout 0's sampled
    accuracy (every response, DAPO's dropped groups too) against the start evaluation, read from
    steps.jsonl and evals.jsonl by hand."""
    run_dir = tmp_path / run
    shutil.copytree(Path(__file__).resolve().parents[1] / "data" / "runs" / run, run_dir)
    header = json.loads((run_dir / "header.json").read_text())
    del header["memorisation_check"]
    (run_dir / "header.json").write_text(json.dumps(header))
    first = json.loads(runlog.read_log_text(run_dir / runlog.STEPS).splitlines()[0])["metrics"]
    start = json.loads(runlog.read_log_text(run_dir / runlog.EVALS).splitlines()[0])
    assert start["phase"] == "start"
    check = summarize(run_dir, with_moments=False)["memorisation_check"]
    assert check["source"] == "logs"
    assert (check["train_reward"], check["heldout_sampled"]) == (first["sampled/accuracy"], start["accuracy_sampled"])
    assert check["train_responses"] == (responses or round(first["sampled/tokens"] / first["sampled/length"]))
    gap = first["sampled/accuracy"] - start["accuracy_sampled"]
    assert check["gap_points"] == round(100 * gap, 2) and check["agree"] is (abs(gap) <= 0.05)


@pytest.mark.slow
def test_rl_draws_the_rl_pool_and_the_header_records_rollout_0(tiny, pools, tmp_path, monkeypatch):
    import training.rl as rl

    monkeypatch.setattr(rl, "score_response", coin_flip_score)
    model = warm_start(tiny, tmp_path / "sft", pools / "train.jsonl")
    run = rl.train(_opts(model, pools, tmp_path / "run"))
    assert validate_run(run) == []
    header = runlog.read_header(run)
    assert header.task.n_train == 30 and header.task.n_eval == 8  # the RL pool; the held-out pool cut to eval_n
    rl_prompts = {r["prompt"] for r in load_task(pools / "rl.jsonl")}
    detail = runlog.read_step_detail(run, 0)
    assert detail.prompts and all(g.prompt in rl_prompts for g in detail.prompts)
    check = header.memorisation_check
    start = next(e for e in runlog.iter_evals(run) if e.phase == "start")
    first = next(runlog.iter_steps(run))
    assert check.train_responses == 4 * 4
    assert check.train_reward == pytest.approx(first.metrics["sampled/accuracy"])
    assert check.train_reward == pytest.approx(first.metrics["reward/correct"])  # grpo: no filter, all trained on
    assert (check.heldout_sampled, check.heldout_n) == (start.accuracy_sampled, start.n)
    # The RL pool's measure: the start policy (the warm start itself) sampled once on the pool's first
    # 8 prompts (as many as the held-out set here), seed + 13, recomputed here.
    policy, tokenizer = load_policy(model)
    pool = evaluate(policy, tokenizer, load_task(pools / "rl.jsonl"), n=8, greedy=False, sampled=True,
                    max_new_tokens=SMOKE["max_new_tokens"], seed=0 + 13)
    assert (check.pool_sampled, check.pool_n) == (pool["accuracy_sampled"], 8)
    summary = summarize(run, with_moments=False)
    assert summary["memorisation_check"]["agree"] is (abs(check.pool_sampled - check.heldout_sampled) <= 0.05)
    assert summary["memorisation_check"]["source"] == "header"
    text = unipo("summary", run, "--no-moments")
    assert text.returncode == 0 and "memorisation_check: RL pool sampled" in text.stdout


def test_rl_refuses_prompts_the_warm_start_trained_on(tiny, pools, tmp_path):
    """--task naming the SFT pool itself: every RL prompt was trained on; one line, no run directory."""
    import training.rl as rl

    sft = pools / "train.jsonl"
    model = warm_start(tiny, tmp_path / "sft", sft)
    rows = load_task(sft)
    out = tmp_path / "run"
    with pytest.raises(TrainError) as e:
        rl.Trainer(_opts(model, sft, out)).setup()
    message = str(e.value)
    # load_rows keeps 90% of a single file for RL prompts; all of them are in the SFT data
    kept = rows[:]
    import random
    random.Random(1234).shuffle(kept)
    distinct = len({r["prompt"] for r in kept[max(1, len(rows) // 10):]})
    assert "\n" not in message
    assert message.startswith(f"--task {sft}: {distinct} of its {distinct} RL prompts are in the warm start's SFT data")
    assert "sft_meta.json" in message and "rl.jsonl" in message
    assert not out.exists()


def test_cli_refuses_an_overlapping_task_directory_in_one_line(tiny, pools, tmp_path):
    bad = tmp_path / "task"
    shutil.copytree(pools, bad)
    rl_file = bad / "rl.jsonl"
    rl_file.write_text(rl_file.read_text() + (bad / "eval.jsonl").read_text().splitlines()[0] + "\n")
    before = {f.name: f.read_bytes() for f in bad.iterdir()}
    out = tmp_path / "run"
    result = unipo("train", "grpo", "--model", tiny, "--task", bad, "--out", out, "--steps", "1", "--no-progress",
                   "--device", "cpu")
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"unipo train: {bad / 'eval.jsonl'}: 1 prompts also in rl.jsonl")
    assert "python -m training.task" in lines[0]
    assert not out.exists() and {f.name: f.read_bytes() for f in bad.iterdir()} == before


@pytest.mark.slow
def test_version_2_task_with_its_own_warm_start_is_let_through_with_a_line(tiny, tmp_path, monkeypatch, capsys):
    """The shipped layout (no RL pool): RL reads the warm start's own train.jsonl; said on stderr, not refused."""
    import training.rl as rl

    monkeypatch.setattr(rl, "score_response", coin_flip_score)
    v2 = tmp_path / "v2"
    generate_task(v2, seed=12, n_train=40, n_eval=10, version="2")
    model = warm_start(tiny, tmp_path / "sft", v2 / "train.jsonl")
    run = rl.train(_opts(model, v2, tmp_path / "run"))
    err = capsys.readouterr().err
    assert f"--task {v2}: generator version 2 has no RL pool" in err
    assert runlog.read_header(run).memorisation_check is not None


@pytest.mark.parametrize("device", ["cpu", "auto"])
def test_suite_naming_a_cuda_preset_stops_before_writing(tmp_path, monkeypatch, device):
    import training.suite as suite

    monkeypatch.setattr(suite, "WORK", tmp_path / "work")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    path = tmp_path / "suite-gpu.yaml"
    path.write_text("preset: gpu\nrollouts: 2\nruns:\n  - {name: grpo, algorithm: grpo}\n")
    with pytest.raises(suite.SuiteError) as e:
        suite.run_suite(path, tmp_path / "runs", device=device)
    assert str(e.value).startswith(f"{path}: preset: gpu needs a CUDA GPU and ")
    assert "nothing was written" in str(e.value) and "\n" not in str(e.value)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["suite-gpu.yaml"]


def test_suite_naming_an_unknown_preset_is_named(tmp_path, monkeypatch):
    import training.suite as suite

    monkeypatch.setattr(suite, "WORK", tmp_path / "work")
    path = tmp_path / "suite.yaml"
    path.write_text("preset: huge\nrollouts: 2\nruns:\n  - {name: grpo, algorithm: grpo}\n")
    with pytest.raises(suite.SuiteError, match=r"suite\.yaml: preset: unknown preset 'huge'"):
        suite.run_suite(path, tmp_path / "runs", dry_run=True)
    assert not (tmp_path / "work").exists()


def test_the_gpu_suite_file_is_valid_and_refused_without_cuda(tmp_path, monkeypatch):
    """data/suite-gpu.yaml: the five core algorithms at three seeds, the DAPO ladder at one; on a machine
    without CUDA it stops at the preset, before writing."""
    import training.suite as suite
    from unipo_build.core.specs import load_algorithm

    path = suite.REPO / "data" / "suite-gpu.yaml"
    loaded = suite.load_suite(path)
    assert loaded.preset == "gpu"
    seeds = {}
    for run in loaded.runs:
        load_algorithm(run.algorithm)
        seeds.setdefault(run.algorithm, set()).add(run.seed)
    for algorithm in ("reinforce", "ppo", "grpo", "dapo", "dr_grpo"):
        assert seeds[algorithm] == {0, 1, 2}, algorithm
    assert set(loaded.ladders["dapo"]) <= set(seeds)
    monkeypatch.setattr(suite, "WORK", tmp_path / "work")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(suite.SuiteError, match="preset: gpu needs a CUDA GPU"):
        suite.run_suite(path, tmp_path / "runs")
    assert not (tmp_path / "work").exists() and not (tmp_path / "runs").exists()


def test_warm_start_overlap_finds_a_project_relative_sft_file_and_knows_the_version_2_layout(tmp_path, monkeypatch):
    """sft_meta.json names data/tasks/train.jsonl relative to the project; found from any working directory.
    RL prompts read from that very file of a version-2 task directory (no RL pool) are the legacy case;
    the same prompts from another file, or from a version-3 directory's train.jsonl, are not."""
    from training.pools import warm_start_overlap

    project = tmp_path / "project"
    tasks = project / "data" / "tasks"
    generate_task(tasks, seed=12, n_train=60, n_eval=10, version="2")
    (tmp_path / "ckpt").mkdir()
    (tmp_path / "ckpt" / "sft_meta.json").write_text(json.dumps({"sft_data": {"file": "data/tasks/train.jsonl"}}))
    monkeypatch.chdir(tmp_path)
    rows = load_task(tasks / "train.jsonl")
    prompts = [r["prompt"] for r in rows[:40]] + ["A prompt no task holds?"]
    distinct = len(set(prompts))
    found = warm_start_overlap(tmp_path / "ckpt", prompts, project, tasks / "train.jsonl")
    assert found == (project / "data" / "tasks" / "train.jsonl", distinct - 1, distinct, True)
    assert warm_start_overlap(tmp_path / "ckpt", prompts, project, tmp_path / "mine.jsonl")[3] is False
    assert warm_start_overlap(tmp_path / "ckpt", ["A prompt no task holds?"], project) is None
    assert warm_start_overlap(tmp_path / "nothing", prompts, project) is None  # no sft_meta.json: nothing to compare

    v3 = tmp_path / "v3" / "data" / "tasks"
    generate_task(v3, seed=12, n_train=60, n_eval=10)
    v3_prompts = [r["prompt"] for r in load_task(v3 / "train.jsonl")[:40]]
    assert warm_start_overlap(tmp_path / "ckpt", v3_prompts, v3.parents[1], v3 / "train.jsonl")[3] is False


def test_time_limit_counts_the_next_rollout_and_the_end_evaluation():
    """Hand-worked: 100 s allowed, rollouts of 10 s, an evaluation of 20 s, a margin of 1.25: at
    60 s another fits (60 + 1.25 x 30 = 97.5), at 63 s it does not (100.5); the first rollout always."""
    from training.run_info import TimeLimit

    limit = TimeLimit(100, started=0.0)
    assert limit.allows_another(now=99.0)  # nothing measured yet: the first rollout is always trained
    limit.rollout_s, limit.eval_s = [8.0, 12.0], 20.0
    assert limit.allows_another(now=60.0) and not limit.allows_another(now=63.0)
    assert TimeLimit(None, 0.0).allows_another(now=1e9)
    assert "Stopped after 2 of the 24 rollouts" in limit.note(2, 24)


@pytest.mark.slow
def test_a_run_past_its_time_limit_finishes_with_what_it_trained(tiny, pools, tmp_path, monkeypatch):
    import training.rl as rl

    monkeypatch.setattr(rl, "score_response", coin_flip_score)
    model = warm_start(tiny, tmp_path / "sft", pools / "train.jsonl")
    run = rl.train(_opts(model, pools, tmp_path / "run", steps=3, time_limit=0.001))
    assert validate_run(run) == []
    header = runlog.read_header(run)
    assert header.finished_at is not None and "Stopped after 1 of the 3 rollouts" in header.notes
    assert (header.hyperparameters.get("steps"), header.hyperparameters.get("steps_asked")) == (1, 3)
    assert {r.rollout for r in runlog.iter_steps(run)} == {0}
    assert [e.phase for e in runlog.iter_evals(run)] == ["start", "end"]


@pytest.mark.slow
def test_a_non_finite_gradient_skips_the_step_and_three_in_a_row_stop_the_run(tiny, pools, tmp_path, monkeypatch):
    """The H200 set lost one run to a NaN gradient norm: now the step is skipped (the weights stay as
    they were), logged (grad_norm null, update/skipped 1), and only three in a row stop the run, in
    one line naming the run, the step and the field."""
    import training.rl as rl

    monkeypatch.setattr(rl, "score_response", coin_flip_score)
    model = warm_start(tiny, tmp_path / "sft", pools / "train.jsonl")
    real, calls = torch.nn.utils.clip_grad_norm_, []

    def nan_on(which):
        def clip(params, max_norm, *a, **k):
            calls.append(1)
            norm = real(params, max_norm, *a, **k)
            return torch.full_like(norm, float("nan")) if len(calls) in which else norm
        return clip

    monkeypatch.setattr(torch.nn.utils, "clip_grad_norm_", nan_on({2}))
    run = rl.train(_opts(model, pools, tmp_path / "run", steps=2))
    steps = list(runlog.iter_steps(run))
    assert [s.metrics["update/skipped"] for s in steps] == [0.0, 1.0, 0.0, 0.0]
    assert steps[1].metrics["grad_norm"] is None and steps[0].metrics["grad_norm"] > 0
    assert validate_run(run) == []

    calls.clear()
    monkeypatch.setattr(torch.nn.utils, "clip_grad_norm_", nan_on({1, 2, 3}))
    trainer = rl.Trainer(_opts(model, pools, tmp_path / "stops", steps=2))
    trainer.setup()
    before = [p.detach().clone() for p in trainer.policy.parameters()]
    with pytest.raises(TrainError, match=r"stops: step 2: grad_norm: not finite in 3 updates in a row"):
        trainer.run_rollout()
        trainer.run_rollout()
    assert all(torch.equal(a, b) for a, b in zip(before, trainer.policy.parameters()))
