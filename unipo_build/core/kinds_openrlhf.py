"""Each shipped kind in OpenRLHF 0.11.2's ``train_ppo_ray``: the flags that select it, and where OpenRLHF falls short,
the gap and the nearest approximation it trains instead (``translators["openrlhf"]``, read by
trainers/openrlhf/command.py, which branches on no kind: see its docstring for exact slots and gaps).

Each function takes the kind's resolved parameters, the resolved algorithm (a kind whose flags depend on another
slot's kind reads it there) and the generation budget, and returns a :class:`~unipo_build.core.registry_trainers.Flags`.
A kind registered without one is refused by the builder in one line.
"""

from __future__ import annotations

import math

from unipo_build.core.numbers import plain_num
from unipo_build.core.registry_base import trainer_settings
from unipo_build.core.registry_trainers import Flags

WIDE = ("--actor.eps_clip_low_high", "0.999999", "999999.0")  # clip bounds that do not act in practice


def _fmt(value: float) -> str:
    """A float flag value as Python writes it (0.2, 1.0, 1e-06): argparse reads it back exactly."""
    return repr(float(value))


def _estimator(name: str) -> list[str]:
    return ["--algo.advantage.estimator", name]


# --- advantage -------------------------------------------------------------------------------

def _group_zscore(p, cfg, budget) -> Flags:
    out = Flags(_estimator("group_norm"), [f"group_norm divides by std + 1e-9 (the spec's eps is "
                                           f"{plain_num(float(p.get('eps', 1e-6)))}); equal rewards give advantage 0 in both"])
    if p.get("std_ddof", 1) != 1:
        out.gaps.append(("the population std (n) of each group's rewards", "'s group_norm uses torch's sample std (n - 1)",
                         "group_norm with the sample std: every advantage scaled by sqrt((G-1)/G)",
                         tuple(_estimator("group_norm"))))
        out.runs = ("group_zscore", {**p, "std_ddof": 1})
    return out


def _group_mean_batch_std(p, cfg, budget) -> Flags:
    return Flags(_estimator("dr_grpo"), gaps=[(
        "the group mean subtracted, divided by the std of every reward in the batch",
        " has no estimator that divides by the batch's reward std",
        "dr_grpo (the group mean subtracted, no division): every advantage is the batch std + eps times the spec's",
        tuple(_estimator("dr_grpo")))], runs=("group_mean", {}))


def _gae(p, cfg, budget) -> Flags:
    out = Flags(_estimator("gae") + ["--algo.advantage.gamma", _fmt(p.get("gamma", 1.0)), "--algo.advantage.lambd",
                                     _fmt(p.get("lam", 0.95)), "--algo.advantage.no_std_norm"])
    if p.get("value_clip") is not None:
        out.flags += ["--critic.value_clip", _fmt(p["value_clip"])]
    else:
        out.gaps.append(("an unclipped value loss", " always clips the value loss (its --critic.value_clip has no off "
                         "switch)", "a value clip of 1e6, which never acts", ("--critic.value_clip", "1000000.0")))
        out.flags += ["--critic.value_clip", "1000000.0"]
    out.gaps.append(("GAE advantages used as computed", " centres GAE advantages over the batch's tokens, and also "
                     "divides by their std unless --algo.advantage.no_std_norm", "GAE minus its batch mean over tokens "
                     "(no_std_norm): the smallest change it allows, near zero for a good critic",
                     ("--algo.advantage.no_std_norm",)))
    return out


def _whitened_return(p, cfg, budget) -> Flags:
    return Flags(_estimator("reinforce") + ["--algo.advantage.gamma", _fmt(p.get("gamma", 1.0))],
                 ["reinforce whitens with rsqrt(max(var, 1e-8)) over the batch's tokens (the spec adds "
                  f"eps {plain_num(float(p.get('eps', 1e-6)))} to the std)"])


