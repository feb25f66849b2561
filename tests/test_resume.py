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

from unipo_build.core import runlog  # noqa: E402
from unipo_build.core.reader import validate_run  # noqa: E402
from unipo_build.core.specs import load_algorithm  # noqa: E402

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


def test_killed_run_resumes_without_losing_or_repeating_a_step(tmp_path, tiny_policy):
    checkpoint = tiny_policy
    run = tmp_path / "run"
    options = dict(algorithm="grpo", steps=6, model=str(checkpoint), out=str(run), progress=False, eval_n=4,
                   eval_every=100, detail_every=1, checkpoint_every=2,
                   # two minibatches, so that the update order (update_rng) matters as much as the prompts drawn
                   rl_overrides={"prompts_per_step": 2, "group_size": 4, "max_new_tokens": 8, "minibatches": 2})
    proc = _launch(options)
    per_rollout = load_algorithm("grpo").defaults.epochs * 2  # updates per rollout: GRPO's epochs, 2 minibatches
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
    meta = json.loads((run / "checkpoint" / "meta.json").read_text())
    checkpointed = meta["step"]
    assert _steps_logged(run) > checkpointed  # there is something after the checkpoint to discard
    # the random generators' states are saved as data (version, 625 ints, gauss), not as code to evaluate
    for name in ("prompt_rng", "update_rng"):
        assert isinstance(meta[name], list) and len(meta[name][1]) == 625, name

    resumed = _launch({**options, "resume": True})
    uninterrupted = _launch({**options, "out": str(tmp_path / "uninterrupted")})
    assert resumed.wait(timeout=900) == 0, resumed.stderr.read()[-2000:]
    assert uninterrupted.wait(timeout=900) == 0, uninterrupted.stderr.read()[-2000:]

    steps = [r.step for r in runlog.iter_steps(run)]  # iter_steps itself rejects gaps and repeats
    assert steps == list(range(6 * per_rollout))
    rollouts = [r.rollout for r in runlog.iter_steps(run)]
    assert rollouts == [s // per_rollout for s in steps]
    assert runlog.token_steps(run) == steps
    phases = [e.phase for e in runlog.iter_evals(run)]
    assert phases == ["start", "end"]
    assert not (run / "checkpoint").exists()  # removed once the run finished
    assert validate_run(run) == []
    # the resumed run is the uninterrupted one: every update's metrics and token file, every evaluation
    assert _logged(run) == _logged(tmp_path / "uninterrupted")


def _logged(run: Path) -> dict:
    """A run's logged numbers, without wall-clock times."""
    steps = [{**r.model_dump(), "metrics": {k: v for k, v in r.metrics.items() if not k.startswith("time/")}}
             for r in runlog.iter_steps(run)]
    tokens = {s: runlog.read_step_detail(run, s).model_dump() for s in runlog.token_steps(run)}
    evals = [e.model_dump() for e in runlog.iter_evals(run)]
    return {"steps": steps, "tokens": tokens, "evals": evals}


def test_random_state_is_read_as_data():
    """A checkpoint's random states are JSON data; one written before that (the state's repr) is
    read as a literal, so that a crafted meta.json runs no code."""
    import random

    from training.runstate import rng_from_state, rng_state

    rng, reference = random.Random(3), random.Random(3)
    rng.random()
    expected = [reference.random() for _ in range(6)][1:]
    saved = json.loads(json.dumps(rng_state(rng)))
    for data in (saved, repr(rng.getstate())):
        again = random.Random()
        again.setstate(rng_from_state(data))
        assert [again.random() for _ in range(5)] == expected
    with pytest.raises(ValueError):
        rng_from_state("__import__('os').getcwd()")
