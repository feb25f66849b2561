"""`unipo import verl` and `unipo import prime-rl` on runs written in their trainers' exact formats.

The fixtures (tests/fixtures/verl, tests/fixtures/prime_rl) are written by tests/trainer_formats.py,
whose writers mirror verl's and prime-rl's own code paths. Every expected number is worked out in
the comment beside it (or in the writer's docstring). The importer runs as a user runs it: the
console script, in a subprocess, from the repository root.
"""

from __future__ import annotations

import json
import math
import re
import shutil
from pathlib import Path

import pytest
import yaml

from cli_helpers import unipo, unwrapped
from helpers_runlog import checksums
from unipo_build.core import runlog
from unipo_build.core.recompute import check_step

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures"


@pytest.fixture
def verl_run(tmp_path):
    dest = tmp_path / "in" / "verl"
    shutil.copytree(FIXTURES / "verl" / "run", dest)
    return dest


@pytest.fixture
def prime_run(tmp_path):
    dest = tmp_path / "in" / "prime"
    shutil.copytree(FIXTURES / "prime_rl" / "run", dest)
    return dest


def one_line_error(result) -> str:
    assert result.returncode == 1, result.stdout + result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    return lines[0]


def test_help_lists_every_format():
    out = unipo("import", "--help").stdout
    choices = re.search(r"\{([a-z,-]+)\}", out).group(1).split(",")
    assert {"unipo", "openrlhf", "verl", "prime-rl"} <= set(choices)  # trl comes with its own importer


# ---------------------------------------------------------------------------
# verl
# ---------------------------------------------------------------------------

def test_verl_round_trip(verl_run, tmp_path):
    before = checksums(verl_run)
    out = tmp_path / "runs" / "verl"
    result = unipo("import", "verl", verl_run, "--out", out)
    assert result.returncode == 0, result.stderr
    assert checksums(verl_run) == before
    assert unipo("validate", out).stdout.strip() == f"{out}: valid"

    header = runlog.read_header(out)
    # GRPO in verl's config: grpo + norm_adv_by_std, vanilla loss (dual-clip PPO: clip 0.2/0.2, clip_ratio_c 3),
    # k3 (low_var_kl) in the loss with coef 0.04, seq-mean-token-mean: every kind and parameter of
    # data/algorithms/dual_clip.yaml
    assert header.algorithm == "dual_clip"
    cfg = header.algorithm_config
    assert cfg.kind("kl") == "in_loss" and cfg.param("kl", "beta") == 0.04 and cfg.param("kl", "estimator") == "k3"
    assert cfg.kind("aggregation") == "seq_mean_token_mean" and cfg.kind("clip") == "dual_clip"
    assert (cfg.param("clip", "eps_low"), cfg.param("clip", "eps_high"), cfg.param("clip", "c")) == (0.2, 0.2, 3.0)
    assert header.hyperparameters["group_size"] == 2 and header.hyperparameters["max_new_tokens"] == 16
    assert header.engine == "verl" and any("token-level detail" in m for m in header.missing)
    assert "no token files" in header.notes
    steps = list(runlog.iter_steps(out))
    assert [s.source_step for s in steps] == [1, 2, 3]  # step 0's line holds validation metrics only
    assert runlog.token_steps(out) == []
    # dumps (scores per step, Q1 Q1 Q2 Q2): 1: 1 0 1 1; 2: 0 0 1 0; 3: 1 1 1 1
    assert [s.metrics["accuracy/train"] for s in steps] == [0.75, 0.25, 1.0]
    assert [s.metrics["groups/zero_variance_frac"] for s in steps] == [0.5, 0.5, 1.0]
    assert [s.metrics["groups/all_correct_frac"] for s in steps] == [0.5, 0.0, 1.0]
    assert [s.metrics["groups/all_wrong_frac"] for s in steps] == [0.0, 0.5, 0.0]
    assert [s.metrics["reward/mean"] for s in steps] == [0.75, 0.25, 1.0]  # critic/score/mean
    # objective = -(pg_loss + 0.04 kl_loss): step 1: -(-0.1 + 0.04 x 0.01) = 0.0996
    assert math.isclose(steps[0].metrics["objective"], 0.0996, rel_tol=1e-6)
    assert steps[0].metrics["loss/policy"] == -0.1 and steps[0].metrics["time/rollout_s"] == 1.25
    evals = list(runlog.iter_evals(out))
    # validation dumps: before training 1 of 2 right; after step 3 2 of 2 (greedy: val_kwargs.do_sample false)
    assert [(e.step, e.phase, e.n, e.accuracy_greedy) for e in evals] == [(0, "start", 2, 0.5), (3, "end", 2, 1.0)]
    # each sample's acc kept per problem (Q3, Q4 in the first dump's order): start 1 0, end 1 1
    assert [(e.problems, e.correct_greedy) for e in evals] == [("eval rows 1-2", "10"), ("eval rows 1-2", "11")]
    assert header.model_extra["pre_training_metrics"] == {"val-core/gsm8k/reward/mean@1": 0.5}
    # verl's files do not record its version: the header says so, and which release's format they were read as
    assert header.software["verl"] == "version not recorded in the run's files (read as verl 0.8.0.dev writes them)"


def write_verl_small_validation(run: Path, *, end_step: int = 3) -> None:
    """A verl run of two training steps with a 4-problem validation before training (Q5 right, Q6-Q8 wrong) and at
    the end of the run on a line of its own after the last training line (verl step ``end_step``: every problem
    right, the dump in another order, as verl's shuffled validation loader writes it); a wandb requirements file
    names verl 0.9.1."""
    from trainer_formats import VERL_CONFIG, VerlFileLogger, verl_config, verl_dump_generations

    config = json.loads(json.dumps(VERL_CONFIG))
    config["trainer"]["total_training_steps"] = 2
    verl_config(run, config)
    log = VerlFileLogger(run, "unipo_fixture", "verl_grpo")
    problems = ["Q5", "Q6", "Q7", "Q8"]
    log.log({"val-core/gsm8k/acc/mean@1": 0.25}, step=0)
    verl_dump_generations(run / "validation_data", 0, problems, ["#### 5", "#### 0", "#### 0", "#### 0"],
                          ["5", "6", "7", "8"], [1.0, 0.0, 0.0, 0.0], {"acc": [True, False, False, False]})
    for step in (1, 2):
        verl_dump_generations(run / "rollout_data", step, ["Q1", "Q1", "Q2", "Q2"], ["#### 1"] * 4, ["1"] * 4,
                              [1.0, 0.0, 1.0, 1.0], {"acc": [True, False, True, True]})
        log.log({"actor/pg_loss": -0.1 * step, "actor/kl_loss": 0.01 * step, "critic/score/mean": 0.75,
                 "training/global_step": step}, step=step)
    order = ["Q8", "Q6", "Q5", "Q7"]
    verl_dump_generations(run / "validation_data", end_step, order, [f"#### {q[1]}" for q in order],
                          [q[1] for q in order], [1.0] * 4, {"acc": [True] * 4})
    log.log({"val-core/gsm8k/acc/mean@1": 1.0}, step=end_step)
    log.close()
    (run / "wandb" / "run-1" / "files").mkdir(parents=True)
    (run / "wandb" / "run-1" / "files" / "requirements.txt").write_text("torch==2.7.1\nverl==0.9.1\nvllm==0.10.1\n")


