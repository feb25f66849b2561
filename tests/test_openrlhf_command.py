"""Spec -> OpenRLHF 0.11.2 command: the flags per slot, the gaps, and OpenRLHF's own parser on the result.

The parser test runs openrlhf/cli/train_ppo_ray.py as __main__ (its argparse parser and every check it
makes after parsing) on each generated command, and stops it at the first line of train(), where it
would start the strategy and the GPUs. So every flag the builder emits exists in 0.11.2, takes the
values given, passes OpenRLHF's own validation, and lands where the spec says.
"""

from __future__ import annotations

import json
import runpy
import sys
from pathlib import Path

import pytest

from unipo_build.cli import main as cli
from unipo_build.core.objective import clip_bounds
from unipo_build.trainers.openrlhf import command as C
from unipo_build.core.project import spec_dir
from unipo_build.core.registry import REGISTRY, settings_of
from unipo_build.core.specs import load_specs

SPEC_DIR = spec_dir()

ROOT = Path(__file__).resolve().parent.parent
SPECS = sorted(load_specs(SPEC_DIR))  # the shipped specs and any a contributor adds
# Which shipped specs OpenRLHF 0.11.2 runs exactly (a spec added later is checked by the parser test
# below, not here: whether it has a gap depends on what it is).
EXACT = {"dapo", "gspo"}
APPROXIMATED = {"dr_grpo", "dapo_dr", "grpo", "ppo", "reinforce"}


def openrlhf_value(translation: C.Translation, slot: str, key: str) -> str:
    """The value of ``--key`` that the slot's kind is trained with in OpenRLHF, from the registry: the effective kind's
    own OpenRLHF setting, else (a kind OpenRLHF only approximates) the flags its gap names."""
    kind = REGISTRY[slot][translation.effective.kind(slot)]
    values = [s.value for s in settings_of(kind, "openrlhf") if s.key == key]
    values += [flag_values(list(g.flags), "--" + key)[0] for g in translation.gaps if g.slot == slot
               and "--" + key in g.flags]
    assert values, f"{slot} kind {kind.name!r} has no OpenRLHF setting {key} and no gap naming it"
    return values[0]


@pytest.mark.specs
def test_every_kind_says_what_it_is_in_openrlhf():
    """Every registered kind translates (its entry's translators) or is refused in one line naming it; a translated
    advantage kind names its estimator in its settings or its gap (the parser test below reads it there)."""
    cfg = C.translation_for(load_specs(SPEC_DIR)["grpo"], 32).requested
    for slot, kinds in REGISTRY.items():
        for name, kind in kinds.items():
            params = {k: f.default for k, f in kind.params.model_fields.items() if not f.is_required()}
            if len(params) < len(kind.params.model_fields):  # the KL's beta and estimator: GRPO's
                params = dict(cfg.components[slot].params)
            changed = C._with(cfg, slot, name, kind.resolve(params, 32) if kind.resolve else params)
            if "openrlhf" not in kind.translators:
                with pytest.raises(ValueError, match=rf"^{slot} kind '{name}' has no OpenRLHF translation yet$"):
                    C.translate(changed, max_new_tokens=32)
            elif slot == "advantage":
                assert openrlhf_value(C.translate(changed, max_new_tokens=32), slot, "algo.advantage.estimator")


def flag_values(args: list[str], flag: str) -> list[str]:
    """The values after ``flag`` up to the next flag ([] for a switch); KeyError if absent."""
    i = args.index(flag)
    values = []
    for item in args[i + 1:]:
        if item.startswith("--"):
            break
        values.append(item)
    return values


def test_the_shipped_specs_split_into_exact_and_approximated():
    specs = load_specs(SPEC_DIR)
    for name in sorted(EXACT | APPROXIMATED):
        t = C.translation_for(specs[name], 32)
        assert (not t.gaps) == (name in EXACT), (name, t.gaps)


