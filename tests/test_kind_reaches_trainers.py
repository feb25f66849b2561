"""A kind's registry entry is its only source in the trainers (issue 46 item 1): ``group_standardised``, an
advantage kind registered only in tests/kinds_for_tests.py with its trainer settings and translators, is
translated to an OpenRLHF command from a spec file that uses it, mapped from a verl config and from a TRL
GRPOConfig, and explained in the browser (its explainer data and the math port's function; the Chromium run is
tests/browser/test_kind_from_data.py), with no other file edited. A kind with no OpenRLHF translation is refused
in one line naming it."""

from __future__ import annotations

import dataclasses

import pytest

import kinds_for_tests as K
from unipo_build.core import registry as R
from unipo_build.core.objective import browser_config
from unipo_build.core.project import spec_dir
from unipo_build.core.specs import load_algorithm, resolve
from unipo_build.trainers import common
from unipo_build.trainers.openrlhf import command as openrlhf
from unipo_build.trainers.trl.config import trl_components
from unipo_build.trainers.verl.config import components as verl_components


@pytest.fixture
def test_kind():
    with R.scoped():
        yield K.register_standardised()


def _spec_using_it(tmp_path):
    text = (spec_dir() / "grpo.yaml").read_text(encoding="utf-8")
    text = text.replace("kind: group_zscore", f"kind: {K.NAME}").replace("id: grpo\n", "id: grpo_standardised\n")
    path = tmp_path / "grpo_standardised.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_openrlhf_translates_it_from_its_entry(test_kind, tmp_path):
    cmd = openrlhf.build_command(str(_spec_using_it(tmp_path)), accept_approximation=True)
    args = cmd.openrlhf_args
    assert args[args.index("--algo.advantage.estimator") + 1] == "group_norm"
    assert K.OPENRLHF_NOTE in cmd.translation.notes
    assert cmd.translation.effective.kind("advantage") == K.NAME
    assert [g.slot for g in cmd.translation.gaps] == ["kl"]  # GRPO's own gap, nothing from the test kind


def test_a_kind_without_an_openrlhf_translation_is_refused_in_one_line(test_kind, tmp_path):
    R.REGISTRY["advantage"][K.NAME] = dataclasses.replace(test_kind, translators={})
    with pytest.raises(ValueError) as err:
        openrlhf.build_command(str(_spec_using_it(tmp_path)), accept_approximation=True)
    assert str(err.value) == f"advantage kind '{K.NAME}' has no OpenRLHF translation yet"


def test_verl_maps_its_estimator_to_it(test_kind):
    cfg = {"algorithm": {"adv_estimator": K.VERL_VALUE, "standardised_eps": 1e-5},
           "actor_rollout_ref": {"actor": {"loss_agg_mode": "token-mean"}}, "data": {"max_response_length": 32}}
    _, comps, gaps = verl_components(cfg, common.Notes())
    assert comps["advantage"] == {"kind": K.NAME, "params": {"std_ddof": 1, "eps": 1e-5}} and not gaps


def test_trl_maps_its_scale_rewards_to_it(test_kind):
    trainer = {"loss_type": "dapo", "scale_rewards": K.TRL_VALUE, "max_completion_length": 32,
               "steps_per_generation": 1, "gradient_accumulation_steps": 1}
    comps, gaps = trl_components(trainer, common.Loc("manifest.json"))
    assert comps["advantage"] == {"kind": K.NAME, "params": {"std_ddof": 1, "eps": 1e-4}} and not gaps


def test_the_browser_explains_it_from_its_entry(test_kind, tmp_path):
    assert R.explainer_problem(test_kind) is None
    cfg = resolve(load_algorithm(str(_spec_using_it(tmp_path))), max_new_tokens=32)
    assert browser_config(cfg)["components"]["advantage"]["fn"] == "group_zscore_advantage"  # unipo-math.js has it
    assert K.SENTENCE in repr(R.explainer_data(test_kind)["items"])  # what explainer.js shows, from the entry


def test_outside_the_scope_it_is_gone():
    assert K.NAME not in R.REGISTRY["advantage"]
