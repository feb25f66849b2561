"""Sampling groups of responses, and recomputing their log-probs, consistently.

Every group-based objective (GRPO, DAPO, Dr. GRPO, RLOO ...) starts the same way: for each prompt,
sample G responses from the current policy and remember the log-probability of every sampled token.
The PPO-style ratio  r_t = pi_theta(y_t | x, y_<t) / pi_old(y_t | x, y_<t)  (Schulman et al. 2017)
is exactly 1 on the first minibatch only if the log-probs computed while sampling equal the ones
recomputed by a full forward pass. Three details make that true here:

1. Left padding with position ids from the attention mask: a prompt padded on the left gets
   positions 0, 1, 2, ... from its first real token (cumulative sum of the mask minus 1), both in the
   cached decoding loop and in the recomputation, so rotary embeddings see the same positions.
2. The same temperature convention everywhere: logits are divided by T before the softmax and the
   stored log-prob is log softmax(logits / T)[token], the distribution the token was drawn from.
   `response_logprobs` must be called with the same T (the RL loop uses it for the current, the old
   and the reference log-probs). Sampling is plain ancestral sampling (no top-k / top-p), so the
   behaviour policy is exactly pi_theta at temperature T.
3. The same precision: by default both run in the model's own dtype, without autocast (fp32). On a
   CUDA GPU the RL loop runs both under bf16 autocast (the preset's `precision`), with the output
   projection, log-softmax and log-probs in float32. The cached and the full forward pass then use
   different kernels and round differently, so the log-prob a token was sampled with and the one the
   training pass computes for it differ a little: the RL loop keeps the update's ratio exact (its old
   log-probs come from the training pass) and logs the sampling log-prob next to it, with the
   mismatch as a metric (docs/reference/schema.md, "sample_logp").

The decoding loop is our own (a KV cache through model(..., past_key_values, use_cache=True); its
bookkeeping is training/decode_loop.py, shared with the Llama decoders) rather than
model.generate(output_scores=True): it returns exactly the sampling distribution's log-probs,
needs no logits processors, and drops finished rows from the batch, which makes it the faster of the
two on CPU. Measured with `python -m training.generation` (the SFT checkpoint work/sft-tiny, 16
prompts x G=8, max_new_tokens 32; best of 8 interleaved runs on a shared, loaded 2-core machine):
own loop 0.32 s, the same loop without dropping rows 0.39-0.40 s, model.generate 0.41 s, with 1 or
2 threads alike (medians 0.41-0.59 / 0.49-0.65 / 0.47-0.70 s): about 10 ms per decoding step.
"""

from __future__ import annotations

import inspect
import time
from contextlib import nullcontext
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from training import llama_decode
from training.decode_loop import decode_loop


@dataclass
class RolloutBatch:
    """G responses for each of P prompts; row i belongs to prompt prompt_index[i] (group-major order).

    The token tensors are laid out [N, prompt_width + response_width]: prompts left-padded, responses
    right-padded. A response includes its <eos> if one was sampled; `truncated` marks responses that
    hit max_new_tokens without one. All tensors live on the CPU (response_logprobs moves what it
    needs to the model's device).
    """

    prompts: list[str]  # P prompt strings
    group_size: int  # G
    temperature: float
    prompt_index: torch.Tensor  # [N] long, N = P * G
    input_ids: torch.Tensor  # [N, Tp + Tr] long
    attention_mask: torch.Tensor  # [N, Tp + Tr] long
    prompt_width: int  # Tp
    response_mask: torch.Tensor  # [N, Tr] float: 1 on response tokens (incl. <eos>), 0 after
    logprobs: torch.Tensor  # [N, Tr] float32: log pi_T(token) at sampling time, 0 where masked
    truncated: torch.Tensor  # [N] bool
    response_ids: list[list[int]]  # per response, without padding
    texts: list[str]  # decoded responses, special tokens removed

    @property
    def size(self) -> int:
        return len(self.response_ids)

    @property
    def response_lengths(self) -> torch.Tensor:
        return self.response_mask.sum(-1).long()

    def group(self, p: int) -> range:
        """Row indices of prompt p's G responses."""
        return range(p * self.group_size, (p + 1) * self.group_size)


def eos_ids_of(model, tokenizer) -> list[int]:
    """Every token id that ends a response: the tokenizer's EOS and the model's generation EOS(s)."""
    ids = set()
    if tokenizer.eos_token_id is not None:
        ids.add(int(tokenizer.eos_token_id))
    gen_eos = getattr(getattr(model, "generation_config", None), "eos_token_id", None)
    if gen_eos is not None:
        ids.update(int(i) for i in (gen_eos if isinstance(gen_eos, (list, tuple)) else [gen_eos]))
    if not ids:
        raise ValueError("neither the tokenizer nor the model defines an EOS token")
    return sorted(ids)


