"""Smoke runs of every algorithm with the real trainer, and the consistency check.

Each run is a couple of rollouts of a random tiny policy. What is checked is the
contract, not learning: the log validates, every step is there once, and every logged
token objective and step objective is reproduced by the site's numpy math to 1e-5.
"""

from __future__ import annotations

import json
import zlib

import pytest

torch = pytest.importorskip("torch")

from training_fixtures import coin_flip_score  # noqa: E402
from unipo_build.core import runlog  # noqa: E402
from unipo_build.core.reader import validate_run  # noqa: E402
from unipo_build.core.recompute import check_step  # noqa: E402
from unipo_build.core.specs import load_specs  # noqa: E402
from unipo_build.core.summary import summarize  # noqa: E402

pytestmark = pytest.mark.slow

SMOKE = {"prompts_per_step": 4, "group_size": 4, "max_new_tokens": 12}


@pytest.fixture(scope="module")
def tiny_checkpoint(tiny_policy):
    return tiny_policy


def _train(algorithm, checkpoint, out, monkeypatch, steps=2, score=coin_flip_score, **extra):
    import training.rl as rl

    monkeypatch.setattr(rl, "score_response", score)
    opts = rl.TrainOptions(algorithm=algorithm, steps=steps, model=str(checkpoint), out=str(out), progress=False,
                           eval_n=8, detail_every=1, rl_overrides=dict(SMOKE), **extra)
    return rl.train(opts)


@pytest.fixture(scope="module")
def smoke_run(tiny_checkpoint, tmp_path_factory):
    """An algorithm's two-rollout smoke run (coin_flip_score), trained once for every test here that reads it."""
    made = {}

    def run(algorithm: str):
        if algorithm not in made:
            with pytest.MonkeyPatch.context() as patch:
                out = tmp_path_factory.mktemp("smoke") / algorithm
                made[algorithm] = _train(algorithm, tiny_checkpoint, out, patch)
        return made[algorithm]

    return run


@pytest.mark.specs
@pytest.mark.parametrize("algorithm", sorted(load_specs()))
def test_every_algorithm_trains_logs_and_recomputes(algorithm, smoke_run):
    run = smoke_run(algorithm)
    assert validate_run(run, known_algorithms=set(load_specs())) == []
    header = runlog.read_header(run)
    assert header.algorithm == algorithm
    assert header.algorithm_config.id == algorithm
    steps = list(runlog.iter_steps(run))
    per_rollout = header.steps_per_rollout
    assert len(steps) == 2 * per_rollout
    assert [s.first_in_rollout for s in steps[:per_rollout]] == [True] + [False] * (per_rollout - 1)
    evals = list(runlog.iter_evals(run))
    assert [e.phase for e in evals] == ["start", "end"]
    token_steps = runlog.token_steps(run)
    assert token_steps == [s.step for s in steps]
    problems = []
    for step in token_steps:
        detail = runlog.read_step_detail(run, step)
        problems += check_step(header.algorithm_config, detail)
        # the step objective in the token file is the one in the metrics
        assert detail.objective == pytest.approx(steps[step].metrics["objective"], rel=1e-6, abs=1e-9)
    assert problems == []


def test_first_update_of_a_rollout_is_on_policy(tiny_checkpoint, tmp_path, monkeypatch):
    run = _train("grpo", tiny_checkpoint, tmp_path / "grpo", monkeypatch, steps=1)
    first = runlog.read_step_detail(run, 0)
    ratios = [r for g in first.prompts for resp in g.responses for r in resp.tokens.ratio]
    assert ratios and max(abs(r - 1.0) for r in ratios) < 1e-4
    later = [runlog.read_step_detail(run, s) for s in runlog.token_steps(run)[1:]]
    moved = [abs(r - 1.0) for d in later for g in d.prompts for resp in g.responses for r in resp.tokens.ratio]
    assert max(moved) > 1e-4  # later updates of the rollout are off-policy


def every_third_answer_always_right(text: str, label) -> dict:
    """coin_flip_score, except that every answer whose label hashes to 0 mod 3 is right: about a third
    of the prompt groups are all right, which DAPO's filter must drop, on every rollout."""
    if zlib.crc32(str(label).encode()) % 3 == 0:
        return {"correct": 1.0, "format": 0.0, "parsed_answer": None}
    return coin_flip_score(text, label)


def test_dynamic_sampling_drops_and_refills(tiny_checkpoint, tmp_path, monkeypatch):
    """DAPO's filter drops the groups whose answers are all right or all wrong, trains on none of them
    (they are logged without tokens), and samples further prompts until the batch is full again."""
    run = _train("dapo", tiny_checkpoint, tmp_path / "dapo", monkeypatch, steps=2,
                 score=every_third_answer_always_right)
    steps = list(runlog.iter_steps(run))
    assert steps, "DAPO made no update"
    firsts = [s for s in steps if s.first_in_rollout]
    assert len(firsts) == 2  # an update in each rollout: the refill filled the batch
    for record in firsts:  # each rollout dropped groups and sampled again to refill
        assert 0 < record.metrics["sampling/pass_rate"] < 1
        assert record.metrics["sampling/rounds"] >= 2
    details = [runlog.read_step_detail(run, s) for s in runlog.token_steps(run)]
    dropped = [g for d in details for g in d.prompts if g.filtered]
    assert dropped, "no dropped group was logged"
    for group in dropped:
        correct = [r.correct for r in group.responses]
        assert all(correct) or not any(correct)
        assert all(r.tokens is None for r in group.responses)
    kept = [g for d in details for g in d.prompts if not g.filtered]
    assert len({g.prompt for g in kept}) >= SMOKE["prompts_per_step"]
    for group in kept:
        correct = [r.correct for r in group.responses]
        assert any(correct) and not all(correct)


def test_summary_reports_the_contract_fields(smoke_run):
    run = smoke_run("grpo")  # the smoke test's GRPO run: two rollouts, coin_flip_score
    summary = summarize(run)
    for key in ("algorithm", "steps", "reward_mean_first_10pct", "reward_mean_last_10pct", "moments"):
        assert key in summary
    assert summary["algorithm"] == "grpo"
    assert set(summary["moments"]) == {"all_correct_group", "all_wrong_group", "clipped_high", "clipped_low",
                                       "longest_wrong", "max_kl_step", "filtered_group", "ratio_max", "ratio_min",
                                       "mixed_group", "shared_prefix_group"}
    json.dumps(summary)  # serialisable as `unipo summary --json` prints it


def test_a_readers_own_task_file_trains(tiny_checkpoint, tmp_path, monkeypatch):
    """--task with one local JSONL of prompt/answer pairs (say, a reader's own MATH copy)."""
    rows = [{"prompt": f"What is {a} plus {b}?", "answer": str(a + b), "source": "mine"}
            for a in range(10) for b in range(5)]
    task = tmp_path / "my_task.jsonl"
    task.write_text("".join(json.dumps(r) + "\n" for r in rows))
    run = _train("grpo", tiny_checkpoint, tmp_path / "own-task", monkeypatch, steps=1, task=str(task))
    header = runlog.read_header(run)
    assert header.task.source == ".../my_task.jsonl"  # outside the project: its name, not this machine's path
    assert header.task.n_train + header.task.n_eval == len(rows)  # split 90/10, nothing lost
    prompts = {r["prompt"] for r in rows}
    detail = runlog.read_step_detail(run, runlog.token_steps(run)[0])
    assert detail.prompts and all(g.prompt in prompts for g in detail.prompts)
