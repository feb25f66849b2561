"""Each kind's settings in TRL, verl, prime-rl and OpenRLHF live in the registry (Kind.trainers) and the
components reference renders them one trainer at a time: a content tab per trainer, a table of the kinds it
ships with their settings, and one line naming the kinds it does not ship. A kind registered in a test-only
module is in them; a setting for a trainer the registry does not know is refused in one line."""

from __future__ import annotations

import argparse
import ast
import dataclasses
import html
import importlib
import inspect
import os
import re
import runpy

import numpy as np
import pytest

from unipo_build.core import components as C
from unipo_build.core import registry as R
from unipo_build.core.kinds_correction import TruncatedIS
from unipo_build.core.project import spec_dir
from unipo_build.core.specs import load_specs
from unipo_build.site.facts.spec_facts import count_word
from unipo_build.core.registry import REGISTRY, SLOTS, setting
from unipo_build.site.pages.guides.reference import trainer_settings_html
from unipo_build.trainers.verl import config as verl_config

DASH = "\u2014"
_ROW = re.compile(r'<tr data-slot="([^"]+)" data-kind="([^"]+)" class="unipo-trainer-row">(.*?)</tr>')
_LACKS = re.compile(r'<p class="unipo-trainer-lacks" data-trainer="([^"]+)">(.*?)</p>')


def blocks(page: str) -> dict[str, str]:
    """trainer -> the HTML of its tab."""
    parts = page.split('<div class="tabbed-block" data-trainer="')[1:]
    return {part.split('"', 1)[0]: part.split('">', 1)[1] for part in parts}


def lacking(page: str) -> dict[str, list[tuple[str, str]]]:
    """trainer -> the (slot, kind) its line of kinds it does not ship names, in order."""
    return {trainer: re.findall(r'href="#component-([a-z]+)-([a-z0-9_]+)"', line) for trainer, line in _LACKS.findall(page)}


def rows(page: str) -> dict[tuple[str, str], list[str]]:
    """(slot, kind) -> [its label, then its setting in each trainer as text (tags dropped, entities read, a dash
    where the trainer's tab names it among the kinds it lacks)], in the registry's order: the tabs read back as
    one table."""
    def text(cell: str) -> str:
        return html.unescape(re.sub(r"<[^>]+>", "", cell.replace("<br>", " | ")))

    settings, labels = {}, {}
    for trainer, block in blocks(page).items():
        for slot, name, body in _ROW.findall(block):
            label, cell = re.findall(r"<td>(.*?)</td>", body)
            labels[(slot, name)] = text(label)
            settings[(slot, name, trainer)] = text(cell)
    missing = lacking(page)
    out = {}
    for slot in SLOTS:
        for name in REGISTRY[slot]:
            cells = []
            for trainer in R.TRAINERS:
                if (slot, name, trainer) in settings:
                    cells.append(settings[(slot, name, trainer)])
                elif (slot, name) in missing.get(trainer, []):
                    cells.append(DASH)
            if cells:
                out[(slot, name)] = [labels.get((slot, name), f"{slot}: {name}")] + cells
    return out


