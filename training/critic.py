"""The critic PPO's GAE advantage needs: V(s_t) for every response position.

A copy of the warm-started policy's trunk with a zero-initialised scalar head (the first values
are 0). Its own module so that training/rl.py keeps to the loop.
"""

from __future__ import annotations

import copy

import torch
from torch import nn

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
