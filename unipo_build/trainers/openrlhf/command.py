"""An algorithm spec plus run options -> an OpenRLHF 0.11.2 ``train_ppo_ray`` command line.

The translation goes slot by slot through the resolved spec (``unipo_build.core.specs``) and emits
OpenRLHF's dotted flags. Each slot is one of:

- exact: OpenRLHF computes what the spec says (GRPO's group z-score is ``group_norm``, DAPO's
  clip-higher is ``--actor.eps_clip_low_high``, ...). Differences only in numerical guards
  (OpenRLHF adds 1e-9 to the group std, clamps log-ratios at +-20 and KL estimates at +-10) are
  listed as notes, not gaps: the parity test holds both to 1e-6 where the guards do not act.
- a gap: OpenRLHF cannot express the spec (Dr. GRPO's constant normaliser, REINFORCE without
  whitening, ...). The translation names the gap and the nearest approximation OpenRLHF offers.
  ``build_command`` refuses a spec with gaps unless ``accept_approximation`` is set, and the
  approximation actually run is recorded in the tap's manifest, so the imported run shows what
  was trained rather than what was asked for.

The run's own options (model, data, batch shape, learning rate, cluster layout) come from
``RunOptions``. Their names follow the in-house trainer's (``unipo train``) so the same words mean
the same thing in both: a rollout is ``prompts_per_step`` prompts x ``group_size`` samples, trained
for ``epochs`` passes of ``minibatches`` optimizer steps each.
"""

from __future__ import annotations

import json
import math
import os
import shlex
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from unipo_build.core import project
from unipo_build.core.file_names import HELDOUT_POOL, RL_POOL, SFT_POOL
from unipo_build.core.specs import (
    AlgorithmSpec,
    ResolvedAlgorithm,
    ResolvedComponent,
    load_algorithm,
    resolve,
)
from unipo_build.trainers.openrlhf import OPENRLHF_VERSION, TAP_FORMAT

ENTRY_MODULE = "openrlhf.cli.train_ppo_ray"
LAUNCH_MODULE = "unipo_build.trainers.openrlhf.launch"
REWARD_FILE = "training/reward.py"  # relative to the checkout; `unipo train --engine openrlhf` makes paths absolute
PATH_OPTIONS = ("model", "prompts", "eval_dataset", "reward_file", "save_path", "tensorboard_dir")


class ApproximationRefused(ValueError):
    """The spec has gaps OpenRLHF cannot express and the user has not accepted the approximations."""

    def __init__(self, algorithm: str, gaps: list["Gap"]):
        self.algorithm = algorithm
        self.gaps = gaps
        lines = [f"OpenRLHF {OPENRLHF_VERSION} cannot run {algorithm} exactly:"]
        for gap in gaps:
            lines.append(f"  - {gap.slot}: the spec asks for {gap.spec_says}; OpenRLHF{gap.why}.")
            lines.append(f"    nearest approximation: {gap.nearest} ({' '.join(gap.flags) or 'no extra flag'})")
        lines.append("Re-run with --accept-approximation to train the approximation; the run's header will record "
                     "the components actually trained and these gaps.")
        super().__init__("\n".join(lines))


@dataclass(frozen=True)
class Gap:
    """One place where OpenRLHF cannot do what the spec says."""

    slot: str
    spec_says: str
    why: str
    nearest: str
    flags: tuple[str, ...] = ()

    def as_dict(self) -> dict:
        return {"slot": self.slot, "spec_says": self.spec_says, "why": self.why, "nearest": self.nearest,
                "flags": list(self.flags)}


def has_rl_pool(task_dir: str) -> bool:
    """Whether RL prompts come from the task directory's RL pool (rl.jsonl): it has one, or it does not
    exist yet and will be made with one (generator version 3). A version-2 directory has only the
    SFT pool (train.jsonl), which its runs drew RL prompts from."""
    try:
        path = project.find_root() / task_dir
    except project.ProjectError:
        return True
    return (path / RL_POOL).is_file() or not (path / SFT_POOL).is_file()


