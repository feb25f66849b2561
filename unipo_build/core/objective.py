"""An algorithm's objective, composed from its resolved components.

The trainer calls it on torch tensors to build its loss; the site calls it on numpy arrays
to recompute a logged token and to fill the Algorithm Explainer; the consistency test holds
the two equal. It dispatches through the component registry (``unipo_build.core.registry``):
each slot's kind brings its own function and properties, so nothing here (or anywhere
else) branches on a kind's name.

The step objective of one gradient update is J = sum_{i,t} w_{i,t} * objective_{i,t}
over the responses of that update's minibatch, with the aggregation weights w.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
from array_api_compat import array_namespace

from unipo_build.core import components as C
from unipo_build.core import registry
from unipo_build.core.numbers import plain_num
from unipo_build.core.specs import ResolvedAlgorithm


@dataclass
class TokenTerms:
    """Per-token quantities of one evaluation of the objective, all shaped (B, T)."""

    ratio: Any
    surrogate: Any
    clip_side: Any
    kl: Any | None
    objective: Any
    # The rollout correction's weight on each token's surrogate and which bound acted (None: no correction).
    correction: Any | None = None
    correction_side: Any | None = None


def shape_rewards(cfg: ResolvedAlgorithm, rewards, lengths):
    """Apply the shaping slot to per-response rewards (B,). Returns (shaped, shaping term)."""
    xp = array_namespace(rewards)
    kind = cfg.component("shaping")
    if kind.apply is None:
        return rewards, xp.zeros_like(rewards)
    term = xp.astype(kind.apply(lengths, cfg.components["shaping"].params), rewards.dtype)
    return rewards + term, term


def keep_groups(cfg: ResolvedAlgorithm, correct):
    """The filter slot on a (n_groups, G) 0/1 array: which groups are trained on."""
    xp = array_namespace(correct)
    kind = cfg.component("filter")
    if kind.apply is None:
        return xp.ones(correct.shape[:1], dtype=xp.bool)
    return kind.apply(correct, cfg.components["filter"].params)


def uses_critic(cfg: ResolvedAlgorithm) -> bool:
    return cfg.component("advantage").needs_critic


def uses_reference(cfg: ResolvedAlgorithm) -> bool:
    return cfg.component("kl").needs_reference


def kl_in_reward(cfg: ResolvedAlgorithm) -> bool:
    return cfg.component("kl").kl_place == "reward"


def kl_in_loss(cfg: ResolvedAlgorithm) -> bool:
    return cfg.component("kl").kl_place == "loss"


def uses_sampler_logp(cfg: ResolvedAlgorithm) -> bool:
    """Whether the objective needs the sampler's own log-probs (a rollout correction weighs by them)."""
    return not cfg.component("correction").is_none


def correction_weight(cfg: ResolvedAlgorithm, old_logp, sampler_logp, mask):
    """The correction slot: ``(weight, side)`` (B, T) of each token, from the learner's log-probs before the
    rollout's first update and the sampler's; ``(None, None)`` without a correction."""
    kind = cfg.component("correction")
    if kind.apply is None:
        return None, None
    if sampler_logp is None:
        raise ValueError(f"the rollout correction {kind.name} weighs each token by exp(old_logp - sample_logp): "
                         "the sampler's log-probs (tokens.sample_logp) are required")
    xp = array_namespace(old_logp)
    return kind.apply(old_logp, sampler_logp, xp.astype(mask, old_logp.dtype), cfg.components["correction"].params)


def group_baseline(cfg: ResolvedAlgorithm) -> bool:
    """Whether the advantage compares a response with the other responses to its prompt only
    (so a group whose rewards are all equal gets advantage 0 everywhere)."""
    return cfg.component("advantage").group_baseline


