"""The kinds of the slots of the per-token objective: ratio, clip, kl and aggregation, each
registered once (``unipo_build.core.registry`` says what a kind is made of). The correction slot's
kinds are in ``kinds_correction``."""

from __future__ import annotations

from typing import Literal

import numpy as np
from pydantic import Field

from unipo_build.core import clip_rules
from unipo_build.core import components as C
from unipo_build.core.numbers import param_text as _fmt
from unipo_build.core.numbers import tex_fraction, tex_num
from unipo_build.core.registry_base import (
    OLD_POLICY_TEX,
    NoParams,
    Term,
    _Params,
    cases,
    explain,
    register,
    row,
    say,
    setting,
    trainer_settings,
)

# --- ratio -----------------------------------------------------------------

# The Explainer's rows of a ratio taken against the sampling policy: the two log-probabilities.
_LOGPS = (row("log πθ(token)", "the policy being trained, at this update", "token.logp", key="logp"),
          row("log πold(token)", "the policy that sampled it", "token.old_logp", key="old_logp"))

register("ratio", "token", NoParams,
         "The token's probability under the current policy over its probability when it was sampled.",
         lambda p: r"\rho_{i,t}=\frac{\pi_\theta(o_{i,t}\mid q,o_{i,<t})}{\pi_{\theta_{\text{old}}}(o_{i,t}\mid q,o_{i,<t})}",
         (Term("ratio", r"\rho_{i,t}", "Importance ratio: above 1 the update has already made this token more likely than when it was sampled, below 1 less likely."),
          Term("policy", r"\pi_\theta", "The policy being trained."),
          Term("old_policy", r"\pi_{\theta_{\text{old}}}", "The policy that sampled the responses (frozen during this rollout's updates).")),
         fn=C.token_ratio, apply=lambda logp, old_logp, mask, p: C.token_ratio(logp, old_logp), symbol_text="\u03c1",
         worked=lambda logp, old_logp, rho: (r"\rho=\exp\big(" + tex_num(logp) + "-(" + tex_num(old_logp)
                                              + r")\big)=" + tex_num(rho, 5)), label="per-token ratio",
         explain=explain(*_LOGPS, row("ratio ρ", "exp(log πθ − log πold)", "calc.ratio", key="ratio", check="token.ratio")))
register("ratio", "sequence", NoParams,
         "One ratio per response: the geometric mean of its token ratios (GSPO).",
         lambda p: r"s_{i}=\left(\frac{\pi_\theta(o_i\mid q)}{\pi_{\theta_{\text{old}}}(o_i\mid q)}\right)^{1/|o_i|}",
         (Term("ratio", r"s_i", "Sequence ratio: the length-normalised likelihood ratio of the whole response, shared by all its tokens."),),
         fn=C.sequence_ratio, apply=lambda logp, old_logp, mask, p: C.sequence_ratio(logp, old_logp, mask),
         symbol_text="s\u1d62",
         worked=lambda logp, old_logp, rho: r"s_i=" + tex_num(rho, 5) + r"\ \text{(the whole response's ratio)}", label="sequence ratio (one per response)",
         explain=explain(*_LOGPS, row("sequence ratio sᵢ", "exp(mean over the {raw(length)} tokens of log πθ − log πold)",
                                      "calc.ratio", key="ratio")))
register("ratio", "none", NoParams,
         "No importance ratio: the plain score-function (REINFORCE) objective, one update per sample.",
         lambda p: r"\rho_{i,t}=\frac{\pi_\theta(o_{i,t}\mid q,o_{i,<t})}{\operatorname{sg}[\pi_\theta(o_{i,t}\mid q,o_{i,<t})]}=1",
         (Term("ratio", r"\rho_{i,t}", "Always 1 in value; its gradient is that of log pi, so rho A has the REINFORCE gradient A grad log pi."),
          Term("sg", r"\operatorname{sg}", "Stop-gradient: treated as a constant when differentiating.")),
         fn=C.self_ratio, apply=lambda logp, old_logp, mask, p: C.self_ratio(logp), symbol_text="\u03c1",
         worked=lambda logp, old_logp, rho: r"\rho=1\ \text{(no importance ratio)}", label="no ratio (plain policy gradient)",
         explain=explain(row("ratio ρ", "πθ / sg[πθ] = exp(log πθ − log πθ)", "calc.ratio", key="ratio")))

# --- clip ------------------------------------------------------------------

class SymmetricClip(_Params):
    eps: float = Field(0.2, gt=0, lt=1, description="The ratio is clipped to [1 - eps, 1 + eps].")


class AsymmetricClip(_Params):
    eps_low: float = Field(0.2, gt=0, lt=1, description="Lower clip: the ratio may fall to 1 - eps_low.")
    eps_high: float = Field(0.28, gt=0, description="Upper clip: the ratio may rise to 1 + eps_high.")


def _clip_worked(rho: float, adv: float, bounds: tuple[float | None, float | None],
                 params: dict | None = None) -> tuple[str, float]:
    """The clipped surrogate of one token as a TeX line, and its value (a clip kind's ``worked``:
    the token's ratio and advantage, the kind's bounds and its parameters)."""
    low, high = bounds
    if low is None:
        return (r"\rho\hat{A}=" + tex_num(rho, 5) + r"\times" + tex_num(adv, 5) + "=" + tex_num(rho * adv, 5),
                rho * adv)
    surrogate = min(rho * adv, min(max(rho, 1 - low), 1 + high) * adv)
    return (r"\min\big(\rho\hat{A},\,\operatorname{clip}(\rho," + tex_num(1 - low) + "," + tex_num(1 + high)
            + r")\hat{A}\big)=" + tex_num(surrogate, 5), surrogate)


def _ppo_clip(bounds):
    """A clip kind's ``apply``: PPO's surrogate with the kind's ``bounds``."""
    return lambda ratio, advantage, p: C.clipped_surrogate(ratio, advantage, *bounds(p))


def _ppo_clip_grad(bounds):
    """A clip kind's ``grad``: the derivative of PPO's surrogate with the kind's ``bounds``."""
    return lambda ratio, advantage, p: C.clipped_surrogate_grad(ratio, advantage, *bounds(p))


_NO_BOUNDS = lambda p: (None, None)  # noqa: E731
_SYMMETRIC = lambda p: (p["eps"], p["eps"])  # noqa: E731
_ASYMMETRIC = lambda p: (p["eps_low"], p["eps_high"])  # noqa: E731

