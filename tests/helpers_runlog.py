"""A small builder of valid in-memory run logs for the tests (fixtures live in tests/ only).

Every float here has at most 7 significant digits, so what RunWriter writes (rounded to
float32 precision) reads back equal to what was built.
"""

from __future__ import annotations

import hashlib
import json
from datetime import datetime, timezone
from pathlib import Path

from unipo_build.core.runlog import RunWriter
from unipo_build.core.schema import (
    EvalRecord,
    GroupSummary,
    Hyperparameters,
    ModelInfo,
    PromptGroup,
    Response,
    RewardComponentInfo,
    RewardInfo,
    RunHeader,
    StepDetail,
    StepRecord,
    TaskInfo,
    TokenArrays,
)
from unipo_build.core.specs import load_spec, resolve
from unipo_build.core.project import spec_dir

SPEC_DIR = spec_dir()

CREATED = datetime(2025, 3, 1, 12, 0, 0, tzinfo=timezone.utc)


def make_header(algorithm: str = "grpo", *, with_config: bool = True, **updates) -> RunHeader:
    config = resolve(load_spec(SPEC_DIR / f"{algorithm}.yaml"), max_new_tokens=64) if with_config else None
    header = RunHeader(
        run_id=f"test-{algorithm}",
        algorithm=algorithm,
        algorithm_config=config,
        task=TaskInfo(name="toy arithmetic", source="generator seed 7", n_train=100, n_eval=20, seed=7),
        reward=RewardInfo(description="1 if the final answer is right",
                          components=[RewardComponentInfo(name="correct", description="right answer", weight=1.0)]),
        model=ModelInfo(name="tiny", architecture="llama", parameters=123456, vocab_size=64),
        hyperparameters={"lr": 0.0001, "group_size": 4},
        seed=7,
        created_at=CREATED,
    )
    return header.model_copy(update=updates) if updates else header


def make_tokens(length: int, *, advantage: float = 0.5, with_ref: bool = True) -> TokenArrays:
    return TokenArrays(
        ids=[(3 * t + 1) % 64 for t in range(length)],
        text=[f"t{t}" for t in range(length)],
        logp=[-0.5 - 0.125 * t for t in range(length)],
        old_logp=[-0.5 - 0.125 * t for t in range(length)],
        ref_logp=[-0.75 - 0.125 * t for t in range(length)] if with_ref else None,
        advantage=[advantage] * length,
        kl=[0.25] * length if with_ref else None,
        ratio=[1.0] * length,
        clip=[0] * length,
        entropy=[1.5] * length,
        weight=[0.0625] * length,
        objective=[advantage] * length,
        mask=[1] * length,
    )


def make_detail(step: int, *, rollout: int | None = None, lengths=((3, 4), (2, 5))) -> StepDetail:
    """A step with one prompt group per entry of ``lengths`` (the response lengths)."""
    prompts, groups = [], []
    for g, group_lengths in enumerate(lengths):
        responses = []
        for i, n in enumerate(group_lengths):
            adv = 0.5 if i % 2 == 0 else -0.5
            responses.append(Response(index=i, text=" ".join(f"t{t}" for t in range(n)), reward=float(i % 2 == 0),
                                      reward_components={"correct": float(i % 2 == 0)}, advantage=adv, length=n,
                                      correct=i % 2 == 0, contribution=0.125 * adv, tokens=make_tokens(n, advantage=adv)))
        prompts.append(PromptGroup(index=g, prompt=f"What is {g} + {g}?", answer=str(2 * g), contribution=0.0,
                                   responses=responses))
        groups.append(GroupSummary(index=g, size=len(group_lengths), n_correct=(len(group_lengths) + 1) // 2,
                                   reward_mean=0.5, contribution=0.0, detailed=True))
    return StepDetail(step=step, rollout=step // 2 if rollout is None else rollout, objective=0.0,
                      groups=groups, prompts=prompts)


def make_step(step: int, *, has_tokens: bool = False, **metrics) -> StepRecord:
    values = {"reward/mean": 0.5, "objective": -0.015625, "loss/policy": 0.015625, "length/correct": None}
    values.update(metrics)
    return StepRecord(step=step, rollout=step // 2, first_in_rollout=step % 2 == 0, metrics=values,
                      has_tokens=has_tokens)


def make_eval(step: int, phase: str = "periodic") -> EvalRecord:
    return EvalRecord(step=step, phase=phase, n=20, accuracy_greedy=0.25, accuracy_sampled=0.2, mean_length=12.5,
                      temperature=1.0)


def write_run(run_dir: Path, *, n_steps: int = 6, token_steps=(0, 2, 4), eval_steps=(0, 3, 6),
              header: RunHeader | None = None) -> dict:
    """Write a complete valid run with RunWriter; returns what was written, by kind."""
    header = header or make_header()
    writer = RunWriter(run_dir, header)
    steps, evals, details = [], [], {}
    eval_steps = list(eval_steps)
    for s in range(n_steps + 1):
        if s in eval_steps:
            phase = "start" if s == 0 else ("end" if s == eval_steps[-1] else "periodic")
            record = make_eval(s, phase)
            writer.eval(record)
            evals.append(record)
        if s == n_steps:
            break
        if s in token_steps:
            detail = make_detail(s)
            writer.step_detail(detail)
            details[s] = detail
        record = make_step(s, has_tokens=s in token_steps)
        writer.step(record)
        steps.append(record)
    writer.finish(finished_at=CREATED)
    return {"header": writer.header, "steps": steps, "evals": evals, "details": details, "writer": writer}


