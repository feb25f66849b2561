"""Memory and time of `mkdocs build` with a huge run log.

DESIGN.md asks that the build's memory stay bounded when logs are huge (steps are streamed and
metrics downsampled with LTTB). This script writes a GRPO run of ``--steps`` updates (default
100,000) to a temporary runs directory, streamed line by line so the generator itself never
holds the log, builds the site with ``UNIPO_RUNS`` pointing at it, and prints the build's wall
time and peak resident memory (``os.wait4`` on the mkdocs child: its own ``ru_maxrss``). A
baseline build with a ``--baseline-steps`` run (default 1,000) is measured the same way, so
the difference is what the extra steps cost. It is a measurement: it exits 0 whatever the
figures (1 only if a build fails).

    .venv/bin/python benchmarks/huge_log.py
    .venv/bin/python benchmarks/huge_log.py --steps 1000000 --keep /tmp/huge-runs

Each step carries 24 catalogue metrics drawn from a seeded random walk; ``--token-steps``
(default 10) evenly spaced steps have a token file (4 groups of 4 responses of 24 tokens), so
the Step Inspector and the teaching-moment finders run too.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from unipo_build.core import runlog  # noqa: E402
from unipo_build.core.schema import (
    GroupSummary,
    ModelInfo,
    PromptGroup,
    Response,
    RewardInfo,
    RunHeader,
    StepDetail,
    TaskInfo,
    TokenArrays,
)
from unipo_build.core.specs import load_spec, resolve  # noqa: E402
from unipo_build.core.project import spec_dir  # noqa: E402

SPEC_DIR = spec_dir(REPO)

METRICS = ["reward/mean", "reward/std", "reward/correct", "accuracy/train", "objective", "loss/policy", "kl/mean",
           "entropy/mean", "clip/frac_low", "clip/frac_high", "ratio/min", "ratio/mean", "ratio/max", "length/mean",
           "length/correct", "length/incorrect", "length/truncated_frac", "grad_norm", "lr",
           "groups/zero_variance_frac", "groups/all_correct_frac", "groups/all_wrong_frac", "time/update_s",
           "time/wall_s"]
STEPS_PER_ROLLOUT = 4
CHUNK = 10_000


def _detail(step: int, rng: np.random.Generator) -> StepDetail:
    groups, prompts = [], []
    n_tokens, n_responses = 24, 16
    for g in range(4):
        responses, contribution = [], 0.0
        rewards = [float(rng.integers(0, 2)) for _ in range(4)]
        mean = sum(rewards) / 4
        for i, reward in enumerate(rewards):
            adv = round(reward - mean, 6)
            logp = [round(float(x), 6) for x in -rng.gamma(1.0, 0.5, n_tokens)]
            ratio = [round(math.exp(float(d)), 6) for d in rng.normal(0, 0.05, n_tokens)]
            old = [round(lp - math.log(r), 6) for lp, r in zip(logp, ratio)]
            weight = 1.0 / (n_responses * n_tokens)
            objective = [round(min(r * adv, min(max(r, 0.8), 1.2) * adv), 6) for r in ratio]
            clip = [1 if adv > 0 and r > 1.2 else -1 if adv < 0 and r < 0.8 else 0 for r in ratio]
            c = sum(o * weight for o in objective)
            contribution += c
            responses.append(Response(
                index=i, text=" ".join(f"t{t}" for t in range(n_tokens)), reward=reward, advantage=adv,
                length=n_tokens, correct=reward == 1.0, contribution=c,
                tokens=TokenArrays(ids=list(range(n_tokens)), text=[f" t{t}" for t in range(n_tokens)], logp=logp,
                                   old_logp=old, ref_logp=logp, advantage=[adv] * n_tokens, kl=[0.0] * n_tokens,
                                   ratio=ratio, clip=clip, entropy=[1.0] * n_tokens, weight=[weight] * n_tokens,
                                   objective=objective, mask=[1] * n_tokens)))
        prompts.append(PromptGroup(index=g, prompt=f"What is {g} + {step % 97}?", answer=str(g + step % 97),
                                   contribution=contribution, responses=responses))
        groups.append(GroupSummary(index=g, size=4, n_correct=int(sum(rewards)), reward_mean=mean,
                                   contribution=contribution, detailed=True))
    return StepDetail(step=step, rollout=step // STEPS_PER_ROLLOUT, objective=sum(g.contribution for g in groups),
                      groups=groups, prompts=prompts)


def write_run(run_dir: Path, steps: int, token_steps: int, seed: int = 0) -> dict:
    """A valid GRPO run of ``steps`` updates, streamed to disk; returns what was written."""
    started = time.perf_counter()
    rng = np.random.default_rng(seed)
    header = RunHeader(
        run_id=run_dir.name, algorithm="grpo", title=f"Synthetic GRPO run, {steps:,} updates (benchmark)",
        algorithm_config=resolve(load_spec(SPEC_DIR / "grpo.yaml"), max_new_tokens=24),
        task=TaskInfo(name="synthetic", source="benchmarks/huge_log.py", seed=seed),
        reward=RewardInfo(description="synthetic 0/1 rewards"), model=ModelInfo(name="none (synthetic)"),
        hyperparameters={"group_size": 4, "epochs": 2, "minibatches": 2, "max_new_tokens": 24},
        engine="benchmark", created_at=datetime.now(timezone.utc), steps_per_rollout=STEPS_PER_ROLLOUT)
    writer = runlog.RunWriter(run_dir, header)
    detailed = set(np.linspace(0, steps - 1, num=min(token_steps, steps), dtype=np.int64).tolist()) if token_steps else set()
    for step in sorted(detailed):
        writer.step_detail(_detail(step, rng))
    level = np.zeros(len(METRICS))
    with (run_dir / runlog.STEPS).open("w", encoding="utf-8") as fh:  # buffered: one fsync at the end
        for start in range(0, steps, CHUNK):
            n = min(CHUNK, steps - start)
            walk = np.cumsum(rng.normal(0, 0.01, (n, len(METRICS))), axis=0) + level
            level = walk[-1]
            values = np.abs(walk)
            lines = []
            for k in range(n):
                step = start + k
                metrics = {name: float(f"{v:.6g}") for name, v in zip(METRICS, values[k])}
                metrics["time/wall_s"] = round(step * 1.5, 3)
                if step % 7 == 0:
                    metrics["length/correct"] = None  # undefined at some steps, as in real runs
                lines.append(json.dumps({"step": step, "rollout": step // STEPS_PER_ROLLOUT,
                                         "first_in_rollout": step % STEPS_PER_ROLLOUT == 0, "metrics": metrics,
                                         "has_tokens": step in detailed}, separators=(",", ":")))
            fh.write("\n".join(lines) + "\n")
        fh.flush()
        os.fsync(fh.fileno())
    with (run_dir / runlog.EVALS).open("w", encoding="utf-8") as fh:
        for i, step in enumerate((0, steps // 2, steps)):
            phase = "start" if i == 0 else "end" if i == 2 else "periodic"
            fh.write(json.dumps({"step": step, "phase": phase, "n": 64, "accuracy_greedy": 0.25 + 0.1 * i,
                                 "accuracy_sampled": 0.2 + 0.1 * i, "mean_length": 20.0}) + "\n")
    writer.finish(finished_at=datetime.now(timezone.utc))
    return {"steps": steps, "token_files": len(detailed), "steps_bytes": (run_dir / runlog.STEPS).stat().st_size,
            "seconds": time.perf_counter() - started}


def check_sample(run_dir: Path, every: int) -> None:
    """Validate every ``every``-th step line and all token files (the whole file is streamed)."""
    for record in runlog.iter_steps(run_dir):
        if record.step % every == 0:
            pass  # iter_steps validates each line; streaming it all checks the sequence too
    for step in runlog.token_steps(run_dir):
        runlog.read_step_detail(run_dir, step)


def measure_build(runs_dir: Path, site_dir: Path) -> dict:
    """Build the site from ``runs_dir``; wall time and the mkdocs process's peak RSS."""
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1", UNIPO_RUNS=str(runs_dir))
    env.pop("UNIPO_STRICT_RUNS", None)
    log = site_dir.parent / f"{site_dir.name}.log"
    started = time.perf_counter()
    with log.open("w") as out:
        proc = subprocess.Popen([sys.executable, "-m", "mkdocs", "build", "--site-dir", str(site_dir)], cwd=REPO,
                                env=env, stdout=out, stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
    seconds = time.perf_counter() - started
    explorer = site_dir / "reference" / "explorer" / "index.html"
    return {"returncode": proc.returncode, "seconds": seconds, "peak_rss_mb": usage.ru_maxrss / 1024,
            "explorer_page_kb": explorer.stat().st_size / 1024 if explorer.exists() else None, "log": str(log)}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=100_000)
    parser.add_argument("--baseline-steps", type=int, default=1_000, help="0 to skip the baseline build")
    parser.add_argument("--token-steps", type=int, default=10)
    parser.add_argument("--keep", type=Path, help="write the runs and sites here and keep them")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    args = parser.parse_args(argv)

    work = args.keep or Path(tempfile.mkdtemp(prefix="unipo-huge-"))
    work.mkdir(parents=True, exist_ok=True)
    figures = {}
    try:
        for label, steps in (("baseline", args.baseline_steps), ("huge", args.steps)):
            if steps <= 0:
                continue
            runs_dir = work / f"runs-{label}"
            if runs_dir.exists():
                shutil.rmtree(runs_dir)
            written = write_run(runs_dir / "grpo-synthetic", steps, args.token_steps)
            check_sample(runs_dir / "grpo-synthetic", every=max(1, steps // 100))
            print(f"{label}: wrote {steps:,} steps ({written['steps_bytes'] / 1e6:.1f} MB steps.jsonl, "
                  f"{written['token_files']} token files) in {written['seconds']:.1f} s", flush=True)
            site_dir = work / f"site-{label}"
            if site_dir.exists():
                shutil.rmtree(site_dir)
            built = measure_build(runs_dir, site_dir)
            figures[label] = {**written, "build": built}
            state = "ok" if built["returncode"] == 0 else f"FAILED (exit {built['returncode']}, see {built['log']})"
            page = f", explorer page {built['explorer_page_kb']:.0f} KB" if built["explorer_page_kb"] else ""
            print(f"{label}: mkdocs build {state}: {built['seconds']:.1f} s, peak RSS {built['peak_rss_mb']:.0f} MB"
                  f"{page}", flush=True)
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n")
    if "baseline" in figures and "huge" in figures:
        b, h = figures["baseline"]["build"], figures["huge"]["build"]
        print(f"{args.steps:,} vs {args.baseline_steps:,} steps: +{h['seconds'] - b['seconds']:.1f} s, "
              f"+{h['peak_rss_mb'] - b['peak_rss_mb']:.0f} MB peak RSS")
    return 0 if all(f["build"]["returncode"] == 0 for f in figures.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
