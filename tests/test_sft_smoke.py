"""SFT: a few steps on a small task into tmp_path; the checkpoint reloads and evaluates; the stop rule
stops and is recorded; a task whose pools overlap is refused before anything is written."""

import json
import math
from dataclasses import replace

import pytest
import torch

from training.evaluate import evaluate
from training.model import load_policy
from training.presets import GPU, TINY, SFTPreset, get_preset, with_overrides
from training.sft import IGNORE, encode_examples, lr_at, make_batch, run_sft
from training.task import TaskFileError, file_sha256, generate_task, load_task
from training.tokenizer import task_corpus, train_tokenizer


def test_lr_schedule_warmup_then_cosine_to_ten_percent():
    cfg = SFTPreset(lr=1.0, warmup_steps=10, min_lr_ratio=0.1)
    assert lr_at(0, cfg, 110) == pytest.approx(0.1)
    assert lr_at(9, cfg, 110) == pytest.approx(1.0)
    assert lr_at(60, cfg, 110) == pytest.approx(0.55)
    assert lr_at(110, cfg, 110) == pytest.approx(0.1) and lr_at(500, cfg, 110) == pytest.approx(0.1)
    lrs = [lr_at(s, cfg, 110) for s in range(10, 111)]
    assert all(a >= b for a, b in zip(lrs, lrs[1:]))


def test_loss_is_on_the_completion_only(tmp_path):
    generate_task(tmp_path, seed=1, n_train=30, n_eval=15)
    rows = load_task(tmp_path / "train.jsonl")
    tok = train_tokenizer(task_corpus(rows))
    examples = encode_examples(rows[:4], tok)
    ids, mask, labels = make_batch(examples, tok.pad_token_id)
    for i, (seq, n_prompt) in enumerate(examples):
        assert (labels[i, :n_prompt] == IGNORE).all() and (labels[i, len(seq):] == IGNORE).all()
        target = labels[i, n_prompt:len(seq)].tolist()
        assert target[-1] == tok.eos_token_id
        assert tok.decode(target, skip_special_tokens=True) == rows[i]["solution"]
        assert mask[i].sum().item() == len(seq)


@pytest.mark.slow
def test_sft_smoke_checkpoint_reloads(tmp_path):
    task_dir = tmp_path / "task"
    generate_task(task_dir, seed=2, n_train=200, n_eval=24, version="2")
    preset = with_overrides(TINY, sft={"batch_size": 16, "eval_every": 3, "eval_n": 8, "eval_batch_size": 24,
                                       "max_new_tokens": 8, "warmup_steps": 2, "stop_greedy_accuracy": None})
    out = tmp_path / "ckpt"
    meta = run_sft(out, preset=preset, seed=0, steps=6, task_dir=task_dir, device="cpu", progress=False)
    for name in ("model.safetensors", "config.json", "tokenizer.json", "tokenizer_config.json", "sft_meta.json"):
        assert (out / name).is_file(), name
    saved = json.loads((out / "sft_meta.json").read_text())
    assert saved == json.loads(json.dumps(meta))
    assert meta["steps"] == 6 and meta["seed"] == 0 and meta["preset"] == "tiny"
    assert [e["step"] for e in meta["eval_curve"]] == [3, 6]
    assert meta["final_eval"]["n"] == 24 and meta["wall_seconds"] > 0 and math.isfinite(meta["eval_curve"][-1]["loss"])
    assert meta["preset_config"]["sft"]["batch_size"] == 16
    # No target: the calibrated step count; a version-2 task has no RL pool, so the held-out set's rows
    assert meta["stop_rule"]["rule"] == "train the calibrated 6 steps" and not meta["stopped_early"]
    assert meta["stop_rule"]["eval_on"] == "eval.jsonl rows 1-8" and "no RL pool" in meta["stop_rule"]["why"]
    assert meta["sft_data"] == {"file": str(task_dir / "train.jsonl"), "rows": 200,
                                "sha256": file_sha256(task_dir / "train.jsonl")}
    assert meta["task_version"] == "2"
    model, tok = load_policy(out)
    assert model.config.vocab_size == len(tok) == meta["vocab_size"]
    ev = evaluate(model, tok, load_task(task_dir / "eval.jsonl"), n=4, max_new_tokens=4)
    assert ev["n"] == 4


def test_training_reduces_loss(tmp_path):
    """Thirty steps on a fixed batch must start fitting it (catches a broken label shift or mask)."""
    from training.model import build_model
    from training.sft import completion_loss

    generate_task(tmp_path, seed=1, n_train=30, n_eval=15)
    rows = load_task(tmp_path / "train.jsonl")
    tok = train_tokenizer(task_corpus(rows))
    model = build_model("tiny", len(tok), seed=0)
    ids, mask, labels = make_batch(encode_examples(rows[:8], tok), tok.pad_token_id)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    losses = []
    for _ in range(30):
        loss = completion_loss(model, ids, mask, labels)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < 0.5 * losses[0]


