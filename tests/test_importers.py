"""`unipo import`: UNIPO's published log format and OpenRLHF's TensorBoard scalars -> canonical runs.

The inputs are small hand-made files in tests/fixtures/ (UNIPO JSON / JSONL; a TensorBoard event
file written by tensorboard 2.21's EventFileWriter) and event files generated here. Every
expected number is worked out by hand in the comment next to it. The importer runs as a user
runs it: the console script, in a subprocess.
"""

from __future__ import annotations

import json
import math
import re
import shutil
from pathlib import Path

import pytest

from cli_helpers import unipo
from helpers_runlog import checksums
from unipo_build.core import runlog
from unipo_build.core.reader import validate_run
from unipo_build.cli.main import validate_path, _known_algorithms
from unipo_build.trainers import import_log
from unipo_build.trainers.common import OutputError
from unipo_build.trainers.tfevents import encode_event, encode_record, read_scalars
from unipo_build.core.recompute import check_step

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures"

A = 0.7071068  # the advantages the fixtures log: +-1/sqrt(2), GRPO's for rewards (1, 0)


def tokens_of(run: Path, step: int):
    return runlog.read_step_detail(run, step)


@pytest.fixture
def fixture_copy(tmp_path):
    """A copy of tests/fixtures in tmp (so checksums of the input can be compared after)."""
    dest = tmp_path / "in"
    shutil.copytree(FIXTURES, dest)
    return dest


# ---------------------------------------------------------------------------
# UNIPO's format
# ---------------------------------------------------------------------------

def test_unipo_json_maps_onto_the_schema(fixture_copy, tmp_path):
    src = fixture_copy / "unipo" / "grpo_small.json"
    before = checksums(fixture_copy)
    out = tmp_path / "runs" / "grpo-import"
    result = unipo("import", "unipo", src, "--out", out)
    assert result.returncode == 0, result.stderr
    assert checksums(fixture_copy) == before  # the input is never modified
    check = unipo("validate", out)
    assert check.returncode == 0 and check.stdout.strip() == f"{out}: valid", check.stderr

    header = runlog.read_header(out)
    assert header.run_id == "grpo_small" and header.engine == "unipo-import"
    assert header.algorithm == "grpo" and header.algorithm_config.id == "grpo"
    assert header.algorithm_config.components["clip"].params == {"eps": 0.2}
    assert header.algorithm_config.components["kl"].params == {"estimator": "k3", "beta": 0.04}
    assert header.hyperparameters["generate_max_len"] == 8  # hparams -> hyperparameters, as logged
    assert (header.task.name, header.task.source, header.reward.description) == ("math reasoning", "toy sums",
                                                                               "correctness")
    assert header.model.name == "tiny-llama" and header.reference_model.name == "tiny-llama"
    extra = header.model_extra
    assert extra["run_notes"] == "kept as an unknown header field" and extra["totalSteps"] == 3
    assert extra["imported_from"]["format"] == "unipo" and len(extra["imported_from"]["sha256"]) == 64
    assert header.steps_per_rollout is None  # rollouts of 2 and 1 updates
    assert "token objective derived from the spec's math" in header.notes

    steps = list(runlog.iter_steps(out))
    assert [(s.step, s.rollout, s.first_in_rollout, s.has_tokens) for s in steps] == [
        (0, 0, True, True), (1, 0, False, False), (2, 1, True, True)]
    m0 = steps[0].metrics
    assert m0["objective"] == 0.25 and m0["reward/mean"] == 0.5 and m0["length/mean"] == 2.5
    assert m0["sampling/pass_rate"] == 0.5  # 50.0 percent -> a fraction
    assert m0["policy_clip_ratio"] == 0.0 and m0["custom_metric"] == 7  # no side split / unknown: own names
    assert steps[0].model_extra["batch"] == {"promptsInBatch": 1, "responsesPerPrompt": 2}
    assert steps[1].metrics == {"loss/policy": -0.125, "reward/mean": 0.5, "objective": 0.125}  # J = -loss
    assert steps[2].metrics["grad_norm"] is None

    first = tokens_of(out, 0)
    r0 = first.prompts[0].responses[0]
    assert first.prompts[0].answer == "4" and r0.model_extra["id"] == "step0_p0_sample0"
    assert (r0.correct, first.prompts[0].responses[1].correct, first.groups[0].n_correct) == (True, False, 1)
    assert r0.tokens.objective == [0.69, A]  # token_objective kept as logged
    assert r0.tokens.model_extra["rewards"] == [0.0, 1.0]  # unknown token arrays kept
    assert r0.tokens.ratio == [1.0, 1.0] and r0.tokens.clip == [0, 0]
    # k3 with log r = ref - logp = -0.25: expm1(-0.25) + 0.25 = 0.0288008
    assert r0.tokens.kl == pytest.approx([0.0288008, 0.0], abs=1e-7)
    # GRPO weights 1 / (N |o_i|), N = 2 logged responses: 1/4 for the 2 tokens, 1/6 for the 3
    assert r0.tokens.weight == [0.25, 0.25]
    assert first.prompts[0].responses[1].tokens.weight == pytest.approx([1 / 6] * 3, rel=1e-6)


