"""TRL's GRPOConfig mapped to the registry's kinds: which aggregation, clip and rollout correction a
TRL run trained with, what no kind expresses (a named gap), and TRL's own per-token loss for a
loss type, in TRL's form (what the importer compares each token with)."""

from __future__ import annotations

import re

import numpy as np

from unipo_build.core import registry
from unipo_build.core.matching import Gap
from unipo_build.core.numbers import plain_num
from unipo_build.core.runlog import LogError
from unipo_build.core.specs import ResolvedAlgorithm
from unipo_build.trainers import common as K
from unipo_build.trainers.trainer_config import algorithm_gaps, check_algorithm, get
from unipo_build.trainers.trl.tap import MANIFEST, NORMALISER, NORMALISERS, TRL_SERIES
from unipo_build.trainers.trl.tap_files import Tap

#: TRL loss types -> the registry's aggregation kind (exact unless a gap says otherwise), read from the
#: aggregation kinds' TRL settings (core/kinds_loss.py).
AGGREGATION = registry.trainer_values("trl", "loss_type", "aggregation")
#: TRL loss types -> the clip kind each selects (cispo, sapo), from the clip kinds' TRL settings (core/kinds_loss.py).
LOSS_CLIP = registry.trainer_values("trl", "loss_type", "clip")
#: TRL loss types whose surrogate is PPO's clipped min (epsilon, epsilon_high; delta's two-sided clip).
PPO_LOSSES = ("grpo", "bnpo", "dr_grpo", "dapo", "luspo")
NO_KIND = {"vespo": "a Gamma weighting of the sequence ratio"}
#: mask_truncated_completions=True zeroes a truncated completion's completion_mask
#: (``_generate_and_score_completions``); whether the loss's normaliser (tap.NORMALISERS) still counts it (the
#: mask_truncated kind's count_masked): a row's token mean over every row (grpo, sapo) and rows x
#: max_completion_length (dr_grpo) do (true); the tokens left in the mask (bnpo, dapo, cispo) do not (false).
COUNTS_MASKED = {"row_mean": True, "constant": True, "micro_tokens": False, "generation_tokens": False}
#: Each loss type with a kind whose normaliser's count is known -> the mask_truncated kind's count_masked.
MASK_TRUNCATED_COUNTS = {loss_type: COUNTS_MASKED[name] for loss_type, name in NORMALISER.items()
                         if name in COUNTS_MASKED and loss_type in AGGREGATION}
#: The clip kinds TRL's ``delta`` selects (the dual clip), from their TRL settings (core/kinds_loss.py).
DELTA_CLIPS = set(registry.trainer_values("trl", "delta", "clip").values())
#: What TRL 1.16's GRPOConfig documentation (epsilon_high's help) recommends for loss_type 'cispo'.
CISPO_RECOMMENDED = ("TRL's GRPOConfig documentation recommends epsilon_high 5.0 for loss_type 'cispo' (the ScaleRL "
                     "paper's cap)")


# ---------------------------------------------------------------------------
# GRPOConfig -> the registry's components
# ---------------------------------------------------------------------------