def test_the_tables_rows_are_the_registrys_kinds():
    page = trainer_settings_html()
    table = rows(page)
    assert list(table) == [(slot, name) for slot in SLOTS for name in REGISTRY[slot]]
    # one tab per trainer, in the registry's order, the first open
    labels = re.findall(r'<label for="__tabbed_trainers_\d">(.*?)</label>', page)
    assert labels == ["TRL 1.16", "verl", "prime-rl", "OpenRLHF 0.11.2"]
    assert list(blocks(page)) == list(R.TRAINERS)
    assert page.count('<input checked="checked" id="__tabbed_trainers_1"') == 1
    total = len(table)
    for trainer, block in blocks(page).items():
        label = R.TRAINERS[trainer]
        head = re.search(r"<thead><tr>(.*?)</tr></thead>", block).group(1)
        assert re.findall(r"<th>(.*?)</th>", head) == ["Kind", f"Setting in {label}"]
        shipped = [(slot, name) for slot, name, _ in _ROW.findall(block)]
        lacks = lacking(page)[trainer]
        # every kind once: in the trainer's table where it has a setting, else on its one line of what it lacks
        assert shipped == [k for k in table if R.settings_of(REGISTRY[k[0]][k[1]], trainer)], trainer
        assert lacks == [k for k in table if not R.settings_of(REGISTRY[k[0]][k[1]], trainer)], trainer
        assert f'ships {len(shipped)} of the {total} kinds' in block
        assert f"Not in {html.escape(label)} ({len(lacks)} of the {total} kinds): " in block
        # no dash left: a trainer's missing kinds are one line, not a column of dashes
        assert DASH not in re.sub(r"<[^>]+>", "", block)
        # the table sits in Material's scrolling box (and fits the column: tests/browser/test_reference_fit.py),
        # and the tab says where the trainer's settings were read
        assert '<div class="md-typeset__scrollwrap"><div class="md-typeset__table"><table>' in block
        assert html.escape(R.TRAINER_SOURCES[trainer], quote=True) in block
    for (slot, name), cells in table.items():
        assert len(cells) == 1 + len(R.TRAINERS), (slot, name)
        assert cells[0] == f"{slot}: {name}"
    # prime-rl ships few kinds: the rest are one line, slot by slot
    missing = lacking(page)["prime-rl"]
    assert len(missing) > total / 2
    line = re.sub(r"<[^>]+>", "", dict(_LACKS.findall(page))["prime-rl"])
    first_slot = missing[0][0]
    assert line.startswith(f"Not in prime-rl ({len(missing)} of the {total} kinds): {first_slot} {missing[0][1]}, ")


def test_a_hand_checked_row_per_trainer():
    table = rows(trainer_settings_html())
    # TRL 1.16, grpo_trainer.py _compute_loss: loss_type == "cispo" clamps the ratio at epsilon_high
    assert table[("clip", "cispo")][1] == ('loss_type="cispo" epsilon_high is the cap itself, 1 + eps_high (no lower '
                                           "bound); TRL recommends 5.0, ScaleRL's")
    # verl core_algos.compute_policy_loss_cispo: clamp(ratio, 1 - clip_ratio_low, 1 + clip_ratio_high), both 0.2 by
    # default (actor.yaml): unlike the paper's and TRL's, verl's CISPO has a lower bound unless it is set away
    assert table[("clip", "cispo")][2] == ("actor_rollout_ref.actor.policy_loss.loss_mode=cispo the weight clamped to "
                                           "[1 - clip_ratio_low, 1 + clip_ratio_high], [0.8, 1.2] by default: a lower "
                                           "bound the paper does not set (clip_ratio_low=1 removes it)")
    # verl actor.yaml: use_kl_loss false, kl_loss_coef 0.001 when it is on
    assert table[("kl", "in_loss")][2] == ("actor_rollout_ref.actor.use_kl_loss=true kl_loss_coef (0.001 by default); "
                                           "kl_loss_type low_var_kl (k3) by default")
    # verl core_algos.compute_policy_loss_vanilla: the dual clip -A * clip_ratio_c, 3.0 by default, always on
    assert table[("clip", "dual_clip")][2] == ("actor_rollout_ref.actor.clip_ratio_c=3.0 (default) with "
                                               "policy_loss.loss_mode=vanilla (default): always on")
    # prime-rl's orchestrator: algo = GRPOAlgoConfig() (reward minus the group mean) by default; no CISPO
    assert table[("advantage", "group_mean")][3] == 'orchestrator.algo.type = "grpo" (default)'
    assert table[("clip", "cispo")][3] == DASH
    # OpenRLHF 0.11.2 train_ppo_ray.py: is_correction_level token with is_correction_mode clip (TIS), which clamps
    # to [low, high] of is_correction_threshold: a lower bound too
    assert table[("correction", "truncated_is")][4] == ("--algo.advantage.is_correction_level token | "
                                                        "--algo.advantage.is_correction_mode clip the weight clamped to "
                                                        "--algo.advantage.is_correction_threshold (0.5 5.0): a lower "
                                                        "bound 0.5 and a cap 5.0 by default; one value is the cap alone")
    assert table[("clip", "dual_clip")][4] == "--actor.dual_clip 3"
    assert table[("clip", "dual_clip")][1].startswith("delta=3.0 INTELLECT-2's two-sided clip")
    # prime-rl has no truncated weight: its ratio is taken against the inference log-probs (the ratio's row)
    assert table[("correction", "truncated_is")][3] == DASH
    # prime-rl 559b447 loss.py default_loss_fn: DPPO's mask on exp(trainer_logprobs) - exp(inference_logprobs),
    # DefaultLossConfig dppo_mask_low = dppo_mask_high = 0.2 and kl_tau 1e-3; no other trainer ships it
    assert table[("clip", "dppo_mask")][3] == ('trainer.loss.type = "default" (default) dppo_mask_low / dppo_mask_high '
                                               "(0.2 each), the ratio taken against the inference log-probs; the loss "
                                               "also adds kl_tau (0.001) × (log ratio)², which no kind computes")
    assert [table[("clip", "dppo_mask")][i] for i in (1, 2, 4)] == [DASH] * 3


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


