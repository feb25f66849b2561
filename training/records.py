"""Turn one gradient update's tensors into canonical log records (metrics and token detail).

Pure functions of detached tensors: the RL loop calls them; the consistency test checks
that what they write can be recomputed by the site's numpy math.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from unipo_build.core.components import CLIP_HIGH, CLIP_LOW
from unipo_build.core.step_budget import detail_order, fit_detail
from unipo_build.core.schema import GroupSummary, PromptGroup, Response, StepDetail, TokenArrays


@dataclass
class MinibatchView:
    """Everything logged about one update's minibatch, on CPU, shaped (B, T) or (B,)."""

    group_index: list[int]  # rollout group index of each response (group-major)
    prompts: list[str]  # per group, in the order of first appearance
    answers: list[str]
    response_text: list[str]
    token_ids: list[list[int]]
    token_text: list[list[str]]  # or any object indexed by row (the trainer's is lazy)
    rewards: torch.Tensor  # (B,) after shaping
    reward_components: dict[str, torch.Tensor]  # name -> (B,)
    correct: torch.Tensor  # (B,) 0/1
    truncated: torch.Tensor  # (B,) bool
    mask: torch.Tensor
    logp: torch.Tensor
    old_logp: torch.Tensor
    ref_logp: torch.Tensor | None
    values: torch.Tensor | None
    advantages: torch.Tensor
    returns: torch.Tensor | None
    kl: torch.Tensor | None
    ratio: torch.Tensor
    clip_side: torch.Tensor
    entropy: torch.Tensor
    weights: torch.Tensor
    objective: torch.Tensor
    group_advantage: bool  # the advantage is the same for every token of a response
    # log-prob each token was sampled with (the decoding pass), logged when sampling and training
    # run in mixed precision and can differ from old_logp (the training pass before the update)
    sample_logp: torch.Tensor | None = None


def _floats(row: torch.Tensor, n: int) -> list[float]:
    return [float(x) for x in row[:n].tolist()]


def _groups(view: MinibatchView) -> list[tuple[int, list[int]]]:
    """(group index, response rows) in order of appearance."""
    order: dict[int, list[int]] = {}
    for row, g in enumerate(view.group_index):
        order.setdefault(g, []).append(row)
    return list(order.items())


def group_summaries(view: MinibatchView) -> list[GroupSummary]:
    contribution = (view.weights.double() * view.objective.double()).sum(dim=-1)
    out = []
    for g, rows in _groups(view):
        out.append(GroupSummary(index=g, size=len(rows), n_correct=int(view.correct[rows].sum()),
                                reward_mean=float(view.rewards[rows].mean()),
                                contribution=float(contribution[rows].sum())))
    return out


def response_record(view: MinibatchView, row: int, with_tokens: bool) -> Response:
    n = int(view.mask[row].sum())
    contribution = float((view.weights[row].double() * view.objective[row].double()).sum())
    tokens = None
    if with_tokens:
        tokens = TokenArrays(
            ids=view.token_ids[row][:n], text=view.token_text[row][:n],
            logp=_floats(view.logp[row], n), old_logp=_floats(view.old_logp[row], n),
            sample_logp=_floats(view.sample_logp[row], n) if view.sample_logp is not None else None,
            ref_logp=_floats(view.ref_logp[row], n) if view.ref_logp is not None else None,
            value=_floats(view.values[row], n) if view.values is not None else None,
            advantage=_floats(view.advantages[row], n),
            return_=_floats(view.returns[row], n) if view.returns is not None else None,
            kl=_floats(view.kl[row], n) if view.kl is not None else None,
            ratio=_floats(view.ratio[row], n), clip=[int(x) for x in view.clip_side[row][:n].tolist()],
            entropy=_floats(view.entropy[row], n), weight=_floats(view.weights[row], n),
            objective=_floats(view.objective[row], n), mask=[int(x) for x in view.mask[row][:n].tolist()],
        )
    return Response(
        index=0, text=view.response_text[row], reward=float(view.rewards[row]),
        reward_components={k: float(v[row]) for k, v in view.reward_components.items()},
        advantage=float(view.advantages[row, 0]) if view.group_advantage and n > 0 else None,
        length=n, correct=bool(view.correct[row]), truncated=bool(view.truncated[row]),
        contribution=contribution, tokens=tokens,
    )


