"""verl's config mapped to the registry's kinds: its policy loss (vanilla is PPO's clip with the
dual clip always on; gspo, cispo, sapo, geo_mean; the named gaps), loss_agg_mode, the KL estimator, the
rollout correction settings (rollout_is truncated, rollout_rs masked), and the hyperparameters a run card shows."""

from __future__ import annotations

from typing import Any

from unipo_build.core import registry
from unipo_build.core.matching import Gap
from unipo_build.core.numbers import plain_num
from unipo_build.core.runlog import LogError
from unipo_build.trainers import common as K
from unipo_build.trainers.trainer_config import get


# verl's kl_penalty names (verl/trainer/ppo/core_algos.py, kl_penalty_forward) -> the registry's estimators
KL_TYPES = {"kl": "k1", "k1": "k1", "mse": "k2", "k2": "k2", "low_var_kl": "k3", "k3": "k3"}
ADV_ESTIMATOR = "algorithm.adv_estimator"
#: verl's names of the same estimator (its vectorized implementations), as the kinds' settings name it.
ESTIMATOR_ALIASES = {"grpo_vectorized": "grpo", "rloo_vectorized": "rloo"}
#: verl's estimators with no kind whose nearest is the group mean (the others' is the plain return).
GROUP_ESTIMATORS = ("grpo_passk", "gpg", "opo", "reinforce_plus_plus_baseline")
#: verl's estimators that train a critic: those of the advantage kinds that need one.
CRITIC_ESTIMATORS = {s.value for k in registry.REGISTRY["advantage"].values() if k.needs_critic
                     for s in registry.settings_of(k, "verl") if s.key == ADV_ESTIMATOR}
#: verl's loss_agg_mode -> the registry's aggregation kind, read from the kinds' verl settings (core/kinds_loss.py).
AGGREGATION = registry.trainer_values("verl", "actor_rollout_ref.actor.loss_agg_mode", "aggregation")


def _kl(kind: str, setting: str, value: Any, beta: float, gaps: list[Gap]) -> dict:
    est = KL_TYPES.get(str(value))
    if est is None:
        nearest = KL_TYPES.get(str(value).rstrip("+"), "k3")
        gaps.append(Gap(setting, str(value), "kl", f"{kind} with estimator {nearest}"))
        est = nearest
    return {"kind": kind, "params": {"estimator": est, "beta": float(beta)}}


LOSS_MODE = "actor_rollout_ref.actor.policy_loss.loss_mode"
#: verl's loss modes -> the ratio kind and the clip kind each selects, from the kinds' verl settings (gspo: the
#: sequence ratio, with PPO's clip; cispo, sapo, geo_mean: their clips); their parameters, and the aggregation a loss
#: forces, from the kind (core/kinds_import.py).
MODE_RATIO = registry.trainer_values("verl", LOSS_MODE, "ratio")
MODE_CLIP = {mode: kind for mode, kind in registry.trainer_values("verl", LOSS_MODE, "clip").items()
             if mode not in MODE_RATIO}
