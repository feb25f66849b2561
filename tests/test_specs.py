"""Spec loading, validation messages and resolution (unipo_build.core.specs)."""

from __future__ import annotations

import copy
import shutil
import signal
from pathlib import Path

import pytest
import yaml

from unipo_build.core import specs as S
from unipo_build.core.specs import SLOTS, SpecError, load_spec, load_specs, resolve
from unipo_build.core.project import spec_dir

SPEC_DIR = spec_dir()

pytestmark = pytest.mark.specs  # every spec in data/algorithms: run after adding one

ALGORITHMS = ("reinforce", "ppo", "grpo", "dapo", "dr_grpo")


def raw(algorithm: str) -> dict:
    return yaml.safe_load((SPEC_DIR / f"{algorithm}.yaml").read_text(encoding="utf-8"))


def write(tmp_path: Path, data: dict, name: str | None = None) -> Path:
    path = tmp_path / f"{name or data['id']}.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


def error_of(path: Path) -> str:
    with pytest.raises(SpecError) as info:
        load_spec(path)
    return str(info.value)


# ---------------------------------------------------------------------------
# The shipped specs
# ---------------------------------------------------------------------------

def test_all_shipped_specs_load():
    specs = load_specs()
    assert set(specs) >= set(ALGORITHMS)
    for spec in specs.values():
        assert set(spec.components) == set(SLOTS)
        for slot in SLOTS:
            kind = spec.component(slot)
            assert kind.slot == slot
            # the LaTeX of every slot renders from its parameters without error
            assert isinstance(kind.latex(spec.params(slot)), str)


def test_shipped_choices():
    specs = load_specs()
    kinds = {a: {slot: specs[a].components[slot].kind for slot in SLOTS} for a in ALGORITHMS}
    assert kinds["grpo"] == {"advantage": "group_zscore", "ratio": "token", "clip": "symmetric", "kl": "in_loss",
                             "aggregation": "seq_mean_token_mean", "filter": "none", "shaping": "none",
                             "correction": "none"}
    assert kinds["dapo"] == {"advantage": "group_zscore", "ratio": "token", "clip": "asymmetric", "kl": "none",
                             "aggregation": "token_mean", "filter": "dynamic_sampling", "shaping": "overlong",
                             "correction": "none"}
    assert kinds["dr_grpo"] == {"advantage": "group_mean", "ratio": "token", "clip": "symmetric", "kl": "none",
                                "aggregation": "constant_normalizer", "filter": "none", "shaping": "none",
                                "correction": "none"}
    assert kinds["ppo"]["advantage"] == "gae" and kinds["ppo"]["kl"] == "in_reward"
    assert kinds["reinforce"]["ratio"] == "none" and kinds["reinforce"]["clip"] == "none"
    assert specs["grpo"].params("kl") == {"estimator": "k3", "beta": 0.04}
    assert specs["grpo"].params("advantage") == {"std_ddof": 1, "eps": 1e-6}
    assert specs["dapo"].params("clip") == {"eps_low": 0.2, "eps_high": 0.28}
    assert specs["grpo"].paper.arxiv == "2402.03300" and specs["dapo"].paper.arxiv == "2503.14476"
    assert specs["dr_grpo"].paper.arxiv == "2503.20783"


def test_lineage_orders_predecessors_first():
    order = [s.id for s in S.lineage(load_specs())]
    assert order.index("reinforce") < order.index("ppo") < order.index("grpo") < order.index("dapo")
    assert order.index("grpo") < order.index("dr_grpo")


# ---------------------------------------------------------------------------
# Bad specs: each message names the file and the field
# ---------------------------------------------------------------------------

def test_unknown_component_kind(tmp_path):
    data = raw("grpo")
    data["components"]["advantage"]["kind"] = "group_median"
    path = write(tmp_path, data)
    msg = error_of(path)
    assert msg.startswith(f"{path}: ")
    assert "components.advantage.kind: unknown component 'group_median'" in msg
    assert "group_zscore" in msg and "leave_one_out" in msg  # lists what is known


def test_unknown_parameter(tmp_path):
    data = raw("grpo")
    data["components"]["clip"]["params"] = {"epsilon": 0.2}
    path = write(tmp_path, data)
    msg = error_of(path)
    assert msg.startswith(f"{path}: ")
    assert "components.clip.params.epsilon: unknown parameter of symmetric (known: eps)" in msg


