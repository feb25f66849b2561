"""A run in a few numbers: what ``unipo summary`` prints and the chapters quote.

Computed from the run's one reader (``unipo_build.reader``): steps.jsonl is parsed once, into
columns, however many facts a build quotes.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from pydantic import ValidationError

from .heldout import compare, start_and_end
from .moments import find_moments
from .reader import reader_for
from .schema import MemorisationCheck


def memorisation_check(reader, start) -> tuple[MemorisationCheck | None, str | None]:
    """The run's memorisation check and where it comes from: the header's (``"header"``), or for a run
    logged before the header held it, rollout 0's ``sampled/accuracy`` (every response it sampled) and
    the start evaluation (``"logs"``: responses = ``sampled/tokens`` / ``sampled/length``)."""
    if reader.header.memorisation_check is not None:
        return reader.header.memorisation_check, "header"
    table = reader.table
    if not table.n or start is None or start.accuracy_sampled is None or table.rollouts[0] != 0:
        return None, None
    first = table.metrics_at(int(table.steps[0]))
    if first.get("sampled/accuracy") is None or not first.get("sampled/length"):
        return None, None
    responses = round(first["sampled/tokens"] / first["sampled/length"]) if first.get("sampled/tokens") else None
    if not responses or responses < 1:
        return None, None
    try:
        return MemorisationCheck(train_reward=first["sampled/accuracy"], train_responses=responses,
                                 heldout_sampled=start.accuracy_sampled, heldout_n=start.n), "logs"
    except ValidationError:  # figures no check can hold (a log at its bounds): no check, not a failed page
        return None, None


def summarize(run_dir: str | Path, *, with_moments: bool = True) -> dict:
    reader = reader_for(run_dir)
    header, table = reader.header, reader.table
    _, rewards = table.series("reward/mean")
    _, wall = table.series("time/wall_s")
    k = max(1, len(rewards) // 10)
    start, end = start_and_end(reader.evals)
    changes = {mode: compare(start, end, mode) if start and end else None for mode in ("greedy", "sampled")}
    check, source = memorisation_check(reader, start)
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
        # within 5 points (schema.MemorisationCheck), with its source (memorisation_check above).
        "memorisation_check": ({**check.as_dict(), "source": source} if check else None),
    }
    if with_moments:
        out["moments"] = {name: (m.as_dict() if m else None) for name, m in find_moments(run_dir).items()}
    return out
