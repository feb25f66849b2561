"""The training driver as a user meets it: Ctrl-C, resuming, threads, what the files look like.

- Ctrl-C prints one line (where the run stands, the command that continues it) and exits 130;
  that command finishes the run with no step lost or repeated, also when the run was stopped
  before its first checkpoint (it then starts over);
- --threads 1 holds through the warm start `unipo train` runs when there is none;
- the trainer's files get the permissions of any new file, its header names paths relative
  to the project, and `unipo summary` reports the wall time the header records.

The runs use the real CLI on the shipped warm start (data/warm-start/tiny), a few rollouts each.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import subprocess
import time
from pathlib import Path

import pytest

pytest.importorskip("torch")

from cli_helpers import ROOT, UNIPO  # noqa: E402
from cli_helpers import unipo as _unipo  # noqa: E402
from helpers_runlog import checksums  # noqa: E402
from unipo_build.core import runlog  # noqa: E402
from unipo_build.core.reader import validate_run  # noqa: E402

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parent.parent


def unipo(*args, cwd=ROOT, env_extra=None):
    """`unipo` run in ``cwd`` (outside the project, so nothing lands in it) on this checkout's project.

    Training commands get 10 minutes: on a shared 2-core machine two rollouts have taken over 2.
    """
    return _unipo(*args, cwd=cwd, env_extra={"UNIPO_ROOT": str(ROOT), **(env_extra or {})}, timeout=600)


@pytest.fixture(scope="module")
def policy() -> Path:
    """The warm start the project ships: its short answers make a rollout several times quicker than a random
    policy's, which writes every answer to the length limit (the driver's behaviour is the same for both)."""
    return ROOT / "data" / "warm-start" / "tiny"


def _lines(path: Path) -> int:
    return sum(1 for line in path.open() if line.endswith("\n")) if path.exists() else 0


def _interrupt_when(argv: list[str], cwd: Path, ready) -> subprocess.CompletedProcess:
    """Start `unipo ARGV`, send SIGINT (Ctrl-C) once ready() holds, and wait for it to exit."""
    # Ctrl-C's default action restored in the child: a test run started in the background (nohup,
    # `cmd &`) inherits SIGINT ignored, and Python then never raises KeyboardInterrupt.
    proc = subprocess.Popen([str(UNIPO), *argv], cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "UNIPO_ROOT": str(ROOT)},
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.time() + 900
    while not ready():
        if proc.poll() is not None or time.time() > deadline:
            proc.kill()
            pytest.fail(f"the run ended before it could be interrupted: {proc.communicate()[1][-2000:]}")
        time.sleep(0.1)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=600)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def _message(result) -> str:
    """The one line Ctrl-C prints (the progress bars are off: nothing else is on stderr)."""
    assert result.returncode == 130, result.stderr[-2000:]
    assert "Traceback" not in result.stderr and "KeyboardInterrupt" not in result.stderr, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    return lines[0]


def test_ctrl_c_then_the_printed_command_finishes_the_run(policy, tmp_path):
    run = tmp_path / "run"
    steps = 5
    argv = ["train", "reinforce", "--model", str(policy), "--out", "run", "--steps", str(steps), "--checkpoint-every", "2",
            "--eval-n", "8", "--threads", "1", "--no-progress"]
    meta = run / "checkpoint" / "meta.json"

    def past_first_checkpoint() -> bool:
        # REINFORCE: one update per rollout; a checkpoint after the 2nd and the 4th. Stop once the 3rd rollout's
        # update is logged past the checkpoint: that holds for a whole rollout (until the checkpoint after the 4th),
        # and the 5th rollout and the last evaluation are still to come, so the SIGINT cannot meet a finished run
        # between two polls even on a loaded machine. (With a checkpoint after every rollout, the default of a run
        # of 4, a step is past the checkpoint only while the next one is written, and such runs sometimes ended
        # between two polls.)
        try:
            return _lines(run / "steps.jsonl") > json.loads(meta.read_text())["step"]
        except (OSError, ValueError):  # no checkpoint yet, or one being replaced
            return False

    result = _interrupt_when(argv, tmp_path, past_first_checkpoint)
    line = _message(result)
    saved = json.loads(meta.read_text())
    logged = _lines(run / "steps.jsonl")
    match = re.fullmatch(rf"interrupted: run holds (\d+) of {steps} rollouts \((\d+) updates? logged\) and its last checkpoint "
                         r"is after rollout (\d+); continue it with: (.*)", line)
    assert match, line
    assert int(match[2]) == logged and int(match[3]) == saved["rollout"] and int(match[1]) >= saved["rollout"]
    command = match[4]
    assert command == shlex.join(["unipo", *argv, "--resume"])

    # Nothing of the run was lost, and a plain re-run refuses to touch it.
    before = checksums(run)
    again = unipo(*argv, cwd=tmp_path)
    assert again.returncode == 2 and "add --resume to continue it" in again.stderr
    assert checksums(run) == before

    finished = subprocess.run([str(UNIPO), *shlex.split(command)[1:]], cwd=tmp_path, capture_output=True, text=True,
                              timeout=600, env={**os.environ, "UNIPO_ROOT": str(ROOT)})
    assert finished.returncode == 0, finished.stderr[-2000:]
    logged_steps = [r.step for r in runlog.iter_steps(run)]  # iter_steps rejects gaps and repeats
    assert logged_steps == list(range(steps)) and [r.rollout for r in runlog.iter_steps(run)] == logged_steps
    assert [e.phase for e in runlog.iter_evals(run)] == ["start", "end"]
    assert validate_run(run) == []
    assert not [p for p in run.iterdir() if p.name.startswith("checkpoint")]

    # Files as any other program writes them, paths relative to the project, one wall time.
    umask = os.umask(0)
    os.umask(umask)
    for path in [run / "header.json", run / "steps.jsonl", *sorted((run / "tokens").glob("*.json"))]:
        assert path.stat().st_mode & 0o777 == 0o666 & ~umask, path
    text = (run / "header.json").read_text()
    assert str(tmp_path) not in text and str(REPO) not in text
    header = runlog.read_header(run)
    # inside the project, relative to it (a path outside is named .../<name>: test_training_smoke, test_runlog)
    assert header.task.source == "data/tasks" and header.model.checkpoint == "data/warm-start/tiny"
    summary = json.loads(unipo("summary", run, "--json", "--no-moments").stdout)
    assert summary["wall_time_s"] == header.wall_time_s > 0


def test_ctrl_c_before_the_first_checkpoint_then_resume_starts_over(policy, tmp_path):
    run = tmp_path / "run"
    argv = ["train", "reinforce", "--model", str(policy), "--out", "run", "--steps", "2", "--checkpoint-every", "2",
            "--eval-n", "8", "--threads", "1", "--no-progress"]
    # 2 rollouts, no checkpoint before the end (every 2); stop once the first rollout's update is logged.
    line = _message(_interrupt_when(argv, tmp_path, lambda: _lines(run / "steps.jsonl") >= 1))
    assert not (run / "checkpoint").exists()
    assert re.match(r"interrupted: run holds [01] of 2 rollouts \([12] updates? logged\)", line), line
    assert line.endswith("and it has no checkpoint yet; start it over with: " + shlex.join(["unipo", *argv, "--resume"]))
    assert unipo(*argv, cwd=tmp_path).returncode == 2  # a plain re-run says to add --resume
    resumed = unipo(*argv, "--resume", cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert "no checkpoint yet, so the run starts over" in resumed.stderr
    steps = list(runlog.iter_steps(run))
    assert [r.step for r in steps] == [0, 1]  # REINFORCE: one update per rollout
    assert [e.phase for e in runlog.iter_evals(run)] == ["start", "end"]
    assert runlog.token_steps(run) == [s.step for s in steps if s.has_tokens]
    assert validate_run(run) == []


def test_threads_hold_through_the_warm_start(tmp_path, monkeypatch):
    """No warm start yet: `unipo train --threads 1` trains it with 1 thread and the RL loop keeps 1.

    The SFT is cut to two steps of a small preset; the preset's own thread count (2) is what the
    warm start used to set, and what the RL loop then kept.
    """
    import torch

    import training.rl as rl
    import training.sft as sft
    from training.presets import TINY, with_overrides
    from training.task import generate_task
    from unipo_build.cli import main as cli

    project = tmp_path / "project"
    generate_task(project / "data" / "tasks", seed=3, n_train=64, n_eval=16)
    monkeypatch.setattr(rl, "REPO", project)
    small = with_overrides(TINY, sft={"batch_size": 8, "eval_every": 2, "eval_n": 4, "eval_batch_size": 16,
                                      "max_new_tokens": 6, "warmup_steps": 1})
    assert small.threads == 2
    seen = {}
    real_sft = sft.run_sft

    def two_step_sft(out, **kwargs):
        seen["threads"] = kwargs["threads"]
        meta = real_sft(out, **{**kwargs, "preset": small, "steps": 2})
        seen["after_sft"] = torch.get_num_threads()
        return meta

    monkeypatch.setattr(sft, "run_sft", two_step_sft)
    torch.set_num_threads(2)
    assert cli.main(["train", "reinforce", "--steps", "1", "--eval-n", "4", "--threads", "1", "--no-progress",
                     "--out", str(tmp_path / "run")]) == 0
    assert seen == {"threads": 1, "after_sft": 1}
    assert (project / "work" / "sft-tiny" / "config.json").is_file()
    assert runlog.read_header(tmp_path / "run").hardware.threads == 1

    # UNIPO_THREADS does the same, and a value that is not a count is a message, not a traceback.
    bad = unipo("train", "reinforce", "--out", tmp_path / "other", cwd=tmp_path, env_extra={"UNIPO_THREADS": "two"})
    assert bad.returncode == 2 and "UNIPO_THREADS='two'" in bad.stderr and "Traceback" not in bad.stderr


def test_no_progress_silences_transformers_bars(policy, tmp_path):
    result = unipo("train", "reinforce", "--model", policy, "--out", tmp_path / "run", "--steps", "1", "--eval-n", "4",
                   "--threads", "1", "--no-progress", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "Loading weights" not in result.stderr and "it/s]" not in result.stderr, result.stderr
    assert result.stdout.strip() == f"reinforce: run written to {tmp_path / 'run'}"


def test_ctrl_c_during_the_warm_start_leaves_nothing(tmp_path, monkeypatch, capsys):
    import training.rl as rl
    import training.sft as sft
    from unipo_build.cli import main as cli

    monkeypatch.setattr(rl, "REPO", tmp_path)  # a project without a warm start

    def interrupted_sft(out, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(sft, "run_sft", interrupted_sft)
    run = tmp_path / "run"
    assert cli.main(["train", "grpo", "--out", str(run), "--threads", "1", "--no-progress"]) == 130
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1] == (f"interrupted before the run started (during the warm start or while loading the model); "
                       f"nothing of {run} was written: run the same command again")
    assert not run.exists()