# ---------------------------------------------------------------------------
# Read against the trainers' own code
# ---------------------------------------------------------------------------
#
# Where the suite has the trainer installed (TRL; OpenRLHF's Python), every setting of the table is read against
# it: its key is one the trainer has, its "(default)" mark says whether its value is the trainer's default, and a
# note's "NAME (VALUE)" (NAME a GRPOConfig field, an OpenRLHF flag) states NAME's default, which must be the
# trainer's. verl and prime-rl are not installed: their cells are hand-checked above against the commits
# TRAINER_SOURCES cites.

_NOTE_DEFAULT = re.compile(r"(?:--)?([A-Za-z_][\w.]*) \(([^()]*)\)")


_NOT_A_VALUE = object()


def _literal(text: str):
    """'3.0' -> 3.0, 'None' -> None, '0.5 5.0' -> [0.5, 5.0] (a note's stated default); _NOT_A_VALUE for words
    ('(default)': the note says the setting left out is the default)."""
    try:
        values = [ast.literal_eval(v) for v in text.split()]
    except (ValueError, SyntaxError):
        return _NOT_A_VALUE
    return values[0] if len(values) == 1 else values


def note_defaults(note: str, known: dict) -> list[tuple[str, object]]:
    """(name, stated default) of each "NAME (VALUE)" in a note whose NAME the trainer knows."""
    return [(name, value) for name, shown in _NOTE_DEFAULT.findall(note)
            if name in known and (value := _literal(shown)) is not _NOT_A_VALUE]


def every_setting(trainer: str):
    for slot in SLOTS:
        for name, kind in REGISTRY[slot].items():
            for s in R.settings_of(kind, trainer):
                yield (slot, name), s


def _trl():
    if os.environ.get("UNIPO_REQUIRE_TRL") != "1":
        pytest.importorskip("trl", reason="TRL is not installed (pip install -e '.[trl]')")
    from trl_support import import_grpo_trainer

    return import_grpo_trainer()  # trl.trainer.grpo_trainer, with the OpenRLHF tests' stubs out of sight


def grpo_config_defaults() -> dict:
    """Every GRPOConfig field of the installed TRL with its default."""
    import trl

    return {f.name: (f.default_factory() if f.default is dataclasses.MISSING else f.default)
            for f in dataclasses.fields(trl.GRPOConfig)}


def trl_object(path: str):
    """The object a dotted path names (trl.rewards.get_soft_overlong_punishment), imported; AttributeError or
    ImportError if the installed TRL has none."""
    parts = path.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attr in parts[cut:]:
            obj = getattr(obj, attr)
        return obj
    raise ImportError(path)


def test_every_trl_setting_is_one_grpoconfig_has_with_its_default():
    _trl()
    defaults = grpo_config_defaults()
    stated = set()
    for where, s in every_setting("trl"):
        if s.key in defaults:
            assert s.default == (s.value == defaults[s.key]), (where, s.key, s.value, defaults[s.key])
        elif s.key:  # a function or trainer class of TRL's: it must exist
            assert not s.default and trl_object(s.key) is not None, (where, s.key)
        for name, value in note_defaults(s.note, defaults):
            assert value == defaults[name], (where, name, value, defaults[name])
            stated.add(name)
    assert {"vllm_importance_sampling_clip_max", "vllm_importance_sampling_clip_min",
            "off_policy_mask_threshold"} <= stated


