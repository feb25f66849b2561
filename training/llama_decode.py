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
"""

from __future__ import annotations

import torch
import torch.nn.functional as F


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


class LlamaDecoder:
    """Decodes with a LlamaForCausalLM's weights and a preallocated cache (see the module docstring)."""

    def __init__(self, model):
        self.model = model
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
            if self.kv_heads != self.heads:
                keys = keys.repeat_interleave(self.heads // self.kv_heads, dim=1)
                values = values.repeat_interleave(self.heads // self.kv_heads, dim=1)
            scores = torch.matmul(q, keys.transpose(2, 3)) * self.scale
            scores = scores.masked_fill(~key_mask, float("-inf"))
            out = torch.matmul(torch.softmax(scores.float(), dim=-1).to(values.dtype), values)
        else:
            out = F.scaled_dot_product_attention(q, keys, values, attn_mask=key_mask, scale=self.scale,
                                                 enable_gqa=self.kv_heads != self.heads)
        x = x + attn.o_proj(out.transpose(1, 2).reshape(n, t, -1))
        h = rms_norm(x, layer.post_attention_layernorm)
        mlp = layer.mlp
        return x + mlp.down_proj(F.silu(mlp.gate_proj(h)) * mlp.up_proj(h))

    def _forward(self, ids, positions, caches, start: int, key_mask) -> torch.Tensor:
        """Logits of the last new position of every row; writes the new keys/values into `caches`."""
        x = self.inner.embed_tokens(ids)
        cos, sin = self.inner.rotary_emb(x, positions)
        cos, sin = cos[:, None], sin[:, None]
        for layer, (k_cache, v_cache) in zip(self.layers, caches):
            x = self._attention_block(layer, x, cos, sin, k_cache, v_cache, start, key_mask)
        return self.model.lm_head(rms_norm(x[:, -1], self.inner.norm))

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
        next_position = positions[:, -1:] + 1

        response = torch.full((n, max_new_tokens), pad_id, dtype=torch.long, device=device)
        response_mask = torch.zeros((n, max_new_tokens), device=device)
        logps = torch.zeros((n, max_new_tokens), device=device)
        active = torch.arange(n, device=device)  # original row of each running row
        done = torch.zeros(n, dtype=torch.bool, device=device)  # finished rows not yet dropped
        steps = 0
        for step in range(max_new_tokens):
            tok, lp = pick(logits)
            live = ~done
            rows = active[live]
            response[rows, step], logps[rows, step], response_mask[rows, step] = tok[live], lp[live], 1.0
            steps = step + 1
            done = done | torch.isin(tok, eos)
            if step == max_new_tokens - 1 or bool(done.all()):
                break
            if int(done.sum()) * 4 >= len(active):  # a quarter has finished: drop the finished rows
                keep = (~done).nonzero().squeeze(1)
                caches = [(k.index_select(0, keep), v.index_select(0, keep)) for k, v in caches]
                valid, active, tok, done = valid[keep], active[keep], tok[keep], done[keep]
                next_position = next_position[keep]
            # Finished rows that stay for now are fed padding; what they compute is never recorded.
            tok = torch.where(done, torch.full_like(tok, pad_id), tok)
            pos = tp + step
            valid[:, pos] = True
            logits = self._forward(tok[:, None], next_position, caches, pos, valid[:, None, None, :pos + 1])
            next_position = next_position + 1
        return response[:, :steps], response_mask[:, :steps], logps[:, :steps]
