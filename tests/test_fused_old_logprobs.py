"""The old log-probs from the first update's own forward pass (training/rl.py ``fill_old``), on the CPU.

When a rollout's first update covers every row and no KL sits in the reward, the trainer takes the
rollout's old log-probs from that update's forward pass instead of a separate pass before it (issue 45:
one forward pass fewer per rollout). A pass with gradients computes the same bits as one without, so the
run log must be byte for byte what the separate pass gave: every logged value but the timings, the token
files included, on the later epochs too (which read the filled old log-probs).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("torch")

from training_fixtures import coin_flip_score  # noqa: E402

SMOKE = {"prompts_per_step": 4, "group_size": 4, "max_new_tokens": 12}


def _logged(run: Path) -> dict:
    """Steps and token files of a run, without wall-clock fields."""
    def clean(o):
        if isinstance(o, dict):
            return {k: clean(v) for k, v in o.items() if not k.startswith("time/")}
        return [clean(v) for v in o] if isinstance(o, list) else o

    out = {"steps": [clean(json.loads(line)) for line in (run / "steps.jsonl").read_text().splitlines() if line]}
    for f in sorted((run / "tokens").glob("step_*.json")):
        out[f.name] = clean(json.loads(f.read_text()))
    return out


def _rollouts(path, out: Path, monkeypatch, algorithm: str, fuse: bool, rollouts: int = 2):
    import training.rl as rl

    monkeypatch.setattr(rl, "score_response", coin_flip_score)  # mixed groups: advantages, real gradients
    monkeypatch.setattr(rl.Trainer, "fuse_old", fuse)
    passes = []
    real = rl.Trainer._old_and_ref
    monkeypatch.setattr(rl.Trainer, "_old_and_ref", lambda self, *a: passes.append(1) or real(self, *a))
    t = rl.Trainer(rl.TrainOptions(algorithm=algorithm, steps=rollouts, model=str(path), out=str(out), progress=False,
                                   detail_every=1, device="cpu", threads=1, eval_every=10**9,
                                   rl_overrides={**SMOKE, "probe_prompts": 0}))
    t.setup()
    for _ in range(rollouts):
        t.run_rollout()
    return _logged(out), len(passes), t.fused_old_logprobs


@pytest.mark.slow
@pytest.mark.parametrize("algorithm", ["grpo", "gspo"])
def test_old_logprobs_from_the_first_update_log_the_same_bits(tiny_policy, tmp_path, monkeypatch, algorithm):
    fused, fused_passes, was_fused = _rollouts(tiny_policy, tmp_path / "fused", monkeypatch, algorithm, True)
    separate, separate_passes, _ = _rollouts(tiny_policy, tmp_path / "separate", monkeypatch, algorithm, False)
    assert was_fused and fused_passes == 0 and separate_passes == 2  # one separate pass per rollout, or none
    assert len(fused["steps"]) == 4  # tiny: 2 epochs x 1 minibatch, the second reading the filled old log-probs
    assert fused == separate
