"""Time and memory of `unipo import` on large logs in verl's, prime-rl's and OpenRLHF's formats.

Issue 22 asks that a 10,000-step run with token detail on 1% of its steps import in under a minute,
streamed (never loaded whole), and build within the site's budgets. This script writes such a run in
each trainer's own format through the writers of ``tests/trainer_formats.py`` (which mirror the
upstream code paths; streamed, so the generator never holds the log), then runs ``unipo import`` on
it as a user does, in a subprocess, and records its wall time and peak resident memory (``os.wait4``
on the child: its own ``ru_maxrss``):

- verl: the file logger's metrics (``--metrics`` per step), a rollout dump (``--prompts`` x
  ``--group`` samples) on ``--detail-fraction`` of the steps, a validation dump every
  ``--val-every`` steps, Hydra's config;
- prime-rl: ``metrics.jsonl`` (three rows per step, the orchestrator one step ahead of the trainer),
  a token export (``--prompts`` x ``--group`` sequences of ``--prompt-tokens`` + ``--completion-tokens``
  tokens) on ``--detail-fraction`` of the steps, the resolved configs;
- openrlhf: TensorBoard event files with ``--metrics`` scalars per global step (no token detail:
  TensorBoard has none).

With ``--build`` it also builds the site from the imported runs (``mkdocs build``, timed the same way,
after a baseline build from the test fixtures' small runs imported the same way)
and reports the largest step file and the site's size against the budgets of benchmarks/page_budget.py
(300 KB, 80 MB). The
figures are printed and written with the date and the machine to ``--json`` (default
benchmarks/results/trainer_logs.json). A measurement: it exits 0 whatever the figures (1 only if an
import or a build fails).

    .venv/bin/python benchmarks/trainer_logs.py
    .venv/bin/python benchmarks/trainer_logs.py --steps 1000 --formats prime-rl --keep /tmp/tl
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))

import trainer_formats as TF  # noqa: E402
from unipo_build.trainers.tfevents import encode_event, encode_record  # noqa: E402

UNIPO = Path(sys.executable).with_name("unipo")
STEP_BUDGET = 300_000  # bytes: one step file of the site (benchmarks/page_budget.py)
SITE_BUDGET_MB = 80  # the built site (benchmarks/page_budget.py)
VERL_METRICS = ["actor/pg_loss", "actor/kl_loss", "actor/entropy", "actor/grad_norm", "actor/lr", "actor/pg_clipfrac",
                "actor/ppo_kl", "actor/pg_clipfrac_lower", "critic/score/mean", "critic/score/max", "critic/score/min",
                "critic/rewards/mean", "critic/advantages/mean", "critic/advantages/max", "critic/advantages/min",
                "critic/returns/mean", "response_length/mean", "response_length/max", "response_length/min",
                "response_length/clip_ratio", "prompt_length/mean", "timing_s/gen", "timing_s/old_log_prob",
                "timing_s/ref", "timing_s/adv", "timing_s/update_actor", "timing_s/step", "perf/throughput",
                "perf/time_per_step", "perf/total_num_tokens"]


def detail_steps(steps: int, fraction: float, first: int = 0) -> list[int]:
    n = max(1, round(steps * fraction))
    return sorted({first + round(i * (steps - 1) / max(1, n - 1)) for i in range(n)})


def write_verl(run: Path, args, rng: random.Random) -> dict:
    cfg = json.loads(json.dumps(TF.VERL_CONFIG))
    cfg["data"]["train_batch_size"] = args.prompts
    cfg["actor_rollout_ref"]["rollout"]["n"] = args.group
    cfg["trainer"].update(total_training_steps=args.steps, test_freq=args.val_every)
    TF.verl_config(run, cfg)
    log = TF.VerlFileLogger(run, "bench", "verl_big")
    dumps = set(detail_steps(args.steps, args.detail_fraction, first=1))
    answer = " ".join(["step"] * 120)
    for step in range(1, args.steps + 1):
        data = {name: rng.random() for name in VERL_METRICS[: args.metrics]}
        if step in dumps:
            n = args.prompts * args.group
            scores = [float(rng.random() < 0.5) for _ in range(n)]
            TF.verl_dump_generations(run / "rollout_data", step, [f"Problem {step}-{i // args.group}: " + "x " * 60
                                                                  for i in range(n)],
                                     [answer] * n, ["42"] * n, scores, {"acc": [s == 1.0 for s in scores]})
        if step % args.val_every == 0:
            m = args.prompts * 4
            scores = [float(rng.random() < 0.5) for _ in range(m)]
            TF.verl_dump_generations(run / "validation_data", step, ["Q"] * m, [answer] * m, ["42"] * m, scores,
                                     {"acc": [s == 1.0 for s in scores]})
            data["val-core/bench/reward/mean@1"] = sum(scores) / m
        log.log(data, step=step)
    log.close()
    return {"steps": args.steps, "detail_steps": len(dumps)}


def write_prime(run: Path, args, rng: random.Random) -> dict:
    TF.prime_configs(run, orchestrator={**TF.ORCHESTRATOR_CONFIG, "group_size": args.group,
                                        "batch_size": args.prompts * args.group, "max_steps": args.steps,
                                        "train": {"sampling": {"temperature": 1.0,
                                                               "max_completion_tokens": args.completion_tokens}}})
    mon = TF.PrimeFileMonitor(run)
    exports = set(detail_steps(args.steps, args.detail_fraction))
    t0 = 1.7e9
    for step in range(args.steps):
        if step + 1 < args.steps:  # the orchestrator runs one step ahead
            mon.log({"reward/mean": rng.random(), "seq_len/mean": 150.0, "batch/bench": 1.0}, step=step + 1,
                    time=t0 + step)
        mon.log({"optim/lr": 3e-6, "optim/grad_norm": rng.random()}, step=step, time=t0 + step + 0.5)
        mon.log({"loss/mean": rng.random() * 0.01, "entropy/all/mean": rng.random(),
                 "mismatch_kl/all/mean": rng.random() * 1e-3, "time/step": 10.0, "perf/throughput": 1e4}
                | {f"bench/extra_{k}": rng.random() for k in range(max(0, args.metrics - 10))},
                step=step, time=t0 + step + 0.6)
        if step in exports:
            TF.prime_export(run, step, _prime_sequences(step, args, rng))
    mon.close()
    return {"steps": args.steps, "detail_steps": len(exports)}


def _prime_sequences(step: int, args, rng: random.Random):
    k = 0
    for p in range(args.prompts):
        prompt = [1000 + p] * args.prompt_tokens
        for _ in range(args.group):
            inference = [-rng.expovariate(2.0) for _ in range(args.completion_tokens)]
            trainer = [x + rng.gauss(0, 0.01) for x in inference]
            trainer = [min(t, 0.0) for t in trainer]
            completion = [rng.randrange(32000) for _ in range(args.completion_tokens)]
            yield TF.prime_sequence(step, k // 8, k % 8, k, prompt, completion, trainer, inference,
                                    round(rng.uniform(-1, 1), 3))
            k += 1


def write_openrlhf(run: Path, args, rng: random.Random) -> dict:
    run.mkdir(parents=True, exist_ok=True)
    names = ["reward", "policy_loss", "kl", "entropy_loss", "response_length", "actor_lr", "ppo_clip_ratio",
             "return", "total_length", "grad_norm"]
    names += [f"extra_{k}" for k in range(max(0, args.metrics - len(names)))]
    with (run / "events.out.tfevents.1700000000.bench").open("wb") as fh:
        fh.write(encode_record(encode_event(1.7e9, 0, file_version="brain.Event:2")))
        for step in range(1, args.steps + 1):
            fh.write(encode_record(encode_event(1.7e9 + step, step, {f"train/{n}": rng.random() for n in names})))
    return {"steps": args.steps, "detail_steps": 0}


WRITERS = {"verl": write_verl, "prime-rl": write_prime, "openrlhf": write_openrlhf}


def measure(command: list[str], log: Path, env: dict | None = None) -> dict:
    started = time.perf_counter()
    with log.open("w") as out:
        proc = subprocess.Popen(command, cwd=REPO, stdout=out, stderr=subprocess.STDOUT, env=env)
        _, status, usage = os.wait4(proc.pid, 0)
    return {"returncode": os.waitstatus_to_exitcode(status), "seconds": round(time.perf_counter() - started, 2),
            "peak_rss_mb": round(usage.ru_maxrss / 1024, 1), "log": str(log)}


def _build(runs: Path, site: Path, log: Path) -> dict:
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1", UNIPO_RUNS=str(runs))
    env.pop("UNIPO_STRICT_RUNS", None)
    return measure([sys.executable, "-m", "mkdocs", "build", "--site-dir", str(site)], log, env)


def size_mb(path: Path) -> float:
    return round(sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) / 1e6, 1)


def machine() -> dict:
    return {"cpu": platform.processor() or platform.machine(), "cores": os.cpu_count(),
            "python": platform.python_version(), "loadavg": [round(x, 2) for x in os.getloadavg()]}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=10_000)
    parser.add_argument("--detail-fraction", type=float, default=0.01)
    parser.add_argument("--formats", default="verl,prime-rl,openrlhf")
    parser.add_argument("--prompts", type=int, default=8, help="prompts per detailed step")
    parser.add_argument("--group", type=int, default=8, help="samples per prompt")
    parser.add_argument("--prompt-tokens", type=int, default=64)
    parser.add_argument("--completion-tokens", type=int, default=256)
    parser.add_argument("--metrics", type=int, default=30, help="metrics per step")
    parser.add_argument("--val-every", type=int, default=500)
    parser.add_argument("--build", action="store_true", help="also build the site from the imported runs")
    parser.add_argument("--keep", type=Path, help="write the logs, runs and site here and keep them")
    parser.add_argument("--json", type=Path, default=REPO / "benchmarks" / "results" / "trainer_logs.json")
    args = parser.parse_args(argv)
    work = args.keep or Path(tempfile.mkdtemp(prefix="unipo-trainer-logs-"))
    work.mkdir(parents=True, exist_ok=True)
    started = datetime.now(timezone.utc)
    figures: dict = {"benchmark": "trainer_logs", "date": started.isoformat(timespec="seconds"),
                     "command": "python " + " ".join([str(Path(sys.argv[0]).relative_to(REPO))
                                                      if Path(sys.argv[0]).is_absolute() else sys.argv[0]]
                                                     + (argv if argv is not None else sys.argv[1:])),
                     "machine": machine(), "settings": {k: v for k, v in vars(args).items()
                                                        if k not in ("keep", "json")}, "results": {}}
    ok = True
    runs = work / "runs"
    try:
        for fmt in args.formats.split(","):
            src = work / "logs" / fmt
            out = runs / f"big-{fmt}"
            for path in (src, out):
                if path.exists():
                    shutil.rmtree(path)
            t = time.perf_counter()
            written = WRITERS[fmt](src, args, random.Random(0))
            written.update(write_seconds=round(time.perf_counter() - t, 1), input_mb=size_mb(src))
            command = [str(UNIPO), "import", fmt, str(src), "--out", str(out)]
            if fmt == "prime-rl":
                command += ["--algorithm", "dr_grpo"]
            elif fmt == "openrlhf":
                command += ["--algorithm", "grpo"]
            result = measure(command, work / f"import-{fmt}.log")
            ok &= result["returncode"] == 0
            token_files = sorted((out / "tokens").glob("step_*.json")) if out.is_dir() else []
            result.update(output_mb=size_mb(out) if out.is_dir() else None, token_files=len(token_files),
                          largest_token_file_kb=round(max((p.stat().st_size for p in token_files), default=0) / 1e3, 1))
            figures["results"][fmt] = {**written, "import": result}
            state = "ok" if result["returncode"] == 0 else f"FAILED (see {result['log']})"
            print(f"{fmt}: {written['steps']:,} steps, {written['detail_steps']} with detail, {written['input_mb']} MB "
                  f"written in {written['write_seconds']} s; import {state}: {result['seconds']} s, peak RSS "
                  f"{result['peak_rss_mb']} MB, largest token file {result['largest_token_file_kb']} KB", flush=True)
        if args.build and runs.is_dir():
            # the baseline: the same build from the test fixtures' small runs, so the difference is what the
            # large logs cost on this machine at this load
            small = work / "runs-small"
            if small.exists():
                shutil.rmtree(small)
            fixtures = REPO / "tests" / "fixtures"
            for fmt, src, extra in (("verl", fixtures / "verl" / "run", []),
                                    ("prime-rl", fixtures / "prime_rl" / "run", ["--algorithm", "dr_grpo"])):
                if fmt in args.formats.split(","):
                    subprocess.run([str(UNIPO), "import", fmt, str(src), "--out", str(small / fmt), *extra],
                                   cwd=REPO, check=True, capture_output=True)
            baseline = _build(small, work / "site-small", work / "build-small.log")
            ok &= baseline["returncode"] == 0
            figures["build_baseline"] = baseline
            print(f"baseline build (the test fixtures' runs): {baseline['seconds']} s, peak RSS "
                  f"{baseline['peak_rss_mb']} MB", flush=True)
            site = work / "site"
            built = _build(runs, site, work / "build.log")
            ok &= built["returncode"] == 0
            steps = list((site / "assets" / "runs").glob("*/steps/step_*.json"))
            largest = max((p.stat().st_size for p in steps), default=0)
            built.update(largest_step_file_kb=round(largest / 1e3, 1), step_file_budget_kb=STEP_BUDGET / 1e3,
                         site_mb=size_mb(site), site_budget_mb=SITE_BUDGET_MB,
                         within_budget=largest < STEP_BUDGET and size_mb(site) < SITE_BUDGET_MB)
            figures["build"] = built
            print(f"build: {built['seconds']} s, peak RSS {built['peak_rss_mb']} MB, largest step file "
                  f"{built['largest_step_file_kb']} KB, site {built['site_mb']} MB "
                  f"({'within' if built['within_budget'] else 'OVER'} the budgets: {STEP_BUDGET // 1000} KB a step "
                  f"file, {SITE_BUDGET_MB} MB the site)", flush=True)
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)
    figures["finished"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
    figures["machine"]["loadavg_end"] = [round(x, 2) for x in os.getloadavg()]
    for entry in list(figures["results"].values()) + [figures[k] for k in ("build", "build_baseline") if k in figures]:
        entry.get("import", entry).pop("log", None)
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(figures, indent=2) + "\n")
    print(f"figures written to {args.json}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
