"""Supervised warm start: teach a fresh model the worked-solution format, then stop early.

RL with a 0/1 correctness reward needs a policy that is already right sometimes: a group whose G
responses all score 0 has zero advantage everywhere and teaches nothing. So we first fine-tune on
worked solutions (next-token cross-entropy on the completion only: the prompt is given, not learned)
and stop while the model is still often wrong.

The stop rule (recorded in sft_meta.json as ``stop_rule``, with the step it stopped at and the
accuracy reached): every ``eval_every`` steps a greedy eval scores the first ``eval_n`` prompts of the
task's RL pool (rl.jsonl; version-2 tasks have none and use the held-out set's first rows); training
stops at the first eval whose greedy accuracy reaches the preset's ``stop_greedy_accuracy``, or at
``max_steps`` (the calibrated step count, also the cosine schedule's length). Why the RL pool: it is
the distribution RL draws from, never trained on here, so the target is the accuracy RL starts at,
and the held-out set takes no part in choosing the checkpoint, so its start accuracy stays an
unbiased estimate. SFT trains on the SFT pool (train.jsonl) only, and refuses a task directory
whose pools share a prompt (training.task.check_pools).

Optimizer: AdamW (Loshchilov & Hutter 2019), linear warmup then cosine decay to 10% of the peak lr
(SGDR's cosine, Loshchilov & Hutter 2017, without restarts). Same code on CPU (fp32) and on one CUDA
GPU (bf16 autocast).

Output: a normal transformers checkpoint (model.safetensors, config.json, generation_config.json,
tokenizer files) plus sft_meta.json (steps, seed, the stop rule and where it stopped, eval curve,
final accuracy on the full held-out set, the SFT data file and its sha256 (RL's check that its
prompts are not in it), wall time, preset). CLI: ``python -m training.sft --out work/sft-tiny --preset tiny``.
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import time
from dataclasses import asdict
from pathlib import Path

import torch
import torch.nn.functional as F

from unipo_build.core.file_names import POOL_FILES, SFT_META, TASK_META
from unipo_build.core.numbers import fmt_num, plain_fixed, plain_num, plain_sci

from . import PROJECT
from training.evaluate import evaluate
from training.model import (autocast_for, build_model, count_parameters, resolve_device, set_threads,
                            show_progress_bars, thread_count)
from training.presets import Preset, SFTPreset, get_preset
from training.task import check_pools, file_sha256, load_task, task_version
from training.tokenizer import save_tokenizer, task_corpus, train_tokenizer

IGNORE = -100

REPO = PROJECT  # the project root (training/__init__.py)


def stored_path(path: Path) -> str:
    """A path for sft_meta.json: relative to the project when inside it (a shipped warm start names no
    path of the machine that trained it), else absolute, so that RL can still find the file."""
    resolved = Path(path).resolve()
    return str(resolved.relative_to(REPO)) if resolved.is_relative_to(REPO) else str(resolved)


def encode_examples(rows: list[dict], tokenizer) -> list[tuple[list[int], int]]:
    """(prompt + completion + <eos> token ids, prompt length) per row; completion = worked solution."""
    missing = [r.get("id", "?") for r in rows if not r.get("solution")]
    if missing:
        raise ValueError(f"SFT needs a worked 'solution' on every row; missing on {len(missing)} rows, e.g. {missing[:3]}")
    examples = []
    for r in rows:
        prompt = tokenizer(r["prompt"], add_special_tokens=False)["input_ids"]
        completion = tokenizer(r["solution"], add_special_tokens=False)["input_ids"]
        examples.append((prompt + completion + [tokenizer.eos_token_id], len(prompt)))
    return examples


def make_batch(examples: list[tuple[list[int], int]], pad_id: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Right-padded (input_ids, attention_mask, labels); labels are IGNORE on the prompt and padding."""
    width = max(len(ids) for ids, _ in examples)
    input_ids = torch.full((len(examples), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(examples), width), dtype=torch.long)
    labels = torch.full((len(examples), width), IGNORE, dtype=torch.long)
    for i, (ids, n_prompt) in enumerate(examples):
        input_ids[i, :len(ids)] = torch.tensor(ids)
        mask[i, :len(ids)] = 1
        labels[i, n_prompt:len(ids)] = torch.tensor(ids[n_prompt:])
    return input_ids, mask, labels


