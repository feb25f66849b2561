"""Small runs with several seeds, ladder rungs and per-problem evaluations, for the tests of the
seed bands, the held-out verdicts, the ablation ladder and the batch-filling figures.

Every number is chosen so a test can work out the expected figures by hand: rollout-level metrics
are repeated on each of a rollout's updates as the trainer logs them, evaluations score
``N_EVAL`` problems at the start and the end and the first ``N_PERIODIC`` in between, and floats
have few significant digits, so they read back exactly. Fixtures live here, never in data/.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable, Sequence, TypeVar

from helpers_runlog import make_detail
from unipo_build.core.runlog import RunWriter
from unipo_build.core.schema import (
    EvalRecord,
    LengthProbe,
    ModelInfo,
    RewardComponentInfo,
    RewardInfo,
    RunHeader,
    StepRecord,
    TaskInfo,
)
from unipo_build.core.specs import load_algorithm, resolve

CREATED = datetime(2026, 1, 5, 9, 0, 0, tzinfo=timezone.utc)
T = TypeVar("T")
N_EVAL = 20
N_PERIODIC = 10
PROMPTS, GROUP = 4, 2  # a batch of 4 groups of 2 answers


@dataclass
class FixtureRun:
    """What to write for one run. ``metrics(rollout)`` gives the rollout-level metrics (repeated on
    each of its updates); ``update_metrics(step)`` the update-level ones."""

    run_id: str
    algorithm: str
    seed: int
    rollouts: int = 10
    steps_per_rollout: int = 2
    metrics: Callable[[int], dict] = field(default=lambda r: {})
    update_metrics: Callable[[int], dict] = field(default=lambda s: {})
    start_bits: str = "0" * N_EVAL
    end_bits: str = "0" * N_EVAL
    periodic_bits: str | None = None  # the first N_PERIODIC problems, evaluated halfway
    sampled_start: str | None = None
    sampled_end: str | None = None
    skip_rollouts: tuple[int, ...] = ()  # rollouts that made no update (a filter kept nothing)
    length_probe: LengthProbe | None = None
    max_new_tokens: int = 64
    detail_steps: tuple[int, ...] = ()  # updates with a token file (helpers_runlog.make_detail)
    planned_rollouts: int | None = None  # more than ``rollouts``: a run still training (no end evaluation, unfinished)
    sampler_lag: int = 0  # > 0: an asynchronous run (its header's hyperparameters.sampler_lag)


def header_for(spec: FixtureRun) -> RunHeader:
    config = resolve(load_algorithm(spec.algorithm), max_new_tokens=spec.max_new_tokens)
    return RunHeader(
        run_id=spec.run_id, algorithm=spec.algorithm, algorithm_config=config,
        task=TaskInfo(name="toy arithmetic", source="fixture", n_train=100, n_eval=N_EVAL, seed=3),
        reward=RewardInfo(description="1 if the final answer is right",
                          components=[RewardComponentInfo(name="correct", description="right answer", weight=1.0)]),
        model=ModelInfo(name="tiny", architecture="llama", parameters=1000, vocab_size=32),
        hyperparameters={"lr": 0.0001, "group_size": GROUP, "prompts_per_step": PROMPTS,
                         "max_new_tokens": spec.max_new_tokens, "steps": spec.planned_rollouts or spec.rollouts, "epochs": spec.steps_per_rollout, "minibatches": 1,
                         **({"sampler_lag": spec.sampler_lag} if spec.sampler_lag else {})},
        seed=spec.seed, created_at=CREATED, steps_per_rollout=spec.steps_per_rollout, length_probe=spec.length_probe)


def bits_accuracy(bits: str) -> float:
    return bits.count("1") / len(bits)


def evaluation(step: int, phase: str, greedy: str, sampled: str | None) -> EvalRecord:
    n = len(greedy)
    return EvalRecord(step=step, phase=phase, n=n, accuracy_greedy=bits_accuracy(greedy),
                      accuracy_sampled=None if sampled is None else bits_accuracy(sampled), mean_length=10.0,
                      problems=f"eval rows 1-{n}", correct_greedy=greedy, correct_sampled=sampled)


def write_fixture_run(root: Path, spec: FixtureRun) -> Path:
    run_dir = root / spec.run_id
    writer = RunWriter(run_dir, header_for(spec))
    writer.eval(evaluation(0, "start", spec.start_bits, spec.sampled_start))
    step = 0
    for rollout in range(spec.rollouts):
        if rollout in spec.skip_rollouts:
            continue
        if spec.periodic_bits is not None and rollout == spec.rollouts // 2:
            writer.eval(evaluation(step, "periodic", spec.periodic_bits, None))
        for k in range(spec.steps_per_rollout):
            values = dict(spec.metrics(rollout))
            values.update(spec.update_metrics(step))
            if step in spec.detail_steps:
                writer.step_detail(make_detail(step, rollout=rollout))
            writer.step(StepRecord(step=step, rollout=rollout, first_in_rollout=k == 0, metrics=values,
                                   has_tokens=step in spec.detail_steps))
            step += 1
    if spec.planned_rollouts is not None and spec.planned_rollouts > spec.rollouts:
        return run_dir  # still training: no end evaluation, no finished_at
    writer.eval(evaluation(step, "end", spec.end_bits, spec.sampled_end))
    writer.finish(finished_at=CREATED)
    return run_dir


#: The ladders of the fixture project (data/suite.yaml): DAPO's, and two changes tried alone on one
#: rung, then together (the closest earlier rung is then not the one above).
SUITE = """ladders:
  dapo: [grpo, ladder_no_kl, ladder_clip_higher, ladder_token_mean, ladder_dynamic_sampling, dapo]
  two_alone: [ladder_no_kl, ladder_mean_advantage, ladder_constant_normalizer, dr_grpo]
"""


def fixture_project(root: Path, suite: str = SUITE) -> Path:
    """A project root whose specs are the repository's and whose data/suite.yaml is ``suite``."""
    from unipo_build.core.project import spec_dir

    (root / "data").mkdir(parents=True, exist_ok=True)
    (root / "data" / "algorithms").symlink_to(spec_dir())
    (root / "data" / "suite.yaml").write_text(suite, encoding="utf-8")
    return root


def seed_run_id(algorithm: str, seed: int, prefix: str = "") -> str:
    """A run's id as data/suite.yaml names a variant's seeds: ``grpo``, ``grpo-s1``, ``grpo-s2`` (``prefix``:
    ``async8_`` for ``async8_grpo-s1``)."""
    return f"{prefix}{algorithm}" + ("" if seed == 0 else f"-s{seed}")


def seed_runs(algorithm: str, per_seed: Sequence[T], make: Callable[[str, int, T], FixtureRun],
              prefix: str = "") -> list[FixtureRun]:
    """One run per seed of a variant, seeds 0, 1, ... in the order of ``per_seed`` (a test's hand-worked value of
    each seed): ``make(run_id, seed, value)`` builds each. Five seeds let a difference be clear (core.judge: 5
    against 5 reaches p = 2/252); three never can (p = 2/20 at best)."""
    return [make(seed_run_id(algorithm, seed, prefix), seed, value) for seed, value in enumerate(per_seed)]


def write_fixture_runs(root: Path, specs: list[FixtureRun]) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for spec in specs:
        write_fixture_run(root, spec)
    return root
