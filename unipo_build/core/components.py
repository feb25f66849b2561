"""The component math of a policy-optimisation objective, written once.

Every function here takes numpy arrays or torch tensors and returns the same kind
(`array_api_compat.array_namespace` picks the namespace), so the trainer computes its
loss with exactly the code the site uses to recompute and explain a logged token.
There is no second implementation to keep in step.

Shapes: a rollout batch is laid out group-major. Scalars per response have shape
``(n_groups, G)`` where the functions say so, or ``(B,)`` with ``B = n_groups * G``.
Per-token arrays have shape ``(B, T)``: response tokens are left-aligned (token ``t``
of response ``i`` sits at ``[i, t]``) and ``mask`` is 1 on real tokens, 0 on padding.

Notation and sources are those of ALGORITHMS.md: rho is the token-level importance
ratio, computed in log space (never as a quotient of probabilities).
"""

from __future__ import annotations

import numpy as np
from array_api_compat import array_namespace

# Sides reported by the clip component. Stored as small ints in the logs.
CLIP_NONE = 0
CLIP_HIGH = 1  # positive advantage, ratio above 1 + eps_high: the clipped branch won
CLIP_LOW = -1  # negative advantage, ratio below 1 - eps_low: the clipped branch won


def stop_gradient(x):
    """Detach a torch tensor; numpy arrays carry no gradient and pass through."""
    return x.detach() if hasattr(x, "detach") else x


# ---------------------------------------------------------------------------
# Advantages
# ---------------------------------------------------------------------------

def group_zscore_advantage(rewards, std_ddof: int = 1, eps: float = 1e-6):
    """GRPO's outcome advantage, (r_i - mean(r)) / (std(r) + eps), per group.

    DeepSeekMath (arXiv 2402.03300) eq. 3 and the text below it. ``std_ddof`` names
    the convention the literature splits on: 1 is torch's default (n - 1), used by
    OpenRLHF's group_norm and TRL; 0 is the population std. ``rewards``: (n_groups, G).
    A group whose rewards are all equal gets advantage 0 for every response: exactly 0,
    also with ``eps`` 0 and for fractional rewards whose mean and std carry rounding error.
    """
    xp = array_namespace(rewards)
    mean = xp.mean(rewards, axis=-1, keepdims=True)
    std = xp.std(rewards, axis=-1, correction=std_ddof, keepdims=True)
    equal = xp.max(rewards, axis=-1, keepdims=True) == xp.min(rewards, axis=-1, keepdims=True)
    denominator = xp.where(equal, xp.ones_like(std), std + eps)
    return xp.where(equal, xp.zeros_like(rewards), (rewards - mean) / denominator)


def group_mean_advantage(rewards):
    """Dr. GRPO's advantage r_i - mean(r) (arXiv 2503.20783, sec. 3.2): no std division."""
    xp = array_namespace(rewards)
    return rewards - xp.mean(rewards, axis=-1, keepdims=True)


def group_mean_batch_std_advantage(rewards, std_ddof: int = 1, eps: float = 1e-4):
    """(r_i - mean of its group) / (std of every reward of the batch + eps): the group's baseline, the
    batch's scale (TRL scale_rewards="batch", 1.16 GRPOTrainer._generate_and_score_completions:
    nanstd over the whole generation batch, Bessel-corrected, plus 1e-4).

    One divisor for every group, so a group whose rewards barely differ keeps small advantages
    instead of being blown up to unit scale as the group z-score does. ``rewards``: (n_groups, G),
    every group of the batch the advantages are computed on. A group whose rewards are all equal
    gets exactly 0, as in :func:`group_zscore_advantage`; so does a batch of one reward (TRL's
    std is then 0 by definition).
    """
    xp = array_namespace(rewards)
    mean = xp.mean(rewards, axis=-1, keepdims=True)
    spread = batch_reward_std(rewards, std_ddof)
    equal = xp.max(rewards, axis=-1, keepdims=True) == xp.min(rewards, axis=-1, keepdims=True)
    return xp.where(equal, xp.zeros_like(rewards), (rewards - mean) / (spread + eps))


