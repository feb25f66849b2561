"""The shipped runs as one resumable command: `unipo suite`.

data/suite.yaml lists every run the course ships (the course's run of each algorithm, more seeds
of the five core ones, the ablation ladder). `unipo suite` makes the task data and the SFT warm
start if they are missing, then trains the runs that the output directory does not hold yet,
several at once in separate processes with one torch thread each (runs are independent, and one
thread per process is the fastest way to use a small machine's cores: FEASIBILITY.md), so a machine
with more cores finishes sooner. Each run is the ordinary `unipo train` command, so what the suite
makes is exactly what a reader gets from training one algorithm by hand.

Resumable: a finished run (its header has `finished_at`) is skipped; an interrupted one continues
from its last checkpoint (`unipo train --resume`); one interrupted before its first checkpoint is
moved aside to work/suite/interrupted/ and started again. Finished runs can be committed as they
complete, so the set may be made over more than one sitting.

Progress goes to the terminal and to work/suite/suite.log; each run's own output to
work/suite/logs/<name>.log; a summary (wall time of every run and of the whole suite, held-out
accuracy at the start and the end) to work/suite/summary.json.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Sequence

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from . import PROJECT
from training.runstate import run_state as trainer_state
from unipo_build.core.file_names import SFT_POOL
from unipo_build.core.numbers import plain_fixed

REPO = PROJECT  # the project root (training/__init__.py)
DEFAULT_SUITE = REPO / "data" / "suite.yaml"
WORK = REPO / "work" / "suite"


MIN_TIME_LEFT = 60  # seconds of --time-limit a run needs to be started: its setup, a rollout, its evaluations


class SuiteRun(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
    algorithm: str
    seed: int = 0
    detail: bool = Field(False, description="Token detail (every detail_every-th rollout); metrics only if false.")
    sampler_lag: int = Field(0, ge=0, description="Asynchronous sampling: rollouts sampled by the policy of this "
                                                  "many rollouts before (unipo train --sampler-lag); 0: synchronous.")


class Suite(BaseModel):
    model_config = ConfigDict(extra="forbid")
    preset: str = "tiny"
    rollouts: int = Field(ge=1)
    warm_start_steps: int | None = Field(None, ge=1)
    detail_every: int = Field(50, ge=1)
    eval_every: int | None = Field(None, ge=1, description="Rollouts between periodic held-out evaluations "
                                                           "(default: the preset's).")
    checkpoint_every: int | None = Field(None, ge=1, description="Rollouts between checkpoints (default: unipo "
                                                                 "train's, about four a run).")
    runs: list[SuiteRun]
    ladders: dict[str, list[str]] = Field(default_factory=dict)


class SuiteError(ValueError):
    """A suite file that cannot be used; the message names the file and the field."""


def load_suite(path: str | Path = DEFAULT_SUITE) -> Suite:
    path = Path(path)
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise SuiteError(f"{path}: no such suite file") from None
    except yaml.YAMLError as err:
        raise SuiteError(f"{path}: not valid YAML: {err}") from None
    try:
        suite = Suite.model_validate(raw)
    except ValidationError as err:
        lines = [f"{path}: {'.'.join(str(x) for x in e['loc'])}: {e['msg']}" for e in err.errors()]
        raise SuiteError("\n".join(lines)) from None
    names = [r.name for r in suite.runs]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise SuiteError(f"{path}: runs: names used twice: {', '.join(dupes)}")
    return suite


def run_state(run_dir: Path) -> str:
    """'finished', 'resumable' (a checkpoint to continue from), 'stale' (started, no checkpoint) or 'new'.

    The trainer's states (training/runstate.py), named for what the suite does with each.
    """
    state = trainer_state(run_dir)
    if state == "empty":  # nothing logged; something else there (a header) is moved aside all the same
        return "stale" if run_dir.exists() and any(run_dir.iterdir()) else "new"
    return {"finished": "finished", "checkpointed": "resumable", "started": "stale"}[state]


def train_command(suite: Suite, run: SuiteRun, out: Path, device: str, resume: bool,
                  time_limit: float | None = None, *, train: Sequence[str]) -> list[str]:
    """The command line that trains one run of the suite: ``train`` (the CLI's ``unipo train``, which the CLI
    hands down: training does not name the layer above it) with the suite's and the run's settings."""
    cmd = [*train, run.algorithm, "--preset", suite.preset,
           "--steps", str(suite.rollouts), "--seed", str(run.seed), "--out", str(out), "--threads", "1",
           "--device", device, "--no-progress", "--detail-every", str(suite.detail_every if run.detail else 0)]
    if suite.eval_every is not None:
        cmd += ["--eval-every", str(suite.eval_every)]
    if run.sampler_lag:
        cmd += ["--sampler-lag", str(run.sampler_lag)]
    if suite.checkpoint_every is not None:
        cmd += ["--checkpoint-every", str(suite.checkpoint_every)]
    if time_limit is not None:
        cmd += ["--time-limit", plain_fixed(time_limit, 0)]
    return cmd + (["--resume"] if resume else [])


def check_machine(suite: Suite, suite_path: str | Path, device: str) -> None:
    """Refuse a suite whose preset this machine cannot run (a CUDA preset without CUDA), or that names
    no preset, before anything is written."""
    from unipo_build.core.presets import get_preset

    try:
        preset = get_preset(suite.preset)
    except ValueError as err:
        raise SuiteError(f"{suite_path}: preset: {err}") from None
    if preset.needs_cuda:
        import torch

        if device == "cpu" or not torch.cuda.is_available():
            why = "--device cpu was asked for" if device == "cpu" else "torch finds no CUDA device here"
            raise SuiteError(f"{suite_path}: preset: {preset.name} needs a CUDA GPU and {why}; nothing was written: "
                             f"run this suite on a GPU machine, or use a suite file with preset: tiny")


def ensure_inputs(suite: Suite, threads: int, device: str, say) -> None:
    """The task data and the warm start, made here when missing (they are shared by every run).

    The task directory is the preset's (``task_dir``), generated at its ``task_level`` with three
    disjoint pools (generator version 3) when it does not exist yet.
    """
    from unipo_build.core.presets import get_preset

    preset = get_preset(suite.preset)
    tasks = REPO / preset.task_dir
    if not (tasks / SFT_POOL).is_file():
        from training.task import generate_task

        say(f"generating the task data in {tasks} (level {preset.task_level})")
        generate_task(tasks, level=preset.task_level)
    if preset.chat:  # a pretrained model: no warm start, its checkpoint made by `unipo model`
        if not (REPO / preset.chat.checkpoint / "config.json").is_file():
            raise SuiteError(f"no {preset.chat.model} checkpoint at {preset.chat.checkpoint}, which the {preset.name} "
                             f"preset starts from: make it with `unipo model {preset.chat.model}`, then run the suite "
                             f"again")
        return
    from training.sft import run_sft, warm_start_path

    sft_dir = warm_start_path(suite.preset, REPO)
    if not (sft_dir / "config.json").is_file():

        say(f"training the warm start ({suite.warm_start_steps or 'preset'} SFT steps at most, stop rule of the "
            f"preset) into {sft_dir}")
        t0 = time.time()
        run_sft(sft_dir, preset=suite.preset, steps=suite.warm_start_steps, task_dir=tasks, device=device,
                progress=False, threads=threads)
        say(f"warm start done in {plain_fixed(time.time() - t0, 0)} s")


def run_suite(suite_path: str | Path = DEFAULT_SUITE, out_dir: str | Path = REPO / "data" / "runs",
              jobs: int | None = None, only: list[str] | None = None, device: str = "auto",
              dry_run: bool = False, time_limit: float | None = None, *, train: Sequence[str] = ()) -> int:
    """Train the suite's runs that ``out_dir`` does not hold yet; ``train``: the command that trains one run
    (``unipo suite`` passes ``python -m unipo_build.cli.main train``)."""
    suite = load_suite(suite_path)
    check_machine(suite, suite_path, device)
    if not train:
        raise ValueError("run_suite: train= is the command that trains one run (unipo suite passes unipo train)")
    out_dir = Path(out_dir)
    jobs = jobs or os.cpu_count() or 1
    runs = [r for r in suite.runs if not only or r.name in only]
    unknown = sorted(set(only or []) - {r.name for r in suite.runs})
    if unknown:
        print(f"{suite_path}: no run named {', '.join(unknown)} (runs: {', '.join(r.name for r in suite.runs)})",
              file=sys.stderr)
        return 2
    WORK.mkdir(parents=True, exist_ok=True)
    log = open(WORK / "suite.log", "a", encoding="utf-8")

    def say(message: str) -> None:
        line = f"[{datetime.now().strftime('%H:%M:%S')}] {message}"
        print(line, flush=True)
        log.write(line + "\n")
        log.flush()

    states = {r.name: run_state(out_dir / r.name) for r in runs}
    todo = [r for r in runs if states[r.name] != "finished"]
    say(f"suite {suite_path}: {len(runs)} runs, {len(runs) - len(todo)} finished, {len(todo)} to train, "
        f"{min(jobs, max(len(todo), 1))} at a time, into {out_dir}")
    if dry_run:
        for r in todo:
            cmd = train_command(suite, r, out_dir / r.name, device, states[r.name] == "resumable", train=train)
            say(f"would run ({states[r.name]}): {' '.join(cmd)}")
        return 0
    started_all = time.time()
    ensure_inputs(suite, threads=jobs, device=device, say=say)
    # --time-limit: each run gets what is left of it when it starts (unipo train --time-limit).
    deadline = started_all + time_limit if time_limit is not None else None
    (WORK / "logs").mkdir(exist_ok=True)
    pending = list(todo)
    running: dict[str, tuple[subprocess.Popen, float]] = {}
    results: dict[str, dict] = {}
    env = {**os.environ, "UNIPO_THREADS": "1", "OMP_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1"}
    try:
        while pending or running:
            while pending and len(running) < jobs:
                r = pending.pop(0)
                run_dir = out_dir / r.name
                state = run_state(run_dir)
                if state == "stale":
                    aside = WORK / "interrupted" / f"{r.name}-{datetime.now().strftime('%Y%m%d-%H%M%S')}"
                    aside.parent.mkdir(parents=True, exist_ok=True)
                    shutil.move(str(run_dir), str(aside))
                    say(f"{r.name}: interrupted before its first checkpoint; moved to {aside}, starting again")
                left = None if deadline is None else deadline - time.time()
                if left is not None and left < MIN_TIME_LEFT:
                    say(f"{r.name}: not started, {plain_fixed(max(left, 0), 0)} s of --time-limit left")
                    continue
                cmd = train_command(suite, r, run_dir, device, state == "resumable", left, train=train)
                with open(WORK / "logs" / f"{r.name}.log", "a", encoding="utf-8") as fh:
                    proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=fh, stderr=subprocess.STDOUT,
                                            start_new_session=True)
                running[r.name] = (proc, time.time())
                say(f"start {r.name} ({'resumed' if state == 'resumable' else 'new'})")
            time.sleep(2)
            for name, (proc, t0) in list(running.items()):
                if proc.poll() is None:
                    continue
                del running[name]
                seconds = time.time() - t0
                ok = proc.returncode == 0 and run_state(out_dir / name) == "finished"
                results[name] = {"ok": ok, "seconds": round(seconds), "returncode": proc.returncode}
                done = sum(1 for v in results.values() if v["ok"])
                where = "" if ok else f"; see {WORK / 'logs' / (name + '.log')}"
                say(f"{'done' if ok else 'FAILED'} {name} in {plain_fixed(seconds / 60, 1)} min "
                    f"({done}/{len(todo)} done{where})")
    except KeyboardInterrupt:
        for name, (proc, _) in running.items():
            os.killpg(proc.pid, signal.SIGINT)
        for proc, _ in running.values():
            proc.wait()
        say(f"interrupted: {len(running)} runs stopped at their last checkpoint; run `unipo suite` again to continue")
        return 130
    wall = time.time() - started_all
    failed = [n for n, v in results.items() if not v["ok"]]
    summary = {"suite": str(suite_path), "out": str(out_dir), "jobs": jobs, "device": device,
               "cores": os.cpu_count(), "wall_seconds": round(wall),
               "finished_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
               "runs": {**results, **{r.name: {"ok": True, "skipped": True} for r in runs if r.name not in results}},
               "load_average": os.getloadavg() if hasattr(os, "getloadavg") else None}
    (WORK / "summary.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    say(f"suite finished in {plain_fixed(wall / 60, 1)} min; "
        f"{len(failed)} failed{': ' + ', '.join(failed) if failed else ''}")
    return 1 if failed else 0