@pytest.mark.parametrize("end_step", [2, 3], ids=["at-the-last-step", "after-the-last-step"])
def test_verl_end_of_run_validation_of_four_problems(tmp_path, end_step):
    """verl 0.9.1 logs the end-of-run validation on a line of only val- metrics after the last training line: it is
    filed at its step (the evaluation after both updates; its metrics with the step it follows), not as metrics
    logged before training. The 4 problems' per-sample acc pair start and end problem by problem: 1 of 4 -> 4 of 4,
    3 gained, none lost, an interval that stays within what is possible and no verdict (too few problems)."""
    from unipo_build.core.diagnose import diagnose
    from unipo_build.core.summary import summarize, summary_lines

    run = tmp_path / "in" / "verl"
    write_verl_small_validation(run, end_step=end_step)
    out = tmp_path / "runs" / "verl"
    result = unipo("import", "verl", run, "--out", out)
    assert result.returncode == 0, result.stderr
    header = runlog.read_header(out)
    assert header.software["verl"] == "0.9.1"
    assert header.model_extra["pre_training_metrics"] == {"val-core/gsm8k/acc/mean@1": 0.25}
    steps = list(runlog.iter_steps(out))
    assert [s.source_step for s in steps] == [1, 2]
    assert steps[-1].metrics["val-core/gsm8k/acc/mean@1"] == 1.0 and "val-core/gsm8k/acc/mean@1" not in steps[0].metrics
    assert f"after a training step (verl step {end_step}) kept with the metrics of the step they follow" in header.notes
    evals = list(runlog.iter_evals(out))
    # the end dump lists Q8 Q6 Q5 Q7: its results are written in the first dump's order Q5 Q6 Q7 Q8
    assert [(e.step, e.phase, e.n, e.accuracy_greedy, e.correct_greedy) for e in evals] == [
        (0, "start", 4, 0.25, "1000"), (2, "end", 4, 1.0, "1111")]
    change = summarize(out, with_moments=False)["heldout_change"]["greedy"]
    assert (change["paired"], change["gained"], change["lost"], change["too_few"]) == (True, 3, 0, True)
    # Newcombe's paired interval (a marginal is 0, so phi = 0): 0.75 - sqrt((1 - 4 / (4 + z^2))^2 + (0.699359 -
    # 0.25)^2) = +0.0852, 0.75 + (0.25 - 0.045587) = +0.9544; the normal interval read +0.326 to +1.174
    assert change["ci95"] == pytest.approx([0.0852, 0.9544], abs=5e-5) and change["interval"] == "newcombe"
    text = "\n".join(summary_lines(summarize(out, with_moments=False)))
    assert ("greedy: 25.0% -> 100.0% (+75.0 points, 95% CI +8.5 to +95.4, n 4, paired): too few problems to judge"
            in " ".join(text.split()))
    rising = next(d for d in diagnose(out) if d.key == "reward_not_rising")
    assert rising.verdict == "not measurable" and rising.lacks.startswith("too few problems to judge: the held-out "
                                                                          "evaluation has 4 problems, under 30")


def test_verl_run_card_says_too_few_problems_instead_of_a_verdict(tmp_path):
    import html as html_lib

    from unipo_build.core.runs import discover
    from unipo_build.site.context import Site
    from unipo_build.site.pages.learning import verdicts as V

    write_verl_small_validation(tmp_path / "in")
    assert unipo("import", "verl", tmp_path / "in", "--out", tmp_path / "runs" / "verl").returncode == 0
    (run,) = discover(tmp_path / "runs")
    card = html_lib.unescape(V.evals_html(run))
    assert "greedy: 25.0% → 100.0%, +75.0 points (95% interval +8.5 to +95.4; 3 problems gained, 0 lost" in card
    assert "too few problems to judge (under 30 problems)" in card and "clear gain" not in card


def test_verl_config_the_registry_cannot_express(verl_run, tmp_path):
    cfg_path = verl_run / ".hydra" / "config.yaml"
    cfg = yaml.safe_load(cfg_path.read_text())
    cfg["algorithm"]["adv_estimator"] = "remax"
    cfg_path.write_text(yaml.safe_dump(cfg))
    before = checksums(verl_run)
    out = tmp_path / "runs" / "remax"
    line = one_line_error(unipo("import", "verl", verl_run, "--out", out))
    assert line.startswith(f"{cfg_path}: algorithm.adv_estimator: 'remax' has no kind")
    assert "nearest: reinforce_return" in line and "--algorithm" in line
    assert not out.exists() and checksums(verl_run) == before
    # Named, it imports with that spec, the gap in the run card
    result = unipo("import", "verl", verl_run, "--out", out, "--algorithm", "reinforce")
    assert result.returncode == 0, result.stderr
    header = runlog.read_header(out)
    assert header.algorithm == "reinforce" and header.imported_from["gaps"][0]["setting"] == "algorithm.adv_estimator"
    assert "algorithm.adv_estimator = remax has no kind" in header.notes


def test_verl_partly_readable_log_imports_what_it_can(verl_run, tmp_path):
    metrics = verl_run / "unipo_fixture" / "verl_grpo.jsonl"
    lines = metrics.read_text().splitlines()
    lines.insert(2, '{"step": 2, "data": {"actor/pg_loss": ')  # a line cut off mid-write
    first = json.loads(lines[1])
    first["data"]["perf/histogram"] = [1, 2, 3]  # orjson writes a numpy array as a list: not a scalar
    lines[1] = json.dumps(first)
    metrics.write_text("\n".join(lines) + "\n")
    before = checksums(verl_run)
    out = tmp_path / "runs" / "partial"
    result = unipo("import", "verl", verl_run, "--out", out)
    assert result.returncode == 0, result.stderr
    assert checksums(verl_run) == before
    header = runlog.read_header(out)
    assert [s.source_step for s in runlog.iter_steps(out)] == [1, 2, 3]
    skipped = header.imported_from["skipped"]
    assert len(skipped) == 1 and skipped[0].startswith(f"{metrics}: line 3: not JSON")
    assert "skipped 1 unreadable line(s)" in header.notes
    assert "verl metric 'perf/histogram' is not a number (a list): left out" in header.notes


