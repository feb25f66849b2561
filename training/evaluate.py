"""Held-out accuracy: greedy and sampled (T = 1), on a fixed eval set.

Training reward alone misleads (FEASIBILITY: with lr = 0, the training reward still rose from 0.333
to 0.385 just from which prompts were drawn), so SFT and the RL loop both measure learning here, on
the same fixed problems, at the start, periodically and at the end. Greedy accuracy is what the model
"knows"; sampled accuracy at T = 1 is the expected training reward of the policy RL actually samples.
"""

from __future__ import annotations

import torch

from training.generation import decode, eos_ids_of, make_generator, pad_id_of, prompt_ids
from training.reward import score_response


def decode_texts(model, tokenizer, prompts, temperature, max_new_tokens, batch_size, generator, on_batch=None,
                 system: str | None = None):
    """Responses (text, token count) for `prompts`, decoded in fixed batches (deterministic order);
    ``on_batch(k)`` is called after each batch of k prompts (a progress bar's update). `system`: a chat
    preset's system prompt (the prompts then go through the chat template: generation.prompt_ids)."""
    eos_ids, pad_id = eos_ids_of(model, tokenizer), pad_id_of(tokenizer)
    texts, lengths = [], []
    for start in range(0, len(prompts), batch_size):
        chunk = prompts[start:start + batch_size]
        ids = prompt_ids(tokenizer, chunk, system)
        _, _, r_ids, r_mask, _ = decode(model, ids, max_new_tokens, temperature, eos_ids, pad_id, generator)
        n_tok = r_mask.sum(-1).long().tolist()
        texts += tokenizer.batch_decode([r_ids[i, :k].tolist() for i, k in enumerate(n_tok)], skip_special_tokens=True)
        lengths += n_tok
        if on_batch is not None:
            on_batch(len(chunk))
    return texts, lengths


def _progress(total: int, desc: str):
    """A bar over the problems an evaluation decodes, on a terminal, when progress bars are on (``unipo train`` and
    ``unipo sft`` turn them off with --no-progress, through transformers' switch: training.model.show_progress_bars);
    it disappears when the evaluation ends."""
    from tqdm import tqdm
    from transformers.utils import logging as hf_logging

    # mininterval 0: the bar moves once per decoded batch (a few per evaluation), so every batch is drawn,
    # however fast the batches come
    return tqdm(total=total, desc=desc, unit="problem", leave=False, dynamic_ncols=True, mininterval=0,
                disable=None if hf_logging.is_progress_bar_enabled() else True)


def score_mode(rows, texts, lengths, rule: str = "answer") -> dict:
    scores = [score_response(t, r["answer"], **({"rule": rule} if rule != "answer" else {}))
              for t, r in zip(texts, rows)]
    n = len(rows)
    result = {
        "correct": "".join("1" if s["correct"] else "0" for s in scores),
        "accuracy": sum(s["correct"] for s in scores) / n,
        "format": sum(s["format"] for s in scores) / n,
        "mean_length": sum(lengths) / n,
    }
    if all("level" in r for r in rows):
        by_level = {}
        for r, s in zip(rows, scores):
            by_level.setdefault(str(r["level"]), []).append(s["correct"])
        result["by_level"] = {lv: sum(v) / len(v) for lv, v in sorted(by_level.items())}
    return result


@torch.no_grad()
def evaluate(
    model,
    tokenizer,
    eval_rows: list[dict],
    n: int | None = None,
    greedy: bool = True,
    sampled: bool = True,
    temperature: float = 1.0,
    max_new_tokens: int = 128,
    batch_size: int = 500,
    seed: int = 0,
    desc: str = "evaluation",
    system: str | None = None,
    rule: str = "answer",
) -> dict:
    """Accuracy of `model` on the first `n` eval rows (all if None).

    Returns {"accuracy_greedy", "accuracy_sampled", "n", "mean_length"} (an accuracy is None when its
    mode is off; mean_length is the greedy responses' mean token count, else the sampled ones') plus
    per-mode "correct_*" (one character per problem, "1" right / "0" wrong, in row order, so two
    evaluations of the same rows can be compared problem by problem), "format_*", "mean_length_*"
    and "by_level_*" (accuracy per task level). Greedy is deterministic; sampled is deterministic
    given `seed`. On a terminal with progress bars on, a bar (``desc``) counts the problems decoded.
    A chat preset passes its `system` prompt (the prompts go through the chat template) and its reward
    `rule` (training/reward.py REWARD_RULES: how an answer is read).
    """
    rows = eval_rows[:n] if n else list(eval_rows)
    if not rows:
        raise ValueError("evaluate: no eval rows")
    prompts = [r["prompt"] for r in rows]
    was_training = model.training
    model.eval()
    out: dict = {"n": len(rows), "accuracy_greedy": None, "accuracy_sampled": None}
    modes = [("greedy", 0.0)] * greedy + [("sampled", temperature)] * sampled
    bar = _progress(len(rows) * len(modes), desc)
    for mode, temp in modes:
        generator = make_generator(model, seed) if temp > 0 else None
        bar.set_postfix_str(mode)
        texts, lengths = decode_texts(model, tokenizer, prompts, temp, max_new_tokens, batch_size, generator,
                                      on_batch=bar.update, system=system)
        scored = score_mode(rows, texts, lengths, rule)
        out[f"accuracy_{mode}"] = scored["accuracy"]
        out[f"correct_{mode}"] = scored["correct"]
        out[f"format_{mode}"] = scored["format"]
        out[f"mean_length_{mode}"] = scored["mean_length"]
        if "by_level" in scored:
            out[f"by_level_{mode}"] = scored["by_level"]
    bar.close()
    out["mean_length"] = out.get("mean_length_greedy", out.get("mean_length_sampled"))
    model.train(was_training)
    return out