def batches(lengths: list[int], batch_size: int, generator: torch.Generator, pool: int = 32):
    """Endless minibatch indices: a fresh random permutation per epoch, length-bucketed.

    Worked solutions range from 10 to 124 tokens, and a batch is padded to its longest row, so
    random batches would compute mostly padding. Each run of ``pool`` batches' worth of the
    permutation is sorted by length and cut into batches, and those batches are shuffled: every
    example is still seen once per epoch, in batches of similar lengths.
    """
    n = len(lengths)
    while True:
        perm = torch.randperm(n, generator=generator).tolist()
        usable = n - n % batch_size
        chunk = batch_size * pool
        for start in range(0, usable, chunk):
            part = sorted(perm[start:min(start + chunk, usable)], key=lambda i: lengths[i])
            cut = [part[i:i + batch_size] for i in range(0, len(part) - batch_size + 1, batch_size)]
            for j in torch.randperm(len(cut), generator=generator).tolist():
                yield cut[j]


def lr_at(step: int, cfg: SFTPreset, total: int) -> float:
    """Linear warmup for cfg.warmup_steps, then cosine from lr down to min_lr_ratio * lr at `total`."""
    if step < cfg.warmup_steps:
        return cfg.lr * (step + 1) / cfg.warmup_steps
    progress = min(1.0, (step - cfg.warmup_steps) / max(1, total - cfg.warmup_steps))
    return cfg.lr * (cfg.min_lr_ratio + (1 - cfg.min_lr_ratio) * 0.5 * (1 + math.cos(math.pi * progress)))


def completion_loss(model, input_ids, mask, labels) -> torch.Tensor:
    """Mean next-token cross-entropy over completion tokens (token mean over the batch)."""
    with autocast_for(input_ids.device):
        logits = model(input_ids=input_ids, attention_mask=mask).logits
    return F.cross_entropy(logits[:, :-1].float().flatten(0, 1), labels[:, 1:].flatten(), ignore_index=IGNORE)


def save_checkpoint(model, tokenizer, out_dir: Path, meta: dict) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out_dir)
    save_tokenizer(tokenizer, out_dir)
    (out_dir / SFT_META).write_text(json.dumps(meta, indent=2) + "\n")


#: Where the project ships a preset's warm start (data/warm-start/<preset>): a contributor's first
#: `unipo train` starts from it instead of spending an hour on SFT.
SHIPPED_WARM_STARTS = Path("data") / "warm-start"


def warm_start_path(preset: str, repo: Path) -> Path:
    """The checkpoint `unipo train` and `unipo suite` start a preset from: work/sft-<preset> when it
    holds one (a warm start trained here wins), else the one the project ships in
    data/warm-start/<preset>, else work/sft-<preset>, where SFT then writes one (never into data/)."""
    own = repo / "work" / f"sft-{preset}"
    shipped = repo / SHIPPED_WARM_STARTS / preset
    if not (own / "config.json").is_file() and (shipped / "config.json").is_file():
        return shipped
    return own