def _reinforce_return(p, cfg, budget) -> Flags:
    flags = _estimator("reinforce") + ["--algo.advantage.gamma", _fmt(p.get("gamma", 1.0)), "--algo.advantage.no_std_norm"]
    centred = ("--algo.advantage.estimator", "reinforce", "--algo.advantage.no_std_norm")
    if p.get("baseline", "batch_mean") == "batch_mean":
        gap = ("the return minus the batch's mean reward (each response counted once)", " can only subtract the mean "
               "of the returns over the batch's tokens, so a long response weighs more in the baseline",
               "reinforce with --algo.advantage.no_std_norm (returns minus their token mean, no whitening)", centred)
    else:
        gap = ("the plain return with no baseline and no whitening", " always centres reinforce returns over the batch "
               "(no_std_norm keeps only the centring)", "reinforce with --algo.advantage.no_std_norm (returns minus "
               "their token mean)", centred)
    return Flags(flags, gaps=[gap])


# --- ratio ----------------------------------------------------------------------------------

def _seq_mean_only(agg: str, p: dict) -> Flags | None:
    """GSPO's loss in OpenRLHF averages per sequence, then over sequences, whatever the aggregation."""
    if agg == "seq_mean_token_mean":
        return None
    return Flags(gaps=[(f"{agg} with a sequence ratio", "'s gspo loss always averages per sequence then over sequences",
                        "seq-mean-token-mean", ())], runs=("seq_mean_token_mean", {}))


def _no_ratio(p, cfg, budget) -> Flags:
    # pi / sg(pi) has the value 1 and the gradient of log pi: OpenRLHF's ratio exp(logp - old_logp) is
    # exactly that on the first update after sampling, so one update per rollout makes it exact.
    return Flags(["--actor.policy_loss_type", "ppo"], ["no ratio: one epoch and one optimizer step per rollout, so "
                 "OpenRLHF's ratio exp(logp - old_logp) is 1 with the gradient of log pi, the REINFORCE estimator (up "
                 "to the difference between the sampling engine's and the trainer's log-probs)"], single_update=True)


# --- clip -----------------------------------------------------------------------------------

def _no_clip(p, cfg, budget) -> Flags:
    if cfg.kind("ratio") == "none":  # REINFORCE: at ratio 1 the clip is nothing to translate
        return Flags(notes=["no clip: at ratio 1 OpenRLHF's default clip never acts"])
    return Flags(list(WIDE), gaps=[("no clipping of the ratio", " always clips the ratio",
                                    "clip bounds so wide they do not act in practice: [1e-6, 1e6]", WIDE)])


def _ppo_clip_instead(says: str, loss: str, nearest: str, low: float, high: float, flags: tuple[str, ...] | None = None
                      ) -> Flags:
    """A clip OpenRLHF has no loss for: PPO's clip at ``low``/``high`` in its place."""
    flags = flags or ("--actor.eps_clip_low_high", _fmt(low), _fmt(high))
    return Flags(list(flags), gaps=[(says, f" has no {loss} loss (--actor.policy_loss_type is ppo or gspo)", nearest,
                                     flags)], runs=("asymmetric", {"eps_low": low, "eps_high": high}))


def _cispo(p, cfg, budget) -> Flags:
    low = "0.999999" if p.get("eps_low") is None else _fmt(p["eps_low"])
    out = _ppo_clip_instead("CISPO's clipped importance-sampling weight, under which every token keeps its gradient",
                            "CISPO", "PPO's clip at the same bounds: a token past them loses its gradient instead of "
                            "keeping a capped one", float(low), p["eps_high"],
                            ("--actor.eps_clip_low_high", low, _fmt(p["eps_high"])))
    return out


def _sapo(p, cfg, budget) -> Flags:
    return _ppo_clip_instead("SAPO's soft gate on the ratio", "SAPO", "clip bounds so wide they do not act in "
                             "practice, [1e-6, 1e6]: the term rho A, whose slope the gate has only at rho = 1",
                             0.999999, 999999.0, WIDE)