def batch_reward_std(rewards, std_ddof: int = 1):
    """The batch's reward std that :func:`group_mean_batch_std_advantage` divides by (0 for one reward)."""
    xp = array_namespace(rewards)
    flat = xp.reshape(rewards, (-1,))
    return xp.std(flat, correction=std_ddof) if flat.shape[0] > std_ddof else xp.zeros_like(flat[0])


def leave_one_out_advantage(rewards):
    """RLOO (arXiv 2402.14740): r_i minus the mean of the other G - 1 rewards.

    Equal to G / (G - 1) * (r_i - mean(r)).
    """
    xp = array_namespace(rewards)
    g = rewards.shape[-1]
    if g < 2:
        raise ValueError("leave-one-out needs at least 2 responses per group")
    total = xp.sum(rewards, axis=-1, keepdims=True)
    return rewards - (total - rewards) / (g - 1)


def batch_whiten(values, mask=None, eps: float = 1e-6):
    """Whiten over the whole batch (REINFORCE++, arXiv 2501.03262): (x - mean) / (std + eps).

    With ``mask`` the statistics use the masked entries only (population std, as the
    reference implementations do for token-level whitening).
    """
    xp = array_namespace(values)
    if mask is None:
        mean = xp.mean(values)
        std = xp.std(values)
        return (values - mean) / (std + eps)
    count = xp.sum(mask)
    mean = xp.sum(values * mask) / count
    var = xp.sum(((values - mean) * mask) ** 2) / count
    return (values - mean) * mask / (xp.sqrt(var) + eps)


def reward_to_go(token_rewards, mask, gamma: float = 1.0):
    """Return G_t = sum_{t' >= t} gamma^(t'-t) r_t' along each response; 0 on padding."""
    xp = array_namespace(token_rewards)
    n_tokens = token_rewards.shape[-1]
    running = xp.zeros_like(token_rewards[..., 0])
    columns = [None] * n_tokens
    for t in range(n_tokens - 1, -1, -1):
        running = token_rewards[..., t] * mask[..., t] + gamma * running * mask[..., t]
        columns[t] = running
    return xp.stack(columns, axis=-1)


def gae_advantage(token_rewards, values, mask, gamma: float = 1.0, lam: float = 0.95):
    """Generalised advantage estimation (Schulman et al., arXiv 1506.02438).

    delta_t = r_t + gamma V(s_{t+1}) - V(s_t);  A_t = sum_l (gamma lambda)^l delta_{t+l}.
    The value after the last real token is 0 (the episode ends there). Returns
    ``(advantages, returns)`` with returns = advantages + values, the critic's target.
    """
    xp = array_namespace(token_rewards)
    n_tokens = token_rewards.shape[-1]
    next_value = xp.zeros_like(values[..., 0])
    running = xp.zeros_like(values[..., 0])
    columns = [None] * n_tokens
    for t in range(n_tokens - 1, -1, -1):
        m = mask[..., t]
        delta = token_rewards[..., t] + gamma * next_value - values[..., t]
        running = (delta + gamma * lam * running) * m
        columns[t] = running
        next_value = values[..., t] * m
    advantages = xp.stack(columns, axis=-1)
    return advantages, (advantages + values) * mask


def terminal_token_rewards(rewards, mask):
    """Place each response's scalar reward on its last real token, 0 elsewhere: (B, T)."""
    xp = array_namespace(mask)
    lengths = xp.sum(mask, axis=-1)
    positions = xp.arange(mask.shape[-1], dtype=lengths.dtype)
    is_last = xp.astype(positions[None, :] == (lengths[:, None] - 1), mask.dtype)
    return is_last * rewards[:, None]


# ---------------------------------------------------------------------------
# Importance ratios (computed in log space)
# ---------------------------------------------------------------------------

def token_ratio(logp, old_logp):
    """rho_{i,t} = exp(log pi_theta - log pi_old), token by token."""
    xp = array_namespace(logp)
    return xp.exp(logp - old_logp)


def sequence_ratio(logp, old_logp, mask):
    """GSPO's length-normalised sequence ratio (arXiv 2507.18071, eq. 7).

    s_i = exp((1/|o_i|) sum_t (log pi_theta - log pi_old)), the same for every token
    of response i (broadcast to (B, T), 0 on padding).
    """
    xp = array_namespace(logp)
    lengths = xp.sum(mask, axis=-1, keepdims=True)
    mean_log_ratio = xp.sum((logp - old_logp) * mask, axis=-1, keepdims=True) / xp.clip(lengths, 1, None)
    return xp.exp(mean_log_ratio) * mask


