"""Subcommands beyond ``validate``, each registered by a function taking the subparsers.

Training commands import torch only when they run, so the site needs none of it.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def _train(args: argparse.Namespace) -> int:
    if args.engine == "openrlhf":
        from unipo_build.cli_openrlhf import run_openrlhf

        if args.algorithm == "all":
            print("unipo train --engine openrlhf trains one algorithm at a time", file=sys.stderr)
            return 2
        return run_openrlhf(args)
    if args.dry_run:
        print("--dry-run prints the OpenRLHF command: use it with --engine openrlhf", file=sys.stderr)
        return 2
    try:
        from training.rl import TrainOptions, train
    except ImportError as err:
        print(f"unipo train needs the training extra (pip install torch==2.13.0 && pip install -e '.[train]'): {err}",
              file=sys.stderr)
        return 2
    from unipo_build.specs import load_specs

    names = sorted(load_specs()) if args.algorithm == "all" else [args.algorithm]
    if args.algorithm == "all" and args.out:
        print("with 'all', --out is a parent directory: one run per algorithm inside it", file=sys.stderr)
    for name in names:
        out = args.out
        if args.algorithm == "all" and args.out:
            out = str(Path(args.out) / name)
        opts = TrainOptions(algorithm=name, preset=args.preset, steps=args.steps, seed=args.seed, out=out,
                            resume=args.resume, model=args.model, task=args.task, device=args.device,
                            progress=not args.no_progress, lr=args.lr, eval_every=args.eval_every,
                            eval_n=args.eval_n, detail_every=args.detail_every,
                            checkpoint_every=args.checkpoint_every, threads=args.threads)
        run_dir = train(opts)
        print(f"{name}: run written to {run_dir}")
    return 0


def _sft(args: argparse.Namespace) -> int:
    try:
        from training.sft import run_sft
    except ImportError as err:
        print(f"unipo sft needs the training extra: {err}", file=sys.stderr)
        return 2
    out = args.out or f"work/sft-{args.preset}"
    result = run_sft(out, preset=args.preset, seed=args.seed, steps=args.steps, device=args.device,
                     progress=not args.no_progress)
    print(json.dumps(result, indent=2, default=str))
    return 0


def _summary(args: argparse.Namespace) -> int:
    from unipo_build import runlog
    from unipo_build.summary import summarize

    try:
        result = summarize(args.run_dir, with_moments=not args.no_moments)
    except (runlog.LogError, runlog.LogErrors) as err:
        print(str(err), file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        for key, value in result.items():
            if key == "moments":
                for name, where in value.items():
                    print(f"  moment {name}: {where if where else 'not in this run'}")
            else:
                print(f"{key}: {value}")
    return 0


def register_train(sub) -> None:
    p = sub.add_parser("train", help="train an algorithm (or all) and log it token by token",
                       description="Train ALGO (a spec id, a spec file, or 'all') with the in-house trainer. "
                                   "The SFT warm start runs first if no warm-start checkpoint exists.")
    p.add_argument("algorithm")
    p.add_argument("--preset", default="tiny", choices=["tiny", "gpu"])
    p.add_argument("--steps", type=int, help="number of rollouts (each is epochs x minibatches gradient steps)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", help="run directory (default work/runs/<algo>-<preset>-s<seed>)")
    p.add_argument("--resume", action="store_true", help="continue a killed run from its last checkpoint")
    p.add_argument("--model", help="a local Hugging Face causal-LM checkpoint to start from")
    p.add_argument("--task", help="a task directory (train.jsonl, eval.jsonl) or one JSONL of prompt/answer pairs")
    p.add_argument("--device", default="auto", help="auto, cpu or cuda")
    p.add_argument("--lr", type=float)
    p.add_argument("--eval-every", type=int, help="rollouts between held-out evaluations")
    p.add_argument("--eval-n", type=int, help="held-out problems per evaluation")
    p.add_argument("--detail-every", type=int, help="rollouts between rollouts logged token by token")
    p.add_argument("--checkpoint-every", type=int, default=10, help="rollouts between checkpoints")
    p.add_argument("--threads", type=int,
                   help="torch threads (default: $UNIPO_THREADS or the preset's); use 1 on a busy machine")
    p.add_argument("--no-progress", action="store_true")
    p.add_argument("--engine", choices=["unipo", "openrlhf"], default="unipo",
                   help="unipo: the in-house trainer (default); openrlhf: OpenRLHF 0.11.2 on a GPU node or Ray "
                        "cluster, with the same spec (see `unipo openrlhf command`)")
    p.add_argument("--dry-run", action="store_true", help="with --engine openrlhf: print the command, run nothing")
    from unipo_build.cli_openrlhf import add_run_options

    add_run_options(p, in_train=True)
    p.set_defaults(func=_train)

    p = sub.add_parser("sft", help="supervised warm start of the small model")
    p.add_argument("--preset", default="tiny", choices=["tiny", "gpu"])
    p.add_argument("--out")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--steps", type=int)
    p.add_argument("--device", default="auto")
    p.add_argument("--no-progress", action="store_true")
    p.set_defaults(func=_sft)

    p = sub.add_parser("summary", help="a run in a few numbers, with its teaching moments")
    p.add_argument("run_dir")
    p.add_argument("--json", action="store_true")
    p.add_argument("--no-moments", action="store_true")
    p.set_defaults(func=_summary)


def _suite(args: argparse.Namespace) -> int:
    try:
        from training.suite import DEFAULT_SUITE, SuiteError, run_suite
    except ImportError as err:
        print(f"unipo suite needs the training extra (pip install torch==2.13.0 && pip install -e '.[train]'): {err}",
              file=sys.stderr)
        return 2
    try:
        return run_suite(args.suite or DEFAULT_SUITE, args.out, jobs=args.jobs, only=args.only,
                         device=args.device, dry_run=args.dry_run)
    except SuiteError as err:
        print(str(err), file=sys.stderr)
        return 2


def register_suite(sub) -> None:
    p = sub.add_parser("suite", help="train every shipped run (data/suite.yaml), several at a time; resumable",
                       description="Train the runs listed in a suite file that OUT does not hold yet, in parallel "
                                   "processes with one torch thread each. Finished runs are skipped and interrupted "
                                   "ones resumed, so the command can be run again until everything is there.")
    p.add_argument("--suite", help="suite file (default data/suite.yaml)")
    p.add_argument("--out", default="data/runs", help="directory of runs (default data/runs)")
    p.add_argument("--jobs", type=int, help="runs at a time (default: the number of CPU cores)")
    p.add_argument("--only", nargs="+", metavar="NAME", help="train only these runs of the suite")
    p.add_argument("--device", default="auto", help="auto (a GPU if there is one), cpu or cuda")
    p.add_argument("--dry-run", action="store_true", help="list what would run, run nothing")
    p.set_defaults(func=_suite)


def _cmd_import(args: argparse.Namespace) -> int:
    from unipo_build.importers import import_log
    from unipo_build.importers.common import OutputError
    from unipo_build.runlog import LogError, LogErrors

    try:
        header = import_log(args.format, args.src, args.out, algorithm=args.algorithm, run_id=args.run_id,
                            max_new_tokens=args.max_new_tokens, tap=args.tap)
    except LogErrors as err:
        for e in err.errors:
            print(str(e), file=sys.stderr)
        return 1
    except (LogError, OutputError, FileNotFoundError) as err:
        print(str(err), file=sys.stderr)
        return 1
    config = "with its spec's components" if header.algorithm_config is not None else "algorithm_config null"
    print(f"{args.out}: run {header.run_id!r}, algorithm {header.algorithm!r} ({config})")
    if header.notes:
        print(header.notes)
    return 0


def register_import(sub) -> None:
    p = sub.add_parser(
        "import", help="convert another tool's training log into a run directory",
        description="Convert a training log into a canonical run directory that `unipo validate` accepts and "
                    "`mkdocs build` shows (point UNIPO_RUNS at its parent). FORMAT 'unipo': UNIPO's published "
                    "log format, one .json or .jsonl file. FORMAT 'openrlhf': OpenRLHF's TensorBoard scalars, an "
                    "events.out.tfevents.* file or a directory holding them. The input is never modified; --out "
                    "must be new or empty. Every value the importer derives is listed in the run header's notes.")
    from unipo_build.importers import FORMATS

    p.add_argument("format", choices=sorted(FORMATS))
    p.add_argument("src", help="the log: a .json/.jsonl file (unipo) or an event file or directory (openrlhf)")
    p.add_argument("--out", required=True, help="the run directory to create (new or empty)")
    p.add_argument("--algorithm", help="the algorithm (a spec id such as grpo); overrides the log's header")
    p.add_argument("--run-id", help="the run's id (default: from the file or directory name)")
    p.add_argument("--max-new-tokens", type=int,
                   help="the generation budget, when the algorithm divides by it (Dr. GRPO) and the log lacks it")
    p.add_argument("--tap", help="openrlhf only: the UNIPO token tap's directory (manifest.json and shards), for "
                                 "the algorithm actually run and token-level detail")
    p.set_defaults(func=_cmd_import)


def _cmd_new_algorithm(args: argparse.Namespace) -> int:
    from unipo_build.scaffold import MARK, ScaffoldError, scaffold
    from unipo_build.specs import SpecError

    try:
        spec_path, chapter_path = scaffold(args.name, base=args.base, root=args.root)
    except (ScaffoldError, SpecError) as err:
        print(str(err), file=sys.stderr)
        return 1
    print(f"wrote {spec_path} (a copy of {args.base}; validates)")
    print(f"wrote {chapter_path}")
    print(f"next: rewrite every {MARK} in both files (grep -n '{MARK}' {spec_path} {chapter_path}), "
          f"change the components, run `unipo validate {spec_path}`, add the chapter to nav in mkdocs.yml")
    return 0


def register_new_algorithm(sub) -> None:
    p = sub.add_parser(
        "new-algorithm", help="scaffold the spec and chapter of a new algorithm",
        description="Write data/algorithms/NAME.yaml (a copy of the base spec that validates, its texts marked "
                    "TODO(author)) and docs/course/algorithms/NAME.md (a chapter using the course's macros). "
                    "Existing files are never overwritten.")
    p.add_argument("name", help="the new algorithm's id: lower-case letters, digits and '_' (e.g. my_po)")
    p.add_argument("--base", default="grpo", help="the spec to start from, also the predecessor (default grpo)")
    p.add_argument("--root", default=".", help="the repository root (default: the current directory)")
    p.set_defaults(func=_cmd_new_algorithm)


def register_openrlhf(sub) -> None:
    from unipo_build.cli_openrlhf import register

    register(sub)


REGISTRARS: list = [register_train, register_suite, register_import, register_new_algorithm, register_openrlhf]