def checksums(run_dir: Path) -> dict[str, str]:
    """sha256 of every file under a directory, by relative path."""
    return {str(p.relative_to(run_dir)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(run_dir.rglob("*")) if p.is_file()}


def read_json(path: Path):
    return json.loads(path.read_text(encoding="utf-8"))


def write_json(path: Path, data) -> None:
    """Write raw JSON (possibly invalid against the schema) the way another tool might."""
    path.write_text(json.dumps(data) + "\n", encoding="utf-8")


def rewrite_lines(path: Path, edit) -> None:
    """Apply ``edit(list_of_dicts) -> list_of_dicts`` to a JSONL file."""
    records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    path.write_text("".join(json.dumps(r) + "\n" for r in edit(records)), encoding="utf-8")


def write_metric_run(run_dir: Path, algorithm: str, *, seed: int = 0, rollouts: int = 40, steps_per_rollout: int = 2,
                     metrics=None, evals=(), max_new_tokens: int = 64, config=None, details=None) -> Path:
    """A run of metrics only (no token files): ``metrics(fraction, rng) -> {name: value}`` gives each
    rollout's values (fraction of training from 0 to 1; ``rng`` a seeded numpy Generator for noise),
    repeated on its updates; ``evals``: EvalRecords to log. ``algorithm``: a spec's path under
    data/algorithms without .yaml (``grpo``, ``ladder/ladder_no_kl``); ``config``: a ResolvedAlgorithm
    to log instead of the spec's (a kind no spec has); ``details``: {step: StepDetail} token files to
    write at those steps. For tests of what pages say about runs."""
    import numpy as np

    config = config or resolve(load_spec(SPEC_DIR / f"{algorithm}.yaml"), max_new_tokens=max_new_tokens)
    header = make_header("grpo").model_copy(update={
        "algorithm": config.id, "run_id": run_dir.name, "algorithm_config": config, "seed": seed,
        "hyperparameters": Hyperparameters(lr=0.0001, group_size=4, max_new_tokens=max_new_tokens,
                                           epochs=steps_per_rollout, minibatches=1)})
    writer = RunWriter(run_dir, header)
    rng = np.random.default_rng(1000 + seed)
    for record in evals:
        if record.phase == "start":
            writer.eval(record)
    step = 0
    for r in range(rollouts):
        values = {k: (None if v is None else float(f"{v:.6g}"))
                  for k, v in (metrics or (lambda f, g: {}))(r / max(1, rollouts - 1), rng).items()}
        for k in range(steps_per_rollout):
            detail = (details or {}).get(step)
            if detail is not None:
                writer.step_detail(detail.model_copy(update={"step": step, "rollout": r}))
            writer.step(StepRecord(step=step, rollout=r, first_in_rollout=k == 0, has_tokens=detail is not None,
                                   metrics={"objective": 0.0 if detail is None else detail.objective,
                                            "loss/policy": 0.0, **values}))
            step += 1
    for record in evals:
        if record.phase != "start":
            writer.eval(record.model_copy(update={"step": step}) if record.phase == "end" else record)
    writer.finish(finished_at=CREATED)
    return run_dir


def assert_logged_tokens_recompute(path) -> None:
    """Every token file of a run reproduced by the site's numpy math (unipo_build.core.recompute), and
    each step file's objective equal to its step's logged one (1e-5 relative)."""
    import pytest

    from unipo_build.core import runlog
    from unipo_build.core.recompute import check_step

    header = runlog.read_header(path)
    metrics = {r.step: r.metrics for r in runlog.iter_steps(path)}
    problems = []
    for step in runlog.token_steps(path):
        detail = runlog.read_step_detail(path, step)
        problems += check_step(header.algorithm_config, detail)
        assert detail.objective == pytest.approx(metrics[step]["objective"], rel=1e-5, abs=1e-9)
    assert problems == []


def trl_fixture_with_a_gap(dst: Path) -> tuple[Path, Path]:
    """tests/fixtures/trl/run1 and its tap, copied into ``dst`` with use_bias_correction_kl=True in the GRPOConfig
    the tap recorded: a setting no kind expresses (TRL's KL times the ratio), the import's one gap, in the kl slot.
    Only the recorded setting changes, not TRL's numbers: for what a page shows of a gap, not for its arithmetic.
    Returns (TRL's output directory, the tap)."""
    import shutil

    fixtures = Path(__file__).resolve().parent / "fixtures" / "trl"
    src, tap = dst / "run1", dst / "run1-tap"
    shutil.copytree(fixtures / "run1", src)
    shutil.copytree(fixtures / "run1-tap", tap)
    manifest = tap / "manifest.json"
    data = json.loads(manifest.read_text())
    data["config"]["use_bias_correction_kl"] = True
    manifest.write_text(json.dumps(data))
    return src, tap
