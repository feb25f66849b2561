"""TRL's GRPOTrainer, run for real on CPU with the UNIPO token tap, imported with `unipo import trl`.

The first test of the own-logs path against a trainer this project did not write: a tiny Llama
(tests/trl_support.py) trains for a few optimizer steps under TRL 1.16; the import must validate,
every tapped token must recompute to TRL's own loss terms (ratio, per-token loss, weight, the step's
loss) to 1e-6, for the loss types with PPO's clip and for cispo and sapo, and the site must build with the run. The browser half is
tests/browser/test_trl_browser.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from unipo_build.core.recompute import check_step
from unipo_build.core.schema import RunHeader, StepDetail

if os.environ.get("UNIPO_REQUIRE_TRL") != "1":
    pytest.importorskip("trl", reason="TRL is not installed (pip install -e '.[trl]')")

from trl_support import import_grpo_trainer, run_trl  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


def unipo(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "unipo_build.cli.main", *args], cwd=ROOT, capture_output=True, text=True,
                          env=dict(os.environ, PYTHONPATH=str(ROOT)), timeout=300)


def load_run(run: Path) -> tuple[RunHeader, list[dict], list[StepDetail]]:
    header = RunHeader.model_validate_json((run / "header.json").read_text())
    steps = [json.loads(line) for line in (run / "steps.jsonl").read_text().splitlines()]
    details = [StepDetail.model_validate_json(p.read_text()) for p in sorted((run / "tokens").glob("step_*.json"))]
    return header, steps, details


def import_run(tmp: Path, name: str = "run", *extra: str) -> Path:
    out = tmp / "runs" / name
    proc = unipo("import", "trl", str(tmp / "trl-output"), "--tap", str(tmp / "tap"), "--out", str(out), *extra)
    assert proc.returncode == 0, proc.stderr
    return out


@pytest.fixture(scope="module")
def grpo_run(trl_grpo_run, tmp_path_factory) -> Path:
    """GRPO with a KL term (beta 0.04) and two passes over each generation (num_iterations 2): the
    second pass moves the ratio off 1 and the KL off 0. The tap details one group of the two.

    The session's run (tests/conftest.py's trl_grpo_run, which the browser test reads too), seen from a
    directory of this module's own: trl-output/ and tap/ link to it, and this module's imports go to runs/."""
    tmp = tmp_path_factory.mktemp("trl-grpo")
    for name in ("trl-output", "tap"):
        (tmp / name).symlink_to(trl_grpo_run / name, target_is_directory=True)
    return tmp


def token_rows(details: list[StepDetail]):
    for d in details:
        for p in d.prompts:
            for r in p.responses:
                yield d, p, r, r.tokens


def test_import_help_lists_trl():
    proc = unipo("import", "--help")
    assert proc.returncode == 0
    assert "trl" in proc.stdout.split("{", 1)[1].split("}", 1)[0].split(",")


def test_real_trl_run_imports_and_validates(grpo_run):
    import trl

    run = import_run(grpo_run)
    assert unipo("validate", str(run)).returncode == 0
    header, steps, details = load_run(run)
    assert header.engine == "trl" and header.algorithm == "grpo"
    assert header.software["trl"] == trl.__version__
    comps = header.algorithm_config.components
    assert (comps["kl"].kind, comps["kl"].params["beta"], comps["kl"].params["estimator"]) == ("in_loss", 0.04, "k3")
    assert (comps["advantage"].kind, comps["advantage"].params["eps"]) == ("group_zscore", 1e-4)
    assert comps["aggregation"].kind == "seq_mean_token_mean"
    state = json.loads((grpo_run / "trl-output" / "trainer_state.json").read_text())
    logged = [e for e in state["log_history"] if "loss" in e]
    assert [s["source_step"] for s in steps] == [e["step"] for e in logged] == [1, 2, 3, 4]
    # steps_per_generation 2 = gradient_accumulation_steps, two iterations: two steps per rollout
    assert [s["rollout"] for s in steps] == [0, 0, 1, 1]
    assert [s["first_in_rollout"] for s in steps] == [True, False, True, False]
    assert header.steps_per_rollout == 2
    for s, e in zip(steps, logged):
        assert s["metrics"]["objective"] == pytest.approx(-e["loss"], abs=1e-7)
        assert s["metrics"]["reward/mean"] == pytest.approx(e["reward"]) if "reward" in e else True
    assert [d.step for d in details] == [0, 1, 2, 3] and all(s["has_tokens"] for s in steps)
    for d in details:
        assert [g.size for g in d.groups] == [4, 4]
        assert [g.detailed for g in d.groups] == [True, False]
        assert len(d.prompts) == 1 and len(d.prompts[0].responses) == 4


def test_every_token_recomputes_to_trls_loss_terms(grpo_run):
    """Parity on real TRL steps: TRL's convention here (grpo loss, k3 KL without bias correction,
    token ratio, symmetric clip) is expressible, so every term agrees to 1e-6."""
    header, steps, details = load_run(import_run(grpo_run, "parity"))
    cfg = header.algorithm_config
    moved = kl_seen = 0
    for d in details:
        assert check_step(cfg, d) == [], d.step
        # The step objective is minus TRL's loss of the step: the tapped group's tokens plus TRL's own
        # share of the untapped group, against the sum of the micro-batch losses TRL returned.
        assert d.objective == pytest.approx(-d.trl_loss, abs=1e-6)
        assert steps[d.step]["metrics"]["objective"] == pytest.approx(-d.trl_loss, abs=1e-6)
    for d, p, r, t in token_rows(details):
        live = np.asarray(t.mask, dtype=bool)
        for ours, theirs in ((t.ratio, t.engine_ratio), (t.objective, t.engine_objective),
                             (t.weight, t.engine_weight), (t.kl, t.engine_kl)):
            assert np.max(np.abs(np.subtract(ours, theirs)[live])) <= 1e-6
        # By hand, from the logged inputs: min(rho A, clip(rho) A) - beta k3
        rho = np.exp(np.subtract(t.logp, t.old_logp))
        a = np.asarray(t.advantage)
        k3 = np.exp(np.subtract(t.ref_logp, t.logp)) - np.subtract(t.ref_logp, t.logp) - 1
        hand = np.minimum(rho * a, np.clip(rho, 0.8, 1.2) * a) - 0.04 * k3
        assert np.max(np.abs(hand - np.asarray(t.objective))) <= 1e-6
        assert t.weight[0] == pytest.approx(1 / (8 * r.length))  # GRPO: 1 / (N |o_i|), N = 8 completions
        moved += int(np.any(np.abs(rho - 1) > 1e-3))
        kl_seen += int(np.any(np.abs(k3) > 1e-6))
    assert moved and kl_seen  # the check compared something other than ratio 1 and KL 0
    # The tap's per-row weights (every row, tapped or not) rebuild the loss TRL returned for each micro-batch.
    updates = [json.loads(line) for line in (grpo_run / "tap" / "shard-rank0.jsonl").read_text().splitlines()
               if json.loads(line)["kind"] == "update"]
    assert len(updates) == 8  # 4 steps x 2 micro-batches
    for u in updates:
        assert u["loss_from_rows"] == pytest.approx(u["loss"], abs=1e-6)


def test_the_tap_does_not_change_training(tmp_path):
    """Same seed with and without the tap: TRL logs the same losses (the tap draws no random numbers)."""
    histories = []
    for tap in (True, False):
        out, _ = run_trl(tmp_path / str(tap), max_steps=2, tap=tap)
        histories.append([(e["step"], e.get("loss")) for e in json.loads((out / "trainer_state.json").read_text())
                          ["log_history"]])
    assert histories[0] == histories[1]


@pytest.mark.parametrize("settings, algorithm, aggregation", [
    ({"loss_type": "dapo", "beta": 0.0}, "trl-dapo", "token_mean"),
    ({"loss_type": "dr_grpo", "beta": 0.0, "scale_rewards": "none"}, "dr_grpo", "constant_normalizer"),
    ({"loss_type": "grpo", "beta": 0.0, "importance_sampling_level": "sequence", "epsilon_high": 0.28},
     "gspo", "seq_mean_token_mean"),
], ids=["dapo", "dr_grpo", "sequence-ratio"])
def test_other_loss_types_recompute_exactly(tmp_path, settings, algorithm, aggregation):
    run_trl(tmp_path, num_iterations=2, max_steps=2, groups=None, **settings)
    header, steps, details = load_run(import_run(tmp_path))
    cfg = header.algorithm_config
    assert header.algorithm == algorithm and cfg.kind("aggregation") == aggregation
    assert "gaps" not in header.imported_from
    for d in details:
        assert check_step(cfg, d) == []
        assert all(g.detailed for g in d.groups)
        assert d.objective == pytest.approx(-d.trl_loss, abs=1e-6)
    for d, p, r, t in token_rows(details):
        live = np.asarray(t.mask, dtype=bool)
        for ours, theirs in ((t.ratio, t.engine_ratio), (t.objective, t.engine_objective), (t.weight, t.engine_weight)):
            assert np.max(np.abs(np.subtract(ours, theirs)[live])) <= 1e-6
    if settings.get("importance_sampling_level") == "sequence":
        assert cfg.kind("ratio") == "sequence" and cfg.param("clip", "eps_high") == 0.28


@pytest.mark.parametrize("settings", [
    {"loss_type": "cispo", "epsilon_high": 1.02},
    {"loss_type": "sapo", "sapo_temperature_neg": 1.3},
], ids=["cispo", "sapo"])
def test_cispo_and_sapo_recompute_to_trls_loss(tmp_path, settings):
    """loss_type cispo and sapo, every group tapped: each maps to its clip kind (CISPO: TRL's cap 1.02 is eps_high
    0.02, no lower bound; SAPO: its two temperatures), and every token and step agrees with TRL's own loss to
    1e-6. TRL writes CISPO's loss as the paper does, -sg(w) A log pi (the kind's value is w A, the gradient the
    same): its tokens are compared in TRL's form, and each step's objective_in_trl_form with TRL's loss."""
    loss_type = settings["loss_type"]
    run_trl(tmp_path, beta=0.04, num_iterations=2, max_steps=2, groups=None, **settings)
    header, steps, details = load_run(import_run(tmp_path))
    cfg = header.algorithm_config
    assert header.algorithm == f"trl-{loss_type}" and cfg.kind("clip") == loss_type
    assert "gaps" not in header.imported_from
    for d in details:
        assert check_step(cfg, d) == []
        assert all(g.detailed for g in d.groups)
        theirs = d.model_extra["objective_in_trl_form"] if loss_type == "cispo" else d.objective
        assert theirs == pytest.approx(-d.trl_loss, abs=1e-6)
    capped = 0
    for d, p, r, t in token_rows(details):
        live = np.asarray(t.mask, dtype=bool)
        rho = np.exp(np.subtract(t.logp, t.old_logp))
        a, logp = np.asarray(t.advantage), np.asarray(t.logp)
        k3 = np.exp(np.subtract(t.ref_logp, t.logp)) - np.subtract(t.ref_logp, t.logp) - 1
        if loss_type == "cispo":
            w = np.minimum(rho, 1.02)  # TRL: clamp(coef_1, max=epsilon_high).detach()
            ours, trls = w * a - 0.04 * k3, w * a * logp - 0.04 * k3
            # the sides TRL's cispo_clip_ratio counts: A > 0 above the cap
            assert list(np.asarray(t.clip)[live]) == list(((a > 0) & (rho > 1.02)).astype(int)[live])
            capped += int(np.sum(np.asarray(t.clip)[live] == 1))
        else:
            tau = np.where(a > 0, 1.0, 1.3)
            ours = trls = 4 / tau / (1 + np.exp(-tau * (rho - 1))) * a - 0.04 * k3
        assert np.max(np.abs(ours - np.asarray(t.objective))[live]) <= 1e-6
        assert np.max(np.abs(trls - np.asarray(t.engine_objective))[live]) <= 1e-6
        for mine, engine in ((t.ratio, t.engine_ratio), (t.weight, t.engine_weight)):
            assert np.max(np.abs(np.subtract(mine, engine))[live]) <= 1e-6
    if loss_type == "cispo":
        assert capped  # the cap acted: tokens PPO would have silenced kept a capped weight
        # TRL's cispo_clip_ratio (the fraction of such tokens) is the run's clip/frac_high
        assert any((s["metrics"].get("clip/frac_high") or 0) > 0 for s in steps)


