"""Which logged update the anatomy page walks through, and the arithmetic it shows of it.

The update is chosen by code (:func:`choose_step`), from the run's one reader: each token file
contributes a small digest in the reader's single pass (its mixed and all-correct groups, the
groups it updates, the groups it details), and steps.jsonl gives the rollouts. The arithmetic
of a group's advantage, of one token's objective and of its weight comes from the registry's
worked examples (``Kind.worked``): this module does not know any component kind by name.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from unipo_build.core.cache import Cache
from unipo_build.core.reader import token_digest
from unipo_build.core.registry import REGISTRY
from unipo_build.core.runs import Run
from unipo_build.core.schema import PromptGroup, Response, StepDetail
from unipo_build.core.numbers import tex_num


@dataclass
class AnatomyPick:
    run: Run
    step: int
    detail: StepDetail
    metrics: dict
    first_in_rollout: bool
    mixed: PromptGroup | None
    all_correct: PromptGroup | None
    later_step: int | None = None
    later_group: PromptGroup | None = None
    updates_between: int | None = None
    reason: str = ""
    requested: int | None = None


@dataclass(frozen=True)
class StepGroups:
    """What the anatomy page needs of one token file."""

    mixed: tuple[int, ...]  # trained groups with right and wrong answers, all tokens logged
    all_correct: tuple[int, ...]  # trained groups whose answers are all right, all tokens logged
    updated: frozenset[int]  # groups this update trains on
    detailed: frozenset[int]  # trained groups with every response's tokens logged


@token_digest("anatomy")
def step_groups(detail: StepDetail) -> StepGroups:
    mixed, all_correct, detailed = [], [], set()
    for p in detail.prompts:
        if p.filtered or not p.responses or any(r.tokens is None for r in p.responses):
            continue
        detailed.add(p.index)
        flags = [bool(r.correct) for r in p.responses]
        if all(flags):
            all_correct.append(p.index)
        elif any(flags):
            mixed.append(p.index)
    return StepGroups(tuple(mixed), tuple(all_correct), frozenset(g.index for g in detail.groups), frozenset(detailed))


def _detailed_later(digests: dict[int, StepGroups], rollout_of: dict[int, int], step: int,
                    group_index: int) -> int | None:
    """The group's next update in the same rollout, if the log details its tokens there.

    None when the rollout ends first, or when the group's next update is logged without its
    tokens (then a later detailed appearance would mix the effect of two of its own updates).
    """
    rollout = rollout_of.get(step)
    for later in sorted(s for s in digests if s > step):
        if rollout_of.get(later) != rollout:
            return None
        groups = digests[later]
        if group_index not in groups.updated:
            continue  # an update on other groups
        return later if group_index in groups.detailed else None
    return None


def choose_step(run: Run, requested: int | None) -> tuple[int | None, int | None, int | None, int | None, str]:
    """(step, mixed group, all-correct group, later step, reason) for the anatomy page.

    Preference: the first token-logged update that opens a rollout (so the ratios are still 1)
    with a mixed group and an all-correct group, where the mixed group's tokens are logged again
    later in the same rollout; then the first update with a mixed and an all-correct group;
    then the first with a mixed group; then the first logged update.
    """
    digests: dict[int, StepGroups] = run.reader.digest("anatomy")
    token_steps = sorted(digests)
    if not token_steps:
        return None, None, None, None, "no token-level detail"
    table = run.reader.table
    rollout_of = dict(zip(table.steps.tolist(), table.rollouts.tolist()))
    opens = set(table.rollout_starts().tolist())
    if requested is not None:
        if requested not in digests:
            return None, None, None, None, f"step {requested} has no token-level detail"
        candidates = [requested]
    else:
        candidates = token_steps
    fallback_both = fallback_mixed = None
    for step in candidates:
        mixed, all_correct = digests[step].mixed, digests[step].all_correct
        if mixed and all_correct and step in opens:
            for g in mixed:
                later = _detailed_later(digests, rollout_of, step, g)
                if later is not None:
                    return step, g, all_correct[0], later, "opens a rollout; mixed and all-correct groups; followed later"
            if fallback_both is None:
                fallback_both = (step, mixed[0], all_correct[0], None, "opens a rollout; mixed and all-correct groups")
        elif mixed and all_correct and fallback_both is None:
            later = _detailed_later(digests, rollout_of, step, mixed[0])
            fallback_both = (step, mixed[0], all_correct[0], later, "mixed and all-correct groups")
        elif mixed and fallback_mixed is None:
            later = _detailed_later(digests, rollout_of, step, mixed[0])
            fallback_mixed = (step, mixed[0], None, later, "a mixed group only")
    if fallback_both:
        return fallback_both
    if fallback_mixed:
        return fallback_mixed
    return candidates[0], None, None, None, "no mixed group in any logged update"


#: Kept while the run's reader is the same (a new reader when the run's files change).
_PICKS: Cache[AnatomyPick | None] = Cache(16)


def get_pick(run: Run, step: int | None = None) -> AnatomyPick | None:
    """The update the anatomy page walks through, read in full (the same pick for every beat)."""
    return _PICKS.get((str(run.path), step), run.reader, lambda: _make_pick(run, step))


def _make_pick(run: Run, step: int | None) -> AnatomyPick | None:
    chosen, mixed_i, correct_i, later, reason = choose_step(run, step)
    pick = None
    if chosen is not None:
        detail = run.reader.detail(chosen)
        table = run.reader.table
        index = int(np.searchsorted(table.steps, chosen))
        by_index = {p.index: p for p in detail.prompts if not p.filtered}
        pick = AnatomyPick(run=run, step=chosen, detail=detail, metrics=table.metrics_at(chosen),
                           first_in_rollout=bool(table.first_in_rollout[index]) if index < table.n else False,
                           mixed=by_index.get(mixed_i) if mixed_i is not None else None,
                           all_correct=by_index.get(correct_i) if correct_i is not None else None,
                           reason=reason, requested=step)
        if later is not None and pick.mixed is not None:
            later_detail = run.reader.detail(later)
            pick.later_step = later
            pick.later_group = next((p for p in later_detail.prompts if p.index == pick.mixed.index
                                     and not p.filtered), None)
            pick.updates_between = later - chosen
    return pick


# -- the arithmetic of the group advantage (the registry's worked example) ---

@dataclass(frozen=True)
class GroupArithmetic:
    kind: str
    rewards: list[float]
    mean: float
    advantages: list[float]  # recomputed
    logged: list[float | None]
    lines: list[str]  # the registry's worked example, as display TeX

    @property
    def matches(self) -> bool:
        return all(lg is None or abs(a - lg) <= 1e-4 * max(1.0, abs(lg)) for a, lg in zip(self.advantages, self.logged))


def group_arithmetic(config, group: PromptGroup) -> GroupArithmetic | None:
    """A group-baseline advantage recomputed from the group's rewards, with its worked example;
    None for an advantage that is not computed from the group alone."""
    if config is None:
        return None
    kind = config.component("advantage")
    if not kind.group_baseline or kind.worked is None:
        return None
    params = config.components["advantage"].params
    rewards = np.asarray([[r.reward for r in group.responses]], dtype=np.float64)
    advantages = np.asarray(kind.apply(rewards, params))[0].tolist()
    values = rewards[0].tolist()
    return GroupArithmetic(kind.name, values, float(rewards.mean()), advantages,
                           [r.advantage for r in group.responses], kind.worked(values, advantages, params))


# -- the token objective of one token and its weight --------------------------

def chosen_token(group: PromptGroup) -> tuple[Response, int] | None:
    """The token of the group's first right answer with a non-zero advantage (else of its first
    wrong one) that the policy was least sure of when sampling: the most instructive one."""
    for positive in (True, False):
        for r in group.responses:
            if r.tokens is None or not any(r.tokens.mask):
                continue
            adv = r.advantage if r.advantage is not None else r.tokens.advantage[0]
            if adv != 0 and (adv > 0) == positive:
                real = [t for t, m in enumerate(r.tokens.mask) if m]
                return r, min(real, key=lambda t: r.tokens.old_logp[t])
    return None


def token_objective_tex(config, response: Response, t: int) -> list[str]:
    """The token's objective as short display lines (they must fit a phone): the ratio from the
    log-probabilities, the clipped surrogate, the KL term; each line the registry's worked example."""
    tok = response.tokens
    rho, adv = tok.ratio[t], tok.advantage[t]
    ratio_kind = config.component("ratio") if config is not None else REGISTRY["ratio"]["token"]
    clip_kind = config.component("clip") if config is not None else REGISTRY["clip"]["none"]
    clip_params = config.components["clip"].params if config is not None else {}
    lines = [ratio_kind.worked(tok.logp[t], tok.old_logp[t], rho)]
    clip_line, surrogate = clip_kind.worked(rho, adv, clip_kind.bounds(clip_params), clip_params)
    lines.append(clip_line)
    kl_kind = config.component("kl") if config is not None else None
    if kl_kind is not None and kl_kind.kl_place == "loss" and kl_kind.worked is not None and tok.kl is not None:
        lines.append(kl_kind.worked(surrogate, config.param("kl", "beta"), tok.kl[t], tok.objective[t]))
    else:
        lines.append(r"\ell=" + tex_num(tok.objective[t], 5))
    return lines