def test_dapo_flags_hand_checked():
    args = C.build_command("dapo").openrlhf_args
    assert flag_values(args, "--algo.advantage.estimator") == ["group_norm"]
    assert flag_values(args, "--actor.eps_clip_low_high") == ["0.2", "0.28"]
    assert flag_values(args, "--actor.loss_agg_mode") == ["token-mean"]
    assert flag_values(args, "--algo.kl.init_coef") == ["0"]
    assert flag_values(args, "--algo.dynamic_filtering_enable") == []
    assert flag_values(args, "--algo.dynamic_filtering_range") == ["0", "1"]
    # the paper's cache: a fifth of the budget, round(0.2 * 32) = 6; the floor of 0.5 against a 1/0 reward
    assert flag_values(args, "--reward.overlong_buffer_len") == ["6"]
    assert flag_values(args, "--reward.overlong_penalty_factor") == ["0.5"]
    assert flag_values(args, "--rollout.max_new_tokens") == ["32"]
    # 16 prompts x 8 samples = 128 per rollout, one minibatch of all 128, 2 epochs (the spec's defaults)
    assert flag_values(args, "--rollout.batch_size") == ["16"]
    assert flag_values(args, "--rollout.n_samples_per_prompt") == ["8"]
    assert flag_values(args, "--train.batch_size") == ["128"]
    assert flag_values(args, "--train.max_epochs") == ["2"]
    assert flag_values(args, "--data.max_samples") == [str(150 * 16)]
    assert "--algo.kl.use_loss" not in args and "--critic.model_name_or_path" not in args


def test_gspo_uses_the_sequence_loss_with_its_tiny_clip():
    args = C.build_command("gspo").openrlhf_args
    assert flag_values(args, "--actor.policy_loss_type") == ["gspo"]
    assert flag_values(args, "--actor.eps_clip_low_high") == ["0.0003", "0.0004"]


@pytest.mark.parametrize("name, slot, words", [
    ("dr_grpo", "aggregation", "constant"),
    ("dapo_dr", "aggregation", "constant"),
    ("grpo", "kl", "token mean"),
    ("ppo", "advantage", "centres GAE"),
    ("reinforce", "advantage", "mean of the returns over the batch's tokens"),
])
def test_a_gap_is_refused_with_its_name_and_nearest_approximation(name, slot, words):
    with pytest.raises(C.ApproximationRefused) as err:
        C.build_command(name)
    message = str(err.value)
    assert f"cannot run {name} exactly" in message and f"- {slot}:" in message and words in message
    assert "nearest approximation:" in message and "--accept-approximation" in message
    cmd = C.build_command(name, accept_approximation=True)
    assert [g.slot for g in cmd.translation.gaps] == [slot]


def test_dr_grpo_approximation_runs_token_mean_and_says_so():
    cmd = C.build_command("dr_grpo", accept_approximation=True)
    assert flag_values(cmd.openrlhf_args, "--algo.advantage.estimator") == ["dr_grpo"]
    assert flag_values(cmd.openrlhf_args, "--actor.loss_agg_mode") == ["token-mean"]
    assert cmd.translation.requested.kind("aggregation") == "constant_normalizer"
    assert cmd.translation.effective.kind("aggregation") == "token_mean"
    manifest = cmd.manifest()
    assert manifest["approximation_accepted"] and manifest["effective_config"]["components"]["aggregation"] == {
        "kind": "token_mean", "params": {}}


def test_reinforce_trains_once_per_rollout_so_the_ratio_is_one():
    args = C.build_command("reinforce", accept_approximation=True).openrlhf_args
    assert flag_values(args, "--train.max_epochs") == ["1"]
    assert flag_values(args, "--train.batch_size") == ["128"]  # all 16 x 8 samples: one optimizer step
    assert flag_values(args, "--algo.advantage.no_std_norm") == []


def test_ppo_has_a_critic_and_gae_parameters():
    args = C.build_command("ppo", accept_approximation=True).openrlhf_args
    assert flag_values(args, "--algo.advantage.estimator") == ["gae"]
    assert flag_values(args, "--algo.advantage.lambd") == ["0.95"]
    assert flag_values(args, "--critic.value_clip") == ["0.2"]
    assert flag_values(args, "--critic.adam.lr") == ["0.0005"]  # the spec's run default critic_lr
    assert flag_values(args, "--algo.kl.init_coef") == ["0.02"] and "--algo.kl.use_loss" not in args


def test_a_spec_with_the_population_std_is_a_gap(tmp_path):
    text = (SPEC_DIR / "grpo.yaml").read_text().replace("std_ddof: 1", "std_ddof: 0").replace("id: grpo", "id: grpo_n")
    spec = tmp_path / "grpo_n.yaml"
    spec.write_text(text)
    with pytest.raises(C.ApproximationRefused, match=r"population std.*sample std \(n - 1\)"):
        C.build_command(str(spec))