def test_wrong_parameter_type(tmp_path):
    data = raw("grpo")
    data["components"]["clip"]["params"] = {"eps": "wide"}
    path = write(tmp_path, data)
    msg = error_of(path)
    assert msg.startswith(f"{path}: ")
    assert "components.clip.params.eps:" in msg and "valid number" in msg


@pytest.mark.parametrize("params, fragment", [
    ({"std_ddof": 2}, "components.advantage.params.std_ddof:"),
    ({"eps": -1.0}, "components.advantage.params.eps:"),
    ({"eps": float("nan")}, "components.advantage.params.eps:"),
])
def test_out_of_range_parameter(tmp_path, params, fragment):
    data = raw("grpo")
    data["components"]["advantage"]["params"] = params
    msg = error_of(write(tmp_path, data))
    assert fragment in msg


def test_wrong_type_of_top_level_field(tmp_path):
    data = raw("grpo")
    data["year"] = "last year"
    path = write(tmp_path, data)
    msg = error_of(path)
    assert f"{path}: year: " in msg and "valid integer" in msg


def test_missing_slot(tmp_path):
    data = raw("grpo")
    del data["components"]["filter"]
    path = write(tmp_path, data)
    msg = error_of(path)
    assert f"{path}: components: missing slot(s) filter" in msg


def test_unknown_slot(tmp_path):
    data = raw("grpo")
    data["components"]["entropy_bonus"] = {"kind": "none", "explanation": "x"}
    msg = error_of(write(tmp_path, data))
    assert "components: unknown slot(s) entropy_bonus" in msg


def test_missing_required_field(tmp_path):
    data = raw("grpo")
    del data["changed"]
    path = write(tmp_path, data)
    assert f"{path}: changed: Field required" in error_of(path)


def test_unknown_top_level_field(tmp_path):
    data = raw("grpo")
    data["summmary"] = "typo"
    path = write(tmp_path, data)
    assert f"{path}: summmary: unknown field" in error_of(path)


def test_missing_explanation(tmp_path):
    data = raw("grpo")
    del data["components"]["ratio"]["explanation"]
    path = write(tmp_path, data)
    assert f"{path}: components.ratio.explanation: Field required" in error_of(path)


def test_bad_tooltip_key(tmp_path):
    data = raw("grpo")
    data["components"]["clip"]["tooltips"] = {"clip": "ok", "epsilon": "no such term"}
    path = write(tmp_path, data)
    msg = error_of(path)
    assert msg.startswith(f"{path}: ")
    assert "components.clip.tooltips.epsilon: symmetric has no term 'epsilon' (terms: clip, min)" in msg
    assert "tooltips.clip" not in msg


def test_tooltip_override_is_used(tmp_path):
    data = raw("grpo")
    data["components"]["clip"]["tooltips"] = {"clip": "My own words."}
    spec = load_spec(write(tmp_path, data))
    terms = {t.key: t for t in spec.component("clip").terms}
    assert spec.tooltip("clip", terms["clip"]) == "My own words."
    assert spec.tooltip("clip", terms["min"]) == terms["min"].tooltip


def test_kl_in_reward_with_group_advantage(tmp_path):
    data = raw("grpo")
    data["components"]["kl"]["kind"] = "in_reward"
    path = write(tmp_path, data)
    msg = error_of(path)
    assert msg.startswith(f"{path}: ")
    assert "components.kl.kind: in_reward" in msg and "group_zscore would ignore it" in msg


def test_clip_without_ratio(tmp_path):
    data = raw("reinforce")
    data["components"]["clip"] = {"kind": "symmetric", "params": {"eps": 0.2}, "explanation": "x"}
    path = write(tmp_path, data)
    assert f"{path}: components.clip.kind: with ratio 'none'" in error_of(path)


def test_several_problems_are_all_reported(tmp_path):
    data = raw("grpo")
    data["components"]["clip"]["params"] = {"epsilon": 0.2}
    data["components"]["advantage"]["kind"] = "nope"
    path = write(tmp_path, data)
    lines = error_of(path).splitlines()
    assert len(lines) == 2 and all(line.startswith(f"{path}: ") for line in lines)


def test_predecessor_that_does_not_exist(tmp_path):
    for algorithm in ALGORITHMS:
        shutil.copy(SPEC_DIR / f"{algorithm}.yaml", tmp_path)
    data = raw("dapo")
    data["predecessor"] = "grpo_classic"
    write(tmp_path, data)
    with pytest.raises(SpecError) as info:
        load_specs(tmp_path)
    msg = str(info.value)
    assert msg == f"{tmp_path / 'dapo.yaml'}: predecessor: no spec 'grpo_classic' in {tmp_path}"


