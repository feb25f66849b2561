"""The committed data's size against its budget (DESIGN.md): ``data/`` under 45 MB, 55 MB with a third run set.

Prints the size of ``data/`` and of each of its folders (each run set, ``data/runs*``, on its own line), then,
for each run set, each kind of run file (header, steps, evaluations, token files, anything else): how many
files, how many of them are gzipped (``unipo publish``), the bytes stored and the bytes they would take plain.
Sizes are the files' bytes (what git stores; ``du -sh`` counts whole disk blocks, a little more), in MB of
10^6 bytes. A measurement, not a test: it exits 0 whatever the figures.

    .venv/bin/python benchmarks/data_size.py              # the table
    .venv/bin/python benchmarks/data_size.py --json out.json
    .venv/bin/python benchmarks/data_size.py --data other/data
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from unipo_build.core import runlog  # noqa: E402

MB = 1e6
#: DESIGN.md's budgets: data/ with the two run sets (tiny, gpu), and with a third.
BUDGET_MB = 45
BUDGET_THIRD_SET_MB = 55
KINDS = ("header", "steps", "evals", "tokens", "other")


def kind_of(run_dir: Path, path: Path) -> str:
    """Which of KINDS a file of a run directory is."""
    rel = path.relative_to(run_dir)
    name = rel.name.removesuffix(runlog.GZIP_SUFFIX)
    if rel.parts == (runlog.HEADER,):
        return "header"
    if len(rel.parts) == 1 and name == runlog.STEPS:
        return "steps"
    if len(rel.parts) == 1 and name == runlog.EVALS:
        return "evals"
    if len(rel.parts) == 2 and rel.parts[0] == runlog.TOKENS_DIR and runlog.token_step_of(rel.name) is not None:
        return "tokens"
    return "other"


def files_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def run_set_kinds(folder: Path) -> dict[str, dict[str, int]]:
    """kind -> {files, gzipped, stored, plain} over every run directory of a run set."""
    kinds: dict[str, dict[str, int]] = defaultdict(lambda: {"files": 0, "gzipped": 0, "stored": 0, "plain": 0})
    for run_dir in sorted(p for p in folder.iterdir() if p.is_dir()):
        for path in sorted(p for p in run_dir.rglob("*") if p.is_file()):
            row = kinds[kind_of(run_dir, path)]
            size = path.stat().st_size
            row["files"] += 1
            row["stored"] += size
            if runlog.is_packed(path):
                row["gzipped"] += 1
                try:
                    row["plain"] += len(runlog.read_log_bytes(path))
                except runlog.LogError:  # unreadable: counted as stored
                    row["plain"] += size
            else:
                row["plain"] += size
    for path in (p for p in folder.iterdir() if p.is_file()):  # loose files beside the runs
        row = kinds["other"]
        row["files"] += 1
        row["stored"] += path.stat().st_size
        row["plain"] += path.stat().st_size
    return {k: dict(kinds[k]) for k in KINDS if k in kinds}


def measure(data: Path) -> dict:
    folders = sorted(p for p in data.iterdir() if p.is_dir())
    run_sets = [p for p in folders if p.name == "runs" or p.name.startswith("runs-")]
    loose = sum(p.stat().st_size for p in data.iterdir() if p.is_file())
    sizes = {p.name: files_bytes(p) for p in folders}
    total = sum(sizes.values()) + loose
    budget = BUDGET_MB if len(run_sets) <= 2 else BUDGET_THIRD_SET_MB
    return {"data": str(data), "total_bytes": total, "budget_mb": budget, "run_sets": [p.name for p in run_sets],
            "folders": sizes, "loose_files_bytes": loose,
            "kinds": {p.name: run_set_kinds(p) for p in run_sets}}


def _mb(n: int) -> str:
    return f"{n / MB:7.2f} MB"


def report(figures: dict) -> list[str]:
    total, budget = figures["total_bytes"], figures["budget_mb"]
    sets = len(figures["run_sets"])
    state = "ok" if total < budget * MB else "OVER"
    lines = [f"{figures['data']}: {_mb(total)} of {budget} MB ({sets} run set{'s' if sets != 1 else ''}; "
             f"{BUDGET_MB} MB with two, {BUDGET_THIRD_SET_MB} MB with a third): {state}, "
             f"{(budget * MB - total) / MB:.2f} MB left", ""]
    lines.append(f"{'folder':<22}{'stored':>11}")
    for name, size in sorted(figures["folders"].items(), key=lambda kv: -kv[1]):
        mark = "  (run set)" if name in figures["run_sets"] else ""
        lines.append(f"{name:<22}{_mb(size):>11}{mark}")
    if figures["loose_files_bytes"]:
        lines.append(f"{'(files in data/)':<22}{_mb(figures['loose_files_bytes']):>11}")
    for name, kinds in figures["kinds"].items():
        lines += ["", f"{name}: {'kind':<8}{'files':>7}{'gzipped':>9}{'stored':>12}{'plain':>12}{'ratio':>7}"]
        for kind, row in kinds.items():
            ratio = row["stored"] / row["plain"] if row["plain"] else 1.0
            lines.append(f"{'':<{len(name) + 2}}{kind:<8}{row['files']:>7}{row['gzipped']:>9}{_mb(row['stored']):>12}"
                         f"{_mb(row['plain']):>12}{ratio:>7.2f}")
        stored, plain = sum(r["stored"] for r in kinds.values()), sum(r["plain"] for r in kinds.values())
        lines.append(f"{'':<{len(name) + 2}}{'all':<8}{sum(r['files'] for r in kinds.values()):>7}"
                     f"{sum(r['gzipped'] for r in kinds.values()):>9}{_mb(stored):>12}{_mb(plain):>12}"
                     f"{(stored / plain if plain else 1.0):>7.2f}")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default=str(ROOT / "data"), help="the data directory (default: the project's)")
    parser.add_argument("--json", metavar="PATH", help="also write the figures as JSON")
    args = parser.parse_args(argv)
    figures = measure(Path(args.data))
    print("\n".join(report(figures)))
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
