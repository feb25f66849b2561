"""Facts for the chapter on the sampler and the learner (``sampler.py`` holds its macros):

- what a rollout correction does to the tokens of one update: the tokens whose weight
  pi_old / pi_sampler leaves the bounds of the run's correction, counted with the objective's own
  rule (``objective.correction_weight``), and the update where it acts on the most tokens;
- the correction's bounds as its spec sets them;
- what a correction tested on whole responses (``level: sequence``) did to the answers of one update.

Two sets of runs are compared seed by seed (``judging.paired_words``) and across seeds (``effects.compare``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from unipo_build.core import registry
from unipo_build.core.numbers import fmt_num, fmt_pct
from unipo_build.core.objective import correction_weight
from unipo_build.core.runs import Run
from unipo_build.site.context import Site


def correction_bounds_text(site: Site, algorithm: str) -> str:
    """'a cap of 2 and no lower bound' (truncated IS) or 'the band [0.5, 2]' (masked IS), from the spec: the kind's
    own words (its registry entry's ``words["bounds"]``), else the band its parameters set."""
    spec = site.spec(algorithm, "sampler_correction_bounds")
    comp = spec.components.get("correction")
    if comp is None or registry.kind("correction", comp.kind).is_none:
        return f"no correction ({algorithm} has none)"
    cap, lower = comp.params.get("cap"), comp.params.get("lower")
    words = registry.kind("correction", comp.kind).words
    if "bounds" in words:
        return words["bounds"](dict(comp.params))
    low_text = fmt_num(lower, 3) if lower is not None else "0"
    high_text = fmt_num(cap, 3) if cap is not None else "∞"
    return f"the band [{low_text}, {high_text}]"


@dataclass(frozen=True)
class TokenCount:
    step: int
    rollout: int
    tokens: int  # tokens in the objective (mask 1) with a sampler log-prob
    above: int  # weight above the cap
    below: int  # weight below the lower bound
    low: float  # smallest and largest pi_old / pi_sampler
    high: float


def correction_of(run: Run) -> tuple[str, dict] | None:
    """The run's correction kind and parameters, None without one."""
    comp = run.config.components.get("correction") if run.config is not None else None
    if comp is None or registry.kind("correction", comp.kind).is_none:
        return None
    return comp.kind, dict(comp.params)


def response_sides(run: Run, detail):
    """Each response of a token file with the sampler's log-probs: the log of each of its tokens' behaviour ratio and
    the side of the correction's bounds each token falls on (the objective's own rule, ``objective.correction_weight``:
    per token, or the response's at the sequence level), both over the tokens in the objective."""
    for group in detail.prompts:
        for response in group.responses:
            t = response.tokens
            if t is None or t.sample_logp is None:
                continue
            old = np.array([t.old_logp], dtype=np.float64)
            sample = np.array([t.sample_logp], dtype=np.float64)
            mask = np.array([t.mask], dtype=np.float64)
            _, side = correction_weight(run.config, old, sample, mask)
            kept = mask[0] > 0
            yield (old[0] - sample[0])[kept], side[0][kept]


def token_counts(run: Run, step: int) -> TokenCount:
    """Count the tokens of one update's token file whose weight leaves the correction's bounds."""
    detail = run.reader.detail(step)
    tokens = above = below = 0
    low, high = math.inf, -math.inf
    for log_ratio, side in response_sides(run, detail):
        ratio = np.exp(log_ratio)
        tokens += len(ratio)
        above += int((side > 0).sum())
        below += int((side < 0).sum())
        if len(ratio):
            low, high = min(low, float(ratio.min())), max(high, float(ratio.max()))
    return TokenCount(step, detail.rollout, tokens, above, below, low, high)


def detail_step(run: Run) -> int | None:
    """The update with a token file where the correction acts on the most tokens (the earliest on a tie)."""
    counts = [token_counts(run, s) for s in run.token_steps()]
    counts = [c for c in counts if c.tokens]
    if not counts:
        return None
    return max(counts, key=lambda c: (c.above + c.below, -c.step)).step


def token_words_text(site: Site, name: str, step: int | None = None) -> str:
    run = site.run(name)
    if run is None:
        return f"This build has no run named {name}, so what its correction did to the tokens cannot be shown."
    found = correction_of(run)
    if found is None:
        return f"The {run.id} run has no rollout correction: every token keeps its surrogate unweighted."
    kind, params = found
    step = detail_step(run) if step is None else step
    if step is None or step not in run.token_steps():
        return (f"The {run.id} run logged no token file with the sampler's log-probs"
                + ("" if step is None else f" at update {step}") + ", so what its correction did cannot be shown.")
    c = token_counts(run, step)
    if c.tokens == 0:
        return f"Update {step} of the {run.id} run holds no tokens with the sampler's log-probs."
    head = (f"At update {fmt_num(step)} (rollout {fmt_num(c.rollout)}) of the {run.id} run, the behaviour ratio \u03f1 "
            f"(the learner's probability of a token over the sampler's) of the {fmt_num(c.tokens)} tokens the Step "
            f"Inspector holds runs from {fmt_num(c.low, 3)} to {fmt_num(c.high, 3)}.")
    words = registry.kind("correction", kind).words
    if "tokens" in words:  # the kind's own words (core/kinds_correction.py)
        return head + words["tokens"](c, params)
    return head + f" {fmt_num(c.above + c.below)} of them leave the bounds of its {kind} correction."


def response_words_text(site: Site, name: str, step: int | None = None) -> str:
    """What a correction tested on whole responses (``level: sequence``) did at one update: the range of the
    responses' ratios (the product of their token ratios) and the responses, and their tokens, it dropped."""
    run = site.run(name)
    if run is None:
        return f"This build has no run named {name}, so what its correction did to its answers cannot be shown."
    comp = run.config.components.get("correction") if run.config is not None else None
    if comp is None or comp.params.get("level") != "sequence":
        return f"The {run.id} run has no correction tested on whole responses."
    step = detail_step(run) if step is None else step
    if step is None or step not in run.token_steps():
        return f"The {run.id} run logged no token file with the sampler's log-probs, so what its correction did cannot be shown."
    detail = run.reader.detail(step)
    ratios, dropped, dropped_tokens, above = [], 0, 0, 0
    for log_ratio, side in response_sides(run, detail):
        ratios.append(float(np.exp(log_ratio.sum())))
        if (side != 0).any():
            dropped += 1
            dropped_tokens += len(side)
            above += int((side > 0).any())
    if not ratios:
        return f"Update {step} of the {run.id} run holds no response with the sampler's log-probs."
    band = correction_bounds_text(site, run.header.algorithm)
    head = (f"At update {fmt_num(step)} (rollout {fmt_num(detail.rollout)}) of the {run.id} run, the ratio of a whole "
            f"response (the product of its token ratios) runs from {fmt_num(min(ratios), 3)} to "
            f"{fmt_num(max(ratios), 3)} over the {fmt_num(len(ratios))} answers the Step Inspector holds.")
    if dropped == 0:
        return head + f" None of them leaves {band}, so the test drops no answer at this update."
    return head + (f" {fmt_num(dropped)} of them ({fmt_pct(dropped / len(ratios), 1)}) "
                   f"{'falls' if dropped == 1 else 'fall'} outside {band} ({fmt_num(above)} above, "
                   f"{fmt_num(dropped - above)} below): {'it leaves' if dropped == 1 else 'they leave'} the update "
                   f"whole, {'its' if dropped == 1 else 'their'} {fmt_num(dropped_tokens)} tokens weighted 0, and every "
                   "token of a kept answer weighs its answer's ratio.")