def trl_components(trainer: dict, loc: K.Loc, sampler_logps: bool = False) -> tuple[dict, list[Gap]]:
    """(components, gaps) of the run's GRPOConfig; a LogError for a loss_type with no kind. ``sampler_logps``:
    the tap holds vLLM's sampling log-probs of every tapped completion (what a rollout correction needs)."""
    gaps: list[Gap] = []

    def gap(slot: str, setting: str, value: str, nearest: str) -> None:
        gaps.append(Gap(setting, value, slot, nearest))

    loss_type = trainer.get("loss_type")
    if loss_type in NO_KIND:
        raise loc.error(f"loss_type {loss_type!r} ({NO_KIND[loss_type]}) has no kind in the registry: pass "
                        "--algorithm SPEC (e.g. dapo) to view the run against that spec's objective, TRL's own loss "
                        "kept beside it", "trainer.loss_type")
    if loss_type not in AGGREGATION:
        raise loc.error(f"unknown loss_type {loss_type!r} (TRL {TRL_SERIES} has {', '.join(sorted(AGGREGATION))}, "
                        f"{', '.join(sorted(NO_KIND))}): pass --algorithm SPEC", "trainer.loss_type")
    comps: dict[str, dict] = {}
    # the advantage kind whose TRL settings (scale_rewards) the config holds, else TRL's default's; its parameters its own
    read = registry.reader(trainer, lambda config, key, default: config.get(key, default))
    advantage = (registry.select("trl", "advantage", read)
                 or registry.default_kind("trl", "advantage", "scale_rewards"))
    comps["advantage"] = {"kind": advantage, "params": registry.params_from("trl", "advantage", advantage, read)}
    if trainer.get("multi_objective_aggregation", "sum_then_normalize") == "normalize_then_sum":
        gap("advantage", "multi_objective_aggregation", "'normalize_then_sum'", "the z-score of the summed reward")
    level = trainer.get("importance_sampling_level", "token")
    comps["ratio"] = {"kind": "sequence" if level == "sequence" else "token", "params": {}}
    comps["clip"] = trl_clip(trainer, loc)
    cap = float(trainer.get("epsilon_high", 0.2))
    # TRL's paper-form loss (cispo's) caps the weight at epsilon_high itself, which no parameter below 1 expresses
    if registry.paper_form_kind("trl", "clip", "loss_type", loss_type) and cap <= 1.0:
        nearest = comps["clip"]["params"]["eps_high"]
        gap("clip", "epsilon_high", f"{plain_num(float(cap))} with loss_type 'cispo' (TRL caps the weight at epsilon_high itself, "
                                    f"epsilon's {plain_num(float(cap))} when it is unset: every token's weight min(ratio, {plain_num(float(cap))}) "
                                    "is below its ratio)",
            f"cispo with eps_high {plain_num(float(nearest))} (a cap of {plain_num(float(1 + nearest))}: the registry's cap is above 1)")
    beta = float(trainer.get("beta") or 0.0)
    comps["kl"] = {"kind": "in_loss", "params": {"estimator": "k3", "beta": beta}} if beta else \
        {"kind": "none", "params": {}}
    kind = AGGREGATION[loss_type]
    # the parameter a run fills in (dr_grpo's constant normaliser): TRL's max_completion_length
    comps["aggregation"] = {"kind": kind, "params": {name: int(trainer["max_completion_length"])
                                                     for name in registry.kind("aggregation", kind).run_resolved}}
    if loss_type == "bnpo" and int(trainer.get("gradient_accumulation_steps", 1)) > 1:
        # each micro-batch's token mean, over the accumulation steps: the tap's rows come in micro-batch order
        comps["aggregation"] = {"kind": "micro_token_mean",
                                "params": {"micro_batch": int(trainer["per_device_train_batch_size"])}}
    # TRL's loss types that divide by the generation batch's token count (num_items_in_batch)
    if loss_type in NORMALISERS["generation_tokens"] and (trainer.get("steps_per_generation")
                                           != trainer.get("gradient_accumulation_steps")):
        gap("aggregation", "loss_type", f"{loss_type!r} with steps_per_generation != gradient_accumulation_steps (tokens "
                                        "divided by the generation batch's count)", "token_mean over the step")
    comps["filter"] = {"kind": "none", "params": {}}
    comps["shaping"] = {"kind": "none", "params": {}}
    if trainer.get("mask_truncated_completions"):
        if loss_type in MASK_TRUNCATED_COUNTS:
            comps["filter"] = {"kind": "mask_truncated", "params": {"count_masked": MASK_TRUNCATED_COUNTS[loss_type]}}
        else:
            gap("filter", "mask_truncated_completions", f"True with loss_type {loss_type!r} (truncated completions out "
                                                        "of the loss; how its normaliser counts them has no kind)",
                "filter none, their tokens kept with mask 0")
    config = trainer.get("config") or {}
    # a delta that did not make the dual clip (trl_clip) clips inside PPO's range
    if config.get("delta") is not None and loss_type in PPO_LOSSES and comps["clip"]["kind"] not in DELTA_CLIPS:
        gap("clip", "delta", f"{config['delta']} (two-sided clip of the ratio, at or below 1 + epsilon_high: "
                             "it clips inside PPO's range)", comps["clip"]["kind"])
    if config.get("use_bias_correction_kl"):
        gap("kl", "use_bias_correction_kl", "True (the KL times the ratio)", "k3 in the loss")
    if (config.get("top_entropy_quantile") or 1.0) < 1.0:
        gap("filter", "top_entropy_quantile", f"{config['top_entropy_quantile']} (only high-entropy tokens trained)",
            "every token trained")
    if config.get("off_policy_mask_threshold") is not None:
        gap("filter", "off_policy_mask_threshold", f"{config['off_policy_mask_threshold']} (off-policy sequences "
                                                   "with negative advantage dropped)", "none")
    if config.get("use_vllm") and config.get("vllm_importance_sampling_correction") and loss_type != "vespo":
        correction = trl_correction(config)
        if correction is not None and sampler_logps:
            comps["correction"] = correction
        else:
            gap("correction", "vllm_importance_sampling_correction",
                f"True (mode {config.get('vllm_importance_sampling_mode')!r}: the loss times a weight from pi_old / "
                "pi_sampler)", "none" + (" (the tap holds no sampling log-probs)" if correction is not None
                                         else " (a truncation with no cap)"))
    if config.get("entropy_coef"):
        gap("kl", "entropy_coef", f"{config['entropy_coef']} (an entropy bonus in the loss)", "no entropy term")
    return comps, gaps