def test_not_a_verl_directory(tmp_path):
    src = tmp_path / "notverl"
    shutil.copytree(FIXTURES / "unipo", src)
    before = checksums(src)
    out = tmp_path / "runs" / "x"
    line = one_line_error(unipo("import", "verl", src, "--out", out))
    assert line.startswith(f"{src}: no verl metrics JSONL") and "is this a verl run directory?" in line
    assert not out.exists() and checksums(src) == before
    line = one_line_error(unipo("import", "verl", src / "grpo_small.json", "--out", out))
    assert "pass the directory, not a file" in line


# ---------------------------------------------------------------------------
# prime-rl
# ---------------------------------------------------------------------------

def test_prime_rl_round_trip_and_recompute(prime_run, tmp_path):
    before = checksums(prime_run)
    out = tmp_path / "runs" / "prime"
    result = unipo("import", "prime-rl", prime_run, "--out", out, "--algorithm", "dr_grpo")
    assert result.returncode == 0, result.stderr
    assert checksums(prime_run) == before
    assert unipo("validate", out).stdout.strip() == f"{out}: valid"
    header = runlog.read_header(out)
    assert header.algorithm == "dr_grpo" and header.engine == "prime-rl"
    assert header.hyperparameters["group_size"] == 2 and header.hyperparameters["max_new_tokens"] == 8
    assert header.model.name == "PrimeIntellect/Qwen3-0.6B-Reverse-Text-SFT"
    assert {g["setting"] for g in header.imported_from["gaps"]} == {"trainer.loss.type", "trainer.loss.kl_tau",
                                                                    "aggregation"}
    # prime-rl's loss is a token mean where dr_grpo's divides by the budget: listed under --algorithm (issue 44 item 2)
    assert header.imported_from["gaps"][-1] == {"setting": "aggregation", "value": "token_mean", "slot": "aggregation",
                                                "nearest": "dr_grpo's constant_normalizer (normalizer 8)",
                                                "cause": "algorithm"}
    assert header.imported_from["algorithm_option"] == {"spec": "dr_grpo", "settings": "compared"}
    assert ("prime-rl ran aggregation token_mean where the run card shows --algorithm dr_grpo's constant_normalizer "
            "(normalizer 8)") in unwrapped(result.stdout)
    assert any(m.startswith("rewards") for m in header.missing) and "missing from prime-rl's export" in header.notes
    steps = list(runlog.iter_steps(out))
    # the orchestrator's row for step 1 came before the trainer's rows for step 0: merged by step all the same
    assert [s.source_step for s in steps] == [0, 1] and [s.has_tokens for s in steps] == [True, False]
    assert steps[0].metrics["lr"] == 3e-6 and steps[0].metrics["grad_norm"] == 0.25
    assert steps[0].metrics["reward/mean"] == 0.5 and steps[1].metrics["grad_norm"] == 0.5

    detail = runlog.read_step_detail(out, 0)
    assert len(detail.prompts) == 1  # both sequences share the prompt tokens [5, 6]
    group = detail.prompts[0]
    assert group.prompt == "<5><6>" and [r.text for r in group.responses] == ["<7><8>", "<9>"]
    a, b = group.responses
    assert a.reward is None and a.length == 2 and a.tokens.ids == [7, 8]
    # ratio exp(-0.5 - -0.6) = exp(0.1) = 1.1051709; dr_grpo's weight 1 / (G x budget) = 1 / (2 x 8) = 0.0625
    assert a.tokens.ratio == pytest.approx([math.exp(0.1), 1.0], rel=1e-8)
    assert a.tokens.weight == [0.0625, 0.0625] and b.tokens.weight == [0.0625]
    # contributions: 0.0625 x 0.5 x (1.1051709 + 1) = 0.0657866; 0.0625 x -0.5 = -0.03125; J = 0.0345366
    assert a.contribution == pytest.approx(0.0625 * 0.5 * (math.exp(0.1) + 1), rel=1e-8)
    assert b.contribution == pytest.approx(-0.03125, rel=1e-12)
    assert detail.objective == pytest.approx(0.0625 * 0.5 * (math.exp(0.1) + 1) - 0.03125, rel=1e-6)
    assert a.tokens.model_extra["source_importance_ratio"] == pytest.approx([math.exp(0.1), 1.0], rel=1e-8)
    assert check_step(header.algorithm_config, detail) == []


def test_prime_rl_default_loss_needs_algorithm(prime_run, tmp_path):
    """The default loss's DPPO mask is the dppo_mask kind; its kl_tau x (log ratio)^2 toward the sampler (0.001 in
    the fixture, prime-rl's default) has no kind, so the import stops there and asks for --algorithm."""
    out = tmp_path / "runs" / "p"
    line = one_line_error(unipo("import", "prime-rl", prime_run, "--out", out))
    assert line.startswith(f"{prime_run / 'configs' / 'trainer.json'}: trainer.loss.kl_tau: ")
    assert "registry's kl slot" in line and "pass --algorithm SPEC" in line and "trainer.loss.type" not in line
    assert not out.exists()


def test_prime_rl_default_loss_without_kl_is_the_dppo_mask(tmp_path):
    """kl_tau = 0: prime-rl's default loss is the dppo_mask kind, imported without --algorithm, and the recomputed
    clip sides are prime-rl's own is_masked_high / is_masked_low. One prompt [5, 6], dppo_mask_low = high = 0.2:
    - [7, 8, 10], A = +0.5, pi_old (inference) 0.25, 0.6, 0.2 -> pi_theta 0.5, 0.9, 0.3: changes +0.25 and +0.3 are
      above 0.2 (masked high, term 0); +0.1 is kept, its ratio 0.3 / 0.2 = 1.5 (PPO's clip at 1.2 would have
      clipped it), term 1.5 x 0.5 = 0.75;
    - [9, 11], A = -0.5, pi_old 0.8, 0.1 -> pi_theta 0.5, 0.05: change -0.3 is below -0.2 (masked low); -0.05 is
      kept, ratio 0.5 (below PPO's 0.8), term 0.5 x -0.5 = -0.25.
    Token mean over the 5 tokens: J = (0.75 - 0.25) / 5 = 0.1."""
    from trainer_formats import ORCHESTRATOR_CONFIG, TRAINER_CONFIG, PrimeFileMonitor, prime_configs, prime_export, \
        prime_sequence

    src = tmp_path / "in" / "prime-dppo"
    prime_configs(src, {**TRAINER_CONFIG, "loss": {**TRAINER_CONFIG["loss"], "kl_tau": 0.0}}, ORCHESTRATOR_CONFIG)
    mon = PrimeFileMonitor(src)
    mon.log({"optim/lr": 3e-6, "optim/grad_norm": 0.25}, step=0, time=1000.0)
    mon.close()
    log = math.log
    prime_export(src, 0, [
        prime_sequence(0, 0, 0, 0, [5, 6], [7, 8, 10], [log(0.5), log(0.9), log(0.3)], [log(0.25), log(0.6), log(0.2)],
                       0.5),
        prime_sequence(0, 0, 1, 1, [5, 6], [9, 11], [log(0.5), log(0.05)], [log(0.8), log(0.1)], -0.5),
    ])
    out = tmp_path / "runs" / "prime-dppo"
    result = unipo("import", "prime-rl", src, "--out", out)
    assert result.returncode == 0, result.stderr
    header = runlog.read_header(out)
    clip = header.algorithm_config.components["clip"]
    assert clip.kind == "dppo_mask" and dict(clip.params) == {"delta_low": 0.2, "delta_high": 0.2}
    assert not (header.imported_from or {}).get("gaps")
    detail = runlog.read_step_detail(out, 0)
    a, b = detail.prompts[0].responses
    assert a.tokens.clip == [1, 1, 0] and b.tokens.clip == [-1, 0]
    assert a.tokens.clip == a.tokens.model_extra["source_is_masked"]
    assert b.tokens.clip == b.tokens.model_extra["source_is_masked"]
    assert a.tokens.objective == pytest.approx([0.0, 0.0, 0.75], abs=1e-9)
    assert b.tokens.objective == pytest.approx([0.0, -0.25], abs=1e-9)
    assert detail.objective == pytest.approx(0.1, abs=1e-9)
    assert check_step(header.algorithm_config, detail) == []


