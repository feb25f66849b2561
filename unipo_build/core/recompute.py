"""Recompute logged token objectives with the site's numpy math.

The trainer logs, for each token, the inputs of its objective (logp, old_logp, ref_logp,
advantage, the rollout KL when the KL sits in the reward) and the outputs (ratio, clip
side, objective, aggregation weight). Feeding the inputs back through
unipo_build.core.objective on numpy must give the outputs: that is the consistency check,
and the Algorithm Explainer shows exactly these recomputed terms for a selected token.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from unipo_build.core import objective as O
from unipo_build.core.schema import StepDetail, TokenArrays
from unipo_build.core.specs import ResolvedAlgorithm


@dataclass
class TokenBreakdown:
    """Every term of one response's per-token objective, as numpy arrays of length n."""

    ratio: np.ndarray
    surrogate: np.ndarray
    clip_side: np.ndarray
    kl: np.ndarray | None
    objective: np.ndarray
    eps_low: float | None
    eps_high: float | None
    correction: np.ndarray | None = None  # the rollout correction's weight (None: no correction)
    correction_side: np.ndarray | None = None


def _row(values) -> np.ndarray:
    return np.asarray(values, dtype=np.float64)[None, :]


def breakdown(cfg: ResolvedAlgorithm, tokens: TokenArrays) -> TokenBreakdown:
    """The objective's terms for one logged response, recomputed from its logged inputs."""
    mask = _row(tokens.mask)
    kl_in_reward = O.kl_in_reward(cfg)
    terms = O.token_terms(
        cfg, logp=_row(tokens.logp), old_logp=_row(tokens.old_logp), advantages=_row(tokens.advantage), mask=mask,
        ref_logp=_row(tokens.ref_logp) if tokens.ref_logp is not None else None,
        rollout_kl=_row(tokens.kl) if (kl_in_reward and tokens.kl is not None) else None,
        sampler_logp=_row(tokens.sample_logp) if tokens.sample_logp is not None else None)
    eps_low, eps_high = O.clip_bounds(cfg)
    return TokenBreakdown(ratio=terms.ratio[0], surrogate=terms.surrogate[0], clip_side=terms.clip_side[0],
                          kl=None if terms.kl is None else np.asarray(terms.kl)[0], objective=terms.objective[0],
                          eps_low=eps_low, eps_high=eps_high,
                          correction=None if terms.correction is None else np.asarray(terms.correction)[0],
                          correction_side=None if terms.correction_side is None else np.asarray(terms.correction_side)[0])


def sampler_logp_problems(cfg: ResolvedAlgorithm, detail: StepDetail) -> list[tuple[str, str]]:
    """``(where, message)`` of each logged response whose token arrays lack the sampler's log-probs that the
    run's rollout correction weighs by (none without a correction): such a run cannot be recomputed, and its
    numbers are never invented."""
    if not O.uses_sampler_logp(cfg):
        return []
    name = cfg.kind("correction")
    return [(f"prompt {p} (group {group.index}), response {response.index}",
             f"missing: the run's rollout correction ({name}) weighs each token by exp(old_logp - sample_logp), "
             "and this response logged no sampler log-probs")
            for p, group in enumerate(detail.prompts) if not group.filtered
            for response in group.responses if response.tokens is not None and response.tokens.sample_logp is None]


def _close(a, b, rtol: float, atol: float) -> bool:
    return bool(np.allclose(np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64), rtol=rtol, atol=atol))


def _sum_close(logged: float, terms, rtol: float, atol: float) -> tuple[bool, float]:
    """Whether a logged sum equals the sum of ``terms``, to rtol of the terms' magnitudes.

    Sums like a group's contribution cancel (advantages add up to zero), so the tolerance
    must scale with the size of what was summed, not with the (tiny) result.
    """
    terms = np.asarray(terms, dtype=np.float64)
    total = float(terms.sum())
    return abs(logged - total) <= rtol * float(np.abs(terms).sum()) + atol, total