def self_ratio(logp):
    """pi_theta / sg[pi_theta]: the plain REINFORCE objective written as a ratio.

    Its value is exactly 1, and its gradient is grad log pi_theta, so
    ratio * A has the value A and the gradient A grad log pi_theta: the score-function
    estimator of Williams (1992) with nothing clipped and no reuse of old samples.
    """
    xp = array_namespace(logp)
    return xp.exp(logp - stop_gradient(logp))


# ---------------------------------------------------------------------------
# Clipping
# ---------------------------------------------------------------------------

def clipped_surrogate(ratio, advantage, eps_low: float | None, eps_high: float | None):
    """PPO's pessimistic surrogate min(rho A, clip(rho, 1 - eps_low, 1 + eps_high) A).

    PPO (arXiv 1707.06347) clips symmetrically; DAPO's clip-higher (arXiv 2503.14476)
    uses eps_high > eps_low. ``None`` for both means no clipping (rho A).
    Returns ``(surrogate, side)``: side is CLIP_HIGH where A > 0 and rho > 1 + eps_high,
    CLIP_LOW where A < 0 and rho < 1 - eps_low (in both cases the clipped branch of the
    min is the smaller, so the token's gradient is zero), CLIP_NONE elsewhere.
    """
    xp = array_namespace(ratio, advantage)
    unclipped = ratio * advantage
    if eps_low is None and eps_high is None:
        return unclipped, xp.zeros_like(unclipped, dtype=xp.int8)  # on the input's device
    low = 1.0 - eps_low
    high = 1.0 + eps_high
    clipped = xp.clip(ratio, low, high) * advantage
    surrogate = xp.minimum(unclipped, clipped)
    high_side = (advantage > 0) & (ratio > high)
    low_side = (advantage < 0) & (ratio < low)
    side = xp.astype(high_side, xp.int8) - xp.astype(low_side, xp.int8)
    return surrogate, side


def dual_clip_surrogate(ratio, advantage, eps_low: float, eps_high: float, c: float):
    """Dual-clip PPO (Ye et al., arXiv 1912.09729, eq. 5): PPO's clipped surrogate, bounded below
    by c * A where the advantage is negative.

    For A < 0, max(min(rho A, clip(rho, 1 - eps_low, 1 + eps_high) A), c A) with c > 1: once a
    negative-advantage token's ratio has risen above c, its term is the constant c A and its
    gradient is zero, so one token whose probability the policy raised a lot cannot push the
    objective down without bound. For A >= 0 the term is PPO's. (verl: clip_ratio_c, 3 by default;
    OpenRLHF: dual_clip.) Returns ``(surrogate, side)``: ``clipped_surrogate``'s sides, and
    CLIP_HIGH where the c bound won (a negative advantage and rho > c: the ratio is above a bound
    and the token's gradient is zero).
    """
    xp = array_namespace(ratio, advantage)
    surrogate, side = clipped_surrogate(ratio, advantage, eps_low, eps_high)
    floor = c * advantage
    bounded = (advantage < 0) & (surrogate < floor)
    # where the floor wins the term is the constant c A (no gradient); elsewhere PPO's term
    surrogate = xp.where(bounded, stop_gradient(floor), surrogate)
    # a bounded token had side 0 (its ratio, above c > 1, is not below 1 - eps_low)
    return surrogate, side + xp.astype(bounded, xp.int8)