# The clip kinds are written on the token ratio (RATIO_TEX); formula.with_ratio rewrites them with
# the algorithm's own ratio (GSPO clips its sequence ratio s_i, not a token's).
_CLIP_AFTER = ("It does not bound the ratio: the ratio itself can move on, pushed by the updates of other "
               "tokens, far outside the range.")
_CLIP_TERM = ("Once the ratio has left [1 - eps, 1 + eps] in the direction the advantage pushes, the term is "
              "constant and the token's gradient is zero. " + _CLIP_AFTER)

# The Explainer's rows of a clipped surrogate: the bounds, both branches of the min, and which won.
_CLIPPED = "min(max(calc.ratio, 1 - calc.eps_low), 1 + calc.eps_high)"
_CLIP_ROWS = explain(
    row("bounds", "[1 − {calc.eps_low}, 1 + {calc.eps_high}]", text="[{1 - calc.eps_low}, {1 + calc.eps_high}]"),
    row("unclipped {ratio_symbol}·Â", "{calc.ratio} × {token.advantage}", "calc.ratio * token.advantage", key="unclipped"),
    row("clipped clip({ratio_symbol})·Â", "{" + _CLIPPED + "} × {token.advantage}", _CLIPPED + " * token.advantage",
        key="clipped"),
    row("ℓ = min(…)", "the smaller of the two", "calc.surrogate", key="surrogate"),
    say(cases(("calc.clip_side == 1", "The clipped branch won on the high side: {ratio_symbol} > {1 + calc.eps_high} with "
               "Â > 0, so this token no longer pushes its probability up (its gradient is 0)."),
              ("calc.clip_side == -1", "The clipped branch won on the low side: {ratio_symbol} < {1 - calc.eps_low} with "
               "Â < 0, so this token no longer pushes its probability down (its gradient is 0)."),
              ("calc.ratio * token.advantage == " + _CLIPPED + " * token.advantage",
               "Both branches are equal: {ratio_symbol} is inside the bounds (or Â = 0), so the gradient flows unclipped."),
              (None, "The unclipped branch is the smaller: {ratio_symbol} is outside the bounds on the side the advantage "
                     "pushes away from, so the gradient still flows.")), cls="unipo-live-branch"),
    say("The log says clip side {raw(token.clip)}, the recomputation {raw(calc.clip_side)}.",
        when="has(token.clip) && token.clip != calc.clip_side", cls="unipo-live-warn"))

register("clip", "none", NoParams, "No clipping: the surrogate is the ratio times the advantage.",
         lambda p: r"\ell_{i,t}=\rho_{i,t}\,\hat{A}_{i,t}",
         fn=C.clipped_surrogate, bounds=_NO_BOUNDS, worked=_clip_worked, apply=_ppo_clip(_NO_BOUNDS), grad=_ppo_clip_grad(_NO_BOUNDS), label="no clip",
         explain=explain(row("ℓ = {ratio_symbol}·Â", "{calc.ratio} × {token.advantage} (nothing is clipped)", "calc.surrogate",
                             key="surrogate")))
register("clip", "symmetric", SymmetricClip,
         "PPO's pessimistic clip: once the ratio leaves [1 - eps, 1 + eps] in the advantage's direction, the token stops pushing.",
         lambda p: r"\ell_{i,t}=\min\!\big(\rho_{i,t}\hat{A}_{i,t},\ \operatorname{clip}(\rho_{i,t},1-%s,1+%s)\,\hat{A}_{i,t}\big)"
         % (_fmt(p["eps"]), _fmt(p["eps"])),
         (Term("clip", r"\operatorname{clip}", _CLIP_TERM),
          Term("min", r"\min", "The pessimistic choice: the smaller of the clipped and unclipped objectives.")),
         fn=C.clipped_surrogate, bounds=_SYMMETRIC, worked=_clip_worked, apply=_ppo_clip(_SYMMETRIC), grad=_ppo_clip_grad(_SYMMETRIC), label="symmetric clip",
         clip_rule=clip_rules.range_rule("PPO's clip", _SYMMETRIC),
         explain=_CLIP_ROWS)
register("clip", "asymmetric", AsymmetricClip,
         "Separate lower and upper bounds, 1 - eps_low and 1 + eps_high: once the ratio has left them in the advantage's direction, the term stops pushing.",
         lambda p: r"\ell_{i,t}=\min\!\big(\rho_{i,t}\hat{A}_{i,t},\ \operatorname{clip}(\rho_{i,t},1-%s,1+%s)\,\hat{A}_{i,t}\big)"
         % (_fmt(p["eps_low"]), _fmt(p["eps_high"])),
         (Term("clip", r"\operatorname{clip}", "Asymmetric bounds: the term stops pushing up once the ratio exceeds "
               "1 + eps_high and stops pushing down once it falls below 1 - eps_low. " + _CLIP_AFTER),
          Term("min", r"\min", "The pessimistic choice: the smaller of the clipped and unclipped objectives.")),
         fn=C.clipped_surrogate, bounds=_ASYMMETRIC, worked=_clip_worked, apply=_ppo_clip(_ASYMMETRIC), grad=_ppo_clip_grad(_ASYMMETRIC), label="asymmetric clip (clip-higher)",
         clip_rule=clip_rules.range_rule("PPO's clip with a higher upper bound (clip-higher)", _ASYMMETRIC),
         explain=_CLIP_ROWS)

class DualClip(_Params):
    eps_low: float = Field(0.2, gt=0, lt=1, description="Lower clip: the ratio may fall to 1 - eps_low (verl clip_ratio_low, OpenRLHF eps_clip).")
    eps_high: float = Field(0.2, gt=0, description="Upper clip: the ratio may rise to 1 + eps_high (verl clip_ratio_high).")
    c: float = Field(3.0, gt=1, description="The bound c of a negative-advantage token's term, c * A (verl clip_ratio_c, 3 by default; OpenRLHF dual_clip).")


class CispoClip(_Params):
    eps_low: float | None = Field(None, gt=0, lt=1, description="The IS weight's lower bound is 1 - eps_low; null: none, as the paper trains (it tunes only the upper bound) and TRL runs it; verl clip_ratio_low, 0.2 by default: verl's CISPO keeps a lower bound unless it is set away.")
    eps_high: float = Field(0.28, gt=0, description="The IS weight's upper bound is 1 + eps_high (verl clip_ratio_high; TRL's epsilon_high for loss_type 'cispo' is the cap itself, 1 + eps_high, 5 in ScaleRL's recipe).")


