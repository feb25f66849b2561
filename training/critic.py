"""The critic PPO's GAE advantage needs: V(s_t) for every response position.

A copy of the warm-started policy's trunk with a zero-initialised scalar head (the first values
are 0). Its own module so that training/rl.py keeps to the loop.
"""

from __future__ import annotations

import copy

import torch
from torch import nn

from unipo_build.core.components import clipped_value_loss

from .batches import select_rows
from .generation import RolloutBatch, positions_from_mask


class Critic(nn.Module):
    """V(s_t) for every response position, initialised from the warm-started policy."""

    def __init__(self, policy: nn.Module):
        super().__init__()
        self.trunk = copy.deepcopy(policy.base_model)
        self.head = nn.Linear(policy.config.hidden_size, 1)
        nn.init.zeros_(self.head.weight)
        nn.init.zeros_(self.head.bias)

    def forward(self, batch: RolloutBatch) -> torch.Tensor:
        device = self.head.weight.device
        ids, mask = batch.input_ids.to(device), batch.attention_mask.to(device)
        width = ids.shape[1] - batch.prompt_width
        # float32 like the policy (no autocast): a bf16 critic diverged to NaN within 20 rollouts on a GPU.
        hidden = self.trunk(input_ids=ids, attention_mask=mask, position_ids=positions_from_mask(mask)).last_hidden_state
        # The state before response token t is the position that predicts it.
        values = self.head(hidden[:, -(width + 1):-1].float()).squeeze(-1)
        return values * batch.response_mask.to(device)


def critic_step(critic: Critic, optimizer, batch: RolloutBatch, chunks: list[list[int]], mask: torch.Tensor,
                idx: torch.Tensor, inputs: dict, value_clip: float, grad_clip: float) -> torch.Tensor:
    """The critic's step on an update's chunks; returns its value loss (float64, on the device).

    `mask` is the rollout's response mask, `idx` the minibatch's rows, `inputs` the update's device
    tensors (rows in chunk order: "mask", "values", "returns"). Each chunk's token mean is weighted
    by its share of the minibatch's tokens, counted on the host.
    """
    optimizer.zero_grad(set_to_none=True)
    tokens = float(mask[idx].sum())
    row_tokens = mask.sum(-1).tolist()
    value_loss = torch.zeros((), dtype=torch.float64, device=inputs["mask"].device)
    start = 0
    for chunk in chunks:
        new_values = critic(select_rows(batch, chunk))
        part_of = {k: inputs[k][start:start + len(chunk), :new_values.shape[1]] for k in ("mask", "values", "returns")}
        start += len(chunk)
        part = clipped_value_loss(new_values, part_of["values"], part_of["returns"], part_of["mask"],
                                  value_clip) * (sum(row_tokens[r] for r in chunk) / tokens)
        part.backward()
        value_loss += part.detach().double()
    nn.utils.clip_grad_norm_(critic.parameters(), grad_clip)
    optimizer.step()
    return value_loss