def cispo_surrogate(ratio, advantage, eps_low: float | None, eps_high: float):
    """CISPO's clipped importance-sampling weight (MiniMax-M1, arXiv 2506.13585, eq. 4-5).

    The weight w = clip(rho, 1 - eps_low, 1 + eps_high) is a constant (stop-gradient) that
    multiplies A grad log pi_theta: the term's gradient is w A grad log pi_theta for every token,
    clipped or not, where PPO's min zeroes the gradient of a token that left the range. Written
    here as sg[w / rho] rho A, whose value is w A (comparable with the other surrogates: A at
    rho = 1) and whose gradient is w A grad log pi_theta (grad rho = rho grad log pi_theta); the
    paper's sg(w) A log pi_theta has the same gradient. ``eps_low`` None: no lower bound, as the
    paper trains (TRL loss_type='cispo' caps the ratio at epsilon_high and has none either).
    Returns ``(surrogate, side)`` with PPO's sides: CLIP_HIGH where A > 0 and rho > 1 + eps_high,
    CLIP_LOW where A < 0 and rho < 1 - eps_low (TRL's cispo_clip_ratio counts the first), the
    tokens PPO's clip would silence; CISPO caps their weight and their gradient still flows. (A
    token past a bound in the other direction has its weight capped too, but PPO would not have
    clipped it either: it is not marked.)
    """
    xp = array_namespace(ratio, advantage)
    high = 1.0 + eps_high
    low = None if eps_low is None else 1.0 - eps_low
    weight = xp.clip(ratio, low, high)
    safe = xp.where(ratio > 0, ratio, xp.ones_like(ratio))
    surrogate = stop_gradient(weight / safe) * ratio * advantage
    high_side = (advantage > 0) & (ratio > high)
    low_side = ((advantage < 0) & (ratio < low)) if low is not None else xp.zeros_like(high_side)
    side = xp.astype(high_side, xp.int8) - xp.astype(low_side, xp.int8)
    return surrogate, side


def sapo_gate(ratio, tau):
    """SAPO's soft gate f(rho) = (4 / tau) sigmoid(tau (rho - 1)) (arXiv 2511.20347).

    f(1) = 2 / tau and f'(1) = 1: near rho = 1 the term moves as rho A does; as rho leaves 1
    the slope 4 sigmoid (1 - sigmoid) falls smoothly towards 0, faster for a larger tau.
    """
    xp = array_namespace(ratio)
    return (4.0 / tau) / (1.0 + xp.exp(-tau * (ratio - 1.0)))


def sapo_surrogate(ratio, advantage, tau_pos: float, tau_neg: float):
    """SAPO's soft-gated surrogate f_tau(rho) A (arXiv 2511.20347; TRL loss_type='sapo', verl
    policy loss 'sapo'), with tau = tau_pos where A > 0 and tau_neg elsewhere (TRL's and verl's
    split: tau_neg for a non-positive advantage). The gradient weight of a token,
    4 sigmoid (1 - sigmoid) rho A on grad log pi_theta, falls smoothly as rho leaves 1 instead of
    dropping to 0 at a bound. Returns ``(surrogate, side)``: nothing is clipped, side is CLIP_NONE.
    """
    xp = array_namespace(ratio, advantage)
    positive = xp.astype(advantage > 0, ratio.dtype)
    tau = tau_neg + (tau_pos - tau_neg) * positive
    surrogate = sapo_gate(ratio, tau) * advantage
    return surrogate, xp.zeros_like(surrogate, dtype=xp.int8)


# Each token-level surrogate's derivative with respect to the token's log-probability, on numpy arrays:
# d ell / d log pi = rho * d ell / d rho, with stop-gradients counted (a constant has no derivative).
# The site computes a token's gradient weight with these (a build needs numpy only, never torch);
# tests/test_objective_grad.py holds each equal to torch's autograd through the surrogate itself.

def clipped_surrogate_grad(ratio, advantage, eps_low: float | None, eps_high: float | None):
    """d/d log pi of :func:`clipped_surrogate`: rho A where the unclipped branch carries the gradient,
    0 where the clipped branch won (the sides CLIP_HIGH and CLIP_LOW). At a bound both branches are
    equal and clip passes its gradient, so the token keeps rho A, as autograd gives."""
    ratio, advantage = np.asarray(ratio, dtype=float), np.asarray(advantage, dtype=float)
    _, side = clipped_surrogate(ratio, advantage, eps_low, eps_high)
    return np.where(side != CLIP_NONE, 0.0, ratio * advantage)


def dual_clip_surrogate_grad(ratio, advantage, eps_low: float, eps_high: float, c: float):
    """d/d log pi of :func:`dual_clip_surrogate`: PPO's, and 0 where the floor c A won."""
    ratio, advantage = np.asarray(ratio, dtype=float), np.asarray(advantage, dtype=float)
    surrogate, _ = clipped_surrogate(ratio, advantage, eps_low, eps_high)
    bounded = (advantage < 0) & (surrogate < c * advantage)
    return np.where(bounded, 0.0, clipped_surrogate_grad(ratio, advantage, eps_low, eps_high))