def trl_clip(trainer: dict, loc: K.Loc) -> dict:
    """The clip slot of a GRPOConfig (TRL 1.16, ``GRPOTrainer._compute_loss``):

    - grpo, bnpo, dr_grpo, dapo, luspo: PPO's min with clamp(ratio, 1 - epsilon, 1 + epsilon_high):
      ``symmetric`` (eps) when the two are equal, else ``asymmetric``;
    - cispo: ``clamp(ratio, max=epsilon_high).detach() * A * log pi``: the ``cispo`` kind with no lower
      bound and ``eps_high = epsilon_high - 1`` (TRL's epsilon_high is the cap itself; ScaleRL's 5.0 is
      eps_high 4). A cap at or below 1 (TRL's default: epsilon_high unset is epsilon's 0.2) has no kind (the
      registry's cap is above 1): the kind's default cap stands in, and :func:`trl_components` names the gap;
    - with ``delta`` above 1 + epsilon_high (INTELLECT-2's two-sided clip: coef_1 clamped at delta): the
      ``dual_clip`` kind with c = delta (its floor for a negative advantage); a delta inside PPO's range is a gap;
    - sapo: ``sigmoid(tau (ratio - 1)) * 4 / tau`` with tau = sapo_temperature_pos where A > 0, else
      sapo_temperature_neg: the ``sapo`` kind (tau_pos, tau_neg).
    """
    loss_type = trainer.get("loss_type")
    config = trainer.get("config") or {}
    low, high = float(trainer.get("epsilon_low", 0.2)), float(trainer.get("epsilon_high", 0.2))
    if loss_type in LOSS_CLIP:  # the clip kind the loss type selects, its parameters its own (core/kinds_import.py)
        name = LOSS_CLIP[loss_type]
        return {"kind": name, "params": registry.params_from("trl", "clip", name, registry.reader(trainer, get))}
    delta = config.get("delta")
    if delta is not None and loss_type in PPO_LOSSES and float(delta) > 1.0 + high:
        # coef_1 clamped at delta inside PPO's min: for A < 0 and ratio > delta the term is delta A, constant (the
        # dual clip's floor c A with c = delta); for A > 0 the clipped branch, 1 + epsilon_high, is the smaller
        return {"kind": "dual_clip", "params": {"eps_low": low, "eps_high": high, "c": float(delta)}}
    return ({"kind": "symmetric", "params": {"eps": low}} if low == high
            else {"kind": "asymmetric", "params": {"eps_low": low, "eps_high": high}})