def test_trls_column_has_delta_gmpo_the_soft_overlong_punishment_and_the_bias_corrected_kl():
    grpo_trainer = _trl()
    defaults = grpo_config_defaults()
    table = rows(trainer_settings_html())
    trl_cell = {key: cells[1] for key, cells in table.items()}

    # delta (None: off): _compute_loss clamps coef_1 at delta before PPO's min, for loss types grpo, bnpo,
    # dr_grpo, dapo, luspo. For delta > 1 + epsilon_high that is the dual clip with c = delta: the kind's term
    # equals TRL's -per_token_loss at every ratio and both signs of the advantage
    assert defaults["delta"] is None and "delta" not in [s.key for s in R.settings_of(REGISTRY["clip"]["symmetric"], "trl")]
    assert "coef_1 = torch.clamp(coef_1, max=self.args.delta)" in inspect.getsource(grpo_trainer.GRPOTrainer._compute_loss)
    delta, eps = 3.0, defaults["epsilon"]
    rho = np.exp(np.linspace(-3, 3, 121))[None, :].repeat(2, 0)
    adv = np.array([[0.7], [-0.7]]).repeat(rho.shape[1], 1)
    trl_term = np.minimum(np.minimum(rho, delta) * adv, np.clip(rho, 1 - eps, 1 + eps) * adv)
    dual = REGISTRY["clip"]["dual_clip"]
    term, _ = dual.apply(rho, adv, {"eps_low": eps, "eps_high": eps, "c": delta})
    np.testing.assert_allclose(term, trl_term, rtol=0, atol=1e-12)
    assert trl_cell[("clip", "dual_clip")].startswith("delta=3.0 ")

    # GMPO: trl.experimental.gmpo, its clip in log space with GMPOConfig's epsilon 0.4 (the kind's default)
    gmpo = trl_object("trl.experimental.gmpo")
    assert issubclass(gmpo.GMPOTrainer, grpo_trainer.GRPOTrainer)
    gmpo_eps = {f.name: f.default for f in dataclasses.fields(gmpo.GMPOConfig)}["epsilon"]
    params = REGISTRY["clip"]["geo_mean"].params()
    assert gmpo_eps == params.eps_low == params.eps_high == 0.4
    assert trl_cell[("clip", "geo_mean")].startswith(f"trl.experimental.gmpo.GMPOTrainer with GMPOConfig "
                                                     f"(experimental): epsilon {gmpo_eps} ")

    # trl.rewards.get_soft_overlong_punishment is DAPO's eq. 13 with penalty 1: the overlong kind's term, length by length
    punish = trl_object("trl.rewards.get_soft_overlong_punishment")(max_completion_len=10, soft_punish_cache=4)
    lengths = np.arange(0, 12)
    overlong = REGISTRY["shaping"]["overlong"]
    mine = overlong.apply(lengths, {"max_length": 10, "cache_length": 4, "penalty": 1.0})
    np.testing.assert_allclose(mine, punish([[0] * n for n in lengths]), rtol=0, atol=1e-12)
    assert trl_cell[("shaping", "overlong")].startswith("trl.rewards.get_soft_overlong_punishment one of reward_funcs")
    assert "no length term" in trl_cell[("shaping", "none")] and "(default)" in trl_cell[("shaping", "none")]

    # use_bias_correction_kl: True by default, the KL times the ratio; the kind's k3 is TRL's with it False
    assert defaults["use_bias_correction_kl"] is True
    assert "per_token_kl = per_token_kl * coef_1" in inspect.getsource(grpo_trainer.GRPOTrainer._compute_loss)
    assert trl_cell[("kl", "in_loss")] == ("beta=0.001 any beta > 0; the estimator is k3 | use_bias_correction_kl=False "
                                           "its default, True, multiplies k3 by the ratio to the old policy (DeepSeek-V3.2), "
                                           "which changes the KL's gradient even on-policy; no kind computes that")

    # off_policy_mask_threshold (None: off) has no kind; the filter's "none" row says so
    assert defaults["off_policy_mask_threshold"] is None
    assert "off_policy_mask_threshold (None) is DeepSeek-V3.2's off-policy sequence mask" in trl_cell[("filter", "none")]

    # the *_mask modes: clip_min None by default, so TRL's default masks above the cap only (lower null), not both sides
    assert defaults["vllm_importance_sampling_mode"] == "sequence_mask"
    assert defaults["vllm_importance_sampling_clip_min"] is None
    assert "by default only above the cap" in trl_cell[("correction", "masked_is")]

    # CISPO: TRL's epsilon_high help recommends 5.0 for loss_type cispo (ScaleRL)
    import trl

    help_text = {f.name: f.metadata.get("help", "") for f in dataclasses.fields(trl.GRPOConfig)}["epsilon_high"]
    assert "cispo" in help_text and "`5.0`" in help_text


