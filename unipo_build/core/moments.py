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
- ratio_max / ratio_min: over the whole run, the trained token whose importance ratio was largest /
  smallest, clipped or not (the clip does not bound the ratio).
- mixed_group: the first trained group with both right and wrong answers.
- shared_prefix_group: the trained group whose shared opening tokens (the prefix every answer of
  the group begins with) got the largest net push, relative to the pushes on them
  (:func:`shared_prefix_push`): zero with centred advantages and equal weights, not under 1/|o_i|.

Each token file contributes its candidates in the run reader's one pass over the token files
(a ``reader.token_digest``); the steps come from its one parse of steps.jsonl.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from unipo_build.core.reader import reader_for, token_digest
from unipo_build.core.schema import StepDetail

MOMENT_NAMES = ("all_correct_group", "all_wrong_group", "clipped_high", "clipped_low", "longest_wrong",
                "max_kl_step", "filtered_group", "ratio_max", "ratio_min", "mixed_group", "shared_prefix_group")


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
    "mixed_group": lambda g: (_trained(g) and any(r.correct for r in g.responses)
                              and any(r.correct is False for r in g.responses)),
}
CLIP_MOMENTS = {1: "clipped_high", -1: "clipped_low"}
#: Moments that keep the largest value over the run (the others keep the first found, or as noted).
LARGEST = {"longest_wrong": 1, "clipped_high": 1, "clipped_low": -1, "ratio_max": 1, "ratio_min": -1,
           "shared_prefix_group": 1}
#: A shared prefix whose pushes are this small is rounding noise (float32 logs), not a push.
PUSH_FLOOR = 1e-9


@dataclass(frozen=True)
class PrefixPush:
    """The push on the tokens every answer of a group begins with (the same token in the same
    context in each answer, so their gradients point the same way): at ratio 1 each answer pushes
    token t by w_{i,t} A_{i,t}, and the tokens get the sum over answers."""

    length: int  # tokens in the shared prefix
    net: float  # sum over prefix positions and answers of w * A
    total: float  # sum of |w * A|: the pushes before they cancel

    @property
    def share(self) -> float:
        """|net| as a share of the pushes it sums (0: they cancel exactly)."""
        return abs(self.net) / self.total if self.total > PUSH_FLOOR else 0.0


def shared_prefix_push(group) -> PrefixPush | None:
    """The net push on a trained group's shared prefix; None without one (or without tokens)."""
    if not _trained(group) or len(group.responses) < 2:
        return None
    arrays = [r.tokens for r in group.responses]
    length = min(len(a.ids) for a in arrays)
    n = 0
    while n < length and all(a.ids[n] == arrays[0].ids[n] and a.mask[n] for a in arrays):
        n += 1
    if n == 0:
        return None
    pushes = np.array([[a.weight[t] * a.advantage[t] for t in range(n)] for a in arrays])
    return PrefixPush(n, float(pushes.sum()), float(np.abs(pushes).sum()))


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
            for t, (ratio, mask) in enumerate(zip(response.tokens.ratio, response.tokens.mask)):
                if not mask:
                    continue
                for name, sign in (("ratio_max", 1), ("ratio_min", -1)):
                    best = found.get(name)
                    if best is None or sign * ratio > sign * best.value:
                        found[name] = Moment(name, detail.step, group.index, response.index, t, ratio)
            for t, (side, ratio) in enumerate(zip(response.tokens.clip, response.tokens.ratio)):
                if side == 0:
                    continue
                score = ratio if side > 0 else -ratio  # how far past the bound, either side
                if side not in clip_scores or score > clip_scores[side]:
                    clip_scores[side] = score
                    found[CLIP_MOMENTS[side]] = Moment(CLIP_MOMENTS[side], detail.step, group.index,
                                                       response.index, t, ratio)
        push = shared_prefix_push(group)
        best = found.get("shared_prefix_group")
        if push is not None and push.total > PUSH_FLOOR and (best is None or push.share > best.value):
            found["shared_prefix_group"] = Moment("shared_prefix_group", detail.step, group.index, value=push.share)
    return found


def _combine(per_step: dict[int, dict[str, Moment | None]]) -> dict[str, Moment | None]:
    found: dict[str, Moment | None] = {name: None for name in MOMENT_NAMES}
    for step in sorted(per_step):
        for name, moment in per_step[step].items():
            best = found[name]
            if best is None:
                found[name] = moment
            elif name in LARGEST and LARGEST[name] * moment.value > LARGEST[name] * best.value:
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