def trl_correction(config: dict) -> dict | None:
    """TRL's vLLM importance-sampling correction (``_generate_and_score_completions``): the ratio
    exp(old - sampling log-prob), per token or summed over the completion (the product of its token ratios:
    ``sequence_*`` modes), clamped to [clip_min, clip_max] (``*_truncate``: ``truncated_is``) or set to 0
    outside them (``*_mask``: ``masked_is``, a kept token keeping the tested ratio); None where the registry
    has no kind for it (a truncation without clip_max)."""
    mode = str(config.get("vllm_importance_sampling_mode") or "sequence_mask")
    level, _, how = mode.partition("_")
    low, cap = config.get("vllm_importance_sampling_clip_min"), config.get("vllm_importance_sampling_clip_max", 3.0)
    params = {"level": level, "sequence": "product", "lower": None if low is None else float(low)}
    if level not in ("token", "sequence") or how not in ("truncate", "mask"):
        return None
    if how == "truncate":
        return None if cap is None else {"kind": "truncated_is", "params": {**params, "cap": float(cap)}}
    return {"kind": "masked_is", "params": {**params, "cap": None if cap is None else float(cap), "kept": "ratio"}}


def trl_token_loss(loss_type: str, objective, kl, beta: float, logp) -> np.ndarray:
    """TRL's per-token loss, written from the recomputed token objective: minus the objective, except for
    cispo, whose loss TRL writes as the MiniMax-M1 paper does, -sg(w) A log pi + beta KL. The registry's
    cispo kind has the value sg(w / rho) rho A = w A and the same gradient, w A grad log pi, so TRL's value
    is the kind's surrogate (objective + beta KL) times log pi, minus beta KL."""
    objective = np.asarray(objective, dtype=np.float64)
    if not registry.paper_form_kind("trl", "clip", "loss_type", loss_type):  # TRL's paper form (the docstring)
        return -objective
    kl_term = beta * np.asarray(kl, dtype=np.float64) if beta and kl is not None else 0.0
    return -((objective + kl_term) * np.asarray(logp, dtype=np.float64) - kl_term)


def sampler_missing(tap: Tap | None, notes: K.Notes) -> list[str]:
    """The header's ``missing`` entry of a run whose TRL corrected for the sampler (use_vllm with
    vllm_importance_sampling_correction: the loss times a weight from pi_old / pi_sampler) while its tap holds no
    sampling log-probs for the tapped completions: the weights cannot be recomputed and none is invented; TRL's own
    per-token loss (engine_objective), which includes them, stays beside ours."""
    config = (tap.manifest.get("config") or {}) if tap else {}
    if not (config.get("use_vllm") and config.get("vllm_importance_sampling_correction")):
        return []
    samples = [x for rows in tap.samples.values() for x in rows]
    lacking = sum(1 for x in samples if x.get("sampling_logp") is None)
    if not lacking:
        return []
    mode = config.get("vllm_importance_sampling_mode")
    line = (f"the sampler's log-probs of {lacking} of {len(samples)} tapped completions: TRL's vLLM importance-sampling "
            f"correction was on (vllm_importance_sampling_mode {mode!r}), so its loss carries weights from them that "
            "are not recomputed here (TRL's per-token loss, engine_objective, includes them)")
    notes.once("missing (see the header's missing): " + line)
    return [line]


def cispo_weight_cap(trainer: dict) -> dict | None:
    """The header's ``imported_from.weight_cap`` of a CISPO run capped at or below 1 (TRL's cap is epsilon_high itself,
    epsilon's 0.2 when unset), which no clip kind expresses: the diagnosis of which side clipped reads it
    (core/diagnose.py). None for any other run."""
    cap = float(trainer.get("epsilon_high", 0.2))
    if not registry.paper_form_kind("trl", "clip", "loss_type", trainer.get("loss_type")) or cap > 1.0:
        return None
    return {"setting": "epsilon_high", "cap": cap, "advice": CISPO_RECOMMENDED}


def cispo_cap_note(trainer: dict, notes: K.Notes) -> None:
    """What a CISPO cap at or below 1 does, and what TRL's documentation recommends instead."""
    cap = float(trainer.get("epsilon_high", 0.2))
    if not registry.paper_form_kind("trl", "clip", "loss_type", trainer.get("loss_type")) or cap > 1.0:
        return
    notes.once(f"TRL's CISPO cap of {plain_num(float(cap))} (epsilon_high, which unset is epsilon's value) holds every token's weight "
               f"below its ratio: min(ratio, {plain_num(float(cap))}) is {plain_num(float(cap))} wherever the ratio is above {plain_num(float(cap))} (every token of a "
               f"rollout's first update, where the ratio is 1), so a token's gradient is {plain_num(float(cap))} x A x grad log pi "
               f"whatever its ratio, the policy gradient scaled by {plain_num(float(cap))}. " + CISPO_RECOMMENDED + ". The token files "
               "use the nearest kind in its place (imported_from.gaps), so their objective parts from TRL's loss")


