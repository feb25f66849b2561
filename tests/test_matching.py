"""The one rule that names a run's nearest spec (unipo_build/core/matching.py), worked by hand, and the proof that an
import's note and ``unipo explain`` name the same spec for the same run; the one Gap type of the importers."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
import yaml

from trainer_formats import write_verl_fixture
from unipo_build.site import explain
from unipo_build.trainers import import_log
from unipo_build.core.matching import Gap, as_run_of, header_gaps, nearest_spec, ranked, slot_changes
from unipo_build.core.specs import AlgorithmSpec, ResolvedAlgorithm, load_specs, resolve

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures"
SPECS = load_specs(ROOT / "data" / "algorithms")


def run_of(spec_id: str, **slots: dict) -> ResolvedAlgorithm:
    """The spec resolved for a 12-token budget, with some slots replaced ({"kind": ..., "params": ...})."""
    config = resolve(SPECS[spec_id], max_new_tokens=12).model_dump()
    config["components"].update(slots)
    return ResolvedAlgorithm.model_validate({**config, "id": "mine", "name": "mine"})


def spec_like(spec_id: str, new_id: str, **fields) -> AlgorithmSpec:
    return AlgorithmSpec.model_validate({**SPECS[spec_id].model_dump(), "id": new_id, **fields})


def test_slot_changes_name_the_kind_or_the_parameters():
    assert slot_changes("symmetric", {"eps": 0.2}, "symmetric", {"eps": 0.2}) == ()
    assert slot_changes("symmetric", {"eps": 0.2}, "asymmetric", {"eps_low": 0.2, "eps_high": 0.28}) == ("kind",)
    assert slot_changes("gae", {"gamma": 1.0, "lam": 0.9, "x": 1}, "gae", {"gamma": 0.99, "lam": 0.9}) == ("gamma", "x")


def test_a_spec_resolved_is_its_own_exact_match():
    for spec_id in SPECS:
        match = nearest_spec(None, resolve(SPECS[spec_id], max_new_tokens=12), SPECS)
        assert match.spec.id == spec_id and match.exact_kinds and not match.params_changed and not match.by_id
        assert match.how() == "every slot alike"


def test_the_spec_the_header_names_comes_first():
    """A run whose header names dapo is explained by dapo even though its components are GRPO's exactly."""
    config = run_of("grpo")
    match = nearest_spec("dapo", config, SPECS)
    assert match.spec.id == "dapo" and match.by_id
    assert match.kinds_changed == ("clip", "kl", "aggregation", "filter", "shaping")
    assert nearest_spec("not_a_spec", config, SPECS).spec.id == "grpo"


def test_exact_kinds_beat_fewer_parameters():
    """GRPO's kinds with other parameters in three slots: by hand, grpo has no slot of another kind and every other
    spec at least one, so grpo, however many of its parameters differ."""
    config = run_of("grpo", advantage={"kind": "group_zscore", "params": {"std_ddof": 0, "eps": 1e-3}},
                    clip={"kind": "symmetric", "params": {"eps": 0.3}},
                    kl={"kind": "in_loss", "params": {"estimator": "k1", "beta": 0.1}})
    first, second = ranked(None, config, SPECS)[:2]
    assert first.spec.id == "grpo" and first.exact_kinds
    assert first.params_changed == ("advantage", "clip", "kl")
    assert first.how() == "3 of 8 slots differ: other parameters in advantage, clip and kl"
    assert len(second.kinds_changed) >= 1


def test_a_tie_in_kinds_goes_to_fewer_parameters():
    """TRL's loss_type='dapo' with beta 0: group z-score (TRL's eps 1e-4), token ratio, symmetric 0.2, no KL, token
    mean. By hand: grpo has 2 slots of another kind (kl: in_loss, aggregation: seq_mean_token_mean) and the
    advantage's eps differs (1e-6); dr_grpo has 2 (advantage: group_mean, aggregation: constant_normalizer) and no
    other parameter (its clip is symmetric 0.2 too); dapo has 3 (clip, filter, shaping). So dr_grpo, then grpo."""
    config = run_of("grpo", advantage={"kind": "group_zscore", "params": {"std_ddof": 1, "eps": 1e-4}},
                    kl={"kind": "none", "params": {}}, aggregation={"kind": "token_mean", "params": {}})
    order = ranked(None, config, SPECS)
    assert [m.spec.id for m in order[:2]] == ["dr_grpo", "grpo"]
    assert order[0].kinds_changed == ("advantage", "aggregation") and order[0].params_changed == ()
    assert order[1].kinds_changed == ("kl", "aggregation") and order[1].params_changed == ("advantage",)
    assert order[0].how() == "2 of 8 slots differ: another kind in advantage and aggregation"
    # one rule counts the slots that differ, for the import's note and the explain page alike (issue 44 item 4): a
    # slot where the trainer ran a setting no kind expresses (an import's gap) differs too, counted once
    assert order[1].differing() == ("advantage", "kl", "aggregation")
    assert order[1].differing({"clip", "kl"}) == ("advantage", "clip", "kl", "aggregation")
    assert order[1].how({"clip", "kl"}) == ("4 of 8 slots differ: another kind in kl and aggregation, other parameters "
                                            "in advantage, a trainer setting its components do not show in clip")
    assert {m.spec.id: len(m.kinds_changed) for m in order}["dapo"] == 3