class SapoGate(_Params):
    tau_pos: float = Field(1.0, gt=0, description="The gate's temperature for a positive advantage (TRL sapo_temperature_pos, verl tau_pos; 1.0 in both).")
    tau_neg: float = Field(1.05, gt=0, description="The gate's temperature for a zero or negative advantage (TRL sapo_temperature_neg, verl tau_neg; 1.05 in both): a larger one narrows the gate.")


def _dual_clip_worked(rho: float, adv: float, bounds: tuple[float | None, float | None],
                      params: dict | None = None) -> tuple[str, float]:
    line, ppo = _clip_worked(rho, adv, bounds)
    if adv >= 0:
        return line, ppo
    c = float(_need(params, "dual_clip")["c"])
    value = max(ppo, c * adv)
    return (r"\max\big(" + tex_num(ppo, 5) + r",\ " + tex_num(c) + r"\times" + tex_num(adv, 5) + r"\big)="
            + tex_num(value, 5), value)


def _cispo_bounds(p: dict) -> tuple[float | None, float | None]:
    return (p.get("eps_low"), p["eps_high"])


def _cispo_weight(rho: float, p: dict) -> float:
    low = p.get("eps_low")
    return min(max(rho, 1 - low) if low is not None else rho, 1 + p["eps_high"])


def _cispo_worked(rho: float, adv: float, bounds: tuple[float | None, float | None],
                  params: dict | None = None) -> tuple[str, float]:
    p = _need(params, "cispo")
    w = _cispo_weight(rho, p)
    return (r"\operatorname{sg}[w]\hat{A}=" + tex_num(w, 5) + r"\times" + tex_num(adv, 5) + "=" + tex_num(w * adv, 5),
            w * adv)


def _sapo_worked(rho: float, adv: float, bounds: tuple[float | None, float | None],
                 params: dict | None = None) -> tuple[str, float]:
    p = _need(params, "sapo")
    tau = p["tau_pos"] if adv > 0 else p["tau_neg"]
    gate = float(C.sapo_gate(np.float64(rho), tau))
    return (r"f_{\tau}(\rho)\hat{A}=\tfrac{4}{" + tex_num(tau) + r"}\,\sigma\big(" + tex_num(tau) + r"(" + tex_num(rho, 5)
            + r"-1)\big)\times" + tex_num(adv, 5) + "=" + tex_num(gate * adv, 5), gate * adv)


def _need(params: dict | None, name: str) -> dict:
    """A worked example that needs the kind's parameters (c, the temperatures) gets them or says so."""
    if params is None:
        raise ValueError(f"the {name} clip's worked example needs its parameters: call worked(rho, adv, bounds, params)")
    return params


# The Explainer's rows of the three surrogates below. The browser's breakdown evaluates the kind's
# function (its port in unipo-math.js), so calc.surrogate and calc.clip_side are the kind's own.
_CISPO_W = ("(has(params.eps_low) ? min(max(calc.ratio, 1 - params.eps_low), 1 + params.eps_high) "
            ": min(calc.ratio, 1 + params.eps_high))")
_SIDE_WARN = say("The log says clip side {raw(token.clip)}, the recomputation {raw(calc.clip_side)}.",
                 when="has(token.clip) && token.clip != calc.clip_side", cls="unipo-live-warn")
_DUAL_PPO = "min(calc.ratio * token.advantage, " + _CLIPPED + " * token.advantage)"
_SAPO_TAU = "(token.advantage > 0 ? params.tau_pos : params.tau_neg)"
_SAPO_SIGMA = "(calc.surrogate / token.advantage * " + _SAPO_TAU + " / 4)"

register("clip", "dual_clip", DualClip,
         "PPO's clip, and for a negative advantage a floor c A under the term: a token whose ratio has risen above c stops pulling the objective down (dual-clip PPO).",
         lambda p: (r"\ell_{i,t}=\begin{cases}\max\!\big(\min(\rho_{i,t}\hat{A}_{i,t},\ \operatorname{clip}(\rho_{i,t},1-%s,1+%s)\,\hat{A}_{i,t}),\ %s\,\hat{A}_{i,t}\big),&\hat{A}_{i,t}<0\\ \min(\rho_{i,t}\hat{A}_{i,t},\ \operatorname{clip}(\rho_{i,t},1-%s,1+%s)\,\hat{A}_{i,t}),&\hat{A}_{i,t}\ge 0\end{cases}"
                    % (_fmt(p["eps_low"]), _fmt(p["eps_high"]), _fmt(p["c"]), _fmt(p["eps_low"]), _fmt(p["eps_high"]))),
         (Term("clip", r"\operatorname{clip}", _CLIP_TERM),
          Term("c", r"c", "The dual clip (Ye et al. 2019, arXiv 1912.09729): with a negative advantage, PPO's min has no "
               "lower bound, since rho A falls without limit as rho grows. The max with c A bounds it: above rho = c the "
               "term is constant and the token's gradient is 0 (verl clip_ratio_c, 3 by default; OpenRLHF dual_clip).")),
         fn=C.dual_clip_surrogate, bounds=_ASYMMETRIC, worked=_dual_clip_worked, label="dual clip (floor c·Â)",
         clip_rule=clip_rules.dual_rule,
         apply=lambda ratio, advantage, p: C.dual_clip_surrogate(ratio, advantage, p["eps_low"], p["eps_high"], p["c"]),
         grad=lambda ratio, advantage, p: C.dual_clip_surrogate_grad(ratio, advantage, p["eps_low"], p["eps_high"], p["c"]),
         explain=explain(
             row("bounds", "[1 − {params.eps_low}, 1 + {params.eps_high}], and c = {params.c} when Â < 0",
                 text="[{1 - params.eps_low}, {1 + params.eps_high}]"),
             row("unclipped {ratio_symbol}·Â", "{calc.ratio} × {token.advantage}", "calc.ratio * token.advantage", key="unclipped"),
             row("clipped clip({ratio_symbol})·Â", "{" + _CLIPPED + "} × {token.advantage}", _CLIPPED + " * token.advantage",
                 key="clipped"),
             row("floor c·Â", "{params.c} × {token.advantage} (a negative advantage only)", "params.c * token.advantage",
                 key="floor", when="token.advantage < 0"),
             row("ℓ", cases(("token.advantage < 0", "max(min(…), c·Â): the larger of PPO's term and the floor"),
                            (None, "min(…), PPO's term (no floor for Â ≥ 0)")), "calc.surrogate", key="surrogate"),
             say(cases(("calc.clip_side == 1 && token.advantage < 0",
                        "The floor won: {ratio_symbol} = {calc.ratio} is above c = {params.c} with Â < 0, so the term is the "
                        "constant c·Â and this token's gradient is 0. Without the floor its term, {" + _DUAL_PPO + "}, would "
                        "keep falling as the ratio grows."),
                       ("calc.clip_side == 1", "The clipped branch won on the high side: {ratio_symbol} > {1 + params.eps_high} "
                        "with Â > 0, so this token no longer pushes its probability up (its gradient is 0)."),
                       ("calc.clip_side == -1", "The clipped branch won on the low side: {ratio_symbol} < {1 - params.eps_low} "
                        "with Â < 0, so this token no longer pushes its probability down (its gradient is 0)."),
                       (None, "Neither PPO's clip nor the floor acts here, so the gradient flows.")), cls="unipo-live-branch"),
             _SIDE_WARN))