class _Parser(Exception):
    def __init__(self, parser):
        super().__init__("parser")
        self.parser = parser


def openrlhf_parser(monkeypatch) -> argparse.ArgumentParser:
    """OpenRLHF 0.11.2's own argument parser, as train_ppo_ray.py builds it (run as __main__, stopped at
    parse_args), or skip where OpenRLHF is not installed."""
    from openrlhf_support import require_openrlhf

    from unipo_build.trainers.openrlhf.command import ENTRY_MODULE

    require_openrlhf()

    def stop(self, *args, **kwargs):
        raise _Parser(self)

    monkeypatch.setattr(argparse.ArgumentParser, "parse_args", stop)
    with pytest.raises(_Parser) as caught:
        runpy.run_module(ENTRY_MODULE, run_name="__main__")
    return caught.value.parser


def test_every_openrlhf_setting_is_one_of_its_flags_with_its_default(monkeypatch):
    parser = openrlhf_parser(monkeypatch)
    defaults = {a.dest: a.default for a in parser._actions}
    stated = set()
    for where, s in every_setting("openrlhf"):
        if s.key:
            assert s.key in defaults, (where, s.key)
            value = [float(v) for v in s.value.split()] if isinstance(s.value, str) and " " in s.value else s.value
            assert s.default == (value == defaults[s.key]), (where, s.key, s.value, defaults[s.key])
        for name, shown in note_defaults(s.note, defaults):
            assert shown == defaults[name], (where, name, shown, defaults[name])
            stated.add(name)
    assert "algo.advantage.is_correction_threshold" in stated


def test_openrlhfs_truncation_has_a_lower_bound(monkeypatch):
    """0.11.2 has no 'tis' option: is_correction_mode clip clamps the token ratio to [low, high] of
    is_correction_threshold, [0.5, 5.0] by default (train_ppo_ray.py and PolicyLoss.__init__ agree)."""
    parser = openrlhf_parser(monkeypatch)
    defaults = {a.dest: a.default for a in parser._actions}
    choices = {a.dest: a.choices for a in parser._actions}
    from openrlhf.models.loss import PolicyLoss

    signature = inspect.signature(PolicyLoss.__init__).parameters
    low, high = defaults["algo.advantage.is_correction_threshold"]
    assert (low, high) == tuple(signature["is_correction_threshold"].default) == (0.5, 5.0)
    assert "tis" not in choices["algo.advantage.is_correction_mode"] and "clip" in choices["algo.advantage.is_correction_mode"]
    lower = TruncatedIS.model_fields["lower"].description
    assert "as verl truncates" in lower and f"clamps to [{low}, {high}] by default" in lower
    assert "verl and OpenRLHF" not in lower
    tis = load_specs(spec_dir())["grpo_tis"]
    explanation = tis.components["correction"].explanation
    assert f"is_correction_mode clip clamps to [{low:g}, {high:g}] by default" in explanation
    assert "OpenRLHF's tis" not in explanation


