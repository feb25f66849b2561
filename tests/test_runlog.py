"""Writing and reading run directories (unipo_build.core.runlog): round trips, resume, and every
kind of bad input reported with file, line/step, prompt/response and field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers_runlog import (
    checksums,
    make_detail,
    make_header,
    make_step,
    read_json,
    rewrite_lines,
    write_json,
    write_run,
)
from unipo_build.core import runlog
from unipo_build.core.reader import validate_run
from unipo_build.core.runlog import LogError, LogErrors, RunWriter
from unipo_build.core.schema import StepRecord

KNOWN = {"reinforce", "ppo", "grpo", "dapo", "dr_grpo"}


@pytest.fixture
def run(tmp_path):
    run_dir = tmp_path / "run"
    written = write_run(run_dir)
    return run_dir, written


def errors_of(run_dir: Path) -> list[LogError]:
    before = checksums(run_dir)
    errors = validate_run(run_dir, known_algorithms=KNOWN)
    assert checksums(run_dir) == before, "validation wrote over its input"
    return errors


def only_error(run_dir: Path) -> LogError:
    errors = errors_of(run_dir)
    assert len(errors) == 1, [str(e) for e in errors]
    return errors[0]


# ---------------------------------------------------------------------------
# Round trip
# ---------------------------------------------------------------------------

def test_round_trip(run):
    run_dir, written = run
    assert sorted(p.name for p in run_dir.iterdir()) == ["evals.jsonl", "header.json", "steps.jsonl", "tokens"]
    assert runlog.read_header(run_dir) == written["header"]
    assert written["header"].finished_at is not None
    assert list(runlog.iter_steps(run_dir)) == written["steps"]
    assert list(runlog.iter_evals(run_dir)) == written["evals"]
    assert runlog.token_steps(run_dir) == [0, 2, 4]
    for step, detail in written["details"].items():
        assert runlog.read_step_detail(run_dir, step) == detail
    assert errors_of(run_dir) == []
    # null metrics stay null (undefined at that step), not dropped
    assert '"length/correct":null' in (run_dir / "steps.jsonl").read_text().splitlines()[0]
    # no temporary files are left behind by the atomic writes
    assert not [p for p in run_dir.rglob(".*")]


def test_round_trip_of_the_return_alias_and_absent_optionals(tmp_path):
    detail = make_detail(0)
    tokens = detail.prompts[0].responses[0].tokens
    tokens.return_ = [0.5] * len(tokens.ids)
    tokens.value = None
    writer = RunWriter(tmp_path / "r", make_header())
    writer.step_detail(detail)
    text = (tmp_path / "r" / "tokens" / "step_000000.json").read_text()
    assert '"return":[0.5' in text and '"value"' not in text and "return_" not in text
    assert runlog.read_step_detail(tmp_path / "r", 0) == detail


def test_floats_are_rounded_to_float32_precision(tmp_path):
    writer = RunWriter(tmp_path / "r", make_header())
    writer.step(make_step(0, **{"reward/mean": 0.1234567891234}))
    line = (tmp_path / "r" / "steps.jsonl").read_text()
    assert '"reward/mean":0.1234568' in line


def test_unknown_fields_are_kept(run):
    run_dir, _ = run
    header = read_json(run_dir / "header.json")
    header["trainer_extension"] = {"gpu_hours": 1.5}
    header["task"]["curriculum"] = "easy-first"
    write_json(run_dir / "header.json", header)
    rewrite_lines(run_dir / "steps.jsonl", lambda rs: [{**r, "tool_note": "x"} for r in rs])
    detail = read_json(run_dir / "tokens" / "step_000002.json")
    detail["prompts"][0]["responses"][1]["tokens"]["attention"] = [0.5] * detail["prompts"][0]["responses"][1]["length"]
    detail["prompts"][0]["source_dataset"] = "gsm-like"
    write_json(run_dir / "tokens" / "step_000002.json", detail)
    assert errors_of(run_dir) == []

    h = runlog.read_header(run_dir)
    assert h.model_extra == {"trainer_extension": {"gpu_hours": 1.5}} and h.task.curriculum == "easy-first"
    steps = list(runlog.iter_steps(run_dir))
    d = runlog.read_step_detail(run_dir, 2)
    assert steps[0].tool_note == "x" and d.prompts[0].source_dataset == "gsm-like"

    # through RunWriter and back: still there
    out = run_dir.parent / "copy"
    writer = RunWriter(out, h)
    for s in steps:
        writer.step(s)
    writer.step_detail(d)
    assert read_json(out / "header.json")["trainer_extension"] == {"gpu_hours": 1.5}
    assert runlog.read_header(out) == h
    assert list(runlog.iter_steps(out)) == steps
    again = runlog.read_step_detail(out, 2)
    assert again == d and again.prompts[0].responses[1].tokens.attention == [0.5] * d.prompts[0].responses[1].length


# ---------------------------------------------------------------------------
# Writer safety and resume
# ---------------------------------------------------------------------------

def test_writer_refuses_to_overwrite(run):
    run_dir, _ = run
    before = checksums(run_dir)
    with pytest.raises(FileExistsError, match="already holds a run"):
        RunWriter(run_dir, make_header())
    assert checksums(run_dir) == before


def test_writer_refuses_non_finite():
    with pytest.raises(ValueError):
        StepRecord(step=0, rollout=0, first_in_rollout=True, metrics={"reward/mean": float("nan")})
    with pytest.raises(ValueError, match="non-finite"):
        runlog._compact({"x": float("inf")})


def test_resume_truncates_after_the_checkpoint(run):
    run_dir, _ = run
    # the run logged steps 0..5, evals at 0, 3, 6, token files 0, 2, 4; a crash left a cut-off line
    with (run_dir / "steps.jsonl").open("a") as fh:
        fh.write('{"step":6,"rollout":3,"first_in')
    with (run_dir / "evals.jsonl").open("a") as fh:
        fh.write('{"step":7,"pha')
    RunWriter(run_dir, make_header(), resume_after=2)
    assert [r.step for r in runlog.iter_steps(run_dir)] == [0, 1, 2]
    assert [e.step for e in runlog.iter_evals(run_dir)] == [0, 3]  # 3 <= 2 + 1: taken after update 2
    assert runlog.token_steps(run_dir) == [0, 2]
    assert (run_dir / "steps.jsonl").read_text().endswith("\n")
    assert errors_of(run_dir) == []
    # and it continues from there
    writer = RunWriter(run_dir, make_header(), resume_after=2)
    writer.step(make_step(3))
    assert [r.step for r in runlog.iter_steps(run_dir)] == [0, 1, 2, 3]


def test_resume_at_the_last_step_drops_only_the_cut_off_line(run):
    run_dir, written = run
    with (run_dir / "steps.jsonl").open("a") as fh:
        fh.write('{"step":6,"rollout":3')
    RunWriter(run_dir, make_header(), resume_after=5)
    assert list(runlog.iter_steps(run_dir)) == written["steps"]
    assert [e.step for e in runlog.iter_evals(run_dir)] == [0, 3, 6]
    assert runlog.token_steps(run_dir) == [0, 2, 4]


def test_resume_in_an_empty_directory(tmp_path):
    RunWriter(tmp_path / "fresh", make_header(), resume_after=10)
    assert (tmp_path / "fresh" / "steps.jsonl").read_text() == ""
    assert validate_run(tmp_path / "fresh", known_algorithms=KNOWN) == []


# ---------------------------------------------------------------------------
# Bad inputs
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("field", ["logp", "advantage", "clip", "text", "mask", "ref_logp", "weight"])
def test_token_array_one_element_short(run, field):
    run_dir, _ = run
    path = run_dir / "tokens" / "step_000002.json"
    detail = read_json(path)
    tokens = detail["prompts"][1]["responses"][1]["tokens"]  # response of 5 tokens
    tokens[field] = tokens[field][:-1]
    write_json(path, detail)
    err = only_error(run_dir)
    assert err.file == str(path)
    assert err.step == 2
    assert err.where == "prompt 1, response 1"
    assert err.field == f"tokens.{field}"
    assert "has 4 elements, expected 5" in err.message
    text = str(err)
    assert f"tokens.{field}" in text and "step 2" in text and "prompt 1, response 1" in text


def test_token_ids_short_of_the_declared_length(run):
    run_dir, _ = run
    path = run_dir / "tokens" / "step_000000.json"
    detail = read_json(path)
    resp = detail["prompts"][0]["responses"][0]
    resp["length"] = 4  # tokens have 3
    write_json(path, detail)
    err = only_error(run_dir)
    assert (err.step, err.where, err.field) == (0, "prompt 0, response 0", "length")
    assert "tokens.ids has 3 elements" in err.message


@pytest.mark.parametrize("value", ["NaN", "Infinity", "-Infinity"])
def test_non_finite_metric(run, value):
    run_dir, _ = run
    path = run_dir / "steps.jsonl"
    lines = path.read_text().splitlines(keepends=True)
    lines[3] = lines[3].replace('"reward/mean":0.5', f'"reward/mean":{value}')
    assert value in lines[3]
    path.write_text("".join(lines))
    err = only_error(run_dir)
    assert err.file == str(path) and err.line == 4 and err.step == 3
    assert err.field == "metrics.reward/mean"
    assert "NaN or infinity" in err.message


@pytest.mark.parametrize("value", ["NaN", "Infinity"])
def test_non_finite_token_value(run, value):
    run_dir, _ = run
    path = run_dir / "tokens" / "step_000004.json"
    text = path.read_text()
    data = json.loads(text)
    data["prompts"][1]["responses"][0]["tokens"]["logp"][1] = "__X__"
    path.write_text(json.dumps(data).replace('"__X__"', value))
    err = only_error(run_dir)
    assert err.file == str(path) and err.step == 4
    assert err.where == "prompt 1, response 0"
    assert err.field == "tokens.logp.1"
    assert "NaN or infinity" in err.message
    # the single-file reader says the same
    with pytest.raises(LogErrors) as info:
        runlog.read_json_model(path, runlog.StepDetail)
    assert [str(e) for e in info.value.errors] == [str(err)]


def test_non_finite_header_value(run):
    run_dir, _ = run
    path = run_dir / "header.json"
    path.write_text(path.read_text().replace('"lr":0.0001', '"lr":NaN'))
    err = only_error(run_dir)
    assert err.file == str(path) and err.field == "hyperparameters.lr" and "NaN or infinity" in err.message


def test_unknown_algorithm_in_header(tmp_path):
    run_dir = tmp_path / "run"
    write_run(run_dir, header=make_header(with_config=False).model_copy(update={"algorithm": "gspo"}))
    err = only_error(run_dir)
    assert err.file == str(run_dir / "header.json") and err.field == "algorithm"
    assert "unknown algorithm 'gspo'" in err.message and "data/algorithms/gspo.yaml" in err.message


def test_unknown_algorithm_with_its_config_is_readable(tmp_path):
    # a self-describing log: the resolved components are copied in, so the id need not be known
    header = make_header().model_copy(update={"algorithm": "my_grpo_variant"})
    write_run(tmp_path / "run", header=header)
    assert errors_of(tmp_path / "run") == []


def test_unknown_component_in_header_config(run):
    run_dir, _ = run
    header = read_json(run_dir / "header.json")
    header["algorithm_config"]["components"]["clip"]["kind"] = "wavy"
    write_json(run_dir / "header.json", header)
    err = only_error(run_dir)
    assert err.field == "algorithm_config.components.clip.kind" and "unknown component 'wavy'" in err.message


@pytest.mark.parametrize("file, drop, field", [
    ("header.json", ("task",), "task"),
    ("header.json", ("model", "name"), "model.name"),
    ("steps.jsonl", ("rollout",), "rollout"),
    ("evals.jsonl", ("phase",), "phase"),
])
def test_missing_required_field(run, file, drop, field):
    run_dir, _ = run
    path = run_dir / file
    if file.endswith(".jsonl"):
        def edit(records):
            target = records[1]
            for key in drop[:-1]:
                target = target[key]
            del target[drop[-1]]
            return records
        rewrite_lines(path, edit)
    else:
        data = read_json(path)
        target = data
        for key in drop[:-1]:
            target = target[key]
        del target[drop[-1]]
        write_json(path, data)
    err = only_error(run_dir)
    assert err.file == str(path) and err.field == field and err.message == "required field is missing"
    if file.endswith(".jsonl"):
        assert err.line == 2
    if file == "steps.jsonl":
        assert err.step == 1


def test_missing_required_token_array(run):
    run_dir, _ = run
    path = run_dir / "tokens" / "step_000000.json"
    data = read_json(path)
    del data["prompts"][1]["responses"][0]["tokens"]["ratio"]
    write_json(path, data)
    err = only_error(run_dir)
    assert (err.step, err.where, err.field, err.message) == (0, "prompt 1, response 0", "tokens.ratio",
                                                             "required field is missing")


def test_truncated_last_line(run):
    run_dir, _ = run
    path = run_dir / "steps.jsonl"
    text = path.read_text()
    path.write_text(text[: len(text) - 25])  # the last record (line 6) is cut off mid-way
    err = only_error(run_dir)
    assert err.file == str(path) and err.line == 6
    assert "cut off" in err.message
    assert "line 6" in str(err)


def test_broken_line_in_the_middle_is_not_called_cut_off(run):
    run_dir, _ = run
    path = run_dir / "evals.jsonl"
    lines = path.read_text().splitlines(keepends=True)
    lines[1] = lines[1][:10] + "\n"
    path.write_text("".join(lines))
    err = only_error(run_dir)
    assert err.line == 2 and "not valid JSON" in err.message and "cut off" not in err.message


@pytest.mark.parametrize("edit, found, expected, line", [
    (lambda rs: rs[:3] + [rs[2]] + rs[3:], 2, 3, 4),   # step 2 logged twice
    (lambda rs: rs[:3] + rs[4:], 4, 3, 4),             # step 3 missing
])
def test_step_twice_or_missing(run, edit, found, expected, line):
    run_dir, _ = run
    rewrite_lines(run_dir / "steps.jsonl", edit)
    err = only_error(run_dir)
    assert err.file == str(run_dir / "steps.jsonl") and err.line == line and err.step == found
    assert err.field == "step"
    assert f"expected step {expected} next, found {found}" in err.message


def test_token_file_for_another_step(run):
    run_dir, _ = run
    (run_dir / "tokens" / "step_000002.json").rename(run_dir / "tokens" / "step_000003.json")
    errors = errors_of(run_dir)
    messages = [str(e) for e in errors]
    assert any("file is for step 3 but says step 2" in m for m in messages)
    assert any("step 2" in m and "has_tokens" in m for m in messages)  # step 2 promised a token file


def test_has_tokens_without_a_token_file(run):
    run_dir, _ = run
    (run_dir / "tokens" / "step_000004.json").unlink()
    err = only_error(run_dir)
    assert err.file == str(run_dir / "tokens" / "step_000004.json") and err.step == 4 and err.field == "has_tokens"


def test_missing_steps_file_and_missing_header(tmp_path, run):
    run_dir, _ = run
    (run_dir / "steps.jsonl").unlink()
    (run_dir / "header.json").unlink()
    messages = {str(e) for e in validate_run(run_dir)}
    assert f"{run_dir / 'steps.jsonl'}: file is missing" in messages
    assert f"{run_dir / 'header.json'}: file is missing" in messages


def test_read_step_detail_of_a_missing_step(run):
    run_dir, _ = run
    with pytest.raises(LogError) as info:
        runlog.read_step_detail(run_dir, 1)
    assert info.value.step == 1 and "file is missing" in str(info.value)


def test_several_problems_in_one_run(run):
    run_dir, _ = run
    rewrite_lines(run_dir / "evals.jsonl", lambda rs: [{**rs[0], "accuracy_greedy": 1.5}] + rs[1:])
    path = run_dir / "tokens" / "step_000000.json"
    data = read_json(path)
    data["prompts"][0]["responses"][1]["tokens"]["clip"][0] = 2
    write_json(path, data)
    errors = errors_of(run_dir)
    fields = sorted((e.file.split("/")[-1], e.field) for e in errors)
    assert fields == [("evals.jsonl", "accuracy_greedy"), ("step_000000.json", "tokens.clip.0")]


def test_log_error_text():
    err = LogError("run/tokens/step_000002.json", "has 4 elements", line=None, step=2, where="prompt 1, response 1",
                   field="tokens.logp")
    assert str(err) == "run/tokens/step_000002.json (step 2, prompt 1, response 1): tokens.logp: has 4 elements"
    assert str(LogError("run/steps.jsonl", "bad", line=3)) == "run/steps.jsonl (line 3): bad"


def test_written_files_get_the_permissions_of_any_new_file(tmp_path):
    """Not mkstemp's private 0o600: a run is read by the site build, a web server, a colleague."""
    import os

    write_run(tmp_path / "run")
    umask = os.umask(0)
    os.umask(umask)
    modes = {p.name: p.stat().st_mode & 0o777 for p in (tmp_path / "run").rglob("*") if p.is_file()}
    assert modes and set(modes.values()) == {0o666 & ~umask}, modes


def test_paths_are_published_relative_to_the_project(tmp_path):
    from unipo_build.core.paths import project_relative, without_project_root

    root = tmp_path / "project"
    (root / "data" / "runs").mkdir(parents=True)
    assert project_relative(root / "data" / "runs", root) == "data/runs"
    assert project_relative(root, root) == "."
    assert project_relative(tmp_path / "elsewhere" / "runs", root) == ".../runs"
    assert project_relative("runs/mine", root) == "runs/mine"  # relative: as given
    message = f"{root / 'data/runs/x/steps.jsonl'} (line 3): bad; see {root}"
    assert without_project_root(message, root) == "data/runs/x/steps.jsonl (line 3): bad; see ."