def compute_advantages(cfg: ResolvedAlgorithm, *, rewards, group_size: int, mask,
                       rollout_kl=None, values=None):
    """The advantage slot. Returns ``(advantages (B, T), returns (B, T) or None)``.

    ``rewards``: (B,) scalar rewards (after shaping), group-major. ``rollout_kl``: the
    per-token KL estimate at sampling time, needed when the KL sits in the reward.
    ``values``: the critic's per-token values, needed by GAE.
    """
    xp = array_namespace(rewards)
    kind = cfg.component("advantage")
    params = cfg.components["advantage"].params
    mask = xp.astype(mask, rewards.dtype)
    if kind.group_baseline:
        grouped = xp.reshape(rewards, (-1, group_size))
        adv = kind.apply(grouped, params)
        return xp.reshape(adv, (-1,))[:, None] * mask, None
    token_rewards = C.terminal_token_rewards(rewards, mask)
    if kl_in_reward(cfg):
        if rollout_kl is None:
            raise ValueError("the KL sits in the reward: rollout_kl is required")
        token_rewards = token_rewards - cfg.param("kl", "beta") * rollout_kl * mask
    return kind.apply(token_rewards, mask, rewards, values, params)


def ratio(cfg: ResolvedAlgorithm, logp, old_logp, mask):
    """The ratio slot, (B, T)."""
    xp = array_namespace(logp)
    return cfg.component("ratio").apply(logp, old_logp, xp.astype(mask, logp.dtype), cfg.components["ratio"].params)


def clip_bounds(cfg: ResolvedAlgorithm) -> tuple[float | None, float | None]:
    """(eps_low, eps_high) of the clip slot; (None, None) without clipping."""
    return cfg.component("clip").bounds(cfg.components["clip"].params)


def clip_rule(cfg: ResolvedAlgorithm) -> registry.ClipRule | None:
    """The clip slot's bound in a reader's words and the ratio's numbers (the kind's ``clip_rule``); a kind that
    gives only its ``bounds`` is read as PPO's clip of the ratio to [1 - eps_low, 1 + eps_high], a missing side
    left out; None where the objective clips no token (no clip, SAPO's gate)."""
    kind, params = cfg.component("clip"), cfg.components["clip"].params
    if kind.clip_rule is not None:
        return kind.clip_rule(params)
    eps_low, eps_high = kind.bounds(params) if kind.bounds is not None else (None, None)
    if eps_low is None and eps_high is None:
        return None
    low = None if eps_low is None else 1 - eps_low
    high = None if eps_high is None else 1 + eps_high
    where = ", ".join(f"{side} {plain_num(float(x), 3)}" for side, x in (("at least", low), ("at most", high))
                      if x is not None)
    return registry.ClipRule(f"the clip ({kind.label or kind.name})", f"the ratio's range ({where})", low, high,
                             f"A < 0, ratio below {plain_num(float(low), 3)}" if low is not None else "",
                             f"A > 0, ratio above {plain_num(float(high), 3)}" if high is not None else "")


def surrogate_terms(cfg: ResolvedAlgorithm, rho, advantages, mask=None, old_logp=None):
    """The clip slot: the surrogate's form (PPO's clipped min, CISPO's clipped weight, SAPO's gate,
    dual-clip, GMPO's geometric mean, DPPO's mask, ...) on the ratio and the advantages, ``(surrogate, clip
    side)`` (B, T). ``mask``: the real tokens, which a kind whose term reads the whole response needs;
    ``old_logp``: the tokens' log-probs when sampled, which a kind that reads their probability needs."""
    kind = cfg.component("clip")
    params = cfg.components["clip"].params
    if kind.needs_mask:
        if mask is None:
            raise ValueError(f"the {kind.name} surrogate reads the whole response: the token mask is required")
        return kind.apply(rho, advantages, params, mask)
    if kind.needs_old_logp:
        if old_logp is None:
            raise ValueError(f"the {kind.name} surrogate reads each token's probability when it was sampled: "
                             "old_logp is required")
        return kind.apply(rho, advantages, params, old_logp=old_logp)
    return kind.apply(rho, advantages, params)


def term_and_gradient(clip_kind, params: dict, ratio: float, advantage: float,
                      old_logp: float | None = None) -> tuple[float, float, int]:
    """A token's term under a clip kind (a registry kind of the clip slot, with its parameters), its
    derivative with respect to the token's log-probability (the kind's ``grad``: stop-gradients count)
    and the clip side the kind reports. A kind that weighs a whole response (``needs_mask``) has no
    term of a token alone; one that reads the token's probability (``needs_old_logp``) needs ``old_logp``."""
    values, grads, sides = terms_and_gradients(clip_kind, params, [ratio], [advantage],
                                               None if old_logp is None else [old_logp])
    return float(values[0]), float(grads[0]), int(sides[0])