def cispo_surrogate_grad(ratio, advantage, eps_low: float | None, eps_high: float):
    """d/d log pi of :func:`cispo_surrogate`: the clipped weight times A, w A, for every token."""
    ratio, advantage = np.asarray(ratio, dtype=float), np.asarray(advantage, dtype=float)
    return np.clip(ratio, None if eps_low is None else 1.0 - eps_low, 1.0 + eps_high) * advantage


def sapo_surrogate_grad(ratio, advantage, tau_pos: float, tau_neg: float):
    """d/d log pi of :func:`sapo_surrogate`: 4 sigmoid (1 - sigmoid) rho A, the gate's slope times rho A."""
    ratio, advantage = np.asarray(ratio, dtype=float), np.asarray(advantage, dtype=float)
    tau = np.where(advantage > 0, tau_pos, tau_neg)
    sigma = sapo_gate(ratio, tau) * tau / 4.0
    return 4.0 * sigma * (1.0 - sigma) * ratio * advantage


def dppo_mask_surrogate(ratio, advantage, old_logp, delta_low: float, delta_high: float):
    """DPPO's mask (arXiv 2602.04879; prime-rl 559b447 loss.py default_loss_fn): with d = pi_old rho - pi_old, the
    change of the token's probability (prime-rl's probs_diff), a token with A > 0 and d > delta_high, or A < 0 and
    d < -delta_low, is masked (term and gradient 0); every other token's term is rho A, unclipped. Returns
    ``(surrogate, side)``: CLIP_HIGH / CLIP_LOW where masked (prime-rl's is_masked_high / is_masked_low)."""
    xp = array_namespace(ratio, advantage)
    old = xp.exp(stop_gradient(old_logp))
    change = old * stop_gradient(ratio) - old
    high, low = (advantage > 0) & (change > delta_high), (advantage < 0) & (change < -delta_low)
    side = xp.astype(high, xp.int8) - xp.astype(low, xp.int8)
    return xp.where(high | low, xp.zeros_like(ratio), ratio * advantage), side


def geo_mean_surrogate(ratio, advantage, mask, eps_low: float, eps_high: float):
    """GMPO's surrogate (Zhao et al., arXiv 2507.20673; verl policy_loss 'geo_mean',
    core_algos.compute_policy_loss_geo_mean): the response's token ratios enter through their
    geometric mean, each clipped in log space first.

    With delta_t = log rho_t and s_t = sign(A_t), the clipped log-ratio is
    c_t = s_t min(s_t delta_t, s_t clip(delta_t, -eps_low, eps_high)) (PPO's pessimistic choice, token
    by token, in log space: the ratio's range is [exp(-eps_low), exp(eps_high)]; a token with A_t = 0
    has c_t = 0 and still counts in the length). Every token of response i gets the term
    A_t exp((1/|o_i|) sum_u c_u); with the aggregation 1/(N |o_i|) (seq_mean_token_mean) the step
    objective is (1/N) sum_i mean_t(A_t) exp(mean_u c_u), verl's sequence mean of
    -advantage * ratio. A token whose clipped branch won has a constant c_t: its gradient is 0.
    ``mask``: (B, T), 1 on real tokens. Returns ``(surrogate, side)`` with PPO's sides: CLIP_HIGH where
    A > 0 and delta > eps_high, CLIP_LOW where A < 0 and delta < -eps_low.
    """
    xp = array_namespace(ratio, advantage)
    mask = xp.astype(mask, ratio.dtype)
    real = mask > 0
    # log rho on real tokens only (padding's ratio may be 0 or anything: it must not reach the log)
    delta = xp.log(xp.where(real, ratio, xp.ones_like(ratio)))
    sign = xp.sign(advantage)
    clamped = xp.clip(delta, -eps_low, eps_high)
    clipped_log = sign * xp.minimum(sign * delta, sign * clamped) * mask
    length = xp.clip(xp.sum(mask, axis=-1, keepdims=True), 1, None)
    geo = xp.exp(xp.sum(clipped_log, axis=-1, keepdims=True) / length)
    surrogate = advantage * geo * mask
    high_side = (advantage > 0) & (delta > eps_high) & real
    low_side = (advantage < 0) & (delta < -eps_low) & real
    side = xp.astype(high_side, xp.int8) - xp.astype(low_side, xp.int8)
    return surrogate, side