register("clip", "cispo", CispoClip,
         "The importance-sampling weight is clipped and held constant (stop-gradient); every token keeps a gradient, of size weight times advantage (CISPO).",
         lambda p: (r"\ell_{i,t}=\operatorname{sg}\big[%s\big]\,\hat{A}_{i,t}\,\frac{\pi_\theta(o_{i,t}\mid q,o_{i,<t})}{\operatorname{sg}[\pi_\theta(o_{i,t}\mid q,o_{i,<t})]}"
                    % (r"\operatorname{clip}(\rho_{i,t},1-%s,1+%s)" % (_fmt(p["eps_low"]), _fmt(p["eps_high"]))
                       if p.get("eps_low") is not None else r"\min(\rho_{i,t},1+%s)" % _fmt(p["eps_high"]))),
         (Term("sg", r"\operatorname{sg}", "Stop-gradient: the clipped weight is a constant. The term's gradient is the "
               "weight times A times grad log pi, for every token: a token whose ratio left the range keeps its gradient, "
               "only its size is capped (MiniMax-M1, arXiv 2506.13585)."),
          Term("clip", r"\operatorname{clip}", "Clips the importance-sampling weight, not the objective: unlike PPO's min, "
               "nothing goes flat. The paper sets no lower bound and tunes only the upper one. " + _CLIP_AFTER)),
         fn=C.cispo_surrogate, bounds=_cispo_bounds, worked=_cispo_worked, label="clipped IS weight (CISPO)",
         clip_rule=clip_rules.cispo_rule, paper_form=("trl", "verl"),
         ratio_kinds=("token",),
         apply=lambda ratio, advantage, p: C.cispo_surrogate(ratio, advantage, p.get("eps_low"), p["eps_high"]),
         grad=lambda ratio, advantage, p: C.cispo_surrogate_grad(ratio, advantage, p.get("eps_low"), p["eps_high"]),
         explain=explain(
             row("bounds of the weight", cases(("has(params.eps_low)", "[1 − {params.eps_low}, 1 + {params.eps_high}]"),
                                               (None, "no lower bound, at most 1 + {params.eps_high}")),
                 text=cases(("has(params.eps_low)", "[{1 - params.eps_low}, {1 + params.eps_high}]"),
                            (None, "≤ {1 + params.eps_high}"))),
             row("weight w = sg[clip({ratio_symbol})]", "the ratio {calc.ratio}, clipped, held constant", _CISPO_W,
                 key="is_weight"),
             row("ℓ = w·Â", "{" + _CISPO_W + "} × {token.advantage}; its gradient is w·Â·∇log πθ", "calc.surrogate",
                 key="surrogate"),
             say(cases(("calc.ratio > 1 + params.eps_high",
                        "The weight is clipped at {1 + params.eps_high}: {ratio_symbol} = {calc.ratio} is above it. The token "
                        "keeps its gradient, {" + _CISPO_W + " * token.advantage} times ∇log πθ; only its size is capped"
                        "{calc.clip_side == 1 ? ' (with Â > 0, PPO would have set it to 0)' : ''}."),
                       ("has(params.eps_low) && calc.ratio < 1 - params.eps_low",
                        "The weight is clipped at {1 - params.eps_low}: {ratio_symbol} = {calc.ratio} is below it. The token "
                        "keeps its gradient, {" + _CISPO_W + " * token.advantage} times ∇log πθ"
                        "{calc.clip_side == -1 ? ' (with Â < 0, PPO would have set it to 0)' : ''}."),
                       (None, "The weight is the ratio itself (inside its bounds): the gradient is {ratio_symbol}·Â·∇log πθ, "
                              "as without a clip.")), cls="unipo-live-branch"),
             _SIDE_WARN))
