"""A clip kind that reads a token's probability, not only its ratio: DPPO's mask on the change of the token's
probability since it was sampled, prime-rl's default loss (``unipo_build.core.registry`` says what a kind is made
of; the other clip kinds are in ``kinds_loss``). Its ``apply`` and ``grad`` take the tokens' old log-probs
(``needs_old_logp``).

Source: prime-rl at 559b447, src/prime_rl/trainer/rl/loss.py ``default_loss_fn`` (probs_diff = exp(trainer_logprobs)
- exp(inference_logprobs); is_masked_high where A > 0 and probs_diff > dppo_mask_high, is_masked_low where A < 0 and
probs_diff < -dppo_mask_low; pg_loss = keep_mask * A * importance_ratio) and packages/prime-rl-configs
src/prime_rl/configs/trainer.py ``DefaultLossConfig`` (dppo_mask_low = dppo_mask_high = 0.2, kl_tau = 1e-3); the
mask is DPPO-Binary TV's (arXiv 2602.04879).
"""

from __future__ import annotations

import numpy as np
from pydantic import Field

from unipo_build.core import clip_rules
from unipo_build.core import components as C
from unipo_build.core.kinds_loss import _CLIP_AFTER, _NO_BOUNDS, _SIDE_WARN, _need
from unipo_build.core.numbers import param_text as _fmt
from unipo_build.core.numbers import tex_num
from unipo_build.core.registry_base import (
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


class DppoMask(_Params):
    delta_low: float = Field(0.2, ge=0, description="A token with a negative advantage is masked once its probability "
                                                    "has fallen by more than this since it was sampled (prime-rl "
                                                    "dppo_mask_low, 0.2 by default).")
    delta_high: float = Field(0.2, ge=0, description="A token with a positive advantage is masked once its probability "
                                                     "has risen by more than this since it was sampled (prime-rl "
                                                     "dppo_mask_high, 0.2 by default).")


def probability_change(ratio, old_logp):
    """How far a token's probability moved since it was sampled, pi_theta - pi_old = pi_old rho - pi_old (numpy),
    computed as :func:`components.dppo_mask_surrogate` computes it."""
    old = np.exp(np.asarray(old_logp, dtype=float))
    return old * np.asarray(ratio, dtype=float) - old


def dppo_mask_grad(ratio, advantage, old_logp, delta_low: float, delta_high: float):
    """d/d log pi of :func:`components.dppo_mask_surrogate` (numpy): rho A where the token is kept, 0 where masked
    (the mask is a constant of the ratio's gradient: prime-rl multiplies the term by it)."""
    ratio, advantage = np.asarray(ratio, dtype=float), np.asarray(advantage, dtype=float)
    _, side = C.dppo_mask_surrogate(ratio, advantage, np.asarray(old_logp, dtype=float), delta_low, delta_high)
    return np.where(side != C.CLIP_NONE, 0.0, ratio * advantage)


def _dppo_worked(rho: float, adv: float, bounds: tuple[float | None, float | None],
                 params: dict | None = None, old_logp: float | None = None) -> tuple[str, float]:
    """DPPO's term of one token: the change of its probability against its side's threshold, then rho A or 0."""
    p = _need(params, "dppo_mask")
    if old_logp is None:
        raise ValueError("the dppo_mask clip's worked example needs the token's old log-prob: call "
                         "worked(rho, adv, bounds, params, old_logp=...)")
    change = float(probability_change(rho, old_logp))
    value, _ = C.dppo_mask_surrogate(np.float64(rho), np.float64(adv), np.float64(old_logp), p["delta_low"],
                                     p["delta_high"])
    line = r"\pi_\theta-\pi_{\theta_{\text{old}}}=" + tex_num(change, 5)
    if adv > 0:
        line += (r">" if change > p["delta_high"] else r"\le ") + tex_num(p["delta_high"])
    elif adv < 0:
        line += (r"<" if change < -p["delta_low"] else r"\ge ") + "-" + tex_num(p["delta_low"])
    return line + r",\quad \ell=" + tex_num(float(value), 5), float(value)


_SIDE = cases(("token.advantage > 0", "masked above +{params.delta_high} (Â > 0)"),
              ("token.advantage < 0", "masked below −{params.delta_low} (Â < 0)"),
              (None, "none: with Â = 0 the term is 0 either way"))
_CHANGE = r"\pi_\theta(o_{i,t}\mid\cdot)-\pi_{\theta_{\text{old}}}(o_{i,t}\mid\cdot)"

register("clip", "dppo_mask", DppoMask,
         "No clip of the ratio: a token whose probability has moved too far since it was sampled, in the direction "
         "its advantage pushes, is masked out of the update (DPPO's binary mask on the probability's change; "
         "prime-rl's default loss).",
         lambda p: (r"\ell_{i,t}=m_{i,t}\,\rho_{i,t}\hat{A}_{i,t},\quad m_{i,t}=\begin{cases}"
                    r"\mathbb{1}\big[%s\le %s\big],&\hat{A}_{i,t}>0\\ \mathbb{1}\big[%s\ge -%s\big],&\hat{A}_{i,t}<0\\ "
                    r"1,&\hat{A}_{i,t}=0\end{cases}" % (_CHANGE, _fmt(p["delta_high"]), _CHANGE, _fmt(p["delta_low"]))),
         (Term("mask", r"m_{i,t}", "The mask (DPPO, arXiv 2602.04879; prime-rl's dppo_mask_low and dppo_mask_high): 0 once "
               "the token's probability, not its ratio, has moved more than δ in the direction its advantage "
               "pushes, and then the token's term and gradient are 0; otherwise 1 and the term is ρA with no clip. "
               "In the ratio the bound is 1 + δ / πold, so a token of probability near 1 is held about as PPO's "
               "clip at ε = δ holds it and a less likely one far more loosely. " + _CLIP_AFTER),
          Term("change", r"\pi_\theta-\pi_{\theta_{\text{old}}}", "The change of the token's probability since it was "
               "sampled, πold (ρ − 1): the same ratio moves a likely token's probability far more than an "
               "improbable one's.")),
         fn=C.dppo_mask_surrogate, bounds=_NO_BOUNDS, worked=_dppo_worked, label="DPPO mask (probability change)",
         clip_rule=clip_rules.dppo_rule,
         ratio_kinds=("token",), needs_old_logp=True,
         apply=lambda ratio, advantage, p, old_logp: C.dppo_mask_surrogate(ratio, advantage, old_logp, p["delta_low"],
                                                                         p["delta_high"]),
         grad=lambda ratio, advantage, p, old_logp: dppo_mask_grad(ratio, advantage, old_logp, p["delta_low"],
                                                                  p["delta_high"]),
         explain=explain(
             row("probability change πθ − πold", "πold × ({calc.ratio} − 1), with log πold = {token.old_logp}",
                 "calc.prob_change", key="prob_change"),
             row("mask threshold", _SIDE, text=_SIDE),
             row("ℓ = m·{ratio_symbol}·Â", "{calc.ratio} × {token.advantage}, or 0 when masked", "calc.surrogate",
                 key="surrogate"),
             say(cases(("calc.clip_side == 1", "Masked: with Â > 0 this token's probability rose by {calc.prob_change}, "
                        "more than {params.delta_high}, so its term and its gradient are 0 (it leaves the update)."),
                       ("calc.clip_side == -1", "Masked: with Â < 0 this token's probability fell by "
                        "{-calc.prob_change}, more than {params.delta_low}, so its term and its gradient are 0 (it "
                        "leaves the update)."),
                       (None, "Kept: its probability has not moved past the threshold on the side its advantage "
                              "pushes, so the term is {ratio_symbol}·Â with no clip and the gradient "
                              "{ratio_symbol}·Â·∇log πθ.")), cls="unipo-live-branch"),
             _SIDE_WARN))

trainer_settings("clip", "dppo_mask",
                 setting("prime-rl", "trainer.loss.type", "default", default=True,
                         note="dppo_mask_low / dppo_mask_high (0.2 each), the ratio taken against the inference "
                              "log-probs; the loss also adds kl_tau (0.001) × (log ratio)², which no kind computes"))