# ---------------------------------------------------------------------------
# Rollout correction: the behaviour policy's weight (the sampler is not the learner)
# ---------------------------------------------------------------------------

CORRECTION_LEVELS = ("token", "sequence")


def rollout_correction_weight(old_logp, sampler_logp, mask, level: str, truncate: bool, cap: float | None,
                              lower: float | None = None, sequence: str = "product", kept: str = "ratio"):
    """The weight of rollout correction: importance sampling from the sampler to the learner.

    The tokens were drawn by a sampler (vLLM, an older copy of the policy) whose log-probs
    ``sampler_logp`` are not the learner's ``old_logp`` of the same tokens. Its weight
    w = pi_old / pi_sampler = exp(old_logp - sampler_logp) multiplies each token's surrogate, held
    constant (stop-gradient), so the update is the one the learner's own samples would give in
    expectation. ``level`` "token": each token's own w; "sequence": one w per response, the product
    of its token ratios (``sequence`` "product", TRL and verl) or their geometric mean
    ("geometric_mean", OpenRLHF's seq level), on every token of the response.

    ``truncate``: w = clip(w, lower, cap), truncated importance sampling (TIS; TRL *_truncate,
    verl rollout_is, OpenRLHF tis); ``lower`` None: no lower bound. Otherwise masked importance
    sampling (TRL *_mask, verl rollout_rs, OpenRLHF icepop and seq-mask-tis, prime-rl's
    token_mask_low/high): a token (or a whole response) whose w is outside [lower, cap] gets weight
    0, a kept one the weight ``kept`` names: "ratio" the w that was tested (TRL, IcePop), "token_ratio"
    the token's own ratio (OpenRLHF), "one" (verl's rejection sampling). ``cap`` None: no upper bound
    (a mask below ``lower`` alone). Returns ``(weight, side)`` (B, T): side 1 where w is above ``cap``,
    -1 where it is below ``lower`` (the tokens truncated or masked), 0 elsewhere and on padding.
    """
    xp = array_namespace(old_logp, sampler_logp)
    mask = xp.astype(mask, old_logp.dtype)
    log_token = stop_gradient((old_logp - sampler_logp) * mask)
    if level == "token":
        log_w = log_token
    elif level == "sequence":
        total = xp.sum(log_token, axis=-1, keepdims=True)
        if sequence == "geometric_mean":
            total = total / xp.clip(xp.sum(mask, axis=-1, keepdims=True), 1, None)
        elif sequence != "product":
            raise ValueError(f"unknown sequence ratio {sequence!r} (known: product, geometric_mean)")
        log_w = total + xp.zeros_like(log_token)
    else:
        raise ValueError(f"unknown correction level {level!r} (known: {', '.join(CORRECTION_LEVELS)})")
    w = xp.exp(log_w)
    high = (w > cap) if cap is not None else xp.zeros_like(w, dtype=xp.bool)
    low = (w < lower) if lower is not None else xp.zeros_like(w, dtype=xp.bool)
    if truncate:
        weight = xp.clip(w, lower, cap)
    else:
        kept_weight = {"ratio": w, "token_ratio": xp.exp(log_token), "one": xp.ones_like(w)}.get(kept)
        if kept_weight is None:
            raise ValueError(f"unknown kept weight {kept!r} (known: ratio, token_ratio, one)")
        weight = xp.where(high | low, xp.zeros_like(w), kept_weight)
    side = (xp.astype(high, xp.int8) - xp.astype(low, xp.int8)) * xp.astype(mask, xp.int8)
    return weight * mask, side


def truncated_is_weight(old_logp, sampler_logp, mask, level: str, cap: float, lower: float | None = None,
                        sequence: str = "product"):
    """Truncated importance sampling (TIS): w = clip(pi_old / pi_sampler, lower, cap), per token or per
    response (:func:`rollout_correction_weight`). Returns ``(weight, side)``."""
    return rollout_correction_weight(old_logp, sampler_logp, mask, level, True, cap, lower, sequence)