register("clip", "sapo", SapoGate,
         "No hard clip: a smooth gate of the ratio, (4/tau) sigmoid(tau (rho - 1)), whose slope falls as the ratio leaves 1, with a temperature per advantage sign (SAPO).",
         lambda p: (r"\ell_{i,t}=f_{\tau_{i,t}}(\rho_{i,t})\,\hat{A}_{i,t},\quad f_{\tau}(x)=\tfrac{4}{\tau}\,\sigma\big(\tau(x-1)\big),"
                    r"\quad \tau_{i,t}=\begin{cases}%s,&\hat{A}_{i,t}>0\\ %s,&\hat{A}_{i,t}\le 0\end{cases}"
                    % (_fmt(p["tau_pos"]), _fmt(p["tau_neg"]))),
         (Term("gate", r"f_{\tau}", "SAPO's soft gate (Qwen, arXiv 2511.20347): at rho = 1 its value is 2/tau and its slope "
               "1, so near the sampling policy the term moves as rho A does; as rho leaves 1 the slope, "
               "4 sigmoid (1 - sigmoid), falls smoothly towards 0 instead of dropping to 0 at a bound. It does not bound the "
               "ratio: it only shrinks the gradient of a token whose ratio has moved far."),
          Term("sigma", r"\sigma", "The logistic sigmoid, 1 / (1 + exp(-x))."),
          Term("tau", r"\tau", "The temperature: a larger one narrows the gate. Negative advantages get the larger one "
               "(1.05 against 1.0 in TRL and verl), so pushing a token down fades sooner than pushing one up.")),
         fn=C.sapo_surrogate, bounds=_NO_BOUNDS, worked=_sapo_worked, label="soft gate (SAPO)",
         apply=lambda ratio, advantage, p: C.sapo_surrogate(ratio, advantage, p["tau_pos"], p["tau_neg"]),
         grad=lambda ratio, advantage, p: C.sapo_surrogate_grad(ratio, advantage, p["tau_pos"], p["tau_neg"]),
         explain=explain(
             row("temperature τ", cases(("token.advantage > 0", "τ_pos, for Â > 0"), (None, "τ_neg, for Â ≤ 0")),
                 _SAPO_TAU, key="tau"),
             row("gate f(ρ)", "(4 / τ) · σ(τ · ({calc.ratio} − 1))", "calc.surrogate / token.advantage", key="gate",
                 when="token.advantage != 0"),
             row("ℓ = f(ρ)·Â", "the gate times {token.advantage}", "calc.surrogate", key="surrogate"),
             row("gradient weight", "4σ(1 − σ)·{ratio_symbol}: what multiplies Â·∇log πθ (PPO's is {ratio_symbol} inside its "
                 "bounds, 0 outside)", "4 * " + _SAPO_SIGMA + " * (1 - " + _SAPO_SIGMA + ") * calc.ratio", key="grad_weight",
                 when="token.advantage != 0"),
             say("Nothing is clipped: the gate's slope is 1 at {ratio_symbol} = 1 and shrinks smoothly as the ratio moves away, "
                 "so a token far from its sampling probability still moves, only less.", cls="unipo-live-branch"),
             _SIDE_WARN))

class GeoMeanClip(_Params):
    eps_low: float = Field(0.4, gt=0, description="Lower clip of the log-ratio: log rho may fall to -eps_low, the ratio to exp(-eps_low) (GMPO: 0.4; verl reads clip_ratio_low, 0.2 by default, as this log-space bound).")
    eps_high: float = Field(0.4, gt=0, description="Upper clip of the log-ratio: log rho may rise to eps_high, the ratio to exp(eps_high) (GMPO: 0.4; verl clip_ratio_high).")


def _geo_bounds(p: dict) -> tuple[float, float]:
    """GMPO's bounds as the ratio's (1 - eps_low, 1 + eps_high): the range [exp(-eps_low), exp(eps_high)]."""
    return (1.0 - float(np.exp(-p["eps_low"])), float(np.expm1(p["eps_high"])))


def _geo_worked(rho: float, adv: float, bounds: tuple[float | None, float | None],
                params: dict | None = None) -> tuple[str, float]:
    """GMPO's term is the whole response's: one token's worked line is its clipped log-ratio c, and the
    value returned is c (the term is A exp(mean of c over the response), :func:`components.geo_mean_surrogate`)."""
    p = _need(params, "geo_mean")
    delta = float(np.log(rho))
    c = min(delta, p["eps_high"]) if adv > 0 else max(delta, -p["eps_low"]) if adv < 0 else 0.0
    return (r"c=\operatorname{sgn}(\hat{A})\min\big(\operatorname{sgn}(\hat{A})\log\rho,\ \operatorname{sgn}(\hat{A})"
            r"\operatorname{clip}(\log\rho,-" + tex_num(p["eps_low"]) + "," + tex_num(p["eps_high"]) + r")\big)="
            + tex_num(c, 5) + r",\quad \ell=\hat{A}\,e^{\operatorname{mean}_{u}c_u}", c)


_DELTA = "(token.logp - token.old_logp)"
_GEO_C = ("(token.advantage > 0 ? min(" + _DELTA + ", params.eps_high) : token.advantage < 0 ? max(" + _DELTA
          + ", -params.eps_low) : 0)")

register("clip", "geo_mean", GeoMeanClip,
         "GMPO: the response's token ratios enter through their geometric mean, each clipped in log space first; "
         "one term per response (verl policy_loss 'geo_mean').",
         lambda p: (r"\ell_{i,t}=\hat{A}_{i,t}\exp\Big(\frac{1}{|o_i|}\sum_{u=1}^{|o_i|}c_{i,u}\Big),\quad "
                    r"c_{i,u}=\operatorname{sgn}(\hat{A}_{i,u})\min\big(\operatorname{sgn}(\hat{A}_{i,u})\log\rho_{i,u},\ "
                    r"\operatorname{sgn}(\hat{A}_{i,u})\operatorname{clip}(\log\rho_{i,u},-%s,%s)\big)"
                    % (_fmt(p["eps_low"]), _fmt(p["eps_high"]))),
         (Term("geo", r"\exp\big(\tfrac{1}{|o_i|}\sum_u c_{i,u}\big)", "The geometric mean of the response's clipped "
               "token ratios (GMPO, Zhao et al., arXiv 2507.20673). An arithmetic mean lets one token whose ratio has "
               "run far dominate the response's term; the geometric mean is the exponential of the mean log-ratio, so an "
               "outlier moves it far less, which is why GMPO can afford a wider clip range than PPO."),
          Term("c", r"c_{i,u}", "The token's log-ratio, clipped as PPO clips the ratio but in log space: once log rho has "
               "left [-eps_low, eps_high] in the direction the advantage pushes, the token's c is a constant and its "
               "gradient is 0 (the range is [exp(-eps_low), exp(eps_high)] in the ratio; GMPO uses 0.4 on both sides). A "
               "token with a zero advantage has c = 0 and still counts in the length. " + _CLIP_AFTER)),
         fn=C.geo_mean_surrogate, bounds=_geo_bounds, worked=_geo_worked, label="geometric mean (GMPO)",
         clip_rule=clip_rules.geo_rule,
         ratio_kinds=("token",), needs_mask=True, aggregation_kinds=("seq_mean_token_mean",),
         apply=lambda ratio, advantage, p, mask: C.geo_mean_surrogate(ratio, advantage, mask, p["eps_low"], p["eps_high"]),
         explain=explain(
             row("bounds of log ρ", "[−{params.eps_low}, {params.eps_high}]: the ratio may move within "
                 "[{1 - calc.eps_low}, {1 + calc.eps_high}]", text="[−{params.eps_low}, {params.eps_high}]"),
             row("log ρ", "log πθ − log πold = {token.logp} − {token.old_logp}", _DELTA, key="log_ratio"),
             row("clipped log-ratio c", cases(("token.advantage > 0", "min(log ρ, {params.eps_high}), for Â > 0"),
                                              ("token.advantage < 0", "max(log ρ, −{params.eps_low}), for Â < 0"),
                                              (None, "0: Â = 0, the token still counts in the length")),
                 _GEO_C, key="clipped_log_ratio"),
             row("geometric mean of the response's ratios", "exp(mean of c over its {raw(length)} tokens)",
                 "calc.surrogate / token.advantage", key="geo_ratio", when="token.advantage != 0"),
             row("ℓ = Â·exp(mean c)", "{token.advantage} × the geometric mean: the same factor for every token of the "
                 "response", "calc.surrogate", key="surrogate"),
             say(cases(("calc.clip_side == 1", "This token's log-ratio {" + _DELTA + "} is above {params.eps_high} with Â > 0: "
                        "its c is the constant {params.eps_high}, so it no longer pushes its probability up (its gradient "
                        "is 0); the other tokens of the response still move through the mean."),
                       ("calc.clip_side == -1", "This token's log-ratio {" + _DELTA + "} is below −{params.eps_low} with Â < 0: "
                        "its c is the constant −{params.eps_low}, so it no longer pushes its probability down (its "
                        "gradient is 0)."),
                       (None, "This token's log-ratio is inside the bounds (or on the side the advantage pushes away from): "
                              "it moves the response's geometric mean, with a gradient of 1/|oᵢ| of the term's.")),
                 cls="unipo-live-branch"),
             _SIDE_WARN))