def test_cispo_at_its_defaults_imports_with_its_cap_named(tmp_path):
    """loss_type cispo with epsilon_high unset: TRL caps CISPO's weight at epsilon's 0.2, so every token's weight is
    min(ratio, 0.2), below its ratio wherever the ratio is above 0.2 (here every tapped token). The import goes on
    with the cispo kind's default cap in its place, names the gap and what TRL's documentation recommends; TRL's own
    per-token loss, kept as engine_objective, is the cap's. Imported with --algorithm cispo, every setting TRL ran
    otherwise is a gap."""
    run_trl(tmp_path, loss_type="cispo", beta=0.04, num_iterations=2, max_steps=2, groups=None)
    header, steps, details = load_run(import_run(tmp_path))
    cfg = header.algorithm_config
    assert header.hyperparameters["epsilon_high"] == 0.2  # GRPOConfig: epsilon_high unset is epsilon
    assert (cfg.kind("clip"), cfg.param("clip", "eps_high")) == ("cispo", 0.28)
    (gap,) = [g for g in header.imported_from["gaps"] if g["slot"] == "clip"]
    assert gap["setting"] == "epsilon_high" and gap["value"].startswith("0.2 with loss_type 'cispo'")
    assert "recommends epsilon_high 5.0 for loss_type 'cispo'" in header.notes
    below = 0
    for d, p, r, t in token_rows(details):
        live = np.asarray(t.mask, dtype=bool)
        rho = np.exp(np.subtract(t.logp, t.old_logp))
        a, logp = np.asarray(t.advantage), np.asarray(t.logp)
        k3 = np.exp(np.subtract(t.ref_logp, t.logp)) - np.subtract(t.ref_logp, t.logp) - 1
        w = np.minimum(rho, 0.2)  # TRL: clamp(coef_1, max=epsilon_high).detach(), epsilon_high = epsilon = 0.2
        assert np.max(np.abs((w * a * logp - 0.04 * k3) - np.asarray(t.engine_objective))[live]) <= 1e-6
        below += int(np.sum((w < rho) & live))
        assert np.all(w[live] < rho[live])  # every token's weight below its ratio
    assert below
    assert all(d.model_extra.get("objective_differs") for d in details)  # the cap in its place parts the objectives
    # the diagnosis says what the cap did, counted from the token files, and what TRL's documentation recommends
    from unipo_build.core.diagnose import LOOK, diagnose

    side = {d.key: d for d in diagnose(tmp_path / "runs" / "run")}["which_side"]
    live = sum(int(np.sum(t.mask)) for d, p, r, t in token_rows(details))
    assert side.verdict == LOOK and f"every one of the {live} tokens in the token files had a ratio above it" \
        in side.figure and side.figure.endswith("recommends epsilon_high 5.0 for loss_type 'cispo' (the ScaleRL "
                                                "paper's cap)")
    run = tmp_path / "runs" / "as-cispo"
    proc = unipo("import", "trl", str(tmp_path / "trl-output"), "--tap", str(tmp_path / "tap"), "--out", str(run),
                 "--algorithm", "cispo")
    assert proc.returncode == 0, proc.stderr
    header = RunHeader.model_validate_json((run / "header.json").read_text())
    slots = {g["slot"]: g.get("cause", "kind") for g in header.imported_from["gaps"]}
    # the cap (no kind), and TRL's beta 0.04, no filter, no shaping and its std's 1e-4 against the spec's
    assert slots == {"clip": "kind", "kl": "algorithm", "filter": "algorithm", "shaping": "algorithm",
                     "advantage": "algorithm"}


