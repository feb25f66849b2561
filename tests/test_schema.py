"""The run-log models (unipo_build.core.schema) on their own: what they accept and reject."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from helpers_runlog import make_detail, make_header, make_tokens
from unipo_build.core import runlog
from unipo_build.core import schema as M


def test_json_schema_covers_every_run_file():
    schemas = runlog.json_schema()
    assert list(schemas) == ["header.json", "steps.jsonl (one object per line)", "evals.jsonl (one object per line)",
                             "tokens/step_NNNNNN.json"]
    json.dumps(schemas)  # serialisable as it is
    header = schemas["header.json"]
    assert {"run_id", "algorithm", "task", "reward", "model", "created_at"} <= set(header["required"])
    steps = schemas["steps.jsonl (one object per line)"]
    assert set(steps["required"]) == {"step", "rollout", "first_in_rollout"}
    tokens = schemas["tokens/step_NNNNNN.json"]["$defs"]["TokenArrays"]
    assert "return" in tokens["properties"] and "return_" not in tokens["properties"]
    assert tokens["properties"]["clip"]["items"]["enum"] == [-1, 0, 1]
    assert "additionalProperties" not in tokens or tokens["additionalProperties"] is not False


def test_metric_catalogue():
    assert {"reward/mean", "accuracy/train", "objective", "kl/mean", "clip/frac_low", "clip/frac_high",
            "length/mean", "groups/zero_variance_frac", "loss/value"} <= set(M.METRICS)
    for name, info in M.METRICS.items():
        assert info.label and info.description and info.group, name
        assert info.higher_is in ("better", "worse", "neutral") and info.scope in ("rollout", "update")
    assert M.METRICS["reward/mean"].scope == "rollout" and M.METRICS["reward/mean"].higher_is == "better"
    assert M.metric_info("objective") is M.METRICS["objective"]
    other = M.metric_info("my/custom_metric")
    assert other.label == "my/custom_metric" and other.group == "other" and "not in the metric catalogue" in other.description


def test_token_arrays_lengths_must_agree():
    tokens = make_tokens(4).model_dump(by_alias=True)
    tokens["kl"] = tokens["kl"][:3]
    with pytest.raises(ValidationError, match=r"tokens.kl: has 3 elements, expected 4 \(the length of tokens.ids\)"):
        M.TokenArrays.model_validate(tokens)
    tokens = make_tokens(4).model_dump(by_alias=True)
    tokens["return"] = [0.0] * 5
    with pytest.raises(ValidationError, match="tokens.return: has 5 elements, expected 4"):
        M.TokenArrays.model_validate(tokens)
    # optional arrays may be absent (no critic, no reference)
    tokens = make_tokens(4, with_ref=False).model_dump(by_alias=True)
    assert M.TokenArrays.model_validate(tokens).ref_logp is None


@pytest.mark.parametrize("field, value", [("clip", 2), ("mask", -1), ("logp", float("nan")),
                                          ("advantage", float("inf"))])
def test_token_values_are_checked(field, value):
    tokens = make_tokens(3).model_dump(by_alias=True)
    tokens[field][1] = value
    with pytest.raises(ValidationError) as info:
        M.TokenArrays.model_validate(tokens)
    assert info.value.errors()[0]["loc"][:2] == (field, 1)


def test_response_length_must_match_tokens():
    detail = make_detail(0).model_dump(by_alias=True)
    detail["prompts"][0]["responses"][0]["length"] = 7
    with pytest.raises(ValidationError, match="length: is 7 but tokens.ids has 3 elements"):
        M.StepDetail.model_validate(detail)


def test_group_appears_once():
    detail = make_detail(0).model_dump(by_alias=True)
    detail["prompts"][1]["index"] = 0
    with pytest.raises(ValidationError, match="group 0 appears twice"):
        M.StepDetail.model_validate(detail)
    # a filtered group may share its index with a kept one (they come from different lists)
    detail["prompts"][1]["filtered"] = True
    M.StepDetail.model_validate(detail)


def test_non_finite_numbers_are_rejected_everywhere():
    with pytest.raises(ValidationError):
        M.StepRecord(step=0, rollout=0, first_in_rollout=True, metrics={"x": float("inf")})
    with pytest.raises(ValidationError):
        M.EvalRecord(step=0, phase="start", n=1, temperature=float("nan"))
    with pytest.raises(ValidationError):
        M.Response(index=0, text="", reward=float("nan"), length=0)
    # null is how a metric says "undefined at this step"
    assert M.StepRecord(step=0, rollout=0, first_in_rollout=True, metrics={"x": None}).metrics == {"x": None}


def test_eval_ranges_and_phase():
    with pytest.raises(ValidationError):
        M.EvalRecord(step=0, phase="start", n=10, accuracy_greedy=1.2)
    with pytest.raises(ValidationError):
        M.EvalRecord(step=0, phase="midway", n=10)
    with pytest.raises(ValidationError):
        M.EvalRecord(step=-1, phase="start", n=10)
    with pytest.raises(ValidationError):
        M.EvalRecord(step=0, phase="start", n=0)


def test_header_checks():
    header = make_header().model_dump(mode="json", by_alias=True)
    assert M.RunHeader.model_validate(header).algorithm_config.id == "grpo"
    for field, value in [("run_id", "has space"), ("run_id", "-starts-with-dash"), ("schema_version", "unipo-run/3")]:
        bad = dict(header, **{field: value})
        with pytest.raises(ValidationError) as info:
            M.RunHeader.model_validate(bad)
        assert info.value.errors()[0]["loc"] == (field,)
    bad = json.loads(json.dumps(header))
    bad["algorithm_config"]["components"]["kl"]["kind"] = "in_reward_somehow"
    with pytest.raises(ValidationError, match="components.kl.kind: unknown component"):
        M.RunHeader.model_validate(bad)


def test_unknown_fields_are_kept_by_the_models():
    step = M.StepRecord.model_validate({"step": 1, "rollout": 0, "first_in_rollout": False, "vendor": {"a": 1}})
    assert step.vendor == {"a": 1}
    assert step.model_dump()["vendor"] == {"a": 1}


def test_return_alias_both_ways():
    tokens = make_tokens(2).model_dump(by_alias=True)
    tokens["return"] = [1.0, 2.0]
    parsed = M.TokenArrays.model_validate(tokens)
    assert parsed.return_ == [1.0, 2.0]
    by_name = {k: v for k, v in tokens.items() if k != "return"}
    built = M.TokenArrays(**by_name, return_=[3.0, 4.0])
    assert built.return_ == [3.0, 4.0]
    assert built.model_dump(by_alias=True)["return"] == [3.0, 4.0]
