"""`unipo publish`: a run trained in another checkout (or by an older trainer) made fit to ship: no
path of that machine in its header, the wall time a field, files others can read; its logs unchanged."""

from __future__ import annotations

import json
import os
import sys

import pytest

from cli_helpers import ROOT, unipo
from helpers_runlog import checksums, make_header, write_run
from unipo_build.core import runlog
from unipo_build.core.reader import validate_run
from unipo_build.trainers.unipo.publish import publish_run
from unipo_build.core.schema import ModelInfo, TaskInfo

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX modes and paths")


def _foreign_run(run, trained_in, *, linked_warm_start=None):
    """What an older trainer wrote in the checkout ``trained_in``: absolute paths, a wall-time note, mode 0600."""
    checkpoint = linked_warm_start or trained_in / "work" / "sft-tiny"
    model = ModelInfo(name="tiny", architecture="llama", parameters=123456, vocab_size=64, checkpoint=str(checkpoint))
    header = make_header(task=TaskInfo(name="arithmetic word problems", source=str(trained_in / "data" / "tasks"),
                                       n_train=100, n_eval=20),
                         model=model, reference_model=model, notes="wall time 1252 s")
    write_run(run, header=header)
    for path in run.rglob("*"):
        if path.is_file():
            os.chmod(path, 0o600)


def test_publish_relocates_paths_records_wall_time_and_leaves_the_logs(tmp_path):
    trained_in = tmp_path / "other-checkout"
    shared = tmp_path / "shared" / "sft-tiny"  # work/sft-tiny there is a link to a shared warm start
    shared.mkdir(parents=True)
    (trained_in / "work").mkdir(parents=True)
    (trained_in / "work" / "sft-tiny").symlink_to(shared)
    run = tmp_path / "runs" / "grpo"
    _foreign_run(run, trained_in, linked_warm_start=trained_in / "work" / "sft-tiny")
    logs = {k: v for k, v in checksums(run).items() if k != "header.json"}

    result = unipo("publish", run, "--trained-in", trained_in, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout == (f"{run}: task.source data/tasks; model.checkpoint work/sft-tiny; "
                             "reference_model.checkpoint work/sft-tiny; wall_time_s 1252 (from the note); "
                             f"{len(logs)} files given mode {runlog.new_file_mode():o}\n")
    header = json.loads((run / "header.json").read_text())
    assert header["task"]["source"] == "data/tasks" and header["model"]["checkpoint"] == "work/sft-tiny"
    assert header["wall_time_s"] == 1252 and "notes" not in header
    assert str(tmp_path) not in (run / "header.json").read_text()
    assert {k: v for k, v in checksums(run).items() if k != "header.json"} == logs
    assert {p.stat().st_mode & 0o777 for p in run.rglob("*") if p.is_file()} == {runlog.new_file_mode()}
    assert validate_run(run) == []
    # a second time there is nothing left to do
    assert unipo("publish", run, "--trained-in", trained_in, cwd=tmp_path).stdout == f"{run}: nothing to change\n"


def test_a_path_outside_the_checkout_keeps_only_its_name(tmp_path):
    run = tmp_path / "run"
    _foreign_run(run, tmp_path / "somewhere")
    assert publish_run(run, trained_in=tmp_path / "elsewhere")[:2] == ["task.source .../tasks",
                                                                        "model.checkpoint .../sft-tiny"]


def test_a_run_of_this_trainer_is_left_alone(tmp_path):
    run = tmp_path / "run"
    write_run(run, header=make_header(wall_time_s=12.5, notes="wall time 99 s"))  # a note of the user's stays
    before = checksums(run)
    assert publish_run(run) == []
    assert checksums(run) == before


def test_not_a_run_is_a_message_and_the_others_are_still_done(tmp_path):
    good = tmp_path / "good"
    _foreign_run(good, ROOT)
    result = unipo("publish", tmp_path / "missing", good, cwd=tmp_path, env_extra={"UNIPO_ROOT": str(ROOT)})
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert result.stderr == f"{tmp_path / 'missing' / 'header.json'}: file is missing; nothing was changed there\n"
    assert json.loads((good / "header.json").read_text())["task"]["source"] == "data/tasks"