def test_settings_without_a_kind_are_named_with_the_nearest(tmp_path):
    """TRL's default KL bias correction (KL x ratio) has no kind: the import names it and the nearest, and TRL's
    own per-token loss stays beside ours. Masking truncated completions is the mask_truncated kind."""
    run_trl(tmp_path, beta=0.04, num_iterations=2, max_steps=2, groups=None, use_bias_correction_kl=True,
            mask_truncated_completions=True, max_completion_length=6)
    run = tmp_path / "runs" / "gaps"
    proc = unipo("import", "trl", str(tmp_path / "trl-output"), "--tap", str(tmp_path / "tap"), "--out", str(run))
    assert proc.returncode == 0, proc.stderr
    header, steps, details = load_run(run)
    gaps = {g["slot"]: g for g in header.imported_from["gaps"]}
    assert gaps["kl"] == {"setting": "use_bias_correction_kl", "value": "True (the KL times the ratio)", "slot": "kl",
                          "nearest": "k3 in the loss"}
    assert "filter" not in gaps  # mask_truncated_completions is the mask_truncated kind
    assert header.algorithm_config.kind("filter") == "mask_truncated"
    assert ("TRL's use_bias_correction_kl = True (the KL times the ratio) has no kind in the registry's kl slot "
            "(nearest: k3 in the loss)") in " ".join(proc.stdout.split())  # the note, wrapped at 80 columns
    # TRL's term is beta x KL x ratio (engine_kl = KL x ratio): ours, beta x KL, is higher by beta x KL x (ratio - 1)
    for d, p, r, t in token_rows(details):
        live = np.asarray(t.mask, dtype=bool)
        expected = 0.04 * np.asarray(t.kl) * (np.asarray(t.ratio) - 1)
        assert np.max(np.abs((np.asarray(t.engine_kl) - np.multiply(t.kl, t.ratio))[live]), initial=0) <= 1e-6
        assert np.max(np.abs((np.subtract(t.objective, t.engine_objective) - expected)[live]), initial=0) <= 1e-6
        if r.truncated:
            assert set(t.mask) == {0} and set(t.weight) == {0.0}
    assert any(r.truncated for d, p, r, t in token_rows(details))
    # Where the two objectives of a step part, each token file says why (never silently different).
    labelled = 0
    for d in details:
        extra = d.model_extra or {}
        if abs(d.objective - extra["trl_objective"]) > 1e-6 * (1 + abs(extra["trl_objective"])):
            assert "use_bias_correction_kl" in extra["objective_differs"]
            labelled += 1
        else:
            assert "objective_differs" not in extra
    assert header.trl["objectives"]["differ"] == labelled


