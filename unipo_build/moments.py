"""Teaching moments, found in a run's logs by code, never by hard-coded step numbers.

Each finder streams the run (steps.jsonl once, token files one at a time) and returns a
Moment (where it is: step, group, response, token) or None when the run lacks it, so
chapters can show a note instead of failing when a reader rebuilds with other logs.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable, Iterator

from . import runlog
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


def _details(run_dir: Path) -> Iterator[StepDetail]:
    for step in runlog.token_steps(run_dir):
        yield runlog.read_step_detail(run_dir, step)


def _first_group(run_dir: Path, name: str, predicate: Callable) -> Moment | None:
    """The first logged group (by step) that satisfies ``predicate(group)``."""
    for detail in _details(run_dir):
        for group in detail.prompts:
            if predicate(group):
                return Moment(name, detail.step, group.index)
    return None


def _trained(group) -> bool:
    return not group.filtered and all(r.tokens is not None for r in group.responses)


def all_correct_group(run_dir: Path) -> Moment | None:
    """A trained group where every response is correct: every advantage is zero."""
    return _first_group(run_dir, "all_correct_group",
                        lambda g: _trained(g) and all(r.correct for r in g.responses))


def all_wrong_group(run_dir: Path) -> Moment | None:
    return _first_group(run_dir, "all_wrong_group",
                        lambda g: _trained(g) and all(r.correct is False for r in g.responses))


def filtered_group(run_dir: Path) -> Moment | None:
    """A group the sampling filter dropped (DAPO's dynamic sampling)."""
    return _first_group(run_dir, "filtered_group", lambda g: g.filtered)


def _extreme_clipped_token(run_dir: Path, name: str, side: int) -> Moment | None:
    """The clipped token whose ratio went furthest past the bound, over the whole run."""
    best = None
    for detail in _details(run_dir):
        for group in detail.prompts:
            for response in group.responses:
                tokens = response.tokens
                if tokens is None:
                    continue
                for t, (clip, ratio) in enumerate(zip(tokens.clip, tokens.ratio)):
                    if clip != side:
                        continue
                    score = ratio if side > 0 else -ratio
                    if best is None or score > best[0]:
                        best = (score, Moment(name, detail.step, group.index, response.index, t, ratio))
    return best[1] if best else None


def clipped_high(run_dir: Path) -> Moment | None:
    return _extreme_clipped_token(run_dir, "clipped_high", 1)


def clipped_low(run_dir: Path) -> Moment | None:
    return _extreme_clipped_token(run_dir, "clipped_low", -1)


def longest_wrong(run_dir: Path) -> Moment | None:
    """The longest wrong response among the trained groups with token detail."""
    best = None
    for detail in _details(run_dir):
        for group in detail.prompts:
            if not _trained(group):
                continue
            for response in group.responses:
                if response.correct is False and (best is None or response.length > best.value):
                    best = Moment("longest_wrong", detail.step, group.index, response.index, None, float(response.length))
    return best


def max_kl_step(run_dir: Path) -> Moment | None:
    """The step with the largest mean KL to the reference (runs with a KL metric only)."""
    best = None
    for record in runlog.iter_steps(run_dir):
        kl = record.metrics.get("kl/mean")
        if kl is not None and (best is None or kl > best.value):
            best = Moment("max_kl_step", record.step, value=kl)
    return best


FINDERS: dict[str, Callable[[Path], Moment | None]] = {
    "all_correct_group": all_correct_group,
    "all_wrong_group": all_wrong_group,
    "clipped_high": clipped_high,
    "clipped_low": clipped_low,
    "longest_wrong": longest_wrong,
    "max_kl_step": max_kl_step,
    "filtered_group": filtered_group,
}


def _scan(run_dir: Path) -> dict[str, Moment | None]:
    """Every moment in one pass over the token files and one over the steps.

    Gives the same answers as the single finders above (which stay as the readable
    definitions and are tested against this), reading each file once.
    """
    found: dict[str, Moment | None] = {name: None for name in FINDERS}
    best_clip = {1: None, -1: None}
    for detail in _details(run_dir):
        for group in detail.prompts:
            trained = _trained(group)
            if found["filtered_group"] is None and group.filtered:
                found["filtered_group"] = Moment("filtered_group", detail.step, group.index)
            if trained and found["all_correct_group"] is None and all(r.correct for r in group.responses):
                found["all_correct_group"] = Moment("all_correct_group", detail.step, group.index)
            if trained and found["all_wrong_group"] is None and all(r.correct is False for r in group.responses):
                found["all_wrong_group"] = Moment("all_wrong_group", detail.step, group.index)
            for response in group.responses:
                if trained and response.correct is False and (
                        found["longest_wrong"] is None or response.length > found["longest_wrong"].value):
                    found["longest_wrong"] = Moment("longest_wrong", detail.step, group.index, response.index, None,
                                                    float(response.length))
                tokens = response.tokens
                if tokens is None:
                    continue
                for t, (clip, ratio) in enumerate(zip(tokens.clip, tokens.ratio)):
                    if clip == 0:
                        continue
                    score = ratio if clip > 0 else -ratio
                    if best_clip[clip] is None or score > best_clip[clip][0]:
                        name = "clipped_high" if clip > 0 else "clipped_low"
                        best_clip[clip] = (score, Moment(name, detail.step, group.index, response.index, t, ratio))
    found["clipped_high"] = best_clip[1][1] if best_clip[1] else None
    found["clipped_low"] = best_clip[-1][1] if best_clip[-1] else None
    found["max_kl_step"] = max_kl_step(run_dir)
    return found


_CACHE: dict[tuple[str, float, int], dict[str, Moment | None]] = {}


def find_moments(run_dir: str | Path) -> dict[str, Moment | None]:
    """All moments of a run, computed once per run (cached on the run's files' state)."""
    run_dir = Path(run_dir)
    tokens = run_dir / runlog.TOKENS_DIR
    steps = run_dir / runlog.STEPS
    key = (str(run_dir.resolve()), steps.stat().st_mtime if steps.exists() else 0.0,
           len(runlog.token_steps(run_dir)) if tokens.is_dir() else 0)
    if key not in _CACHE:
        _CACHE[key] = _scan(run_dir)
    return dict(_CACHE[key])


def find_moment(run_dir: str | Path, name: str) -> Moment | None:
    if name not in FINDERS:
        raise KeyError(f"unknown moment {name!r} (known: {', '.join(MOMENT_NAMES)})")
    return find_moments(run_dir)[name]