def test_prime_rl_ipo_loss_is_a_gap_nearest_the_dppo_mask(prime_run, tmp_path):
    """prime-rl's ipo loss masks a token whose probability moved more than ipo_threshold either way, whatever the
    advantage's sign: the nearest kind is dppo_mask at that threshold on the side the advantage pushes."""
    conf = prime_run / "configs" / "trainer.json"
    data = json.loads(conf.read_text())
    data["loss"] = {"type": "ipo", "ipo_threshold": 0.1, "adv_tau": 1.0, "kl_tau": 0.0}
    conf.write_text(json.dumps(data))
    line = one_line_error(unipo("import", "prime-rl", prime_run, "--out", tmp_path / "o"))
    assert line.startswith(f"{conf}: trainer.loss.type: 'ipo (ipo_threshold = 0.1")
    assert "nearest: dppo_mask (delta_low = delta_high = 0.1" in line


def test_prime_rl_positive_log_prob(prime_run, tmp_path):
    export = prime_run / "token_exports" / "step_0" / "rank_0.jsonl"
    rows = [json.loads(x) for x in export.read_text().splitlines()]
    rows[1]["trainer_logprobs"][2] = 0.5  # the completion's first token: log-prob 0.5 > 0
    export.write_text("".join(json.dumps(r, separators=(",", ":")) + "\n" for r in rows))
    before = checksums(prime_run)
    out = tmp_path / "runs" / "p"
    line = one_line_error(unipo("import", "prime-rl", prime_run, "--out", out, "--algorithm", "dr_grpo"))
    assert line == (f"{export} (line 2, step 0): trainer_logprobs: trained token 0 has log-prob 0.5 > 0, which no "
                    "probability has: the file is not a prime-rl token export (or was altered); re-export it")
    assert not out.exists() and checksums(prime_run) == before


def test_prime_rl_other_export_schema(prime_run, tmp_path):
    export = prime_run / "token_exports" / "step_0" / "rank_0.jsonl"
    rows = [json.loads(x) for x in export.read_text().splitlines()]
    rows[0]["schema_version"] = 2
    export.write_text("".join(json.dumps(r) + "\n" for r in rows))
    line = one_line_error(unipo("import", "prime-rl", prime_run, "--out", tmp_path / "o", "--algorithm", "dr_grpo"))
    assert line.startswith(f"{export} (line 1, step 0): schema_version: is 2; this importer reads")


def test_prime_rl_partly_readable_export(prime_run, tmp_path):
    export = prime_run / "token_exports" / "step_0" / "rank_0.jsonl"
    rows = [json.loads(x) for x in export.read_text().splitlines()]
    rows[1]["inference_logprobs"][2] = None  # non-finite in the trainer: written as null
    export.write_text("".join(json.dumps(r) + "\n" for r in rows) + '{"schema_version": 1, "st')
    out = tmp_path / "runs" / "p"
    result = unipo("import", "prime-rl", prime_run, "--out", out, "--algorithm", "dr_grpo")
    assert result.returncode == 0, result.stderr
    header = runlog.read_header(out)
    skipped = header.imported_from["skipped"]
    assert skipped[0].startswith(f"{export}: line 2 (step 0): inference_logprobs of trained token 0 is null")
    assert skipped[1] == f"{export}: line 3: not JSON (Unterminated string starting at: line 1 column 23 (char 22))"
    assert [len(g.responses) for g in runlog.read_step_detail(out, 0).prompts] == [1]


def test_not_a_prime_rl_directory(verl_run, tmp_path):
    line = one_line_error(unipo("import", "prime-rl", verl_run, "--out", tmp_path / "o"))
    assert line.startswith(f"{verl_run}: no token_exports/step_<N>/ and no metrics.jsonl")


def test_site_builds_with_imported_runs_alone(verl_run, prime_run, tmp_path):
    """Every view copes with a run without token files (verl) and with one without rewards (prime-rl):
    the site builds strictly from these runs alone, the chapters picking them."""
    from site_build import build_site

    runs = tmp_path / "runs"
    # verl ran dual-clip GRPO (its vanilla loss); viewed as GRPO, the GRPO chapter has two runs to compare
    assert unipo("import", "verl", verl_run, "--out", runs / "verl", "--algorithm", "grpo").returncode == 0
    for spec in ("grpo", "dr_grpo"):
        result = unipo("import", "prime-rl", prime_run, "--out", runs / f"prime-{spec}", "--run-id", f"prime-{spec}",
                       "--algorithm", spec)
        assert result.returncode == 0, result.stderr
    built = build_site(tmp_path / "site", extra_env={"UNIPO_RUNS": str(runs)})
    assert built.returncode == 0, built.log[-3000:]
    step_file = tmp_path / "site" / "assets" / "runs" / "prime-grpo" / "steps" / "step_000000.json"
    assert json.loads(step_file.read_text())["prompts"][0]["responses"][0].get("reward") is None
    page = (tmp_path / "site" / "course" / "algorithms" / "dr_grpo" / "index.html").read_text()
    assert 'data-run="prime-dr_grpo"' in page
    # the GRPO chapter's views (inspector, anatomy, guided examples) run on the prime-rl run, the one with tokens
    page = (tmp_path / "site" / "course" / "algorithms" / "grpo" / "index.html").read_text()
    assert 'data-run="prime-grpo"' in page and "The other, verl (seed 1)" in page