def test_the_site_builds_with_the_trl_run(grpo_run, tmp_path):
    """The whole course, built with the imported TRL run as its only run."""
    from site_build import build_site

    run = import_run(grpo_run, "trl-grpo", "--run-id", "trl-grpo")
    build = build_site(tmp_path / "site", extra_env={"UNIPO_RUNS": str(run.parent)})
    assert build.returncode == 0, build.log[-3000:]
    copied = tmp_path / "site" / "assets" / "runs" / "trl-grpo" / "steps"
    assert sorted(p.name for p in copied.glob("step_*.json")) == [f"step_{i:06d}.json" for i in range(4)]


def test_the_tap_refuses_another_trl_release_and_other_trainers(tmp_path, monkeypatch):
    import trl

    import_grpo_trainer()  # what the tap imports, with OpenRLHF's test stubs out of sight

    from unipo_build.trainers.trl.tap import TapError, TrlTokenTap

    with pytest.raises(TapError, match=r"install the tap on a trl.GRPOTrainer, not object"):
        TrlTokenTap(tmp_path / "tap").install(object())
    monkeypatch.setattr(trl, "__version__", "1.17.0")
    with pytest.raises(TapError, match=r"reads TRL 1\.16\.x internals; this is trl 1\.17\.0: pip install 'trl==1\.16\.\*'"):
        TrlTokenTap(tmp_path / "tap").install(object())
    assert not (tmp_path / "tap").exists()


