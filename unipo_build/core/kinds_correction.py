"""The kinds of the correction slot: rollout correction, the behaviour policy's weight on each
token's surrogate (truncated or masked importance sampling against the sampler's log-probs),
each registered once (``unipo_build.core.registry`` says what a kind is made of)."""

from __future__ import annotations

from typing import Literal

import numpy as np
from pydantic import Field, field_validator

from unipo_build.core import components as C
from unipo_build.core.numbers import param_text as _fmt
from unipo_build.core.numbers import fmt_num, fmt_pct, tex_num
from unipo_build.core.registry_base import (
    NoParams,
    Term,
    _Params,
    cases,
    explain,
    register,
    row,
    say,
    setting,
    describe,
    trainer_settings,
)

# --- correction ------------------------------------------------------------
#
# Rollout correction weighs each token's surrogate by how much likelier the learner (its log-probs
# before this rollout's first update, old_logp) finds the token than the sampler that drew it did
# (sample_logp): vLLM in another precision, or a policy some updates stale. Sources, by trainer:
#   TRL 1.16   trl/trainer/grpo_trainer.py, GRPOTrainer._generate_and_score_completions (the weight) and
#              _compute_loss (per_token_loss * importance_sampling_ratio); GRPOConfig
#              vllm_importance_sampling_correction (on with use_vllm), vllm_importance_sampling_mode
#              token_truncate | token_mask | sequence_truncate | sequence_mask (default sequence_mask),
#              vllm_importance_sampling_clip_max (3.0; formerly _cap) and _clip_min; a sequence's ratio is
#              the product of its token ratios.
#   verl       verl/trainer/ppo/rollout_corr_helper.py, compute_rollout_correction_weights (rollout_is token |
#              sequence, truncated at rollout_is_threshold 2.0, a sequence's ratio the product) and
#              (b178a3c) compute_rollout_rejection_mask (rollout_rs token_k1 | seq_sum_k1 | seq_mean_k1 ...: the k1
#              divergence -log rho tested against [log L, log U] of rollout_rs_threshold "L_U" (or U, L = 1/U),
#              so a token is kept when rho lies in [1/U, 1/L]; rejected: weight 0, a kept token 1, and a
#              rejected token also leaves verl's response mask: its normaliser, KL and whitening).
#   OpenRLHF   openrlhf/models/loss.py, PolicyLoss.forward: is_correction_level token | seq,
#   0.11.2     is_correction_mode clip (tis) | mask (icepop; seq: seq-mask-tis, gated on the geometric mean),
#              is_correction_threshold (0.5, 5.0); a kept token keeps its own ratio.
#   prime-rl   src/prime_rl/trainer/rl/loss.py (559b447), compute_loss: the ratio is taken against the inference
#              log-probs, with no pi_old besides them; its default loss masks tokens by the change of their
#              probability (dppo_mask_low/high), not by a ratio: the clip kind dppo_mask, no correction kind.

class _Correction(_Params):
    level: Literal["token", "sequence"] = Field(
        "token", description="token: each token's own behaviour ratio ϱ (the learner's probability over the "
                             "sampler's); sequence: one ratio per response on all its tokens (TRL sequence_*, verl "
                             "rollout_is 'sequence', OpenRLHF is_correction_level seq).")
    sequence: Literal["product", "geometric_mean"] = Field(
        "product", description="A response's ratio at the sequence level: the product of its token ratios (TRL, verl) "
                               "or their geometric mean (OpenRLHF seq, verl rollout_rs seq_mean_k1). Unused at the token level.")

    @field_validator("cap", check_fields=False)
    @classmethod
    def _lower_below_cap(cls, cap, info):
        lower = info.data.get("lower")
        if cap is not None and lower is not None and not lower < cap:
            raise ValueError(f"the lower bound {lower!r} must be below the cap {cap!r}")
        return cap