def test_unipo_derivations_hand_worked(fixture_copy, tmp_path):
    """Step 2 of grpo_small.json logs no token_objective and no step objective: all derived.

    Response 0: logp -0.1, old -0.4 -> ratio exp(0.3) = 1.3498588 > 1.2 with A = +0.7071068:
    clipped high, objective 1.2 A = 0.8485282; KL k3 of equal logp/ref = 0.
    Response 1: logp -1.0, old -0.5 -> ratio exp(-0.5) = 0.6065307 < 0.8 with A < 0: clipped
    low, surrogate 0.8 x -0.7071068 = -0.5656854; KL k3 with log r = -1.2 + 1.0 = -0.2:
    expm1(-0.2) + 0.2 = 0.0187308, objective -0.5656854 - 0.04 x 0.0187308 = -0.5664347.
    Weights 1/(2 x 1) = 0.5; contributions 0.4242641 and -0.2832173; J = 0.1410467.
    """
    out = tmp_path / "run"
    import_log("unipo", fixture_copy / "unipo" / "grpo_small.json", out)
    detail = tokens_of(out, 2)
    r0, r1 = detail.prompts[0].responses
    assert r0.tokens.ratio == pytest.approx([1.3498588], abs=1e-6) and r0.tokens.clip == [1]
    assert r0.tokens.objective == pytest.approx([0.8485282], abs=1e-6)
    assert r1.tokens.ratio == pytest.approx([0.6065307], abs=1e-6) and r1.tokens.clip == [-1]
    assert r1.tokens.kl == pytest.approx([0.0187308], abs=1e-6)
    assert r1.tokens.objective == pytest.approx([-0.5664347], abs=1e-6)
    assert (r0.tokens.weight, r1.tokens.weight) == ([0.5], [0.5])
    assert (r0.contribution, r1.contribution) == pytest.approx((0.4242641, -0.2832173), abs=1e-6)
    assert detail.objective == pytest.approx(0.1410467, abs=1e-6)
    assert list(runlog.iter_steps(out))[2].metrics["objective"] == detail.objective
    # The site's own recomputation (the Algorithm Explainer's) agrees with every derived token.
    assert check_step(runlog.read_header(out).algorithm_config, detail) == []


def test_unipo_jsonl_streams_and_fills_in_old_log_probs(fixture_copy, tmp_path):
    """dapo_small.jsonl: DAPO logs no old_log_probs; every step is the first after its rollout."""
    src = fixture_copy / "unipo" / "dapo_small.jsonl"
    before = checksums(fixture_copy)
    out = tmp_path / "dapo"
    result = unipo("import", "unipo", src, "--out", out, "--run-id", "dapo-import")
    assert result.returncode == 0, result.stderr
    assert checksums(fixture_copy) == before
    assert unipo("validate", out).returncode == 0
    header = runlog.read_header(out)
    assert header.run_id == "dapo-import" and header.algorithm == "dapo"  # 'DAPO' -> our spec id
    assert header.algorithm_config.components["clip"].params == {"eps_low": 0.2, "eps_high": 0.28}
    assert header.algorithm_config.components["shaping"].params["max_length"] == 8  # from generate_max_len
    assert header.steps_per_rollout == 1
    steps = list(runlog.iter_steps(out))
    assert steps[0].metrics["sampling/pass_rate"] == 0.625 and steps[0].metrics["objective"] == 0.1
    detail = tokens_of(out, 0)
    a, b = detail.prompts[0].responses
    assert a.tokens.old_logp == a.tokens.logp == [-0.3] and a.tokens.ratio == [1.0]
    # on-policy (ratio 1), no KL: objective = A; DAPO's token mean over 3 tokens: 1/3 each
    assert a.tokens.objective == [A] and b.tokens.objective == [-A, -A]
    assert a.tokens.weight == pytest.approx([1 / 3], rel=1e-6)
    assert detail.objective == pytest.approx(0.1)  # -policy_loss
    later = tokens_of(out, 1)
    c, d = later.prompts[0].responses
    assert c.reward == 0.0 and "null reward shown as 0" in header.notes
    assert c.tokens.logp == pytest.approx([math.log(0.5)])  # prob -> log prob
    assert d.advantage == 0.0  # every token's advantage equal: the response's
    assert check_step(header.algorithm_config, later) == []