def test_the_truncated_is_spec_names_the_trainers_the_registry_gives_it():
    """grpo_tis.yaml says how many trainers ship a truncated weight, and which does not, as the registry has them."""
    tis = load_specs(spec_dir())["grpo_tis"]
    kind = REGISTRY["correction"]["truncated_is"]
    shipping = [t for t in R.TRAINERS if R.settings_of(kind, t)]
    lacking = [t for t in R.TRAINERS if t not in shipping]
    assert lacking == ["prime-rl"]
    assert (f"{count_word(len(shipping)).capitalize()} of the {count_word(len(R.TRAINERS))} trainers ship a truncated "
            "weight") in tis.changed.replace("\n", " ")
    assert "prime-rl has none" in tis.changed and "All four trainers" not in tis.changed


# ---------------------------------------------------------------------------
# A spec against a trainer's defaults (site/pages/guides/trainer_words.py)
# ---------------------------------------------------------------------------

def test_a_grpo_run_in_verl_at_its_defaults_is_not_the_dual_clip_spec():
    """verl at b178a3c (actor.yaml, core_algos.compute_policy_loss_vanilla): the vanilla loss always adds the dual clip
    (clip_ratio_c 3.0), loss_agg_mode is token-mean and use_kl_loss false (kl_loss_coef 0.001 when on). So a run
    with adv_estimator=grpo and nothing else set has the dual-clip spec's clip, not its KL penalty or aggregation."""
    from unipo_build.site.pages.guides import trainer_words as W

    specs = load_specs(spec_dir())
    same, differ = W.defaults_against_spec(specs["dual_clip"], "verl", ("advantage",))
    assert same == ["clip", "correction"]
    assert [(slot, mine.name, [k.name for k in kinds]) for slot, mine, kinds in differ] == [
        ("kl", "in_loss", ["none"]), ("aggregation", "seq_mean_token_mean", ["token_mean"])]
    text = re.sub(r"</?code>", "`", W.trainer_defaults_text(specs["dual_clip"], "verl", ("advantage",)))
    assert text.startswith("In verl, `algorithm.adv_estimator=grpo` with every other setting at its default has this "
                           "spec's clip and rollout correction but not the rest: its KL penalty is `none` "
                           "(`actor_rollout_ref.actor.use_kl_loss=false` (the default)), where this spec's `in_loss` "
                           "needs `actor_rollout_ref.actor.use_kl_loss=true` (kl_loss_coef (0.001 by default);")
    # GRPO's plain clip is not verl's default: vanilla adds the floor, so the clip slot differs for the GRPO spec
    _, differ = W.defaults_against_spec(specs["grpo"], "verl", ("advantage",))
    assert ("clip", "symmetric", ["dual_clip"]) in [(s, m.name, [k.name for k in ks]) for s, m, ks in differ]
    # the spec's own words name the same two slots, and no longer say a verl GRPO run is this spec
    changed = " ".join(specs["dual_clip"].changed.split())
    assert "so a GRPO run in verl is this spec" not in changed
    assert "differs in the KL penalty" in changed and "and the aggregation" in changed
    # a slot whose settings are notes alone (verl's token ratio: "always") is left out, never guessed
    assert W.at_defaults(REGISTRY["ratio"]["token"], "verl") is None


def test_a_kinds_setting_in_a_sentence_is_the_tables():
    from unipo_build.site.pages.guides import trainer_words as W

    assert W.settings_words(REGISTRY["clip"]["dual_clip"], "openrlhf") == "<code>--actor.dual_clip 3</code>"
    assert W.settings_words(REGISTRY["clip"]["cispo"], "verl") == (
        "<code>actor_rollout_ref.actor.policy_loss.loss_mode=cispo</code> (the weight clamped to [1 - clip_ratio_low, "
        "1 + clip_ratio_high], [0.8, 1.2] by default: a lower bound the paper does not set (clip_ratio_low=1 "
        "removes it))")
    assert W.settings_words(REGISTRY["clip"]["cispo"], "openrlhf") == ""


# ---------------------------------------------------------------------------
# Trainer facts in the sampler chapter's prose
# ---------------------------------------------------------------------------

def _repo():
    from pathlib import Path

    return Path(__file__).resolve().parents[1]