# --- kl --------------------------------------------------------------------

class KlParams(_Params):
    estimator: Literal["k1", "k2", "k3"] = Field(description="Schulman's estimator of the policy's KL divergence from "
                                                             "the reference model.")
    beta: float = Field(gt=0, description="KL coefficient.")


def kl_latex(estimator: str, policy: str = r"\pi_\theta") -> str:
    """Schulman's estimator of KL(policy || pi_ref) at one sampled token (computed by
    components.kl_estimate), in TeX. ``policy``: the policy whose log-probability enters it, pi_theta
    for a KL in the loss (it carries a gradient), the sampling policy for a KL in the reward."""
    num, ref = policy + r"(o_{i,t}\mid\cdot)", r"\pi_{\text{ref}}(o_{i,t}\mid\cdot)"
    return {
        "k1": r"\log\frac{%s}{%s}" % (num, ref),
        "k2": r"\tfrac12\Big(\log\frac{%s}{%s}\Big)^{2}" % (ref, num),
        "k3": r"\frac{%s}{%s}-\log\frac{%s}{%s}-1" % (ref, num, ref, num),
    }[estimator]


_KL_TERMS = (Term("beta", r"\beta", "How strongly drifting away from the reference model is penalised."),
             Term("kl", r"\mathbb{D}_{i,t}", "Per-token estimate of the KL divergence from the frozen reference model."),
             Term("ref", r"\pi_{\text{ref}}", "The reference model: the warm-started policy before RL, kept frozen."))


def _kl_loss_worked(surrogate: float, beta: float, kl: float, objective: float) -> str:
    return (r"\ell=" + tex_num(surrogate, 5) + "-" + tex_num(beta) + r"\times(" + tex_num(kl, 3) + ")="
            + tex_num(objective, 5))


def _kl_how(policy: str) -> list[dict]:
    """Schulman's estimators in plain text (the Explainer's row of D), with ``policy`` as log π."""
    lp = "log " + policy
    return cases(("params.estimator == 'k1'", f"{lp} − log πref"),
                 ("params.estimator == 'k2'", f"½ (log πref − {lp})²"),
                 ("params.estimator == 'k3'", f"exp(log πref − {lp}) − (log πref − {lp}) − 1"),
                 (None, "{raw(params.estimator)}"))


_KL_ROWS = (row("β", "KL coefficient", "params.beta", key="beta"),)

register("kl", "none", NoParams, "No KL term: nothing ties the policy to the reference model.", lambda p: "", label="no KL penalty",
         explain=explain(say("This algorithm has no KL term: nothing ties the policy to the reference model.")))
register("kl", "in_loss", KlParams,
         "A KL penalty subtracted from every token's objective (GRPO style).",
         lambda p: r"-\beta\,\mathbb{D}_{i,t},\quad \mathbb{D}_{i,t}=%s,\quad \beta=%s" % (kl_latex(p["estimator"]), _fmt(p["beta"])),
         _KL_TERMS, fn=C.kl_estimate, kl_place="loss", worked=_kl_loss_worked, label="KL penalty in the loss",
         explain=explain(
             row("log πref(token)", "the frozen reference model", "token.ref_logp", key="ref_logp", when="has(token.ref_logp)"),
             row("D ({raw(params.estimator)})", _kl_how("πθ"), "calc.kl", key="kl", check="token.kl"),
             *_KL_ROWS,
             row("−β·D", "subtracted from this token's objective", "-params.beta * calc.kl", key="kl_term")))
register("kl", "in_reward", KlParams,
         "A KL penalty folded into the per-token reward before advantages are computed (RLHF / PPO style).",
         lambda p: (r"r_{i,t}=-\beta\,\mathbb{D}_{i,t}+[t=|o_i|]\,r_i,\quad \mathbb{D}_{i,t}=%s,\quad \beta=%s"
                    % (kl_latex(p["estimator"], OLD_POLICY_TEX), _fmt(p["beta"]))),
         (_KL_TERMS[0],
          Term("kl", r"\mathbb{D}_{i,t}", "Per-token estimate of the KL divergence from the frozen reference model, "
               "computed once at sampling time with the sampling policy: a constant in the reward, with no gradient "
               "of its own."),
          _KL_TERMS[2]),
         fn=C.kl_estimate, kl_place="reward", label="KL penalty in the reward",
         explain=explain(
             row("D ({raw(params.estimator)})", [{**c, "text": "estimated when the response was sampled: " + c["text"]}
                                                 for c in _kl_how("πold")], "calc.kl", key="kl"),
             *_KL_ROWS,
             row("−β·D", "added to this token's reward before the advantage", "-params.beta * calc.kl", key="kl_term"),
             say("The penalty is already inside the advantage Â; nothing is subtracted from the objective.")))