class TruncatedIS(_Correction):
    lower: float | None = Field(None, gt=0, description="The weight's lower bound; null: none, as verl truncates (TRL "
                                                        "vllm_importance_sampling_clip_min, None by default; OpenRLHF's "
                                                        "clip mode clamps to [0.5, 5.0] by default, its "
                                                        "is_correction_threshold's lower bound).")
    cap: float = Field(2.0, gt=0, description="The weight's cap C (TRL vllm_importance_sampling_clip_max, 3.0 by default; "
                                              "verl rollout_is_threshold, 2.0; OpenRLHF is_correction_threshold's upper "
                                              "bound, 5.0).")


class MaskedIS(_Correction):
    lower: float | None = Field(0.5, gt=0, description="Below it a token's (or response's) weight is 0 (TRL "
                                                       "vllm_importance_sampling_clip_min, None by default: no lower bound; "
                                                       "verl 1/U of rollout_rs_threshold L_U, OpenRLHF "
                                                       "is_correction_threshold's lower bound 0.5); null: no lower bound.")
    cap: float | None = Field(5.0, gt=0, description="Above it the weight is 0 (TRL vllm_importance_sampling_clip_max, "
                                                     "verl 1/L of rollout_rs_threshold L_U, OpenRLHF 5.0); "
                                                     "null: no upper bound.")
    kept: Literal["ratio", "token_ratio", "one"] = Field(
        "ratio", description="The weight of a kept token: the ratio that was tested (TRL, IcePop), the token's own ratio "
                             "(OpenRLHF seq-mask-tis), or 1 (verl's rejection sampling rollout_rs).")


_SAMPLER = r"\pi_{\text{samp}}"
#: What a correction kind's formula puts before the surrogate (its first clause; formula.objective_latex).
CORRECTION_FACTOR_TEX = r"\operatorname{sg}[\omega_{i,t}]"
_OLD = r"\pi_{\theta_{\text{old}}}"


def _behaviour_ratio_tex(p: dict) -> str:
    token = r"\frac{%s(o_{i,t}\mid q,o_{i,<t})}{%s(o_{i,t}\mid q,o_{i,<t})}" % (_OLD, _SAMPLER)
    if p["level"] == "token":
        return r"\varrho_{i,t}=" + token
    product = r"\prod_{t=1}^{|o_i|}" + token
    if p["sequence"] == "geometric_mean":
        return r"\varrho_{i}=\Big(" + product + r"\Big)^{1/|o_i|}"
    return r"\varrho_{i}=" + product


def _varrho(p: dict) -> str:
    return r"\varrho_{i,t}" if p["level"] == "token" else r"\varrho_{i}"


def _bounds_tex(p: dict) -> str:
    parts = ([r"L=" + _fmt(p["lower"])] if p.get("lower") is not None else []) + (
        [r"C=" + _fmt(p["cap"])] if p.get("cap") is not None else [])
    return r",\quad ".join(parts)


def _truncated_tex(p: dict) -> str:
    v = _varrho(p)
    weight = (r"\operatorname{clip}(%s,L,C)" % v) if p.get("lower") is not None else (r"\min(%s,\,C)" % v)
    return (CORRECTION_FACTOR_TEX + r",\quad \omega_{i,t}=" + weight + r",\quad "
            + _behaviour_ratio_tex(p) + r",\quad " + _bounds_tex(p))


def _masked_tex(p: dict) -> str:
    v = _varrho(p)
    band = {(True, True): r"L\le %s\le C" % v, (True, False): r"%s\ge L" % v, (False, True): r"%s\le C" % v,
            (False, False): r"\text{always}"}[(p.get("lower") is not None, p.get("cap") is not None)]
    kept = {"ratio": v, "token_ratio": r"\tfrac{%s(o_{i,t}\mid\cdot)}{%s(o_{i,t}\mid\cdot)}" % (_OLD, _SAMPLER),
            "one": "1"}[p["kept"]]
    return (CORRECTION_FACTOR_TEX + r",\quad \omega_{i,t}=\mathbb{1}\big[" + band + r"\big]\,"
            + kept + r",\quad " + _behaviour_ratio_tex(p) + r",\quad " + _bounds_tex(p))


