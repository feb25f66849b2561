"""The converter on hand-made shards: the join, the last update, hand-worked weights, and bad input."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from unipo_build.core import runlog
from unipo_build.core.reader import validate_run
from unipo_build.trainers import import_log
from unipo_build.trainers.tfevents import encode_event, encode_record
from unipo_build.trainers.openrlhf.command import build_command, write_manifest
from unipo_build.trainers.openrlhf.tap import SHARD_FORMAT, sample_key
from unipo_build.core.recompute import check_step


def _tb(path: Path, steps: int = 1) -> Path:
    path.mkdir(parents=True)
    t0 = 1_700_000_000.0
    events = [encode_event(t0, 0, file_version="brain.Event:2")]
    events += [encode_event(t0 + g, g, {"train/reward": 0.5, "train/policy_loss": 0.25}) for g in range(1, steps + 1)]
    events.append(encode_event(t0 + steps + 1, steps, {"eval/eval_default_pass1": 0.625, "eval/eval_num_samples": 8.0,
                                                       "eval/eval_response_length_mean": 3.0}))
    (path / "events.out.tfevents.1.h.1").write_bytes(b"".join(encode_record(e) for e in events))
    return path


def _lines(path: Path, role: str, records: list[dict], tail: str = "") -> None:
    head = {"kind": "shard", "format": SHARD_FORMAT, "role": role, "host": "h", "pid": 1}
    path.write_text("\n".join(json.dumps(r) for r in [head, *records]) + "\n" + tail, encoding="utf-8")


def _sample(index: int, group: int, prompt_ids: list[int], ids: list[int], reward: float, adv: float) -> dict:
    return {"kind": "sample", "rollout": 0, "index": index, "group": group, "key": sample_key(prompt_ids + ids),
            "prompt": f"prompt {group}", "label": "7", "ids": ids, "text": [f"t{i}" for i in ids],
            "response": " ".join(f"t{i}" for i in ids), "reward": reward, "score": reward, "length": len(ids),
            "truncated": False, "old_logp": [-1.0] * len(ids), "ref_logp": None, "kl": None, "value": None,
            "advantage": [adv] * len(ids), "return": [adv] * len(ids)}


def _update(sample: dict, update: int, logp: list[float]) -> dict:
    n = len(sample["ids"])
    ratio = [math.exp(lp + 1.0) for lp in logp]
    adv = sample["advantage"]
    clip = [1 if a > 0 and r > 1.28 else -1 if a < 0 and r < 0.8 else 0 for r, a in zip(ratio, adv)]
    return {"kind": "update", "rank": 0, "ppo_call": 0, "update": update, "key": sample["key"],
            "prompt": sample["prompt"], "logp": logp, "old_logp": [-1.0] * n, "advantage": adv, "ratio": ratio,
            "clip": clip, "entropy": [0.5] * n, "loss_type": "ppo"}


@pytest.fixture
def tap_dir(tmp_path):
    """DAPO (token-mean, clip 0.2/0.28): two groups of two; group 1 has no update record for response 1."""
    tap = tmp_path / "tap"
    write_manifest(build_command("dapo", tap_dir=str(tap)), tap)
    s = [_sample(0, 0, [1, 2], [5, 6], 1.0, 0.7071), _sample(1, 0, [1, 2], [5, 7, 8], 0.0, -0.7071),
         _sample(2, 1, [3], [9], 1.0, 0.7071), _sample(3, 1, [3], [9, 9], 0.0, -0.7071)]
    rollout = {"kind": "rollout", "rollout": 0, "group_size": 2, "estimator": "group_norm", "kl_coef": 0.0,
               "groups": [{"group": g, "prompt": f"prompt {g}", "label": "7", "detailed": True,
                           "samples": [{"index": x["index"], "reward": x["reward"], "score": x["score"],
                                        "length": x["length"], "truncated": False} for x in s if x["group"] == g]}
                          for g in (0, 1)]}
    _lines(tap / "rollout-h-1.jsonl", "rollout", [*s, rollout])
    updates = [_update(s[0], 0, [-1.0, -1.0]), _update(s[0], 1, [-0.5, -1.0]),  # the later update wins
               _update(s[1], 0, [-1.0, -1.0, -1.5]), _update(s[2], 0, [-1.0])]
    _lines(tap / "policy-rank0-h-2.jsonl", "policy-rank0", updates, tail='{"kind": "update", "ra')
    return tap


def test_join_last_update_and_hand_worked_weights(tap_dir, tmp_path):
    out = tmp_path / "run"
    header = import_log("openrlhf", _tb(tmp_path / "tb"), out, tap=tap_dir)
    assert validate_run(out) == []
    assert header.algorithm == "dapo" and header.model_extra["openrlhf"]["gaps"] == []
    # from the manifest: the run's name, model, prompts and reward file
    assert header.run_id == "dapo-openrlhf-s0" and header.model.name == "work/sft-tiny"
    assert header.task.source == "data/tasks/train.jsonl" and "training/reward.py" in header.reward.description
    assert "cut off" in header.notes and "logp = old_logp (ratio 1)" in header.notes
    detail = runlog.read_json_model(out / "tokens" / "step_000000.json", runlog.StepDetail)
    (r0, r1), (r2, r3) = [g.responses for g in detail.prompts]
    assert detail.objective == pytest.approx(sum(r.contribution for r in (r0, r1, r2, r3)))
    assert check_step(header.algorithm_config, detail) == []  # the site's own recomputation agrees
    (step,) = list(runlog.iter_steps(out))
    assert step.metrics["objective"] == -0.25  # TensorBoard's, over every group and update
    # response 0: last update logp [-0.5, -1.0], old -1: ratio [e^0.5, 1]; A > 0 and e^0.5 = 1.65 > 1.28: clipped high
    assert r0.tokens.ratio == pytest.approx([math.exp(0.5), 1.0])
    assert list(r0.tokens.clip) == [1, 0] and r0.tokens.model_extra["engine_clip"] == [1, 0]
    # token-mean over the step's 2 + 3 + 1 + 2 = 8 logged tokens: every weight 1/8
    assert all(w == pytest.approx(1 / 8) for r in (r0, r1, r2, r3) for w in r.tokens.weight)
    # objective = min(rho A, clip(rho) A): 1.28 x 0.7071 on the clipped token, 0.7071 on the other
    assert r0.tokens.objective == pytest.approx([1.28 * 0.7071, 0.7071])
    assert r0.contribution == pytest.approx((1.28 * 0.7071 + 0.7071) / 8)
    # response 3 was never trained on in the tap: its ratio is 1 and it has no engine arrays
    assert r3.tokens.ratio == [1.0, 1.0] and "engine_ratio" not in r3.tokens.model_extra
    assert [g.n_correct for g in detail.groups] == [1, 1] and r1.correct is False
    (ev,) = list(runlog.iter_evals(out))
    assert ev.accuracy_sampled == 0.625 and ev.n == 8


@pytest.mark.parametrize("line, field", [
    ('{"kind": "sample", "rollout": 0, "ids": [1, 2], "text": ["a"], "old_logp": [0, 0], "advantage": [0, 0]}',
     "text"),
    ('{"kind": "sample", "rollout": -1}', "rollout"),
    ('{"kind": "update", "ppo_call": 0, "update": 0, "logp": [0], "old_logp": [0], "advantage": [NaN], '
     '"ratio": [1], "clip": [0], "key": "k"}', "advantage"),
    ('{"kind": "telemetry"}', "kind"),
])
def test_a_bad_shard_line_is_named_and_nothing_is_written(tap_dir, tmp_path, line, field):
    shard = tap_dir / "rollout-h-1.jsonl"
    lines = shard.read_text().splitlines()
    lines.insert(2, line)
    shard.write_text("\n".join(lines) + "\n")
    out = tmp_path / "run"
    with pytest.raises(runlog.LogError) as err:
        import_log("openrlhf", _tb(tmp_path / "tb"), out, tap=tap_dir)
    message = str(err.value)
    assert message.startswith(f"{shard} (line 3") and f" {field}:" in message
    assert not out.exists()


def test_a_tap_dir_without_shards_says_how_to_make_one(tmp_path):
    (tmp_path / "tap").mkdir()
    with pytest.raises(runlog.LogError, match="no rollout-.*shard.*unipo train --engine openrlhf"):
        import_log("openrlhf", _tb(tmp_path / "tb"), tmp_path / "run", tap=tmp_path / "tap")


def test_a_non_finite_optional_array_is_named(tap_dir, tmp_path):
    shard = tap_dir / "rollout-h-1.jsonl"
    lines = shard.read_text().splitlines()
    record = json.loads(lines[1])
    record["ref_logp"] = [-1.0, None]  # the tap writes null for a non-finite value
    lines[1] = json.dumps(record)
    shard.write_text("\n".join(lines) + "\n")
    with pytest.raises(runlog.LogError, match=r"rollout-h-1\.jsonl \(line 2, step 0\): ref_logp: element 1 is None"):
        import_log("openrlhf", _tb(tmp_path / "tb"), tmp_path / "run", tap=tap_dir)