#: verl loss modes with no kind in the registry, and what each is (the gap names the nearest).
NO_KIND_LOSS = {"gpg": ("token", "GPG: -log pi A with no ratio"),
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
    - geo_mean (GMPO, ``compute_policy_loss_geo_mean``): each token's log-ratio clamped to
      [-clip_ratio_low, clip_ratio_high] on the side the advantage pushes, the response's term
      A exp(mean of those), averaged over the responses whatever loss_agg_mode says: the ``geo_mean``
      kind (eps_low, eps_high as log-ratio bounds) on the token ratio, aggregated seq-mean-token-mean.
    - any other mode (gpg, clip_cov, kl_cov, ...): a gap with the nearest ratio.
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
            raise LogError(source, f"clip_ratio_c {plain_num(float(c))}: verl's dual clip needs a bound above 1 (its "
                                          "compute_policy_loss_vanilla asserts it)", field="actor_rollout_ref.actor.clip_ratio_c")
        notes.once(f"verl's vanilla loss is dual-clip PPO: PPO's clip, and for a negative advantage the bound "
                   f"clip_ratio_c = {plain_num(float(c))} (the dual_clip kind; alike PPO's clip wherever no such token's ratio exceeds it)")
        return token, {"kind": "dual_clip", "params": {"eps_low": low, "eps_high": high, "c": c}}, None
    read = registry.reader({"actor_rollout_ref": {"actor": actor}}, get)
    try:
        if mode in MODE_RATIO:  # gspo: its ratio, with PPO's clip
            ratio = {"kind": MODE_RATIO[mode], "params": registry.params_from("verl", "ratio", MODE_RATIO[mode], read)}
            return ratio, ppo, read.forced.get("aggregation")
        if mode in MODE_CLIP:
            clip = {"kind": MODE_CLIP[mode], "params": registry.params_from("verl", "clip", MODE_CLIP[mode], read)}
            for line in read.notes:
                notes.once(line)
            return token, clip, read.forced.get("aggregation")
    except registry.Unreadable as err:
        raise LogError(source, str(err), field=err.setting) from None
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


RS = "algorithm.rollout_correction.rollout_rs"
#: verl's rollout_rs options that test the ratio itself (k1, ``-log(pi_old / pi_rollout)``): the level and the
#: sequence ratio of the masked_is kind (``rollout_corr_helper.compute_rollout_rejection_mask``).
RS_K1 = {"token_k1": ("token", "product"), "seq_sum_k1": ("sequence", "product"),
         "seq_mean_k1": ("sequence", "geometric_mean")}


def rejection_sampling(correction: dict, gaps: list[Gap], source: str) -> dict | None:
    """verl's rejection sampling (``algorithm.rollout_correction.rollout_rs``, verl b178a3c,
    ``verl/trainer/ppo/rollout_corr_helper.py``: ``compute_rollout_rejection_mask`` and
    ``_parse_rollout_rs_thresholds``) -> the ``masked_is`` kind with ``kept: one``, or None and one gap.

    verl tests k1 = -log rho with rho = pi_old / pi_rollout (``log_ratio = old_log_prob - rollout_log_prob``;
    clamped to +-20) and keeps a token when log L <= k1 <= log U, where ``rollout_rs_threshold`` is "L_U" or U
    alone (L = 1/U): kept when 1/U <= rho <= 1/L. token_k1 tests each token's rho; seq_sum_k1 the sum of k1
    over the response (the product of its ratios); seq_mean_k1 their mean (the geometric mean). A rejected
    token leaves the batch's response_mask (weight 0), a kept one weighs 1. The divergence options (k2, k3,
    seq_max) bound a KL estimate, not the ratio, several comma-separated options are combined, and a band with
    L >= U keeps nothing: each stays one gap."""
    rs, spec = str(get(correction, "rollout_rs")), get(correction, "rollout_rs_threshold")
    if rs not in RS_K1:
        what = ("several options, each of which must pass" if "," in rs
                else "a bound on a KL estimate of the mismatch, not a band of the ratio")
        gaps.append(Gap(RS, f"{rs} ({what})", "correction", "none"))
        return None
    field = "algorithm.rollout_correction.rollout_rs_threshold"
    if spec is None:
        raise LogError(source, f"rollout_rs {rs} without a threshold: verl refuses it (set rollout_rs_threshold, "
                               "U or L_U)", field=field)
    text = str(spec).strip()
    try:
        lower, upper = (float(x) for x in text.split("_", 1)) if "_" in text else (1.0 / float(text), float(text))
    except ValueError:
        raise LogError(source, f"{spec!r} is not U or L_U with numbers (verl's _parse_rollout_rs_thresholds)",
                       field=field) from None
    if not (0.0 < lower < upper):
        gaps.append(Gap(RS, f"{rs} with rollout_rs_threshold {text} (the band [{plain_num(float(lower))}, {plain_num(float(upper))}] of "
                            "pi_rollout / pi_old keeps nothing)", "correction", "none"))
        return None
    level, sequence = RS_K1[rs]
    return {"kind": "masked_is", "params": {"level": level, "sequence": sequence, "lower": 1.0 / upper,
                                            "cap": 1.0 / lower, "kept": "one"}}


def _rejection_inexact(advantage: str, kl: str, aggregation: str, clip: str) -> str:
    """Why verl's rejection is not the masked_is kind's weight 0 in this run ('' where it is): verl removes a
    rejected token from the response_mask before the advantages and the loss, so it also leaves every normaliser
    but seq-mean-token-sum-norm's constant, the KL loss, and GAE's and REINFORCE++'s whitening, where the kind's
    weight 0 keeps it counted."""
    reasons = []
    # kind name: verl's seq-mean-token-sum-norm divides by a constant, which a rejected token leaves unchanged
    if aggregation != "constant_normalizer":
        reasons.append("a rejected token also leaves loss_agg_mode's normaliser")
    if registry.kind("kl", kl).kl_place == "loss":
        reasons.append("and the KL loss" if reasons else "a rejected token also leaves the KL loss")
    # kind name: verl whitens these two advantages with masked statistics over the tokens (gae, reinforce_plus_plus)
    if advantage in ("gae", "whitened_return"):
        reasons.append(f"and the {advantage} advantages' masked statistics" if reasons
                       else f"a rejected token also leaves the {advantage} advantages' masked statistics")
    if clip == "geo_mean":  # kind name: GMPO's mean over the response (compute_policy_loss_geo_mean)
        reasons.append("and GMPO's mean over the response" if reasons
                       else "a rejected token also leaves GMPO's mean over the response")
    return " ".join(reasons)


def components(cfg: dict, notes: K.Notes, source: str = "config.yaml") -> tuple[str, dict[str, dict], list[Gap]]:
    """verl's algorithm settings -> (name, registry components, gaps). Defaults are verl's own
    (``verl/trainer/config/ppo_trainer.yaml``) where Hydra's config lacks a key."""
    gaps: list[Gap] = []
    actor = get(cfg, "actor_rollout_ref.actor", {})
    algo = get(cfg, "algorithm", {})
    budget = get(cfg, "data.max_response_length")
    est = str(get(algo, "adv_estimator", "gae"))
    read = registry.reader(cfg, get)
    # the advantage kind whose verl settings (algorithm.adv_estimator, ...) the config holds, its parameters its own
    chosen = registry.select("verl", "advantage", lambda key, default=None: (
        ESTIMATOR_ALIASES.get(est, est) if key == ADV_ESTIMATOR else read(key, default)))
    if chosen is not None:
        advantage = {"kind": chosen, "params": registry.params_from("verl", "advantage", chosen, read)}
    else:
        nearest = "group_mean" if est in GROUP_ESTIMATORS else "reinforce_return"
        gaps.append(Gap(ADV_ESTIMATOR, est, "advantage", nearest))
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
    for name in registry.kind("aggregation", agg_kind).run_resolved:  # the constant normaliser: verl's, else the budget
        norm = get(actor, "loss_scale_factor") or budget
        if norm is None:
            raise LogError(source, f"{agg_mode} divides by the response budget, which the config "
                                   "lacks: set data.max_response_length", field="data.max_response_length")
        aggregation["params"] = {name: float(norm)}

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
    corrects = not registry.kind("correction", corrected["kind"]).is_none
    # kind name: GMPO weighs a response by the geometric mean of its token weights (compute_policy_loss_geo_mean)
    if clip["kind"] == "geo_mean" and corrects and corrected["params"]["level"] == "token":
        # compute_policy_loss_geo_mean: exp(mean over the response of log(w + 1e-10)) on the response's term
        gaps.append(Gap("algorithm.rollout_correction.rollout_is", "token with policy_loss geo_mean (GMPO weighs the "
                        "response by the geometric mean of its token weights)", "correction",
                        "truncated_is on each token's term"))
    if get(correction, "rollout_rs") is not None:
        rejection = rejection_sampling(correction, gaps, source)
        if rejection is not None and corrects:
            gaps.append(Gap(RS, f"{get(correction, 'rollout_rs')} with rollout_is (verl weighs and rejects: two "
                                "corrections, the slot holds one)", "correction", f"{corrected['kind']} (rollout_is) alone"))
        elif rejection is not None:
            corrected = rejection
            inexact = _rejection_inexact(advantage["kind"], kl["kind"], agg_kind, clip["kind"])
            if inexact:
                gaps.append(Gap(RS, f"{get(correction, 'rollout_rs')} ({inexact})", "correction",
                                "masked_is with kept one, whose rejected tokens weigh 0 but stay in the normaliser"))
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
    if get(cfg, "critic.enable") is False or get(cfg, ADV_ESTIMATOR) not in CRITIC_ESTIMATORS:
        out.pop("critic_lr")
    return {k: v for k, v in out.items() if v is not None and not (isinstance(v, (int, float)) and v <= 0 and k != "seed")}
