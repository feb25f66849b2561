"""``unipo trim-steps``: bring the step files of runs already written within a byte budget, by the
trainer's own rule (``unipo_build.core.step_budget``)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from unipo_build.core import runlog
from unipo_build.core.numbers import fmt_num
from unipo_build.core.runs import is_run_dir
from unipo_build.core.step_budget import STEP_FILE_BUDGET, trim_step_file


def trim_run(run_dir: Path, max_bytes: int) -> tuple[list[str], list[str]]:
    """(lines for what was trimmed, problems) for one run directory's step files."""
    if not run_dir.is_dir():
        return [], [f"{run_dir}: no such run directory"]
    if not is_run_dir(run_dir):
        return [], [f"{run_dir}: not a run directory (no {runlog.HEADER} or {runlog.STEPS})"]
    done, problems = [], []
    for step in runlog.token_steps(run_dir):
        path = run_dir / runlog.TOKENS_DIR / runlog.token_file_name(step)
        try:
            path = runlog.token_file(run_dir, step)  # step_N.json, or step_N.json.gz in a published run
            before, after, kept = trim_step_file(run_dir, step, max_bytes)
        except runlog.LogErrors as err:  # one line for the file: its first problem, and how many more
            more = f" (and {len(err.errors) - 1} more: `unipo validate {path}` lists them)" if len(err.errors) > 1 else ""
            problems.append(f"{err.errors[0]}{more}; the file was not changed")
            continue
        except runlog.LogError as err:
            problems.append(f"{err}; the file was not changed")
            continue
        except OSError as err:
            problems.append(f"{path}: cannot be read or written: {err.strerror or err}")
            continue
        if after == before and after <= max_bytes:
            continue
        groups = f"{kept} group{'s' if kept != 1 else ''} detailed"
        if after != before:
            done.append(f"{path}: {fmt_num(before)} -> {fmt_num(after)} bytes, {groups}")
        if after > max_bytes:
            problems.append(f"{path}: step {step}: prompts: still {fmt_num(after)} bytes with {groups} (the first "
                            f"group is always kept), over the budget of {fmt_num(max_bytes)}")
    return done, problems


def _trim_steps(args: argparse.Namespace) -> int:
    if args.max_bytes < 1:
        print(f"--max-bytes: {args.max_bytes}: a number of bytes above 0", file=sys.stderr)
        return 2
    failed = False
    for raw in args.run_dirs:
        done, problems = trim_run(Path(raw), args.max_bytes)
        for line in done:
            print(line)
        for line in problems:
            print(line, file=sys.stderr)
        failed = failed or bool(problems)
        if not done and not problems:
            print(f"{raw}: every step file is within {fmt_num(args.max_bytes)} bytes")
    return 1 if failed else 0


def register_trim_steps(sub) -> None:
    p = sub.add_parser(
        "trim-steps", help="bring runs' step files (tokens/step_*.json) within a byte budget",
        description="Rewrite each step file of each run that is over MAX_BYTES with fewer groups detailed token by "
                    "token, by the rule the trainer writes step files with (--detail-bytes): the detailed groups in "
                    "their order of choice (one mixed, one all-correct, one all-wrong, then the other mixed ones), each kept while the "
                    "file stays within the budget, a group that does not fit passed over for the next, the first "
                    "always kept. Everything else in the file (step, rollout, objective, every group's summary, the "
                    "filtered groups) and each group kept is unchanged; files within the budget are not touched. "
                    "Each file is written atomically, in the form it had (a published run's gzipped file stays "
                    "gzipped; the budget counts its plain bytes, what the site serves). Exit 1 when a file cannot be read or stays over the budget.")
    p.add_argument("run_dirs", nargs="+", metavar="RUN_DIR", help="run directories (each holds tokens/)")
    p.add_argument("--max-bytes", type=int, default=STEP_FILE_BUDGET,
                   help=f"the budget of one step file in bytes (default {STEP_FILE_BUDGET}: the site's 300 KB)")
    p.set_defaults(func=_trim_steps)
