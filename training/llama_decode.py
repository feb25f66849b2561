"""A lean decoding loop for Llama-architecture models: preallocated KV cache, no per-step allocation.

Sampling a rollout is hundreds of tiny decoding steps (one token for each of 128 rows). Through
transformers' generic forward each step costs several milliseconds of Python and tensor bookkeeping
(mask building, cache objects, hooks) around a few hundred microseconds of arithmetic for our 1M
parameter model, so sampling, not learning, would dominate a rollout. This module runs the same
weights (a LlamaForCausalLM's own parameters, not a copy) through a plain functional forward:

- the keys and values of every layer live in one tensor preallocated for prompt + budget, written
  in place at each step (no concatenation, no cache object);
- attention over the cache uses scaled_dot_product_attention with a boolean mask of the real
  (not left-padding) positions;
- finished rows leave the batch when a quarter of the running rows have finished (one index_select
  of the cache), so late steps compute only the long answers.

It is the same function as transformers' LlamaForCausalLM forward (RMSNorm in float32, rotary
embeddings from the model's own rotary module, SwiGLU, grouped-query attention), so the log-probs it
returns equal a full forward pass to about 1e-6 in float32; tests/test_generation.py holds them to
that against `response_logprobs`. Other architectures (any other local checkpoint) take the generic
loop in training/generation.py: `supports(model)` decides.

On a CUDA GPU the RL loop samples with `StaticDecoder` instead. There, a decoding step for 1,024 rows
of a 33.6M-parameter model is about 70 GFLOP and a few GB of cache reads: tens of microseconds of
work each, behind about a hundred kernel launches that the host issues one by one. So the static
decoder keeps one shape for the whole rollout (no rows dropped, prompts padded to a multiple of 16,
the cache preallocated for prompt + budget and reused across rollouts) and captures one decoding
step as a CUDA graph (torch.cuda.CUDAGraph): each step is then one graph replay plus the sampling.
The cache position, the rows' positions and the key mask are device tensors the graph reads, so
one capture serves every step; the weights are read in place, so an optimizer step needs no new
capture. Under bf16 autocast the cache is bf16. Elsewhere (the CPU) the same class runs eagerly,
which is how the tests check it against a full forward pass.
"""

from __future__ import annotations

import weakref
from contextlib import nullcontext
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from training.decode_loop import decode_loop


def supports(model) -> bool:
    """True for a plain LlamaForCausalLM (SiLU MLP, no tensor-parallel split, no sliding window)."""
    cfg = getattr(model, "config", None)
    return (
        type(model).__name__ == "LlamaForCausalLM"
        and getattr(cfg, "hidden_act", None) == "silu"
        and getattr(cfg, "pretraining_tp", 1) == 1
    )


def rms_norm(x: torch.Tensor, norm) -> torch.Tensor:
    """LlamaRMSNorm: normalise in float32, scale by the weight in the input's dtype."""
    dtype = x.dtype
    h = x.float()
    h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + norm.variance_epsilon)
    return norm.weight * h.to(dtype)


def rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotary embedding with the rotate-half convention of transformers' Llama."""
    half = x.shape[-1] // 2
    rotated = torch.cat((-x[..., half:], x[..., :half]), dim=-1)
    return x * cos + rotated * sin


def attend_one(q, keys, values, key_mask, groups: int, scale: float) -> torch.Tensor:
    """Attention of one query per row over the cache (grouped KV heads repeated ``groups`` times),
    softmax in float32; plain matmuls, which beat the fused kernel for a single query."""
    if groups != 1:
        keys = keys.repeat_interleave(groups, dim=1)
        values = values.repeat_interleave(groups, dim=1)
    scores = torch.matmul(q, keys.transpose(2, 3)) * scale
    scores = scores.masked_fill(~key_mask, float("-inf"))
    return torch.matmul(torch.softmax(scores.float(), dim=-1).to(values.dtype), values)