def _geo_mean(p, cfg, budget) -> Flags:
    low, high = round(1.0 - math.exp(-p["eps_low"]), 6), round(math.expm1(p["eps_high"]), 6)
    return _ppo_clip_instead("GMPO's geometric mean of the token ratios, each log-ratio clipped first", "GMPO",
                             "PPO's token clip at the same ratio bounds, exp(-eps_low) to exp(eps_high): an arithmetic "
                             "mean of the clipped token ratios instead of a geometric one", low, high)


def _dppo_mask(p, cfg, budget) -> Flags:
    # a token of probability 1 is masked at the ratios 1 - delta_low and 1 + delta_high: PPO's clip there holds
    # every token at least as tightly as the mask does (a less likely one sooner)
    low, high = min(max(p["delta_low"], 1e-6), 0.999999), max(p["delta_high"], 1e-6)  # OpenRLHF: 0 < eps < 1
    return _ppo_clip_instead("DPPO's mask on the change of each token's probability", "DPPO", "PPO's clip at the ratio "
                             "bounds the mask has for a token of probability 1, 1 - delta_low and 1 + delta_high: a "
                             "less likely token is clipped sooner than the mask would drop it, and a clipped token's "
                             "term stays clip(rho) A instead of 0", low, high)


# --- kl -------------------------------------------------------------------------------------

def _kl(p, cfg, budget, in_loss: bool) -> Flags:
    out = Flags(["--algo.kl.init_coef", _fmt(p["beta"]), "--algo.kl.estimator", p["estimator"]])
    agg = cfg.kind("aggregation")
    if in_loss:
        out.flags += ["--algo.kl.use_loss"]
        if agg != "token_mean":
            out.gaps.append((f"the KL term inside each token's objective, aggregated with the policy term ({agg})",
                             " averages the KL loss over all tokens of the optimizer step (token mean) whatever the "
                             "policy loss's aggregation", "the KL term as a token mean next to the policy term's own "
                             "aggregation", ("--algo.kl.use_loss",)))
    out.notes.append("KL estimates are clamped to [-10, 10]")
    return out


# --- aggregation ----------------------------------------------------------------------------

def _token_mean_instead(says: str) -> Flags:
    flags = ("--actor.loss_agg_mode", "token-mean")
    return Flags(list(flags), gaps=[(says, " only averages, per token (token-mean) or per sequence "
                                     "(seq-mean-token-mean)", "token-mean: the same weight for every token of a step, so "
                                     "the gradient's direction is the spec's and only its size changes from step to "
                                     "step (by the step's tokens over the spec's denominator)", flags)],
                 runs=("token_mean", {}))


# --- correction -----------------------------------------------------------------------------

def _sampler_correction(name: str):
    # OpenRLHF has the correction (--algo.advantage.is_correction_level/mode/threshold), but the UNIPO tap does
    # not record its rollout log-probs, so the trained run's weights could not be recomputed: run without it.
    return lambda p, cfg, budget: Flags(gaps=[(
        f"the rollout correction {name} against the sampler's log-probs", "'s correction "
        "(--algo.advantage.is_correction_*) needs vLLM's log-probs, which the UNIPO OpenRLHF tap does not record, so its "
        "weights could not be recomputed", "no correction (OpenRLHF's default, --algo.advantage.is_correction_level off)",
        ())], runs=("none", {}))


# --- filter and shaping ---------------------------------------------------------------------

def _dynamic_sampling(p, cfg, budget) -> Flags:
    # reward_func returns scores = correctness (0/1): a mean strictly inside (0, 1) is a mixed group.
    return Flags(["--algo.dynamic_filtering_enable", "--algo.dynamic_filtering_range", "0", "1"],
                 ["dynamic filtering keeps a group when its mean score (correctness, from reward_func) lies strictly "
                  "inside (0, 1), the spec's rule; OpenRLHF refills until the batch is full instead of stopping after "
                  f"{p.get('max_rounds', 4)} rounds"])


