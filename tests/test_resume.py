"""A run killed mid-way and resumed loses no step and logs none twice.

The trainer runs in a subprocess (the real CLI), is killed with SIGKILL once it has
checkpointed and logged past the checkpoint, then `--resume` finishes it.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("torch")

from training_fixtures import save_tiny_checkpoint  # noqa: E402
from unipo_build import runlog  # noqa: E402
from unipo_build.specs import load_algorithm  # noqa: E402

pytestmark = pytest.mark.slow

RUNNER = """
import sys, json
import training.rl as rl
opts = rl.TrainOptions(**json.loads(sys.argv[1]))
rl.train(opts)
"""


def _launch(options: dict) -> subprocess.Popen:
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "HF_HUB_OFFLINE": "1"}
    return subprocess.Popen([sys.executable, "-c", RUNNER, json.dumps(options)], cwd=Path(__file__).parent.parent,
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def _steps_logged(run: Path) -> int:
    path = run / "steps.jsonl"
    return sum(1 for line in path.open() if line.endswith("\n")) if path.exists() else 0


def test_killed_run_resumes_without_losing_or_repeating_a_step(tmp_path):
    checkpoint = save_tiny_checkpoint(tmp_path / "policy")
    run = tmp_path / "run"
    options = dict(algorithm="grpo", steps=6, model=str(checkpoint), out=str(run), progress=False, eval_n=4,
                   eval_every=100, detail_every=1, checkpoint_every=2,
                   rl_overrides={"prompts_per_step": 2, "group_size": 4, "max_new_tokens": 8})
    proc = _launch(options)
    spec = load_algorithm("grpo")
    per_rollout = spec.defaults.epochs * spec.defaults.minibatches  # updates per rollout: GRPO's spec defaults
    deadline = time.time() + 600
    # Kill after the checkpoint at rollout 2 exists and at least one later step is logged.
    while time.time() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"trainer exited early: {proc.stderr.read()[-2000:]}")
        meta = run / "checkpoint" / "meta.json"
        if meta.exists() and _steps_logged(run) > json.loads(meta.read_text())["step"]:
            break
        time.sleep(0.2)
    else:
        proc.kill()
        pytest.fail("trainer did not reach a checkpoint in time")
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    checkpointed = json.loads((run / "checkpoint" / "meta.json").read_text())["step"]
    assert _steps_logged(run) > checkpointed  # there is something after the checkpoint to discard

    resumed = _launch({**options, "resume": True})
    assert resumed.wait(timeout=900) == 0, resumed.stderr.read()[-2000:]

    steps = [r.step for r in runlog.iter_steps(run)]  # iter_steps itself rejects gaps and repeats
    assert steps == list(range(6 * per_rollout))
    rollouts = [r.rollout for r in runlog.iter_steps(run)]
    assert rollouts == [s // per_rollout for s in steps]
    assert runlog.token_steps(run) == steps
    phases = [e.phase for e in runlog.iter_evals(run)]
    assert phases == ["start", "end"]
    assert not (run / "checkpoint").exists()  # removed once the run finished
    assert runlog.validate_run(run) == []
