"""verl's config mapped to the registry's kinds: its policy loss (vanilla is PPO's clip with the
dual clip always on; gspo, cispo, sapo; the named gaps), loss_agg_mode, the KL estimator, the
rollout correction settings, and the hyperparameters a run card shows."""

from __future__ import annotations

from typing import Any

from unipo_build.core import registry
from unipo_build.core.matching import Gap
from unipo_build.core.runlog import LogError
from unipo_build.trainers import common as K
from unipo_build.trainers.trainer_config import get


# verl's kl_penalty names (verl/trainer/ppo/core_algos.py, kl_penalty_forward) -> the registry's estimators
KL_TYPES = {"kl": "k1", "k1": "k1", "mse": "k2", "k2": "k2", "low_var_kl": "k3", "k3": "k3"}
#: verl's loss_agg_mode -> the registry's aggregation kind, read from the kinds' verl settings (core/kinds_loss.py).
AGGREGATION = registry.trainer_values("verl", "actor_rollout_ref.actor.loss_agg_mode", "aggregation")


def _kl(kind: str, setting: str, value: Any, beta: float, gaps: list[Gap]) -> dict:
    est = KL_TYPES.get(str(value))
    if est is None:
        nearest = KL_TYPES.get(str(value).rstrip("+"), "k3")
        gaps.append(Gap(setting, str(value), "kl", f"{kind} with estimator {nearest}"))
        est = nearest
    return {"kind": kind, "params": {"estimator": est, "beta": float(beta)}}


#: verl's policy losses (``policy_loss.loss_mode``, ``core_algos.register_policy_loss``) that pass
#: ``loss_agg_mode="seq-mean-token-mean"`` to ``agg_loss`` whatever the config says.
FORCED_AGGREGATION = {"gspo": "seq-mean-token-mean", "sapo": "seq-mean-token-mean"}
#: verl loss modes with no kind in the registry, and what each is (the gap names the nearest).
NO_KIND_LOSS = {"geo_mean": ("sequence", "GMPO: the geometric mean of the token ratios, each clipped in log space"),
                "gpg": ("token", "GPG: -log pi A with no ratio"),
                "clip_cov": ("token", "Clip-Cov: clipping of the tokens with the largest covariance"),
                "kl_cov": ("token", "KL-Cov: a KL penalty on the tokens with the largest covariance")}


def _float(value: Any, field: str, source: str) -> float:
    if not K.is_number(value):
        raise LogError(source, f"{value!r} is not a number", field=field)
    return float(value)


def policy_loss(actor: dict, gaps: list[Gap], notes: K.Notes, source: str = "config.yaml"
                ) -> tuple[dict, dict, str | None]:
    """verl's ``policy_loss.loss_mode`` and clip settings -> (ratio, clip, the aggregation the loss forces
    or None), as ``verl/trainer/ppo/core_algos.py`` computes each loss:

    - vanilla: PPO's clip with clip_ratio_low / clip_ratio_high, and always verl's dual clip,
      ``-A * clip_ratio_c`` as the bound of a negative-advantage token's loss (3 by default; verl
      asserts it is above 1): the ``dual_clip`` kind (eps_low, eps_high, c).
    - gspo: the sequence ratio with PPO's clip (no dual clip), aggregated seq-mean-token-mean.
    - cispo: ``clamp(ratio, 1 - clip_ratio_low, 1 + clip_ratio_high).detach() * A * log pi``: the ``cispo``
      kind with both bounds. verl writes the paper's form, whose value is log pi times the kind's w A
      (the gradient is the same), so its pg_loss is not the kind's value: noted.
    - sapo: the gate (4 / tau) sigmoid(tau (ratio - 1)) with tau_pos / tau_neg (actor.tau_pos,
      actor.tau_neg; 1.0 and 1.05): the ``sapo`` kind, aggregated seq-mean-token-mean.
    - any other mode (geo_mean, gpg, clip_cov, kl_cov, ...): a gap with the nearest ratio.
    """
    mode = str(get(actor, "policy_loss.loss_mode", "vanilla"))
    eps = float(get(actor, "clip_ratio", 0.2))
    low, high = float(get(actor, "clip_ratio_low", eps)), float(get(actor, "clip_ratio_high", eps))
    ppo = ({"kind": "symmetric", "params": {"eps": low}} if low == high
           else {"kind": "asymmetric", "params": {"eps_low": low, "eps_high": high}})
    token, sequence = {"kind": "token", "params": {}}, {"kind": "sequence", "params": {}}
    if mode == "vanilla":
        c = _float(get(actor, "clip_ratio_c", 3.0), "actor_rollout_ref.actor.clip_ratio_c", source)
        if c <= 1.0:
            raise LogError(source, f"clip_ratio_c {c:g}: verl's dual clip needs a bound above 1 (its "
                                          "compute_policy_loss_vanilla asserts it)", field="actor_rollout_ref.actor.clip_ratio_c")
        notes.once(f"verl's vanilla loss is dual-clip PPO: PPO's clip, and for a negative advantage the bound "
                   f"clip_ratio_c = {c:g} (the dual_clip kind; alike PPO's clip wherever no such token's ratio exceeds it)")
        return token, {"kind": "dual_clip", "params": {"eps_low": low, "eps_high": high, "c": c}}, None
    if mode == "gspo":
        return sequence, ppo, FORCED_AGGREGATION[mode]
    if mode == "cispo":
        notes.once("verl's cispo loss is the paper's -sg(w) A log pi, whose value is log pi times the cispo kind's "
                   "w A (the gradient, w A grad log pi, is the same): the objective from actor/pg_loss is verl's value")
        return token, {"kind": "cispo", "params": {"eps_low": low, "eps_high": high}}, None
    if mode == "sapo":
        tau = {"tau_pos": _float(get(actor, "tau_pos", 1.0), "actor_rollout_ref.actor.tau_pos", source),
               "tau_neg": _float(get(actor, "tau_neg", 1.05), "actor_rollout_ref.actor.tau_neg", source)}
        return token, {"kind": "sapo", "params": tau}, FORCED_AGGREGATION[mode]
    nearest, what = NO_KIND_LOSS.get(mode, ("token", "a policy loss this importer does not know"))
    gaps.append(Gap("actor_rollout_ref.actor.policy_loss.loss_mode", f"{mode} ({what})", "ratio", nearest))
    return (sequence if nearest == "sequence" else token), ppo, None