def pad_id_of(tokenizer) -> int:
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    if pad is None:
        raise ValueError("tokenizer has neither a pad nor an EOS token")
    return int(pad)


def left_pad(seqs: list[list[int]], pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    width = max(len(s) for s in seqs)
    ids = torch.full((len(seqs), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(seqs), width), dtype=torch.long)
    for i, s in enumerate(seqs):
        if s:
            ids[i, width - len(s):] = torch.tensor(s, dtype=torch.long)
            mask[i, width - len(s):] = 1
    return ids, mask


def positions_from_mask(mask: torch.Tensor) -> torch.Tensor:
    """Position ids counting real tokens only (padding gets 0; it is masked anyway)."""
    return (mask.cumsum(-1) - 1).clamp(min=0)


def autocast_context(device: torch.device, dtype: torch.dtype | None):
    """torch.autocast to `dtype` on `device` (CPU autocast to bf16 works too), or nothing for None."""
    return torch.autocast(device.type, dtype=dtype) if dtype is not None else nullcontext()


def supports_logits_to_keep(model) -> bool:
    return "logits_to_keep" in inspect.signature(model.forward).parameters


def pick_tokens(logits: torch.Tensor, temperature: float, generator: torch.Generator | None):
    """Sample (temperature > 0) or take the argmax (temperature == 0) from [N, V] logits.

    Returns (tokens [N], log-probs [N]) with log-probs of the distribution sampled from: softmax of
    logits / T; for greedy decoding, of the T = 1 distribution.
    """
    logits = logits.float()
    if temperature > 0:
        logp = F.log_softmax(logits / temperature, dim=-1)
        tokens = torch.multinomial(logp.exp(), 1, generator=generator).squeeze(-1)
    else:
        logp = F.log_softmax(logits, dim=-1)
        tokens = logits.argmax(dim=-1)
    return tokens, logp.gather(-1, tokens[:, None]).squeeze(-1)


@torch.no_grad()
def decode(
    model,
    prompt_ids: list[list[int]],
    max_new_tokens: int,
    temperature: float,
    eos_ids: list[int],
    pad_id: int,
    generator: torch.Generator | None = None,
    prune_finished: bool = True,
    fast: bool = True,
    autocast: torch.dtype | None = None,
    static: bool = False,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Batched autoregressive decoding with a KV cache.

    Rows that produced <eos> leave the running batch (and the cache), so the remaining decoding
    steps only compute the rows still going: responses end at very different lengths (a level-1
    addition takes 12 tokens, a level-3 coins problem 32). With `static` (a Llama model) the
    static decoder runs instead: one shape, every row to the end, each step a CUDA graph replay on a
    GPU (training/llama_decode.py). `autocast`: a dtype to run the model under (None: its own).

    Returns (prompt ids [N, Tp], prompt mask [N, Tp], response ids [N, Tr] padded with pad_id after
    the end, response mask [N, Tr] (1 up to and including <eos>), log-probs [N, Tr]).
    """
    device = next(model.parameters()).device
    ids, mask = left_pad(prompt_ids, pad_id)
    ids, mask = ids.to(device), mask.to(device)
    eos = torch.tensor(eos_ids, device=device)
    pick = lambda logits: pick_tokens(logits, temperature, generator)  # noqa: E731
    if fast and llama_decode.supports(model):
        if static:
            r_ids, r_mask, logps = llama_decode.static_decoder(model).decode(
                ids, mask, max_new_tokens, pick, eos, pad_id, autocast=autocast)
        else:
            with autocast_context(device, autocast):
                r_ids, r_mask, logps = llama_decode.LlamaDecoder(model).decode(ids, mask, max_new_tokens, pick, eos,
                                                                              pad_id)
        return ids, mask, r_ids, r_mask, logps
    if autocast is not None:  # the generic loop: the whole model under autocast, logits upcast in pick_tokens
        with autocast_context(device, autocast):
            return decode(model, prompt_ids, max_new_tokens, temperature, eos_ids, pad_id, generator,
                          prune_finished, fast=False)
    keep = {"logits_to_keep": 1} if supports_logits_to_keep(model) else {}
    positions = positions_from_mask(mask)
    out = model(input_ids=ids, attention_mask=mask, position_ids=positions, use_cache=True, **keep)
    state = {"cache": out.past_key_values, "mask": mask, "position": positions[:, -1:] + 1}
    can_prune = prune_finished and hasattr(state["cache"], "batch_select_indices")

    def drop(done: torch.Tensor) -> torch.Tensor | None:
        """Finished rows leave the cache as soon as there are any (a cache that cannot drop rows
        keeps them, fed padding)."""
        if not (can_prune and bool(done.any())):
            return None
        still = (~done).nonzero().squeeze(1)
        state["cache"].batch_select_indices(still)
        state["mask"], state["position"] = state["mask"][still], state["position"][still]
        return still

    def advance(tok: torch.Tensor, step: int) -> torch.Tensor:
        state["mask"] = torch.cat([state["mask"], torch.ones_like(state["mask"][:, :1])], dim=1)
        out = model(input_ids=tok[:, None], attention_mask=state["mask"], position_ids=state["position"],
                    past_key_values=state["cache"], use_cache=True)
        state["cache"], state["position"] = out.past_key_values, state["position"] + 1
        return out.logits[:, -1]

    r_ids, r_mask, logps = decode_loop(out.logits[:, -1], max_new_tokens, pick, eos, pad_id, advance, drop)
    return ids, mask, r_ids, r_mask, logps


def prompt_ids(tokenizer, prompts: list[str], system: str | None = None) -> list[list[int]]:
    """Each prompt's token ids, as the policy reads it.

    Without `system`: the prompt's text tokenized without special tokens, as OpenRLHF does (the tiny
    and gpu presets' models know no other form). With `system` (a chat preset's system prompt): through
    the tokenizer's chat template, a system message, the prompt as the user's message and the
    assistant's turn opened (``add_generation_prompt``), as the model was tuned to read a question;
    the ids are apply_chat_template's own.
    """
    if system is None:
        return [tokenizer(p, add_special_tokens=False)["input_ids"] for p in prompts]
    if not getattr(tokenizer, "chat_template", None):
        raise ValueError("a system prompt was given, but the tokenizer has no chat template")
    return [list(tokenizer.apply_chat_template([{"role": "system", "content": system}, {"role": "user", "content": p}],
                                               add_generation_prompt=True, tokenize=True, return_dict=True)["input_ids"])
            for p in prompts]


def make_generator(model, seed: int | None) -> torch.Generator | None:
    if seed is None:
        return None
    device = next(model.parameters()).device
    return torch.Generator(device=device).manual_seed(seed)


def sample_groups(
    model,
    tokenizer,
    prompts: list[str],
    group_size: int,
    max_new_tokens: int,
    temperature: float = 1.0,
    generator: torch.Generator | None = None,
    seed: int | None = None,
    autocast: torch.dtype | None = None,
    static: bool = False,
    system: str | None = None,
) -> RolloutBatch:
    """Sample `group_size` responses for every prompt (one batched decode over P * G rows).

    Randomness: pass a torch.Generator on the model's device, or a seed (a fresh generator), or
    neither (torch's global RNG). Prompts are tokenized without special tokens, as OpenRLHF does, or,
    given a chat preset's `system` prompt, through the chat template (prompt_ids).
    `autocast` and `static` as in decode (the RL loop sets them on a GPU).
    """
    if temperature <= 0:
        raise ValueError("sample_groups samples: temperature must be > 0 (use evaluate() for greedy)")
    if generator is None:
        generator = make_generator(model, seed)
    was_training = model.training
    model.eval()
    rows = [ids for ids in prompt_ids(tokenizer, prompts, system) for _ in range(group_size)]
    eos_ids, pad_id = eos_ids_of(model, tokenizer), pad_id_of(tokenizer)
    p_ids, p_mask, r_ids, r_mask, logps = (t.cpu() for t in decode(
        model, rows, max_new_tokens, temperature, eos_ids, pad_id, generator, autocast=autocast, static=static
    ))
    model.train(was_training)
    lengths = r_mask.sum(-1).long().tolist()
    response_ids = [ids[:k] for ids, k in zip(r_ids.tolist(), lengths)]
    ends_with_eos = torch.tensor([bool(ids) and ids[-1] in eos_ids for ids in response_ids])
    return RolloutBatch(
        prompts=list(prompts),
        group_size=group_size,
        temperature=temperature,
        prompt_index=torch.arange(len(prompts)).repeat_interleave(group_size),
        input_ids=torch.cat([p_ids, r_ids], dim=1),
        attention_mask=torch.cat([p_mask, r_mask.long()], dim=1),
        prompt_width=p_ids.shape[1],
        response_mask=r_mask,
        logprobs=logps,
        truncated=~ends_with_eos,
        response_ids=response_ids,
        texts=tokenizer.batch_decode(response_ids, skip_special_tokens=True),
    )


def response_logprobs(
    model, batch: RolloutBatch, temperature: float | None = None, autocast: torch.dtype | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-token log-prob and entropy of the batch's response tokens, in one forward pass.

    Returns (logp [N, Tr], entropy [N, Tr]) of softmax(logits / T), zero where response_mask is 0.
    Differentiable: call under torch.no_grad() for the old and reference log-probs. `temperature`
    defaults to the one the batch was sampled at; it must be the same for the ratio to be exact.
    `autocast`: run the transformer under autocast to this dtype (bf16 on a GPU); the output
    projection, the log-softmax and the log-probs stay in float32.
    """
    t = batch.temperature if temperature is None else temperature
    device = next(model.parameters()).device
    ids = batch.input_ids.to(device)
    mask = batch.attention_mask.to(device)
    width = ids.shape[1] - batch.prompt_width  # Tr
    # Logits at positions Tp-1 .. L-2 predict the response tokens at Tp .. L-1.
    if autocast is not None and hasattr(model, "get_decoder") and model.get_output_embeddings() is not None:
        with autocast_context(device, autocast):
            hidden = model.get_decoder()(input_ids=ids, attention_mask=mask,
                                         position_ids=positions_from_mask(mask)).last_hidden_state
        with torch.autocast(device.type, enabled=False):
            logits = model.get_output_embeddings()(hidden[:, -(width + 1):-1].float())
    else:
        keep = {"logits_to_keep": width + 1} if supports_logits_to_keep(model) else {}
        with autocast_context(device, autocast):
            logits = model(input_ids=ids, attention_mask=mask, position_ids=positions_from_mask(mask), **keep).logits
        logits = logits[:, -(width + 1):-1]
    logits = logits.float() / t
    logp_all = F.log_softmax(logits, dim=-1)
    targets = ids[:, batch.prompt_width:]
    logp = logp_all.gather(-1, targets[..., None]).squeeze(-1)
    entropy = -(logp_all.exp() * logp_all).sum(-1)
    rmask = batch.response_mask.to(device)
    return logp * rmask, entropy * rmask


# ----------------------------------------------------------------------------------------------
# Benchmark: python -m training.generation [checkpoint]


def benchmark(path: str | None = "work/sft-tiny", prompts: int = 16, group_size: int = 8, max_new_tokens: int = 32,
              reps: int = 8, threads: int = 2) -> dict:
    """Seconds per rollout of P prompts x G: our loop (with / without dropping finished rows) and
    model.generate(output_scores=True), interleaved, on a checkpoint (a random tiny model if None)."""
    import statistics

    from training.model import build_model, load_policy, set_threads
    from training.task import load_task
    from unipo_build.core.file_names import HELDOUT_POOL, SFT_POOL
    from training.tokenizer import task_corpus, train_tokenizer

    set_threads(threads)
    rows = load_task(f"data/tasks/{HELDOUT_POOL}")[:prompts]
    if path:
        model, tok = load_policy(path)
    else:
        tok = train_tokenizer(task_corpus(load_task(f"data/tasks/{SFT_POOL}")))
        model = build_model("tiny", len(tok), seed=0)
    model.eval()
    rows_ids = [tok(r["prompt"], add_special_tokens=False)["input_ids"] for r in rows for _ in range(group_size)]
    eos, pad = eos_ids_of(model, tok), pad_id_of(tok)

    def own(prune):
        def run(seed):
            gen = torch.Generator().manual_seed(seed)
            decode(model, rows_ids, max_new_tokens, 1.0, eos, pad, gen, prune_finished=prune)
        return run

    def hf(seed):
        ids, mask = left_pad(rows_ids, pad)
        torch.manual_seed(seed)
        with torch.no_grad():
            model.generate(input_ids=ids, attention_mask=mask, do_sample=True, temperature=1.0, top_k=0, top_p=1.0,
                           max_new_tokens=max_new_tokens, output_scores=True, return_dict_in_generate=True,
                           pad_token_id=pad)

    methods = {"own_loop": own(True), "own_loop_no_pruning": own(False), "model.generate": hf}
    for fn in methods.values():
        fn(0)  # warm-up
    wall = {name: [] for name in methods}
    cpu = {name: [] for name in methods}
    for r in range(reps):  # interleaved, so load changes on a shared machine hit every method alike
        for name, fn in methods.items():
            t0, c0 = time.perf_counter(), time.process_time()
            fn(r + 1)
            wall[name].append(time.perf_counter() - t0)
            cpu[name].append(time.process_time() - c0)
    return {name: {"best_s": round(min(wall[name]), 3), "median_s": round(statistics.median(wall[name]), 3),
                   "cpu_best_s": round(min(cpu[name]), 3), "threads": threads, "rollout": f"{prompts}x{group_size}",
                   "max_new_tokens": max_new_tokens} for name in methods}


if __name__ == "__main__":
    import argparse
    import json

    ap = argparse.ArgumentParser(description="Time one rollout: own decoding loop vs model.generate.")
    ap.add_argument("checkpoint", nargs="?", default="work/sft-tiny", help="a checkpoint dir, or 'random'")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--reps", type=int, default=8)
    a = ap.parse_args()
    print(json.dumps(benchmark(None if a.checkpoint == "random" else a.checkpoint, reps=a.reps, threads=a.threads),
                     indent=2))
