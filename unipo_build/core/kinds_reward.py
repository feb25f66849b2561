"""The kinds of the slots that turn a response's reward into an advantage: advantage, filter and
shaping, each registered once (``unipo_build.core.registry`` says what a kind is made of)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from unipo_build.core import components as C
from unipo_build.core.numbers import param_text as _fmt
from unipo_build.core.numbers import tex_num
from unipo_build.core.registry_base import NoParams, Term, _Params, cases, explain, register, row, say, setting, trainer_settings

# --- advantage -------------------------------------------------------------

class GaeParams(_Params):
    gamma: float = Field(1.0, ge=0, le=1, description="Discount per token.")
    lam: float = Field(0.95, ge=0, le=1, description="GAE lambda: bias-variance trade-off.")
    value_clip: float | None = Field(0.2, gt=0, description="Clip range of the value loss; null for none.")


class ZScoreParams(_Params):
    std_ddof: Literal[0, 1] = Field(1, description="1: sample std (n-1, torch/OpenRLHF/TRL); 0: population std (n).")
    eps: float = Field(1e-6, ge=0, description="Added to the std so equal rewards do not divide by zero.")


class ReturnParams(_Params):
    baseline: Literal["none", "batch_mean"] = Field(
        "batch_mean", description="Subtracted from the return: nothing, or the mean reward of the whole batch.")
    gamma: float = Field(1.0, ge=0, le=1, description="Discount per token.")


class WhitenParams(_Params):
    gamma: float = Field(1.0, ge=0, le=1, description="Discount per token.")
    eps: float = Field(1e-6, ge=0, description="Added to the batch std.")


_R = Term("reward", r"r_i", "The reward of response i: 1 if its final answer is right, 0 if not.")
_A = Term("advantage", r"\hat{A}_{i,t}", "The advantage: how much better than expected this response (or token) did. Its sign decides whether the token is pushed up or down.")
_MEAN = Term("mean", r"\operatorname{mean}", "The average reward of the G responses to the same prompt: the baseline.")


def _distinct(rewards: list[float], advantages: list[float]) -> list[tuple[float, float, int]]:
    """(reward, advantage, count) per distinct reward, in order of first appearance."""
    out: list[tuple[float, float, int]] = []
    for r, a in zip(rewards, advantages):
        if r not in [d[0] for d in out]:
            out.append((r, a, rewards.count(r)))
    return out


def _mean_line(rewards: list[float]) -> str:
    mean = sum(rewards) / len(rewards)
    return (r"\operatorname{mean}(r)=\frac{" + "+".join(tex_num(r) for r in rewards) + "}{" + str(len(rewards))
            + "}=" + tex_num(mean))


def _zscore_worked(rewards: list[float], advantages: list[float], params: dict) -> list[str]:
    G, ddof, eps = len(rewards), int(params.get("std_ddof", 1)), float(params.get("eps", 1e-6))
    mean = sum(rewards) / G
    spread = (sum((r - mean) ** 2 for r in rewards) / (G - ddof)) ** 0.5 if G > ddof else 0.0
    terms = "+".join(f"{c}\\,({tex_num(r)}-{tex_num(mean)})^2" for r, _, c in _distinct(rewards, advantages))
    lines = [_mean_line(rewards), r"\operatorname{std}_{" + ("n-1" if ddof == 1 else "n") + r"}(r)=\sqrt{\frac{"
             + terms + "}{" + str(G - ddof) + "}}=" + tex_num(spread)]
    if spread == 0:
        return lines + [r"\hat{A}=0\quad\text{for every response: all rewards are equal, so there is nothing to compare}"]
    for r, a, _ in _distinct(rewards, advantages):
        lines.append(r"\hat{A}_{r=" + tex_num(r) + r"}=\frac{" + tex_num(r) + "-" + tex_num(mean) + "}{"
                     + tex_num(spread) + "+" + tex_num(eps) + "}=" + tex_num(a))
    return lines


def _mean_worked(rewards: list[float], advantages: list[float], params: dict) -> list[str]:
    mean = sum(rewards) / len(rewards)
    return [_mean_line(rewards)] + [r"\hat{A}_{r=" + tex_num(r) + "}=" + tex_num(r) + "-" + tex_num(mean) + "="
                                    + tex_num(a) for r, a, _ in _distinct(rewards, advantages)]


def _loo_worked(rewards: list[float], advantages: list[float], params: dict) -> list[str]:
    G, total = len(rewards), sum(rewards)
    return [r"\textstyle\sum_j r_j=" + tex_num(total)] + [
        r"\hat{A}_{r=" + tex_num(r) + "}=" + tex_num(r) + r"-\frac{" + tex_num(total) + "-" + tex_num(r) + "}{"
        + str(G - 1) + "}=" + tex_num(a) for r, a, _ in _distinct(rewards, advantages)]


# What the Explainer shows of a group kind: the group's rewards and its mean, then the kind's rows.
_GROUP_REWARDS = (say("Rewards of the group's {raw(group.size)} responses: {nums(group.rewards)} (this response: "
                      "{response.reward})."),
                  row("mean of the group", "baseline", "mean(group.rewards)", key="reward_mean"))
_STD = "std(group.rewards, params.std_ddof)"

register("advantage", "group_zscore", ZScoreParams,
         "Each reward minus its group's mean, divided by the group's standard deviation.",
         lambda p: r"\hat{A}_{i,t}=\frac{r_i-\operatorname{mean}(\{r_j\}_{j=1}^{G})}{\operatorname{std}_{%s}(\{r_j\}_{j=1}^{G})+\epsilon}"
         % ("n-1" if p["std_ddof"] == 1 else "n"),
         (_A, _R, _MEAN,
          Term("std", r"\operatorname{std}", "The spread of rewards in the group. Dividing by it makes near-solved and near-hopeless prompts count as much as 50/50 ones.")),
         fn=C.group_zscore_advantage, group_baseline=True, label="group z-score", worked=_zscore_worked,
         explain=explain(
             *_GROUP_REWARDS,
             row("std of the group", cases(("params.std_ddof == 1", "sample std (divides by n − 1 = {raw(group.size - 1)})"),
                                           (None, "population std (divides by n = {raw(group.size)})")),
                 _STD, key="reward_std"),
             row("ε", "added to the std", "params.eps", key="eps"),
             row("advantage Â", cases(("max(group.rewards) == min(group.rewards)", "every reward is equal: 0 for the whole group"),
                                      (None, "(rᵢ − mean) / (std + ε) = ({response.reward} − {mean(group.rewards)}) / "
                                             "({" + _STD + "} + {params.eps})")),
                 "calc.advantage", key="advantage", check="token.advantage")),
         apply=lambda rewards, p: C.group_zscore_advantage(rewards, std_ddof=p.get("std_ddof", 1), eps=p.get("eps", 1e-6)))
register("advantage", "group_mean", NoParams,
         "Each reward minus its group's mean; no division by the spread.",
         lambda p: r"\hat{A}_{i,t}=r_i-\operatorname{mean}(\{r_j\}_{j=1}^{G})",
         (_A, _R, _MEAN),
         fn=C.group_mean_advantage, group_baseline=True, label="group mean", worked=_mean_worked,
         explain=explain(*_GROUP_REWARDS,
                         row("advantage Â", "rᵢ − mean = {response.reward} − {mean(group.rewards)}", "calc.advantage",
                             key="advantage", check="token.advantage")),
         apply=lambda rewards, p: C.group_mean_advantage(rewards))
register("advantage", "leave_one_out", NoParams,
         "Each reward minus the mean reward of the other responses to the same prompt.",
         lambda p: r"\hat{A}_{i,t}=r_i-\frac{1}{G-1}\sum_{j\neq i}r_j",
         (_A, _R),
         fn=C.leave_one_out_advantage, group_baseline=True, label="leave-one-out baseline", worked=_loo_worked,
         explain=explain(*_GROUP_REWARDS,
                         row("advantage Â", "rᵢ − mean of the other {raw(group.size - 1)} rewards", "calc.advantage",
                             key="advantage", check="token.advantage")),
         apply=lambda rewards, p: C.leave_one_out_advantage(rewards))


class BatchStdParams(_Params):
    std_ddof: Literal[0, 1] = Field(1, description="1: sample std (n-1) over the batch's rewards, as TRL's nanstd; 0: population std (n).")
    eps: float = Field(1e-4, ge=0, description="Added to the batch std (TRL: 1e-4, fixed).")


_CENTRED = "response.reward - mean(group.rewards)"
_EQUAL = "max(group.rewards) == min(group.rewards)"

register("advantage", "group_mean_batch_std", BatchStdParams,
         "Each reward minus its group's mean, divided by the standard deviation of every reward in the batch "
         "(TRL scale_rewards='batch').",
         lambda p: (r"\hat{A}_{i,t}=\frac{r_i-\operatorname{mean}(\{r_j\}_{j=1}^{G})}{\operatorname{std}_{%s}(\{r_k\}_{k=1}^{BG})+%s}"
                    % ("n-1" if p["std_ddof"] == 1 else "n", tex_num(p["eps"]))),
         (_A, _R, _MEAN,
          Term("batch_std", r"\operatorname{std}(\{r_k\}_{k=1}^{BG})",
               "The spread of every reward in the batch (B groups of G responses), one number for every group. "
               "Dividing by the batch's spread instead of the group's keeps a group whose rewards barely differ "
               "small, where the group z-score would blow it up to unit scale (TRL scale_rewards='batch'; the "
               "advantage of Lite PPO, arXiv 2508.08221, which also averages the loss over every token; OpenRLHF's "
               "reinforce_baseline subtracts the group mean too, then whitens over the batch's tokens).")),
         fn=C.group_mean_batch_std_advantage, group_baseline=True, label="group mean, batch std",
         explain=explain(
             *_GROUP_REWARDS,
             row("rᵢ − mean", "{response.reward} − {mean(group.rewards)}", _CENTRED, key="centred"),
             row("batch std + ε", cases(
                 ("params.std_ddof == 1", "sample std of every reward in the batch, plus ε = {params.eps}: one divisor for "
                                          "every group. A step's log holds the batch's rewards only through their "
                                          "advantages, so it is read back from this one: (rᵢ − mean) / Â"),
                 (None, "population std of every reward in the batch, plus ε = {params.eps}: one divisor for every group. "
                        "A step's log holds the batch's rewards only through their advantages, so it is read back from "
                        "this one: (rᵢ − mean) / Â")),
                 "(" + _CENTRED + ") / token.advantage", key="batch_scale", when="token.advantage != 0"),
             row("advantage Â", cases((_EQUAL, "every reward of the group is equal: 0 for the whole group"),
                                      (None, "(rᵢ − mean) / (batch std + ε)")),
                 "token.advantage", key="advantage"),
             say("The group z-score would divide by this group's own std, {std(group.rewards, params.std_ddof)}, and give "
                 "{(" + _CENTRED + ") / (std(group.rewards, params.std_ddof) + params.eps)}: with the batch's std a group "
                 "whose rewards barely differ keeps a small advantage.", when="!(" + _EQUAL + ")")),
         apply=lambda rewards, p: C.group_mean_batch_std_advantage(rewards, std_ddof=p.get("std_ddof", 1),
                                                                   eps=p.get("eps", 1e-4)))


def _gae(token_rewards, mask, rewards, values, p):
    if values is None:
        raise ValueError("GAE needs the critic's values")
    return C.gae_advantage(token_rewards, values, mask, gamma=p.get("gamma", 1.0), lam=p.get("lam", 0.95))


def _reinforce_return(token_rewards, mask, rewards, values, p):
    from array_api_compat import array_namespace

    returns = C.reward_to_go(token_rewards, mask, gamma=p.get("gamma", 1.0))
    if p.get("baseline", "batch_mean") == "batch_mean":
        return (returns - array_namespace(rewards).mean(rewards)) * mask, returns
    return returns, returns


def _whitened_return(token_rewards, mask, rewards, values, p):
    returns = C.reward_to_go(token_rewards, mask, gamma=p.get("gamma", 1.0))
    return C.batch_whiten(returns, mask, eps=p.get("eps", 1e-6)), returns


register("advantage", "gae", GaeParams,
         "Generalised advantage estimation from per-token rewards and a learned critic V.",
         lambda p: r"\hat{A}_{i,t}=\sum_{l\ge 0}(\gamma\lambda)^{l}\,\delta_{i,t+l},\quad \delta_{i,t}=r_{i,t}+\gamma V(s_{t+1})-V(s_t),\quad \gamma=%s,\ \lambda=%s"
         % (_fmt(p["gamma"]), _fmt(p["lam"])),
         (_A, Term("delta", r"\delta_{i,t}", "The temporal-difference error: what the critic did not predict at this token."),
          Term("value", r"V(s_t)", "The critic's estimate of the reward still to come from this token on."),
          Term("gamma", r"\gamma", "Discount per token (1: a reward at the end counts fully for every token)."),
          Term("lambda", r"\lambda", "Trades bias (small) against variance (large) in the advantage.")),
         fn=C.gae_advantage, needs_critic=True, label="critic (GAE)", apply=_gae,
         explain=explain(
             row("reward rᵢ", "on the last token (plus −β·KL on every token)", "response.reward", key="reward"),
             row("critic value V(sₜ)", "the critic's prediction at this token", "token.value", key="value",
                 when="has(token.value)"),
             row("return Rₜ", "the λ-return, the critic's target", "token.return", key="return", when="has(token.return)"),
             row("advantage Â", "Rₜ − V(sₜ) (GAE, γ {params.gamma}, λ {params.lam})", "token.return - token.value",
                 key="advantage", check="token.advantage", when="has(token.value) && has(token.return)"),
             row("advantage Â", "as logged", "token.advantage", key="advantage",
                 when="!(has(token.value) && has(token.return))")))
register("advantage", "reinforce_return", ReturnParams,
         "The reward to go, minus a batch-wide baseline (or none).",
         lambda p: r"\hat{A}_{i,t}=\sum_{t'\ge t}\gamma^{t'-t}r_{i,t'}%s" % (
             r"-\operatorname{mean}_{\text{batch}}(r)" if p["baseline"] == "batch_mean" else ""),
         (_A, Term("return", r"r_{i,t'}", "Per-token reward: the answer's reward sits on the last token; a KL penalty, if any, on every token."),
          Term("baseline", r"\operatorname{mean}_{\text{batch}}", "One baseline for the whole batch, shared by every prompt: easy and hard prompts are judged against the same bar.")),
         fn=C.reward_to_go, label="batch baseline", apply=_reinforce_return,
         explain=explain(
             row("reward rᵢ", "the response's reward", "response.reward", key="reward"),
             row("return Gₜ", "reward to go from this token", "token.return", key="return", when="has(token.return)"),
             row("baseline", cases(("params.baseline == 'batch_mean'", "mean reward of the batch (Gₜ − Â)"), (None, "none")),
                 "token.return - token.advantage", key="baseline", when="has(token.return)"),
             row("advantage Â", "Gₜ − baseline", "token.advantage", key="advantage")))
register("advantage", "whitened_return", WhitenParams,
         "The reward to go, whitened over the whole batch (REINFORCE++).",
         lambda p: r"\hat{A}_{i,t}=\frac{G_{i,t}-\operatorname{mean}_{\text{batch}}(G)}{\operatorname{std}_{\text{batch}}(G)}",
         (_A, Term("return", r"G_{i,t}", "The reward to go from token t."),),
         fn=C.batch_whiten, label="batch-whitened return", apply=_whitened_return,
         explain=explain(
             row("return Gₜ", "reward to go from this token", "token.return", key="return", when="has(token.return)"),
             row("advantage Â", "whitened over the batch", "token.advantage", key="advantage")))

# --- filter ----------------------------------------------------------------

class DynamicSampling(_Params):
    max_rounds: int = Field(10, ge=1, description="At most this many sampling rounds to fill the batch with informative groups (verl: max_num_gen_batches, 10).")


register("filter", "none", NoParams, "Every sampled group is trained on.", lambda p: "", label="no filter",
         explain=explain(say(cases(
             ("group.n_correct == 0 || group.n_correct == group.size",
              "This token's group has {raw(group.n_correct)}/{raw(group.size)} correct answers. Every group is trained on, including this one although "
              "its advantages are all 0."),
             (None, "This token's group has {raw(group.n_correct)}/{raw(group.size)} correct answers. Every group is trained on.")))))
register("filter", "dynamic_sampling", DynamicSampling,
         "Groups where every response is right, or every one wrong, are dropped and the batch is refilled.",
         lambda p: r"\text{s.t.}\ \ 0<\big|\{o_i : o_i\ \text{correct}\}\big|<G",
         (Term("filter", r"0<|\{\cdot\}|<G", "Keep a group only if some but not all of its responses are correct: otherwise every advantage is zero."),),
         fn=C.dynamic_sampling_keep, apply=lambda correct, p: C.dynamic_sampling_keep(correct), label="dynamic sampling",
         explain=explain(
             say(cases(("group.n_correct > 0 && group.n_correct < group.size",
                        "This token's group has {raw(group.n_correct)}/{raw(group.size)} correct answers: 0 < {raw(group.n_correct)} < {raw(group.size)}, "
                        "so the filter kept it."),
                       (None, "This token's group has {raw(group.n_correct)}/{raw(group.size)} correct answers: the filter would have dropped it."))),
             say(cases(("count(step.filtered_groups) > 0",
                        "Before this update the filter dropped {raw(count(step.filtered_groups))} logged group(s): "
                        "{join(step.filtered_groups, 'group {raw(index)} ({raw(n_correct)}/{raw(size)} correct)', ', ')}."),
                       (None, "The log lists no dropped groups for this step (drops are logged on the first update of a "
                              "rollout).")))))

class MaskTruncated(_Params):
    count_masked: bool = Field(True, description="True: a masked response still counts in the aggregation's "
                               "normaliser (N, or N x L), as TRL's grpo, dr_grpo and sapo losses average over every "
                               "row; false: it leaves the normaliser too, as TRL's bnpo, dapo and cispo losses divide by "
                               "the tokens left after masking (only with the token_mean aggregation).")


def _keep_all_groups(correct, p):
    from array_api_compat import array_namespace

    xp = array_namespace(correct)
    return xp.ones(correct.shape[:1], dtype=xp.bool)


register("filter", "mask_truncated", MaskTruncated,
         "Every group is trained on, but a response that hit the generation budget without finishing leaves the loss: "
         "its tokens weigh 0 (TRL mask_truncated_completions; DAPO's overlong filtering).",
         lambda p: (r"w_{i,t}\leftarrow 0\ \ \text{for every } o_i \text{ cut off at } L_{\max}"
                    + (r",\quad \text{the normaliser still counts every sampled } o_i" if p["count_masked"]
                       else r",\quad \text{the normaliser counts the kept tokens only}")),
         (Term("filter", r"w_{i,t}\leftarrow 0", "A response cut off at the generation budget has no final answer to "
               "judge: its low reward says 'too long', not 'wrong'. Masking it keeps that noise out of the gradient "
               "(DAPO, arXiv 2503.14476, sec. 3.4, overlong filtering; TRL mask_truncated_completions). Its reward still "
               "enters its group's mean and std, so the other responses' advantages are unchanged."),
          Term("L_max", r"L_{\max}", "The generation budget (max new tokens).")),
         fn=C.mask_truncated_keep, apply=_keep_all_groups, label="mask truncated responses",
         response_keep=lambda truncated, p: C.mask_truncated_keep(truncated),
         explain=explain(
             say(cases(("response.truncated && params.count_masked",
                        "This response hit the generation budget ({raw(response.length)} tokens) without finishing: its "
                        "tokens are masked out of the loss (weight 0). The normaliser still counts it, and its reward "
                        "{response.reward} still entered its group's statistics."),
                       ("response.truncated",
                        "This response hit the generation budget ({raw(response.length)} tokens) without finishing: its "
                        "tokens are masked out of the loss and out of the normaliser's token count. Its reward "
                        "{response.reward} still entered its group's statistics."),
                       (None, "This response finished within the budget: it is trained on. Every group is kept; only "
                              "responses cut off at the budget are masked out of the loss.")),
                 cls="unipo-live-branch")))

# --- shaping ---------------------------------------------------------------

class OverlongShaping(_Params):
    max_length: int | None = Field(None, gt=0, description="L_max; null means the run's generation budget.")
    cache_fraction: float = Field(0.2, gt=0, le=1, description="L_cache as a fraction of L_max (DAPO: 4,096 of 20,480, the expected 16,384 plus the cache).")
    cache_length: int | None = Field(None, gt=0, description="L_cache in tokens; filled from cache_fraction when null.")
    penalty: float = Field(1.0, gt=0, description="The penalty at L_max and beyond (DAPO: 1, against a correctness reward of +1/-1; 0.5 keeps that weight against a 1/0 reward).")


def _penalty_factor(p: dict) -> str:
    """The ramp's factor in the formula: nothing for the paper's penalty of 1."""
    penalty = p.get("penalty", 1.0)
    return "" if penalty == 1 else _fmt(penalty) + r"\,"


def _resolve_overlong(p: dict, max_new_tokens: int) -> dict:
    p = {**p, "max_length": p["max_length"] or max_new_tokens}
    if p["cache_length"] is None:
        p["cache_length"] = max(1, round(p["cache_fraction"] * p["max_length"]))
    return p


#: Overlong shaping's rows need its two lengths (a run fills them in: resolve).
_BUDGET = "has(params.max_length) && has(params.cache_length)"

register("shaping", "none", NoParams, "The reward is used as it is.", lambda p: "", label="no shaping",
         explain=explain(say("The reward is used as it is: rᵢ = {response.reward}.")))
register("shaping", "overlong", OverlongShaping,
         "A soft length penalty added to the reward as a response nears the generation budget.",
         lambda p: (r"R_{\text{length}}(y)=\begin{cases}0,&|y|\le L_{\max}-L_{\text{cache}}\\ %s\frac{(L_{\max}-L_{\text{cache}})-|y|}{L_{\text{cache}}},&L_{\max}-L_{\text{cache}}<|y|\le L_{\max}\\ -%s,&|y|>L_{\max}\end{cases}"
                    % (_penalty_factor(p), _fmt(p.get("penalty", 1.0)))),
         (Term("L_max", r"L_{\max}", "The generation budget."),
          Term("L_cache", r"L_{\text{cache}}", "The stretch before the budget over which the penalty ramps from 0 to its floor.")),
         run_resolved=("max_length", "cache_length"), resolve=_resolve_overlong,
         fn=C.overlong_penalty,
         apply=lambda lengths, p: C.overlong_penalty(lengths, p["max_length"], p["cache_length"], p.get("penalty", 1.0)), label="overlong penalty",
         explain=explain(
             row("|oᵢ|", "this response's length", "response.length", key="length"),
             row("L_max, L_cache", "the budget and the ramp before it", text="{raw(params.max_length)}, {raw(params.cache_length)}",
                 when=_BUDGET),
             row("R_length", cases(("response.length <= params.max_length - params.cache_length", "0: shorter than L_max − L_cache"),
                                   (None, "penalty × (L_max − L_cache − |oᵢ|) / L_cache")),
                 "calc.shaping", key="shaping", check="response.reward_components.shaping", when=_BUDGET),
             row("reward rᵢ", "after shaping", "response.reward", key="reward")))

# --- the kinds in the trainers ---------------------------------------------
#
# What selects each kind in TRL, verl, prime-rl and OpenRLHF (registry.TRAINER_SOURCES says where each was
# read); a trainer not named does not ship the kind.

trainer_settings("advantage", "group_zscore",
                 setting("trl", "scale_rewards", "group", default=True, note="the std plus 1e-4"),
                 setting("verl", "algorithm.adv_estimator", "grpo", note="with norm_adv_by_std_in_grpo=true (default)"),
                 setting("openrlhf", "algo.advantage.estimator", "group_norm", note="the std plus 1e-9"))
trainer_settings("advantage", "group_mean",
                 setting("trl", "scale_rewards", "none"),
                 setting("verl", "algorithm.adv_estimator", "grpo"),
                 setting("verl", "algorithm.norm_adv_by_std_in_grpo", False),
                 setting("prime-rl", "orchestrator.algo.type", "grpo", default=True),
                 setting("openrlhf", "algo.advantage.estimator", "dr_grpo"))
trainer_settings("advantage", "group_mean_batch_std",
                 setting("trl", "scale_rewards", "batch", note="the batch's std plus 1e-4"))
trainer_settings("advantage", "leave_one_out",
                 setting("verl", "algorithm.adv_estimator", "rloo"),
                 setting("openrlhf", "algo.advantage.estimator", "rloo"))
trainer_settings("advantage", "gae",
                 setting("verl", "algorithm.adv_estimator", "gae", default=True),
                 setting("openrlhf", "algo.advantage.estimator", "gae", default=True,
                         note="then whitened over the batch's tokens (--algo.advantage.no_std_norm: centred only)"))
trainer_settings("advantage", "whitened_return",
                 setting("verl", "algorithm.adv_estimator", "reinforce_plus_plus"),
                 setting("openrlhf", "algo.advantage.estimator", "reinforce"))
trainer_settings("filter", "none",
                 setting("trl", note="always: TRL trains on every group. off_policy_mask_threshold (None) is "
                                     "DeepSeek-V3.2's off-policy sequence mask, which drops a response with a negative "
                                     "advantage whose mean log-prob has fallen by more than it since sampling; no kind "
                                     "computes it"),
                 setting("verl", note="without algorithm.filter_groups.enable (default)"),
                 setting("openrlhf", note="without --algo.dynamic_filtering_enable (default)"))
trainer_settings("filter", "mask_truncated",
                 setting("trl", "mask_truncated_completions", True,
                         note="the normaliser counts masked rows for loss_type grpo, dr_grpo, sapo (count_masked true), "
                              "not for bnpo, dapo, cispo (false)"))
trainer_settings("filter", "dynamic_sampling",
                 setting("verl", "algorithm.filter_groups.enable", True, note="DAPO's recipe; max_num_gen_batches rounds"),
                 setting("openrlhf", "algo.dynamic_filtering_enable", True,
                         note="with --algo.dynamic_filtering_range 0 1 on a 0/1 score; refills until the batch is full"))
trainer_settings("shaping", "none",
                 setting("trl", note="without trl.rewards.get_soft_overlong_punishment among reward_funcs (default): "
                                     "no length term in the reward"),
                 setting("verl", note="without reward_model.reward_kwargs.overlong_buffer_cfg (default)"),
                 setting("openrlhf", note="without --reward.overlong_buffer_len (default)"))
trainer_settings("shaping", "overlong",
                 setting("trl", "trl.rewards.get_soft_overlong_punishment",
                         note="one of reward_funcs, made with max_completion_len L_max and soft_punish_cache L_cache; "
                              "the penalty is its entry of reward_weights (1 when unset)"),
                 setting("verl", "+reward_model.reward_kwargs.overlong_buffer_cfg.enable", True,
                         note="with reward_model.reward_manager=dapo (DAPO's recipe); overlong_buffer_cfg.len and "
                              ".penalty_factor are L_cache and the penalty"),
                 setting("openrlhf", "reward.overlong_buffer_len", 4096,
                         note="L_cache; --reward.overlong_penalty_factor is the penalty"))