def run_sft(
    out_dir: str | Path,
    preset: str | Preset = "tiny",
    seed: int = 0,
    steps: int | None = None,
    task_dir: str | Path = "data/tasks",
    device: str = "auto",
    progress: bool = True,
    threads: int | None = None,
) -> dict:
    """Train the tokenizer and a fresh model on task_dir/train.jsonl (the SFT pool), save a checkpoint;
    return its meta.

    `steps` replaces the preset's max_steps (the schedule's length and the step limit); training
    stops earlier once greedy accuracy on the periodic eval (the RL pool's first eval_n rows, module
    docstring) reaches the preset's stop_greedy_accuracy (None: the calibrated max_steps). ``threads``: torch threads (else
    $UNIPO_THREADS, else the preset's); ``progress`` False prints nothing, transformers' bars included.
    """
    t_start = time.perf_counter()
    p = get_preset(preset)
    if p.chat:  # a pretrained model is fine-tuned as it comes: nothing is trained from scratch for it
        raise ValueError(f"the {p.name} preset starts from a pretrained model and has no warm start: make its "
                         f"checkpoint with `unipo model {p.chat.model}`")
    cfg = p.sft
    total = steps if steps is not None else cfg.max_steps
    set_threads(thread_count(threads, p))
    show_progress_bars(progress)
    dev = resolve_device(device)
    torch.manual_seed(seed)
    say = print if progress else (lambda *a, **k: None)

    task_dir = Path(task_dir)
    check_pools(task_dir)
    sft_file = task_dir / POOL_FILES["sft"]
    train_rows = load_task(sft_file)
    eval_rows = load_task(task_dir / POOL_FILES["heldout"])
    rl_file = task_dir / POOL_FILES["rl"]
    # The stop rule's periodic eval: the RL pool's first rows when there is one (module docstring).
    if rl_file.is_file():
        stop_rows, stop_on = load_task(rl_file)[:cfg.eval_n], POOL_FILES["rl"]
    else:
        stop_rows, stop_on = eval_rows[:cfg.eval_n], POOL_FILES["heldout"]
    stop_rule = {
        "rule": (f"stop at the first periodic eval with greedy accuracy >= {cfg.stop_greedy_accuracy}, else at "
                 f"step {total}" if cfg.stop_greedy_accuracy is not None else f"train the calibrated {total} steps"),
        "target_greedy_accuracy": cfg.stop_greedy_accuracy,
        "max_steps": total,
        "eval_every": cfg.eval_every,
        "eval_on": f"{stop_on} rows 1-{len(stop_rows)}",
        "why": ("the RL pool: the prompts RL draws, never trained on, so the target is the accuracy RL starts at "
                "and the held-out set plays no part in choosing the checkpoint" if stop_on == POOL_FILES["rl"] else
                "the held-out set's first rows: this task (generator version 2) has no RL pool"),
    }
    tokenizer = train_tokenizer(task_corpus(train_rows))
    examples = encode_examples(train_rows, tokenizer)
    model = build_model(p, len(tokenizer), seed=seed).to(dev)
    n_params = count_parameters(model)
    say(f"sft: preset={p.name} device={dev} params={fmt_num(n_params)} vocab={len(tokenizer)} "
        f"train={len(examples)} eval={len(eval_rows)} steps<={total}")

    optimizer = torch.optim.AdamW(model.parameters(), lr=cfg.lr, betas=cfg.betas, weight_decay=cfg.weight_decay)
    order = batches([len(ids) for ids, _ in examples], min(cfg.batch_size, len(examples)),
                    torch.Generator().manual_seed(seed))
    eval_kwargs = dict(max_new_tokens=cfg.max_new_tokens, batch_size=cfg.eval_batch_size, seed=seed)
    history, tokens_seen, train_seconds, stop_reason = [], 0, 0.0, "max_steps"
    model.train()
    step = 0
    for step in range(1, total + 1):
        t0 = time.perf_counter()
        for group in optimizer.param_groups:
            group["lr"] = lr_at(step - 1, cfg, total)
        input_ids, mask, labels = (t.to(dev) for t in make_batch([examples[i] for i in next(order)], tokenizer.pad_token_id))
        loss = completion_loss(model, input_ids, mask, labels)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip)
        optimizer.step()
        train_seconds += time.perf_counter() - t0
        tokens_seen += int(mask.sum())
        if step % 25 == 0 or step == 1:
            say(f"step {plain_num(step).rjust(5)}  loss {plain_fixed(loss.item(), 4)}  "
                f"lr {plain_sci(optimizer.param_groups[0]['lr'], 2)}  {plain_fixed(train_seconds / step, 3)} s/step")
        if step % cfg.eval_every == 0 or step == total:
            ev = evaluate(model, tokenizer, stop_rows, **eval_kwargs)
            history.append({"step": step, "loss": round(loss.item(), 5), "accuracy_greedy": ev["accuracy_greedy"],
                            "accuracy_sampled": ev["accuracy_sampled"], "mean_length": ev["mean_length"],
                            "elapsed_s": round(time.perf_counter() - t_start, 1)})
            say(f"eval  {plain_num(step).rjust(5)}  greedy {plain_fixed(ev['accuracy_greedy'], 3)}  "
                f"sampled {plain_fixed(ev['accuracy_sampled'], 3)}  (n={ev['n']})  "
                f"length {plain_fixed(ev['mean_length'], 1)}")
            if cfg.stop_greedy_accuracy is not None and ev["accuracy_greedy"] >= cfg.stop_greedy_accuracy:
                stop_reason = f"greedy accuracy {plain_fixed(ev['accuracy_greedy'], 3)} >= {cfg.stop_greedy_accuracy}"
                break

    t_eval = time.perf_counter()
    final = evaluate(model, tokenizer, eval_rows, **eval_kwargs)
    eval_seconds = time.perf_counter() - t_eval
    say(f"final eval (n={final['n']}): greedy {plain_fixed(final['accuracy_greedy'], 3)}  "
        f"sampled {plain_fixed(final['accuracy_sampled'], 3)}  [{stop_reason}]")
    meta_path = task_dir / TASK_META
    meta = {
        "kind": "unipo-sft",
        "preset": p.name,
        "preset_config": asdict(p),
        "seed": seed,
        "steps": step,
        "max_steps": total,
        "stop_reason": stop_reason,
        "stop_rule": stop_rule,
        "stopped_at_step": step,
        "stop_accuracy_greedy": history[-1]["accuracy_greedy"] if history else None,
        "stopped_early": step < total,
        "device": str(dev),
        "params": n_params,
        "vocab_size": len(tokenizer),
        "train_rows": len(examples),
        "tokens_seen": tokens_seen,
        "eval_curve": history,
        "final_eval": final,
        "train_seconds": round(train_seconds, 1),
        "final_eval_seconds": round(eval_seconds, 1),
        "wall_seconds": round(time.perf_counter() - t_start, 1),
        "task_dir": str(task_dir),
        "task_version": task_version(task_dir),
        "sft_data": {"file": stored_path(sft_file), "rows": len(train_rows), "sha256": file_sha256(sft_file)},
        "task_meta": json.loads(meta_path.read_text()) if meta_path.is_file() else None,
        "versions": {"python": platform.python_version(), "torch": torch.__version__,
                     "transformers": __import__("transformers").__version__},
    }
    save_checkpoint(model.cpu(), tokenizer, Path(out_dir), meta)
    say(f"saved {out_dir} in {plain_fixed(meta['wall_seconds'], 0)} s")
    return meta


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description="Supervised warm start on worked solutions.")
    ap.add_argument("--out", required=True, help="checkpoint directory to write")
    ap.add_argument("--preset", default="tiny")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--steps", type=int, default=None, help="replaces the preset's max_steps")
    ap.add_argument("--task-dir", default="data/tasks")
    ap.add_argument("--device", default="auto")
    ap.add_argument("--quiet", action="store_true")
    args = ap.parse_args(argv)
    run_sft(args.out, args.preset, args.seed, args.steps, args.task_dir, args.device, progress=not args.quiet)


if __name__ == "__main__":
    main()