def step_detail(view: MinibatchView, *, step: int, rollout: int, objective: float, detail_groups: int,
                filtered: list[PromptGroup] | None = None, max_bytes: int | None = None) -> StepDetail:
    """The step file of one update: every group's summary, token detail for `detail_groups` groups
    (in step_budget.detail_order) and the filter's dropped groups.

    With `max_bytes`, a group is detailed only if the file (as the run log writes it) stays within
    that many bytes with it; a group that does not fit is passed over for the next in the order, and
    the first group is always detailed: ``unipo_build.core.step_budget.fit_detail``, the rule
    ``unipo trim-steps`` applies to files already written.
    """
    summaries = group_summaries(view)
    rows_of = dict(_groups(view))
    prompts_by_group = dict(zip(rows_of, zip(view.prompts, view.answers)))
    filtered = filtered or []
    filtered_summaries = [GroupSummary(index=p.index, size=len(p.responses),
                                       n_correct=sum(bool(r.correct) for r in p.responses),
                                       reward_mean=sum(r.reward for r in p.responses) / len(p.responses),
                                       filtered=True, contribution=0.0, detailed=True) for p in filtered]
    by_index = {s.index: s for s in summaries}

    def detailed(g: int) -> PromptGroup:
        responses = []
        for i, row in enumerate(rows_of[g]):
            r = response_record(view, row, with_tokens=True)
            r.index = i
            responses.append(r)
        prompt, answer = prompts_by_group[g]
        return PromptGroup(index=g, prompt=prompt, answer=answer, contribution=by_index[g].contribution,
                           responses=responses)

    base = StepDetail(step=step, rollout=rollout, objective=objective, groups=summaries,
                      filtered_groups=filtered_summaries, prompts=filtered)
    return fit_detail(base, (detailed(g) for g in detail_order(summaries)[:detail_groups]), max_bytes)


def filtered_records(filtered: list, limit: int = 2) -> list[PromptGroup]:
    """The sampling filter's dropped groups for a step file: texts and (shaped) rewards only, never
    trained on. `filtered` holds (batch, group, answer, reward, components) as the trainer keeps them."""
    out = []
    for batch, g, answer, reward, comps in filtered[:limit]:
        responses = []
        for i, row in enumerate(batch.group(g)):
            responses.append(Response(
                index=i, text=batch.texts[row], reward=float(reward[row]),
                reward_components={k: float(v[row]) for k, v in comps.items()},
                length=int(batch.response_mask[row].sum()), correct=bool(comps["correct"][row]),
                filtered=True, truncated=bool(batch.truncated[row]), contribution=0.0))
        out.append(PromptGroup(index=1000 + len(out), prompt=batch.prompts[g], answer=answer, filtered=True,
                               contribution=0.0, responses=responses))
    return out


def update_metrics(view: MinibatchView) -> dict[str, float | None]:
    """Metrics of one update, computed over the minibatch's real tokens."""
    m = view.mask.bool()
    n = max(int(m.sum()), 1)
    ratio = view.ratio[m]
    metrics = {
        "entropy/mean": float(view.entropy[m].sum()) / n,
        "clip/frac_high": float((view.clip_side[m] == CLIP_HIGH).sum()) / n,
        "clip/frac_low": float((view.clip_side[m] == CLIP_LOW).sum()) / n,
        "ratio/min": float(ratio.min()) if ratio.numel() else None,
        "ratio/mean": float(ratio.mean()) if ratio.numel() else None,
        "ratio/max": float(ratio.max()) if ratio.numel() else None,
    }
    if view.kl is not None:
        metrics["kl/mean"] = float(view.kl[m].sum()) / n
    elif view.ref_logp is not None:
        metrics["kl/mean"] = float((view.logp - view.ref_logp)[m].sum()) / n
    if view.sample_logp is not None:
        metrics.update(mismatch_metrics(view.old_logp, view.sample_logp, view.mask))
    return metrics