def test_the_sampler_chapter_names_prime_rls_lag_bound_as_its_code_has_it():
    """prime-rl at 559b447 (packages/prime-rl-configs .../orchestrator.py) bounds staleness by max_off_policy_steps
    (Field(8, ge=0)); async_level is gone (max_async_level was dropped in its #2631). Nothing of the project says
    async_level."""
    repo = _repo()
    chapter = " ".join((repo / "docs/course/compare/sampler.md").read_text(encoding="utf-8").split())
    assert "prime-rl bounds the lag by `max_off_policy_steps`" in chapter and "8 by default" in chapter
    for path in ("docs/course/compare/sampler.md", "unipo_build/cli/commands.py", "unipo_build/core/presets.py",
                 "training/stale.py"):
        assert "async_level" not in (repo / path).read_text(encoding="utf-8"), path


def test_the_sampler_chapter_says_what_a_token_level_correction_does_not_correct():
    """Token-level TIS/MIS weigh a token by its own ratio: they do not correct the mismatch of the tokens before it,
    so they do not remove the gradient's bias; TRL's default tests whole responses (sequence_mask), and the shipped
    sequence-level runs (GRPO-MIS (sequence)) are the chapter's run of it."""
    import json

    repo = _repo()
    chapter = " ".join((repo / "docs/course/compare/sampler.md").read_text(encoding="utf-8").split())
    assert "remove, or bound, the bias" not in chapter and "the bias the corrections remove" not in chapter
    assert "A token-level weight corrects the token's own probability, not the mismatch of the tokens before it, so " \
           "it does not remove the bias of the gradient estimate" in chapter
    levels: dict[str, set] = {}
    for header in (repo / "data" / "runs").glob("*/header.json"):
        h = json.loads(header.read_text(encoding="utf-8"))
        correction = h["algorithm_config"]["components"].get("correction")
        if correction and correction["kind"] != "none":
            levels.setdefault(correction["params"]["level"], set()).add(h["algorithm"])
    assert levels == {"token": {"grpo_tis", "grpo_mis"}, "sequence": {"grpo_mis_seq"}}, levels
    assert 'sampler_correction_words("grpo_mis_seq@lag8"' in chapter and "sampler_level_words(" in chapter
    masked_trl = [s for s in R.settings_of(REGISTRY["correction"]["masked_is"], "trl") if s.default]
    assert [s.value for s in masked_trl] == ["sequence_mask"] and "It is TRL's default mode, `sequence_mask`" in chapter
    # TRL's *_mask modes are upper-only by default (clip_min None): the chapter does not call them IcePop's rule
    assert "IcePop's rule; TRL's" not in chapter
    assert "TRL's `*_mask` modes have no lower bound unless one is set" in chapter
    # prime-rl ships neither correction (the registry's correction rows have no prime-rl setting)
    assert not any(R.settings_of(REGISTRY["correction"][k], "prime-rl") for k in ("truncated_is", "masked_is"))
    assert "Each trainer ships both corrections" not in chapter and "prime-rl has neither" in chapter


def test_the_sampler_chapter_reads_the_common_lag_before_lag_8():
    chapter = (_repo() / "docs/course/compare/sampler.md").read_text(encoding="utf-8")
    for mode in ("sampled", "greedy"):
        assert (chapter.index(f'sampler_lag_words("{mode}")') < chapter.index(f'sampler_cost_words("{mode}")'))
    assert "A lag of one or two rollouts is what an overlapped trainer runs with" in chapter


def test_the_dppo_masks_defaults_are_the_prime_rl_settings_the_import_reads():
    """The dppo_mask kind's defaults are prime-rl's DefaultLossConfig defaults (0.2 each at 559b447), which its note
    names and the prime-rl import falls back to when a config leaves them out."""
    from unipo_build.trainers.prime_rl import importer as P

    params = REGISTRY["clip"]["dppo_mask"].params()
    assert (params.delta_low, params.delta_high) == (0.2, 0.2)
    note = R.settings_of(REGISTRY["clip"]["dppo_mask"], "prime-rl")[0].note
    assert f"({params.delta_low:g} each)" in note and params.delta_low == params.delta_high
    _, comps, gaps = P.components({"loss": {"type": "default", "kl_tau": 0.0}}, {})
    assert comps["clip"] == {"kind": "dppo_mask", "params": {"delta_low": 0.2, "delta_high": 0.2}} and gaps == []
