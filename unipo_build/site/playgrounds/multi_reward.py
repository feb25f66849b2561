"""Playground 2: several rewards per rollout, GRPO against GDPO.

With K rewards per rollout (the training task here has two, ``correct`` and ``format``;
the playground adds a third, ``concise``, to make collisions common), there are two orders
in which to normalise:

- GRPO (arXiv 2402.03300) as used with several rewards: add the weighted rewards into one
  total per rollout, then z-score the totals within the group. Different reward vectors
  with the same total get the same advantage; GDPO calls this advantage collapse.
- GDPO (NVIDIA, arXiv 2601.05242, sec. 3): z-score each reward within its group first, take
  the weighted sum of those z-scores, then renormalise the sums over the whole batch:
  (x - mean) / (std + 1e-4).

Conventions: every within-group z-score is ``components.group_zscore_advantage`` (std with
n - 1, plus 1e-6), the same function the trainer uses for GRPO, so a reward that is equal
across a group contributes 0. The batch renormalisation uses the n - 1 std and the 1e-4
of the GDPO reference code.

A toy policy shows the effect over training: K independent Bernoulli "skills", each with
its own logit; a rollout succeeds on reward k with probability sigmoid(logit_k). Every
epoch samples a batch of groups, computes advantages with one method and takes one
REINFORCE step on the logits. The browser re-runs it (playgrounds-sim.js, same random
source, parity-tested), so the reader can change its settings.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from unipo_build.core.components import group_zscore_advantage
from unipo_build.site.playgrounds.rng import Stream, stream_seed

REWARD_NAMES = ("correct", "format", "concise")
BATCH_EPS = 1e-4  # GDPO's batch renormalisation: (x - mean) / (std + 1e-4)
N_ROLLOUTS = 12  # the toggle grid: one group of 12 rollouts


def grpo_advantages(rewards, weights=None):
    """GRPO with several rewards: z-score of the weighted total within each group.

    ``rewards``: (n_groups, G, K) of reward values; ``weights``: (K,), default all 1.
    Returns (n_groups, G).
    """
    rewards = np.asarray(rewards, dtype=np.float64)
    weights = np.ones(rewards.shape[-1]) if weights is None else np.asarray(weights, dtype=np.float64)
    totals = rewards @ weights
    return group_zscore_advantage(totals, std_ddof=1)


def gdpo_sums(rewards, weights=None):
    """GDPO before the batch step: sum_k w_k z_k, with z_k reward k's z-score in its group."""
    rewards = np.asarray(rewards, dtype=np.float64)
    weights = np.ones(rewards.shape[-1]) if weights is None else np.asarray(weights, dtype=np.float64)
    per_reward = np.stack(
        [group_zscore_advantage(rewards[..., k], std_ddof=1) for k in range(rewards.shape[-1])],
        axis=-1,
    )
    return per_reward @ weights


def gdpo_advantages(rewards, weights=None, batch_eps: float = BATCH_EPS):
    """GDPO: ``gdpo_sums`` renormalised over the whole batch, (x - mean) / (std + 1e-4).

    The renormalisation scales every group by the same factor, so it keeps the order
    and the ratios that the per-reward step created; it only fixes the overall size
    (which grows with the number of rewards) so that the step size means the same.
    """
    sums = gdpo_sums(rewards, weights)
    flat = sums.reshape(-1)
    std = float(np.std(flat, ddof=1)) if flat.size > 1 else 0.0
    return (sums - float(np.mean(flat))) / (std + batch_eps)


def collapsed_groups(rewards, advantages, decimals: int = 9) -> list[list[int]]:
    """Rollouts of one group whose reward vectors differ but whose advantages are equal.

    ``rewards``: (G, K); ``advantages``: (G,). Returns lists of rollout indices (each with
    at least two distinct reward vectors), sorted by advantage.
    """
    rewards = np.asarray(rewards)
    by_value: dict[float, list[int]] = {}
    for i, adv in enumerate(np.round(np.asarray(advantages, dtype=np.float64), decimals)):
        by_value.setdefault(float(adv), []).append(i)
    out = []
    for value in sorted(by_value):
        members = by_value[value]
        if len({tuple(rewards[i]) for i in members}) > 1:
            out.append(members)
    return out


# The two-rollout example of the GDPO paper: two binary rewards, two rollouts per group,
# one group per pair of totals.
TWO_ROLLOUT_GROUPS = {
    "(0, 1)": ((0, 0), (0, 1)),
    "(0, 2)": ((0, 0), (1, 1)),
    "(1, 2)": ((0, 1), (1, 1)),
}