def test_taps_of_other_runs_are_refused(grpo_run, tmp_path):
    """The four ways another run's tap was accepted (issue 30), built from real runs: a run with seed 1 and a
    run with loss_type bnpo (same seed), beside the module's GRPO run. Each is refused with one line naming the
    shard, the step and the field, and nothing is written."""
    import shutil

    run_trl(tmp_path / "seed1", loss_type="grpo", beta=0.04, num_iterations=2, max_steps=4, groups=1, seed=1)
    run_trl(tmp_path / "bnpo", loss_type="bnpo", beta=0.04, num_iterations=2, max_steps=4, groups=1)

    def refused(state: Path, tap: Path, name: str) -> str:
        out = tmp_path / "runs" / name
        proc = unipo("import", "trl", str(state), "--tap", str(tap), "--out", str(out))
        assert proc.returncode == 1 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
        assert not out.exists()
        return proc.stderr.strip()

    line = refused(grpo_run / "trl-output", tmp_path / "seed1" / "tap", "seed")
    assert "step " in line and ("loss:" in line or "rows.reward:" in line or "rows.length:" in line), line
    beside = tmp_path / "beside"
    shutil.copytree(grpo_run / "tap", beside)
    shutil.copy(tmp_path / "seed1" / "tap" / "shard-rank0.jsonl", beside / "shard-rank1.jsonl")
    assert refused(grpo_run / "trl-output", beside, "beside").startswith(f"{beside / 'shard-rank1.jsonl'} (line 1): run:")
    appended = tmp_path / "appended"
    shutil.copytree(grpo_run / "tap", appended)
    with open(appended / "shard-rank0.jsonl", "a") as fh:
        fh.write((tmp_path / "seed1" / "tap" / "shard-rank0.jsonl").read_text())
    assert ": run: this shard was recorded by another run" in refused(grpo_run / "trl-output", appended, "appended")
    line = refused(tmp_path / "bnpo" / "trl-output", grpo_run / "tap", "loss-type")
    assert "step " in line and "loss: the tap's loss of TRL step" in line and "loss_type grpo" in line, line
    # Each run with its own tap imports.
    for name in ("seed1", "bnpo"):
        proc = unipo("import", "trl", str(tmp_path / name / "trl-output"), "--tap", str(tmp_path / name / "tap"),
                     "--out", str(tmp_path / "runs" / f"own-{name}"))
        assert proc.returncode == 0, proc.stderr