def test_prime_rl_token_detail_is_capped_but_every_group_counts(tmp_path):
    """Six prompts of two 3-token completions: the first four groups are kept token by token (the in-house
    trainer's detail_groups), all six are summarised, and J is the sum of all six."""
    from trainer_formats import ORCHESTRATOR_CONFIG, TRAINER_CONFIG, prime_configs, prime_export, prime_sequence

    run = tmp_path / "in" / "wide"
    prime_configs(run, TRAINER_CONFIG, ORCHESTRATOR_CONFIG)
    rows, k = [], 0
    for p in range(6):
        for adv in (0.5, -0.5):
            # equal log-probs: every ratio 1, so a token's objective is its advantage
            rows.append(prime_sequence(0, 0, k, k, [100 + p], [1, 2, 3], [-1.0] * 3, [-1.0] * 3, adv * (p + 1)))
            k += 1
    prime_export(run, 0, rows)
    out = tmp_path / "runs" / "wide"
    result = unipo("import", "prime-rl", run, "--out", out, "--algorithm", "gspo")
    assert result.returncode == 0, result.stderr
    detail = runlog.read_step_detail(out, 0)
    assert [g.index for g in detail.prompts] == [0, 1, 2, 3]
    assert [g.detailed for g in detail.groups] == [True] * 4 + [False] * 2
    # gspo's seq-mean-token-mean over the step's 12 responses: w = 1 / (12 x 3); each group's two responses
    # cancel (advantages +-0.5 (p + 1) on 3 tokens each), so every contribution and J is 0 up to rounding
    assert detail.prompts[0].responses[0].tokens.weight == pytest.approx([1 / 36] * 3, rel=1e-9)
    assert detail.prompts[0].responses[0].contribution == pytest.approx(3 * 0.5 / 36, rel=1e-9)
    assert all(abs(g.contribution) < 1e-12 for g in detail.groups) and abs(detail.objective) < 1e-12
    assert check_step(runlog.read_header(out).algorithm_config, detail) == []


def test_buffered_writer_writes_what_the_durable_one_does(tmp_path):
    from helpers_runlog import make_header, make_step
    from unipo_build.core.runlog import RunWriter

    for durable in (True, False):
        writer = RunWriter(tmp_path / str(durable), make_header("grpo"), durable=durable)
        for s in range(3):
            writer.step(make_step(s))
        writer.finish()
    assert (tmp_path / "True" / "steps.jsonl").read_bytes() == (tmp_path / "False" / "steps.jsonl").read_bytes()
    assert len((tmp_path / "False" / "steps.jsonl").read_text().splitlines()) == 3


def test_prime_rl_as_a_spec_with_kl_in_the_loss(prime_run, tmp_path):
    """The export has no reference log-probs: grpo's KL term cannot be computed for its tokens, so the run's
    components leave it out (and say so) rather than show tokens whose objective lacks it."""
    out = tmp_path / "runs" / "g"
    result = unipo("import", "prime-rl", prime_run, "--out", out, "--algorithm", "grpo")
    assert result.returncode == 0, result.stderr
    header = runlog.read_header(out)
    assert header.algorithm == "grpo" and header.algorithm_config.kind("kl") == "none"
    assert "grpo's KL term in the loss left out (kl: none)" in header.notes
    assert check_step(header.algorithm_config, runlog.read_step_detail(out, 0)) == []


def test_verl_hydra_output_directory_below(verl_run, tmp_path):
    """Hydra writes .hydra/ into outputs/<date>/<time>/: found there when the run's directory holds one."""
    nested = verl_run / "outputs" / "2026-01-29" / "11-20-04"
    nested.mkdir(parents=True)
    (verl_run / ".hydra").rename(nested / ".hydra")
    out = tmp_path / "runs" / "nested"
    result = unipo("import", "verl", verl_run, "--out", out)
    assert result.returncode == 0, result.stderr
    header = runlog.read_header(out)
    assert header.algorithm == "dual_clip" and header.imported_from["config"] == str(nested / ".hydra" / "config.yaml")
    shutil.copytree(nested, verl_run / "outputs" / "2026-01-29" / "12-00-00")
    line = one_line_error(unipo("import", "verl", verl_run, "--out", tmp_path / "runs" / "two"))
    assert line.startswith(f"{verl_run}: several Hydra configs (") and "point at the one run's output directory" in line


@pytest.mark.parametrize("section, key, value, setting", [
    ("algorithm", "kl_ctrl", {"type": "adaptive", "kl_coef": 0.001}, "algorithm.kl_ctrl.type"),
    ("algorithm", "rollout_correction", {"rollout_rs": "seq_mean_k1", "rollout_rs_threshold": 0.01},
     "algorithm.rollout_correction.rollout_rs"),
    ("algorithm", "rollout_correction", {"rollout_is": "token", "rollout_is_batch_normalize": True},
     "algorithm.rollout_correction.rollout_is"),
])
def test_verl_other_settings_without_a_kind(verl_run, tmp_path, section, key, value, setting):
    cfg_path = verl_run / ".hydra" / "config.yaml"
    cfg = yaml.safe_load(cfg_path.read_text())
    cfg[section][key] = value
    if key == "kl_ctrl":  # the adaptive controller acts on the KL in the reward
        cfg["algorithm"]["use_kl_in_reward"] = True
        cfg["actor_rollout_ref"]["actor"]["use_kl_loss"] = False
    cfg_path.write_text(yaml.safe_dump(cfg))
    line = one_line_error(unipo("import", "verl", verl_run, "--out", tmp_path / "o"))
    assert line.startswith(f"{cfg_path}: {setting}: ") and "--algorithm SPEC" in line


def test_verl_rollout_correction_the_files_cannot_back_is_missing(verl_run, tmp_path):
    """verl's rollout correction (rollout_is sequence, threshold 3: verl's compute_rollout_correction_weights takes
    exp(sum of log pi_old - log pi_rollout) over the response and clamps it at 3, no lower bound) is the truncated_is
    kind at the sequence level (the product) with cap 3. Its weights need the rollout's log-probs, which verl's files
    do not hold: the header lists them as missing, and no token file (nor any sampler log-prob) is made up."""
    cfg_path = verl_run / ".hydra" / "config.yaml"
    cfg = yaml.safe_load(cfg_path.read_text())
    cfg["algorithm"]["rollout_correction"] = {"rollout_is": "sequence", "rollout_is_threshold": 3.0}
    cfg_path.write_text(yaml.safe_dump(cfg))
    out = tmp_path / "runs" / "corrected"
    result = unipo("import", "verl", verl_run, "--out", out)
    assert result.returncode == 0, result.stderr
    header = runlog.read_header(out)
    correction = header.algorithm_config.components["correction"]
    assert (correction.kind, dict(correction.params)) == (
        "truncated_is", {"level": "sequence", "sequence": "product", "lower": None, "cap": 3.0})
    assert "gaps" not in header.imported_from
    line = header.model_extra["missing"][-1]
    assert line.startswith("the sampler's log-probs: verl's rollout correction was on "
                           "(algorithm.rollout_correction.rollout_is = sequence)"), line
    assert "missing (see the header's missing): the sampler's log-probs" in header.notes
    assert runlog.token_steps(out) == []
    assert unipo("validate", out).stdout.strip() == f"{out}: valid"


