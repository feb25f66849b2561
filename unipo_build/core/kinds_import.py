"""Each shipped kind's parameters as a trainer's config holds them, where its settings alone do not say them
(``translators["verl"]``, ``translators["trl"]``: ``fn(read) -> params``, ``read(key, default)`` the config's value,
verl's keys dotted from the config's root, TRL's GRPOConfig's names). The importers (trainers/verl/config.py,
trainers/trl/config.py) choose the kind by its settings (core/registry_trainers.py: ``select``) and ask it here for
its parameters; a kind without a reader takes none ({}).
"""

from __future__ import annotations

from unipo_build.core.registry_base import kind, trainer_settings

_VERL = "actor_rollout_ref.actor."
#: verl's policy losses (``policy_loss.loss_mode``, ``core_algos.register_policy_loss``) that pass
#: ``loss_agg_mode="seq-mean-token-mean"`` to ``agg_loss`` whatever the config says.
_PER_SEQUENCE = "seq-mean-token-mean"


def _gae(read) -> dict:
    """verl's GAE: algorithm.gamma and .lam (1.0 each by default), the critic's value clip (0.5)."""
    return {"gamma": float(read("algorithm.gamma", 1.0)), "lam": float(read("algorithm.lam", 1.0)),
            "value_clip": float(read("critic.cliprange_value", 0.5))}


# verl: the group z-score divides by the sample std + 1e-6 (compute_grpo_outcome_advantage's epsilon)
trainer_settings("advantage", "group_zscore", verl=lambda read: {"std_ddof": 1, "eps": 1e-6},
                 # TRL: the std plus 1e-4 (GRPOTrainer._generate_and_score_completions)
                 trl=lambda read: {"std_ddof": 1, "eps": 1e-4})
# TRL scale_rewards 'batch': the reward minus its group's mean, over rewards.std() of the whole batch + 1e-4
trainer_settings("advantage", "group_mean_batch_std", trl=lambda read: {"std_ddof": 1, "eps": 1e-4})
trainer_settings("advantage", "gae", verl=_gae)
trainer_settings("advantage", "whitened_return", verl=lambda read: {"gamma": float(read("algorithm.gamma", 1.0))})


# --- verl's policy losses (trainers/verl/config.py policy_loss: the kind whose loss_mode setting the config holds) --

def _verl_bounds(read) -> tuple[float, float]:
    """clip_ratio_low / clip_ratio_high, each clip_ratio (0.2) where unset."""
    eps = float(read(_VERL + "clip_ratio", 0.2))
    return float(read(_VERL + "clip_ratio_low", eps)), float(read(_VERL + "clip_ratio_high", eps))


def _verl_sequence(read) -> dict:
    read.forces("aggregation", _PER_SEQUENCE)  # gspo
    return {}


def _verl_cispo(read) -> dict:
    read.note("verl's cispo loss is the paper's -sg(w) A log pi, whose value is log pi times the cispo kind's "
              "w A (the gradient, w A grad log pi, is the same): the objective from actor/pg_loss is verl's value")
    low, high = _verl_bounds(read)
    return {"eps_low": low, "eps_high": high}


def _verl_sapo(read) -> dict:
    params = {"tau_pos": read.number(_VERL + "tau_pos", 1.0), "tau_neg": read.number(_VERL + "tau_neg", 1.05)}
    read.forces("aggregation", _PER_SEQUENCE)
    return params


def _verl_geo_mean(read) -> dict:
    # torch.mean over the responses of A exp(mean of the clipped log-ratios): loss_agg_mode unused
    read.forces("aggregation", _PER_SEQUENCE)
    low, high = _verl_bounds(read)
    return {"eps_low": low, "eps_high": high}


trainer_settings("ratio", "sequence", verl=_verl_sequence)
trainer_settings("clip", "cispo", verl=_verl_cispo)
trainer_settings("clip", "sapo", verl=_verl_sapo)
trainer_settings("clip", "geo_mean", verl=_verl_geo_mean)


# --- TRL's losses (trainers/trl/config.py trl_clip: the clip kind whose loss_type setting the GRPOConfig holds) -----

def _trl_cispo(read) -> dict:
    """``clamp(ratio, max=epsilon_high).detach() * A * log pi``: no lower bound, eps_high = epsilon_high - 1 (TRL's
    epsilon_high is the cap itself; ScaleRL's 5.0 is eps_high 4). A cap at or below 1 (TRL's default: epsilon_high
    unset is epsilon's 0.2) has no kind (the kind's cap is above 1): the kind's default cap stands in, and the
    importer names the gap."""
    high = float(read("epsilon_high", 0.2))
    if high <= 1.0:
        return {"eps_low": None, "eps_high": float(kind("clip", "cispo").params.model_fields["eps_high"].default)}
    return {"eps_low": None, "eps_high": high - 1.0}


def _trl_sapo(read) -> dict:
    """``sigmoid(tau (ratio - 1)) * 4 / tau``, tau = sapo_temperature_pos where A > 0, else sapo_temperature_neg."""
    return {"tau_pos": float(read("config.sapo_temperature_pos", 1.0)),
            "tau_neg": float(read("config.sapo_temperature_neg", 1.05))}


trainer_settings("clip", "cispo", trl=_trl_cispo)
trainer_settings("clip", "sapo", trl=_trl_sapo)
