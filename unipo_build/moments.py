"""Teaching moments, found in a run's logs by code, never by hard-coded step numbers.

A Moment says where it is (step, group, response, token) or is None when the run lacks
it, so chapters can show a note instead of failing when a reader rebuilds with other logs.
The moments, in the order of their definitions below:

- all_correct_group / all_wrong_group: the first trained group (by step) whose responses
  are all right / all wrong; every advantage in it is zero.
- filtered_group: the first group the sampling filter dropped (DAPO's dynamic sampling).
- clipped_high / clipped_low: over the whole run, the clipped token whose ratio went
  furthest past its bound.
- longest_wrong: the longest wrong response among the trained groups.
- max_kl_step: the step with the largest mean KL to the reference (steps.jsonl).

All are found in one pass over the token files and one over the steps, once per run.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

from . import runlog

MOMENT_NAMES = ("all_correct_group", "all_wrong_group", "clipped_high", "clipped_low", "longest_wrong",
                "max_kl_step", "filtered_group")


@dataclass(frozen=True)
class Moment:
    name: str
    step: int
    group: int | None = None  # PromptGroup.index
    response: int | None = None  # Response.index within the group
    token: int | None = None  # token position within the response
    value: float | None = None  # the quantity that made it the moment (a ratio, a length, a KL)

    def as_dict(self) -> dict:
        return asdict(self)


def _trained(group) -> bool:
    return not group.filtered and all(r.tokens is not None for r in group.responses)


# The group-level moments: the first group (by step) whose predicate holds.
GROUP_MOMENTS = {
    "all_correct_group": lambda g: _trained(g) and all(r.correct for r in g.responses),
    "all_wrong_group": lambda g: _trained(g) and all(r.correct is False for r in g.responses),
    "filtered_group": lambda g: g.filtered,
}
CLIP_MOMENTS = {1: "clipped_high", -1: "clipped_low"}


def max_kl_step(run_dir: Path) -> Moment | None:
    """The step with the largest mean KL to the reference (runs with a KL metric only)."""
    best = None
    for record in runlog.iter_steps(run_dir):
        kl = record.metrics.get("kl/mean")
        if kl is not None and (best is None or kl > best.value):
            best = Moment("max_kl_step", record.step, value=kl)
    return best


def _scan(run_dir: Path) -> dict[str, Moment | None]:
    found: dict[str, Moment | None] = {name: None for name in MOMENT_NAMES}
    clip_scores: dict[int, float] = {}
    for step in runlog.token_steps(run_dir):
        detail = runlog.read_step_detail(run_dir, step)
        for group in detail.prompts:
            for name, holds in GROUP_MOMENTS.items():
                if found[name] is None and holds(group):
                    found[name] = Moment(name, detail.step, group.index)
            trained = _trained(group)
            for response in group.responses:
                longest = found["longest_wrong"]
                if trained and response.correct is False and (longest is None or response.length > longest.value):
                    found["longest_wrong"] = Moment("longest_wrong", detail.step, group.index, response.index, None,
                                                    float(response.length))
                if response.tokens is None:
                    continue
                for t, (side, ratio) in enumerate(zip(response.tokens.clip, response.tokens.ratio)):
                    if side == 0:
                        continue
                    score = ratio if side > 0 else -ratio  # how far past the bound, either side
                    if side not in clip_scores or score > clip_scores[side]:
                        clip_scores[side] = score
                        found[CLIP_MOMENTS[side]] = Moment(CLIP_MOMENTS[side], detail.step, group.index,
                                                           response.index, t, ratio)
    found["max_kl_step"] = max_kl_step(run_dir)
    return found


_CACHE: dict[tuple[str, float, int], dict[str, Moment | None]] = {}


def find_moments(run_dir: str | Path) -> dict[str, Moment | None]:
    """All moments of a run, computed once per run (cached on the run's files' state)."""
    run_dir = Path(run_dir)
    steps = run_dir / runlog.STEPS
    key = (str(run_dir.resolve()), steps.stat().st_mtime if steps.exists() else 0.0,
           len(runlog.token_steps(run_dir)))
    if key not in _CACHE:
        _CACHE[key] = _scan(run_dir)
    return dict(_CACHE[key])


def find_moment(run_dir: str | Path, name: str) -> Moment | None:
    if name not in MOMENT_NAMES:
        raise KeyError(f"unknown moment {name!r} (known: {', '.join(MOMENT_NAMES)})")
    return find_moments(run_dir)[name]
