"""The kinds of the slots of the per-token objective: ratio, clip, kl and aggregation, each
registered once (``unipo_build.registry`` says what a kind is made of)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from . import components as C
from .numbers import param_text as _fmt
from .numbers import tex_fraction, tex_num
from .registry import OLD_POLICY_TEX, NoParams, Term, _Params, cases, explain, register, row, say

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


def _clip_worked(rho: float, adv: float, bounds: tuple[float | None, float | None]) -> tuple[str, float]:
    """The clipped surrogate of one token as a TeX line, and its value."""
    low, high = bounds
    if low is None:
        return (r"\rho\hat{A}=" + tex_num(rho, 5) + r"\times" + tex_num(adv, 5) + "=" + tex_num(rho * adv, 5),
                rho * adv)
    surrogate = min(rho * adv, min(max(rho, 1 - low), 1 + high) * adv)
    return (r"\min\big(\rho\hat{A},\,\operatorname{clip}(\rho," + tex_num(1 - low) + "," + tex_num(1 + high)
            + r")\hat{A}\big)=" + tex_num(surrogate, 5), surrogate)


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
         fn=C.clipped_surrogate, bounds=lambda p: (None, None), worked=_clip_worked, label="no clip",
         explain=explain(row("ℓ = {ratio_symbol}·Â", "{calc.ratio} × {token.advantage} (nothing is clipped)", "calc.surrogate",
                             key="surrogate")))
register("clip", "symmetric", SymmetricClip,
         "PPO's pessimistic clip: once the ratio leaves [1 - eps, 1 + eps] in the advantage's direction, the token stops pushing.",
         lambda p: r"\ell_{i,t}=\min\!\big(\rho_{i,t}\hat{A}_{i,t},\ \operatorname{clip}(\rho_{i,t},1-%s,1+%s)\,\hat{A}_{i,t}\big)"
         % (_fmt(p["eps"]), _fmt(p["eps"])),
         (Term("clip", r"\operatorname{clip}", _CLIP_TERM),
          Term("min", r"\min", "The pessimistic choice: the smaller of the clipped and unclipped objectives.")),
         fn=C.clipped_surrogate, bounds=lambda p: (p["eps"], p["eps"]), worked=_clip_worked, label="symmetric clip",
         explain=_CLIP_ROWS)
register("clip", "asymmetric", AsymmetricClip,
         "Separate lower and upper bounds, 1 - eps_low and 1 + eps_high: once the ratio has left them in the advantage's direction, the term stops pushing.",
         lambda p: r"\ell_{i,t}=\min\!\big(\rho_{i,t}\hat{A}_{i,t},\ \operatorname{clip}(\rho_{i,t},1-%s,1+%s)\,\hat{A}_{i,t}\big)"
         % (_fmt(p["eps_low"]), _fmt(p["eps_high"])),
         (Term("clip", r"\operatorname{clip}", "Asymmetric bounds: the term stops pushing up once the ratio exceeds "
               "1 + eps_high and stops pushing down once it falls below 1 - eps_low. " + _CLIP_AFTER),
          Term("min", r"\min", "The pessimistic choice: the smaller of the clipped and unclipped objectives.")),
         fn=C.clipped_surrogate, bounds=lambda p: (p["eps_low"], p["eps_high"]), worked=_clip_worked, label="asymmetric clip (clip-higher)",
         explain=_CLIP_ROWS)

# --- kl --------------------------------------------------------------------

class KlParams(_Params):
    estimator: Literal["k1", "k2", "k3"] = Field(description="Schulman's estimator of KL(pi_theta || pi_ref).")
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