def test_presets():
    assert get_preset("tiny") is TINY
    gpu = get_preset("gpu")
    assert (gpu.model.hidden_size, gpu.model.num_layers, gpu.model.num_heads, gpu.model.intermediate_size) == (512, 8, 8, 2048)
    rl = TINY.rl
    assert (rl.prompts_per_step, rl.group_size, rl.lr, rl.minibatches, rl.epochs, rl.temperature) == (16, 8, 1e-4, 1, 2, 1.0)
    assert (TINY.sft.batch_size, TINY.sft.lr, TINY.sft.warmup_steps, TINY.sft.min_lr_ratio) == (64, 1.5e-3, 100, 0.1)
    # The stop rule's targets: tiny where its shipped warm start sits, gpu in the 25-45% band
    assert TINY.sft.stop_greedy_accuracy == 0.29 and 0.25 <= gpu.sft.stop_greedy_accuracy <= 0.45
    assert (TINY.task_level, TINY.task_dir, TINY.needs_cuda) == ("tiny", "data/tasks", False)
    assert (gpu.task_level, gpu.task_dir, gpu.needs_cuda) == ("gpu", "data/tasks-gpu", True)
    with pytest.raises(ValueError, match="unknown preset"):
        get_preset("huge")


@pytest.mark.parametrize("preset, detailed", [
    (TINY, {0, 25, 50, 75, 100, 125, 150, 175, 200, 225, 250, 275, 299}),  # every 25th and the last (300 rollouts)
    (GPU, {*range(0, 500, 10), 499}),  # every 10th and the last (500 rollouts)
])
def test_token_detail_on_the_presets_rollouts(preset, detailed):
    """The rule the trainer writes token files by (Trainer._wants_detail, every update of each
    rollout it names): rollout 0, every detail_every-th and the last; detail_every 0 logs none."""
    from types import SimpleNamespace

    from training.rl import Trainer

    def wanted(rl):
        return {r for r in range(rl.steps) if Trainer._wants_detail(SimpleNamespace(rl=rl, rollout=r))}

    assert wanted(preset.rl) == detailed
    assert wanted(replace(preset.rl, steps=7, detail_every=3)) == {0, 3, 6}
    assert wanted(replace(preset.rl, steps=8, detail_every=3)) == {0, 3, 6, 7}
    assert wanted(replace(preset.rl, detail_every=0)) == set()


def micro(base, **sft):
    """The preset's shape (names, task level, schedule) with a model small enough for a CPU test."""
    return with_overrides(base, model={"hidden_size": 32, "num_layers": 2, "num_heads": 2, "intermediate_size": 64},
                          sft={"batch_size": 8, "eval_batch_size": 16, "max_new_tokens": 8, "warmup_steps": 2, **sft})


@pytest.mark.slow
@pytest.mark.parametrize("target, stops_at", [(0.0, 2), (1.01, 6)])
def test_stop_rule_stops_at_the_target_on_the_rl_pool_and_is_recorded(tmp_path, target, stops_at):
    """A micro preset of the gpu shape on its own task level: the periodic eval scores the RL pool's first
    rows; a target of 0 is reached at the first eval (step 2), one above 1 never (the whole 6 steps)."""
    task_dir = tmp_path / "task"
    generate_task(task_dir, seed=4, n_train=64, n_eval=10, n_rl=20, level=GPU.task_level)
    preset = micro(GPU, eval_every=2, eval_n=6, stop_greedy_accuracy=target)
    meta = run_sft(tmp_path / "ckpt", preset=preset, seed=0, steps=6, task_dir=task_dir, device="cpu", progress=False)
    assert meta["preset"] == "gpu" and meta["task_meta"]["level"] == "gpu"
    assert meta["steps"] == meta["stopped_at_step"] == stops_at
    assert meta["stopped_early"] is (stops_at < 6)
    assert [e["step"] for e in meta["eval_curve"]] == list(range(2, stops_at + 1, 2))
    assert meta["stop_accuracy_greedy"] == meta["eval_curve"][-1]["accuracy_greedy"]
    rule = meta["stop_rule"]
    assert rule["target_greedy_accuracy"] == target and rule["max_steps"] == 6 and rule["eval_every"] == 2
    assert rule["rule"] == f"stop at the first periodic eval with greedy accuracy >= {target}, else at step 6"
    assert rule["eval_on"] == "rl.jsonl rows 1-6" and "never trained on" in rule["why"]
    assert meta["sft_data"]["file"] == str(task_dir / "train.jsonl") and meta["sft_data"]["rows"] == 64
    assert meta["final_eval"]["n"] == 10  # the held-out pool, whole
    assert json.loads((tmp_path / "ckpt" / "sft_meta.json").read_text())["stopped_at_step"] == stops_at


def test_sft_refuses_overlapping_pools_before_writing(tmp_path):
    task_dir = tmp_path / "task"
    generate_task(task_dir, seed=5, n_train=20, n_eval=8, n_rl=10)
    heldout = task_dir / "eval.jsonl"
    heldout.write_text(heldout.read_text() + (task_dir / "train.jsonl").read_text().splitlines()[0] + "\n")
    out = tmp_path / "ckpt"
    with pytest.raises(TaskFileError) as e:
        run_sft(out, preset=micro(TINY), steps=2, task_dir=task_dir, device="cpu", progress=False)
    assert str(e.value).startswith(f"{heldout}: 1 prompts also in train.jsonl (sft pool)")
    assert "\n" not in str(e.value) and not out.exists()