def test_fixtures_are_what_the_writer_writes(tmp_path):
    """tests/fixtures/verl and prime_rl are tests/trainer_formats.py's output, byte for byte (rerun it after a change)."""
    from trainer_formats import write_prime_fixture, write_verl_fixture

    write_verl_fixture(tmp_path / "verl")
    write_prime_fixture(tmp_path / "prime")
    assert checksums(tmp_path / "verl") == checksums(FIXTURES / "verl" / "run")
    assert checksums(tmp_path / "prime") == checksums(FIXTURES / "prime_rl" / "run")


def test_prime_rl_arrays_of_different_lengths(prime_run, tmp_path):
    export = prime_run / "token_exports" / "step_0" / "rank_0.jsonl"
    rows = [json.loads(x) for x in export.read_text().splitlines()]
    rows[0]["advantages"] = rows[0]["advantages"][:-1]  # one entry short of token_ids
    export.write_text("".join(json.dumps(r) + "\n" for r in rows))
    before = checksums(prime_run)
    line = one_line_error(unipo("import", "prime-rl", prime_run, "--out", tmp_path / "o", "--algorithm", "dr_grpo"))
    assert line == f"{export} (line 1, step 0): advantages: expected a list of 4 entries (the length of token_ids)"
    assert checksums(prime_run) == before and not (tmp_path / "o").exists()


def test_verl_console_log_instead_of_the_metrics_file(verl_run, tmp_path):
    """Only the console output (trainer.logger console, under Ray): the same steps and metrics as from the
    file logger's JSONL, other output passed over, a value that is not a number listed as skipped."""
    from trainer_formats import verl_console_line

    from_file = tmp_path / "runs" / "file"
    assert unipo("import", "verl", verl_run, "--out", from_file).returncode == 0
    metrics = verl_run / "unipo_fixture" / "verl_grpo.jsonl"
    lines = ["(TaskRunner pid=4242) Loading checkpoint shards: 100%", "Training Progress:  33%|###"]
    for row in map(json.loads, metrics.read_text().splitlines()):
        lines.append(verl_console_line(row["data"], row["step"]))
    lines[3] = lines[3].replace("actor/grad_norm:0.5", "actor/grad_norm:tensor(0.5000)")  # not a Number
    metrics.unlink()
    (verl_run / "train.log").write_text("\n".join(lines) + "\n")
    out = tmp_path / "runs" / "console"
    result = unipo("import", "verl", verl_run, "--out", out)
    assert result.returncode == 0, result.stderr
    header = runlog.read_header(out)
    assert "metrics from the console log" in header.notes
    assert header.imported_from["skipped"] == [
        f"{verl_run / 'train.log'}: line 4 (step 1): actor/grad_norm: 'tensor(0.5000)' is not a number; left out"]
    expected = [s.metrics for s in runlog.iter_steps(from_file)]
    got = [s.metrics for s in runlog.iter_steps(out)]
    expected[0].pop("grad_norm")
    assert got == expected


def test_verl_console_values_as_pformat_writes_them():
    from unipo_build.trainers.verl.importer import _console_value

    # numpy 2's repr of its scalars, Python's floats and booleans, and NaN (undefined: null)
    assert _console_value("np.float64(0.25)") == 0.25 and _console_value("np.int64(3)") == 3.0
    assert _console_value("1e-06") == 1e-06 and _console_value("True") == 1.0 and _console_value("nan") is None
    with pytest.raises(ValueError):
        _console_value("tensor(0.5000)")


def test_verl_config_no_spec_has(verl_run, tmp_path):
    """GRPO's advantage with a token mean and no KL: every slot has a kind, no spec has them all; the run keeps
    verl's components under its own name and the notes name the nearest spec."""
    cfg_path = verl_run / ".hydra" / "config.yaml"
    cfg = yaml.safe_load(cfg_path.read_text())
    cfg["actor_rollout_ref"]["actor"].update(loss_agg_mode="token-mean", use_kl_loss=False)
    cfg_path.write_text(yaml.safe_dump(cfg))
    out = tmp_path / "runs" / "own"
    assert unipo("import", "verl", verl_run, "--out", out).returncode == 0
    header = runlog.read_header(out)
    assert header.algorithm == "verl_grpo" and header.algorithm_config.kind("aggregation") == "token_mean"
    assert header.algorithm_config.kind("kl") == "none" and header.algorithm_config.kind("advantage") == "group_zscore"
    # verl's vanilla loss is dual-clip PPO: dual_clip has two slots of another kind (kl, aggregation) and no other
    # parameter, grpo three (clip too)
    assert re.search(r"no spec has all of verl's kinds, nearest spec: dual_clip \(2 of \d+ slots differ: another kind "
                     r"in kl and aggregation\)", header.notes), header.notes
    assert unipo("validate", out).stdout.strip() == f"{out}: valid"


def test_prime_rl_exported_step_without_metrics_rows(prime_run, tmp_path):
    """Steps 0 and 2 exported, metrics rows for 0, 1 and 3 only: step 2 is imported in its place, empty metrics."""
    from trainer_formats import prime_export, prime_sequence

    prime_export(prime_run, 2, [prime_sequence(2, 0, 0, 0, [5, 6], [7], [-0.5], [-0.5], 0.5),
                                prime_sequence(2, 0, 1, 1, [5, 6], [8], [-0.5], [-0.5], -0.5)])
    with (prime_run / "metrics.jsonl").open("a") as fh:
        fh.write(json.dumps({"step": 3, "time": 1004.0, "optim/lr": 3e-6}) + "\n")
    out = tmp_path / "runs" / "gap"
    result = unipo("import", "prime-rl", prime_run, "--out", out, "--algorithm", "dr_grpo")
    assert result.returncode == 0, result.stderr
    steps = list(runlog.iter_steps(out))
    assert [(s.source_step, s.has_tokens) for s in steps] == [(0, True), (1, False), (2, True), (3, False)]
    assert "exported steps without a metrics row (metrics empty)" in runlog.read_header(out).notes


# --- verl's policy losses -> the clip slot's kinds (tests/fixtures/verl/configs) ---------------------------------

VERL_CONFIGS = FIXTURES / "verl" / "configs"
#: The actor's loss settings. The run's own values are removed before a config fixture is laid over it, so every
#: one the fixture does not set is verl's default (verl/trainer/config/actor/actor.yaml).
ACTOR_LOSS_KEYS = ("clip_ratio", "clip_ratio_low", "clip_ratio_high", "clip_ratio_c", "loss_agg_mode", "policy_loss",
                   "tau_pos", "tau_neg")


