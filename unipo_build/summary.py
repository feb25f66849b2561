"""A run in a few numbers: what ``unipo summary`` prints and the chapters quote.

Computed from the run's one reader (``unipo_build.reader``): steps.jsonl is parsed once, into
columns, however many facts a build quotes.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .heldout import compare, start_and_end
from .moments import find_moments
from .reader import reader_for


def summarize(run_dir: str | Path, *, with_moments: bool = True) -> dict:
    reader = reader_for(run_dir)
    header, table = reader.header, reader.table
    _, rewards = table.series("reward/mean")
    _, wall = table.series("time/wall_s")
    k = max(1, len(rewards) // 10)
    start, end = start_and_end(reader.evals)
    changes = {mode: compare(start, end, mode) if start and end else None for mode in ("greedy", "sampled")}
    out = {
        "run_id": header.run_id,
        "algorithm": header.algorithm,
        "steps": table.n,
        "rollouts": table.n_rollouts,
        "reward_mean_first_10pct": float(np.mean(rewards[:k])) if len(rewards) else None,
        "reward_mean_last_10pct": float(np.mean(rewards[-k:])) if len(rewards) else None,
        "eval_start": start.model_dump() if start else None,
        "eval_end": end.model_dump() if end else None,
        "heldout_change": {mode: c.as_dict() if c else None for mode, c in changes.items()},
        # The header's, when the run recorded it (the whole run, final evaluation included); else the
        # last update's clock, all an imported or unfinished log has.
        "wall_time_s": header.wall_time_s if header.wall_time_s is not None else (float(wall[-1]) if len(wall) else None),
        "preset": header.preset,
        "seed": header.seed,
        "length_probe": header.length_probe.model_dump() if header.length_probe else None,
        # Rollout 0's training reward beside held-out sampled accuracy, and whether they agree
        # within 5 points (schema.MemorisationCheck); None for runs made before it was logged.
        "memorisation_check": header.memorisation_check.as_dict() if header.memorisation_check else None,
    }
    if with_moments:
        out["moments"] = {name: (m.as_dict() if m else None) for name, m in find_moments(run_dir).items()}
    return out
