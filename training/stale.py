"""Asynchronous sampling: rollouts drawn by the policy as it was some rollouts ago.

Trainers that overlap generation with learning (prime-rl's ``max_off_policy_steps``, AReaL's decoupled
PPO, verl's and OpenRLHF's asynchronous modes) let the sampler run on weights up to k updates old:
while the learner trains on rollout r, the inference engine is already generating rollout r+1
with the weights it had. The learner then sees tokens drawn by a policy that is not its pi_old,
and the log-probs the sampler recorded differ from those the learner recomputes: the sampler/
learner mismatch that rollout correction (truncated or masked importance sampling) weighs.

Our trainer is one process, so it reproduces the lag instead of the overlap: with ``lag`` k,
rollout r is sampled by a frozen copy of the policy holding the weights the policy had at the
start of rollout max(0, r - k). Everything else is unchanged: pi_old is still the policy at the
start of the rollout (the learner recomputes its log-probs), and the sampler's own log-probs
(the copy's, recorded while decoding) are logged beside them, so the mismatch in the logs is
the real one of a stale sampler, not an injected one. ``lag`` 0 is the synchronous loop: the
policy samples its own rollouts.
"""

from __future__ import annotations

import copy
from collections import deque

import torch


class StaleSampler:
    """The model a rollout is sampled from, ``lag`` rollouts behind the policy.

    Call :meth:`for_rollout` once at the start of every rollout, before the rollout's updates:
    it snapshots the policy and returns the copy holding the oldest snapshot kept, that of
    ``lag`` rollouts ago (or of rollout 0 while fewer have run).
    """

    def __init__(self, policy: torch.nn.Module, lag: int):
        if lag < 1:
            raise ValueError(f"sampler_lag must be at least 1 for a stale sampler (0 is the synchronous loop), got {lag}")
        self.lag = lag
        self.model = copy.deepcopy(policy).eval().requires_grad_(False)
        # the policy's weights at the start of each of the last lag + 1 rollouts, oldest first
        self.snapshots: deque[dict[str, torch.Tensor]] = deque(maxlen=lag + 1)

    def for_rollout(self, policy: torch.nn.Module) -> torch.nn.Module:
        self.snapshots.append({k: v.detach().clone() for k, v in policy.state_dict().items()})
        self.model.load_state_dict(self.snapshots[0])
        return self.model

    # -- checkpoints: a resumed run samples from the same stale weights as an uninterrupted one --

    def state(self) -> list[dict[str, torch.Tensor]]:
        return list(self.snapshots)

    def load_state(self, snapshots: list[dict[str, torch.Tensor]]) -> None:
        if not snapshots:
            raise ValueError("the checkpoint holds no sampler snapshot (it was written by a synchronous run)")
        if len(snapshots) > self.lag + 1:
            raise ValueError(f"a checkpoint holds {len(snapshots)} sampler snapshots; a lag of {self.lag} keeps "
                             f"at most {self.lag + 1} (was the run resumed with another --sampler-lag?)")
        self.snapshots = deque(snapshots, maxlen=self.lag + 1)


def restore_sampler(stale: StaleSampler | None, snapshots: list[dict[str, torch.Tensor]] | None) -> None:
    """Give a resumed run's sampler the snapshots its checkpoint holds (None: written by a synchronous
    run). A checkpoint and a run that disagree on being asynchronous are refused in one line."""
    if (stale is None) != (snapshots is None):
        written = "a synchronous run (sampler_lag 0)" if snapshots is None else "an asynchronous run"
        raise ValueError(f"the checkpoint was written by {written} and this one has sampler_lag "
                         f"{stale.lag if stale is not None else 0}: resume it with the --sampler-lag it was started with")
    if stale is not None:
        stale.load_state(snapshots)