def with_actor_config(run: Path, name: str) -> Path:
    cfg_path = run / ".hydra" / "config.yaml"
    cfg = yaml.safe_load(cfg_path.read_text())
    actor = cfg["actor_rollout_ref"]["actor"]
    for key in ACTOR_LOSS_KEYS:
        actor.pop(key, None)
    actor.update(yaml.safe_load((VERL_CONFIGS / f"{name}.yaml").read_text())["actor_rollout_ref"]["actor"])
    cfg_path.write_text(yaml.safe_dump(cfg))
    return cfg_path


def test_verl_cispo_keeps_its_default_lower_bound():
    """verl's CISPO (core_algos.compute_policy_loss_cispo at b178a3c) clamps the weight to [1 - clip_ratio_low,
    1 + clip_ratio_high], each falling back to clip_ratio, 0.2 in actor.yaml: a config that sets none of them imports
    as the cispo kind with a lower bound, eps_low 0.2 (the paper and TRL have none), and the components table's verl
    cell and the CISPO chapter say so with the same numbers."""
    from unipo_build.core.registry import REGISTRY, settings_of
    from unipo_build.trainers.common import Notes
    from unipo_build.trainers.verl.config import policy_loss

    ratio, clip, _ = policy_loss({"policy_loss": {"loss_mode": "cispo"}}, [], Notes())
    assert ratio["kind"] == "token" and clip == {"kind": "cispo", "params": {"eps_low": 0.2, "eps_high": 0.2}}
    low, high = 1 - clip["params"]["eps_low"], 1 + clip["params"]["eps_high"]
    (verl,) = settings_of(REGISTRY["clip"]["cispo"], "verl")
    assert f"[{low:g}, {high:g}] by default: a lower bound the paper does not set" in verl.note
    # the kind's own default is the paper's (no lower bound): the description names verl's default beside it
    field = REGISTRY["clip"]["cispo"].params.model_fields["eps_low"]
    assert field.default is None and f"verl clip_ratio_low, {clip['params']['eps_low']:g} by default" in field.description
    chapter = (ROOT / "docs" / "course" / "algorithms" / "cispo.md").read_text(encoding="utf-8")
    reference = (ROOT / "docs" / "reference" / "algorithms" / "cispo.md").read_text(encoding="utf-8")
    for page in (chapter, reference):
        assert 'trainer_setting("clip", "cispo", "verl")' in page


@pytest.mark.parametrize("name, ratio, clip, aggregation", [
    # verl's defaults: the dual clip is always on in the vanilla loss (clip_ratio_c 3.0), token-mean
    ("vanilla_defaults", "token", ("dual_clip", {"eps_low": 0.2, "eps_high": 0.2, "c": 3.0}), ("token_mean", {})),
    ("vanilla_clip_higher", "token", ("dual_clip", {"eps_low": 0.2, "eps_high": 0.28, "c": 10.0}),
     ("constant_normalizer", {"normalizer": 16})),  # data.max_response_length 16
    ("cispo", "token", ("cispo", {"eps_low": 0.2, "eps_high": 4.0}), ("token_mean", {})),
    # sapo and gspo aggregate seq-mean-token-mean whatever the fixture's token-mean says
    ("sapo", "token", ("sapo", {"tau_pos": 1.0, "tau_neg": 1.2}), ("seq_mean_token_mean", {})),
    ("gspo", "sequence", ("asymmetric", {"eps_low": 0.0003, "eps_high": 0.0004}), ("seq_mean_token_mean", {})),
    # GMPO: clip_ratio_low / high 0.4 bound the log-ratio; torch.mean over the responses whatever loss_agg_mode says
    ("geo_mean", "token", ("geo_mean", {"eps_low": 0.4, "eps_high": 0.4}), ("seq_mean_token_mean", {})),
])
def test_verl_policy_losses_map_to_kinds(verl_run, tmp_path, name, ratio, clip, aggregation):
    with_actor_config(verl_run, name)
    out = tmp_path / "runs" / name
    result = unipo("import", "verl", verl_run, "--out", out)
    assert result.returncode == 0, result.stderr
    header = runlog.read_header(out)
    cfg = header.algorithm_config
    assert "gaps" not in header.imported_from
    assert cfg.kind("ratio") == ratio
    assert (cfg.kind("clip"), dict(cfg.components["clip"].params)) == clip
    assert (cfg.kind("aggregation"), dict(cfg.components["aggregation"].params)) == aggregation
    if name in ("sapo", "gspo", "geo_mean"):
        assert (f"verl's {name} loss aggregates with seq-mean-token-mean whatever loss_agg_mode says (token-mean)"
                in header.notes)
    if name == "cispo":
        assert "the objective from actor/pg_loss is verl's value" in header.notes
    if name.startswith("vanilla"):
        assert f"the bound clip_ratio_c = {clip[1]['c']:g}" in header.notes
    assert unipo("validate", out).stdout.strip() == f"{out}: valid"


def test_verl_default_grpo_is_the_dual_clip_spec(verl_run, tmp_path):
    """The fixture run is verl's GRPO recipe (vanilla loss, clip 0.2, clip_ratio_c 3.0, k3 0.04 in the loss,
    seq-mean-token-mean): with the dual clip mapped, every slot is data/algorithms/dual_clip.yaml's."""
    out = tmp_path / "runs" / "verl"
    assert unipo("import", "verl", verl_run, "--out", out).returncode == 0
    header = runlog.read_header(out)
    assert header.algorithm == "dual_clip" and "gaps" not in header.imported_from
    guide = (ROOT / "docs" / "guides" / "own-logs.md").read_text()
    assert "imports as the `dual_clip` spec" in " ".join(guide.split())  # the guide says so