@dataclass
class RunOptions:
    """What a run needs besides the algorithm. Defaults match the in-house trainer's tiny preset."""

    model: str = "work/sft-tiny"  # actor (and reference, and critic) checkpoint: a local HF directory
    # JSONL with the prompt and label keys below; from_preset takes the preset's task directory's RL pool
    prompts: str = f"data/tasks/{SFT_POOL}"
    eval_dataset: str | None = f"data/tasks/{HELDOUT_POOL}"
    input_key: str = "prompt"
    label_key: str = "answer"
    reward_file: str = REWARD_FILE
    prompts_per_step: int = 16
    group_size: int = 8
    max_new_tokens: int = 32
    max_len: int = 256  # prompt + response
    rollouts: int | None = 150  # caps the prompts read: rollouts x prompts_per_step
    epochs: int | None = None  # default: the spec's run defaults
    minibatches: int | None = None
    lr: float = 1e-4
    critic_lr: float | None = None  # default: the spec's run defaults, else 9e-6 (OpenRLHF's)
    betas: tuple[float, float] = (0.9, 0.999)
    grad_clip: float = 1.0
    temperature: float = 1.0
    seed: int = 0
    micro_batch_size: int = 8  # per GPU, for both experience making and training
    nodes: int = 1
    gpus_per_node: int = 8
    vllm_engines: int | None = None  # default: one per GPU (colocated with the models)
    colocate: bool = True  # the hybrid engine: vLLM and every model share the same GPUs, taking turns
    save_path: str = "work/openrlhf/ckpt"
    tensorboard_dir: str = "work/openrlhf/tensorboard"
    run_name: str | None = None
    eval_every: int | None = 50  # rollouts between held-out evaluations
    eval_samples_per_prompt: int = 1

    @classmethod
    def from_preset(cls, name: str, **changes) -> "RunOptions":
        """The in-house trainer's preset (training/presets.py) as OpenRLHF run options."""
        from unipo_build.core.presets import get_preset

        preset = get_preset(name)
        rl = preset.rl
        tasks = preset.task_dir
        base = dict(model=f"work/sft-{name}", prompts=f"{tasks}/{RL_POOL if has_rl_pool(tasks) else SFT_POOL}",
                    eval_dataset=f"{tasks}/{HELDOUT_POOL}", prompts_per_step=rl.prompts_per_step,
                    group_size=rl.group_size,
                    max_new_tokens=rl.max_new_tokens, lr=rl.lr, betas=tuple(rl.betas), grad_clip=rl.grad_clip,
                    temperature=rl.temperature, rollouts=rl.steps, eval_every=rl.eval_every, seed=rl.seed)
        base.update({k: v for k, v in changes.items() if v is not None})
        return cls(**base)

    def absolute(self) -> "RunOptions":
        """The same options with every path made absolute (Ray workers have their own working directory)."""
        changes = {}
        for name in PATH_OPTIONS:
            value = getattr(self, name)
            if value:
                changes[name] = str(Path(value).resolve())
        return replace(self, **changes)

    def resolved_epochs(self, spec: AlgorithmSpec) -> int:
        return self.epochs if self.epochs is not None else spec.defaults.epochs

    def resolved_minibatches(self, spec: AlgorithmSpec) -> int:
        return self.minibatches if self.minibatches is not None else spec.defaults.minibatches


@dataclass
class Translation:
    """The algorithm's flags, its gaps, its notes and the components OpenRLHF will actually run."""

    algorithm: str
    requested: ResolvedAlgorithm
    effective: ResolvedAlgorithm
    flags: list[str] = field(default_factory=list)
    gaps: list[Gap] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    single_update: bool = False  # REINFORCE: one optimizer step per rollout, one epoch


def _with(cfg: ResolvedAlgorithm, slot: str, kind: str, params: dict | None = None) -> ResolvedAlgorithm:
    components = dict(cfg.components)
    components[slot] = ResolvedComponent(kind=kind, params=params or {})
    return ResolvedAlgorithm(id=cfg.id, name=cfg.name, components=components)


def _fmt(value: float) -> str:
    """A float flag value as Python writes it (0.2, 1.0, 1e-06): argparse reads it back exactly."""
    return repr(float(value))