# --- aggregation -----------------------------------------------------------

class ConstantNormalizer(_Params):
    normalizer: int | None = Field(None, gt=0, description="The constant L; null means the run's generation budget (max new tokens).")


register("aggregation", "seq_mean_token_mean", NoParams,
         "Average over each response's tokens, then over responses: every response weighs the same.",
         lambda p: r"\frac{1}{G}\sum_{i=1}^{G}\frac{1}{|o_i|}\sum_{t=1}^{|o_i|}",
         (Term("length", r"|o_i|", "The response's length in tokens. Dividing by it gives each token of a short response more weight than one of a long response."),
          Term("G", r"G", "The number of responses sampled per prompt.")),
         fn=C.seq_mean_token_mean_weights, apply=lambda mask, p: C.seq_mean_token_mean_weights(mask),
         label="mean per response, then over responses", weight_tex=r"w_{i,t}=\frac{1}{N\,|o_i|}",
         weights_from_counts=True,
         explain=explain(row("weight w", "1 / (N · |oᵢ|) = 1 / ({raw(update.responses)} × {raw(length)})", "calc.weight", key="weight", check="token.weight")),
         weight_meaning="A token of a short response weighs more than a token of a long one; every response "
                        "carries the same total weight.",
         worked=lambda w, n, length, p: (r"w=\frac{1}{N\,|o_i|}=\frac{1}{" + str(n) + r"\times" + str(length) + "}="
                                         + tex_fraction(w)))
register("aggregation", "token_mean", NoParams,
         "One average over every token of the batch: every token weighs the same.",
         # The normaliser is the batch's: B groups of G responses. Inside the expectation over one
         # group it reads B / (all the batch's tokens), so that averaging over the B groups gives each
         # token the weight 1 / sum_j |o_j| that the weights below compute (verl token-mean; the DAPO
         # paper writes the sum over one group's lengths inside its expectation).
         lambda p: r"\frac{B}{\sum_{j=1}^{BG}|o_j|}\sum_{i=1}^{G}\sum_{t=1}^{|o_i|},\quad B=\text{groups in the batch}",
         (Term("total_length", r"\sum_{j=1}^{BG}|o_j|", "All response tokens of the batch together (B groups of G responses): each token weighs one over this, so long responses carry more of the total."),
          Term("B", r"B", "The number of prompt groups in the batch (in the update's minibatch).")),
         fn=C.token_mean_weights, apply=lambda mask, p: C.token_mean_weights(mask),
         label="mean over every token of the batch", weight_tex=r"w_{i,t}=\frac{1}{\sum_{j}|o_j|}",
         uniform_weights=True,
         # its weight is one over the update's tokens, which a step's log holds only as that weight
         explain=explain(row("weight w", "1 / Σ|oⱼ| = 1 / {raw(counts.tokens)} (the update's tokens, from the log)", "calc.weight", key="weight", check="token.weight"),
                         counts={"tokens": "token.weight > 0 ? round(1 / token.weight) : null"}),
         weight_meaning="Every token weighs the same; a long response carries more of the total than a short one.",
         worked=lambda w, n, length, p: r"w=\frac{1}{\sum_j|o_j|}=\frac{1}{" + str(round(1.0 / w) if w > 0 else 0) + "}")
register("aggregation", "constant_normalizer", ConstantNormalizer,
         "Token objectives summed and divided by a constant: no length enters the weights.",
         lambda p: r"\frac{1}{G\,L}\sum_{i=1}^{G}\sum_{t=1}^{|o_i|},\quad L=%s" % (
             _fmt(p["normalizer"]) if p.get("normalizer") else r"\text{max new tokens}"),
         (Term("L", r"L", "A constant (the generation budget), the same for every response and every step."),
          Term("G", r"G", "The number of responses sampled per prompt.")),
         run_resolved=("normalizer",),
         resolve=lambda p, max_new_tokens: {**p, "normalizer": p["normalizer"] or max_new_tokens},
         fn=C.constant_normalizer_weights, apply=lambda mask, p: C.constant_normalizer_weights(mask, p.get("normalizer")),
         label="sum divided by a constant", weight_tex=r"w_{i,t}=\frac{1}{N\,L}", weights_from_counts=True,
         explain=explain(row("weight w", "1 / (N · L) = 1 / ({raw(update.responses)} × {raw(params.normalizer)})", "calc.weight", key="weight", check="token.weight")),
         weight_meaning="A constant: no length enters the weight, for the token or for the batch.",
         worked=lambda w, n, length, p: (r"w=\frac{1}{N\,L}=\frac{1}{" + str(n) + r"\times" + str(p.get("normalizer"))
                                         + "}=" + tex_fraction(w)))
register("aggregation", "seq_mean_token_sum", NoParams,
         "Token objectives summed per response, then averaged over responses.",
         lambda p: r"\frac{1}{G}\sum_{i=1}^{G}\sum_{t=1}^{|o_i|}",
         (Term("G", r"G", "The number of responses sampled per prompt."),),
         fn=C.seq_mean_token_sum_weights, apply=lambda mask, p: C.seq_mean_token_sum_weights(mask),
         label="sum per response, then mean over responses", weight_tex=r"w_{i,t}=\frac{1}{N}",
         weights_from_counts=True,
         explain=explain(row("weight w", "1 / N = 1 / {raw(update.responses)}", "calc.weight", key="weight", check="token.weight")),
         weight_meaning="Token objectives are summed per response: a long response carries more in proportion to "
                        "its length.",
         worked=lambda w, n, length, p: r"w=\frac{1}{N}=\frac{1}{" + str(n) + "}=" + tex_fraction(w))

# --- the kinds in the trainers ---------------------------------------------
#
# What selects each kind in TRL, verl, prime-rl and OpenRLHF (registry.TRAINER_SOURCES says where each was
# read); a trainer not named does not ship the kind. verl's keys sit under actor_rollout_ref.actor.

_VERL = "actor_rollout_ref.actor."
_GSPO_ONLY = "with policy_loss.loss_mode=gspo (vanilla adds the dual clip)"