def _correction_worked(kind_name: str):
    """A correction kind's worked token: ``worked(behaviour_ratio, params) -> (TeX line, weight)``."""
    def worked(varrho: float, params: dict) -> tuple[str, float]:
        truncate = kind_name == "truncated_is"
        kept = "one" if not truncate and params["kept"] == "one" else "ratio"  # one token: its ratio is the tested one
        weight, _ = C.rollout_correction_weight(np.log(np.array([[varrho]])), np.zeros((1, 1)), np.ones((1, 1)), "token",
                                                truncate, params.get("cap"), params.get("lower"), kept=kept)
        w = float(weight[0, 0])
        if kind_name == "truncated_is":
            inner = (r"\operatorname{clip}(" + tex_num(varrho, 5) + "," + tex_num(params["lower"]) + "," + tex_num(params["cap"]) + ")"
                     if params.get("lower") is not None else r"\min(" + tex_num(varrho, 5) + "," + tex_num(params["cap"]) + ")")
        else:
            inner = (r"\mathbb{1}\big[" + (tex_num(params["lower"]) + r"\le " if params.get("lower") is not None else "")
                     + tex_num(varrho, 5) + (r"\le " + tex_num(params["cap"]) if params.get("cap") is not None else "")
                     + r"\big]\times" + ("1" if params["kept"] == "one" else tex_num(varrho, 5)))
        return r"\omega=" + inner + "=" + tex_num(w, 5), w
    return worked


_VARRHO_HOW = cases(
    ("params.level == 'token'", "exp(log πold − log πsampler) of this token"),
    ("params.sequence == 'geometric_mean'", "exp(mean over the {raw(length)} tokens of log πold − log πsampler)"),
    (None, "exp(sum over the {raw(length)} tokens of log πold − log πsampler): the product of their ratios"))
_CORRECTION_INPUTS = (
    row("log πold(token)", "the learner, before this rollout's first update", "token.old_logp", key="old_logp"),
    row("log πsampler(token)", "the sampler that drew it (its own log-prob, logged as sample_logp)", "token.sample_logp",
        key="sample_logp"),
    row("behaviour ratio ϱ", _VARRHO_HOW, "calc.correction_ratio", key="correction_ratio"))
_CORRECTION_OBJECTIVE = row("ω·ℓ", "the weight times the surrogate {calc.surrogate}", "calc.correction * calc.surrogate",
                            key="corrected")
_NO_SAMPLER = say("This token's log has no sampler log-probability (sample_logp), so its weight cannot be computed: "
                  "the run must log it.", when="!has(token.sample_logp)", cls="unipo-live-warn")
_CORRECTION_TERMS = (
    Term("omega", r"\omega_{i,t}", "The behaviour policy's weight: a constant (stop-gradient) on the token's surrogate, "
         "correcting for the sampler not being the policy being trained (another engine or precision, or a policy some "
         "updates stale)."),
    Term("varrho", r"\varrho", "The behaviour ratio: the learner's probability of the sampled token over the sampler's, "
         "per token or per response. 1 when the two agree."),
    Term("sampler", _SAMPLER, "The policy that sampled the tokens, with the log-probs it reported (vLLM's, or a stale copy's)."))

register("correction", "none", NoParams,
         "No rollout correction: the tokens are trained as if the policy being trained had sampled them.",
         lambda p: "", label="no rollout correction",
         explain=explain(say("No rollout correction: the sampler's log-probabilities are taken to be the learner's "
                             "(their difference, when logged, is not corrected for).")))