@pytest.mark.parametrize("cycle", [["dapo", "grpo"], ["dapo", "dr_grpo", "grpo"], ["grpo"]])
def test_predecessor_cycle_is_refused_in_one_line(tmp_path, cycle):
    """A cycle of predecessors (grpo -> dapo -> grpo, or a spec its own predecessor) used to hang
    lineage() and with it the build; load_specs and lineage refuse it with one line naming the
    cycle's first file and its predecessor field."""
    for algorithm in ALGORITHMS:
        shutil.copy(SPEC_DIR / f"{algorithm}.yaml", tmp_path)
    for spec_id, predecessor in zip(cycle, cycle[1:] + cycle[:1]):
        data = raw(spec_id)
        data["predecessor"] = predecessor
        write(tmp_path, data)
    loop = " -> ".join(cycle + cycle[:1])
    expected = (f"{tmp_path / (cycle[0] + '.yaml')}: predecessor: {cycle[1 % len(cycle)]!r} leads back to "
                f"{cycle[0]!r} ({loop}: each names the next as its predecessor); a lineage must start at a spec "
                f"without one")
    with pytest.raises(SpecError) as info:
        load_specs(tmp_path)
    assert str(info.value) == expected
    specs = {path.stem: load_spec(path) for path in tmp_path.glob("*.yaml")}  # past load_specs' check

    def hung(*_):
        raise AssertionError("lineage() did not end on a cycle of predecessors")

    previous = signal.signal(signal.SIGALRM, hung)
    signal.alarm(10)
    try:
        with pytest.raises(SpecError) as info:
            S.lineage(specs)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    assert str(info.value) == expected.replace(f"{tmp_path}/", "")


def test_load_specs_collects_every_file(tmp_path):
    bad1, bad2 = raw("grpo"), raw("dapo")
    bad1["components"]["kl"]["params"]["beta"] = "lots"
    bad2["components"]["clip"]["kind"] = "wavy"
    write(tmp_path, bad1)
    write(tmp_path, bad2)
    with pytest.raises(SpecError) as info:
        load_specs(tmp_path)
    msg = str(info.value)
    assert f"{tmp_path / 'grpo.yaml'}: components.kl.params.beta:" in msg
    assert f"{tmp_path / 'dapo.yaml'}: components.clip.kind: unknown component 'wavy'" in msg


def test_id_must_match_file_name(tmp_path):
    path = write(tmp_path, raw("grpo"), name="grpo2")
    assert error_of(path) == f"{path}: id: 'grpo' must match the file name 'grpo2'"


def test_bad_id_pattern(tmp_path):
    data = raw("grpo")
    data["id"] = "GRPO-2"
    path = write(tmp_path, data, name="GRPO-2")
    assert f"{path}: id: String should match pattern" in error_of(path)


def test_bad_arxiv_id(tmp_path):
    data = raw("grpo")
    data["paper"]["arxiv"] = "arXiv:2402.03300"
    path = write(tmp_path, data)
    assert f"{path}: paper.arxiv: String should match pattern" in error_of(path)


def test_not_yaml_or_not_a_mapping_or_missing(tmp_path):
    path = tmp_path / "x.yaml"
    path.write_text("id: [unclosed\n", encoding="utf-8")
    assert error_of(path).startswith(f"{path}: not valid YAML")
    path.write_text("- just\n- a list\n", encoding="utf-8")
    assert error_of(path).startswith(f"{path}: a spec is a mapping")
    assert error_of(tmp_path / "nope.yaml") == f"{tmp_path / 'nope.yaml'}: no such spec file"


# ---------------------------------------------------------------------------
# Parameters, defaults and resolution
# ---------------------------------------------------------------------------

def test_params_fill_registry_defaults(tmp_path):
    data = raw("grpo")
    data["components"]["advantage"]["params"] = {}
    data["components"]["clip"].pop("params")
    spec = load_spec(write(tmp_path, data))
    assert spec.params("advantage") == {"std_ddof": 1, "eps": 1e-6}
    assert spec.params("clip") == {"eps": 0.2}


def test_resolve_fills_constant_normaliser():
    spec = load_spec(SPEC_DIR / "dr_grpo.yaml")
    assert spec.params("aggregation") == {"normalizer": None}
    resolved = resolve(spec, max_new_tokens=96)
    assert resolved.components["aggregation"].params == {"normalizer": 96}
    assert resolved.id == "dr_grpo" and resolved.kind("aggregation") == "constant_normalizer"


