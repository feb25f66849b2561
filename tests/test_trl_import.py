"""`unipo import trl` on a recorded real TRL run (tests/fixtures/trl, made by `python tests/trl_support.py
tests/fixtures/trl`: TRL 1.16.0, GRPO, beta 0.04, two iterations, three steps, one group of two
tapped) and on damaged copies of it; and the taps of two other recorded runs that must not join it (the
same settings with seed 1: seed1, seed1-tap; the same seed with loss_type bnpo: bnpo, bnpo-tap); and the
runs of loss_type cispo (epsilon_high 1.02) and sapo (sapo_temperature_neg 1.3), whose clip slot has another
form (cispo, cispo-tap; sapo, sapo-tap). Needs no TRL: this is what a machine without it can check.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from cli_helpers import unwrapped
from unipo_build.core.diagnose import LOOK, diagnose
from unipo_build.core.recompute import check_step
from unipo_build.core.schema import RunHeader, StepDetail
from unipo_build.trainers.trl.config import CISPO_RECOMMENDED

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = ROOT / "tests" / "fixtures" / "trl"


def unipo(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "unipo_build.cli.main", *args], cwd=ROOT, capture_output=True, text=True,
                          env=dict(os.environ, PYTHONPATH=str(ROOT)), timeout=300)


def digest(directory: Path) -> dict[str, str]:
    return {str(p.relative_to(directory)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(directory.rglob("*")) if p.is_file()}


@pytest.fixture
def copy(tmp_path) -> Path:
    shutil.copytree(FIXTURE, tmp_path / "in")
    return tmp_path / "in"


def run_import(inp: Path, out: Path, *extra: str, tap: str = "run1-tap", state: str = "run1"
               ) -> subprocess.CompletedProcess:
    before = digest(inp)
    proc = unipo("import", "trl", str(inp / state), "--tap", str(inp / tap), "--out", str(out), *extra)
    assert digest(inp) == before  # nothing of the input changed
    return proc


def one_line_error(proc: subprocess.CompletedProcess, out: Path) -> str:
    assert proc.returncode == 1
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert not out.exists() and not list(out.parent.glob(f".{out.name}.importing-*"))
    return lines[0]


def edit_shard(tap: Path, kind: str, change) -> int:
    """Apply ``change`` to the first record of ``kind``; returns its line number."""
    shard = tap / "shard-rank0.jsonl"
    lines = shard.read_text().splitlines()
    for i, line in enumerate(lines):
        record = json.loads(line)
        if record["kind"] == kind:
            change(record)
            lines[i] = json.dumps(record)
            shard.write_text("\n".join(lines) + "\n")
            return i + 1
    raise AssertionError(kind)


def test_the_recorded_trl_run_imports_validates_and_recomputes(tmp_path):
    out = tmp_path / "run"
    proc = unipo("import", "trl", str(FIXTURE / "run1"), "--tap", str(FIXTURE / "run1-tap"), "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    assert unipo("validate", str(out)).returncode == 0
    header = RunHeader.model_validate_json((out / "header.json").read_text())
    assert (header.engine, header.algorithm, header.software["trl"]) == ("trl", "grpo", "1.16.0")
    details = [StepDetail.model_validate_json(p.read_text()) for p in sorted((out / "tokens").glob("*.json"))]
    assert len(details) == 3
    for d in details:
        assert check_step(header.algorithm_config, d) == []
        assert d.objective == pytest.approx(-d.trl_loss, abs=1e-6)
        for p in d.prompts:
            for r in p.responses:
                t = r.tokens
                assert np.max(np.abs(np.subtract(t.objective, t.engine_objective))) <= 1e-6
                assert np.max(np.abs(np.subtract(t.weight, t.engine_weight))) <= 1e-9


def test_not_a_trl_output_directory(tmp_path):
    (tmp_path / "in" / "run1").mkdir(parents=True)
    (tmp_path / "in" / "run1" / "events.out.tfevents.1").write_bytes(b"")
    shutil.copytree(FIXTURE / "run1-tap", tmp_path / "in" / "run1-tap")
    line = one_line_error(run_import(tmp_path / "in", tmp_path / "out"), tmp_path / "out")
    assert line.startswith(str(tmp_path / "in" / "run1") + ":")
    assert "not a TRL output directory" in line and "trainer_state.json" in line and "save_state()" in line


def test_a_tap_directory_that_is_not_one(copy, tmp_path):
    (copy / "run1-tap" / "manifest.json").unlink()
    line = one_line_error(run_import(copy, tmp_path / "out"), tmp_path / "out")
    assert "no manifest.json" in line and "TrlTokenTap" in line


def test_a_tap_from_another_trl_version(copy, tmp_path):
    manifest = copy / "run1-tap" / "manifest.json"
    data = json.loads(manifest.read_text())
    manifest.write_text(json.dumps({**data, "trl_version": "1.15.2"}))
    line = one_line_error(run_import(copy, tmp_path / "out"), tmp_path / "out")
    assert line.startswith(f"{manifest}: trl_version: written by TRL 1.15.2")
    assert "pip install 'trl==1.16.*'" in line


def test_a_shard_of_another_tap_format(copy, tmp_path):
    number = edit_shard(copy / "run1-tap", "shard", lambda r: r.update(format="unipo-trl-tap/0"))
    line = one_line_error(run_import(copy, tmp_path / "out"), tmp_path / "out")
    assert line.startswith(f"{copy / 'run1-tap' / 'shard-rank0.jsonl'} (line {number}): format: tap format "
                           "'unipo-trl-tap/0'")


def test_positive_log_probs_beyond_rounding(copy, tmp_path):
    def positive(record):
        record["samples"][0]["logp"][3] = 0.25

    number = edit_shard(copy / "run1-tap", "update", positive)
    line = one_line_error(run_import(copy, tmp_path / "out"), tmp_path / "out")
    assert line.startswith(f"{copy / 'run1-tap' / 'shard-rank0.jsonl'} (line {number}, step 1, row ")
    assert "samples.logp: element 3 is 0.25: a log-probability is at most 0" in line


def test_positive_log_probs_within_rounding_are_kept(copy, tmp_path):
    def rounding(record):
        record["samples"][0]["logp"][3] = 1e-7

    edit_shard(copy / "run1-tap", "update", rounding)
    assert run_import(copy, tmp_path / "out").returncode == 0


def test_a_loss_the_registry_cannot_express(copy, tmp_path):
    manifest = copy / "run1-tap" / "manifest.json"
    data = json.loads(manifest.read_text())
    data["trainer"]["loss_type"] = "vespo"
    manifest.write_text(json.dumps(data))
    line = one_line_error(run_import(copy, tmp_path / "out"), tmp_path / "out")
    assert line.startswith(f"{manifest}: trainer.loss_type: loss_type 'vespo'")
    assert "has no kind in the registry: pass --algorithm SPEC" in line
    # The way out it names: view the run against a spec, TRL's own loss kept beside it.
    proc = run_import(copy, tmp_path / "viewed", "--algorithm", "grpo")
    assert proc.returncode == 0, proc.stderr
    assert "components of the spec grpo (--algorithm)" in unwrapped(proc.stdout)
    # the loss type TRL ran is named as the gap in the clip slot, which holds grpo's clip
    header = RunHeader.model_validate_json((tmp_path / "viewed" / "header.json").read_text())
    assert header.imported_from["gaps"][0] == {"setting": "loss_type", "value": "'vespo' (a Gamma weighting of the "
                                               "sequence ratio)", "slot": "clip", "nearest": "grpo's symmetric"}


def test_a_cispo_cap_at_or_below_one_imports_with_the_cap_named(copy, tmp_path):
    """TRL's cispo caps the weight at epsilon_high itself; at its default (unset: epsilon's 0.2) every token's
    weight min(ratio, 0.2) is below its ratio. No kind caps below 1 (the registry's cispo caps at 1 + eps_high):
    the run imports with the kind's default cap in its place, the gap named, and a note of what the cap does and
    what TRL's documentation recommends (epsilon_high 5.0, GRPOConfig's help)."""
    manifest = copy / "cispo-tap" / "manifest.json"
    data = json.loads(manifest.read_text())
    data["trainer"]["epsilon_high"] = 0.2  # what the tap records for epsilon_high unset (GRPOConfig.__post_init__)
    manifest.write_text(json.dumps(data))
    out = tmp_path / "out"
    proc = run_import(copy, out, tap="cispo-tap", state="cispo")
    assert proc.returncode == 0, proc.stderr
    header = RunHeader.model_validate_json((out / "header.json").read_text())
    cfg = header.algorithm_config
    assert (cfg.kind("clip"), cfg.param("clip", "eps_high")) == ("cispo", 0.28)  # the kind's default cap, 1.28
    assert header.imported_from["gaps"] == [{
        "setting": "epsilon_high", "slot": "clip",
        "value": "0.2 with loss_type 'cispo' (TRL caps the weight at epsilon_high itself, epsilon's 0.2 when it is "
                 "unset: every token's weight min(ratio, 0.2) is below its ratio)",
        "nearest": "cispo with eps_high 0.28 (a cap of 1.28: the registry's cap is above 1)"}]
    assert ("TRL's CISPO cap of 0.2 (epsilon_high, which unset is epsilon's value) holds every token's weight below "
            "its ratio") in header.notes
    assert "TRL's GRPOConfig documentation recommends epsilon_high 5.0 for loss_type 'cispo'" in header.notes
    # the diagnosis of which side clipped reads the cap the trainer ran: every tapped token's ratio is above 0.2
    assert header.imported_from["weight_cap"] == {"setting": "epsilon_high", "cap": 0.2, "advice": CISPO_RECOMMENDED}
    side = {d.key: d for d in diagnose(out)}["which_side"]
    assert side.verdict == LOOK and "the trainer capped the importance weight at 0.2 (epsilon_high = 0.2" in side.figure
    assert "every one of the 126 tokens in the token files had a ratio above it" in side.figure
    assert side.figure.endswith(CISPO_RECOMMENDED) and "\u03b5" not in side.figure
    assert "weight_cap" not in json.loads(unipo_import_header(tmp_path / "cap-1.02"))["imported_from"]
    from trl.trainer.grpo_config import GRPOConfig  # the recommendation is TRL's own words

    assert "loss_type='cispo'" in GRPOConfig.__dataclass_fields__["epsilon_high"].metadata["help"]
    assert "recommended value is `5.0`" in GRPOConfig.__dataclass_fields__["epsilon_high"].metadata["help"]


def unipo_import_header(out: Path, name: str = "cispo") -> str:
    """The header.json of the recorded run ``name`` (the fixture's own tap), imported to ``out``."""
    proc = unipo("import", "trl", str(FIXTURE / name), "--tap", str(FIXTURE / f"{name}-tap"), "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    return (out / "header.json").read_text()


def test_algorithm_lists_every_setting_trl_ran_otherwise_as_a_gap(tmp_path):
    """--algorithm cispo on the recorded CISPO run (cap 1.02, beta 0.04, no filter, no shaping; TRL's std + 1e-4):
    the run holds the spec's components, and every slot where TRL's GRPOConfig says otherwise is a gap, as the
    nearest-spec path would show it against the cispo spec."""
    from unipo_build.core.matching import compare as spec_compare
    from unipo_build.core.specs import load_specs
    from unipo_build.core.project import spec_dir

    out = tmp_path / "as-cispo"
    proc = run_import(FIXTURE, out, "--algorithm", "cispo", tap="cispo-tap", state="cispo")
    assert proc.returncode == 0, proc.stderr
    header = RunHeader.model_validate_json((out / "header.json").read_text())
    assert header.algorithm == "cispo" and header.imported_from["algorithm_option"] == {"spec": "cispo",
                                                                                         "settings": "compared"}
    gaps = {g["slot"]: g for g in header.imported_from["gaps"]}
    assert gaps == {
        "advantage": {"setting": "scale_rewards", "value": "group_zscore (eps 0.0001, std_ddof 1)", "slot": "advantage",
                      "nearest": "cispo's group_zscore (eps 1e-06, std_ddof 1)", "cause": "algorithm"},
        "clip": {"setting": "loss_type", "value": "cispo (eps_high 0.02, eps_low None)", "slot": "clip",
                 "nearest": "cispo's cispo (eps_high 0.28, eps_low None)", "cause": "algorithm"},
        "kl": {"setting": "beta", "value": "in_loss (beta 0.04, estimator k3)", "slot": "kl", "nearest": "cispo's none",
               "cause": "algorithm"},
        "filter": {"setting": "filter", "value": "none", "slot": "filter",
                   "nearest": "cispo's dynamic_sampling (max_rounds 10)", "cause": "algorithm"},
        "shaping": {"setting": "shaping", "value": "none", "slot": "shaping", "cause": "algorithm",
                    "nearest": "cispo's overlong (cache_fraction 0.2, cache_length 2, max_length 12, penalty 0.5)"}}
    # the same slots the nearest-spec path shows against the cispo spec: the run imported without --algorithm
    plain = tmp_path / "plain"
    assert run_import(FIXTURE, plain, tap="cispo-tap", state="cispo").returncode == 0
    own = RunHeader.model_validate_json((plain / "header.json").read_text()).algorithm_config
    match = spec_compare(load_specs(spec_dir())["cispo"], own)
    assert {d.slot for d in match.diffs if d.changed} == set(gaps)
    assert "TRL's beta = in_loss (beta 0.04, estimator k3) is not --algorithm's kl (the run holds cispo's none)" in \
        unwrapped(proc.stdout)


def test_algorithm_without_the_tap_says_the_settings_are_not_recorded(tmp_path):
    out = tmp_path / "no-tap"
    proc = unipo("import", "trl", str(FIXTURE / "cispo"), "--out", str(out), "--algorithm", "cispo",
                 "--max-new-tokens", "16")
    assert proc.returncode == 0, proc.stderr
    header = RunHeader.model_validate_json((out / "header.json").read_text())
    assert header.imported_from["algorithm_option"] == {"spec": "cispo", "settings": "not recorded"}
    assert "gaps" not in header.imported_from and "the run is not compared with cispo" in header.notes


def test_an_algorithm_naming_no_spec_stops_with_the_spec_ids(tmp_path):
    from unipo_build.core.specs import load_specs
    from unipo_build.core.project import spec_dir

    out = tmp_path / "out"
    line = one_line_error(run_import(FIXTURE, out, "--algorithm", "cispo-v2", tap="cispo-tap", state="cispo"), out)
    ids = ", ".join(sorted(load_specs(spec_dir())))
    assert line == f"{FIXTURE / 'cispo'}: --algorithm 'cispo-v2' names no spec; the spec ids are {ids}"
    assert "cispo, dapo" in line


def load(out: Path) -> tuple[RunHeader, list[StepDetail]]:
    header = RunHeader.model_validate_json((out / "header.json").read_text())
    return header, [StepDetail.model_validate_json(p.read_text()) for p in sorted((out / "tokens").glob("*.json"))]


def test_the_recorded_cispo_run_imports_with_parity(tmp_path):
    """TRL's loss_type cispo (epsilon_high 1.02: TRL caps the weight at 1.02; beta 0.04, two iterations, one
    group of two tapped) imports as the cispo kind: no lower bound, eps_high 0.02, a token mean. TRL writes the
    paper's -sg(w) A log pi + beta KL, the kind's value is w A - beta KL (the same gradient): every tapped token
    agrees with TRL's per-token loss in TRL's form to 1e-6, and each step's recomputation in TRL's form is minus
    TRL's loss to 1e-6; the token file's own objective is the kind's, labelled why it parts."""
    out = tmp_path / "cispo"
    proc = run_import(FIXTURE, out, tap="cispo-tap", state="cispo")
    assert proc.returncode == 0, proc.stderr
    assert unipo("validate", str(out)).returncode == 0
    header, details = load(out)
    cfg = header.algorithm_config
    assert header.algorithm == "trl-cispo" and "gaps" not in header.imported_from
    assert (cfg.kind("clip"), cfg.param("clip", "eps_low"), cfg.param("clip", "eps_high")) == ("cispo", None,
                                                                                               pytest.approx(0.02))
    assert cfg.kind("aggregation") == "token_mean" and cfg.kind("ratio") == "token"
    capped = 0
    for d in details:
        assert check_step(cfg, d) == []
        extra = d.model_extra
        assert extra["objective_in_trl_form"] == pytest.approx(-d.trl_loss, abs=1e-6)
        assert "MiniMax-M1" in extra["objective_differs"] and "minus TRL's loss to 1e-06" in extra["objective_differs"]
        for p in d.prompts:
            for r in p.responses:
                t = r.tokens
                live = np.asarray(t.mask, dtype=bool)
                rho = np.exp(np.subtract(t.logp, t.old_logp))
                a, logp = np.asarray(t.advantage), np.asarray(t.logp)
                k3 = np.exp(np.subtract(t.ref_logp, t.logp)) - np.subtract(t.ref_logp, t.logp) - 1
                w = np.minimum(rho, 1.02)  # TRL: clamp(coef_1, max=epsilon_high).detach()
                assert np.max(np.abs((w * a - 0.04 * k3) - t.objective)[live]) <= 1e-6
                assert np.max(np.abs((w * a * logp - 0.04 * k3) - np.asarray(t.engine_objective))[live]) <= 1e-6
                assert np.max(np.abs(np.subtract(t.ratio, t.engine_ratio))[live]) <= 1e-6
                capped += int(np.sum((rho > 1.02) & live))
    assert capped  # the cap acted on tapped tokens
    assert header.trl["objectives"]["differ"] == len(details)
    assert "MiniMax-M1" in header.trl["objectives"]["reason"]


def test_cispo_row_value_loss_agrees_with_the_recomputation(tmp_path):
    """For every tapped row of every step, minus the tap's row_value_loss (summed over the row's micro-batch
    records of the step) is the recomputed response's contribution: the untapped group's share, taken from it,
    is in the same units as the tapped group's."""
    out = tmp_path / "cispo"
    assert run_import(FIXTURE, out, tap="cispo-tap", state="cispo").returncode == 0
    header, details = load(out)
    records = [json.loads(line) for line in (FIXTURE / "cispo-tap" / "shard-rank0.jsonl").read_text().splitlines()]
    updates = [u for u in records if u["kind"] == "update"]
    assert updates and all("row_value_loss" in u for u in updates)
    steps = [json.loads(line) for line in (out / "steps.jsonl").read_text().splitlines()]
    for d in details:
        trl_step = steps[d.step]["source_step"]
        share = {}
        for u in updates:
            if u["step"] == trl_step:
                for row, value in zip(u["rows"], u["row_value_loss"]):
                    share[row] = share.get(row, 0.0) - value
        for p in d.prompts:
            for r in p.responses:
                assert r.contribution == pytest.approx(share[r.source_row], abs=1e-7)
        assert d.objective == pytest.approx(sum(share.values()), abs=1e-6)


def test_the_recorded_sapo_run_imports_with_parity(tmp_path):
    """TRL's loss_type sapo (sapo_temperature_neg 1.3, pos 1.0) imports as the sapo kind with those
    temperatures and the per-response mean: every tapped token is TRL's (4 / tau) sigmoid(tau (rho - 1)) A -
    beta KL to 1e-6, and each step's objective is minus TRL's loss to 1e-6."""
    out = tmp_path / "sapo"
    proc = run_import(FIXTURE, out, tap="sapo-tap", state="sapo")
    assert proc.returncode == 0, proc.stderr
    assert unipo("validate", str(out)).returncode == 0
    header, details = load(out)
    cfg = header.algorithm_config
    assert header.algorithm == "trl-sapo" and "gaps" not in header.imported_from
    assert (cfg.kind("clip"), cfg.param("clip", "tau_pos"), cfg.param("clip", "tau_neg")) == ("sapo", 1.0, 1.3)
    assert cfg.kind("aggregation") == "seq_mean_token_mean"
    moved = 0
    for d in details:
        assert check_step(cfg, d) == []
        assert d.objective == pytest.approx(-d.trl_loss, abs=1e-6)
        assert "objective_differs" not in d.model_extra
        for p in d.prompts:
            for r in p.responses:
                t = r.tokens
                live = np.asarray(t.mask, dtype=bool)
                rho = np.exp(np.subtract(t.logp, t.old_logp))
                a = np.asarray(t.advantage)
                tau = np.where(a > 0, 1.0, 1.3)
                k3 = np.exp(np.subtract(t.ref_logp, t.logp)) - np.subtract(t.ref_logp, t.logp) - 1
                hand = 4 / tau / (1 + np.exp(-tau * (rho - 1))) * a - 0.04 * k3
                for ours in (t.objective, t.engine_objective):
                    assert np.max(np.abs(hand - np.asarray(ours))[live]) <= 1e-6
                assert np.max(np.abs(np.subtract(t.weight, t.engine_weight))[live]) <= 1e-9
                moved += int(np.any(np.abs(rho - 1) > 1e-3))
    assert moved


def test_a_partly_readable_log_imports_what_it_can(copy, tmp_path):
    state = copy / "run1" / "trainer_state.json"
    data = json.loads(state.read_text())
    data["log_history"].insert(1, {"loss": 0.5})  # no step
    data["log_history"][0]["reward"] = "high"
    state.write_text(json.dumps(data))
    shard = copy / "run1-tap" / "shard-rank0.jsonl"
    lines = shard.read_text().splitlines()
    cut = len(lines)
    shard.write_text("\n".join(lines) + "\n" + lines[-1][: len(lines[-1]) // 2])  # a record cut off
    proc = run_import(copy, tmp_path / "out")
    assert proc.returncode == 0, proc.stderr
    assert "trainer_state.json: log_history[1] has no integer step, skipped" in unwrapped(proc.stdout)
    assert "log_history[0] (step 1) field 'reward' is not a number, skipped" in unwrapped(proc.stdout)
    assert f"shard-rank0.jsonl line {cut + 1}: not JSON (cut off?), skipped" in unwrapped(proc.stdout)
    assert unipo("validate", str(tmp_path / "out")).returncode == 0
    steps = (tmp_path / "out" / "steps.jsonl").read_text().splitlines()
    assert len(steps) == 3 and "reward/mean" not in json.loads(steps[0])["metrics"]


def test_without_the_tap_metrics_only(tmp_path):
    proc = unipo("import", "trl", str(FIXTURE / "run1"), "--out", str(tmp_path / "out"))
    assert proc.returncode == 0, proc.stderr
    assert "algorithm unknown" in unwrapped(proc.stdout)
    header = RunHeader.model_validate_json((tmp_path / "out" / "header.json").read_text())
    assert header.algorithm_config is None
    assert not list((tmp_path / "out").glob("tokens/*.json"))


def test_trls_evaluations_are_no_training_steps_and_their_change_is_said_unpaired(copy, tmp_path):
    """Trainer.evaluate's log_history entries (eval_ metrics only, as TRL 1.16 writes them: tests/test_trl_run.py
    runs one) are not steps: the one before training (eval_on_start, TRL step 0) is the header's
    pre_training_metrics, the one at step 2 joins step 2's metrics. TRL logs their means only and no result per
    problem, so no held-out evaluation is made and the note says a change between them could only be unpaired."""
    path = copy / "run1" / "trainer_state.json"
    state = json.loads(path.read_text())
    history = state["log_history"]
    evaluation = {"eval_loss": 0.0, "eval_reward": 0.375, "eval_rewards/correct_reward/mean": 0.25}
    history.insert(0, {**evaluation, "epoch": 0.0, "step": 0})
    history.insert(3, {**evaluation, "eval_reward": 0.5, "epoch": 0.25, "step": 2})
    path.write_text(json.dumps(state))
    proc = run_import(copy, tmp_path / "out")
    assert proc.returncode == 0, proc.stderr
    assert unipo("validate", str(tmp_path / "out")).returncode == 0
    header = RunHeader.model_validate_json((tmp_path / "out" / "header.json").read_text())
    assert header.model_extra["pre_training_metrics"] == evaluation
    steps = [json.loads(line) for line in (tmp_path / "out" / "steps.jsonl").read_text().splitlines()]
    assert [s["source_step"] for s in steps] == [1, 2, 3]
    assert [s["metrics"].get("eval_reward") for s in steps] == [None, 0.5, None]
    assert steps[1]["metrics"]["loss/policy"] == pytest.approx(history[2]["loss"], abs=1e-7)
    assert not (tmp_path / "out" / "evals.jsonl").read_text().strip()
    note = header.notes
    assert ("TRL's evaluations (log_history's eval_ entries at TRL steps 0, 2) are means only" in note
            and "TRL keeps no result per problem of an evaluation" in note
            and "a held-out change between two of them could only be unpaired" in note)


def test_a_malformed_tap_record_is_skipped_and_listed(copy, tmp_path):
    number = edit_shard(copy / "run1-tap", "update", lambda r: r.pop("loss"))
    proc = run_import(copy, tmp_path / "out")
    assert proc.returncode == 0, proc.stderr
    assert (f"shard-rank0.jsonl line {number}: update record without field 'loss', skipped"
            in unwrapped(proc.stdout))
    assert unipo("validate", str(tmp_path / "out")).returncode == 0


def test_a_checkpoint_directory_is_read_when_the_state_was_not_saved(tmp_path):
    """Without trainer.save_state() the newest checkpoint-N/trainer_state.json is read (numerically newest)."""
    src = tmp_path / "trl-output"
    for n in (2, 10):
        (src / f"checkpoint-{n}").mkdir(parents=True)
        state = json.loads((FIXTURE / "run1" / "trainer_state.json").read_text())
        state["log_history"] = [e for e in state["log_history"] if e.get("step", 0) <= n and "train_runtime" not in e]
        (src / f"checkpoint-{n}" / "trainer_state.json").write_text(json.dumps(state))
    proc = unipo("import", "trl", str(src), "--tap", str(FIXTURE / "run1-tap"), "--out", str(tmp_path / "out"))
    assert proc.returncode == 0, proc.stderr
    assert len((tmp_path / "out" / "steps.jsonl").read_text().splitlines()) == 3  # checkpoint-10: all 3 steps
    header = json.loads((tmp_path / "out" / "header.json").read_text())
    assert header["imported_from"]["files"][0]["path"].endswith("checkpoint-10/trainer_state.json")


# ---------------------------------------------------------------------------
# A tap joins one run: the four ways another run's tap was accepted before (issue 30)
# ---------------------------------------------------------------------------

def logged_loss(state: Path, step: int) -> float:
    return next(e["loss"] for e in json.loads(state.read_text())["log_history"] if e.get("step") == step and "loss" in e)


def test_the_tap_records_the_runs_identity_and_the_import_compares_it(tmp_path):
    proc = unipo("import", "trl", str(FIXTURE / "run1"), "--tap", str(FIXTURE / "run1-tap"), "--out", str(tmp_path / "o"))
    assert proc.returncode == 0, proc.stderr
    manifest = json.loads((FIXTURE / "run1-tap" / "manifest.json").read_text())
    assert (manifest["seed"], manifest["loss_type"], len(manifest["run"])) == (0, "grpo", 16)
    header = json.loads((tmp_path / "o" / "header.json").read_text())
    assert header["trl"]["tap_run"] == manifest["run"]
    # Every tapped step's loss, both tapped generations' mean reward and length were compared with the log.
    assert header["trl"]["cross_check"] == {"loss": 3, "reward": 2, "length": 2}


def test_a_run_logged_every_other_step_is_compared_by_its_logging_windows(copy, tmp_path):
    """logging_steps=2: Trainer.log averages the loss over the steps since the last log, and TRL its metrics over
    the generations made since; the tap's steps 1-2 are compared with what was logged at step 2 (and a tap of
    another run is still refused there)."""
    state = copy / "run1" / "trainer_state.json"
    data = json.loads(state.read_text())
    entries = {e["step"]: e for e in data["log_history"] if "loss" in e}
    merged = {**entries[1], **{k: v for k, v in entries[2].items()}, "loss": (entries[1]["loss"] + entries[2]["loss"]) / 2}
    data["log_history"] = [merged, entries[3]] + [e for e in data["log_history"] if "train_runtime" in e]
    state.write_text(json.dumps(data))
    proc = run_import(copy, tmp_path / "out")
    assert proc.returncode == 0, proc.stderr
    assert json.loads((tmp_path / "out" / "header.json").read_text())["trl"]["cross_check"] == \
        {"loss": 2, "reward": 2, "length": 2}
    merged["loss"] += 0.01
    state.write_text(json.dumps(data))
    line = one_line_error(run_import(copy, tmp_path / "bad"), tmp_path / "bad")
    assert ", step 2): loss: the tap's loss of TRL steps 1-2 (their mean) is " in line


def test_a_tap_of_a_run_with_another_seed_is_refused(copy, tmp_path):
    """Same settings, seed 1: step 1's losses agree (both ~0: ratio 1, centred advantages), the rewards of the
    generation TRL logged at step 1 do not."""
    line = one_line_error(run_import(copy, tmp_path / "out", tap="seed1-tap"), tmp_path / "out")
    shard = copy / "seed1-tap" / "shard-rank0.jsonl"
    assert line.startswith(f"{shard} (line 2, step 1): rows.reward: the tap's mean reward of rollout 0 is ")
    ours = np.mean([r["reward"] for r in json.loads(shard.read_text().splitlines()[1])["rows"]])
    theirs = next(e["reward"] for e in json.loads((copy / "run1" / "trainer_state.json").read_text())["log_history"]
                  if e.get("step") == 1)
    assert f"is {ours:.6g}; trainer_state.json's log_history logs {theirs:.6g} at TRL step 1" in line
    assert "seed 1, loss_type grpo" in line and "recorded by another run" in line
    assert abs(logged_loss(copy / "seed1" / "trainer_state.json", 1) - logged_loss(copy / "run1" / "trainer_state.json", 1)) < 1e-5


def test_a_shard_of_another_run_beside_the_first_is_refused(copy, tmp_path):
    shutil.copy(copy / "seed1-tap" / "shard-rank0.jsonl", copy / "run1-tap" / "shard-rank1.jsonl")
    line = one_line_error(run_import(copy, tmp_path / "out"), tmp_path / "out")
    other = json.loads((copy / "seed1-tap" / "manifest.json").read_text())["run"]
    mine = json.loads((copy / "run1-tap" / "manifest.json").read_text())["run"]
    assert line.startswith(f"{copy / 'run1-tap' / 'shard-rank1.jsonl'} (line 1): run: this shard was recorded by "
                           f"another run (run {other!r}; the tap's manifest.json: {mine!r})")


def test_another_runs_lines_appended_to_a_shard_are_refused(copy, tmp_path):
    shard = copy / "run1-tap" / "shard-rank0.jsonl"
    first = len(shard.read_text().splitlines())
    shard.write_text(shard.read_text() + (copy / "seed1-tap" / "shard-rank0.jsonl").read_text())
    line = one_line_error(run_import(copy, tmp_path / "out"), tmp_path / "out")
    assert line.startswith(f"{shard} (line {first + 1}): run: this shard was recorded by another run")
    # The same lines with their identity rewritten to the first run's: the second shard record is refused.
    mine = json.loads((copy / "run1-tap" / "manifest.json").read_text())["run"]
    other = json.loads((copy / "seed1-tap" / "manifest.json").read_text())["run"]
    shard.write_text(shard.read_text().replace(other, mine).replace('"seed": 1', '"seed": 0'))
    line = one_line_error(run_import(copy, tmp_path / "out"), tmp_path / "out")
    assert line.startswith(f"{shard} (line {first + 1}): kind: a second shard record in one file")
    # ... and without that record, the rollout recorded twice.
    lines = shard.read_text().splitlines()
    del lines[first]
    shard.write_text("\n".join(lines) + "\n")
    line = one_line_error(run_import(copy, tmp_path / "out"), tmp_path / "out")
    assert line.startswith(f"{shard} (line {first + 1}, step 0): rollout: rollout 0 was recorded twice in this shard "
                           "(first at line 2)")


def test_a_tap_of_a_run_with_another_loss_type_is_refused(copy, tmp_path):
    """The bnpo run's output directory with the grpo run's tap (same seed, same generations): it was
    labelled trl-grpo before; TRL's bnpo loss of step 1 is not the grpo tap's."""
    line = one_line_error(run_import(copy, tmp_path / "out", state="bnpo"), tmp_path / "out")
    assert line.startswith(f"{copy / 'run1-tap' / 'shard-rank0.jsonl'} (line ")
    assert ", step 1): loss: the tap's loss of TRL step 1 is " in line
    assert f"logs {logged_loss(copy / 'bnpo' / 'trainer_state.json', 1):.6g} at TRL step 1" in line
    assert "loss_type grpo" in line
    # Its own tap imports, named for what it ran.
    proc = run_import(copy, tmp_path / "bnpo", state="bnpo", tap="bnpo-tap")
    assert proc.returncode == 0, proc.stderr
    assert json.loads((tmp_path / "bnpo" / "header.json").read_text())["hyperparameters"]["loss_type"] == "bnpo"


def test_a_tap_whose_identity_was_rewritten_is_still_refused_by_its_numbers(copy, tmp_path):
    """The seed-1 tap made to claim the first run's fingerprint and seed: the logged losses still tell."""
    mine = json.loads((copy / "run1-tap" / "manifest.json").read_text())["run"]
    other = json.loads((copy / "seed1-tap" / "manifest.json").read_text())["run"]
    for path in (copy / "seed1-tap").iterdir():
        path.write_text(path.read_text().replace(other, mine).replace('"seed": 1', '"seed": 0'))
    line = one_line_error(run_import(copy, tmp_path / "out", tap="seed1-tap"), tmp_path / "out")
    assert "step 1): rows.reward: the tap's mean reward of rollout 0" in line


def test_a_tap_with_a_micro_batch_too_many_is_refused(copy, tmp_path):
    shard = copy / "run1-tap" / "shard-rank0.jsonl"
    lines = shard.read_text().splitlines()
    update = next(line for line in lines if json.loads(line)["kind"] == "update")
    record = json.loads(update)
    record["micro_step"] = 99
    shard.write_text(shard.read_text() + json.dumps(record) + "\n")
    line = one_line_error(run_import(copy, tmp_path / "out"), tmp_path / "out")
    assert f"(line {len(lines) + 1}, step {record['step']}): step: 3 micro-batch records for TRL step" in line


def test_two_objectives_of_a_step_agree_or_are_labelled(tmp_path):
    """The token file's step objective (the run's components over the step) and steps.jsonl's (minus TRL's
    loss): equal where TRL's convention has kinds (grpo; bnpo with gradient accumulation, whose per-micro-batch token
    mean is the micro_token_mean kind, issue 44 item 5), else labelled with the reason (CISPO: TRL writes the
    paper's form of the loss, the token file the kind's value)."""
    for name, differ in (("run1", 0), ("bnpo", 0), ("cispo", 3)):
        out = tmp_path / name
        proc = unipo("import", "trl", str(FIXTURE / name), "--tap", str(FIXTURE / f"{name}-tap"), "--out", str(out))
        assert proc.returncode == 0, proc.stderr
        header = json.loads((out / "header.json").read_text())
        objectives = header["trl"]["objectives"]
        assert (objectives["steps"], objectives["differ"]) == (3, differ)
        steps = [json.loads(line) for line in (out / "steps.jsonl").read_text().splitlines()]
        gaps = {}
        for path in sorted((out / "tokens").glob("step_*.json")):
            d = json.loads(path.read_text())
            assert d["trl_objective"] == pytest.approx(steps[d["step"]]["metrics"]["objective"], rel=1e-6, abs=1e-9)
            gap = abs(d["objective"] - d["trl_objective"])
            if "objective_differs" in d:
                assert gap > 1e-6 and d["objective_differs"].startswith("TRL writes CISPO's per-token loss")
                gaps[d["step"]] = gap
            else:
                assert gap <= 1e-6 * (1 + abs(d["trl_objective"]))
        if differ:
            assert "two objectives per step" in header["notes"] and objectives["reason"]
            assert objectives["at_step"] == max(gaps, key=gaps.get)
            assert objectives["max_difference"] == pytest.approx(max(gaps.values()), rel=1e-3)


def test_a_correction_the_tap_cannot_back_is_missing_not_invented(copy, tmp_path):
    """A run whose TRL corrected for vLLM's sampler (use_vllm with vllm_importance_sampling_correction, TRL's default
    with vLLM) but whose tap holds no sampling log-probs: the correction is a named gap, the header's missing says
    which completions lack the sampler's log-probs, and no token gets an invented sample_logp."""
    manifest = copy / "run1-tap" / "manifest.json"
    data = json.loads(manifest.read_text())
    data["config"].update(use_vllm=True, vllm_importance_sampling_correction=True,
                          vllm_importance_sampling_mode="sequence_mask")
    manifest.write_text(json.dumps(data))
    out = tmp_path / "out"
    proc = run_import(copy, out)
    assert proc.returncode == 0, proc.stderr
    header, details = load(out)
    samples = sum(len(r.tokens.ids) > 0 for d in details for p in d.prompts for r in p.responses)
    assert samples
    (line,) = header.model_extra["missing"]
    assert line.startswith("the sampler's log-probs of ") and "vllm_importance_sampling_mode 'sequence_mask'" in line
    assert "missing (see the header's missing): the sampler's log-probs" in header.notes
    assert any(g["setting"] == "vllm_importance_sampling_correction" for g in header.imported_from["gaps"])
    assert all(r.tokens.sample_logp is None for d in details for p in d.prompts for r in p.responses)


def test_a_cispo_tap_without_row_value_loss_says_which_form_the_untapped_share_is_in(copy, tmp_path):
    """A CISPO tap without row_value_loss (written before the tap recorded it): the untapped group's share can only
    be TRL's own, in TRL's form, and the notes say so; the recomputation in TRL's form still matches TRL's loss."""
    shard = copy / "cispo-tap" / "shard-rank0.jsonl"
    records = [json.loads(line) for line in shard.read_text().splitlines()]
    for record in records:
        record.pop("row_value_loss", None)
    shard.write_text("".join(json.dumps(r) + "\n" for r in records))
    out = tmp_path / "out"
    proc = run_import(copy, out, tap="cispo-tap", state="cispo")
    assert proc.returncode == 0, proc.stderr
    header, details = load(out)
    assert "their share of the objective is TRL's own per-row loss in TRL's form (the tap has no row_value_loss)" \
        in header.notes
    for d in details:
        assert d.model_extra["objective_in_trl_form"] == pytest.approx(-d.trl_loss, abs=1e-6)


@pytest.mark.parametrize("config, expected", [
    ({}, ("masked_is", {"level": "sequence", "sequence": "product", "lower": None, "cap": 3.0, "kept": "ratio"})),
    ({"vllm_importance_sampling_mode": "token_truncate", "vllm_importance_sampling_clip_max": 2.0},
     ("truncated_is", {"level": "token", "sequence": "product", "lower": None, "cap": 2.0})),
    ({"vllm_importance_sampling_mode": "sequence_truncate", "vllm_importance_sampling_clip_min": 0.5},
     ("truncated_is", {"level": "sequence", "sequence": "product", "lower": 0.5, "cap": 3.0})),
    ({"vllm_importance_sampling_mode": "token_mask", "vllm_importance_sampling_clip_min": 0.5,
      "vllm_importance_sampling_clip_max": 2.0},
     ("masked_is", {"level": "token", "sequence": "product", "lower": 0.5, "cap": 2.0, "kept": "ratio"})),
    ({"vllm_importance_sampling_mode": "token_truncate", "vllm_importance_sampling_clip_max": None}, None),
], ids=["default-sequence-mask", "token-truncate", "sequence-truncate-lower", "token-mask", "truncate-no-cap"])
def test_trls_vllm_correction_maps_to_the_correction_kinds(config, expected):
    """TRL 1.16's vllm_importance_sampling_mode (default sequence_mask, clip_max 3.0, clip_min None): truncate clamps
    the ratio exp(old - sampling), per token or summed over the completion, to [clip_min, clip_max]; mask sets it
    to 0 outside them and keeps it inside. A truncation without a cap has no kind (None)."""
    from unipo_build.trainers.trl.config import trl_correction

    found = trl_correction(config)
    assert (None if found is None else (found["kind"], found["params"])) == expected


def test_a_vllm_corrected_run_recomputes_with_the_samplers_log_probs(copy, tmp_path):
    """The recorded GRPO run, its tap given vLLM's settings (token_truncate, cap 1.002) and sampling log-probs
    1, 1.003 and 0.996 times the learner's probability (old - sampling = 0, 0.003, -0.004, in turn): the run's
    correction is truncated_is (no gap, nothing missing), every token keeps its sample_logp, and its objective is
    min(exp(old - sampling), 1.002) times GRPO's clipped term, minus 0.04 k3, by hand. (A real vLLM run is not
    possible on CPU: TRL's own loss, engine_objective, carries no weight here, so the step's two objectives part.)"""
    manifest = copy / "run1-tap" / "manifest.json"
    data = json.loads(manifest.read_text())
    data["config"].update(use_vllm=True, vllm_importance_sampling_correction=True,
                          vllm_importance_sampling_mode="token_truncate", vllm_importance_sampling_clip_min=None,
                          vllm_importance_sampling_clip_max=1.002)
    manifest.write_text(json.dumps(data))
    shard = copy / "run1-tap" / "shard-rank0.jsonl"
    records = [json.loads(line) for line in shard.read_text().splitlines()]
    for record in records:
        for sample in record.get("samples", []) if record["kind"] == "generation" else []:
            sample["sampling_logp"] = [v - (0.0, 0.003, -0.004)[k % 3] for k, v in enumerate(sample["old_logp"])]
    shard.write_text("".join(json.dumps(r) + "\n" for r in records))
    out = tmp_path / "out"
    proc = run_import(copy, out)
    assert proc.returncode == 0, proc.stderr
    assert unipo("validate", str(out)).returncode == 0
    header, details = load(out)
    cfg = header.algorithm_config
    assert (cfg.kind("correction"), cfg.param("correction", "cap"), cfg.param("correction", "level")) == (
        "truncated_is", 1.002, "token")
    assert not any(g["slot"] == "correction" for g in header.imported_from.get("gaps", []))
    assert "missing" not in header.model_extra
    capped = 0
    for d in details:
        assert check_step(cfg, d) == []
        for p in d.prompts:
            for r in p.responses:
                t = r.tokens
                live = np.asarray(t.mask, dtype=bool)
                assert t.sample_logp is not None
                omega = np.minimum(np.exp(np.subtract(t.old_logp, t.sample_logp)), 1.002)
                rho, a = np.exp(np.subtract(t.logp, t.old_logp)), np.asarray(t.advantage)
                k3 = np.exp(np.subtract(t.ref_logp, t.logp)) - np.subtract(t.ref_logp, t.logp) - 1
                hand = omega * np.minimum(rho * a, np.clip(rho, 0.8, 1.2) * a) - 0.04 * k3
                assert np.max(np.abs(hand - np.asarray(t.objective))[live]) <= 1e-6
                capped += int(np.sum((np.exp(np.subtract(t.old_logp, t.sample_logp)) > 1.002) & live & (a != 0)))
    assert capped


def test_a_spec_with_a_correction_on_a_tap_without_sampler_log_probs_is_refused(tmp_path):
    """--algorithm naming a spec whose rollout correction needs the sampler's log-probs, on a tap that has none:
    one line naming the token field, nothing written (the weights are never invented)."""
    from unipo_build.core.project import spec_dir
    from unipo_build.core.specs import load_spec

    specs = [p.stem for p in sorted(spec_dir().glob("*.yaml"))
             if load_spec(p).components.get("correction") is not None
             and load_spec(p).components["correction"].kind != "none"]
    if not specs:
        pytest.skip("no shipped spec has a rollout correction")
    out = tmp_path / "out"
    proc = run_import(FIXTURE, out, "--algorithm", specs[0])
    line = one_line_error(proc, out)
    assert "tokens.sample_logp: the run's rollout correction needs the sampler's log-probs" in line, line


def trl_settings(**settings) -> dict:
    """A hand-made GRPOConfig as the tap's manifest records it (TRL 1.16's defaults: loss_type dapo, epsilon 0.2,
    beta 0, scale_rewards group) with ``settings`` laid over it."""
    return {"loss_type": "dapo", "epsilon_low": 0.2, "epsilon_high": 0.2, "beta": 0.0, "max_completion_length": 16,
            "scale_rewards": "group", "gradient_accumulation_steps": 1, "steps_per_generation": 1, "config": {},
            **settings}


def components_of(trainer: dict):
    from unipo_build.core.specs import ResolvedAlgorithm
    from unipo_build.trainers import common as K
    from unipo_build.trainers.trl.config import trl_components

    comps, gaps = trl_components(trainer, K.Loc("manifest.json"))
    # what the importer builds from them: the spec validator accepts every mapped combination
    ResolvedAlgorithm.model_validate({"id": "trl_check", "name": "check", "components": comps})
    return comps, gaps


@pytest.mark.parametrize("scale, expected", [
    ("group", ("group_zscore", {"std_ddof": 1, "eps": 1e-4})),
    ("none", ("group_mean", {})),
    # TRL 1.16 scale_rewards="batch": the group's mean, over rewards.std() of the whole generation batch + 1e-4
    ("batch", ("group_mean_batch_std", {"std_ddof": 1, "eps": 1e-4})),
])
def test_trls_scale_rewards_maps_to_the_advantage_kinds(scale, expected):
    comps, gaps = components_of(trl_settings(scale_rewards=scale))
    assert (comps["advantage"]["kind"], comps["advantage"]["params"]) == expected
    assert gaps == []


@pytest.mark.parametrize("loss_type, count_masked", [
    # grpo and sapo average each row's token mean over every row, dr_grpo divides by rows x max_completion_length:
    # a masked row still counts; bnpo, dapo and cispo divide by the tokens left in the mask: it does not
    ("grpo", True), ("dr_grpo", True), ("sapo", True), ("bnpo", False), ("dapo", False), ("cispo", False),
])
def test_trls_mask_truncated_completions_maps_to_the_filter(loss_type, count_masked):
    extra = {"epsilon_high": 5.0} if loss_type == "cispo" else {}
    comps, gaps = components_of(trl_settings(loss_type=loss_type, mask_truncated_completions=True, **extra))
    assert comps["filter"] == {"kind": "mask_truncated", "params": {"count_masked": count_masked}}
    assert gaps == []
    off, _ = components_of(trl_settings(loss_type=loss_type, **extra))
    assert off["filter"] == {"kind": "none", "params": {}}


def test_trls_mask_truncated_completions_with_a_loss_no_kind_counts_is_one_gap():
    """luspo's normaliser (a sum per response, averaged over responses) has no count_masked reading in the
    registry's kind: the setting stays one gap naming it, the filter slot none."""
    comps, gaps = components_of(trl_settings(loss_type="luspo", mask_truncated_completions=True))
    assert comps["filter"] == {"kind": "none", "params": {}}
    assert [(g.setting, g.slot) for g in gaps] == [("mask_truncated_completions", "filter")]
    assert "loss_type 'luspo'" in gaps[0].value


def test_trl_batch_std_and_mask_truncated_make_a_run_that_recomputes():
    """A GRPOConfig with both new kinds resolves to a spec whose weights mask the truncated row out (grpo: the
    normaliser still counts it, each row 1 / (rows x its length))."""
    from unipo_build.core import objective as O
    from unipo_build.core.specs import ResolvedAlgorithm

    comps, gaps = components_of(trl_settings(loss_type="grpo", scale_rewards="batch", mask_truncated_completions=True))
    cfg = ResolvedAlgorithm.model_validate({"id": "trl_grpo", "name": "TRL", "components": comps})
    mask = np.array([[1.0, 1.0, 0.0, 0.0], [1.0, 1.0, 1.0, 1.0]])
    w = np.asarray(O.weights(cfg, mask, truncated=np.array([False, True])))
    np.testing.assert_allclose(w, [[0.25, 0.25, 0, 0], [0, 0, 0, 0]])
    assert gaps == []


def test_the_recorded_run_with_batch_std_and_masked_truncations_imports_with_parity(tmp_path):
    """tests/fixtures/trl/gaps: a real TRL 1.16 run (loss_type grpo, beta 0.04, scale_rewards='batch',
    mask_truncated_completions, max_completion_length 6). Both settings map to their kinds (no gap), and every
    tapped token's weight is TRL's own: a truncated completion weighs 0 and still counts in grpo's mean over the
    rows (count_masked true), so a kept one of 3 tokens among 8 rows weighs 1 / (8 x 3); the step objective is
    minus TRL's loss. A truncated completion's tokens are outside TRL's loss mask (mask 0: TRL did not attend to
    them, their log-probs are placeholder zeros): their ratio, clip side and objective are 0, so the site's
    recomputation (check_step) agrees with every token (it once read a ratio of 1 there)."""
    out = tmp_path / "run"
    proc = unipo("import", "trl", str(FIXTURE / "gaps"), "--tap", str(FIXTURE / "gaps-tap"), "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    assert unipo("validate", str(out)).returncode == 0
    header = RunHeader.model_validate_json((out / "header.json").read_text())
    cfg = header.algorithm_config
    assert (cfg.kind("advantage"), dict(cfg.components["advantage"].params)) == (
        "group_mean_batch_std", {"std_ddof": 1, "eps": 1e-4})
    assert (cfg.kind("filter"), dict(cfg.components["filter"].params)) == ("mask_truncated", {"count_masked": True})
    assert "gaps" not in header.imported_from
    assert header.trl["objectives"]["differ"] == 0
    details = [StepDetail.model_validate_json(p.read_text()) for p in sorted((out / "tokens").glob("*.json"))]
    truncated = kept = 0
    for d in details:
        assert d.objective == pytest.approx(-d.trl_loss, abs=1e-6)
        assert check_step(cfg, d) == []
        for p in d.prompts:
            for r in p.responses:
                t = r.tokens
                assert np.max(np.abs(np.subtract(t.weight, t.engine_weight))) <= 1e-9
                if r.truncated:
                    truncated += 1
                    assert set(t.weight) == set(t.mask) == set(t.ratio) == set(t.objective) == {0.0}
                    assert set(t.clip) == {0}
                else:
                    kept += 1
    assert truncated and kept


@pytest.mark.parametrize("delta, epsilon_high, expected", [
    # INTELLECT-2's delta above 1 + epsilon_high: coef_1 clamped at delta inside PPO's min is the dual clip, c = delta
    (3.0, 0.2, ("dual_clip", {"eps_low": 0.2, "eps_high": 0.2, "c": 3.0})),
    (4.0, 0.28, ("dual_clip", {"eps_low": 0.2, "eps_high": 0.28, "c": 4.0})),
    # a delta inside PPO's range clamps the unclipped branch too: no kind, a gap on the plain clip
    (1.1, 0.2, ("symmetric", {"eps": 0.2})),
])
def test_trls_delta_maps_to_the_dual_clip_above_the_upper_bound(delta, epsilon_high, expected):
    comps, gaps = components_of(trl_settings(loss_type="grpo", epsilon_high=epsilon_high, config={"delta": delta}))
    assert (comps["clip"]["kind"], comps["clip"]["params"]) == expected
    assert [g.slot for g in gaps if "delta" in str(g)] == ([] if expected[0] == "dual_clip" else ["clip"])