def _trainer_settings(tap: Tap) -> tuple[dict, bool]:
    """The GRPOConfig the tap recorded, and whether it holds the sampler's log-probs of every tapped completion."""
    trainer = {**tap.manifest["trainer"], "config": tap.manifest.get("config") or {}}
    trainer.setdefault("multi_objective_aggregation", trainer["config"].get("multi_objective_aggregation"))
    samples = [x for rows in tap.samples.values() for x in rows]
    return trainer, bool(samples) and all(x.get("sampling_logp") is not None for x in samples)


def _algorithm(tap: Tap | None, algorithm: str | None, max_new_tokens: int | None, loc: K.Loc,
               notes: K.Notes) -> tuple[ResolvedAlgorithm | None, str, list[Gap], dict | None]:
    """(the run's resolved components, its algorithm name, the gaps, ``imported_from.algorithm_option`` under
    ``--algorithm``). With ``--algorithm SPEC`` the run holds the spec's components, and every slot where the tap's
    GRPOConfig says TRL ran something else is a gap (``trainer_config.algorithm_gaps``), beside the settings no kind
    expresses."""
    specs = K.known_specs(notes)
    if algorithm is not None:
        spec_id = check_algorithm(algorithm, loc.file)
        budget = max_new_tokens or (tap.manifest["trainer"].get("max_completion_length") if tap else None)
        cfg = K.resolve_for_import(specs[spec_id], {}, budget, loc, notes, hparams_field=False)
        notes.once(f"components of the spec {spec_id} (--algorithm); TRL's own loss kept as engine_objective")
        if tap is None:
            notes.once("TRL's settings unknown without --tap (trainer_state.json does not record the GRPOConfig): the "
                       f"run is not compared with {spec_id}")
            return cfg, spec_id, [], {"spec": spec_id, "settings": "not recorded"}
        trainer, sampler = _trainer_settings(tap)
        manifest = K.Loc(str(tap.directory / MANIFEST))
        try:
            comps, gaps = trl_components(trainer, manifest, sampler)
        except LogError:  # a loss_type with no kind: the one gap, the other slots unknown
            loss_type = trainer.get("loss_type")
            comps, gaps = {}, [Gap("loss_type", repr(loss_type) + (f" ({NO_KIND[loss_type]})" if loss_type in NO_KIND
                                                                   else " (unknown to TRL " + TRL_SERIES + ")"),
                                   "clip", f"{spec_id}'s {cfg.kind('clip')}")]
        cispo_cap_note(trainer, notes)
        shown = {slot: c.model_dump() for slot, c in cfg.components.items()}
        gaps = gaps + algorithm_gaps("trl", comps, shown, spec_id, gaps)
        for g in gaps:
            notes.once(f"TRL's {g.line()}")
        return cfg, spec_id, gaps, {"spec": spec_id, "settings": "compared"}
    if tap is None:
        notes.add("algorithm unknown (trainer_state.json does not record the GRPOConfig; pass --tap or --algorithm)")
        return None, "unknown", [], None
    trainer, sampler = _trainer_settings(tap)
    comps, gaps = trl_components(trainer, K.Loc(str(tap.directory / MANIFEST)), sampler)
    cispo_cap_note(trainer, notes)
    own = f"trl-{trainer.get('loss_type')}"
    cfg = ResolvedAlgorithm.model_validate({"id": re.sub(r"[^a-z0-9_]", "_", own.lower()),
                                            "name": f"TRL GRPOTrainer, loss_type={trainer.get('loss_type')}",
                                            "components": comps})
    spec_id = K.nearest_algorithm(cfg, specs, "TRL", notes, gaps={g.slot for g in gaps})
    run_name = own if spec_id == cfg.id else spec_id
    cfg = cfg.model_copy(update={"id": spec_id})
    for g in gaps:
        notes.once(f"TRL's {g.line()}")
    return cfg, run_name, gaps, None