def test_unknown_algorithm_keeps_its_name(fixture_copy, tmp_path):
    out = tmp_path / "custom"
    header = import_log("unipo", fixture_copy / "unipo" / "custom_algo.jsonl", out)
    assert header.algorithm == "my-new-po" and header.algorithm_config is None
    assert validate_run(out) == []
    detail = tokens_of(out, 1)
    x, y = detail.prompts[0].responses
    # ratio exp(-0.25 + 0.5) = exp(0.25) = 1.2840254; no clip bounds: side 0; objective ratio x A
    assert x.tokens.ratio == pytest.approx([1.2840254, 1.0], abs=1e-6) and x.tokens.clip == [0, 0]
    assert x.tokens.objective == pytest.approx([0.6420127, 0.5], abs=1e-6)
    # weights: a token mean over the 2 logged tokens that have arrays
    assert x.tokens.weight == [0.5, 0.5]
    # y has no old_log_probs off the first update of its rollout: no token arrays, source kept
    assert y.tokens is None and y.model_extra["source_tokens"]["log_probs"] == [-1.5]
    assert detail.groups[0].detailed and "responses without token arrays" in header.notes


def test_unknown_algorithm_passes_unipo_validate(fixture_copy, tmp_path):
    out = tmp_path / "custom"
    import_log("unipo", fixture_copy / "unipo" / "custom_algo.jsonl", out)
    assert validate_path(out, _known_algorithms()) == []


def test_log_hparams_set_the_resolved_components(tmp_path):
    """A GRPO log trained with clip-higher and no KL: the run's config says so, noted."""
    src = tmp_path / "grpo-variant.json"
    raw = json.loads((FIXTURES / "unipo" / "grpo_small.json").read_text())
    raw["header"]["algorithm"] = "GRPO"
    raw["header"]["hparams"].update(clip_eps=[0.2, 0.28], init_kl_coef=0.0)
    src.write_text(json.dumps(raw))
    header = import_log("unipo", src, tmp_path / "run")
    comps = header.algorithm_config.components
    assert (comps["clip"].kind, comps["clip"].params) == ("asymmetric", {"eps_low": 0.2, "eps_high": 0.28})
    assert comps["kl"].kind == "none"
    assert "clip set from hparams.clip_eps" in header.notes and "KL term removed" in header.notes


def test_algorithm_needing_the_budget_says_so(tmp_path):
    src = tmp_path / "drgrpo.jsonl"
    lines = (FIXTURES / "unipo" / "dapo_small.jsonl").read_text().splitlines()
    head = json.loads(lines[0])
    head["algorithm"] = "Dr. GRPO"
    del head["hparams"]["generate_max_len"]
    src.write_text("\n".join([json.dumps(head)] + lines[1:]) + "\n")
    result = unipo("import", "unipo", src, "--out", tmp_path / "a")
    assert result.returncode == 1
    assert f"{src} (line 1, header): hparams.generate_max_len: dr_grpo needs the generation budget" in result.stderr
    assert "--max-new-tokens" in result.stderr and not (tmp_path / "a").exists()
    header = import_log("unipo", src, tmp_path / "b", max_new_tokens=16)
    assert header.algorithm == "dr_grpo" and header.algorithm_config.param("aggregation", "normalizer") == 16
    # Dr. GRPO's weights: 1 / (N L) = 1 / (2 x 16) for every token
    assert tokens_of(tmp_path / "b", 0).prompts[0].responses[1].tokens.weight == [1 / 32, 1 / 32]


# --- bad input ----------------------------------------------------------------