def masked_is_weight(old_logp, sampler_logp, mask, level: str, cap: float | None, lower: float | None,
                     sequence: str = "product", kept: str = "ratio"):
    """Masked importance sampling (two-sided, as IcePop): weight 0 where pi_old / pi_sampler is outside
    [lower, cap], the ``kept`` weight elsewhere (:func:`rollout_correction_weight`). Returns ``(weight, side)``."""
    return rollout_correction_weight(old_logp, sampler_logp, mask, level, False, cap, lower, sequence, kept)

# ---------------------------------------------------------------------------
# KL to the reference policy (Schulman, "Approximating KL divergence", 2020)
# ---------------------------------------------------------------------------

KL_ESTIMATORS = ("k1", "k2", "k3")


def kl_estimate(logp, ref_logp, estimator: str):
    """Per-token estimate of KL(pi_theta || pi_ref) from a sample of pi_theta.

    With log r = log pi_ref - log pi_theta:
      k1 = -log r            unbiased, high variance, negative about half the time;
      k2 = (log r)^2 / 2     biased, low variance;
      k3 = (r - 1) - log r   unbiased, never negative; low variance only near pi_theta = pi_ref
                             (exponential tail in log r); GRPO's term. As a loss its gradient is
                             not the reverse-KL gradient (Tang & Munos 2025, arXiv 2506.09477).
    k3 uses expm1 so it stays exact for tiny differences.
    """
    xp = array_namespace(logp, ref_logp)
    log_r = ref_logp - logp
    if estimator == "k1":
        return -log_r
    if estimator == "k2":
        return 0.5 * log_r**2
    if estimator == "k3":
        return xp.expm1(log_r) - log_r
    raise ValueError(f"unknown KL estimator {estimator!r} (known: {', '.join(KL_ESTIMATORS)})")


# ---------------------------------------------------------------------------
# Aggregation: the weight each token's objective gets in the step objective
# (the registry, unipo_build.core.registry, names which function each aggregation kind uses)
# ---------------------------------------------------------------------------

def _lengths_and_count(mask):
    xp = array_namespace(mask)
    lengths = xp.sum(mask, axis=-1, keepdims=True)
    return lengths, xp.sum(xp.astype(lengths > 0, mask.dtype))


def seq_mean_token_mean_weights(mask):
    """GRPO's aggregation (arXiv 2402.03300, eq. 3): w = 1 / (N |o_i|).

    Every response weighs the same, so a token of a short response weighs more than one of a
    long response. N is the number of responses with at least one real token; ``mask``: (B, T).
    The weights w_{i,t} make the step objective sum_{i,t} w_{i,t} * objective_{i,t}.
    """
    xp = array_namespace(mask)
    lengths, n_responses = _lengths_and_count(mask)
    return mask / (xp.clip(lengths, 1, None) * n_responses)


def token_mean_weights(mask):
    """DAPO's token-level aggregation (arXiv 2503.14476, eq. 8): w = 1 / sum_i |o_i|.

    Every token weighs the same, so long responses carry more of the total.
    """
    xp = array_namespace(mask)
    return mask / xp.sum(mask)


def constant_normalizer_weights(mask, normalizer):
    """Dr. GRPO's aggregation (arXiv 2503.20783): w = 1 / (N L) with a constant L (the
    generation budget): no dependence on any length."""
    if normalizer is None or normalizer <= 0:
        raise ValueError("constant_normalizer needs a positive normalizer L")
    _, n_responses = _lengths_and_count(mask)
    return mask / (n_responses * normalizer)


