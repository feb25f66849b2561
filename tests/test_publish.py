"""`unipo publish`: a run trained in another checkout (or by an older trainer) made fit to ship: no
path of that machine in its header, the wall time a field, files others can read; its logs the same records,
gzipped once the run is finished (the same bytes each time), read by every reader as the plain files were."""

from __future__ import annotations

import gzip
import json
import os
import shutil
import sys

import pytest

from cli_helpers import ROOT, unipo
from helpers_runlog import checksums, make_header, write_run
from unipo_build.core import gzlog, runlog
from unipo_build.core.numbers import fmt_num
from unipo_build.core.reader import read_step_table, reader_for, validate_run
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
    logs = plain_logs(run)
    plain_bytes = sum(len(data) for data in logs.values())

    result = unipo("publish", run, "--trained-in", trained_in, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    packed_bytes = sum(p.stat().st_size for p in run.rglob("*.gz"))
    assert result.stdout == (f"{run}: task.source data/tasks; model.checkpoint work/sft-tiny; "
                             "reference_model.checkpoint work/sft-tiny; wall_time_s 1252 (from the note); "
                             f"{len(logs)} files given mode {runlog.new_file_mode():o}; "
                             f"{len(logs)} log files gzipped ({fmt_num(plain_bytes)} -> {fmt_num(packed_bytes)} bytes)\n")
    header = json.loads((run / "header.json").read_text())
    assert header["task"]["source"] == "data/tasks" and header["model"]["checkpoint"] == "work/sft-tiny"
    assert header["wall_time_s"] == 1252 and "notes" not in header
    assert str(tmp_path) not in (run / "header.json").read_text()
    assert plain_logs(run) == logs  # the same bytes, gzipped
    assert sorted(str(p.relative_to(run)) for p in run.rglob("*") if p.is_file()) == sorted(
        ["header.json"] + [f"{name}.gz" for name in logs])
    assert {p.stat().st_mode & 0o777 for p in run.rglob("*") if p.is_file()} == {runlog.new_file_mode()}
    assert validate_run(run) == []
    # a second time there is nothing left to do
    assert unipo("publish", run, "--trained-in", trained_in, cwd=tmp_path).stdout == f"{run}: nothing to change\n"


def plain_logs(run) -> dict:
    """Every log file's plain bytes (gzipped ones decompressed), by its plain name; the header left out."""
    return {str(p.relative_to(run)).removesuffix(".gz"): runlog.read_log_bytes(p)
            for p in sorted(run.rglob("*")) if p.is_file() and p.name != "header.json"}


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


# ---------------------------------------------------------------------------
# Gzipped logs: what publish writes, and every reader reading them as the plain files
# ---------------------------------------------------------------------------

def _published_pair(tmp_path, **kwargs):
    """A run written plain, and a copy of it published."""
    plain = tmp_path / "plain"
    written = write_run(plain, **kwargs)
    packed = tmp_path / "packed"
    shutil.copytree(plain, packed)
    assert gzlog.pack_run(packed)
    return plain, packed, written


def test_a_published_run_reads_as_the_plain_one(tmp_path):
    """Round trip: every reader gives the same records from the gzipped files as from the plain ones."""
    plain, packed, written = _published_pair(tmp_path)
    assert not (packed / "steps.jsonl").exists() and (packed / "steps.jsonl.gz").is_file()
    assert (packed / "tokens" / "step_000002.json.gz").is_file() and (packed / "header.json").is_file()
    assert list(runlog.iter_steps(packed)) == list(runlog.iter_steps(plain)) == written["steps"]
    assert list(runlog.iter_evals(packed)) == list(runlog.iter_evals(plain)) == written["evals"]
    assert runlog.token_steps(packed) == runlog.token_steps(plain) == [0, 2, 4]
    assert [runlog.read_step_detail(packed, s) for s in (0, 2, 4)] == [written["details"][s] for s in (0, 2, 4)]
    a, b = read_step_table(packed), read_step_table(plain)
    assert a.steps.tolist() == b.steps.tolist() and a.names() == b.names()
    assert all((a.column(n) == b.column(n)).all() for n in b.names())
    assert validate_run(packed) == [] and reader_for(packed).header == reader_for(plain).header
    assert runlog.read_log_text(packed / "steps.jsonl") == (plain / "steps.jsonl").read_text()
    assert unipo("validate", packed, packed / "steps.jsonl.gz", packed / "tokens" / "step_000002.json.gz",
                 cwd=tmp_path).returncode == 0


def test_publishing_is_deterministic_and_idempotent(tmp_path):
    """Published twice (two copies, or after --plain) the bytes are the same; published again, nothing changes."""
    plain, packed, _ = _published_pair(tmp_path)
    again = tmp_path / "again"
    shutil.copytree(plain, again)
    os.utime(again / "steps.jsonl", (1, 1))  # another modification time: not in the gzip header
    assert unipo("publish", again, cwd=tmp_path).returncode == 0
    assert checksums(again) == checksums(packed)
    first = checksums(packed)
    assert unipo("publish", packed, cwd=tmp_path).stdout == f"{packed}: nothing to change\n"
    assert checksums(packed) == first
    result = unipo("publish", "--plain", packed, cwd=tmp_path)
    assert result.stdout == f"{packed}: 5 log files written back plain\n", result.stderr
    assert checksums(packed) == checksums(plain)
    assert gzlog.pack_run(packed) and checksums(packed) == first
    data = (packed / "steps.jsonl.gz").read_bytes()
    assert data[3] == 0 and data[4:8] == bytes(4)  # no file name, modification time 0
    assert gzip.decompress(data) == (plain / "steps.jsonl").read_bytes()


def test_an_unfinished_run_keeps_plain_files(tmp_path):
    """A run still training (no finished_at) keeps plain logs: the trainer appends to them, explain --watch
    follows them, a resume rewrites them."""
    from training.runstate import run_state

    run = tmp_path / "run"
    write_run(run)
    header = json.loads((run / "header.json").read_text())
    del header["finished_at"]
    (run / "header.json").write_text(json.dumps(header) + "\n")
    before = checksums(run)
    result = unipo("publish", run, cwd=tmp_path)
    assert result.returncode == 0 and result.stdout == f"{run}: not finished (no finished_at): logs left plain\n"
    assert checksums(run) == before
    assert run_state(run) != "finished"


def test_a_published_run_is_finished_for_the_trainer(tmp_path):
    """`unipo train --out` and `unipo suite` see a published run as finished: never an empty directory to
    write into; a RunWriter refuses it."""
    from training.runstate import logged_updates, run_state

    _, packed, _ = _published_pair(tmp_path)
    assert run_state(packed) == "finished" and logged_updates(packed) == 6
    with pytest.raises(FileExistsError, match="published"):
        runlog.RunWriter(packed, make_header(), resume_after=3)


def test_a_log_in_both_forms_is_an_error_naming_both(tmp_path):
    plain, packed, _ = _published_pair(tmp_path)
    shutil.copy(plain / "steps.jsonl", packed / "steps.jsonl")
    with pytest.raises(runlog.LogError) as err:
        list(runlog.iter_steps(packed))
    assert str(err.value) == (f"{packed / 'steps.jsonl'}: {packed / 'steps.jsonl.gz'} is here too: a run keeps each "
                              "log once, plain or gzipped; remove the one that is out of date (`unipo publish` "
                              "leaves only the gzipped one)")
    assert [str(e) for e in validate_run(packed)] == [str(err.value)]
    # the same records in both (a publish stopped between writing one and removing the other): publish finishes it
    assert gzlog.pack_run(packed) == ["1 plain file removed beside its gzipped copy"]
    assert validate_run(packed) == []
    # different records: publish says so and changes nothing
    shutil.copy(plain / "tokens" / "step_000000.json", packed / "tokens" / "step_000002.json")
    before = checksums(packed)
    result = unipo("publish", packed, cwd=tmp_path)
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert result.stderr.startswith(f"{packed / 'tokens' / 'step_000002.json'}: {packed / 'tokens' / 'step_000002.json.gz'} "
                                    "is here too")
    assert checksums(packed) == before
    assert any(f"{packed / 'tokens' / 'step_000002.json'}: " in str(e) and "is here too" in str(e)
               for e in validate_run(packed))


def _cut(path, keep: float = 0.5) -> None:
    data = path.read_bytes()
    path.write_bytes(data[:int(len(data) * keep)])


def test_a_cut_off_gzip_names_the_file_and_the_line(tmp_path):
    _, packed, _ = _published_pair(tmp_path, n_steps=400, token_steps=(0, 2))
    _cut(packed / "steps.jsonl.gz")
    errors = [str(e) for e in validate_run(packed)]
    assert len(errors) == 1
    line = int(errors[0].split("(line ", 1)[1].split(",")[0])
    assert 1 < line < 400
    assert errors[0].startswith(f"{packed / 'steps.jsonl.gz'} (line {line}, step {line - 1}): the gzipped file is "
                                f"cut off after line {line - 1} (")
    with pytest.raises(runlog.LogError) as err:
        list(runlog.iter_steps(packed))
    assert str(err.value) == errors[0]
    result = unipo("validate", packed, cwd=tmp_path)
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert errors[0] in result.stdout + result.stderr


def test_a_cut_off_or_corrupt_token_file_names_the_file_and_the_step(tmp_path):
    _, packed, _ = _published_pair(tmp_path)
    _cut(packed / "tokens" / "step_000002.json.gz")
    path = packed / "tokens" / "step_000004.json.gz"
    data = bytearray(path.read_bytes())
    data[-8] ^= 0xFF  # the CRC
    path.write_bytes(bytes(data))
    errors = [str(e) for e in validate_run(packed)]
    assert errors[0].startswith(f"{packed / 'tokens' / 'step_000002.json.gz'} (step 2): the gzipped file is cut off (")
    assert errors[1].startswith(f"{packed / 'tokens' / 'step_000004.json.gz'} (step 4): not a readable gzip file (")
    assert len(errors) == 2 and all("\n" not in e for e in errors)


def test_a_published_run_is_read_again_when_published(tmp_path):
    """The cached reader's key sees the gzipped files: publishing (or --plain) makes a new reader."""
    run = tmp_path / "run"
    write_run(run)
    first = reader_for(run)
    assert first.table.n == 6
    gzlog.pack_run(run)
    second = reader_for(run)
    assert second is not first and second.table.n == 6 and validate_run(run) == []
    gzlog.unpack_run(run)
    assert reader_for(run) is not second


def test_trim_steps_keeps_a_gzipped_file_gzipped(tmp_path):
    from unipo_build.core.step_budget import trim_step_file

    _, packed, _ = _published_pair(tmp_path, token_steps=(0,))
    plain_size = len(runlog.read_log_bytes(packed / "tokens" / "step_000000.json.gz"))
    before, after, kept = trim_step_file(packed, 0, plain_size - 1)
    assert before == plain_size and after < before and kept == 1
    assert not (packed / "tokens" / "step_000000.json").exists()
    assert len(runlog.read_log_bytes(packed / "tokens" / "step_000000.json.gz")) == after
    assert validate_run(packed) == []


def test_the_site_serves_a_gzipped_token_file_plain(tmp_path):
    plain, packed, _ = _published_pair(tmp_path)
    target = tmp_path / "site" / "step_000002.json"
    assert gzlog.copy_plain(packed / "tokens" / "step_000002.json.gz", target) == target.stat().st_size
    assert target.read_bytes() == (plain / "tokens" / "step_000002.json").read_bytes()
