"""Step files within a byte budget: the trainer's rule (core/step_budget.py) applied to files already
written by ``unipo trim-steps``, and the budget held by every shipped step file of both sets."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from helpers_runlog import make_tokens, write_run
from unipo_build.cli.main import main
from unipo_build.core import project, runlog
from unipo_build.core.reader import validate_run
from unipo_build.core.schema import GroupSummary, PromptGroup, Response, StepDetail
from unipo_build.core.step_budget import STEP_FILE_BUDGET, detail_order, file_bytes, trim_detail

# (correct answers of each response) per group: 0 mixed, 1 all correct, 2 all wrong, 3 mixed.
# detail_order: the first mixed (0), the first all-correct (1), the first all-wrong (2), then the other mixed (3).
GROUPS = {0: (True, False, True, False), 1: (True, True, True, True), 2: (False,) * 4, 3: (False, True, False, False)}
LENGTH = {0: 50, 1: 40, 2: 20, 3: 10}  # tokens of each response: group 0 is the longest, 3 the shortest


def _group(g: int, filtered: bool = False) -> PromptGroup:
    responses = []
    for i, ok in enumerate(GROUPS[g % 4]):
        n = LENGTH[g % 4]
        adv = 0.5 if ok else -0.5
        responses.append(Response(index=i, text=f"answer {g}.{i} é", reward=float(ok), reward_components={"correct": float(ok)},
                                  advantage=None if filtered else adv, length=n, correct=ok, filtered=filtered,
                                  contribution=0.0 if filtered else 0.125 * adv,
                                  tokens=None if filtered else make_tokens(n, advantage=adv)))
    return PromptGroup(index=g, prompt=f"What is {g} + {g}? ü", answer=str(2 * g), contribution=0.0,
                       filtered=filtered, responses=responses)


def _detail(step: int = 0) -> StepDetail:
    summaries = [GroupSummary(index=g, size=4, n_correct=sum(ok), reward_mean=sum(ok) / 4, contribution=0.25 * g,
                              detailed=True) for g, ok in GROUPS.items()]
    dropped = _group(1001, filtered=True)
    filtered = [GroupSummary(index=1001, size=4, n_correct=0, reward_mean=0.0, filtered=True, contribution=0.0,
                             detailed=True)]
    return StepDetail(step=step, rollout=step // 2, objective=-0.03125, groups=summaries, filtered_groups=filtered,
                      prompts=[_group(g) for g in GROUPS] + [dropped])


@pytest.fixture()
def run(tmp_path):
    path = tmp_path / "grpo"
    write_run(path, n_steps=4, token_steps=(0, 2))
    runlog.atomic_write_text(_file(path, 0), runlog.dumps(_detail(0)) + "\n")  # a big step file for step 0
    return path


def _file(run: Path, step: int) -> Path:
    return run / runlog.TOKENS_DIR / runlog.token_file_name(step)


def test_the_order_of_choice_is_the_trainers():
    assert detail_order(_detail().groups) == [0, 1, 2, 3]


def test_a_file_over_budget_shrinks_under_it_and_keeps_everything_else(run):
    before = runlog.read_step_detail(run, 0)
    full = _file(run, 0).stat().st_size
    assert full == file_bytes(before)  # bytes, as written (the texts are not ASCII)
    without_3 = file_bytes(trim_detail(before, full - 1))
    small_step = _file(run, 2).read_bytes()

    assert main(["trim-steps", str(run), "--max-bytes", str(without_3)]) == 0
    after = runlog.read_step_detail(run, 0)
    size = _file(run, 0).stat().st_size
    assert size <= without_3 < full
    # the header fields, every summary but its flag, the filtered group: unchanged
    assert (after.schema_version, after.step, after.rollout, after.objective) == \
        (before.schema_version, before.step, before.rollout, before.objective)
    assert after.filtered_groups == before.filtered_groups
    assert [g.model_copy(update={"detailed": True}) for g in after.groups] == before.groups
    # group 3 (last in the order) left out; the kept groups are unchanged, in the step's order
    assert [p.index for p in after.prompts] == [0, 1, 2, 1001]
    assert {g.index for g in after.groups if g.detailed} == {0, 1, 2}
    old = {(p.index, p.filtered): p for p in before.prompts}
    assert all(p == old[(p.index, p.filtered)] for p in after.prompts)
    assert _file(run, 2).read_bytes() == small_step  # already within the budget: untouched
    assert validate_run(run) == []
    assert not [p for p in _file(run, 0).parent.iterdir() if p.name.startswith(".")]  # no temporary file left


def test_a_group_that_does_not_fit_is_passed_over_for_the_next(run):
    before = runlog.read_step_detail(run, 0)

    def size(*groups):  # the file with token detail for these groups (and their flags saying so)
        return file_bytes(before.model_copy(update={
            "prompts": [p for p in before.prompts if p.index in groups],
            "groups": [g.model_copy(update={"detailed": g.index in groups}) for g in before.groups]}))

    budget = size(0, 2, 3, 1001)  # answers of 50 + 20 + 10 tokens
    assert size(0, 1, 1001) > budget  # 50 + 40
    trimmed = trim_detail(before, budget)  # 0 (first), 1 does not fit beside it, 2 does, then 3 still does
    assert [p.index for p in trimmed.prompts] == [0, 2, 3, 1001]
    assert {g.index for g in trimmed.groups if g.detailed} == {0, 2, 3} and file_bytes(trimmed) == budget
    one = trim_detail(before, 1)
    assert [p.index for p in one.prompts] == [0, 1001]  # nothing fits 1 byte: the first group all the same


def test_a_file_within_budget_is_not_rewritten(run, capsys):
    path = _file(run, 0)
    os.utime(path, ns=(1, 1))
    assert main(["trim-steps", str(run), "--max-bytes", str(path.stat().st_size)]) == 0
    assert path.stat().st_mtime_ns == 1
    assert "every step file is within" in capsys.readouterr().out


def test_a_file_still_over_budget_with_one_group_says_so(run, capsys):
    assert main(["trim-steps", str(run), "--max-bytes", "100"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2  # one line a file, each naming it
    assert all(str(_file(run, s)) in line and "with 1 group detailed" in line and "over the budget of 100" in line
               for s, line in zip((0, 2), err))
    assert [p.index for p in runlog.read_step_detail(run, 0).prompts] == [0, 1001]
    assert main(["trim-steps", str(run), "--max-bytes", "100"]) == 1  # and again, though nothing changes
    assert len(capsys.readouterr().err.strip().splitlines()) == 2


def test_bad_input_gets_one_line_naming_the_file(run, tmp_path, capsys):
    path = _file(run, 0)
    text = path.read_text(encoding="utf-8").replace('"objective":', '"objective":"x","was":', 1)
    path.write_text(text, encoding="utf-8")
    assert main(["trim-steps", str(run), "--max-bytes", "2000"]) == 1  # step 2 is within it
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and str(path) in err[0] and "objective" in err[0] and "not changed" in err[0]
    assert path.read_text(encoding="utf-8") == text
    two_bad = text.replace('"rollout":', '"rollout":-1,"was":', 1)
    path.write_text(two_bad, encoding="utf-8")
    assert main(["trim-steps", str(run), "--max-bytes", "2000"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and str(path) in err[0] and "and 1 more" in err[0] and "not changed" in err[0]
    assert main(["trim-steps", str(tmp_path / "nowhere")]) == 1
    assert capsys.readouterr().err.strip() == f"{tmp_path / 'nowhere'}: no such run directory"


def test_every_shipped_step_file_of_both_sets_is_within_the_budget():
    root = project.find_root()
    dirs = [root / project.RUNS, root / "data" / "runs-gpu"]
    files = [p for d in dirs for run in sorted(d.iterdir()) for p in runlog.token_paths(run)]
    assert len({p.parent.parent.parent for p in files}) == 2  # both sets ship step files
    # the budget is the plain bytes, what the site serves (a shipped file is stored gzipped)
    sizes = {p: len(runlog.read_log_bytes(p)) for p in files}
    over = [f"{p.relative_to(root)}: {size} plain bytes" for p, size in sizes.items() if size > STEP_FILE_BUDGET]
    assert not over, "over the step-file budget (run `unipo trim-steps`): " + "; ".join(over)