def test_a_run_logged_every_other_step_imports_against_its_logging_windows(tmp_path):
    """logging_steps=2 (TRL's default is 10): Trainer.log averages the loss over the steps since the last log and
    TRL its metrics over the generations made since; the import compares the tap window by window."""
    run_trl(tmp_path, max_steps=4, groups=1, logging_steps=2)
    state = json.loads((tmp_path / "trl-output" / "trainer_state.json").read_text())
    assert [e["step"] for e in state["log_history"] if "loss" in e] == [2, 4]
    run = import_run(tmp_path)
    header = json.loads((run / "header.json").read_text())
    assert header["trl"]["cross_check"] == {"loss": 2, "reward": 2, "length": 2}


def test_trls_evaluations_hold_no_result_per_problem_and_are_no_training_steps(tmp_path):
    """What TRL 1.16 writes of an evaluation, as own-logs.md says (issue 44 item 1): log_history entries of eval_
    means at each evaluated step (eval_on_start: step 0), and with log_completions one parquet per logged step from
    buffers of one generation batch, so the evaluation's file replaces its step's training file and holds only the
    last generation_batch_size (8) of the evaluation's 3 x 4 completions, each scored per reward function. The
    import files the evaluations as metrics (step 0's in pre_training_metrics), makes no held-out evaluation and
    notes that a change between them could only be unpaired."""
    import pandas as pd

    from training.task import load_task

    run_trl(tmp_path, beta=0.0, num_iterations=1, max_steps=2, groups=1, eval_rows=3, eval_strategy="steps",
            eval_steps=1, eval_on_start=True, log_completions=True, per_device_eval_batch_size=4)
    output = tmp_path / "trl-output"
    history = json.loads((output / "trainer_state.json").read_text())["log_history"]
    evaluations = [e for e in history if "eval_reward" in e]
    assert [e["step"] for e in evaluations] == [0, 1, 2]
    assert all(not any(k.startswith("eval_") for k in e) for e in history if "loss" in e)
    eval_prompts = {r["prompt"] for r in load_task(ROOT / "data" / "tasks" / "train.jsonl")[100:103]}
    for step in (1, 2):
        table = pd.read_parquet(output / "completions" / f"completions_{step:05d}.parquet")
        assert len(table) == 8 < 3 * 4  # one generation batch: the evaluation's last completions only
        assert {str(p) for p in table["prompt"]} < eval_prompts  # the step's training completions are gone
        assert {"correct_reward", "coin_reward"} <= set(table.columns) and "correct" not in table.columns
    run = import_run(tmp_path)
    header, steps, _ = load_run(run)
    assert [s["source_step"] for s in steps] == [1, 2]
    assert header.model_extra["pre_training_metrics"]["eval_reward"] == pytest.approx(evaluations[0]["eval_reward"])
    assert [s["metrics"]["eval_reward"] for s in steps] == pytest.approx([e["eval_reward"] for e in evaluations[1:]])
    assert not (run / "evals.jsonl").read_text().strip()
    assert "a held-out change between two of them could only be unpaired" in header.notes


