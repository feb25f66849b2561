"""An algorithm's objective, composed from its resolved components.

This is the one place that dispatches on component kinds. The trainer calls it on
torch tensors to build its loss; the site calls it on numpy arrays to recompute a
logged token and to fill the Algorithm Explainer; the consistency test holds the two
equal. Nothing outside this module and the registry in ``specs`` branches on an
algorithm's name or its components.

The step objective of one gradient update is J = sum_{i,t} w_{i,t} * objective_{i,t}
over the responses of that update's minibatch, with the aggregation weights w.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from array_api_compat import array_namespace

from . import components as C
from .specs import ResolvedAlgorithm


@dataclass
class TokenTerms:
    """Per-token quantities of one evaluation of the objective, all shaped (B, T)."""

    ratio: Any
    surrogate: Any
    clip_side: Any
    kl: Any | None
    objective: Any


def shape_rewards(cfg: ResolvedAlgorithm, rewards, lengths):
    """Apply the shaping slot to per-response rewards (B,). Returns (shaped, shaping term)."""
    xp = array_namespace(rewards)
    if cfg.kind("shaping") == "overlong":
        term = C.overlong_penalty(lengths, cfg.param("shaping", "max_length"), cfg.param("shaping", "cache_length"),
                                  cfg.param("shaping", "penalty", 1.0))
        term = xp.astype(term, rewards.dtype)
        return rewards + term, term
    return rewards, xp.zeros_like(rewards)


def keep_groups(cfg: ResolvedAlgorithm, correct):
    """The filter slot on a (n_groups, G) 0/1 array: which groups are trained on."""
    xp = array_namespace(correct)
    if cfg.kind("filter") == "dynamic_sampling":
        return C.dynamic_sampling_keep(correct)
    return xp.ones(correct.shape[:1], dtype=xp.bool)


def uses_critic(cfg: ResolvedAlgorithm) -> bool:
    return cfg.kind("advantage") == "gae"


def uses_reference(cfg: ResolvedAlgorithm) -> bool:
    return cfg.kind("kl") != "none"


def kl_in_reward(cfg: ResolvedAlgorithm) -> bool:
    return cfg.kind("kl") == "in_reward"


def compute_advantages(cfg: ResolvedAlgorithm, *, rewards, group_size: int, mask,
                       rollout_kl=None, values=None):
    """The advantage slot. Returns ``(advantages (B, T), returns (B, T) or None)``.

    ``rewards``: (B,) scalar rewards (after shaping), group-major. ``rollout_kl``: the
    per-token KL estimate at sampling time, needed when the KL sits in the reward.
    ``values``: the critic's per-token values, needed by GAE.
    """
    xp = array_namespace(rewards)
    kind = cfg.kind("advantage")
    params = cfg.components["advantage"].params
    mask = xp.astype(mask, rewards.dtype)
    if kind in ("group_zscore", "group_mean", "leave_one_out"):
        grouped = xp.reshape(rewards, (-1, group_size))
        if kind == "group_zscore":
            adv = C.group_zscore_advantage(grouped, std_ddof=params.get("std_ddof", 1), eps=params.get("eps", 1e-6))
        elif kind == "group_mean":
            adv = C.group_mean_advantage(grouped)
        else:
            adv = C.leave_one_out_advantage(grouped)
        return xp.reshape(adv, (-1,))[:, None] * mask, None

    token_rewards = C.terminal_token_rewards(rewards, mask)
    if kl_in_reward(cfg):
        if rollout_kl is None:
            raise ValueError("the KL sits in the reward: rollout_kl is required")
        token_rewards = token_rewards - cfg.param("kl", "beta") * rollout_kl * mask
    gamma = params.get("gamma", 1.0)
    if kind == "gae":
        if values is None:
            raise ValueError("GAE needs the critic's values")
        return C.gae_advantage(token_rewards, values, mask, gamma=gamma, lam=params.get("lam", 0.95))
    returns = C.reward_to_go(token_rewards, mask, gamma=gamma)
    if kind == "reinforce_return":
        if params.get("baseline", "batch_mean") == "batch_mean":
            return (returns - xp.mean(rewards)) * mask, returns
        return returns, returns
    if kind == "whitened_return":
        return C.batch_whiten(returns, mask, eps=params.get("eps", 1e-6)), returns
    raise ValueError(f"unknown advantage component {kind!r}")


def ratio(cfg: ResolvedAlgorithm, logp, old_logp, mask):
    """The ratio slot, (B, T)."""
    kind = cfg.kind("ratio")
    if kind == "token":
        return C.token_ratio(logp, old_logp)
    if kind == "sequence":
        xp = array_namespace(logp)
        return C.sequence_ratio(logp, old_logp, xp.astype(mask, logp.dtype))
    if kind == "none":
        return C.self_ratio(logp)
    raise ValueError(f"unknown ratio component {kind!r}")


def clip_bounds(cfg: ResolvedAlgorithm) -> tuple[float | None, float | None]:
    """(eps_low, eps_high) of the clip slot; (None, None) without clipping."""
    kind = cfg.kind("clip")
    if kind == "symmetric":
        eps = cfg.param("clip", "eps")
        return eps, eps
    if kind == "asymmetric":
        return cfg.param("clip", "eps_low"), cfg.param("clip", "eps_high")
    return None, None


def token_terms(cfg: ResolvedAlgorithm, *, logp, old_logp, advantages, mask, ref_logp=None,
                rollout_kl=None) -> TokenTerms:
    """Ratio, clipped surrogate, KL and the per-token objective for every token.

    objective_{i,t} = surrogate_{i,t} - beta * KL_{i,t} when the KL sits in the loss;
    = surrogate_{i,t} otherwise (a KL in the reward is already inside the advantage, and
    ``rollout_kl`` is then reported as the token's KL).
    """
    xp = array_namespace(logp)
    mask_f = xp.astype(mask, logp.dtype)
    rho = ratio(cfg, logp, old_logp, mask_f)
    eps_low, eps_high = clip_bounds(cfg)
    surrogate, side = C.clipped_surrogate(rho, advantages, eps_low, eps_high)
    surrogate = surrogate * mask_f
    side = side * xp.astype(mask, side.dtype)
    kl = None
    objective = surrogate
    if cfg.kind("kl") == "in_loss":
        if ref_logp is None:
            raise ValueError("the KL sits in the loss: ref_logp is required")
        kl = C.kl_estimate(logp, ref_logp, cfg.param("kl", "estimator")) * mask_f
        objective = surrogate - cfg.param("kl", "beta") * kl
    elif cfg.kind("kl") == "in_reward":
        kl = rollout_kl
    return TokenTerms(ratio=rho * mask_f, surrogate=surrogate, clip_side=side, kl=kl, objective=objective)


def weights(cfg: ResolvedAlgorithm, mask, dtype=None):
    """The aggregation slot: per-token weights (B, T) of one minibatch."""
    xp = array_namespace(mask)
    mask_f = xp.astype(mask, dtype if dtype is not None else xp.float64)
    return C.aggregation_weights(cfg.kind("aggregation"), mask_f, cfg.param("aggregation", "normalizer"))


def step_objective(cfg: ResolvedAlgorithm, objective, mask):
    """J = sum w * objective over a minibatch; returns (J, weights)."""
    xp = array_namespace(objective)
    w = weights(cfg, mask, dtype=objective.dtype)
    return xp.sum(w * objective), w


def rollout_kl(cfg: ResolvedAlgorithm, old_logp, ref_logp, mask):
    """Per-token KL of the sampling policy from the reference, for a KL in the reward."""
    xp = array_namespace(old_logp)
    return C.kl_estimate(old_logp, ref_logp, cfg.param("kl", "estimator")) * xp.astype(mask, old_logp.dtype)
