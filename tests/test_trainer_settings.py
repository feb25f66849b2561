"""Each kind's settings in TRL, verl, prime-rl and OpenRLHF live in the registry (Kind.trainers) and the
components reference renders them as one table: one row per registered kind, one column per trainer,
a dash where the trainer does not ship the kind. A kind registered in a test-only module is a row of it;
a setting for a trainer the registry does not know is refused in one line."""

from __future__ import annotations

import html
import re

import pytest

from unipo_build.core import components as C
from unipo_build.core import registry as R
from unipo_build.core.registry import REGISTRY, SLOTS, setting
from unipo_build.site.pages.guides.reference import trainer_settings_html
from unipo_build.trainers.verl import config as verl_config

DASH = "\u2014"
_ROW = re.compile(r'<tr data-slot="([^"]+)" data-kind="([^"]+)" class="unipo-trainer-row">(.*?)</tr>')


def rows(page: str) -> dict[tuple[str, str], list[str]]:
    """(slot, kind) -> the row's cells as text (tags dropped, entities read), in the page's order."""
    out = {}
    for slot, name, body in _ROW.findall(page):
        cells = re.findall(r"<td>(.*?)</td>", body)
        out[(slot, name)] = [html.unescape(re.sub(r"<[^>]+>", "", c.replace("<br>", " | "))) for c in cells]
    return out


def test_the_tables_rows_are_the_registrys_kinds():
    page = trainer_settings_html()
    table = rows(page)
    assert list(table) == [(slot, name) for slot in SLOTS for name in REGISTRY[slot]]
    head = re.search(r"<thead><tr>(.*?)</tr></thead>", page).group(1)
    assert re.findall(r"<th>(.*?)</th>", head) == ["Kind", "TRL 1.16", "verl", "prime-rl", "OpenRLHF 0.11.2"]
    for (slot, name), cells in table.items():
        assert len(cells) == 1 + len(R.TRAINERS), (slot, name)
        assert cells[0] == f"{slot}: {name}"
        kind = REGISTRY[slot][name]
        for trainer, cell in zip(R.TRAINERS, cells[1:]):
            assert (cell == DASH) == (not R.settings_of(kind, trainer)), (slot, name, trainer)
    # the table scrolls inside its own box (Material's wrapper), and says where each trainer was read
    assert '<div class="md-typeset__scrollwrap"><div class="md-typeset__table"><table>' in page
    for trainer in R.TRAINERS:
        assert html.escape(R.TRAINER_SOURCES[trainer], quote=True) in page


def test_a_hand_checked_row_per_trainer():
    table = rows(trainer_settings_html())
    # TRL 1.16, grpo_trainer.py _compute_loss: loss_type == "cispo" clamps the ratio at epsilon_high
    assert table[("clip", "cispo")][1] == 'loss_type="cispo" epsilon_high is the cap itself, 1 + eps_high (no lower bound)'
    # verl core_algos.compute_policy_loss_vanilla: the dual clip -A * clip_ratio_c, 3.0 by default, always on
    assert table[("clip", "dual_clip")][2] == ("actor_rollout_ref.actor.clip_ratio_c=3.0 (default) with "
                                               "policy_loss.loss_mode=vanilla (default): always on")
    # prime-rl's orchestrator: algo = GRPOAlgoConfig() (reward minus the group mean) by default; no CISPO
    assert table[("advantage", "group_mean")][3] == 'orchestrator.algo.type = "grpo" (default)'
    assert table[("clip", "cispo")][3] == DASH
    # OpenRLHF 0.11.2 train_ppo_ray.py: is_correction_level token with is_correction_mode clip (TIS)
    assert table[("correction", "truncated_is")][4] == ("--algo.advantage.is_correction_level token | "
                                                        "--algo.advantage.is_correction_mode clip bounds "
                                                        "--algo.advantage.is_correction_threshold (0.5 5.0)")
    assert table[("clip", "dual_clip")][4] == "--actor.dual_clip 3"
    assert table[("clip", "dual_clip")][1] == DASH


def test_each_trainer_writes_its_settings_in_its_own_syntax():
    assert setting("trl", "loss_type", "sapo").text() == 'loss_type="sapo"'
    assert setting("trl", "beta", 0.0).text() == "beta=0.0"
    assert setting("trl", "vllm_importance_sampling_correction", False).text() == "vllm_importance_sampling_correction=False"
    assert setting("verl", "actor_rollout_ref.actor.use_kl_loss", True).text() == "actor_rollout_ref.actor.use_kl_loss=true"
    assert setting("prime-rl", "orchestrator.algo.type", "grpo").text() == 'orchestrator.algo.type = "grpo"'
    assert setting("openrlhf", "algo.kl.use_loss", True).text() == "--algo.kl.use_loss"
    assert setting("openrlhf", "actor.eps_clip_low_high", "0.2 0.28").text() == "--actor.eps_clip_low_high 0.2 0.28"
    assert setting("prime-rl", note="always").text() == ""