def test_verl_surrogates_hand_worked(verl_run, tmp_path):
    """The kinds the import maps to, with the parameters it read, give the numbers verl's own losses give
    (verl/trainer/ppo/core_algos.py, worked by hand), token by token:

    vanilla, clip_ratio_low 0.2, high 0.28, c 10 (loss = where(A < 0, min(-A c, max(-A r, -A clip(r))),
    max(-A r, -A clip(r))); objective = -loss):
      r 12, A -1: max(12, 1.28) = 12, min(10, 12) = 10: -10 (the dual clip's floor c A)
      r 2,  A -1: max(2, 1.28) = 2, min(10, 2) = 2: -2 (PPO's unclipped branch, under c)
      r 0.5, A -1: max(0.5, 0.8) = 0.8: -0.8 (PPO's low clip)
      r 4,  A +1: max(-4, -1.28) = -1.28: 1.28 (PPO's high clip)
    cispo, clip_ratio_low 0.2, high 4.0: w = clamp(r, 0.8, 5.0); the kind's value w A (verl's loss is
      -w A log pi, the same gradient w A grad log pi): r 6, A 1: 5; r 0.5, A -1: -0.8; r 1.5, A 2: 3
    sapo, tau_pos 1.0, tau_neg 1.2: gate (4 / tau) sigmoid(tau (r - 1)) A:
      r 1.5, A 1: 4 sigmoid(0.5) = 4 x 0.6224593 = 2.4898373
      r 1.5, A -1: -(4 / 1.2) sigmoid(0.6) = -3.3333333 x 0.6456563 = -2.1521877
    """
    import numpy as np

    from unipo_build.core.registry import REGISTRY

    cases = {
        "vanilla_clip_higher": ([12.0, 2.0, 0.5, 4.0], [-1.0, -1.0, -1.0, 1.0], [-10.0, -2.0, -0.8, 1.28]),
        "cispo": ([6.0, 0.5, 1.5], [1.0, -1.0, 2.0], [5.0, -0.8, 3.0]),
        "sapo": ([1.5, 1.5], [1.0, -1.0], [2.4898373, -2.1521877]),
    }
    for name, (ratios, advantages, expected) in cases.items():
        run = tmp_path / name
        shutil.copytree(verl_run, run)
        with_actor_config(run, name)
        out = tmp_path / "runs" / name
        assert unipo("import", "verl", run, "--out", out).returncode == 0
        clip = runlog.read_header(out).algorithm_config.components["clip"]
        value, _ = REGISTRY["clip"][clip.kind].apply(np.array(ratios), np.array(advantages), dict(clip.params))
        np.testing.assert_allclose(value, expected, rtol=0, atol=1e-7)


@pytest.mark.parametrize("name, field, says", [
    ("dual_clip_at_one", "actor_rollout_ref.actor.clip_ratio_c", "clip_ratio_c 1: verl's dual clip needs a bound "
                                                                 "above 1"),
])
def test_verl_policy_losses_without_a_kind_are_refused(verl_run, tmp_path, name, field, says):
    cfg_path = with_actor_config(verl_run, name)
    out = tmp_path / "runs" / name
    line = one_line_error(unipo("import", "verl", verl_run, "--out", out))
    assert line.startswith(f"{cfg_path}: {field}: ") and says in line, line
    assert not out.exists()


def test_verl_geo_mean_surrogate_hand_worked(verl_run, tmp_path):
    """verl's compute_policy_loss_geo_mean with clip_ratio_low = clip_ratio_high = 0.4, one response of two tokens,
    A = 1, ratios 2 and 0.5 (log 0.6931472, -0.6931472): A > 0 clamps each log-ratio's rise at 0.4, so
    c = (min(0.6931472, 0.4), -0.6931472) = (0.4, -0.6931472), the term A exp(mean c) = exp(-0.1465736) = 0.8636637
    on each token of the response (pg_loss = -0.8636622)."""
    import numpy as np

    from unipo_build.core.registry import REGISTRY

    with_actor_config(verl_run, "geo_mean")
    out = tmp_path / "runs" / "geo_mean"
    assert unipo("import", "verl", verl_run, "--out", out).returncode == 0
    clip = runlog.read_header(out).algorithm_config.components["clip"]
    value, _ = REGISTRY["clip"][clip.kind].apply(np.array([[2.0, 0.5]]), np.array([[1.0, 1.0]]), dict(clip.params),
                                                 np.ones((1, 2)))
    np.testing.assert_allclose(value, [[0.8636622, 0.8636622]], rtol=0, atol=1e-7)


def with_rejection(run: Path, rs, threshold, exact: bool = True) -> Path:
    """The fixture run with verl's rejection sampling on; ``exact``: seq-mean-token-sum-norm and no KL loss, the
    run in which verl's rejected token (out of the response_mask) is the masked_is kind's weight 0."""
    cfg_path = run / ".hydra" / "config.yaml"
    cfg = yaml.safe_load(cfg_path.read_text())
    cfg["algorithm"]["rollout_correction"] = {"rollout_rs": rs, "rollout_rs_threshold": threshold}
    if exact:
        cfg["actor_rollout_ref"]["actor"].update(loss_agg_mode="seq-mean-token-sum-norm", use_kl_loss=False)
    cfg_path.write_text(yaml.safe_dump(cfg))
    return cfg_path


@pytest.mark.parametrize("rs, threshold, params", [
    # verl tests k1 = -log(pi_old / pi_rollout) against [log L, log U] (U alone: L = 1/U): rho kept in [1/U, 1/L]
    ("token_k1", 2.0, {"level": "token", "sequence": "product", "lower": 0.5, "cap": 2.0}),
    ("seq_sum_k1", "0.5_4.0", {"level": "sequence", "sequence": "product", "lower": 0.25, "cap": 2.0}),
    ("seq_mean_k1", "0.8_1.25", {"level": "sequence", "sequence": "geometric_mean", "lower": 0.8, "cap": 1.25}),
])
def test_verl_rejection_sampling_maps_to_masked_is(verl_run, tmp_path, rs, threshold, params):
    with_rejection(verl_run, rs, threshold)
    out = tmp_path / "runs" / rs
    result = unipo("import", "verl", verl_run, "--out", out)
    assert result.returncode == 0, result.stderr
    header = runlog.read_header(out)
    correction = header.algorithm_config.components["correction"]
    assert correction.kind == "masked_is" and "gaps" not in header.imported_from
    assert dict(correction.params) == pytest.approx({**params, "kept": "one"})
    assert header.model_extra["missing"][-1].startswith(
        f"the sampler's log-probs: verl's rollout correction was on (algorithm.rollout_correction.rollout_rs = {rs})")
    assert unipo("validate", out).stdout.strip() == f"{out}: valid"


@pytest.mark.parametrize("rs, threshold, exact, says", [
    ("token_k3", 0.1, True, "token_k3 (a bound on a KL estimate of the mismatch, not a band of the ratio)"),
    ("token_k1,seq_mean_k3", "2.0,0.1", True, "token_k1,seq_mean_k3 (several options, each of which must pass)"),
    # the fixture's seq-mean-token-mean and k3 in the loss: verl's rejected token leaves both, the kind's stays
    ("token_k1", 2.0, False, "token_k1 (a rejected token also leaves loss_agg_mode's normaliser and the KL loss)"),
])
def test_verl_rejection_sampling_without_an_exact_kind_is_one_gap(verl_run, tmp_path, rs, threshold, exact, says):
    cfg_path = with_rejection(verl_run, rs, threshold, exact)
    line = one_line_error(unipo("import", "verl", verl_run, "--out", tmp_path / "o"))
    assert line.startswith(f"{cfg_path}: algorithm.rollout_correction.rollout_rs: ") and says in line, line
    assert "more setting" not in line and "--algorithm SPEC" in line