@dataclass(frozen=True)
class TwoRolloutRow:
    totals: str
    vectors: tuple
    grpo: tuple[float, float]
    gdpo_sum: tuple[float, float]
    gdpo: tuple[float, float]


def two_rollout_example() -> list[TwoRolloutRow]:
    """GRPO and GDPO on the three two-rollout groups, taken as one batch."""
    names = list(TWO_ROLLOUT_GROUPS)
    batch = np.array([TWO_ROLLOUT_GROUPS[n] for n in names], dtype=np.float64)  # (3, 2, 2)
    grpo = grpo_advantages(batch)
    sums = gdpo_sums(batch)
    gdpo = gdpo_advantages(batch)
    return [
        TwoRolloutRow(
            n, TWO_ROLLOUT_GROUPS[n],
            tuple(float(x) for x in grpo[i]),
            tuple(float(x) for x in sums[i]),
            tuple(float(x) for x in gdpo[i]),
        )
        for i, n in enumerate(names)
    ]


# The toggle grid's starting state: 12 rollouts x (correct, format, concise). As in real
# runs, correctness is rare (3 of 12) and format common (8 of 12); totals repeat, so GRPO
# gives rollouts with different reward vectors the same advantage.
DEFAULT_GRID = (
    (1, 1, 1), (1, 1, 0), (0, 1, 1), (1, 0, 1),
    (0, 1, 0), (0, 0, 1), (0, 1, 1), (0, 1, 0),
    (0, 0, 0), (0, 1, 0), (0, 1, 1), (0, 0, 0),
)
# The "same totals" button: every total is 1 or 2, so GRPO has only two values to give.
COLLIDE_GRID = (
    (1, 0, 0), (0, 1, 0), (0, 0, 1), (0, 1, 0),
    (0, 1, 1), (1, 1, 0), (0, 1, 1), (1, 0, 1),
    (0, 1, 0), (0, 0, 1), (0, 1, 1), (0, 1, 0),
)


# ---------------------------------------------------------------------------
# The toy Bernoulli policy
# ---------------------------------------------------------------------------

@dataclass(frozen=True)
class ToySettings:
    """Defaults of the training figure (the reader can change weights, G and seed)."""

    init_probs: tuple[float, ...] = (0.05, 0.6, 0.4)  # correct starts rare, format common
    weights: tuple[float, ...] = (1.0, 1.0, 1.0)
    group_size: int = 8
    n_groups: int = 8
    epochs: int = 150
    lr: float = 0.25
    seed: int = 1


TOY_METHODS = ("grpo", "gdpo")


def train_bernoulli(method: str, settings: ToySettings = ToySettings(), seed: int | None = None) -> np.ndarray:
    """Train the K logits for ``settings.epochs`` epochs; returns probabilities, (epochs + 1, K).

    Each epoch: rewards x_{g,i,k} = [u < p_k] with uniforms drawn in (group, rollout, reward)
    order; advantages A_{g,i} by ``method``; then logit_k += lr * mean_{g,i} A_{g,i} (x_{g,i,k} - p_k),
    the REINFORCE step (d log P(x) / d logit_k = x_k - p_k).
    """
    seed = settings.seed if seed is None else seed
    stream = Stream(stream_seed(seed, TOY_METHODS.index(method)))
    k = len(settings.init_probs)
    logits = np.array([math.log(p / (1.0 - p)) for p in settings.init_probs])
    shape = (settings.n_groups, settings.group_size, k)
    history = [1.0 / (1.0 + np.exp(-logits))]
    for _ in range(settings.epochs):
        probs = history[-1]
        x = (stream.uniforms(int(np.prod(shape))).reshape(shape) < probs).astype(np.float64)
        if method == "grpo":
            adv = grpo_advantages(x, settings.weights)
        else:
            adv = gdpo_advantages(x, settings.weights)
        grad = np.mean(adv[..., None] * (x - probs), axis=(0, 1))
        logits = logits + settings.lr * grad
        history.append(1.0 / (1.0 + np.exp(-logits)))
    return np.array(history)


def js_config() -> dict:
    """Constants for playgrounds-sim.js."""
    return {
        "rewardNames": list(REWARD_NAMES),
        "toyMethods": list(TOY_METHODS),
        "batchEps": BATCH_EPS,
    }


def toy_settings_as_js(settings: ToySettings) -> dict:
    return {
        "initProbs": list(settings.init_probs),
        "weights": list(settings.weights),
        "groupSize": settings.group_size,
        "nGroups": settings.n_groups,
        "epochs": settings.epochs,
        "lr": settings.lr,
        "seed": settings.seed,
    }