def test_resolve_keeps_an_explicit_normaliser(tmp_path):
    data = raw("dr_grpo")
    data["components"]["aggregation"]["params"] = {"normalizer": 512}
    assert resolve(load_spec(write(tmp_path, data)), max_new_tokens=96).param("aggregation", "normalizer") == 512


def test_resolve_fills_overlong_lengths():
    resolved = resolve(load_spec(SPEC_DIR / "dapo.yaml"), max_new_tokens=96)
    # DAPO's cache is a fifth of the budget (4,096 of 20,480): round(0.2 * 96) = 19
    assert resolved.components["shaping"].params == {"max_length": 96, "cache_fraction": 0.2, "cache_length": 19,
                                                     "penalty": 0.5}
    # rounding, and at least one token of ramp
    assert resolve(load_spec(SPEC_DIR / "dapo.yaml"), max_new_tokens=10).param("shaping", "cache_length") == 2
    assert resolve(load_spec(SPEC_DIR / "dapo.yaml"), max_new_tokens=1).param("shaping", "cache_length") == 1


def test_resolve_keeps_explicit_overlong_lengths(tmp_path):
    data = raw("dapo")
    data["components"]["shaping"]["params"] = {"max_length": 16384, "cache_length": 4096}
    resolved = resolve(load_spec(write(tmp_path, data)), max_new_tokens=96)
    assert resolved.param("shaping", "max_length") == 16384 and resolved.param("shaping", "cache_length") == 4096


def test_resolve_every_slot_and_registered():
    for algorithm in ALGORITHMS:
        resolved = resolve(load_spec(SPEC_DIR / f"{algorithm}.yaml"), max_new_tokens=64)
        assert set(resolved.components) == set(SLOTS)
        for slot in SLOTS:
            assert resolved.kind(slot) in S.REGISTRY[slot]
            for key in S.REGISTRY[slot][resolved.kind(slot)].run_resolved:
                assert resolved.param(slot, key) is not None


def test_resolved_algorithm_rejects_unknown_kind():
    resolved = resolve(load_spec(SPEC_DIR / "grpo.yaml"), max_new_tokens=64)
    data = copy.deepcopy(resolved.model_dump())
    data["components"]["clip"]["kind"] = "wavy"
    with pytest.raises(ValueError, match="components.clip.kind: unknown component 'wavy'"):
        S.ResolvedAlgorithm.model_validate(data)
    del data["components"]["kl"]
    with pytest.raises(ValueError, match="components: missing slot kl"):
        S.ResolvedAlgorithm.model_validate(data)


# ---------------------------------------------------------------------------
# The registry
# ---------------------------------------------------------------------------

def test_registry_latex_and_terms():
    for slot, kinds in S.REGISTRY.items():
        assert kinds, slot
        for name, kind in kinds.items():
            defaults = {}
            for field, info in kind.params.model_fields.items():
                defaults[field] = info.default if not info.is_required() else None
            if slot == "kl" and name != "none":
                defaults = {"estimator": "k3", "beta": 0.04}
            assert isinstance(kind.latex(defaults), str)
            assert kind.summary
            keys = [t.key for t in kind.terms]
            assert len(keys) == len(set(keys)), (slot, name)


def test_latex_reflects_parameters():
    zscore = S.REGISTRY["advantage"]["group_zscore"]
    assert r"\operatorname{std}_{n-1}" in zscore.latex({"std_ddof": 1, "eps": 1e-6})
    assert r"\operatorname{std}_{n}" in zscore.latex({"std_ddof": 0, "eps": 1e-6})
    asym = S.REGISTRY["clip"]["asymmetric"].latex({"eps_low": 0.2, "eps_high": 0.28})
    assert "1-0.2" in asym and "1+0.28" in asym
    assert r"\beta=0.04" in S.REGISTRY["kl"]["in_loss"].latex({"estimator": "k3", "beta": 0.04})
    assert "L=96" in S.REGISTRY["aggregation"]["constant_normalizer"].latex({"normalizer": 96})
    assert r"\text{max new tokens}" in S.REGISTRY["aggregation"]["constant_normalizer"].latex({"normalizer": None})


def test_register_rejects_unknown_slot():
    with pytest.raises(ValueError, match="unknown slot 'bonus'"):
        S.register("bonus", "x", S.NoParams, "x", lambda p: "")