def _overlong(p, cfg, budget) -> Flags:
    out = Flags(["--reward.overlong_buffer_len", str(p["cache_length"]), "--reward.overlong_penalty_factor",
                 f"{plain_num(float(p.get('penalty', 1.0)))}"])
    if p["max_length"] != budget:
        out.gaps.append((f"the overlong penalty ramping up to L_max = {p['max_length']}", " measures the buffer back "
                         "from --rollout.max_new_tokens", f"the ramp ending at max_new_tokens = {budget}", ()))
        out.runs = ("overlong", {**p, "max_length": budget})
    return out


def _only(*flags: str, notes: tuple[str, ...] = (), single_update: bool = False, then: dict | None = None):
    """A kind OpenRLHF runs exactly with fixed flags."""
    return lambda p, cfg, budget: Flags(list(flags), list(notes), single_update=single_update, then=dict(then or {}))


OPENRLHF = {
    ("advantage", "group_zscore"): _group_zscore,
    ("advantage", "group_mean"): _only(*_estimator("dr_grpo")),
    ("advantage", "group_mean_batch_std"): _group_mean_batch_std,
    ("advantage", "leave_one_out"): _only(*_estimator("rloo")),
    ("advantage", "gae"): _gae,
    ("advantage", "whitened_return"): _whitened_return,
    ("advantage", "reinforce_return"): _reinforce_return,
    ("ratio", "token"): _only("--actor.policy_loss_type", "ppo", notes=("log-ratios are clamped to [-20, 20] before exp",)),
    ("ratio", "sequence"): _only("--actor.policy_loss_type", "gspo", then={"aggregation": _seq_mean_only}),
    ("ratio", "none"): _no_ratio,
    ("clip", "symmetric"): lambda p, cfg, budget: Flags(["--actor.eps_clip", _fmt(p["eps"])]),
    ("clip", "asymmetric"): lambda p, cfg, budget: Flags(["--actor.eps_clip_low_high", _fmt(p["eps_low"]),
                                                          _fmt(p["eps_high"])]),
    ("clip", "none"): _no_clip,
    ("clip", "dual_clip"): lambda p, cfg, budget: Flags(["--actor.eps_clip_low_high", _fmt(p["eps_low"]),
                                                         _fmt(p["eps_high"]), "--actor.dual_clip", _fmt(p["c"])]),
    ("clip", "cispo"): _cispo,
    ("clip", "sapo"): _sapo,
    ("clip", "geo_mean"): _geo_mean,
    ("clip", "dppo_mask"): _dppo_mask,
    ("kl", "none"): _only("--algo.kl.init_coef", "0"),
    ("kl", "in_loss"): lambda p, cfg, budget: _kl(p, cfg, budget, in_loss=True),
    ("kl", "in_reward"): lambda p, cfg, budget: _kl(p, cfg, budget, in_loss=False),
    ("aggregation", "seq_mean_token_mean"): _only("--actor.loss_agg_mode", "seq-mean-token-mean"),
    ("aggregation", "token_mean"): _only("--actor.loss_agg_mode", "token-mean"),
    ("aggregation", "constant_normalizer"): lambda p, cfg, budget: _token_mean_instead(
        "the token objectives summed and divided by a constant (responses x L)"),
    ("aggregation", "seq_mean_token_sum"): lambda p, cfg, budget: _token_mean_instead(
        "the token objectives summed per response, then averaged over responses"),
    ("correction", "none"): _only(),
    ("correction", "truncated_is"): _sampler_correction("truncated_is"),
    ("correction", "masked_is"): _sampler_correction("masked_is"),
    ("filter", "none"): _only(),
    ("filter", "dynamic_sampling"): _dynamic_sampling,
    ("shaping", "none"): _only(),
    ("shaping", "overlong"): _overlong,
}

for (_slot, _name), _fn in OPENRLHF.items():
    trainer_settings(_slot, _name, openrlhf=_fn)
