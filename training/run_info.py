"""What a run of training/rl.py is asked to do (TrainOptions) and what its header records about it:
the pieces of the loop that describe a run rather than train it."""

from __future__ import annotations

import os
import platform
import subprocess
import time
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path

import torch

from unipo_build.core import objective as O
from unipo_build.core.numbers import plain_fixed, plain_num
from unipo_build.core.paths import project_relative
from unipo_build.core.schema import (Hardware, ModelInfo, ModelSource, RewardComponentInfo, RewardInfo, RunHeader,
                                     TaskInfo)
from unipo_build.core.specs import AlgorithmSpec
from unipo_build.core.specs import load_algorithm as specs_load_algorithm

from . import PROJECT
from .model import count_parameters
from .pretrained import model_source
from .reward import RULE_TEXT
from .runstate import TrainError
from .task import TASK_LEVELS
from .tokenizer import token_pieces

REPO = PROJECT  # the project root (training/__init__.py)


@dataclass
class TrainOptions:
    algorithm: str  # a spec id in data/algorithms, or a path to a spec file
    preset: str = "tiny"
    steps: int | None = None  # rollouts; the preset's when None
    seed: int = 0
    out: str | None = None
    resume: bool = False
    model: str | None = None  # a local HF checkpoint; the preset's SFT warm start when None
    task: str | None = None  # a directory with train.jsonl/eval.jsonl, or one JSONL file
    device: str = "auto"
    progress: bool = True
    lr: float | None = None
    checkpoint_every: int | None = None  # rollouts; None: checkpoint_interval(steps)
    eval_every: int | None = None
    eval_n: int | None = None
    detail_every: int | None = None
    sampler_lag: int | None = None  # None: the preset's (0: synchronous)
    # torch threads; None: $UNIPO_THREADS or the preset's. On a shared or busy machine use 1:
    # OpenMP threads that wait for a core spin, and 2 threads can then run 40x slower than 1.
    threads: int | None = None
    # Any other RLPreset field, e.g. {"prompts_per_step": 4, "group_size": 4} for smoke runs.
    rl_overrides: dict | None = None
    # Seconds from the run's start (its process) by which it must be finished: see TimeLimit.
    time_limit: float | None = None


class RolloutBar:
    """The progress bar of a run (``unipo train`` without --no-progress): one tick a rollout, with the
    latest update's step and mean reward."""

    def __init__(self, total: int, done: int, name: str):
        from tqdm import tqdm

        self.bar = tqdm(total=total, initial=done, desc=name, unit="rollout", dynamic_ncols=True)

    def advance(self, step: int, metrics: dict) -> None:
        self.bar.set_postfix(step=step, reward=plain_fixed(metrics.get('reward/mean') or 0.0, 3))
        self.bar.update(1)

    def close(self) -> None:
        self.bar.close()


class TimeLimit:
    """``unipo train --time-limit S``: a run that must end on time (a GPU lease) takes no further
    rollout once that rollout and the end evaluation would not fit in S seconds from its start; it
    then finishes as usual (end evaluation, header), having trained fewer rollouts than asked, and
    says so in its header. The first rollout is always trained. A rollout's cost is the mean of the
    ones before it (periodic evaluations and checkpoints included); the end evaluation's is the start
    evaluation's, measured, with a margin (answers may grow longer)."""

    MARGIN = 1.25

    def __init__(self, seconds: float | None, started: float):
        self.seconds, self.started = seconds, started
        self.rollout_s: list[float] = []
        self.eval_s = 0.0

    def allows_another(self, now: float | None = None) -> bool:
        if self.seconds is None or not self.rollout_s:
            return True
        now = (time.time() if now is None else now) - self.started
        need = sum(self.rollout_s) / len(self.rollout_s) + self.eval_s
        return now + self.MARGIN * need <= self.seconds

    def note(self, done: int, asked: int) -> str:
        each = plain_fixed(sum(self.rollout_s) / len(self.rollout_s), 1)
        return (f"Stopped after {done} of the {asked} rollouts asked for: --time-limit "
                f"{plain_num(float(self.seconds))} s left no room for another rollout (about {each} s each here) "
                "and the end evaluation.")


# ---------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------