register("correction", "truncated_is", TruncatedIS,
         "Truncated importance sampling against the sampler: each token's surrogate is weighted by its behaviour ratio "
         "ϱ (the learner's probability of the token over the sampler's), capped at C (per token, or one weight per "
         "response).",
         _truncated_tex, _CORRECTION_TERMS + (
             Term("C", r"C", "The cap: a token the sampler found much less likely than the learner does weighs at most C, "
                  "so one rare token cannot dominate the update (TRL vllm_importance_sampling_clip_max, verl "
                  "rollout_is_threshold, OpenRLHF is_correction_threshold; Yao et al., 'Your efficient RL framework "
                  "secretly brings you off-policy RL training', 2025)."),),
         fn=C.truncated_is_weight, label="truncated IS (TIS)", worked=_correction_worked("truncated_is"),
         apply=lambda old, samp, mask, p: C.truncated_is_weight(old, samp, mask, p["level"], p["cap"], p.get("lower"),
                                                                p["sequence"]),
         explain=explain(
             *_CORRECTION_INPUTS,
             row("weight ω", cases(("has(params.lower)", "ϱ clipped to [{params.lower}, {params.cap}]"),
                                   (None, "min(ϱ, {params.cap})")), "calc.correction", key="correction"),
             _CORRECTION_OBJECTIVE,
             say(cases(("calc.correction_side == 1", "Truncated: ϱ = {calc.correction_ratio} is above the cap "
                        "{params.cap}, so this token weighs {params.cap}, not ϱ; its gradient keeps its sign."),
                       ("calc.correction_side == -1", "Raised to the lower bound {params.lower}: ϱ = {calc.correction_ratio} "
                        "is below it."),
                       (None, "The weight is the ratio itself, {calc.correction_ratio}: the sampler and the learner "
                              "{calc.correction_ratio == 1 ? 'agree exactly' : 'differ by less than the cap allows'}.")),
                 cls="unipo-live-branch"),
             _NO_SAMPLER))
register("correction", "masked_is", MaskedIS,
         "Masked importance sampling against the sampler: a token (or a whole response) whose behaviour ratio ϱ "
         "(the learner's probability over the sampler's) leaves [L, C] gets weight 0; the others keep theirs "
         "(two-sided, as IcePop; with no L, only the cap masks).",
         _masked_tex, _CORRECTION_TERMS + (
             Term("mask", r"\mathbb{1}", "1 inside the band [L, C], 0 outside: a token the two policies disagree on too "
                  "much is dropped from the update instead of weighed. IcePop, verl rollout_rs and OpenRLHF "
                  "is_correction_mode mask test both sides; TRL's *_mask modes have no lower bound unless "
                  "vllm_importance_sampling_clip_min is set, so by default they mask only above the cap."),),
         fn=C.masked_is_weight, label="masked IS (MIS)", worked=_correction_worked("masked_is"),
         apply=lambda old, samp, mask, p: C.masked_is_weight(old, samp, mask, p["level"], p.get("cap"), p.get("lower"),
                                                             p["sequence"], p["kept"]),
         explain=explain(
             *_CORRECTION_INPUTS,
             row("band", cases(("has(params.lower) && has(params.cap)", "[{params.lower}, {params.cap}]"),
                               ("has(params.lower)", "at least {params.lower}"), (None, "at most {params.cap}")),
                 text=cases(("has(params.lower) && has(params.cap)", "[{params.lower}, {params.cap}]"),
                            ("has(params.lower)", "≥ {params.lower}"), (None, "≤ {params.cap}"))),
             row("weight ω", cases(("params.kept == 'one'", "1 inside the band, 0 outside"),
                                   ("params.kept == 'token_ratio'", "the token's own ratio inside the band, 0 outside"),
                                   (None, "ϱ inside the band, 0 outside")), "calc.correction", key="correction"),
             _CORRECTION_OBJECTIVE,
             say(cases(("calc.correction_side == 1", "Masked: ϱ = {calc.correction_ratio} is above {params.cap}, so this "
                        "token weighs 0 and adds nothing to the update."),
                       ("calc.correction_side == -1", "Masked: ϱ = {calc.correction_ratio} is below {params.lower}, so this "
                        "token weighs 0 and adds nothing to the update."),
                       (None, "Kept: ϱ = {calc.correction_ratio} is inside the band; the token weighs {calc.correction}.")),
                 cls="unipo-live-branch"),
             _NO_SAMPLER))

# --- the kinds in the trainers (sources in the block at the top; registry.TRAINER_SOURCES) ---------------
# prime-rl has no correction of its own: it has no pi_old besides the sampler, its ratio is taken against the
# inference log-probs (the ratio kind's setting), and its default loss masks tokens by the change of their
# probability (dppo_mask_low/high), not by a ratio: the clip kind dppo_mask (kinds_loss).

_RC = "algorithm.rollout_correction."
_IS = "algo.advantage.is_correction_"