# ---------------------------------------------------------------------------------------------
# OpenRLHF's own parser
# ---------------------------------------------------------------------------------------------

class _Parsed(Exception):
    def __init__(self, parsed):
        super().__init__("parsed")
        self.parsed = parsed


def parse_with_openrlhf(args: list[str], monkeypatch):
    from openrlhf_support import require_openrlhf

    require_openrlhf()
    import ray

    import openrlhf.utils

    def stop(parsed):
        raise _Parsed(parsed)

    monkeypatch.setattr(ray, "is_initialized", lambda: True)  # train() would otherwise start Ray
    monkeypatch.setattr(openrlhf.utils, "get_strategy", stop)  # the first thing train() does after that
    monkeypatch.setattr(sys, "argv", [C.ENTRY_MODULE, *args])
    with pytest.raises(_Parsed) as caught:
        runpy.run_module(C.ENTRY_MODULE, run_name="__main__")
    return caught.value.parsed


@pytest.mark.specs
@pytest.mark.parametrize("name", SPECS)
def test_openrlhf_0_11_2_parses_every_command_as_the_spec_says(name, monkeypatch):
    cmd = C.build_command(name, accept_approximation=True)
    a = parse_with_openrlhf(cmd.openrlhf_args, monkeypatch)
    eff = cmd.translation.effective
    kinds = {slot: eff.kind(slot) for slot in eff.components}
    assert a.algo.advantage.estimator == openrlhf_value(cmd.translation, "advantage", "algo.advantage.estimator")
    low, high = clip_bounds(eff)
    if low is None:  # no clip: only with no ratio (REINFORCE), where OpenRLHF's default clip never acts
        assert kinds["ratio"] == "none"
        low = high = 0.2
    assert tuple(a.actor.eps_clip_low_high) == pytest.approx((low, high))
    assert a.actor.policy_loss_type == ("gspo" if kinds["ratio"] == "sequence" else "ppo")
    assert a.actor.loss_agg_mode == openrlhf_value(cmd.translation, "aggregation", "actor.loss_agg_mode")
    if kinds["kl"] == "none":
        assert a.algo.kl.init_coef == 0
    else:
        assert a.algo.kl.init_coef == eff.param("kl", "beta")
        assert a.algo.kl.estimator == eff.param("kl", "estimator")
        assert a.algo.kl.use_loss == (kinds["kl"] == "in_loss")
    assert a.algo.dynamic_filtering_enable == (kinds["filter"] == "dynamic_sampling")
    if kinds["shaping"] == "overlong":
        assert a.reward.overlong_buffer_len == eff.param("shaping", "cache_length")
    else:
        assert a.reward.overlong_buffer_len is None
    assert (a.critic.model_name_or_path is not None) == (kinds["advantage"] == "gae")
    assert a.rollout.n_samples_per_prompt == 8 and a.rollout.batch_size == 16
    assert a.reward.remote_url == [str(C.REWARD_FILE)]


def test_the_tap_command_passes_the_same_flags_through_the_launcher():
    cmd = C.build_command("dapo", tap_dir="work/tap", tap_fraction=0.5)
    cut = cmd.argv.index("--")
    assert cmd.argv[:cut] == ["python", "-m", C.LAUNCH_MODULE, "--tap-dir", "work/tap", "--tap-fraction", "0.5"]
    assert cmd.argv[cut + 1:] == cmd.openrlhf_args


# ---------------------------------------------------------------------------------------------
# The command line
# ---------------------------------------------------------------------------------------------