@pytest.mark.parametrize("masked", [False, True], ids=["plain", "masked-truncation"])
def test_bnpo_under_gradient_accumulation_is_its_kind(tmp_path, masked):
    """Issue 44 item 5: loss_type bnpo with gradient_accumulation_steps 2 (micro-batches of 4 completions, one group
    each) divides each micro-batch's loss by its own tokens and by the 2 steps: the micro_token_mean kind, its
    micro-batch read from the tap (per_device_train_batch_size). Every token's weight is TRL's, the token file's step
    objective is minus TRL's loss (it was 0.058 apart under the whole step's token mean), with truncated completions
    masked too (out of each micro-batch's count), and the objective does not depend on how many groups the tap
    recorded: all of them, or one (the other's share then TRL's own per-row loss)."""
    objectives = {}
    for groups in (None, 1):
        where = tmp_path / f"groups-{groups}"
        run_trl(where, loss_type="bnpo", beta=0.04, num_iterations=2, max_steps=2, groups=groups,
                mask_truncated_completions=masked, max_completion_length=6 if masked else 12)
        header, steps, details = load_run(import_run(where))
        cfg = header.algorithm_config
        assert (cfg.kind("aggregation"), cfg.param("aggregation", "micro_batch")) == ("micro_token_mean", 4)
        assert not [g for g in header.imported_from.get("gaps", []) if g["slot"] == "aggregation"]
        assert cfg.kind("filter") == ("mask_truncated" if masked else "none")
        for d in details:
            # a masked truncation's tokens (mask 0, TRL's placeholder log-probs) have ratio and objective 0, as
            # the site's recomputation writes a token outside the objective
            assert check_step(cfg, d) == []
            assert d.objective == pytest.approx(-d.trl_loss, abs=1e-6)
            assert "objective_differs" not in (d.model_extra or {})
        for d, p, r, t in token_rows(details):
            live = np.asarray(t.mask, dtype=bool)
            assert np.max(np.abs(np.subtract(t.weight, t.engine_weight)[live]), initial=0.0) <= 1e-6
        objectives[groups] = [d.objective for d in details]
    assert objectives[None] == pytest.approx(objectives[1], abs=1e-6)
    if masked:  # the budget of 6 tokens cut some completions: their tokens weigh 0
        assert any(r.truncated and not any(r.tokens.weight) for d, p, r, t in token_rows(details))


@pytest.mark.parametrize("settings", [{"loss_type": "cispo", "epsilon_high": 5.0},
                                      {"loss_type": "sapo", "mask_truncated_completions": True}],
                         ids=["cispo-cap5", "sapo-masked"])
def test_real_cispo_and_sapo_runs_are_diagnosed_in_their_own_terms(tmp_path, settings):
    """Issue 44 item 3 on real TRL runs with TRL's two reward functions (a fractional reward): CISPO with its cap of
    5 (TRL's recommendation), whose ratio stays far below it, is not told that a learning rate too small kept it from
    1 ± ε, and its one clip fraction answers which side; SAPO's gate clips nothing; the length question says what the
    truncated answers scored and, masked, that they weigh 0; no diagnosis speaks of ε or of a 0/1 reward."""
    from unipo_build.core.diagnose import FINE, LOOK, diagnose

    run_trl(tmp_path, beta=0.04, num_iterations=2, max_steps=3, groups=None, **settings)
    found = {d.key: d for d in diagnose(import_run(tmp_path))}
    for d in found.values():
        assert "\u03b5" not in d.figure + (d.lacks or "") and "scores as wrong" not in d.figure, d.figure
    assert (found["clip_zero"].verdict, found["which_side"].verdict) == (FINE, FINE), (found["clip_zero"].figure, found["which_side"].figure)
    if settings["loss_type"] == "sapo":
        assert found["which_side"].figure.startswith("this objective clips no token")
    else:
        assert found["which_side"].figure.startswith("high side (A > 0, ratio above the cap 5)")
    length = found["length_moving"]
    if length.verdict == LOOK:
        assert "truncated answers in the token files scored" in length.figure
        assert ("out of the loss (weight 0" in length.figure) == bool(settings.get("mask_truncated_completions"))
    assert found["sampler_learner"].verdict == "not measurable"
