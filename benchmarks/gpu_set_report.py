"""What one GPU lease made: the gpu set's figures, read from the shipped runs (data/runs-gpu).

    python benchmarks/gpu_set_report.py [--runs data/runs-gpu] [--trace DIR/gpu-trace.csv] [--json PATH]

Prints, per run: rollouts trained (of those asked), wall time and seconds per rollout, greedy
held-out accuracy at the start and the end with the paired change and its 95% interval, the plateau
test (the last periodic evaluation against the end one on the same first problems: issue 32 asks the
two to agree within 2 points, or 96 rollouts), the updates skipped for a non-finite gradient, and
the memorisation check's gaps (the RL pool's and rollout 0's, against the held-out sampled
accuracy); then per algorithm the range over seeds; the whole set's rollouts per second (every
run's rollouts over the span from the first start to the last finish); and, given the nvidia-smi
trace benchmarks/gpu_set.sh writes, the GPU memory and utilisation while the suite ran. Every figure
is computed here from the logs; nothing is typed in.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from unipo_build.core import runlog  # noqa: E402
from unipo_build.core.summary import summarize  # noqa: E402


PLATEAU_POINTS = 2.0  # issue 32: the last two periodic evaluations within 2 points ...
PLATEAU_ROLLOUTS = 96  # ... or at least 96 rollouts


def plateau(path: Path) -> dict | None:
    """The last periodic greedy evaluation against the end one, on the periodic one's problems
    (the end evaluation's first n rows): their difference in points, or None without a periodic one."""
    evals = list(runlog.iter_evals(path))
    periodic = [e for e in evals if e.phase == "periodic" and e.correct_greedy]
    end = next((e for e in evals if e.phase == "end" and e.correct_greedy), None)
    if not periodic or end is None:
        return None
    last = periodic[-1]
    n = len(last.correct_greedy)
    at_end = end.correct_greedy[:n].count("1") / n
    return {"periodic_step": last.step, "n": n, "periodic": last.correct_greedy.count("1") / n, "end": at_end,
            "difference_points": 100 * (at_end - last.correct_greedy.count("1") / n)}


def run_rows(runs: Path) -> tuple[list[dict], list[str]]:
    """(a row per finished run, the names of the runs that did not finish)."""
    rows, unfinished = [], []
    for path in sorted(p for p in runs.iterdir() if (p / runlog.HEADER).is_file()):
        header = runlog.read_header(path)
        if header.finished_at is None:
            unfinished.append(path.name)
            continue
        s = summarize(path, with_moments=False)
        greedy = s["heldout_change"]["greedy"]
        check = s["memorisation_check"] or {}
        steps = list(runlog.iter_steps(path))
        flat = plateau(path)
        rollouts = s["rollouts"]
        rows.append({
            "run": path.name, "algorithm": header.algorithm, "seed": header.seed,
            "rollouts": rollouts, "rollouts_asked": header.hyperparameters.get("steps_asked") or rollouts,
            "wall_s": s["wall_time_s"], "s_per_rollout": s["wall_time_s"] / rollouts if rollouts else None,
            "started": header.created_at.isoformat(), "finished": header.finished_at.isoformat(),
            "device": header.hardware.device_name if header.hardware else None,
            "greedy_start": greedy["start"], "greedy_end": greedy["end"], "greedy_change": greedy["change"],
            "greedy_ci95": greedy["ci95"], "plateau": flat,
            "at_plateau": bool(flat and abs(flat["difference_points"]) <= PLATEAU_POINTS) or rollouts >= PLATEAU_ROLLOUTS,
            "skipped_updates": sum(1 for st in steps if st.metrics.get("update/skipped")),
            "memorisation_gap_points": check.get("gap_points"),
            "rollout0_gap_points": check.get("rollout_gap_points"), "memorisation_agree": check.get("agree"),
        })
    return rows, unfinished


def set_rate(rows: list[dict]) -> dict:
    """Rollouts of every run over the span from the first run's start to the last one's finish."""
    from datetime import datetime

    start = min(datetime.fromisoformat(r["started"]) for r in rows)
    end = max(datetime.fromisoformat(r["finished"]) for r in rows)
    span = (end - start).total_seconds()
    total = sum(r["rollouts"] for r in rows)
    return {"runs": len(rows), "rollouts": total, "span_s": span, "rollouts_per_s": total / span if span else None}


def trace_figures(trace: Path) -> dict:
    """Peak GPU memory (GiB) and mean utilisation (%) from nvidia-smi's CSV."""
    with trace.open() as fh:
        rows = [r for r in csv.reader(fh)][1:]
    memory = [float(r[1].split()[0]) / 1024 for r in rows if len(r) >= 3]
    util = [float(r[2].split()[0]) for r in rows if len(r) >= 3]
    return {"samples": len(memory), "peak_memory_gib": max(memory), "mean_utilisation_pct": sum(util) / len(util)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", default=str(REPO / "data" / "runs-gpu"))
    ap.add_argument("--trace", help="gpu-trace.csv written by benchmarks/gpu_set.sh")
    ap.add_argument("--json", help="also write the figures here")
    args = ap.parse_args()
    rows, unfinished = run_rows(Path(args.runs))
    if unfinished:
        print(f"not finished (left out): {', '.join(unfinished)}")
    print(f"{'run':24s} {'rollouts':>9s} {'wall s':>7s} {'s/roll':>6s}  greedy held-out (paired change, 95% CI)"
          f"   last periodic -> end   skipped   memorisation gap")
    for r in rows:
        flat = r["plateau"]
        flat_text = (f"{100 * flat['periodic']:.1f} -> {100 * flat['end']:.1f} ({flat['difference_points']:+.1f})"
                     if flat else "no periodic")
        print(f"{r['run']:24s} {r['rollouts']:>4d}/{r['rollouts_asked']:<4d} {r['wall_s']:7.1f} {r['s_per_rollout']:6.2f}  "
              f"{100 * r['greedy_start']:.1f} -> {100 * r['greedy_end']:.1f} ({100 * r['greedy_change']:+.1f}, "
              f"[{100 * r['greedy_ci95'][0]:.1f}, {100 * r['greedy_ci95'][1]:.1f}])   {flat_text:22s} "
              f"{r['skipped_updates']:>3d}   pool {r['memorisation_gap_points']:+.1f}, rollout 0 {r['rollout0_gap_points']:+.1f}")
    by_algorithm: dict[str, list[float]] = defaultdict(list)
    for r in rows:
        by_algorithm[r["algorithm"]].append(r["greedy_change"])
    summary = {a: {"seeds": len(v), "min_points": 100 * min(v), "max_points": 100 * max(v)}
               for a, v in sorted(by_algorithm.items())}
    print()
    for a, v in summary.items():
        print(f"{a:24s} {v['seeds']} seed(s): +{v['min_points']:.1f} to +{v['max_points']:.1f} greedy points")
    rate = set_rate(rows)
    print(f"\nthe set: {rate['rollouts']} rollouts of {rate['runs']} runs in {rate['span_s']:.0f} s: "
          f"{rate['rollouts_per_s']:.2f} rollouts per second; at a plateau: "
          f"{sum(r['at_plateau'] for r in rows)} of {len(rows)} runs; updates skipped: {sum(r['skipped_updates'] for r in rows)}")
    out = {"benchmark": "gpu_set", "runs": rows, "unfinished": unfinished, "by_algorithm": summary, "set": rate}
    if args.trace:
        out["gpu_trace"] = trace_figures(Path(args.trace))
        print(f"\nGPU while the suite ran: peak {out['gpu_trace']['peak_memory_gib']:.1f} GiB, mean utilisation "
              f"{out['gpu_trace']['mean_utilisation_pct']:.0f}% ({out['gpu_trace']['samples']} samples, 5 s apart)")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