def test_a_full_tie_goes_to_the_lineage_then_the_id():
    """Two copies of GRPO's components: 'zeta' (2020) and 'alpha' (2024, zeta's successor). Both match the run
    exactly; the lineage puts the predecessor first, so zeta, not alpha (which the alphabet would pick). Two copies
    of one year without predecessors: the lineage orders them by id."""
    config = run_of("grpo")
    specs = {"alpha": spec_like("grpo", "alpha", year=2024, predecessor="zeta"),
             "zeta": spec_like("grpo", "zeta", year=2020, predecessor=None)}
    assert nearest_spec(None, config, specs).spec.id == "zeta"
    specs = {"beta": spec_like("grpo", "beta", year=2024, predecessor=None),
             "alpha": spec_like("grpo", "alpha", year=2024, predecessor=None)}
    assert [m.spec.id for m in ranked(None, config, specs)] == ["alpha", "beta"]


def test_the_run_fills_what_the_spec_leaves_to_it():
    """Dr. GRPO's spec leaves the normaliser null: a Dr. GRPO run of budget 12 matches it with every slot alike
    (as_run_of takes the run's), while a run of the constant normaliser with a spec that has another kind does not
    borrow it."""
    config = run_of("dr_grpo")
    assert config.param("aggregation", "normalizer") == 12
    match = nearest_spec(None, config, SPECS)
    assert match.spec.id == "dr_grpo" and match.how() == "every slot alike"
    assert as_run_of(SPECS["grpo"], config).param("aggregation", "normalizer") is None


def test_no_config_or_no_spec_matches_nothing():
    assert nearest_spec("grpo", None, SPECS) is None
    assert nearest_spec("grpo", run_of("grpo"), {}) is None


def test_one_gap_type_round_trips_through_a_header():
    gap = Gap("algorithm.adv_estimator", "gpg", "advantage", "group_mean")
    assert gap.line() == "algorithm.adv_estimator = gpg has no kind in the registry's advantage slot (nearest: group_mean)"
    assert Gap.from_dict(gap.as_dict()) == gap

    class Header:
        model_extra = {"imported_from": {"format": "verl", "gaps": [gap.as_dict()]}}

    assert header_gaps(Header()) == [gap]


# ---------------------------------------------------------------------------
# The import's note and unipo explain name the same spec
# ---------------------------------------------------------------------------

def named_by_import(header) -> str:
    """The spec the import names: its algorithm when that is a spec, else the one its notes call nearest."""
    if header.algorithm in SPECS:
        return header.algorithm
    found = re.findall(r"nearest spec: (\w+)", header.notes)
    assert len(found) == 1, header.notes
    return found[0]


def trl_run(tmp_path: Path, fixture: str, **trainer) -> Path:
    """The TRL fixture imported; ``trainer``: GRPOConfig settings changed in a copy of its tap's manifest."""
    tap = FIXTURES / "trl" / f"{fixture}-tap"
    if trainer:
        tap = shutil.copytree(tap, tmp_path / "tap")
        manifest = json.loads((tap / "manifest.json").read_text())
        manifest["trainer"].update(trainer)
        (tap / "manifest.json").write_text(json.dumps(manifest))
    out = tmp_path / "runs" / f"trl-{fixture}"
    import_log("trl", FIXTURES / "trl" / fixture, out, tap=tap)
    return out


def verl_run(tmp_path: Path, **actor) -> Path:
    src = tmp_path / "verl"
    write_verl_fixture(src)
    cfg_path = src / ".hydra" / "config.yaml"
    cfg = yaml.safe_load(cfg_path.read_text())
    cfg["actor_rollout_ref"]["actor"].update(actor)
    cfg_path.write_text(yaml.safe_dump(cfg))
    out = tmp_path / "runs" / "verl-own"
    import_log("verl", src, out)
    return out


@pytest.mark.parametrize("make, expected", [
    (lambda p: trl_run(p, "bnpo"), "grpo"),  # TRL's bnpo: GRPO with a token mean (1 slot of another kind)
    (lambda p: trl_run(p, "gaps"), "grpo_batch_std"),  # scale_rewards='batch': batch-std GRPO's advantage, 1 slot off
    # TRL's dapo loss with beta 0: a tie in kinds that dr_grpo wins on parameters (the import used to name dapo
    # after the loss_type, while the explain page named dr_grpo)
    (lambda p: trl_run(p, "bnpo", loss_type="dapo", beta=0.0), "dr_grpo"),
    # verl's vanilla loss is dual-clip PPO: dual_clip is 2 slots away (kl, aggregation), grpo and dr_grpo 3
    (lambda p: verl_run(p, loss_agg_mode="token-mean", use_kl_loss=False), "dual_clip"),
], ids=["trl-bnpo", "trl-gaps", "trl-dapo", "verl-token-mean"])
def test_the_import_note_and_the_explain_page_name_one_spec(tmp_path, make, expected):
    run = make(tmp_path)
    header = explain.check_runs([run], ROOT)[0]
    assert named_by_import(header.header) == header.match.spec.id == expected
