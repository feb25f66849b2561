"""Time the guides' commands as a reader runs them, and record what each one writes.

Walks docs/guides/contribute.md and docs/guides/own-logs.md on a fresh copy of the project, the
way tests/test_guides.py does, but with a real warm start: it first runs `unipo sft --threads 1`
(the guide quotes its time for a reader who makes their own), then every command of the guides in order.
For each command it records the wall time and the bytes of the files it created or changed, and
writes benchmarks/results/guide_commands.json, which the guides quote through the `measured`
macro (unipo_build/site/pages/guides/guide_costs.py).

    python benchmarks/guide_commands.py                         # about 20 minutes on 2 cores
    python benchmarks/guide_commands.py --warm-start work/sft-tiny   # reuse a warm start; keep its old figures

Run it on a quiet machine with the environment active; the figures are of this machine.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))  # the walks live with the tests that check them

from guide_walk import fresh_copy, shell_runner, walk_contribute, walk_own_logs  # noqa: E402

from unipo_build.core.cache import file_state  # noqa: E402
from unipo_build.site.pages.guides.guide_costs import RESULTS, duration_text, size_text  # noqa: E402

SFT = "unipo sft --threads 1"
NOT_COUNTED = {".git", "__pycache__", ".pytest_cache", ".hypothesis", "node_modules"}  # caches, not output


def snapshot(root: Path) -> dict[str, tuple[int, int]]:
    files = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d not in NOT_COUNTED]
        for name in filenames:
            path = Path(dirpath) / name
            files[path.relative_to(root).as_posix()] = file_state(path)[1:]  # (size, modification time)
    return files


def where(path: str) -> str:
    """The directory a written file belongs to, as a reader would name it (data/runs/rloo, work/sft-tiny)."""
    parts = path.split("/")
    depth = 3 if parts[0] == "data" else 2 if parts[0] in ("work", "runs") else 1
    return "/".join(parts[:min(depth, len(parts) - 1)]) or path


def measuring_runner(project: Path, figures: dict):
    run = shell_runner(project, timeout=3600)

    def measure(command: str):
        before = snapshot(project)
        start = time.perf_counter()
        result = run(command)
        wall = time.perf_counter() - start
        after = snapshot(project)
        written = {p: size for p, (size, mtime) in after.items() if before.get(p) != (size, mtime)}
        load = os.getloadavg()[1]  # other work on the machine slows a command down: keep it with the figure
        figures[command] = {"wall_s": round(wall, 1), "bytes": sum(written.values()),
                            "writes": sorted({where(p) for p in written}), "exit_status": result.returncode,
                            "load_average_5min": round(load, 1)}
        print(f"{duration_text(wall):>10}  {size_text(sum(written.values())):>8}  load {load:4.1f}  {command}",
              flush=True)
        if result.returncode != 0 and not command.startswith("grep "):
            sys.exit(f"failed: {command}\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}")
        return result

    return measure


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--warm-start", help="a warm start to reuse (skips timing `unipo sft`; its old figures are kept)")
    ap.add_argument("--json", default=str(REPO / RESULTS), help="where to write the figures (default %(default)s)")
    args = ap.parse_args(argv)
    old = json.loads(Path(args.json).read_text()) if Path(args.json).is_file() else {}
    figures: dict = {}
    with tempfile.TemporaryDirectory(prefix="unipo-guides-") as tmp:
        contribute = fresh_copy(Path(tmp) / "contribute")
        own_logs = fresh_copy(Path(tmp) / "own-logs")
        measure = measuring_runner(contribute, figures)
        if args.warm_start:
            shutil.copytree(args.warm_start, contribute / "work" / "sft-tiny")
            figures[SFT] = old["commands"][SFT]
        else:
            measure(SFT)
        shutil.copytree(contribute / "work" / "sft-tiny", own_logs / "work" / "sft-tiny")
        walk_contribute(contribute, measure)
        walk_own_logs(own_logs, measuring_runner(own_logs, figures))
    results = {
        "measured_at": date.today().isoformat(),
        "machine": f"a {os.cpu_count()}-core {platform.machine()} machine",
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "commands": figures,
    }
    Path(args.json).write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