def git_commit() -> str | None:
    """The commit the code is at: ``UNIPO_COMMIT`` when set (a copy of the tree sent to a GPU machine,
    whose .git, if it has one, may be an older checkout's), else the checkout's HEAD (``+dirty`` with
    uncommitted changes to tracked files), else None."""
    if os.environ.get("UNIPO_COMMIT"):
        return os.environ["UNIPO_COMMIT"]
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True, timeout=5)
        if out.returncode == 0:
            dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=REPO,
                                   capture_output=True, text=True, timeout=5).stdout.strip()
            return out.stdout.strip() + ("+dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        pass
    return None


def software() -> dict[str, str]:
    """The versions a run's header records. The package's own is the installed distribution's, read by
    importlib.metadata from what pyproject.toml says (typed nowhere else); left out when the code runs from a
    checkout that was never installed."""
    versions = {"python": platform.python_version(), "torch": torch.__version__,
                "transformers": __import__("transformers").__version__}
    try:
        versions["unipo"] = metadata.version("unipo")
    except metadata.PackageNotFoundError:
        pass
    return versions


def load_algorithm(name: str) -> AlgorithmSpec:
    try:
        return specs_load_algorithm(name)
    except ValueError as err:
        raise TrainError(str(err)) from None


def run_header(trainer, checkpoint: str, n_train: int, n_eval: int, task_source: str) -> RunHeader:
    """The run header of a Trainer that has loaded its policy, spec and preset."""
    rule = getattr(trainer, "reward_rule", "answer")
    said = RULE_TEXT[rule]
    reward_components = [
        RewardComponentInfo(name="correct", description=said["correct"], weight=1.0),
        RewardComponentInfo(name="format", description=said["format"], weight=0.0),
    ]
    if trainer.cfg.kind("shaping") != "none":
        reward_components.append(RewardComponentInfo(
            name="shaping", description=f"{trainer.cfg.kind('shaping')} shaping term added to the reward.", weight=1.0))
    params = count_parameters(trainer.policy)
    hyper = {k: v for k, v in asdict(trainer.rl).items()
             if not isinstance(v, tuple) and k not in ("precision", "cuda_micro_rows", "cuda_micro_tokens", "cuda_graphs")
             and not (k == "detail_bytes" and v is None) and not (k == "sampler_lag" and v == 0)}
    if trainer.gpu_path:  # what this run did, not the preset's alternatives
        hyper.update(micro_rows=trainer.micro_rows, precision="bf16" if trainer.autocast else "fp32",
                     static_decoder=trainer.static_decode,
                     cuda_graphs=trainer.static_decode and trainer.device.type == "cuda")
        if trainer.micro_tokens is not None:
            hyper["micro_tokens"] = trainer.micro_tokens
    if getattr(trainer, "chat", None):  # how each question was put to the model (the logged prompt is the question)
        hyper.update(chat_template=True, system_prompt=trainer.system_prompt)
    source = model_source(checkpoint)
    model = ModelInfo(name=trainer.preset.name if not trainer.opts.model else project_relative(trainer.opts.model, REPO),
                      architecture=type(trainer.policy).__name__, parameters=params,
                      checkpoint=project_relative(checkpoint, REPO),
                      vocab_size=trainer.policy.config.vocab_size,
                      source=ModelSource(**source) if source else None)
    level = TASK_LEVELS.get(trainer.preset.task_level)
    task_name = level.task_name if level else "arithmetic word problems"
    return RunHeader(
        run_id=trainer.out.name, algorithm=trainer.spec.id, algorithm_config=trainer.cfg,
        title=f"{trainer.spec.name} on {task_name} ({trainer.preset.name} preset)",
        task=TaskInfo(name=task_name if not trainer.opts.task else Path(task_source).name,
                      source=project_relative(task_source, REPO), n_train=n_train, n_eval=n_eval),
        reward=RewardInfo(description=said["description"], components=reward_components,
                          rule=rule if rule != "answer" else None),
        model=model, reference_model=model if O.uses_reference(trainer.cfg) else None,
        preset=trainer.preset.name,
        hyperparameters={**hyper, "critic_lr": trainer.critic_lr if O.uses_critic(trainer.cfg) else None},
        seed=trainer.opts.seed,
        hardware=Hardware(device=trainer.device.type,
                          device_name=torch.cuda.get_device_name(trainer.device) if trainer.device.type == "cuda" else None,
                          cpu=platform.processor() or platform.machine(), cores=os.cpu_count(),
                          threads=torch.get_num_threads(),
                          dtype="bfloat16 autocast, float32 log-probs" if trainer.autocast else "float32"),
        software=software(),
        commit=git_commit(), engine="unipo", created_at=datetime.now(timezone.utc),
        steps_per_rollout=trainer.rl.epochs * trainer.rl.minibatches,
    )


class _Pieces:
    """token_pieces of a minibatch's answers by row, each computed when first read (None: no detail)."""

    def __init__(self, tokenizer, ids: list[list[int]] | None):
        self.tokenizer, self.ids, self.done = tokenizer, ids, {}

    def __getitem__(self, row: int) -> list[str]:
        if self.ids is None:
            return []
        if row not in self.done:
            self.done[row] = token_pieces(self.tokenizer, self.ids[row])
        return self.done[row]