def check_step(cfg: ResolvedAlgorithm, detail: StepDetail, *, rtol: float = 1e-5, atol: float = 1e-6) -> list[str]:
    """Every disagreement between a step's logged values and their recomputation.

    Checks, for each response with token detail: ratio, clip side and objective per token;
    the response's contribution = sum w * objective; the group's contribution = sum of its
    responses'; and the step objective = sum of every group's contribution. For an aggregation
    whose weight is fixed by counts (the registry's ``weights_from_counts``: the number of
    responses, the response's own length, a constant) the weights themselves are recomputed from
    the step's group sizes; one whose tokens all weigh the same (``uniform_weights``) is checked
    for that. Under a filter that masks truncated responses out of the loss (``response_keep``), a
    truncated response's weights must be 0, and the others are checked as above.
    """
    problems = []
    n_responses = sum(g.size for g in detail.groups)
    # a filter that masks truncated responses: their tokens weigh 0, and N still counts them (specs refuses a
    # normaliser by counts that would not)
    masking = O.masks_responses(cfg)
    aggregation = cfg.component("aggregation")
    agg_params = cfg.components["aggregation"].params
    where_step = f"step {detail.step}"
    for p, group in enumerate(detail.prompts):
        if group.filtered:
            continue
        group_terms: list[float] = []
        for response in group.responses:
            where = f"{where_step}, prompt {p} (group {group.index}), response {response.index}"
            tokens = response.tokens
            if tokens is None:
                problems.append(f"{where}: no token arrays")
                continue
            if O.uses_sampler_logp(cfg) and tokens.sample_logp is None:
                problems.append(f"{where}: tokens.sample_logp: missing (the run's rollout correction "
                                f"{cfg.kind('correction')} needs the sampler's log-probs)")
                continue
            b = breakdown(cfg, tokens)
            for name, logged, recomputed in (("ratio", tokens.ratio, b.ratio), ("objective", tokens.objective, b.objective)):
                if not _close(logged, recomputed, rtol, atol):
                    worst = int(np.argmax(np.abs(np.asarray(logged) - recomputed)))
                    problems.append(f"{where}: tokens.{name}[{worst}] logged {logged[worst]!r}, recomputed {recomputed[worst]!r}")
            if list(tokens.clip) != [int(x) for x in b.clip_side]:
                problems.append(f"{where}: tokens.clip differs from the recomputed clip sides")
            length = int(sum(tokens.mask))
            masked = masking and response.truncated
            if masked and any(w != 0 for w, m in zip(tokens.weight, tokens.mask) if m):
                problems.append(f"{where}: tokens.weight: the response was truncated and the filter "
                                f"{cfg.kind('filter')} masks it out of the loss, so every weight is 0")
            if aggregation.weights_from_counts and length and not masked:
                # N responses: this one and N - 1 others whose lengths do not enter its weight
                mask = np.zeros((n_responses, length))
                mask[0, :] = 1.0
                mask[1:, 0] = 1.0
                expected_w = float(aggregation.apply(mask, agg_params)[0, 0])
                if not _close([w for w, m in zip(tokens.weight, tokens.mask) if m], expected_w, rtol, 0.0):
                    problems.append(f"{where}: tokens.weight is not the {aggregation.name} weight {expected_w!r} "
                                    f"(N = {n_responses}, |o_i| = {length})")
            products = np.asarray(tokens.weight, dtype=np.float64) * np.asarray(tokens.objective, dtype=np.float64)
            group_terms.extend(products.tolist())
            if response.contribution is not None:
                ok, contribution = _sum_close(response.contribution, products, rtol, 1e-12)
                if not ok:
                    problems.append(f"{where}: contribution logged {response.contribution!r}, sum of weight x objective {contribution!r}")
        if group.contribution is not None:
            ok, total = _sum_close(group.contribution, group_terms, rtol, 1e-12)
            if not ok:
                problems.append(f"{where_step}, prompt {p}: group contribution logged {group.contribution!r}, recomputed {total!r}")
    if aggregation.uniform_weights:
        weights = {w for g in detail.prompts if not g.filtered for r in g.responses
                   if r.tokens and not (masking and r.truncated)
                   for w, m in zip(r.tokens.weight, r.tokens.mask) if m}
        if weights and not _close(min(weights), max(weights), rtol, 0.0):
            problems.append(f"{where_step}: {aggregation.name} weights differ between tokens")
    ok, summed = _sum_close(detail.objective, [g.contribution for g in detail.groups], rtol, atol)
    if not ok:
        problems.append(f"{where_step}: objective logged {detail.objective!r}, sum of group contributions {summed!r}")
    return problems