def terms_and_gradients(clip_kind, params: dict, ratios: Sequence[float], advantages: Sequence[float],
                        old_logps: Sequence[float] | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`term_and_gradient` of many tokens at once, on numpy alone: the term from the kind's
    ``apply``, its derivative from the kind's ``grad`` (closed form, held equal to torch's autograd
    through ``apply`` by the tests), so that a site build needs no torch."""
    if clip_kind.needs_mask or clip_kind.grad is None:
        raise ValueError(f"the {clip_kind.name} clip has no term of a token alone (it weighs the whole response)"
                         if clip_kind.needs_mask else f"the {clip_kind.name} clip kind registers no grad")
    if clip_kind.needs_old_logp and old_logps is None:
        raise ValueError(f"the {clip_kind.name} clip reads each token's probability when it was sampled: its term "
                         "needs the tokens' old log-probs (old_logps)")
    rho = np.asarray([float(r) for r in ratios], dtype=np.float64)
    advantage = np.asarray([float(a) for a in advantages], dtype=np.float64)
    extra = ({"old_logp": np.asarray([float(x) for x in old_logps], dtype=np.float64)}
             if clip_kind.needs_old_logp else {})
    # IEEE arithmetic as torch's autograd had it: a logged ratio or advantage at the float limits gives an
    # infinite term or gradient, not a warning (the pages say what is not finite).
    with np.errstate(over="ignore", invalid="ignore", under="ignore"):
        value, side = clip_kind.apply(rho, advantage, params, **extra)
        grads = np.asarray(clip_kind.grad(rho, advantage, params, **extra), dtype=np.float64)
    return (np.asarray(value, dtype=np.float64).copy(), np.broadcast_to(grads, rho.shape).copy(),
            np.broadcast_to(np.asarray(side), rho.shape).astype(int))


def token_terms(cfg: ResolvedAlgorithm, *, logp, old_logp, advantages, mask, ref_logp=None,
                rollout_kl=None, kl=None, sampler_logp=None) -> TokenTerms:
    """Ratio, surrogate (the clip slot's form), KL and the per-token objective for every token.

    objective_{i,t} = omega_{i,t} * surrogate_{i,t} - beta * KL_{i,t} when the KL sits in the loss;
    = omega_{i,t} * surrogate_{i,t} otherwise, with omega the rollout correction's constant weight from
    ``sampler_logp`` (1 without a correction; as TRL, verl and OpenRLHF weigh the policy loss, not the
    KL) (a KL in the reward is already inside the advantage, and
    ``rollout_kl`` is then reported as the token's KL). The KL in the loss is the spec's
    estimator from ``ref_logp`` (:func:`reference_kl`), or ``kl`` where given: the per-token KL
    a trainer logged, (B, T), which an importer keeps as the trainer computed it.
    """
    xp = array_namespace(logp)
    mask_f = xp.astype(mask, logp.dtype)
    rho = ratio(cfg, logp, old_logp, mask_f)
    surrogate, side = surrogate_terms(cfg, rho, advantages, mask_f, old_logp)
    surrogate = surrogate * mask_f
    side = side * xp.astype(mask, side.dtype)
    correction, correction_side = correction_weight(cfg, old_logp, sampler_logp, mask_f)
    objective = surrogate if correction is None else correction * surrogate
    if kl_in_loss(cfg):
        if kl is None:
            if ref_logp is None:
                raise ValueError("the KL sits in the loss: ref_logp is required (or the logged kl)")
            kl = reference_kl(cfg, logp, ref_logp, mask_f)
        objective = objective - cfg.param("kl", "beta") * kl
    elif kl_in_reward(cfg):
        kl = rollout_kl
    else:
        kl = None
    return TokenTerms(ratio=rho * mask_f, surrogate=surrogate, clip_side=side, kl=kl, objective=objective,
                      correction=correction, correction_side=correction_side)


def masks_responses(cfg: ResolvedAlgorithm) -> bool:
    """Whether the filter also takes single responses out of the loss (masking truncated responses)."""
    return cfg.component("filter").response_keep is not None


def response_keep(cfg: ResolvedAlgorithm, truncated):
    """The responses (B,) whose tokens stay in the loss, from each response's truncated flag; None when the
    filter keeps every response of a kept group."""
    kind = cfg.component("filter")
    if kind.response_keep is None:
        return None
    return kind.response_keep(truncated, cfg.components["filter"].params)


#: Why our trainer cannot train a spec whose filter masks single responses yet (objective.weights refuses it).
#: Why a response-masking filter cannot weigh a minibatch without each response's truncated flag.
NEEDS_TRUNCATED_FLAGS = ("masks truncated responses out of the loss: objective.weights needs each response's "
                         "truncated flag (truncated=...)")


def weights(cfg: ResolvedAlgorithm, mask, dtype=None, truncated=None):
    """The aggregation slot: per-token weights (B, T) of one minibatch. ``truncated`` (B,): which responses
    hit the generation budget, required when the filter masks them out of the loss (their tokens weigh 0;
    the filter's ``count_masked`` says whether the normaliser still counts them)."""
    xp = array_namespace(mask)
    mask_f = xp.astype(mask, dtype if dtype is not None else xp.float64)
    aggregation, params = cfg.component("aggregation"), cfg.components["aggregation"].params
    if not masks_responses(cfg):
        return aggregation.apply(mask_f, params)
    if truncated is None:
        raise ValueError(f"components.filter.kind: {cfg.kind('filter')} {NEEDS_TRUNCATED_FLAGS}, and none were given")
    keep = xp.astype(response_keep(cfg, truncated), mask_f.dtype)[:, None]
    if cfg.param("filter", "count_masked"):  # the normaliser counts every sampled response (TRL grpo, dr_grpo)
        return aggregation.apply(mask_f, params) * keep
    return aggregation.apply(mask_f * keep, params)  # ... or the kept responses' tokens only (TRL bnpo, dapo)


def step_objective(cfg: ResolvedAlgorithm, objective, mask):
    """J = sum w * objective over a minibatch; returns (J, weights)."""
    xp = array_namespace(objective)
    w = weights(cfg, mask, dtype=objective.dtype)
    return xp.sum(w * objective), w


def reference_kl(cfg: ResolvedAlgorithm, logp, ref_logp, mask):
    """Per-token KL estimate (the spec's estimator) of the policy whose log-probs are ``logp`` from the
    reference, 0 on padding."""
    xp = array_namespace(logp)
    return C.kl_estimate(logp, ref_logp, cfg.param("kl", "estimator")) * xp.astype(mask, logp.dtype)


def rollout_kl(cfg: ResolvedAlgorithm, old_logp, ref_logp, mask):
    """Per-token KL of the sampling policy from the reference, for a KL in the reward."""
    return reference_kl(cfg, old_logp, ref_logp, mask)


def aggregation_weights(kind: str, mask, normalizer: float | None = None):
    """The weights of one aggregation kind (by name) on a (B, T) mask, through the registry."""
    return registry.kind("aggregation", kind).apply(mask, {"normalizer": normalizer})


def response_weight_shares(kind: str, lengths, normalizer: float | None = None):
    """Share of the total weight each response carries, for responses of given lengths (numpy):
    the 10-token vs 1000-token example with the real math."""
    weights = aggregation_weights(kind, C.length_mask(lengths), normalizer).sum(axis=-1)
    return weights / weights.sum()


def browser_config(cfg: ResolvedAlgorithm) -> dict:
    """The resolved configuration as the browser's math port (unipo_build/site/views/explainer/unipo-math.js)
    reads it: each slot's kind and parameters, the name of the core/components.py function that
    computes it, and its registered properties, so the browser dispatches as objective does."""
    out = cfg.model_dump(mode="json")
    for slot, comp in out["components"].items():
        kind = cfg.component(slot)
        comp["fn"] = kind.fn.__name__ if kind.fn is not None else None
        comp["group_baseline"] = kind.group_baseline
        comp["kl_place"] = kind.kl_place
        comp["bounds"] = list(kind.bounds(comp["params"])) if kind.bounds is not None else None
        if kind.symbol_text:
            comp["symbol"] = kind.symbol_text
        if kind.response_keep is not None:  # a filter that masks single responses (fn: their keep rule)
            comp["response_keep"] = True
    return out