def _register_test_kind(trainers=()):
    """An advantage kind that exists only in this test module: the group z-score under another name."""
    return R.register(
        "advantage", "group_standardised_t", R.ZScoreParams, "Each reward standardised within its group (test only).",
        lambda p: r"\hat{A}_{i,t}=\operatorname{standardise}_{G}(r)_i",
        fn=C.group_zscore_advantage, group_baseline=True, label="group standardised (test kind)",
        apply=lambda rewards, p: C.group_zscore_advantage(rewards),
        explain=R.explain(R.row("advantage Â", "standardised", "calc.advantage", key="advantage")),
        trainers=trainers)


def test_a_kind_added_in_a_test_module_is_a_row_of_the_table():
    with R.scoped():
        _register_test_kind((setting("verl", "algorithm.adv_estimator", "grpo_test"),
                             setting("openrlhf", "algo.advantage.estimator", "group_norm", note="test kind")))
        row = rows(trainer_settings_html())[("advantage", "group_standardised_t")]
        assert row == ["advantage: group_standardised_t", DASH, "algorithm.adv_estimator=grpo_test", DASH,
                       "--algo.advantage.estimator group_norm test kind"]
        # given settings afterwards, as the shipped kinds are, the row follows
        R.trainer_settings("advantage", "group_standardised_t", setting("trl", "scale_rewards", "group"))
        row = rows(trainer_settings_html())[("advantage", "group_standardised_t")]
        assert row[1:] == ['scale_rewards="group"', DASH, DASH, DASH]
        assert R.trainer_values("trl", "scale_rewards", "advantage")["group"] == "group_standardised_t"
    assert ("advantage", "group_standardised_t") not in rows(trainer_settings_html())


def test_a_kind_without_settings_shows_a_dash_everywhere():
    with R.scoped():
        _register_test_kind()
        assert rows(trainer_settings_html())[("advantage", "group_standardised_t")][1:] == [DASH] * len(R.TRAINERS)


def test_an_unknown_trainer_is_refused_in_one_line():
    with R.scoped():
        with pytest.raises(ValueError) as err:
            _register_test_kind((setting("trlx", "loss_type", "grpo"),))
        message = str(err.value)
        assert "\n" not in message
        assert message == ("advantage kind 'group_standardised_t': unknown trainer 'trlx' in its trainer settings "
                           "(known: trl, verl, prime-rl, openrlhf)")
        assert "group_standardised_t" not in REGISTRY["advantage"]
        before = REGISTRY["clip"]["cispo"].trainers
        with pytest.raises(ValueError, match=r"^clip kind 'cispo': unknown trainer 'OpenRLHF' in its trainer settings"):
            R.trainer_settings("clip", "cispo", setting("OpenRLHF", "actor.policy_loss_type", "cispo"))
        assert REGISTRY["clip"]["cispo"].trainers == before
        with pytest.raises(ValueError, match=r"^clip kind 'cispo': a trainer setting must be made by setting"):
            R.trainer_settings("clip", "cispo", ("trl", "loss_type", "cispo"))
        with pytest.raises(ValueError, match=r"^clip kind 'cispo': a verl setting with neither a key nor a note$"):
            R.trainer_settings("clip", "cispo", setting("verl"))


def test_verls_importer_reads_its_aggregation_names_from_the_registry():
    # verl core_algos.agg_loss: the four loss_agg_mode values
    assert verl_config.AGGREGATION == {"token-mean": "token_mean", "seq-mean-token-mean": "seq_mean_token_mean",
                                       "seq-mean-token-sum": "seq_mean_token_sum",
                                       "seq-mean-token-sum-norm": "constant_normalizer"}


def test_trls_importer_reads_its_loss_types_aggregations_from_the_registry():
    # TRL 1.16 GRPOTrainer._compute_loss: how each loss_type aggregates (vespo has no kind)
    from unipo_build.trainers.trl import config as trl_config

    assert trl_config.AGGREGATION == {"grpo": "seq_mean_token_mean", "sapo": "seq_mean_token_mean",
                                      "dapo": "token_mean", "bnpo": "token_mean", "cispo": "token_mean",
                                      "dr_grpo": "constant_normalizer", "luspo": "seq_mean_token_sum"}