def mismatch_metrics(train_logp: torch.Tensor, sample_logp: torch.Tensor, mask: torch.Tensor) -> dict[str, float | None]:
    """How far the training pass's log-probs (before the update) are from the sampling pass's.

    Over the real tokens: mean and largest |log pi_train - log pi_sample|, and the truncated
    importance-sampling weight min(1, pi_train / pi_sample) (mean, smallest, and the fraction of
    tokens it pulls below 1, i.e. where the training pass finds the token less likely).
    """
    m = mask.bool()
    if not bool(m.any()):
        return {k: None for k in ("mismatch/logp_abs_mean", "mismatch/logp_abs_max", "mismatch/tis_mean",
                                  "mismatch/tis_min", "mismatch/tis_below_1_frac")}
    delta = (train_logp.double() - sample_logp.double())[m]
    tis = delta.exp().clamp(max=1.0)
    return {
        "mismatch/logp_abs_mean": float(delta.abs().mean()),
        "mismatch/logp_abs_max": float(delta.abs().max()),
        "mismatch/tis_mean": float(tis.mean()),
        "mismatch/tis_min": float(tis.min()),
        "mismatch/tis_below_1_frac": float((delta < 0).double().mean()),
    }


def rollout_metrics(*, rewards: torch.Tensor, components: dict[str, torch.Tensor], shaping: torch.Tensor,
                    correct: torch.Tensor, lengths: torch.Tensor, truncated: torch.Tensor, group_size: int,
                    n_sampled_groups: int, n_kept_groups: int, rounds: int, all_correct: int,
                    all_wrong: int, zero_variance: int, sampled_reward: torch.Tensor,
                    sampled_correct: torch.Tensor, sampled_lengths: torch.Tensor) -> dict[str, float | None]:
    """Rollout-level metrics (repeated on each update of the rollout).

    reward/, accuracy/train and length/ cover the responses trained on (the kept groups); sampled/
    covers every response generated in the rollout, dropped groups included, so a filtered run can
    be compared with an unfiltered one per generated response as well as per update.
    """
    lengths = lengths.float()
    right = correct.bool()

    def mean_or_none(x: torch.Tensor) -> float | None:
        return float(x.mean()) if x.numel() else None

    metrics = {
        "reward/mean": float(rewards.mean()),
        "reward/std": float(rewards.std(correction=0)) if rewards.numel() > 1 else 0.0,
        "reward/shaping": float(shaping.mean()),
        "accuracy/train": float(correct.float().mean()),
        "length/mean": float(lengths.mean()),
        "length/correct": mean_or_none(lengths[right]),
        "length/incorrect": mean_or_none(lengths[~right]),
        "length/truncated_frac": float(truncated.float().mean()),
        "groups/zero_variance_frac": zero_variance / n_sampled_groups,
        "groups/all_correct_frac": all_correct / n_sampled_groups,
        "groups/all_wrong_frac": all_wrong / n_sampled_groups,
        "sampling/pass_rate": n_kept_groups / n_sampled_groups,
        "sampling/generated_per_kept": sampled_lengths.numel() / max(lengths.numel(), 1),
        "sampled/reward": float(sampled_reward.float().mean()),
        "sampled/accuracy": float(sampled_correct.float().mean()),
        "sampled/length": float(sampled_lengths.float().mean()),
        "sampled/tokens": float(sampled_lengths.sum()),
        "sampling/rounds": float(rounds),
    }
    for name, values in components.items():
        metrics[f"reward/{name}"] = float(values.float().mean())
    return {k: (None if v is not None and not math.isfinite(v) else v) for k, v in metrics.items()}
