"""Which groups of an update get token detail in its step file, and the file's byte budget.

The one rule, used by the trainer when it writes a step file (``training/records.step_detail``)
and by ``unipo trim-steps`` on a step file already written:

- groups are detailed in :func:`detail_order` (one mixed, one all-correct, one all-wrong, then the
  other mixed ones, then the other all-correct and all-wrong ones);
- with a byte budget, a group is detailed only if the file, as the run log writes it
  (``runlog.dumps`` and a newline, counted in UTF-8 bytes), stays within the budget with it; a
  group that does not fit is passed over for the next in the order, and the first group is always
  detailed (a step file shows at least one group token by token);
- the detailed groups appear in the order of the step's groups, before the sampling filter's
  dropped groups, which are always kept; each group's summary says whether it is detailed.

The site fetches a step's file when a reader opens that step, so its size is a page budget
(``benchmarks/page_budget.py``: 300 KB).
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterable, Sequence

from unipo_build.core import gzlog, runlog
from unipo_build.core.schema import GroupSummary, PromptGroup, StepDetail

#: The step-file budget of the shipped sets (bytes): benchmarks/page_budget.py's 300 KB.
STEP_FILE_BUDGET = 300_000


def detail_order(summaries: Sequence[GroupSummary]) -> list[int]:
    """The groups in the order they get token detail: one mixed, one all-correct, one all-wrong, then
    the other mixed ones, then the other all-correct and all-wrong ones.

    Teaching moments need each kind; a mixed group comes first because it is the one a group
    baseline learns from (its advantages are not all zero), so a step file with room for one or two
    groups (the gpu set's 16 long answers a group) still shows a learning group token by token. The
    first three are one of each kind, so the first k groups for k >= 3 are the same set as with
    the kinds in any order. The rest are taken in order so the choice is deterministic and
    independent of the numbers.
    """
    all_correct = [s.index for s in summaries if s.n_correct == s.size]
    all_wrong = [s.index for s in summaries if s.n_correct == 0]
    mixed = [s.index for s in summaries if s.n_correct is not None and 0 < s.n_correct < s.size]
    return mixed[:1] + all_correct[:1] + all_wrong[:1] + mixed[1:] + all_correct[1:] + all_wrong[1:]


def file_bytes(detail: StepDetail) -> int:
    """The size of ``detail``'s step file as the run log writes it (``runlog.dumps`` and a newline)."""
    return len(runlog.dumps(detail).encode("utf-8")) + 1


def _with(base: StepDetail, chosen: dict[int, PromptGroup], filtered: list[PromptGroup]) -> StepDetail:
    groups = [s.model_copy(update={"detailed": s.index in chosen}) for s in base.groups]
    place = {s.index: i for i, s in enumerate(base.groups)}
    kept = sorted(chosen.values(), key=lambda p: place.get(p.index, len(place)))
    return base.model_copy(update={"groups": groups, "prompts": kept + filtered})


def fit_detail(base: StepDetail, candidates: Iterable[PromptGroup], max_bytes: int | None) -> StepDetail:
    """``base`` (every group's summary; its prompts: the filter's dropped groups only) with token
    detail for the ``candidates`` that fit ``max_bytes`` (None: all of them), taken in the order
    given (:func:`detail_order`'s) by the rule of the module docstring. ``candidates`` may be a
    generator: each group is built only when its turn comes."""
    filtered = [p for p in base.prompts if p.filtered]
    chosen: dict[int, PromptGroup] = {}
    for group in candidates:
        if max_bytes is None or not chosen or file_bytes(_with(base, {**chosen, group.index: group}, filtered)) <= max_bytes:
            chosen[group.index] = group
    return _with(base, chosen, filtered)


def trim_detail(detail: StepDetail, max_bytes: int) -> StepDetail:
    """A written step file's detail brought within ``max_bytes`` by the same rule: its detailed
    groups are the candidates, in :func:`detail_order`; every other field (the step, rollout and
    objective, every group's summary but its ``detailed`` flag, the filtered groups) is kept as it
    is, and so is each group kept. A file within the budget is returned unchanged."""
    if file_bytes(detail) <= max_bytes:
        return detail
    detailed = {p.index: p for p in detail.prompts if not p.filtered}
    order = [g for g in detail_order(detail.groups) if g in detailed]
    order += [g for g in detailed if g not in order]  # a group no summary orders: last
    base = detail.model_copy(update={"prompts": [p for p in detail.prompts if p.filtered]})
    return fit_detail(base, (detailed[g] for g in order), max_bytes)


def trim_step_file(run_dir: str | Path, step: int, max_bytes: int) -> tuple[int, int, int | None]:
    """Trim one step file of ``run_dir`` in place (atomically) to ``max_bytes`` by :func:`trim_detail`;
    (bytes before, bytes after, groups detailed in the file as it now is: None when it was within the
    budget and not read). A file within the budget is not rewritten. A bad file raises the run log's
    ``LogError``/``LogErrors`` (naming the file, the step and the field)."""
    path = runlog.token_file(run_dir, step)  # plain, or gzipped by unipo publish: the budget is the plain bytes
    before = len(runlog.read_log_bytes(path)) if runlog.is_packed(path) else path.stat().st_size
    if before <= max_bytes:
        return before, before, None
    detail = runlog.read_step_detail(run_dir, step)
    trimmed = trim_detail(detail, max_bytes)
    detailed = sum(g.detailed for g in trimmed.groups)
    if trimmed is detail:  # within the budget once written as the run log writes it
        return before, before, detailed
    data = (runlog.dumps(trimmed) + "\n").encode("utf-8")
    gzlog.write_log_bytes(path, data)  # in the form it had
    return before, len(data), detailed
