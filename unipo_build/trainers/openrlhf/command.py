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
import os
import shlex
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from unipo_build.core import project
from unipo_build.core.file_names import HELDOUT_POOL, RL_POOL, SFT_POOL
from unipo_build.core.registry import OPTIONAL_SLOTS, kind as registered
from unipo_build.core.registry_trainers import openrlhf_flags
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


#: The slots in the order their flags are written; after the advantage's, the note on OpenRLHF's reward clamp.
FLAG_ORDER = ("advantage", "ratio", "clip", "kl", "aggregation", "correction", "filter", "shaping")
REWARD_CLAMP = ("rewards after the baseline (and before any KL in the reward) are clamped to [-10, 10] "
                "(--reward.clip_range)")


def translate(cfg: ResolvedAlgorithm, *, max_new_tokens: int) -> Translation:
    """Slot by slot: the OpenRLHF flags for ``cfg``, where they fall short, and what runs instead. Each slot's kind
    says so itself (its registry entry's ``translators["openrlhf"]``, core/kinds_openrlhf.py for the shipped kinds);
    a kind without one is refused in one line."""
    t = Translation(algorithm=cfg.id, requested=cfg, effective=cfg)
    eff = cfg
    then: dict = {}
    for slot in FLAG_ORDER:
        comp = cfg.components.get(slot) or ResolvedComponent(kind=OPTIONAL_SLOTS[slot], params={})
        params = dict(comp.params)
        part = then[slot](comp.kind, params) if slot in then else None
        if part is None:
            part = openrlhf_flags(slot, comp.kind, params, cfg, max_new_tokens)
        t.flags += part.flags
        t.notes += part.notes
        t.gaps += [Gap(slot, says, why, nearest, tuple(flags)) for says, why, nearest, flags in part.gaps]
        t.single_update = t.single_update or part.single_update
        then.update(part.then)
        if part.runs is not None:
            eff = _with(eff, slot, *part.runs)
        if slot == "advantage":
            t.notes.append(REWARD_CLAMP)
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
    if registered("advantage", spec.components["advantage"].kind).needs_critic:
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
