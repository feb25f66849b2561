"""What the diagnoses (``unipo_build.core.diagnose``) read off a run's log beyond one metric's series: the
ratio after each rollout's first update, the tokens whose ratio passed a bound, the sampler's log-probs and the
truncated answers' rewards in the token files (a few of them, spread over the run: a long run's token files are
many), and a quantity that each writer names its own way. Pure functions of a ``reader.RunReader``."""

from __future__ import annotations

import numpy as np

from unipo_build.core.numbers import fmt_num
from unipo_build.core.reader import RunReader

#: Token files a diagnosis reads at most (spread evenly over the run).
TOKEN_STEPS_READ = 16



def spread(steps: list[int], n: int = TOKEN_STEPS_READ) -> list[int]:
    """At most ``n`` of ``steps``, evenly spread (a long run's token files are many)."""
    if len(steps) <= n:
        return list(steps)
    return [steps[int(i)] for i in np.linspace(0, len(steps) - 1, n)]


def later_ratio(reader: RunReader) -> tuple[float, float, str] | None:
    """The smallest and largest ratio at the updates after each rollout's first (where the ratio can leave 1), and
    where they were read: the logged ratio/min and ratio/max, else the token files' ratios. None: neither."""
    table = reader.table
    later = ~table.first_in_rollout
    rmin, rmax = table.column("ratio/min")[later], table.column("ratio/max")[later]
    logged = ~np.isnan(rmin) & ~np.isnan(rmax)
    if logged.any():
        return (float(rmin[logged].min()), float(rmax[logged].max()),
                f"ratio/min and ratio/max of {fmt_num(int(logged.sum()))} later updates")
    first = {int(s): bool(f) for s, f in zip(table.steps, table.first_in_rollout)}
    steps = spread([s for s in reader.token_steps if not first.get(int(s), True)])
    seen: list[float] = []
    for step in steps:
        for prompt in reader.detail(step).prompts:
            for response in prompt.responses:
                t = response.tokens
                if t is not None and t.ratio is not None:
                    seen += [r for r, m in zip(t.ratio, t.mask or [1] * len(t.ratio)) if m]
    if not seen:
        return None
    return float(min(seen)), float(max(seen)), f"{fmt_num(len(seen))} token ratios of {len(steps)} later updates"


def ratios_above(reader: RunReader, bound: float) -> tuple[int, int, list[int]] | None:
    """How many tokens of the token files read (those in the objective: mask 1) have a ratio above ``bound``, of how
    many, and the steps where some do; None where no token file holds a token."""
    above = total = 0
    steps: list[int] = []
    for step in spread(list(reader.token_steps)):
        here = 0
        for prompt in reader.detail(step).prompts:
            for response in prompt.responses:
                t = response.tokens
                if t is None:
                    continue
                live = [r for r, m in zip(t.ratio, t.mask or [1] * len(t.ratio)) if m]
                total += len(live)
                here += sum(1 for r in live if r > bound)
        above += here
        if here:
            steps.append(int(step))
    return (above, total, steps) if total else None


def series_of(reader: RunReader, names: tuple[str, ...]) -> tuple[str, np.ndarray, np.ndarray] | None:
    """(name, steps, values) of the first of ``names`` the log holds (one quantity as the writers name it)."""
    for name in names:
        steps, values = reader.table.series(name)
        if len(values):
            return name, steps, values
    return None


def sampler_gaps(reader: RunReader) -> dict[int, np.ndarray]:
    """The learner's minus the sampler's log-prob of each sampled token (old_logp - sample_logp), by step, from the
    token files that hold the sampler's log-probs (at most :data:`TOKEN_STEPS_READ`, spread over the run)."""
    steps = spread(list(reader.token_steps))
    by_step: dict[int, list[float]] = {}
    for step in steps:
        for prompt in reader.detail(step).prompts:
            for response in prompt.responses:
                t = response.tokens
                sample = getattr(t, "sample_logp", None) if t is not None else None
                if sample is None:
                    continue
                mask = t.mask or [1] * len(t.ids)
                by_step.setdefault(step, []).extend(a - b for a, b, m in zip(t.old_logp, sample, mask) if m)
    return {s: np.asarray(g, dtype=np.float64) for s, g in by_step.items() if g}


def truncated_rewards(reader: RunReader) -> tuple[float, int, float, int] | None:
    """The mean reward of the truncated responses and of the finished ones in the token files read (and how many of
    each); None where no token file holds a truncated response."""
    cut: list[float] = []
    done: list[float] = []
    for step in spread(list(reader.token_steps)):
        for prompt in reader.detail(step).prompts:
            for response in prompt.responses:
                if response.reward is not None:
                    (cut if response.truncated else done).append(float(response.reward))
    if not cut:
        return None
    return float(np.mean(cut)), len(cut), float(np.mean(done)) if done else float("nan"), len(done)
