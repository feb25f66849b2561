"""prime-rl changed its token export's fields without moving schema_version from 1 (issue 30 item 6): the import
tells a layout by the fields a line holds, reads each it knows (written in their exact format by
tests/trainer_formats.py) and refuses another, or two mixed, with one line naming the file, line, step and field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from trainer_formats import PrimeFileMonitor, prime_configs, prime_export, prime_sequence, prime_sequence_channels
from unipo_build.trainers import import_log
from unipo_build.core.runlog import LogError

SEQUENCES = [((0, 0, 0, 0, [5, 6], [7, 8], [-0.5, -1.0], [-0.6, -1.0], 0.5), 1.0),
             ((0, 0, 1, 1, [5, 6], [9], [-0.2], [-0.2], -0.5), 0.0)]


def write_run(run: Path, layouts=("559b447",)) -> Path:
    prime_configs(run)
    mon = PrimeFileMonitor(run)
    for step in range(len(layouts)):
        mon.log({"optim/lr": 3e-6, "optim/grad_norm": 0.25}, step=step, time=1000.0 + step)
    mon.close()
    for step, layout in enumerate(layouts):
        rows = [prime_sequence(*args) if layout == "559b447" else prime_sequence_channels(*args, reward=reward)
                for args, reward in SEQUENCES]
        for row in rows:
            row["step"] = step
            if "export_step" in row:
                row["export_step"] = step
        prime_export(run, step, rows)
    return run


@pytest.mark.parametrize("layout", ["559b447", "004274e"])
def test_each_layout_imports(tmp_path, layout):
    header = import_log("prime-rl", write_run(tmp_path / "run", (layout,)), tmp_path / "out", algorithm="grpo")
    assert header.software["prime-rl"] == f"token export schema 1, layout of commit {layout}"
    detail = json.loads((tmp_path / "out" / "tokens" / "step_000000.json").read_text())
    rewards = [r.get("reward") for p in detail["prompts"] for r in p["responses"]]
    missing = " ".join(header.missing)
    if layout == "004274e":  # this layout exports the rewards
        assert rewards == [1.0, 0.0] and "rewards" not in missing
    else:
        assert rewards == [None, None] and "rewards (responses' reward is null)" in missing
    assert f"token export layout of prime-rl {layout}" in header.notes


def test_a_layout_of_neither_is_refused_by_its_fields(tmp_path):
    run = write_run(tmp_path / "run")
    path = run / "token_exports" / "step_0" / "rank_0.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    for row in rows:
        for name in ("rl_weights", "ce_weights", "ref_kl_weights"):
            del row[name]
        row["sample_weights"] = [1.0] * len(row["token_ids"])
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(LogError) as err:
        import_log("prime-rl", run, tmp_path / "out", algorithm="grpo")
    line = str(err.value)
    assert line.startswith(f"{path} (line 1, step 0): schema_version: a token export layout this importer does not "
                           "know (schema_version 1 with the fields ")
    assert "sample_weights" in line and "559b447: ce_weights, ref_kl_weights, rl_weights" in line
    assert "004274e: export_step, losses, rewards, run_id" in line and "\n" not in line
    assert not (tmp_path / "out").exists()


def test_two_layouts_mixed_are_refused(tmp_path):
    run = write_run(tmp_path / "run", ("559b447", "004274e"))
    with pytest.raises(LogError) as err:
        import_log("prime-rl", run, tmp_path / "out", algorithm="grpo")
    assert str(err.value).startswith(f"{run / 'token_exports' / 'step_1' / 'rank_0.jsonl'} (line 1, step 1): "
                                     "schema_version: a line in the layout of prime-rl 004274e")
    assert "exports of two prime-rl versions mixed" in str(err.value)


def test_a_line_without_what_the_import_reads_is_refused(tmp_path):
    run = write_run(tmp_path / "run")
    path = run / "token_exports" / "step_0" / "rank_0.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    del rows[0]["trainer_logprobs"]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(LogError, match=r"trainer_logprobs: a token export line without trainer_logprobs: not "
                                       r"prime-rl's token export"):
        import_log("prime-rl", run, tmp_path / "out", algorithm="grpo")
