"""What one GPU lease made: the gpu set's figures, read from the shipped runs (data/runs-gpu).

    python benchmarks/gpu_set_report.py [--runs data/runs-gpu] [--trace DIR/gpu-trace.csv] [--json PATH]

Prints, per run: rollouts trained (of those asked), wall time, greedy held-out accuracy at the start
and the end with the paired change and its 95% interval, and the memorisation check's gaps (the RL
pool's and rollout 0's, against the held-out sampled accuracy); then per algorithm the range over
seeds, and, given the nvidia-smi trace benchmarks/gpu_set.sh writes, the GPU memory and utilisation
while the suite ran. Every figure is computed here from the logs; nothing is typed in.
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

from unipo_build import runlog  # noqa: E402
from unipo_build.summary import summarize  # noqa: E402


def run_rows(runs: Path) -> list[dict]:
    rows = []
    for path in sorted(p for p in runs.iterdir() if (p / "header.json").is_file()):
        header = runlog.read_header(path)
        s = summarize(path, with_moments=False)
        greedy = s["heldout_change"]["greedy"]
        check = s["memorisation_check"] or {}
        rows.append({
            "run": path.name, "algorithm": header.algorithm, "seed": header.seed,
            "rollouts": s["rollouts"], "rollouts_asked": header.hyperparameters.get("steps_asked") or s["rollouts"],
            "wall_s": s["wall_time_s"], "device": header.hardware.device_name if header.hardware else None,
            "greedy_start": greedy["start"], "greedy_end": greedy["end"], "greedy_change": greedy["change"],
            "greedy_ci95": greedy["ci95"], "memorisation_gap_points": check.get("gap_points"),
            "rollout0_gap_points": check.get("rollout_gap_points"), "memorisation_agree": check.get("agree"),
        })
    return rows


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
    rows = run_rows(Path(args.runs))
    print(f"{'run':24s} {'rollouts':>9s} {'wall s':>7s}  greedy held-out (paired change, 95% CI)   memorisation gap")
    for r in rows:
        print(f"{r['run']:24s} {r['rollouts']:>4d}/{r['rollouts_asked']:<4d} {r['wall_s']:7.1f}  "
              f"{100 * r['greedy_start']:.1f} -> {100 * r['greedy_end']:.1f} ({100 * r['greedy_change']:+.1f}, "
              f"[{100 * r['greedy_ci95'][0]:.1f}, {100 * r['greedy_ci95'][1]:.1f}])   "
              f"pool {r['memorisation_gap_points']:+.1f}, rollout 0 {r['rollout0_gap_points']:+.1f}")
    by_algorithm: dict[str, list[float]] = defaultdict(list)
    for r in rows:
        by_algorithm[r["algorithm"]].append(r["greedy_change"])
    summary = {a: {"seeds": len(v), "min_points": 100 * min(v), "max_points": 100 * max(v)}
               for a, v in sorted(by_algorithm.items())}
    print()
    for a, v in summary.items():
        print(f"{a:24s} {v['seeds']} seed(s): +{v['min_points']:.1f} to +{v['max_points']:.1f} greedy points")
    out = {"benchmark": "gpu_set", "runs": rows, "by_algorithm": summary}
    if args.trace:
        out["gpu_trace"] = trace_figures(Path(args.trace))
        print(f"\nGPU while the suite ran: peak {out['gpu_trace']['peak_memory_gib']:.1f} GiB, mean utilisation "
              f"{out['gpu_trace']['mean_utilisation_pct']:.0f}% ({out['gpu_trace']['samples']} samples, 5 s apart)")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