trainer_settings("ratio", "token",
                 setting("trl", "importance_sampling_level", "token", default=True),
                 setting("verl", note="policy_loss.loss_mode vanilla (default), cispo or sapo"),
                 setting("prime-rl", note="always, taken against the inference log-probs"),
                 setting("openrlhf", "actor.policy_loss_type", "ppo", default=True))
trainer_settings("ratio", "sequence",
                 setting("trl", "importance_sampling_level", "sequence"),
                 setting("verl", _VERL + "policy_loss.loss_mode", "gspo"),
                 setting("openrlhf", "actor.policy_loss_type", "gspo"))
trainer_settings("ratio", "none",
                 setting("trl", "num_iterations", 1, default=True,
                         note="with steps_per_generation = gradient_accumulation_steps and no vLLM correction: "
                              "π_old is π_θ.detach()"))
trainer_settings("clip", "symmetric",
                 setting("trl", "epsilon", 0.2, default=True, note="epsilon_high unset"),
                 setting("verl", _VERL + "policy_loss.loss_mode", "gspo",
                         note="gspo's loss has no dual clip; vanilla, the default, always adds it (clip_ratio_c)"),
                 setting("verl", _VERL + "clip_ratio_low", 0.2, default=True),
                 setting("verl", _VERL + "clip_ratio_high", 0.2, default=True),
                 setting("openrlhf", "actor.eps_clip", 0.2, default=True))
trainer_settings("clip", "asymmetric",
                 setting("trl", "epsilon_high", 0.28, note="epsilon is the lower bound"),
                 setting("verl", _VERL + "clip_ratio_high", 0.28, note="clip_ratio_low the lower bound; " + _GSPO_ONLY),
                 setting("openrlhf", "actor.eps_clip_low_high", "0.2 0.28"))
trainer_settings("clip", "dual_clip",
                 setting("trl", "delta", 3.0,
                         note="INTELLECT-2's two-sided clip: PPO's min with the ratio capped at delta, which for a "
                              "negative advantage is the floor c = delta and for a positive one changes nothing once "
                              "delta > 1 + epsilon_high; loss_type grpo, bnpo, dr_grpo, dapo or luspo"),
                 setting("verl", _VERL + "clip_ratio_c", 3.0, default=True,
                         note="with policy_loss.loss_mode=vanilla (default): always on"),
                 setting("openrlhf", "actor.dual_clip", 3))
trainer_settings("clip", "cispo",
                 setting("trl", "loss_type", "cispo", note="epsilon_high is the cap itself, 1 + eps_high (no lower bound); "
                                                            "TRL recommends 5.0, ScaleRL's"),
                 setting("verl", _VERL + "policy_loss.loss_mode", "cispo",
                         note="the weight clamped to [1 - clip_ratio_low, 1 + clip_ratio_high], [0.8, 1.2] by default: "
                              "a lower bound the paper does not set (clip_ratio_low=1 removes it)"))
trainer_settings("clip", "sapo",
                 setting("trl", "loss_type", "sapo", note="sapo_temperature_pos / _neg"),
                 setting("verl", _VERL + "policy_loss.loss_mode", "sapo", note="tau_pos / tau_neg"))
trainer_settings("clip", "geo_mean",
                 setting("trl", "trl.experimental.gmpo.GMPOTrainer",
                         note="with GMPOConfig (experimental): epsilon 0.4 and epsilon_high (epsilon when unset) bound "
                              "the log-ratio; beta > 0 adds each response's mean k3"),
                 setting("verl", _VERL + "policy_loss.loss_mode", "geo_mean",
                         note="clip_ratio_low / clip_ratio_high bound the log-ratio"))
trainer_settings("kl", "none",
                 setting("trl", "beta", 0.0, default=True),
                 setting("verl", _VERL + "use_kl_loss", False, default=True,
                         note="and algorithm.use_kl_in_reward=false (default)"),
                 setting("openrlhf", "algo.kl.init_coef", 0))
trainer_settings("kl", "in_loss",
                 setting("trl", "beta", 0.001, note="any beta > 0; the estimator is k3"),
                 setting("trl", "use_bias_correction_kl", False,
                         note="its default, True, multiplies k3 by the ratio to the old policy (DeepSeek-V3.2), which changes "
                              "the KL's gradient even on-policy; no kind computes that"),
                 setting("verl", _VERL + "use_kl_loss", True,
                         note="kl_loss_coef (0.001 by default); kl_loss_type low_var_kl (k3) by default"),
                 setting("openrlhf", "algo.kl.use_loss", True, note="--algo.kl.init_coef; --algo.kl.estimator k3"))
trainer_settings("kl", "in_reward",
                 setting("verl", "algorithm.use_kl_in_reward", True, note="kl_ctrl.kl_coef; kl_penalty kl (k1) by default"),
                 setting("openrlhf", "algo.kl.init_coef", 0.01, default=True,
                         note="without --algo.kl.use_loss; --algo.kl.estimator k1 by default"))
trainer_settings("aggregation", "seq_mean_token_mean",
                 setting("trl", "loss_type", "grpo"),
                 setting("trl", "loss_type", "sapo", note="with SAPO's gate"),
                 setting("verl", _VERL + "loss_agg_mode", "seq-mean-token-mean", note="forced by loss_mode gspo and sapo"),
                 setting("openrlhf", "actor.loss_agg_mode", "seq-mean-token-mean"))
trainer_settings("aggregation", "token_mean",
                 setting("trl", "loss_type", "dapo", default=True, note="over the generation batch"),
                 setting("trl", "loss_type", "bnpo", note="gradient_accumulation_steps 1 (else micro_token_mean)"),
                 setting("trl", "loss_type", "cispo", note="with CISPO's weight, over the generation batch"),
                 setting("verl", _VERL + "loss_agg_mode", "token-mean", default=True),
                 setting("prime-rl", note="always: each loss component over its global token count"),
                 setting("openrlhf", "actor.loss_agg_mode", "token-mean", default=True))
trainer_settings("aggregation", "constant_normalizer",
                 setting("trl", "loss_type", "dr_grpo", note="L = max_completion_length"),
                 setting("verl", _VERL + "loss_agg_mode", "seq-mean-token-sum-norm",
                         note="L = loss_scale_factor, else the padded response length"))
trainer_settings("aggregation", "seq_mean_token_sum",
                 setting("trl", "loss_type", "luspo"),
                 setting("verl", _VERL + "loss_agg_mode", "seq-mean-token-sum"))