def translate(cfg: ResolvedAlgorithm, *, max_new_tokens: int) -> Translation:
    """Slot by slot: the OpenRLHF flags for ``cfg``, where they fall short, and what runs instead."""
    t = Translation(algorithm=cfg.id, requested=cfg, effective=cfg)
    eff = cfg
    kind = {slot: comp.kind for slot, comp in cfg.components.items()}
    par = {slot: dict(comp.params) for slot, comp in cfg.components.items()}

    # --- advantage -----------------------------------------------------------------------
    adv, p = kind["advantage"], par["advantage"]
    if adv == "group_zscore":
        t.flags += ["--algo.advantage.estimator", "group_norm"]
        t.notes.append(f"group_norm divides by std + 1e-9 (the spec's eps is {p.get('eps', 1e-6):g}); equal "
                       "rewards give advantage 0 in both")
        if p.get("std_ddof", 1) != 1:
            t.gaps.append(Gap("advantage", "the population std (n) of each group's rewards",
                              "'s group_norm uses torch's sample std (n - 1)",
                              "group_norm with the sample std: every advantage scaled by sqrt((G-1)/G)",
                              ("--algo.advantage.estimator", "group_norm")))
            eff = _with(eff, "advantage", "group_zscore", {**p, "std_ddof": 1})
    elif adv == "group_mean":
        t.flags += ["--algo.advantage.estimator", "dr_grpo"]
    elif adv == "group_mean_batch_std":
        t.flags += ["--algo.advantage.estimator", "dr_grpo"]
        t.gaps.append(Gap("advantage", "the group mean subtracted, divided by the std of every reward in the batch",
                          " has no estimator that divides by the batch's reward std",
                          "dr_grpo (the group mean subtracted, no division): every advantage is the batch std + eps "
                          "times the spec's", ("--algo.advantage.estimator", "dr_grpo")))
        eff = _with(eff, "advantage", "group_mean")
    elif adv == "leave_one_out":
        t.flags += ["--algo.advantage.estimator", "rloo"]
    elif adv == "gae":
        t.flags += ["--algo.advantage.estimator", "gae", "--algo.advantage.gamma", _fmt(p.get("gamma", 1.0)),
                    "--algo.advantage.lambd", _fmt(p.get("lam", 0.95)), "--algo.advantage.no_std_norm"]
        if p.get("value_clip") is not None:
            t.flags += ["--critic.value_clip", _fmt(p["value_clip"])]
        else:
            t.gaps.append(Gap("advantage", "an unclipped value loss", " always clips the value loss (its "
                              "--critic.value_clip has no off switch)", "a value clip of 1e6, which never acts",
                              ("--critic.value_clip", "1000000.0")))
            t.flags += ["--critic.value_clip", "1000000.0"]
        t.gaps.append(Gap("advantage", "GAE advantages used as computed",
                          " centres GAE advantages over the batch's tokens, and also divides by their std unless "
                          "--algo.advantage.no_std_norm", "GAE minus its batch mean over tokens (no_std_norm): the "
                          "smallest change it allows, near zero for a good critic",
                          ("--algo.advantage.no_std_norm",)))
    elif adv == "whitened_return":
        t.flags += ["--algo.advantage.estimator", "reinforce", "--algo.advantage.gamma", _fmt(p.get("gamma", 1.0))]
        t.notes.append("reinforce whitens with rsqrt(max(var, 1e-8)) over the batch's tokens (the spec adds "
                       f"eps {p.get('eps', 1e-6):g} to the std)")
    elif adv == "reinforce_return":
        gamma = _fmt(p.get("gamma", 1.0))
        t.flags += ["--algo.advantage.estimator", "reinforce", "--algo.advantage.gamma", gamma,
                    "--algo.advantage.no_std_norm"]
        if p.get("baseline", "batch_mean") == "batch_mean":
            t.gaps.append(Gap("advantage", "the return minus the batch's mean reward (each response counted once)",
                              " can only subtract the mean of the returns over the batch's tokens, so a long "
                              "response weighs more in the baseline", "reinforce with --algo.advantage.no_std_norm "
                              "(returns minus their token mean, no whitening)",
                              ("--algo.advantage.estimator", "reinforce", "--algo.advantage.no_std_norm")))
        else:
            t.gaps.append(Gap("advantage", "the plain return with no baseline and no whitening",
                              " always centres reinforce returns over the batch (no_std_norm keeps only the "
                              "centring)", "reinforce with --algo.advantage.no_std_norm (returns minus their "
                              "token mean)", ("--algo.advantage.estimator", "reinforce", "--algo.advantage.no_std_norm")))
    else:
        raise ValueError(f"advantage kind {adv!r} has no OpenRLHF translation yet")

    t.notes.append("rewards after the baseline (and before any KL in the reward) are clamped to [-10, 10] "
                   "(--reward.clip_range)")

    # --- ratio and clip ------------------------------------------------------------------
    ratio, clip, cp = kind["ratio"], kind["clip"], par["clip"]
    if ratio == "token":
        t.flags += ["--actor.policy_loss_type", "ppo"]
        t.notes.append("log-ratios are clamped to [-20, 20] before exp")
    elif ratio == "sequence":
        t.flags += ["--actor.policy_loss_type", "gspo"]
    elif ratio == "none":
        # pi / sg(pi) has the value 1 and the gradient of log pi: OpenRLHF's ratio exp(logp - old_logp) is
        # exactly that on the first update after sampling, so one update per rollout makes it exact.
        t.flags += ["--actor.policy_loss_type", "ppo"]
        t.single_update = True
        t.notes.append("no ratio: one epoch and one optimizer step per rollout, so OpenRLHF's ratio exp(logp - "
                       "old_logp) is 1 with the gradient of log pi, the REINFORCE estimator (up to the difference "
                       "between the sampling engine's and the trainer's log-probs)")
    else:
        raise ValueError(f"ratio kind {ratio!r} has no OpenRLHF translation yet")
    if clip == "symmetric":
        t.flags += ["--actor.eps_clip", _fmt(cp["eps"])]
    elif clip == "asymmetric":
        t.flags += ["--actor.eps_clip_low_high", _fmt(cp["eps_low"]), _fmt(cp["eps_high"])]
    elif clip == "none":
        if ratio == "none":
            t.notes.append("no clip: at ratio 1 OpenRLHF's default clip never acts")
        else:
            t.gaps.append(Gap("clip", "no clipping of the ratio", " always clips the ratio",
                              "clip bounds so wide they do not act in practice: [1e-6, 1e6]",
                              ("--actor.eps_clip_low_high", "0.999999", "999999.0")))
            t.flags += ["--actor.eps_clip_low_high", "0.999999", "999999.0"]
    elif clip == "dual_clip":
        t.flags += ["--actor.eps_clip_low_high", _fmt(cp["eps_low"]), _fmt(cp["eps_high"]), "--actor.dual_clip", _fmt(cp["c"])]
    elif clip == "cispo":
        low = "0.999999" if cp.get("eps_low") is None else _fmt(cp["eps_low"])
        t.gaps.append(Gap("clip", "CISPO's clipped importance-sampling weight, under which every token keeps its gradient",
                          " has no CISPO loss (--actor.policy_loss_type is ppo or gspo)",
                          "PPO's clip at the same bounds: a token past them loses its gradient instead of keeping a "
                          "capped one", ("--actor.eps_clip_low_high", low, _fmt(cp["eps_high"]))))
        t.flags += ["--actor.eps_clip_low_high", low, _fmt(cp["eps_high"])]
        eff = _with(eff, "clip", "asymmetric", {"eps_low": float(low), "eps_high": cp["eps_high"]})
    elif clip == "sapo":
        t.gaps.append(Gap("clip", "SAPO's soft gate on the ratio", " has no SAPO loss (--actor.policy_loss_type is ppo "
                          "or gspo)", "clip bounds so wide they do not act in practice, [1e-6, 1e6]: the term rho A, "
                          "whose slope the gate has only at rho = 1", ("--actor.eps_clip_low_high", "0.999999", "999999.0")))
        t.flags += ["--actor.eps_clip_low_high", "0.999999", "999999.0"]
        eff = _with(eff, "clip", "asymmetric", {"eps_low": 0.999999, "eps_high": 999999.0})
    elif clip == "geo_mean":
        low, high = round(1.0 - math.exp(-cp["eps_low"]), 6), round(math.expm1(cp["eps_high"]), 6)
        t.gaps.append(Gap("clip", "GMPO's geometric mean of the token ratios, each log-ratio clipped first",
                          " has no GMPO loss (--actor.policy_loss_type is ppo or gspo)",
                          "PPO's token clip at the same ratio bounds, exp(-eps_low) to exp(eps_high): an arithmetic mean "
                          "of the clipped token ratios instead of a geometric one",
                          ("--actor.eps_clip_low_high", _fmt(low), _fmt(high))))
        t.flags += ["--actor.eps_clip_low_high", _fmt(low), _fmt(high)]
        eff = _with(eff, "clip", "asymmetric", {"eps_low": low, "eps_high": high})
    elif clip == "dppo_mask":
        # a token of probability 1 is masked at the ratios 1 - delta_low and 1 + delta_high: PPO's clip there holds
        # every token at least as tightly as the mask does (a less likely one sooner)
        low, high = min(max(cp["delta_low"], 1e-6), 0.999999), max(cp["delta_high"], 1e-6)  # OpenRLHF: 0 < eps < 1
        t.gaps.append(Gap("clip", "DPPO's mask on the change of each token's probability",
                          " has no DPPO loss (--actor.policy_loss_type is ppo or gspo)",
                          "PPO's clip at the ratio bounds the mask has for a token of probability 1, 1 - delta_low and "
                          "1 + delta_high: a less likely token is clipped sooner than the mask would drop it, and a "
                          "clipped token's term stays clip(rho) A instead of 0",
                          ("--actor.eps_clip_low_high", _fmt(low), _fmt(high))))
        t.flags += ["--actor.eps_clip_low_high", _fmt(low), _fmt(high)]
        eff = _with(eff, "clip", "asymmetric", {"eps_low": low, "eps_high": high})
    else:
        raise ValueError(f"clip kind {clip!r} has no OpenRLHF translation yet")

    # --- kl ------------------------------------------------------------------------------
    kl, kp = kind["kl"], par["kl"]
    agg = kind["aggregation"]
    if kl == "none":
        t.flags += ["--algo.kl.init_coef", "0"]
    elif kl in ("in_loss", "in_reward"):
        t.flags += ["--algo.kl.init_coef", _fmt(kp["beta"]), "--algo.kl.estimator", kp["estimator"]]
        if kl == "in_loss":
            t.flags += ["--algo.kl.use_loss"]
            if agg != "token_mean":
                t.gaps.append(Gap("kl", f"the KL term inside each token's objective, aggregated with the policy "
                                  f"term ({agg})", " averages the KL loss over all tokens of the optimizer step "
                                  "(token mean) whatever the policy loss's aggregation",
                                  "the KL term as a token mean next to the policy term's own aggregation",
                                  ("--algo.kl.use_loss",)))
        t.notes.append("KL estimates are clamped to [-10, 10]")
    else:
        raise ValueError(f"kl kind {kl!r} has no OpenRLHF translation yet")

    # --- aggregation -------------------------------------------------------------------
    if ratio == "sequence" and agg != "seq_mean_token_mean":
        t.gaps.append(Gap("aggregation", f"{agg} with a sequence ratio", "'s gspo loss always averages per "
                          "sequence then over sequences", "seq-mean-token-mean"))
        eff = _with(eff, "aggregation", "seq_mean_token_mean")
    elif agg == "seq_mean_token_mean":
        t.flags += ["--actor.loss_agg_mode", "seq-mean-token-mean"]
    elif agg == "token_mean":
        t.flags += ["--actor.loss_agg_mode", "token-mean"]
    elif agg in ("constant_normalizer", "seq_mean_token_sum"):
        says = ("the token objectives summed and divided by a constant (responses x L)" if agg == "constant_normalizer"
                else "the token objectives summed per response, then averaged over responses")
        t.gaps.append(Gap("aggregation", says, " only averages, per token (token-mean) or per sequence "
                          "(seq-mean-token-mean)", "token-mean: the same weight for every token of a step, so the "
                          "gradient's direction is the spec's and only its size changes from step to step (by the "
                          "step's tokens over the spec's denominator)", ("--actor.loss_agg_mode", "token-mean")))
        t.flags += ["--actor.loss_agg_mode", "token-mean"]
        eff = _with(eff, "aggregation", "token_mean")
    else:
        raise ValueError(f"aggregation kind {agg!r} has no OpenRLHF translation yet")

    # --- correction ----------------------------------------------------------------------
    corr = kind.get("correction", "none")
    if corr in ("truncated_is", "masked_is"):
        # OpenRLHF has the correction (--algo.advantage.is_correction_level/mode/threshold), but the UNIPO tap does
        # not record its rollout log-probs, so the trained run's weights could not be recomputed: run without it.
        t.gaps.append(Gap("correction", f"the rollout correction {corr} against the sampler's log-probs",
                          "'s correction (--algo.advantage.is_correction_*) needs vLLM's log-probs, which the UNIPO "
                          "OpenRLHF tap does not record, so its weights could not be recomputed",
                          "no correction (OpenRLHF's default, --algo.advantage.is_correction_level off)"))
        eff = _with(eff, "correction", "none")
    elif corr != "none":
        raise ValueError(f"correction kind {corr!r} has no OpenRLHF translation yet")

    # --- filter --------------------------------------------------------------------------
    flt = kind["filter"]
    if flt == "dynamic_sampling":
        # reward_func returns scores = correctness (0/1): a mean strictly inside (0, 1) is a mixed group.
        t.flags += ["--algo.dynamic_filtering_enable", "--algo.dynamic_filtering_range", "0", "1"]
        t.notes.append("dynamic filtering keeps a group when its mean score (correctness, from reward_func) lies "
                       "strictly inside (0, 1), the spec's rule; OpenRLHF refills until the batch is full instead of "
                       f"stopping after {par['filter'].get('max_rounds', 4)} rounds")
    elif flt != "none":
        raise ValueError(f"filter kind {flt!r} has no OpenRLHF translation yet")

    # --- shaping -------------------------------------------------------------------------
    shp, sp = kind["shaping"], par["shaping"]
    if shp == "overlong":
        t.flags += ["--reward.overlong_buffer_len", str(sp["cache_length"]), "--reward.overlong_penalty_factor",
                    f"{sp.get('penalty', 1.0):g}"]
        if sp["max_length"] != max_new_tokens:
            t.gaps.append(Gap("shaping", f"the overlong penalty ramping up to L_max = {sp['max_length']}",
                              " measures the buffer back from --rollout.max_new_tokens", f"the ramp ending at "
                              f"max_new_tokens = {max_new_tokens}"))
            eff = _with(eff, "shaping", "overlong", {**sp, "max_length": max_new_tokens})
    elif shp != "none":
        raise ValueError(f"shaping kind {shp!r} has no OpenRLHF translation yet")

    t.effective = eff
    return t