class LlamaDecoder:
    """Decodes with a LlamaForCausalLM's weights and a preallocated cache (see the module docstring)."""

    def __init__(self, model):
        # the model's parts, not the model: static_decoder's cache is keyed weakly by the model
        self.lm_head = model.lm_head
        cfg = model.config
        self.inner = model.model
        self.layers = list(self.inner.layers)
        self.heads = cfg.num_attention_heads
        self.kv_heads = cfg.num_key_value_heads or cfg.num_attention_heads
        self.head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // cfg.num_attention_heads
        self.scale = self.head_dim**-0.5

    def _attention_block(self, layer, x, cos, sin, k_cache, v_cache, start: int, key_mask):
        """One layer's attention for the new positions [start, start + T) of every row."""
        n, t, _ = x.shape
        attn = layer.self_attn
        h = rms_norm(x, layer.input_layernorm)
        q = attn.q_proj(h).view(n, t, self.heads, self.head_dim).transpose(1, 2)
        k = attn.k_proj(h).view(n, t, self.kv_heads, self.head_dim).transpose(1, 2)
        v = attn.v_proj(h).view(n, t, self.kv_heads, self.head_dim).transpose(1, 2)
        q, k = rotate(q, cos, sin), rotate(k, cos, sin)
        k_cache[:, :, start:start + t] = k
        v_cache[:, :, start:start + t] = v
        end = start + t
        keys, values = k_cache[:, :, :end], v_cache[:, :, :end]
        if t == 1:  # one query per row: plain matmuls beat the fused CPU kernel by ~10x here
            out = attend_one(q, keys, values, key_mask, self.heads // self.kv_heads, self.scale)
        else:
            out = F.scaled_dot_product_attention(q, keys, values, attn_mask=key_mask, scale=self.scale,
                                                 enable_gqa=self.kv_heads != self.heads)
        x = x + attn.o_proj(out.transpose(1, 2).reshape(n, t, -1))
        h = rms_norm(x, layer.post_attention_layernorm)
        mlp = layer.mlp
        return x + mlp.down_proj(F.silu(mlp.gate_proj(h)) * mlp.up_proj(h))

    def _logits(self, x: torch.Tensor) -> torch.Tensor:
        """The output projection of the last hidden states: in float32 even under autocast, so the
        log-softmax that follows sees float32 logits (a no-op change when no autocast is active)."""
        h = rms_norm(x, self.inner.norm)
        if torch.is_autocast_enabled(h.device.type):
            with torch.autocast(h.device.type, enabled=False):
                return self.lm_head(h.float())
        return self.lm_head(h)

    def _forward(self, ids, positions, caches, start: int, key_mask) -> torch.Tensor:
        """Logits of the last new position of every row; writes the new keys/values into `caches`."""
        x = self.inner.embed_tokens(ids)
        cos, sin = self.inner.rotary_emb(x, positions)
        cos, sin = cos[:, None], sin[:, None]
        for layer, (k_cache, v_cache) in zip(self.layers, caches):
            x = self._attention_block(layer, x, cos, sin, k_cache, v_cache, start, key_mask)
        return self._logits(x[:, -1])

    @torch.no_grad()
    def decode(self, ids: torch.Tensor, mask: torch.Tensor, max_new_tokens: int, pick, eos: torch.Tensor,
               pad_id: int):
        """Decode from left-padded prompts `ids` [N, Tp] with attention `mask` [N, Tp].

        `pick(logits) -> (tokens, logps)` chooses each next token. Returns (response ids [N, Tr],
        response mask [N, Tr], log-probs [N, Tr]) with Tr the number of steps taken.
        """
        n, tp = ids.shape
        device = ids.device
        dtype = self.inner.embed_tokens.weight.dtype
        total = tp + max_new_tokens
        caches = [(torch.empty(n, self.kv_heads, total, self.head_dim, device=device, dtype=dtype),
                   torch.empty(n, self.kv_heads, total, self.head_dim, device=device, dtype=dtype))
                  for _ in self.layers]
        valid = torch.zeros(n, total, dtype=torch.bool, device=device)
        valid[:, :tp] = mask.bool()
        positions = (mask.cumsum(-1) - 1).clamp(min=0)
        # Prefill: causal over the prompt, and never onto left padding (a padding query sees itself,
        # so no softmax row is empty; its output is never used).
        causal = torch.ones(tp, tp, dtype=torch.bool, device=device).tril()
        prefill_mask = (causal[None] & valid[:, None, :tp]) | torch.eye(tp, dtype=torch.bool, device=device)[None]
        logits = self._forward(ids, positions, caches, 0, prefill_mask[:, None])
        state = {"caches": caches, "valid": valid, "position": positions[:, -1:] + 1}

        def drop(done: torch.Tensor) -> torch.Tensor | None:
            """Finished rows leave the batch once they are a quarter of it (one index_select of the cache)."""
            if int(done.sum()) * 4 < len(done):
                return None
            keep = (~done).nonzero().squeeze(1)
            state["caches"] = [(k.index_select(0, keep), v.index_select(0, keep)) for k, v in state["caches"]]
            state["valid"], state["position"] = state["valid"][keep], state["position"][keep]
            return keep

        def advance(tok: torch.Tensor, step: int) -> torch.Tensor:
            pos = tp + step
            state["valid"][:, pos] = True
            logits = self._forward(tok[:, None], state["position"], state["caches"], pos,
                                   state["valid"][:, None, None, :pos + 1])
            state["position"] = state["position"] + 1
            return logits

        return decode_loop(logits, max_new_tokens, pick, eos, pad_id, advance, drop)


# ----------------------------------------------------------------------------------------------
# The static decoder (CUDA graphs)

PROMPT_STEP = 16  # prompt widths are padded up to a multiple of this, so one shape serves many rollouts
ROW_STEP = 64  # and row counts likewise (a refilling filter samples fewer rows in later rounds)
DONE_CHECK = 8  # steps between the host's checks whether every row has finished (each check syncs)


def _round_up(x: int, step: int) -> int:
    return -(-x // step) * step


@dataclass
class _Plan:
    """The static buffers of one (rows, cache length, precision) shape and its captured step."""

    rows: int
    prompt_width: int  # cache columns [0, prompt_width) hold the (left-padded) prompts
    total: int  # prompt_width + the longest budget it serves
    key: tuple  # device, cache dtype, autocast, graphs
    tok: torch.Tensor  # [rows, 1] the token fed at this step
    pos: torch.Tensor  # [rows, 1] its rotary position
    slot: torch.Tensor  # [1] the cache column it is written to
    valid: torch.Tensor  # [rows, total] bool: which cache columns a row attends to
    caches: list[tuple[torch.Tensor, torch.Tensor]]
    logits: torch.Tensor | None = None  # [rows, V] float32, written by each step
    graph: object | None = None  # torch.cuda.CUDAGraph, when captured


class StaticDecoder(LlamaDecoder):
    """LlamaDecoder with one static shape per rollout and its decoding step as a CUDA graph.

    The same function as LlamaDecoder (tests/test_gpu_paths.py holds its log-probs to a full forward
    pass in float32 on the CPU); what differs is the shape discipline: every row stays in the batch
    to the end (a finished row is fed padding and what it computes is never recorded), the host looks
    at whether all rows have finished only every DONE_CHECK steps, and one shape is kept: a call
    that fits in it (no more rows, no wider prompts, no longer budget) reuses it, padding the extra
    rows and columns; any other replaces it. At 1,024 rows the gpu preset's bf16 cache is about 2 GB.
    """

    def __init__(self, model):
        super().__init__(model)
        self.plan: _Plan | None = None

    def _plan(self, n: int, tp: int, max_new_tokens: int, device, cache_dtype, autocast, graphs: bool) -> _Plan:
        key = (str(device), cache_dtype, autocast, graphs)
        plan = self.plan
        if (plan is not None and plan.key == key and plan.rows >= n and plan.prompt_width >= tp
                and plan.total - plan.prompt_width >= max_new_tokens):
            return plan
        self.plan = plan = None  # free the old shape's cache and graph before taking the new one's
        rows, tps = _round_up(n, ROW_STEP), _round_up(tp, PROMPT_STEP)
        total = tps + max_new_tokens
        # zeros, not empty: a masked column still enters the value product as weight 0 x value,
        # and 0 x NaN (uninitialised memory) would be NaN
        caches = [(torch.zeros(rows, self.kv_heads, total, self.head_dim, device=device, dtype=cache_dtype),
                   torch.zeros(rows, self.kv_heads, total, self.head_dim, device=device, dtype=cache_dtype))
                  for _ in self.layers]
        plan = _Plan(rows=rows, prompt_width=tps, total=total, key=key,
                     tok=torch.zeros(rows, 1, dtype=torch.long, device=device),
                     pos=torch.zeros(rows, 1, dtype=torch.long, device=device),
                     slot=torch.zeros(1, dtype=torch.long, device=device),
                     valid=torch.zeros(rows, total, dtype=torch.bool, device=device), caches=caches)
        if graphs:
            self._capture(plan, autocast)
        self.plan = plan
        return plan

    def _step(self, plan: _Plan) -> torch.Tensor:
        """One decoding step for every row, reading only the plan's buffers (so it can be a graph)."""
        plan.valid.index_fill_(1, plan.slot, True)
        x = self.inner.embed_tokens(plan.tok)
        cos, sin = self.inner.rotary_emb(x, plan.pos)
        cos, sin = cos[:, None], sin[:, None]
        key_mask = plan.valid[:, None, None, :]
        n = x.shape[0]
        for layer, (k_cache, v_cache) in zip(self.layers, plan.caches):
            attn = layer.self_attn
            h = rms_norm(x, layer.input_layernorm)
            q = attn.q_proj(h).view(n, 1, self.heads, self.head_dim).transpose(1, 2)
            k = attn.k_proj(h).view(n, 1, self.kv_heads, self.head_dim).transpose(1, 2)
            v = attn.v_proj(h).view(n, 1, self.kv_heads, self.head_dim).transpose(1, 2)
            q, k = rotate(q, cos, sin), rotate(k, cos, sin)
            k_cache.index_copy_(2, plan.slot, k.to(k_cache.dtype))
            v_cache.index_copy_(2, plan.slot, v.to(v_cache.dtype))
            keys, values = k_cache, v_cache
            out = attend_one(q, keys, values, key_mask, self.heads // self.kv_heads, self.scale)
            x = x + attn.o_proj(out.transpose(1, 2).reshape(n, 1, -1))
            h = rms_norm(x, layer.post_attention_layernorm)
            mlp = layer.mlp
            x = x + mlp.down_proj(F.silu(mlp.gate_proj(h)) * mlp.up_proj(h))
        logits = self._logits(x[:, -1])
        if plan.logits is None:
            plan.logits = torch.empty_like(logits)
        plan.logits.copy_(logits)
        return plan.logits

    def _capture(self, plan: _Plan, autocast) -> None:
        """Warm the step up on a side stream, then capture it (autocast without its weight cache,
        which a graph cannot hold). The warm-up writes one cache column; every decode resets
        `valid` and rewrites the columns it reads, so that leaves no trace."""
        ctx = (lambda: torch.autocast("cuda", dtype=autocast, cache_enabled=False)) if autocast else nullcontext
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side), ctx():
            for _ in range(2):
                self._step(plan)
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph), ctx():
            self._step(plan)
        plan.graph = graph

    @torch.no_grad()
    def decode(self, ids: torch.Tensor, mask: torch.Tensor, max_new_tokens: int, pick, eos: torch.Tensor,
               pad_id: int, autocast: torch.dtype | None = None, graphs: bool | None = None):
        """As LlamaDecoder.decode; `autocast` a dtype to run the model under (None: its own dtype),
        `graphs` whether to replay the step as a CUDA graph (default: on a CUDA device)."""
        n, tp = ids.shape
        device = ids.device
        graphs = device.type == "cuda" if graphs is None else graphs
        cache_dtype = autocast or self.inner.embed_tokens.weight.dtype
        plan = self._plan(n, tp, max_new_tokens, device, cache_dtype, autocast, graphs)
        rows, tps = plan.rows, plan.prompt_width
        # The prompts, left-padded to the plan's width; rows beyond n are dummies of one padding
        # token each (a row needs one visible key: an all-masked softmax row would be NaN).
        full_ids = torch.full((rows, tps), pad_id, dtype=torch.long, device=device)
        full_mask = torch.zeros((rows, tps), dtype=torch.long, device=device)
        full_ids[:n, tps - tp:], full_mask[:n, tps - tp:] = ids, mask
        full_mask[n:, -1] = 1
        plan.valid.zero_()
        plan.valid[:, :tps] = full_mask.bool()
        positions = (full_mask.cumsum(-1) - 1).clamp(min=0)
        causal = torch.ones(tps, tps, dtype=torch.bool, device=device).tril()
        prefill_mask = (causal[None] & plan.valid[:, None, :tps]) | torch.eye(tps, dtype=torch.bool, device=device)[None]
        ctx = torch.autocast(device.type, dtype=autocast, cache_enabled=False) if autocast else nullcontext()
        with ctx:
            logits = self._forward(full_ids, positions, plan.caches, 0, prefill_mask[:, None])[:n]
        plan.pos.copy_(positions[:, -1:] + 1)

        def advance(tok: torch.Tensor, step: int) -> torch.Tensor:
            """Every row stays to the end: one shape, one captured step (a finished row is fed padding)."""
            plan.tok[:n, 0] = tok
            plan.slot.fill_(tps + step)
            if plan.graph is not None:
                plan.graph.replay()
                logits = plan.logits[:n]
            else:
                with ctx:
                    logits = self._step(plan)[:n]
            plan.pos.add_(1)
            return logits

        return decode_loop(logits, max_new_tokens, pick, eos, pad_id, advance, check_every=DONE_CHECK)


_STATIC: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def static_decoder(model) -> StaticDecoder:
    """The model's StaticDecoder, kept with the model so its buffers and graphs serve every rollout."""
    dec = _STATIC.get(model)
    if dec is None:
        dec = _STATIC[model] = StaticDecoder(model)
    return dec


def release_static_decoder(model) -> bool:
    """Drop the model's StaticDecoder, its cache and graphs (the next static decode builds them again).

    A held-out evaluation decodes with the pruning decoder in float32, whose cache for 500 rows
    (about 2 GB for the gpu preset, twice that while finished rows are dropped) would otherwise sit
    beside the static one's 2 GB: on 2026-11-27 that sum filled an H200 shared by 19 runs. Returns
    whether there was one to drop.
    """
    return _STATIC.pop(model, None) is not None
