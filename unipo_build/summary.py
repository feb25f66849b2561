"""A run in a few numbers: what ``unipo summary`` prints and the chapters quote.

Streams steps.jsonl once; memory does not grow with the number of steps beyond one
float per step of the reward series.
"""

from __future__ import annotations

from pathlib import Path

from . import runlog
from .heldout import compare, start_and_end
from .moments import find_moments


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def summarize(run_dir: str | Path, *, with_moments: bool = True) -> dict:
    run_dir = Path(run_dir)
    header = runlog.read_header(run_dir)
    rewards: list[float] = []
    steps = 0
    rollouts = set()
    last_wall = None
    for record in runlog.iter_steps(run_dir):
        steps += 1
        rollouts.add(record.rollout)
        if record.metrics.get("reward/mean") is not None:
            rewards.append(record.metrics["reward/mean"])
        if record.metrics.get("time/wall_s") is not None:
            last_wall = record.metrics["time/wall_s"]
    k = max(1, len(rewards) // 10)
    evals = list(runlog.iter_evals(run_dir))
    start, end = start_and_end(evals)
    changes = {mode: compare(start, end, mode) if start and end else None for mode in ("greedy", "sampled")}
    out = {
        "run_id": header.run_id,
        "algorithm": header.algorithm,
        "steps": steps,
        "rollouts": len(rollouts),
        "reward_mean_first_10pct": _mean(rewards[:k]),
        "reward_mean_last_10pct": _mean(rewards[-k:]),
        "eval_start": start.model_dump() if start else None,
        "eval_end": end.model_dump() if end else None,
        "heldout_change": {mode: c.as_dict() if c else None for mode, c in changes.items()},
        "wall_time_s": last_wall,
        "preset": header.preset,
        "seed": header.seed,
        "length_probe": header.length_probe.model_dump() if header.length_probe else None,
    }
    if with_moments:
        out["moments"] = {name: (m.as_dict() if m else None) for name, m in find_moments(run_dir).items()}
    return out