def translation_for(spec: AlgorithmSpec, max_new_tokens: int) -> Translation:
    """The spec resolved for this generation budget, then translated."""
    return translate(resolve(spec, max_new_tokens=max_new_tokens), max_new_tokens=max_new_tokens)


def _runtime_flags(spec: AlgorithmSpec, t: Translation, opts: RunOptions) -> list[str]:
    epochs, minibatches = opts.resolved_epochs(spec), opts.resolved_minibatches(spec)
    if t.single_update:
        epochs, minibatches = 1, 1
    samples = opts.prompts_per_step * opts.group_size
    if samples % minibatches:
        raise ValueError(f"{samples} samples per rollout do not split into {minibatches} minibatches")
    gpus = opts.nodes * opts.gpus_per_node
    if (samples // minibatches) % (opts.micro_batch_size * gpus) and samples // minibatches >= gpus:
        raise ValueError(f"a minibatch of {samples // minibatches} samples does not split into micro-batches of "
                         f"{opts.micro_batch_size} on {gpus} GPUs")
    flags = [
        "--actor.model_name_or_path", opts.model,
        "--reward.remote_url", opts.reward_file,
        "--data.prompt_dataset", opts.prompts, "--data.input_key", opts.input_key, "--data.label_key", opts.label_key,
        "--data.max_len", str(opts.max_len),
        "--rollout.batch_size", str(opts.prompts_per_step), "--rollout.n_samples_per_prompt", str(opts.group_size),
        "--rollout.max_new_tokens", str(opts.max_new_tokens), "--rollout.temperature", _fmt(opts.temperature),
        "--rollout.micro_batch_size", str(opts.micro_batch_size),
        "--train.batch_size", str(samples // minibatches), "--train.micro_batch_size", str(opts.micro_batch_size),
        "--train.max_epochs", str(epochs), "--train.num_episodes", "1", "--train.seed", str(opts.seed),
        "--actor.adam.lr", _fmt(opts.lr), "--actor.adam.betas", _fmt(opts.betas[0]), _fmt(opts.betas[1]),
        "--actor.adam.weight_decay", "0", "--actor.lr_scheduler", "constant", "--actor.lr_warmup_ratio", "0",
        "--actor.max_norm", _fmt(opts.grad_clip),
        "--actor.entropy_coef", "0",  # 0: entropy computed and logged (the tap records it), no entropy bonus
        "--actor.num_nodes", str(opts.nodes), "--actor.num_gpus_per_node", str(opts.gpus_per_node),
        "--ref.num_nodes", str(opts.nodes), "--ref.num_gpus_per_node", str(opts.gpus_per_node),
        "--ds.zero_stage", "2", "--ds.param_dtype", "bf16",
        "--logger.tensorboard_dir", opts.tensorboard_dir, "--logger.wandb.run_name", opts.run_name,
        "--logger.logging_steps", "1",
        "--ckpt.output_dir", opts.save_path, "--ckpt.path", str(Path(opts.save_path) / "checkpoints"),
    ]
    if opts.rollouts is not None:
        flags += ["--data.max_samples", str(opts.rollouts * opts.prompts_per_step)]
    if spec.components["advantage"].kind == "gae":
        critic_lr = opts.critic_lr if opts.critic_lr is not None else spec.defaults.critic_lr or 9e-6
        flags += ["--critic.model_name_or_path", opts.model, "--critic.adam.lr", _fmt(critic_lr),
                  "--critic.adam.betas", _fmt(opts.betas[0]), _fmt(opts.betas[1]),
                  "--critic.lr_scheduler", "constant", "--critic.lr_warmup_ratio", "0",
                  "--critic.num_nodes", str(opts.nodes), "--critic.num_gpus_per_node", str(opts.gpus_per_node)]
    engines = opts.vllm_engines if opts.vllm_engines is not None else gpus
    flags += ["--vllm.num_engines", str(engines), "--vllm.tensor_parallel_size", "1"]
    if opts.colocate:
        flags += ["--train.colocate_all", "--vllm.enable_sleep", "--ds.enable_sleep",
                  "--vllm.gpu_memory_utilization", "0.5"]
    if opts.eval_dataset:
        flags += ["--eval.dataset", opts.eval_dataset, "--eval.temperature", _fmt(opts.temperature),
                  "--eval.n_samples_per_prompt", str(opts.eval_samples_per_prompt)]
        if opts.eval_every:
            flags += ["--eval.steps", str(opts.eval_every)]
    return flags


@dataclass
class Command:
    """A complete command: the argv to run, and everything the tap's manifest records about it."""

    algorithm: str
    argv: list[str]
    openrlhf_args: list[str]
    translation: Translation
    options: RunOptions
    tap_dir: str | None = None

    def shell(self) -> str:
        return " \\\n    ".join(_wrap_pairs(self.argv))

    def manifest(self) -> dict:
        t = self.translation
        return {
            "format": TAP_FORMAT,
            "openrlhf_version": OPENRLHF_VERSION,
            "algorithm": self.algorithm,
            "requested_config": t.requested.model_dump(mode="json"),
            "effective_config": t.effective.model_dump(mode="json"),
            "gaps": [g.as_dict() for g in t.gaps],
            "approximation_accepted": bool(t.gaps),
            "notes": t.notes,
            "options": {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(self.options).items()},
            "openrlhf_args": self.openrlhf_args,
        }


def _wrap_pairs(argv: list[str]) -> list[str]:
    """One line for the program (``python -m module``), then one per flag with its values."""
    parts: list[str] = []
    for item in argv:
        quoted = shlex.quote(item)
        joins = len(parts) == 1 or parts and parts[-1].startswith("--") and parts[-1] != "--"
        if joins and not item.startswith("--"):
            parts[-1] += " " + quoted
        else:
            parts.append(quoted)
    return parts


def build_command(algorithm: str | AlgorithmSpec, opts: RunOptions | None = None, *,
                  accept_approximation: bool = False, tap_dir: str | None = None, tap_fraction: float = 0.25,
                  python: str | None = None) -> Command:
    """The command that trains ``algorithm`` on OpenRLHF 0.11.2.

    With ``tap_dir`` the command goes through ``unipo_build.trainers.openrlhf.launch``, which starts Ray with
    the token tap in every worker and then runs OpenRLHF's own entry point with the same arguments.
    Raises ApproximationRefused when the spec has gaps and ``accept_approximation`` is False.
    """
    opts = opts or RunOptions()
    spec = algorithm if isinstance(algorithm, AlgorithmSpec) else load_algorithm(algorithm)
    if opts.run_name is None:  # the TensorBoard subdirectory, and the imported run's id
        opts = replace(opts, run_name=f"{spec.id}-openrlhf-s{opts.seed}")
    t = translation_for(spec, opts.max_new_tokens)
    if t.gaps and not accept_approximation:
        raise ApproximationRefused(spec.id, t.gaps)
    args = t.flags + _runtime_flags(spec, t, opts)
    python = python or "python"
    if tap_dir is None:
        argv = [python, "-m", ENTRY_MODULE, *args]
    else:
        argv = [python, "-m", LAUNCH_MODULE, "--tap-dir", tap_dir, "--tap-fraction", repr(tap_fraction),
                "--", *args]
    return Command(algorithm=spec.id, argv=argv, openrlhf_args=args, translation=t, options=opts, tap_dir=tap_dir)


def write_manifest(command: Command, tap_dir: str | Path) -> Path:
    """Record what is about to run next to the tap's shards (the converter reads it)."""
    tap_dir = Path(tap_dir)
    tap_dir.mkdir(parents=True, exist_ok=True)
    path = tap_dir / "manifest.json"
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps({**command.manifest(), "argv": command.argv}, indent=2) + "\n", encoding="utf-8")
    tmp.replace(path)
    return path


# ---------------------------------------------------------------------------------------------
# Can this machine run it? Checked before anything starts or is written.
# ---------------------------------------------------------------------------------------------

def cuda_gpus() -> int:
    """CUDA GPUs this process sees (0 without torch or without a GPU)."""
    try:
        import torch
    except ImportError:
        return 0
    return torch.cuda.device_count()


def vllm_version() -> str | None:
    from importlib import metadata

    try:
        return metadata.version("vllm")
    except metadata.PackageNotFoundError:
        return None


def missing_for_a_run(cmd: Command) -> list[str]:
    """What this machine lacks to run ``cmd``, each with what to do; [] when it can start.

    Checked before anything starts or is written: Ray, the tap's manifest, OpenRLHF's directories.
    """
    o = cmd.options
    problems = []
    if not (Path(o.model) / "config.json").is_file():
        problems.append(f"--model {o.model}: no Hugging Face checkpoint there (no config.json); make a warm start "
                        "with `unipo sft` (see its --help) or pass --model PATH")
    for flag, value in (("--prompts", o.prompts), ("--eval-dataset", o.eval_dataset), ("--reward-file", o.reward_file)):
        if value and not Path(value).is_file():
            problems.append(f"{flag} {value}: no such file")
    if vllm_version() is None:
        problems.append("vLLM is not installed (OpenRLHF samples with it): pip install vllm==0.29.0 on the GPU node")
    if not os.environ.get("RAY_ADDRESS") and cuda_gpus() == 0:
        problems.append("no CUDA GPU is visible on this machine: OpenRLHF trains on NVIDIA GPUs; run this on a GPU "
                        "node, or set RAY_ADDRESS to join a Ray cluster that has them")
    return problems