def correction_missing(cfg: dict, notes: K.Notes) -> list[str]:
    """The header's ``missing`` entry of a run whose verl corrected for the sampler (algorithm.rollout_correction's
    rollout_is or rollout_rs): its weights and masks come from the rollout's log-probs, which verl's files do not
    hold, so none is recomputed or invented."""
    correction = get(cfg, "algorithm.rollout_correction", {}) or {}
    settings = [f"{key} = {get(correction, key)}" for key in ("rollout_is", "rollout_rs")
                if get(correction, key) is not None]
    if not settings:
        return []
    line = ("the sampler's log-probs: verl's rollout correction was on (algorithm.rollout_correction."
            + ", ".join(settings) + "), and its weights come from them; verl's files hold no token detail, so none "
            "is recomputed here")
    notes.once("missing (see the header's missing): " + line)
    return [line]


def components(cfg: dict, notes: K.Notes, source: str = "config.yaml") -> tuple[str, dict[str, dict], list[Gap]]:
    """verl's algorithm settings -> (name, registry components, gaps). Defaults are verl's own
    (``verl/trainer/config/ppo_trainer.yaml``) where Hydra's config lacks a key."""
    gaps: list[Gap] = []
    actor = get(cfg, "actor_rollout_ref.actor", {})
    algo = get(cfg, "algorithm", {})
    budget = get(cfg, "data.max_response_length")
    est = str(get(algo, "adv_estimator", "gae"))
    gamma, lam = float(get(algo, "gamma", 1.0)), float(get(algo, "lam", 1.0))
    if est in ("grpo", "grpo_vectorized"):
        advantage = ({"kind": "group_zscore", "params": {"std_ddof": 1, "eps": 1e-6}}
                     if get(algo, "norm_adv_by_std_in_grpo", True) else {"kind": "group_mean", "params": {}})
    elif est in ("rloo", "rloo_vectorized"):
        advantage = {"kind": "leave_one_out", "params": {}}
    elif est == "gae":
        advantage = {"kind": "gae", "params": {"gamma": gamma, "lam": lam,
                                               "value_clip": float(get(cfg, "critic.cliprange_value", 0.5))}}
    elif est == "reinforce_plus_plus":
        advantage = {"kind": "whitened_return", "params": {"gamma": gamma}}
    else:
        nearest = "group_mean" if est in ("grpo_passk", "gpg", "opo", "reinforce_plus_plus_baseline") else "reinforce_return"
        gaps.append(Gap("algorithm.adv_estimator", est, "advantage", nearest))
        advantage = {"kind": nearest, "params": {}}

    ratio, clip, forced_agg = policy_loss(actor, gaps, notes, source)

    in_loss, in_reward = bool(get(actor, "use_kl_loss", False)), bool(get(algo, "use_kl_in_reward", False))
    if in_loss:
        kl = _kl("in_loss", "actor_rollout_ref.actor.kl_loss_type", get(actor, "kl_loss_type", "low_var_kl"),
                 get(actor, "kl_loss_coef", 0.001), gaps)
        if in_reward:
            gaps.append(Gap("algorithm.use_kl_in_reward", "true (with use_kl_loss)", "kl", "in_loss alone"))
    elif in_reward:
        kl = _kl("in_reward", "algorithm.kl_penalty", get(algo, "kl_penalty", "kl"),
                 get(algo, "kl_ctrl.kl_coef", 0.001), gaps)
        if get(algo, "kl_ctrl.type", "fixed") != "fixed":
            gaps.append(Gap("algorithm.kl_ctrl.type", str(get(algo, "kl_ctrl.type")), "kl",
                            "in_reward with the fixed coefficient kl_ctrl.kl_coef"))
    else:
        kl = {"kind": "none", "params": {}}

    agg_mode = str(get(actor, "loss_agg_mode", "token-mean"))
    if forced_agg is not None and forced_agg != agg_mode:
        notes.once(f"verl's {get(actor, 'policy_loss.loss_mode')} loss aggregates with {forced_agg} whatever "
                   f"loss_agg_mode says ({agg_mode}): the run's aggregation is {forced_agg}")
    agg_mode = forced_agg or agg_mode
    agg_kind = AGGREGATION.get(agg_mode)
    if agg_kind is None:
        gaps.append(Gap("actor_rollout_ref.actor.loss_agg_mode", agg_mode, "aggregation", "token_mean"))
        agg_kind = "token_mean"
    aggregation = {"kind": agg_kind, "params": {}}
    if agg_kind == "constant_normalizer":
        norm = get(actor, "loss_scale_factor") or budget
        if norm is None:
            raise LogError(source, "seq-mean-token-sum-norm divides by the response budget, which the config "
                                          "lacks: set data.max_response_length", field="data.max_response_length")
        aggregation["params"] = {"normalizer": float(norm)}

    if get(algo, "filter_groups.enable", False):
        filt = {"kind": "dynamic_sampling", "params": {}}
        rounds = get(algo, "filter_groups.max_num_gen_batches")
        if rounds:
            filt["params"]["max_rounds"] = int(rounds)
    else:
        filt = {"kind": "none", "params": {}}
    buffer = get(cfg, "reward_model.overlong_buffer", {}) or get(cfg, "reward_model.reward_kwargs.overlong_buffer_cfg", {})
    if get(buffer, "enable", False) and budget:
        shaping = {"kind": "overlong", "params": {"max_length": int(budget), "cache_length": int(get(buffer, "len", 0)),
                                                  "penalty": float(get(buffer, "penalty_factor", 1.0))}}
    else:
        shaping = {"kind": "none", "params": {}}
    correction = get(algo, "rollout_correction", {}) or {}
    rollout_is = get(correction, "rollout_is")
    corrected = {"kind": "none", "params": {}}
    if rollout_is in ("token", "sequence") and not get(correction, "rollout_is_batch_normalize", False):
        # verl's compute_rollout_correction_weights: exp(log pi_old - log pi_rollout), per token or summed over the
        # response (the product of its token ratios), then clamp(max=rollout_is_threshold): truncated IS, no lower bound
        corrected = {"kind": "truncated_is", "params": {
            "level": rollout_is, "sequence": "product", "lower": None,
            "cap": _float(get(correction, "rollout_is_threshold", 2.0),
                          "algorithm.rollout_correction.rollout_is_threshold", source)}}
    elif rollout_is is not None:
        what = (f"{rollout_is} with rollout_is_batch_normalize (the weights rescaled to mean 1 in each batch)"
                if rollout_is in ("token", "sequence") else str(rollout_is))
        gaps.append(Gap("algorithm.rollout_correction.rollout_is", what, "correction",
                        "truncated_is without the batch normalisation" if rollout_is in ("token", "sequence")
                        else "none"))
    if get(correction, "rollout_rs") is not None:
        gaps.append(Gap("algorithm.rollout_correction.rollout_rs", str(get(correction, "rollout_rs")), "filter",
                        f"{filt['kind']} (without the rejection sampling)"))
    if get(algo, "use_pf_ppo", False):
        gaps.append(Gap("algorithm.use_pf_ppo", "true", "filter", f"{filt['kind']} (without the sample reweighting)"))
    comps = {"advantage": advantage, "ratio": ratio, "clip": clip, "kl": kl, "aggregation": aggregation,
             "filter": filt, "shaping": shaping, "correction": corrected}
    return est, comps, gaps


