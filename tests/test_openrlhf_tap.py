"""The token tap: its version guard and signature check, its post-import hooks, and a CPU Ray run.

The Ray test starts a local Ray instance whose runtime environment names
``unipo_build.trainers.openrlhf.tap.setup`` as the worker_process_setup_hook, exactly as
``unipo_build.trainers.openrlhf.launch`` does, and runs OpenRLHF 0.11.2's own experience and policy code
in a worker (tests/openrlhf_tap_worker.py). The driver itself is never patched: what the shards
hold was recorded inside the worker. The shards are then converted with a TensorBoard file into a
canonical run that ``unipo validate`` accepts, and its numbers are checked against the worker's.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import types
from pathlib import Path

import numpy as np
import pytest

from cli_helpers import guide_commands, unipo
from openrlhf_support import require_openrlhf, stub_dir
from unipo_build.core import runlog
from unipo_build.core.reader import validate_run
from unipo_build.trainers import import_log
from unipo_build.trainers.tfevents import encode_event, encode_record
from unipo_build.trainers.openrlhf import VersionError, check_version, tap
from unipo_build.trainers.openrlhf.command import RunOptions, build_command, write_manifest
from unipo_build.core.recompute import check_step

ROOT = Path(__file__).resolve().parent.parent


def test_version_guard_names_the_version_and_the_fix():
    assert check_version("0.11.2") == "0.11.2"
    with pytest.raises(VersionError, match=r"OpenRLHF 0\.10\.2 is installed.*exactly 0\.11\.2.*pip install "
                                           r"openrlhf==0\.11\.2"):
        check_version("0.10.2")


def test_signatures_of_every_wrapped_function_match_openrlhf_0_11_2():
    require_openrlhf()
    import importlib

    assert set(tap.SIGNATURES) == set(tap.WRAPPERS)
    for name in tap.SIGNATURES:
        assert set(tap.SIGNATURES[name]) == set(tap.WRAPPERS[name])
        module = importlib.import_module(name)
        assert tap.signature_problems(module) == [], name


def test_a_changed_signature_is_refused_before_anything_is_wrapped():
    fake = types.ModuleType("openrlhf.models.loss")

    class PolicyLoss:  # as if a release renamed an argument
        def forward(self, log_probs, old_log_probs, advantages, mask=None):
            return 0

    fake.PolicyLoss = PolicyLoss
    original = PolicyLoss.forward
    with pytest.raises(VersionError, match=r"openrlhf\.models\.loss\.PolicyLoss\.forward: parameters .*'mask'.*"
                                           r"expects .*'action_mask'"):
        tap.patch_module(fake)
    assert PolicyLoss.forward is original


def test_setup_without_a_tap_dir_does_nothing(monkeypatch):
    monkeypatch.delenv(tap.ENV_DIR, raising=False)
    before = list(sys.meta_path)
    tap.setup()
    assert sys.meta_path == before and tap.TAP is None


def test_post_import_hooks_patch_modules_imported_after_setup(tmp_path):
    """In a fresh interpreter: setup() first, then the imports, as in a Ray worker."""
    require_openrlhf()
    code = textwrap.dedent(f"""
        import sys
        sys.path.append({str(stub_dir())!r})
        from unipo_build.trainers.openrlhf import tap
        tap.setup()
        assert "openrlhf.models.loss" not in sys.modules
        from openrlhf.models.loss import PolicyLoss
        from openrlhf.trainer.ppo_utils import experience_maker as em
        print("RESULT", hasattr(PolicyLoss.forward, "__unipo_original__"), hasattr(em.compute_approx_kl, "__unipo_original__"),
              hasattr(em.RemoteExperienceMaker.compute_advantages_and_returns, "__unipo_original__"))
        tap.install_hooks()  # idempotent: no double wrapping
        print("RESULT", hasattr(PolicyLoss.forward.__unipo_original__, "__unipo_original__"))
    """)
    env = {**os.environ, tap.ENV_DIR: str(tmp_path / "tap"), "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=ROOT, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    results = [line.split()[1:] for line in out.stdout.splitlines() if line.startswith("RESULT ")]
    assert results == [["True", "True", "True"], ["False"]]


def _tb(path: Path) -> Path:
    t0 = 1_700_000_000.0
    path.mkdir(parents=True)
    events = [encode_event(t0, 0, file_version="brain.Event:2"),
              encode_event(t0 + 5, 1, {"train/reward": 0.5, "train/policy_loss": -0.01, "train/kl": 0.002,
                                       "train/response_length": 7.0})]
    (path / "events.out.tfevents.1.host.1").write_bytes(b"".join(encode_record(e) for e in events))
    return path


@pytest.fixture(scope="module")
def ray_run(tmp_path_factory):
    require_openrlhf()
    import ray

    from training_fixtures import save_tiny_checkpoint
    from training.task import load_task

    base = tmp_path_factory.mktemp("tap")
    model_dir = save_tiny_checkpoint(base / "model")
    rows = load_task(ROOT / "data" / "tasks" / "train.jsonl")[:2]
    tap_dir = base / "tap"
    cmd = build_command("grpo", RunOptions(model=str(model_dir), group_size=4, prompts_per_step=2, gpus_per_node=1),
                        accept_approximation=True, tap_dir=str(tap_dir))
    write_manifest(cmd, tap_dir)
    from unipo_build.trainers.openrlhf.launch import runtime_env

    env = runtime_env(str(tap_dir), 1.0)
    env["env_vars"].update({
        "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "tests"), str(stub_dir())]),
        "TORCHDYNAMO_DISABLE": "1",  # OpenRLHF's entropy is torch.compile'd: run it eagerly on CPU
        "OMP_NUM_THREADS": "1",
    })
    ray.init(num_cpus=1, include_dashboard=False, runtime_env=env, log_to_driver=False)
    try:
        import openrlhf_tap_worker

        remote = ray.remote(num_cpus=1)(openrlhf_tap_worker.run)
        seen = ray.get(remote.remote(str(model_dir), [r["prompt"] for r in rows], [r["answer"] for r in rows]),
                       timeout=600)
    finally:
        ray.shutdown()
    return {"seen": seen, "tap_dir": tap_dir, "base": base, "rows": rows}


def test_the_hook_patches_the_worker_and_not_the_driver(ray_run):
    seen = ray_run["seen"]
    assert seen["pid"] != os.getpid()
    assert all(seen["wrapped"].values()), seen["wrapped"]
    from openrlhf.models.loss import PolicyLoss

    assert not hasattr(PolicyLoss.forward, "__unipo_original__")
    shards = sorted(p.name for p in ray_run["tap_dir"].glob("*.jsonl"))
    assert [s.split("-")[0] for s in shards] == ["policy", "rollout"]
    assert shards[0].startswith("policy-rank0-") and shards[0].endswith(f"-{seen['pid']}.jsonl")


def test_shards_hold_what_openrlhf_computed(ray_run):
    seen, tap_dir = ray_run["seen"], ray_run["tap_dir"]
    records = [json.loads(line) for p in sorted(tap_dir.glob("*.jsonl")) for line in p.read_text().splitlines()]
    samples = [r for r in records if r["kind"] == "sample"]
    updates = [r for r in records if r["kind"] == "update"]
    (rollout,) = [r for r in records if r["kind"] == "rollout"]
    assert len(samples) == 8 and len(updates) == 16  # fraction 1: every sample, at both updates
    assert rollout["group_size"] == 4 and [g["group"] for g in rollout["groups"]] == [0, 1]
    # group_norm by hand from the rewards the worker scored: (r - mean) / (std_{n-1} + 1e-9)
    rewards = np.asarray(seen["rewards"]).reshape(2, 4)
    std = rewards.std(axis=1, ddof=1, keepdims=True)
    expected = (rewards - rewards.mean(axis=1, keepdims=True)) / (std + 1e-9)
    for s in samples:
        assert s["reward"] == pytest.approx(seen["rewards"][s["index"]])
        assert s["advantage"] == pytest.approx([expected.flat[s["index"]]] * len(s["ids"]), abs=1e-5)
        assert s["ref_logp"] is not None and len(s["ref_logp"]) == len(s["ids"]) == s["length"]
        # k3 from the logged log-probs, as compute_approx_kl computed it
        log_ratio = np.asarray(s["old_logp"]) - np.asarray(s["ref_logp"])
        assert s["kl"] == pytest.approx(np.exp(-log_ratio) - 1 + log_ratio, abs=1e-5)
    first = [u for u in updates if u["update"] == 0]
    second = [u for u in updates if u["update"] == 1]
    assert all(r == pytest.approx(1.0, abs=1e-5) for u in first for r in u["ratio"])
    moved = [abs(r - 1) for u in second for r in u["ratio"]]
    assert max(moved) > 1e-3  # the SGD step moved the policy: the second update is off-policy
    for u in second:  # OpenRLHF's clip side, re-derived: +1 above 1.28 with A > 0, -1 below 0.8 with A < 0
        for r, a, c in zip(u["ratio"], u["advantage"], u["clip"]):
            assert c == (1 if a > 0 and r > 1.28 else -1 if a < 0 and r < 0.8 else 0)
        assert u["entropy"] is not None and all(e >= 0 for e in u["entropy"])


def test_converted_run_validates_and_shows_the_tapped_tokens(ray_run):
    out = ray_run["base"] / "runs" / "grpo-openrlhf"
    header = import_log("openrlhf", _tb(ray_run["base"] / "tb"), out, tap=ray_run["tap_dir"])
    assert validate_run(out) == []
    assert header.algorithm == "grpo" and header.engine == "openrlhf"
    assert header.algorithm_config.kind("aggregation") == "seq_mean_token_mean"
    assert [g["slot"] for g in header.model_extra["openrlhf"]["gaps"]] == ["kl"]
    assert "approximation trained" in header.notes
    (step,) = list(runlog.iter_steps(out))
    assert step.has_tokens and step.metrics["objective"] == pytest.approx(0.01)
    detail = runlog.read_json_model(out / runlog.TOKENS_DIR / "step_000000.json", runlog.StepDetail)
    assert [g.index for g in detail.groups] == [0, 1] and all(g.detailed for g in detail.groups)
    assert check_step(header.algorithm_config, detail) == []  # the site's recomputation of every token
    assert [p.prompt for p in detail.prompts] == [r["prompt"] for r in ray_run["rows"]]
    for group in detail.prompts:
        assert len(group.responses) == 4
        for response in group.responses:
            t = response.tokens
            extra = t.model_extra
            assert t.ratio == pytest.approx(extra["engine_ratio"], abs=1e-5)  # ours == OpenRLHF's
            assert list(t.clip) == extra["engine_clip"]
            assert t.entropy is not None and t.ref_logp is not None and t.kl is not None
            assert response.contribution == pytest.approx(sum(w * o for w, o in zip(t.weight, t.objective)))


@pytest.mark.slow
def test_guide_commands_run_as_documented(ray_run, tmp_path):
    """Every command of the guide's bash blocks, exactly as written, in order, on a fresh copy of the
    project with the environment active: the builder (the first refuses a gap by design), then the
    import of the worker's shards and OpenRLHF's TensorBoard files, its validation and the build."""
    import shutil

    from guide_walk import fresh_copy, shell_runner

    commands = guide_commands("openrlhf.md")
    assert commands == ["unipo openrlhf command dr_grpo", "unipo openrlhf command dr_grpo --accept-approximation",
                        "unipo import openrlhf work/openrlhf/tensorboard --tap work/openrlhf/tap --out runs/dapo-openrlhf",
                        "unipo validate runs/dapo-openrlhf", "UNIPO_RUNS=runs mkdocs build"]
    project = fresh_copy(tmp_path / "project")
    # what an OpenRLHF run with the tap leaves behind (the tap's shards come from a real Ray worker)
    _tb(project / "work" / "openrlhf" / "tensorboard" / "dapo-openrlhf-s0")
    shutil.copytree(ray_run["tap_dir"], project / "work" / "openrlhf" / "tap")
    run = shell_runner(project)
    results = [run(command) for command in commands]
    assert [r.returncode for r in results] == [2, 0, 0, 0, 0], [r.stderr[-2000:] for r in results]
    assert "cannot run dr_grpo exactly" in results[0].stderr and "python -m" in results[1].stdout
    assert validate_run(project / "runs" / "dapo-openrlhf") == []
    page = (project / "site" / "guides" / "own-logs" / "index.html").read_text()
    run_id = runlog.read_header(project / "runs" / "dapo-openrlhf").run_id
    assert f"From <code>runs</code> (UNIPO_RUNS): 1 run loaded: <code>{run_id}</code>" in page