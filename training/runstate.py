"""What a run directory holds, and what `unipo train` may do with it.

A run directory is one of: empty (nothing logged), finished (its header has ``finished_at``),
checkpointed (an unfinished run with a checkpoint to continue from) or started (stopped before its
first checkpoint). The trainer refuses an --out that holds a run unless --resume says what to do
with it, so nothing of a reader's is overwritten by a plain re-run; `unipo suite` uses the same
states to decide what to resume and what to start again.

No torch here: the suite and the CLI read states without loading the trainer.
"""

from __future__ import annotations

import ast
import json
import shutil
from pathlib import Path
from typing import Callable

from unipo_build.core import runlog

CHECKPOINT = "checkpoint"
#: A checkpoint's record: the step and rollout it was taken after, the generators' states, the time spent.
CHECKPOINT_META = "meta.json"


class TrainError(Exception):
    """A mistake in what was asked (a missing path, an --out that holds a run): the message says what to do."""


class AlreadyFinished(TrainError):
    """--out holds a finished run: nothing to train or resume there."""


class Interrupted(Exception):
    """Training stopped by Ctrl-C; says where the run stands and what a resume will redo."""

    def __init__(self, out: Path, rollout: int, total: int, step: int, checkpoint_rollout: int | None,
                 started: bool = True):
        self.out, self.rollout, self.total, self.step = out, rollout, total, step
        self.checkpoint_rollout, self.started = checkpoint_rollout, started
        saved = (f"last checkpoint after rollout {checkpoint_rollout}" if checkpoint_rollout
                 else "no checkpoint yet, so a resume starts it over")
        super().__init__(f"interrupted: {out} holds {rollout} of {total} rollouts ({step} updates logged; {saved})"
                         if started else f"interrupted before {out} was started (warm start or model loading)")


def run_state(out: Path) -> str:
    """What ``out`` holds: "empty", "finished", "checkpointed" (resumable) or "started" (no checkpoint yet).
    A published run (steps.jsonl.gz: ``unipo publish`` gzips finished runs only) is finished."""
    plain, packed = runlog.log_candidates(out / runlog.STEPS)
    if packed.exists():
        return "finished"
    if not (plain.exists() and plain.stat().st_size):
        return "empty"
    try:
        if json.loads((out / runlog.HEADER).read_text(encoding="utf-8")).get("finished_at"):
            return "finished"
    except (OSError, ValueError):
        pass
    return "checkpointed" if (checkpoint_dir(out) / CHECKPOINT_META).exists() else "started"


def check_out_dir(out: Path, resume: bool) -> None:
    """Refuse, before anything is loaded or written, an ``out`` that holds a run this command would overwrite."""
    state = run_state(out)
    if state == "finished":
        raise AlreadyFinished(f"{out} already holds a finished run; nothing was changed: choose another "
                              "--out (or delete that directory first)")
    if resume or state == "empty":
        return
    if state == "checkpointed":
        raise TrainError(f"{out} holds an unfinished run: add --resume to continue it from its last "
                         "checkpoint, or choose another --out")
    raise TrainError(f"{out} holds a run stopped before its first checkpoint: add --resume to start it over "
                     "there, or choose another --out")


def checkpoint_dir(out: Path) -> Path:
    """The run's checkpoint; the previous one if a kill came while the new one was renamed into place."""
    current, previous = out / CHECKPOINT, out / (CHECKPOINT + ".old")
    return previous if not current.exists() and (previous / CHECKPOINT_META).exists() else current


def checkpoint_rollout(out: Path) -> int | None:
    """The rollout the run's last checkpoint was taken after (None: no checkpoint)."""
    meta = checkpoint_dir(out) / CHECKPOINT_META
    return json.loads(meta.read_text(encoding="utf-8"))["rollout"] if meta.exists() else None


def logged_updates(out: Path) -> int:
    """Updates ``out``'s steps.jsonl holds: what a message reports, even when Ctrl-C came between
    writing a step and counting it."""
    if not runlog.has_log(out, runlog.STEPS):
        return 0
    try:
        return sum(1 for _, line in runlog.log_lines(runlog.log_file(out, runlog.STEPS)) if line.strip())
    except runlog.LogError:
        return 0


def checkpoint_interval(rollouts: int) -> int:
    """Rollouts between checkpoints: 10, or fewer for a short run so it has about four to resume from."""
    return max(1, min(10, rollouts // 4))


def replace_checkpoint(out: Path, write: Callable[[Path], None]) -> None:
    """``write(folder)`` into a temporary folder, then renamed over the run's checkpoint.

    A kill at any moment leaves a whole checkpoint: the new one, or the previous one as
    ``checkpoint.old`` (which :func:`checkpoint_dir` then finds).
    """
    tmp, final, old = out / (CHECKPOINT + ".tmp"), out / CHECKPOINT, out / (CHECKPOINT + ".old")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    write(tmp)
    shutil.rmtree(old, ignore_errors=True)
    if final.exists():
        final.rename(old)
    tmp.rename(final)
    shutil.rmtree(old, ignore_errors=True)


def remove_checkpoints(out: Path) -> None:
    """A finished run keeps its logs only."""
    for leftover in (CHECKPOINT, CHECKPOINT + ".old", CHECKPOINT + ".tmp"):
        shutil.rmtree(out / leftover, ignore_errors=True)


def clear_logged_steps(out: Path) -> None:
    """Empty the steps, evaluations and token files of a run stopped before its first checkpoint, which
    `--resume` starts over (the header is rewritten by the new start). Such a run is unfinished, so plain (only
    a finished run is gzipped); any gzipped file goes too, so the new start writes the only copy."""
    for name in (runlog.STEPS, runlog.EVALS):
        plain, packed = runlog.log_candidates(out / name)
        plain.write_text("", encoding="utf-8")
        packed.unlink(missing_ok=True)
    for token_file in runlog.token_paths(out):
        token_file.unlink()


def rng_state(rng) -> list:
    """A ``random.Random``'s state as JSON data: [version, [625 ints], gauss_next]."""
    version, internal, gauss_next = rng.getstate()
    return [version, list(internal), gauss_next]


def rng_from_state(saved) -> tuple:
    """What ``random.Random.setstate`` takes, from :func:`rng_state`'s data (or, from a checkpoint
    written before it, the state's repr, read as a literal: nothing in it is evaluated)."""
    if isinstance(saved, str):
        saved = ast.literal_eval(saved)
    version, internal, gauss_next = saved
    return version, tuple(internal), gauss_next