def _hyperparameters(cfg: dict) -> dict:
    per_step = get(cfg, "data.train_batch_size")
    mini = get(cfg, "actor_rollout_ref.actor.ppo_mini_batch_size")
    out = {
        "prompts_per_step": per_step, "group_size": get(cfg, "actor_rollout_ref.rollout.n"),
        "max_new_tokens": get(cfg, "data.max_response_length"),
        "temperature": get(cfg, "actor_rollout_ref.rollout.temperature"),
        "lr": get(cfg, "actor_rollout_ref.actor.optim.lr"), "critic_lr": get(cfg, "critic.optim.lr"),
        "epochs": get(cfg, "actor_rollout_ref.actor.ppo_epochs"),
        "minibatches": per_step // mini if isinstance(per_step, int) and isinstance(mini, int) and mini > 0 else None,
        "steps": get(cfg, "trainer.total_training_steps"), "eval_every": get(cfg, "trainer.test_freq"),
        "grad_clip": get(cfg, "actor_rollout_ref.actor.grad_clip"), "seed": get(cfg, "data.seed"),
    }
    if get(cfg, "critic.enable") is False or get(cfg, "algorithm.adv_estimator") != "gae":
        out.pop("critic_lr")
    return {k: v for k, v in out.items() if v is not None and not (isinstance(v, (int, float)) and v <= 0 and k != "seed")}