def _jsonl(path: Path, header: dict, entries: list, tail: str = "") -> Path:
    path.write_text("\n".join(json.dumps(x) for x in [header] + entries) + "\n" + tail, encoding="utf-8")
    return path


HEADER = {"type": "header", "algorithm": "grpo", "hparams": {}}


def _entry(step, **response_changes):
    tokens = {"ids": [1, 2], "strings": ["a", "b"], "log_probs": [-0.5, -0.5], "old_log_probs": [-0.5, -0.5],
              "advantages": [0.5, 0.5]}
    response = {"reward": 1.0, "advantage": 0.5, "response_text": "ab", "tokens": tokens}
    for key, value in response_changes.items():
        if key.startswith("tokens."):
            tokens[key.split(".", 1)[1]] = value
        elif value is None:
            response.pop(key)
        else:
            response[key] = value
    return {"type": "step", "step": step, "is_first_step_after_rollout_phase": True, "metrics": {"reward": 1.0},
            "prompts": [{"prompt": "p", "responses": [response, dict(response, reward=0.0)]}]}


BAD = {
    # name: (lines after the header, tail, expected fragments of the message)
    "truncated line": ([_entry(0)], '{"type": "step", "step": 1, "metr',
                       ["(line 3)", "not valid JSON", "cut off"]),
    "NaN in a token array": ([_entry(0), _entry(1, **{"tokens.log_probs": [-0.5, float("nan")]})], "",
                             ["(line 3, step 1, prompt 0, response 0)", "tokens.log_probs:",
                              "element 1 is NaN or infinity"]),
    "wrong type": ([_entry(0, reward="one")], "", ["(line 2, step 0, prompt 0, response 0)", "reward:",
                                                   "expected a number, got a string"]),
    "missing field": ([_entry(0, response_text=None) | {"prompts": [{"responses": []}]}], "",
                      ["(line 2, step 0, prompt 0)", "prompt:", "required"]),
    "metric of the wrong type": ([_entry(0) | {"metrics": {"reward": "high"}}], "",
                                 ["(line 2, step 0)", "metrics.reward:", "expected a number or null"]),
    "array of the wrong length": ([_entry(0, **{"tokens.advantages": [0.5]})], "",
                                  ["(line 2, step 0, prompt 0, response 0)", "tokens.advantages:",
                                   "has 1 elements, expected 2"]),
    "step logged twice": ([_entry(0), _entry(0)], "", ["(line 3, step 0)", "step:", "must increase"]),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_input_names_file_line_and_field(case, tmp_path):
    entries, tail, expected = BAD[case]
    src = _jsonl(tmp_path / "bad.jsonl", HEADER, entries, tail)
    before = src.read_bytes()
    out = tmp_path / "runs" / "bad"
    result = unipo("import", "unipo", src, "--out", out)
    assert result.returncode == 1 and result.stdout == ""
    message = result.stderr.strip()
    assert message.startswith(str(src)), message
    for fragment in expected:
        assert fragment in message, message
    assert "Traceback" not in result.stderr
    assert src.read_bytes() == before
    assert not out.exists() and list((tmp_path / "runs").iterdir()) == []  # nothing left behind


def test_bad_json_entry_is_named(tmp_path):
    raw = json.loads((FIXTURES / "unipo" / "grpo_small.json").read_text())
    raw["entries"][2]["prompts"][0]["responses"][1]["tokens"]["ids"] = [5, "x"]
    src = tmp_path / "bad.json"
    src.write_text(json.dumps(raw))
    with pytest.raises(runlog.LogError) as info:
        import_log("unipo", src, tmp_path / "out")
    assert str(info.value) == (f"{src} (step 2, entry 2, prompt 0, response 1): tokens.ids: element 1 is a string "
                               "'x', expected a non-negative integer")


def test_missing_header_and_not_json(tmp_path):
    src = tmp_path / "h.jsonl"
    _jsonl(src, {"type": "header", "hparams": {}}, [_entry(0)])
    result = unipo("import", "unipo", src, "--out", tmp_path / "o")
    assert result.returncode == 1 and "(line 1, header): algorithm: missing" in result.stderr
    (tmp_path / "n.json").write_text("{not json")
    result = unipo("import", "unipo", tmp_path / "n.json", "--out", tmp_path / "o")
    assert result.returncode == 1 and "n.json (line 1): not valid JSON" in result.stderr
    lines = (FIXTURES / "unipo" / "dapo_small.jsonl").read_bytes().split(b"\n")
    (tmp_path / "latin.jsonl").write_bytes(b"\n".join(lines[:2] + [b'{"type": "step", "step": 1, "x": "\xe9"}']))
    result = unipo("import", "unipo", tmp_path / "latin.jsonl", "--out", tmp_path / "o")
    assert result.returncode == 1 and "latin.jsonl (line 3): not UTF-8 text" in result.stderr
    assert not (tmp_path / "o").exists()


def test_documented_error_message_is_what_a_user_gets(tmp_path):
    """The example in docs/guides/own-logs.md, reproduced: line 12 holds step 10."""
    entries = []
    for step in range(11):
        entry = _entry(step)
        prompt = entry["prompts"][0]
        group = {"prompt": "q", "responses": [dict(prompt["responses"][0], tokens=dict(prompt["responses"][0]["tokens"]))
                                              for _ in range(4)]}
        for r in group["responses"]:
            n = 8
            r["tokens"] = {"ids": list(range(n)), "strings": ["t"] * n, "log_probs": [-0.5] * n,
                           "old_log_probs": [-0.5] * n, "advantages": [0.5] * n}
        entry["prompts"].append(group)
        entries.append(entry)
    entries[10]["prompts"][1]["responses"][3]["tokens"]["log_probs"][7] = float("nan")
    src = _jsonl(tmp_path / "my-unipo-log.jsonl", HEADER, entries)
    result = unipo("import", "unipo", "my-unipo-log.jsonl", "--out", "runs/x", cwd=tmp_path)
    documented = re.search(r"for example `([^`]+)`", (ROOT / "docs/guides/own-logs.md").read_text().replace("\n", " "))
    expected = documented.group(1)
    assert result.stderr.strip() == expected
    assert src.exists()


def test_out_must_be_new_or_empty(fixture_copy, tmp_path):
    src = fixture_copy / "unipo" / "grpo_small.json"
    out = tmp_path / "taken"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    result = unipo("import", "unipo", src, "--out", out)
    assert result.returncode == 1 and "is not empty" in result.stderr
    assert [p.name for p in out.iterdir()] == ["keep.txt"] and (out / "keep.txt").read_text() == "mine"
    empty = tmp_path / "empty"
    empty.mkdir()
    assert unipo("import", "unipo", src, "--out", empty).returncode == 0  # an empty directory is fine
    with pytest.raises(OutputError, match="inside the input"):
        import_log("openrlhf", fixture_copy / "openrlhf", fixture_copy / "openrlhf" / "run1" / "out")
    assert not (fixture_copy / "openrlhf" / "run1" / "out").exists()


# ---------------------------------------------------------------------------
# OpenRLHF's TensorBoard scalars
# ---------------------------------------------------------------------------

def test_reader_reads_a_file_written_by_tensorboard():
    """tests/fixtures/openrlhf/run1: written by tensorboard 2.21 (EventFileWriter): simple_value
    scalars, a new-style tensor scalar (train/response_length), a text summary, eval scalars."""
    (path,) = (FIXTURES / "openrlhf" / "run1").iterdir()
    values = {(s.tag, s.step): s.value for s in read_scalars(path)}
    assert values[("train/reward", 2)] == 0.5
    assert values[("train/response_length", 3)] == 103.0  # TensorProto float_val
    assert values[("eval/eval_num_samples", 3)] == 64.0
    assert values[("train/policy_loss", 1)] == pytest.approx(-0.1)
    assert ("train/generated_samples", 3) not in values  # text, not a scalar


def test_openrlhf_import_of_a_tensorboard_written_file(fixture_copy, tmp_path):
    before = checksums(fixture_copy)
    out = tmp_path / "orl"
    result = unipo("import", "openrlhf", fixture_copy / "openrlhf", "--out", out, "--algorithm", "grpo")
    assert result.returncode == 0, result.stderr
    assert checksums(fixture_copy) == before
    assert unipo("validate", out).returncode == 0
    header = runlog.read_header(out)
    assert header.algorithm == "grpo" and header.algorithm_config.id == "grpo" and header.engine == "openrlhf"
    assert header.created_at.timestamp() == 1700000001.0  # the first event's wall time
    steps = list(runlog.iter_steps(out))
    assert [(s.step, s.rollout, s.first_in_rollout, s.model_extra["source_step"]) for s in steps] == [
        (0, 0, True, 1), (1, 1, True, 2), (2, 2, True, 3)]
    m = steps[2].metrics
    assert m["reward/mean"] == 0.75 and m["loss/policy"] == pytest.approx(-0.3) and m["objective"] == pytest.approx(0.3)
    assert m["length/mean"] == 103.0 and m["sampling/pass_rate"] == 0.5 and m["ppo_clip_ratio"] == pytest.approx(0.01)
    assert m["eval/eval_pass1"] == 0.5 and m["time/wall_s"] == 2.0
    (evaluation,) = runlog.iter_evals(out)
    assert (evaluation.step, evaluation.phase, evaluation.n, evaluation.accuracy_sampled) == (3, "end", 64, 0.5)
    assert "text summaries skipped" in header.notes


def _event_file(path: Path, events: list[bytes], tail: bytes = b"") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join(encode_record(e) for e in events) + tail)
    return path