def micro_token_mean_weights(mask, micro_batch: int):
    """A token mean per micro-batch, the micro-batches averaged (gradient accumulation of a per-batch token mean: TRL's
    loss_type 'bnpo' divides each micro-batch's loss by its own tokens and by the accumulation steps):
    w = 1 / (M sum_{j in m} |o_j|), the update's rows taken in order ``micro_batch`` at a time, M micro-batches. A
    micro-batch without a token weighs 0 (TRL's clamp(min=1) leaves its loss 0)."""
    xp = array_namespace(mask)
    n_micro = -(-mask.shape[0] // micro_batch)
    parts = []
    for m in range(n_micro):
        chunk = mask[m * micro_batch:(m + 1) * micro_batch]
        total = xp.sum(chunk)
        parts.append(chunk / (n_micro * xp.where(total > 0, total, xp.ones_like(total))))
    return xp.concat(parts, axis=0)


def seq_mean_token_sum_weights(mask):
    """Token objectives summed per response, then averaged over responses: w = 1 / N."""
    _, n_responses = _lengths_and_count(mask)
    return mask / n_responses


def length_mask(lengths):
    """A (B, max length) 0/1 mask of responses of the given lengths (numpy)."""
    import numpy as np

    lengths = np.asarray(lengths, dtype=np.int64)
    return (np.arange(lengths.max())[None, :] < lengths[:, None]).astype(np.float64)


# ---------------------------------------------------------------------------
# Sampling filter and reward shaping
# ---------------------------------------------------------------------------

def dynamic_sampling_keep(correct):
    """DAPO's dynamic sampling (arXiv 2503.14476, eq. 11): keep a group iff 0 < #correct < G.

    ``correct``: (n_groups, G) of 0/1. A group that is all right or all wrong has
    zero advantage everywhere and would only dilute the batch.
    """
    xp = array_namespace(correct)
    n_correct = xp.sum(xp.astype(correct, xp.float64), axis=-1)
    g = correct.shape[-1]
    return (n_correct > 0) & (n_correct < g)


def mask_truncated_keep(truncated):
    """Masking truncated responses (TRL mask_truncated_completions; DAPO's overlong filtering, arXiv
    2503.14476 sec. 3.4): keep (B,) is True for a response that finished, False for one that hit the
    generation budget. A dropped response still counts in its group's reward statistics (its advantage
    is computed as usual); only its tokens leave the loss (weight 0)."""
    xp = array_namespace(truncated)
    return ~xp.astype(truncated, xp.bool)


def overlong_penalty(lengths, max_length: int, cache_length: int, penalty: float = 1.0):
    """DAPO's soft overlong punishment (arXiv 2503.14476, eq. 13), scaled by ``penalty``.

    0 if |y| <= L_max - L_cache; penalty * ((L_max - L_cache) - |y|) / L_cache if |y| <= L_max;
    -penalty beyond L_max. The paper's penalty is 1 against a correctness reward of +1/-1; with a
    1/0 reward the same relative weight is 0.5 (the spec records which one a run used).
    """
    xp = array_namespace(lengths)
    lengths = xp.astype(lengths, xp.float64)
    start = max_length - cache_length
    ramp = (start - lengths) / cache_length
    zero = xp.zeros_like(lengths)
    return penalty * xp.where(lengths <= start, zero, xp.where(lengths <= max_length, ramp, zero - 1.0))


# ---------------------------------------------------------------------------
# The critic
# ---------------------------------------------------------------------------

def clipped_value_loss(values, old_values, returns, mask, clip_range: float | None):
    """PPO's value loss, 0.5 * max((V - R)^2, (clip(V, V_old +- c) - R)^2), token mean.

    ("The 37 implementation details of PPO", Huang et al. 2022; arXiv 2403.17031.)
    """
    xp = array_namespace(values)
    unclipped = (values - returns) ** 2
    if clip_range is None:
        per_token = unclipped
    else:
        clipped_values = old_values + xp.clip(values - old_values, -clip_range, clip_range)
        per_token = xp.maximum(unclipped, (clipped_values - returns) ** 2)
    return 0.5 * xp.sum(per_token * mask) / xp.sum(mask)


def explained_variance(values, returns, mask):
    """1 - Var(R - V) / Var(R) over real tokens; 1 is a perfect critic, <= 0 useless."""
    xp = array_namespace(values)
    count = xp.sum(mask)
    mean_r = xp.sum(returns * mask) / count
    var_r = xp.sum(((returns - mean_r) * mask) ** 2) / count
    resid = (returns - values) * mask
    mean_e = xp.sum(resid) / count
    var_e = xp.sum(((resid - mean_e) * mask) ** 2) / count
    return 1.0 - var_e / var_r if float(var_r) > 0 else xp.asarray(float("nan"))