trainer_settings("correction", "none",
                 setting("trl", "vllm_importance_sampling_correction", False, note="or use_vllm=False (default)"),
                 setting("verl", _RC + "rollout_is", "null", default=True, note="and rollout_rs null (default)"),
                 setting("openrlhf", _IS + "level", "off", default=True))
trainer_settings("correction", "truncated_is",
                 setting("trl", "vllm_importance_sampling_mode", "token_truncate",
                         note="or sequence_truncate; cap vllm_importance_sampling_clip_max (3.0)"),
                 setting("verl", _RC + "rollout_is", "token", note="or sequence; cap rollout_is_threshold (2.0)"),
                 setting("openrlhf", _IS + "level", "token"),
                 setting("openrlhf", _IS + "mode", "clip",
                         note="the weight clamped to --algo.advantage.is_correction_threshold (0.5 5.0): a lower bound "
                              "0.5 and a cap 5.0 by default; one value is the cap alone"))
trainer_settings("correction", "masked_is",
                 setting("trl", "vllm_importance_sampling_mode", "sequence_mask", default=True,
                         note="with use_vllm=True; or token_mask; masked above vllm_importance_sampling_clip_max (3.0) "
                              "and below vllm_importance_sampling_clip_min (None): by default only above the cap "
                              "(the kind with no lower bound), not IcePop's two-sided band"),
                 setting("verl", _RC + "rollout_rs", "token_k1",
                         note="kept tokens weigh 1 (kept='one'); seq_sum_k1 tests the product, seq_mean_k1 the "
                              "geometric mean; rollout_rs_threshold 'L_U' keeps rho in [1/U, 1/L]; a rejected token "
                              "also leaves verl's normaliser, KL and whitening (exact only without them)"),
                 setting("openrlhf", _IS + "level", "token",
                         note="mask is the default mode (IcePop); seq: seq-mask-tis, the geometric mean, kept tokens "
                              "keeping their own ratio"))


# --- what the sampler chapter says of them (site/pages/dynamics/sampler_facts.py) -----------------------
#
# ``c``: the tokens of one update (sampler_facts.TokenCount: tokens, above, below); the words follow the chapter's
# sentence on the range of the behaviour ratio.

def _truncated_bounds(p: dict) -> str:
    cap, lower = p.get("cap"), p.get("lower")
    return f"a cap of {fmt_num(cap, 3)} and " + ("no lower bound" if lower is None else f"a floor of {fmt_num(lower, 3)}")


def _truncated_tokens(c, p: dict) -> str:
    cap = p.get("cap")
    if c.above == 0:
        return (f" None of them exceeds the cap {fmt_num(cap, 2)}, so truncation changes no weight at this "
                "update: every token's surrogate is multiplied by its own ratio.")
    return (f" {fmt_num(c.above)} of them ({fmt_pct(c.above / c.tokens, 2)}) "
            f"{'exceeds' if c.above == 1 else 'exceed'} the cap "
            f"{fmt_num(cap, 2)} and {'is' if c.above == 1 else 'are'} weighted {fmt_num(cap, 2)}; every other token's "
            "surrogate is multiplied by its own ratio.")


def _masked_tokens(c, p: dict) -> str:
    cap, lower = p.get("cap"), p.get("lower")
    bounds = f"[{fmt_num(lower, 2) if lower is not None else '0'}, {fmt_num(cap, 2) if cap is not None else '∞'}]"
    outside = c.above + c.below
    if outside == 0:
        return f" None of them leaves {bounds}, so masked IS zeroes no token at this update."
    kept = {"ratio": "keeps its ratio as its weight", "one": "keeps weight 1",
            "token_ratio": "keeps its own token's ratio as its weight"}.get(p.get("kept", "ratio"), "keeps its weight")
    return (f" {fmt_num(outside)} of them ({fmt_pct(outside / c.tokens, 2)}) "
            f"{'falls' if outside == 1 else 'fall'} outside {bounds} ({fmt_num(c.above)} above, "
            f"{fmt_num(c.below)} below): masked IS sets their weight to 0, so they leave the update, and every "
            f"other token {kept}.")


describe("correction", "truncated_is", bounds=_truncated_bounds, tokens=_truncated_tokens)
describe("correction", "masked_is", tokens=_masked_tokens)