def test_cli_prints_an_exact_command(capsys):
    assert cli.main(["openrlhf", "command", "dapo", "--no-tap", "--gpus-per-node", "4"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("# dapo on OpenRLHF 0.11.2 (exact up to the notes below)")
    assert "python -m openrlhf.cli.train_ppo_ray \\\n" in out and "--actor.num_gpus_per_node 4" in out


def test_cli_refuses_a_gap_and_accepts_it_on_request(capsys):
    assert cli.main(["openrlhf", "command", "dr_grpo"]) == 2
    err = capsys.readouterr().err
    assert "cannot run dr_grpo exactly" in err and "aggregation" in err and "token-mean" in err
    assert cli.main(["openrlhf", "command", "dr_grpo", "--accept-approximation", "--json"]) == 0
    manifest = json.loads(capsys.readouterr().out)
    assert manifest["gaps"][0]["slot"] == "aggregation" and manifest["argv"][2] == C.LAUNCH_MODULE


def test_cli_names_an_unknown_algorithm(capsys):
    assert cli.main(["openrlhf", "command", "grpo2"]) == 2
    assert "unknown algorithm 'grpo2'" in capsys.readouterr().err


def test_train_engine_openrlhf_dry_run_and_version_guard(capsys, monkeypatch, tmp_path):
    assert cli.main(["train", "dapo", "--engine", "openrlhf", "--dry-run", "--steps", "20"]) == 0
    out = capsys.readouterr().out
    assert C.LAUNCH_MODULE in out and f"--data.max_samples {20 * 16}" in out
    assert cli.main(["train", "grpo", "--engine", "openrlhf", "--tensorboard-dir", str(tmp_path / "tb")]) == 2
    assert "cannot run grpo exactly" in capsys.readouterr().err
    import unipo_build.trainers.openrlhf as pkg

    monkeypatch.setattr(pkg, "installed_version", lambda: "0.10.2")
    assert cli.main(["train", "dapo", "--engine", "openrlhf", "--tensorboard-dir", str(tmp_path / "tb")]) == 2
    err = capsys.readouterr().err
    assert "OpenRLHF 0.10.2 is installed" in err and "exactly 0.11.2" in err
    assert not (tmp_path / "tap").exists()  # nothing written before the guard passes


def test_train_refuses_openrlhf_options_without_the_engine(capsys, tmp_path):
    """The in-house trainer has no --group-size, --temperature, ...: given without --engine openrlhf they are
    refused in one line before anything is loaded or written, not silently ignored."""
    out = tmp_path / "run"
    assert cli.main(["train", "grpo", "--group-size", "4", "--temperature", "0.7", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("--group-size, --temperature: OpenRLHF run options, used with --engine openrlhf only")
    assert cli.main(["train", "grpo", "--no-tap", "--out", str(out)]) == 2
    assert capsys.readouterr().err.startswith("--no-tap: an OpenRLHF run option, used with --engine openrlhf only")
    assert not out.exists()


@pytest.mark.specs
def test_guide_commands_run_as_documented(capsys):
    """`unipo openrlhf command` lines of the guide as written; its generated per-algorithm lines as dry runs."""
    import shlex

    from cli_helpers import guide_commands
    from unipo_build.site.pages.guides.openrlhf_guide import train_commands

    builder = [c for c in guide_commands("openrlhf.md") if c.startswith("unipo openrlhf command ")]
    assert builder == ["unipo openrlhf command dr_grpo", "unipo openrlhf command dr_grpo --accept-approximation"]
    assert [cli.main(shlex.split(c)[1:]) for c in builder] == [2, 0]
    capsys.readouterr()
    generated = train_commands("gpu")
    assert len(generated) == len(SPECS)
    for line in generated:
        assert cli.main([*shlex.split(line)[1:], "--dry-run"]) == 0, line
        assert "--actor.num_gpus_per_node 8" in capsys.readouterr().out


def test_train_engine_openrlhf_writes_the_manifest_and_runs_with_absolute_paths(capsys, monkeypatch, tmp_path):
    import subprocess

    import unipo_build.trainers.openrlhf as pkg

    ran = []
    monkeypatch.setattr(pkg, "installed_version", lambda: "0.11.2")
    monkeypatch.setattr(C, "cuda_gpus", lambda: 8)
    monkeypatch.setattr(C, "vllm_version", lambda: "0.29.0")
    monkeypatch.setattr(subprocess, "call", lambda argv: ran.append(argv) or 0)
    model = tmp_path / "sft-gpu"
    model.mkdir()
    (model / "config.json").write_text("{}")
    tap = tmp_path / "tap"
    assert cli.main(["train", "dapo", "--engine", "openrlhf", "--model", str(model), "--tap-dir", str(tap)]) == 0
    (argv,) = ran
    assert argv[:3] == [sys.executable, "-m", C.LAUNCH_MODULE] and argv[4] == str(tap)
    args = argv[argv.index("--") + 1:]
    assert flag_values(args, "--reward.remote_url") == [str(ROOT / "training" / "reward.py")]
    assert flag_values(args, "--actor.model_name_or_path") == [str(model)]
    manifest = json.loads((tap / "manifest.json").read_text())
    assert manifest["algorithm"] == "dapo" and manifest["argv"] == argv and manifest["gaps"] == []
    assert f"--tap {tap}" in capsys.readouterr().out


def test_preset_prompts_come_from_the_rl_pool_of_its_task(tmp_path, monkeypatch):
    """A version-3 task directory (or one not made yet, which will be) gives RL the RL pool; a
    version-2 one, with no rl.jsonl, its train.jsonl; the held-out set is the preset's eval.jsonl;
    --eval-dataset '' means none."""
    (tmp_path / "data" / "algorithms").mkdir(parents=True)
    monkeypatch.setenv("UNIPO_ROOT", str(tmp_path))
    gpu = C.RunOptions.from_preset("gpu")
    assert (gpu.prompts, gpu.eval_dataset) == ("data/tasks-gpu/rl.jsonl", "data/tasks-gpu/eval.jsonl")
    tasks = tmp_path / "data" / "tasks"
    tasks.mkdir()
    (tasks / "train.jsonl").write_text("")
    assert C.RunOptions.from_preset("tiny").prompts == "data/tasks/train.jsonl"
    (tasks / "rl.jsonl").write_text("")
    assert C.RunOptions.from_preset("tiny").prompts == "data/tasks/rl.jsonl"
    assert C.RunOptions.from_preset("tiny", prompts="mine.jsonl").prompts == "mine.jsonl"
    monkeypatch.delenv("UNIPO_ROOT")
    assert "--eval.dataset" not in C.build_command("dapo", C.RunOptions.from_preset("tiny", eval_dataset="")).openrlhf_args
    assert "--eval.dataset" in C.build_command("dapo", C.RunOptions.from_preset("tiny")).openrlhf_args


def test_a_rollout_correction_is_a_named_gap_not_silently_dropped():
    """grpo_tis (GRPO with truncated IS against the sampler): OpenRLHF has the correction, but the UNIPO tap does
    not record its rollout log-probs, so the command refuses it by name; accepted, OpenRLHF runs without it
    (no --algo.advantage.is_correction_* flag) and the effective config says so."""
    specs = load_specs(SPEC_DIR)
    if "grpo_tis" not in specs:
        pytest.skip("no grpo_tis spec")
    with pytest.raises(C.ApproximationRefused) as err:
        C.build_command("grpo_tis")
    assert "- correction: the spec asks for the rollout correction truncated_is" in str(err.value)
    cmd = C.build_command("grpo_tis", accept_approximation=True)
    assert "correction" in [g.slot for g in cmd.translation.gaps]
    assert not any(a.startswith("--algo.advantage.is_correction") for a in cmd.openrlhf_args)
    assert cmd.translation.requested.kind("correction") == "truncated_is"
    assert cmd.translation.effective.kind("correction") == "none"


def test_dppos_mask_is_a_gap_nearest_ppos_clip_at_its_tightest_bounds(tmp_path):
    """OpenRLHF 0.11.2 has no DPPO loss: a spec with prime-rl's mask (delta_low 0.2, delta_high 0.3) is refused by
    name; accepted, it runs PPO's clip at the ratios where the mask acts on a token of probability 1, 1 - 0.2 = 0.8
    and 1 + 0.3 = 1.3 (every other token's mask acts further out)."""
    import yaml

    data = yaml.safe_load((SPEC_DIR / "grpo.yaml").read_text())
    data["id"] = "grpo_dppo"
    data["components"]["clip"] = {"kind": "dppo_mask", "params": {"delta_low": 0.2, "delta_high": 0.3},
                                  "explanation": "prime-rl's default mask."}
    spec = tmp_path / "grpo_dppo.yaml"
    spec.write_text(yaml.safe_dump(data, sort_keys=False))
    with pytest.raises(C.ApproximationRefused) as err:
        C.build_command(str(spec))
    assert "- clip: the spec asks for DPPO's mask on the change of each token's probability" in str(err.value)
    cmd = C.build_command(str(spec), accept_approximation=True)
    assert flag_values(cmd.openrlhf_args, "--actor.eps_clip_low_high") == ["0.2", "0.3"]
    assert cmd.translation.effective.kind("clip") == "asymmetric"
    assert clip_bounds(cmd.translation.effective) == (0.2, 0.3)
