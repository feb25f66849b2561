"""The one decoding loop: token by token, what every sampler records and when it stops.

The three samplers (the generic loop of training/generation.py over a transformers cache, the lean
Llama decoder and the static CUDA-graph decoder of training/llama_decode.py) differ only in how one
step's logits are computed and whether finished rows leave the running batch. The bookkeeping is
here, once: each step picks a token for every running row, records token, log-prob and mask for the
rows still going (a finished row records nothing more), marks the rows that ended with <eos>, stops
at the budget or when every row has finished, and otherwise asks the sampler for the next logits,
feeding padding to finished rows that are still in the batch.
"""

from __future__ import annotations

from typing import Callable

import torch

#: ``pick(logits [R, V]) -> (tokens [R], log-probs [R])``: the next token of each running row.
Pick = Callable[[torch.Tensor], tuple[torch.Tensor, torch.Tensor]]
#: ``advance(tokens [R], step) -> logits [R, V]``: feed each running row its token (padding for a
#: finished one) as response position ``step`` and return the logits that follow.
Advance = Callable[[torch.Tensor, int], torch.Tensor]
#: ``drop(done [R]) -> rows to keep [R'] or None``: called before each advance; when it returns
#: indices the sampler has cut its own state (cache, masks, positions) to those rows.
Drop = Callable[[torch.Tensor], "torch.Tensor | None"]


def decode_loop(logits: torch.Tensor, max_new_tokens: int, pick: Pick, eos: torch.Tensor, pad_id: int,
                advance: Advance, drop: Drop | None = None, check_every: int = 1):
    """Decode from the prompts' last logits [N, V]; returns (response ids [N, Tr] padded with
    ``pad_id`` after the end, response mask [N, Tr] (1 up to and including <eos>), log-probs [N, Tr])
    with Tr the last step any row took.

    The host looks at whether every row has finished every ``check_every`` steps (each look waits
    for the device); the recording itself never does.
    """
    n, device = logits.shape[0], logits.device
    response = torch.full((n, max_new_tokens), pad_id, dtype=torch.long, device=device)
    response_mask = torch.zeros((n, max_new_tokens), device=device)
    logps = torch.zeros((n, max_new_tokens), device=device)
    active = torch.arange(n, device=device)  # original row of each running row
    done = torch.zeros(n, dtype=torch.bool, device=device)  # finished rows still running
    for step in range(max_new_tokens):
        tok, lp = pick(logits)
        live = ~done
        response[active, step] = torch.where(live, tok, torch.full_like(tok, pad_id))
        logps[active, step] = torch.where(live, lp, torch.zeros_like(lp))
        response_mask[active, step] = live.to(response_mask.dtype)
        done = done | torch.isin(tok, eos)
        if step == max_new_tokens - 1 or (step % check_every == check_every - 1 and bool(done.all())):
            break
        keep = drop(done) if drop is not None else None
        if keep is not None:
            active, tok, done = active[keep], tok[keep], done[keep]
        logits = advance(torch.where(done, torch.full_like(tok, pad_id), tok), step)
    taken = response_mask.sum(0).nonzero()
    steps = int(taken.max()) + 1 if len(taken) else 0
    return response[:, :steps], response_mask[:, :steps], logps[:, :steps]