def weight_tex(config, detail: StepDetail, response: Response, t: int) -> str:
    """The token's weight in the step objective, with the aggregation's worked example."""
    w = response.tokens.weight[t]
    kind = config.component("aggregation") if config is not None else None
    if kind is None or kind.worked is None:
        return "w=" + tex_num(w)
    return kind.worked(w, sum(g.size for g in detail.groups), response.length, config.components["aggregation"].params)


# -- log-probability movement between two updates of the same rollout ---------

@dataclass(frozen=True)
class Movement:
    index: int
    correct: bool | None
    advantage: float
    mean_delta: float  # mean over tokens of logp(later) - logp(now)
    frac_up: float  # fraction of tokens whose log-prob rose


def movements(now: PromptGroup, later: PromptGroup) -> list[Movement]:
    out = []
    later_by_index = {r.index: r for r in later.responses}
    for r in now.responses:
        other = later_by_index.get(r.index)
        if r.tokens is None or other is None or other.tokens is None or len(other.tokens.logp) != len(r.tokens.logp):
            continue
        mask = np.asarray(r.tokens.mask, dtype=bool)
        delta = (np.asarray(other.tokens.logp) - np.asarray(r.tokens.logp))[mask]
        if len(delta) == 0:
            continue
        adv = r.advantage if r.advantage is not None else float(np.mean(np.asarray(r.tokens.advantage)[mask]))
        out.append(Movement(r.index, r.correct, float(adv), float(delta.mean()), float((delta > 0).mean())))
    return out
