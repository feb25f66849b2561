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

Each token file contributes its candidates in the run reader's one pass over the token files
(a ``reader.token_digest``); the steps come from its one parse of steps.jsonl.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from .reader import reader_for, token_digest
from .schema import StepDetail

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


@token_digest("moments")
def step_candidates(detail: StepDetail) -> dict[str, Moment | None]:
    """One step's best candidate for each token-file moment (the first group, the furthest clip,
    the longest wrong answer)."""
    found: dict[str, Moment | None] = {}
    clip_scores: dict[int, float] = {}
    for group in detail.prompts:
        for name, holds in GROUP_MOMENTS.items():
            if name not in found and holds(group):
                found[name] = Moment(name, detail.step, group.index)
        trained = _trained(group)
        for response in group.responses:
            longest = found.get("longest_wrong")
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
    return found


def _combine(per_step: dict[int, dict[str, Moment | None]]) -> dict[str, Moment | None]:
    found: dict[str, Moment | None] = {name: None for name in MOMENT_NAMES}
    for step in sorted(per_step):
        for name, moment in per_step[step].items():
            best = found[name]
            if best is None:
                found[name] = moment
            elif name == "longest_wrong" and moment.value > best.value:
                found[name] = moment
            elif name in CLIP_MOMENTS.values():
                side = 1 if name == "clipped_high" else -1
                if side * moment.value > side * best.value:
                    found[name] = moment
    return found


def max_kl_step(run_dir: Path) -> Moment | None:
    """The step with the largest mean KL to the reference (runs with a KL metric only)."""
    steps, kl = reader_for(run_dir).table.series("kl/mean")
    if len(kl) == 0:
        return None
    i = int(np.argmax(kl))
    return Moment("max_kl_step", int(steps[i]), value=float(kl[i]))


def find_moments(run_dir: str | Path) -> dict[str, Moment | None]:
    """All moments of a run, from its cached reader (each file parsed once per build)."""
    reader = reader_for(run_dir)
    found = _combine(reader.digest("moments"))
    found["max_kl_step"] = max_kl_step(Path(run_dir))
    return found


def find_moment(run_dir: str | Path, name: str) -> Moment | None:
    if name not in MOMENT_NAMES:
        raise KeyError(f"unknown moment {name!r} (known: {', '.join(MOMENT_NAMES)})")
    return find_moments(run_dir)[name]