def test_openrlhf_generated_logs(tmp_path):
    """Two event files (a restarted run), logging every 2nd global step, NaN, text, a cut-off record."""
    run = tmp_path / "tb" / "my-run"
    t0 = 1_700_000_000.0
    _event_file(run / "events.out.tfevents.1.host.1", [
        encode_event(t0, 0, file_version="brain.Event:2"),
        encode_event(t0 + 10, 2, {"train/reward": 0.25, "train/policy_loss": 0.5, "train/actor_lr": 1e-6,
                                  "train/entropy_loss": 1.5, "train/kl": 0.01, "train/return": 0.125}),
        encode_event(t0 + 20, 4, {"train/reward": 0.5, "train/policy_loss": float("nan"), "train/kl": 0.02},
                     text={"train/generated_samples": "Sample: ..."}),
    ])
    _event_file(run / "events.out.tfevents.2.host.1", [
        encode_event(t0 + 30, 4, {"train/reward": 0.75}),  # the later event of step 4 wins
        encode_event(t0 + 40, 6, {"train/reward": 1.0, "perf/tokens_per_s": 123.0}),
        encode_event(t0 + 41, 7, {"eval/eval_pass1": 0.5}),  # no training scalars at step 7
    ], tail=encode_record(encode_event(t0 + 50, 8, {"train/reward": 9.0}))[:-6])  # killed while writing
    out = tmp_path / "runs" / "mine"
    header = import_log("openrlhf", tmp_path / "tb", out)
    assert header.algorithm == "unknown" and header.algorithm_config is None
    assert validate_run(out) == []
    steps = list(runlog.iter_steps(out))
    assert [s.model_extra["source_step"] for s in steps] == [2, 4, 6]
    assert steps[0].metrics == {"reward/mean": 0.25, "loss/policy": 0.5, "lr": 1e-6, "entropy/mean": 1.5,
                                "kl/mean": 0.01, "return": 0.125, "objective": -0.5, "time/wall_s": 0.0}
    assert steps[1].metrics["reward/mean"] == 0.75 and steps[1].metrics["loss/policy"] is None
    assert steps[2].metrics["perf/tokens_per_s"] == 123.0 and steps[2].metrics["time/wall_s"] == 30.0
    assert header.model_extra["unmatched_scalars"] == {"eval/eval_pass1": [[7, 0.5]]}
    assert "is cut off" in header.notes and "non-finite value of metric 'policy_loss' kept as null" in header.notes


def test_openrlhf_corrupted_file_is_named(tmp_path):
    data = bytearray(encode_record(encode_event(1.0, 1, {"train/reward": 0.5})))
    good = bytes(data)
    data[20] ^= 0xFF
    path = _event_file(tmp_path / "tb" / "events.out.tfevents.9.x", [])
    path.write_bytes(good + bytes(data))
    result = unipo("import", "openrlhf", tmp_path / "tb", "--out", tmp_path / "o")
    assert result.returncode == 1
    assert result.stderr.strip() == f"{path}: record at byte {len(good)}: the record's checksum does not match (corrupted)"
    assert not (tmp_path / "o").exists()
    empty = tmp_path / "none"
    empty.mkdir()
    result = unipo("import", "openrlhf", empty, "--out", tmp_path / "o")
    assert result.returncode == 1 and "no TensorBoard event files" in result.stderr
