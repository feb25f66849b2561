"""Subcommands beyond ``validate``, each registered by a function taking the subparsers.

Training commands import torch only when they run, so the site needs none of it.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import textwrap
from pathlib import Path

from unipo_build.core.file_names import HELDOUT_POOL, RL_POOL, SFT_META, SFT_POOL

TRAIN_EXTRA = "pip install torch==2.13.0 && pip install -e '.[train]'"


def no_train_extra(command: str, err: ImportError) -> str:
    """One line, no traceback, for a training command whose imports fail (torch or another part of the train
    extra missing): what is missing and how to install the extra."""
    why = f"{err.name} is not installed" if isinstance(err, ModuleNotFoundError) and err.name else str(err)
    return (f"unipo {command} needs the train extra ({why}): {TRAIN_EXTRA} (torch first and pinned, as the extra "
            "keeps any torch it finds; for the CPU build add --index-url https://download.pytorch.org/whl/cpu to "
            "the first command)")


def _resume_command(args: argparse.Namespace) -> str:
    """The command line that was run, with --resume: what continues an interrupted run."""
    argv = list(getattr(args, "argv", None) or [])
    return shlex.join(["unipo", *argv, *([] if "--resume" in argv else ["--resume"])])


def _interrupted_line(err, args: argparse.Namespace) -> str:
    """One line for Ctrl-C: where the run stands and the command that continues it."""
    if not err.started:
        return (f"interrupted before the run started (during the warm start or while loading the model); nothing of "
                f"{err.out} was written: run the same command again")
    if err.checkpoint_rollout:
        saved = f"its last checkpoint is after rollout {err.checkpoint_rollout}"
        then = "continue it with"
    else:
        saved = "it has no checkpoint yet"
        then = "start it over with"
    return (f"interrupted: {err.out} holds {err.rollout} of {err.total} rollouts ({err.step} "
            f"update{'' if err.step == 1 else 's'} logged) and {saved}; {then}: {_resume_command(args)}")


def _train(args: argparse.Namespace) -> int:
    algorithm = "all" if args.algorithm.lower() == "all" else args.algorithm  # a spec id matches in any case
    if args.engine == "openrlhf":
        from unipo_build.cli.openrlhf import run_openrlhf

        if algorithm == "all":
            print("unipo train --engine openrlhf trains one algorithm at a time", file=sys.stderr)
            return 2
        return run_openrlhf(args)
    if args.dry_run:
        print("--dry-run prints the OpenRLHF command: use it with --engine openrlhf", file=sys.stderr)
        return 2
    from unipo_build.cli.openrlhf import openrlhf_only_given

    given = openrlhf_only_given(args)
    if given:  # the in-house trainer would ignore them: refused, so that a run is never silently other than asked
        print(f"{', '.join(given)}: {'OpenRLHF run options' if len(given) > 1 else 'an OpenRLHF run option'}, used "
              "with --engine openrlhf only; the in-house trainer takes the batch shape, lengths, temperature and "
              "passes from its preset (--preset) and the spec", file=sys.stderr)
        return 2
    try:
        from training.rl import TrainOptions, train
        from training.runstate import AlreadyFinished, Interrupted, TrainError
    except ImportError as err:
        print(no_train_extra("train", err), file=sys.stderr)
        return 2
    from unipo_build.core.specs import load_specs

    names = sorted(load_specs()) if algorithm == "all" else [algorithm]
    if algorithm == "all" and args.out:
        print("with 'all', --out is a parent directory: one run per algorithm inside it", file=sys.stderr)
    for name in names:
        out = args.out
        if algorithm == "all" and args.out:
            out = str(Path(args.out) / name)
        opts = TrainOptions(algorithm=name, preset=args.preset, steps=args.steps, seed=args.seed, out=out,
                            resume=args.resume, model=args.model, task=args.task, device=args.device,
                            progress=not args.no_progress, lr=args.lr, eval_every=args.eval_every,
                            eval_n=args.eval_n, detail_every=args.detail_every, sampler_lag=args.sampler_lag,
                            checkpoint_every=args.checkpoint_every, threads=args.threads,
                            time_limit=args.time_limit)
        try:
            run_dir = train(opts)
        except AlreadyFinished as err:
            if algorithm == "all" and args.resume:
                print(f"{name}: {err} (skipped)", file=sys.stderr)
                continue
            print(f"unipo train: {err}", file=sys.stderr)
            return 2
        except TrainError as err:
            print(f"unipo train: {err}", file=sys.stderr)
            return 2
        except Interrupted as err:
            print(_interrupted_line(err, args), file=sys.stderr)
            return 130
        except KeyboardInterrupt:
            print("interrupted before training started; nothing was logged", file=sys.stderr)
            return 130
        print(f"{name}: run written to {run_dir}")
    return 0


def _sft(args: argparse.Namespace) -> int:
    try:
        from training.sft import run_sft
    except ImportError as err:
        print(no_train_extra("sft", err), file=sys.stderr)
        return 2
    from unipo_build.core.presets import get_preset

    preset = get_preset(args.preset)
    out = Path(args.out or f"work/sft-{args.preset}")
    task = Path(args.task_dir or preset.task_dir)
    if (out / "config.json").exists():
        print(f"unipo sft: {out} already holds a checkpoint; nothing was changed: choose another --out "
              "(or delete it first)", file=sys.stderr)
        return 2
    missing = [str(task / name) for name in (SFT_POOL, HELDOUT_POOL) if not (task / name).is_file()]
    if missing:
        print(f"unipo sft: {' and '.join(missing)} not found: generate the task with `python -m training.task "
              f"--out {task} --level {preset.task_level}` or pass --task-dir", file=sys.stderr)
        return 2
    try:
        meta = run_sft(out, preset=args.preset, seed=args.seed, steps=args.steps, task_dir=task, device=args.device,
                       progress=not args.no_progress, threads=args.threads)
    except ValueError as err:
        print(f"unipo sft: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"interrupted: the warm start was not saved ({out} is unchanged); run the command again",
              file=sys.stderr)
        return 130
    from unipo_build.core.numbers import plain_fixed

    final = meta["final_eval"]
    print(f"warm start written to {out}: {meta['steps']} steps, held-out accuracy "
          f"{plain_fixed(final['accuracy_greedy'], 3)} greedy / {plain_fixed(final['accuracy_sampled'], 3)} sampled on "
          f"{final['n']} problems, {plain_fixed(meta['wall_seconds'], 0)} s "
          f"(details in {out / SFT_META})")
    return 0


def _summary(args: argparse.Namespace) -> int:
    from unipo_build.core import runlog
    from unipo_build.core.summary import summarize, summary_lines

    try:
        result = summarize(args.run_dir, with_moments=not args.no_moments, with_diagnoses=True)
    except (runlog.LogError, runlog.LogErrors) as err:
        print(str(err), file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print("\n".join(summary_lines(result)))
    return 0


def _preset_values(field: str) -> str:
    """'tiny 800, gpu 500': a preset field's value per preset, for --help."""
    from unipo_build.core.numbers import plain_num
    from unipo_build.core.presets import PRESETS

    return ", ".join(f"{name} {plain_num(float(getattr(p.rl, field)))}" for name, p in PRESETS.items())


def _preset_choices() -> list[str]:
    from unipo_build.core.presets import PRESETS

    return list(PRESETS)


def register_train(sub) -> None:
    presets = _preset_choices()
    p = sub.add_parser(
        "train", help="train an algorithm (or all) and log it token by token",
        description="Train ALGO with the in-house trainer (or on OpenRLHF with --engine openrlhf) and log the run "
                    "token by token. The SFT warm start runs first if neither work/sft-<preset> nor the project's "
                    "data/warm-start/<preset> holds one. Ctrl-C stops "
                    "a run; the same command with --resume continues it from its last checkpoint.")
    p.add_argument("algorithm", help="a spec id of data/algorithms (any case), a spec file, or 'all'")
    g = p.add_argument_group("what to train")
    g.add_argument("--preset", default="tiny", type=str.lower, choices=presets,
                   help="model size and batch shape (default %(default)s)")
    g.add_argument("--steps", type=int, help=f"number of rollouts, each followed by epochs x minibatches gradient "
                                             f"updates (default: the preset's: {_preset_values('steps')})")
    g.add_argument("--seed", type=int, default=0, help="default %(default)s")
    g.add_argument("--out", help="run directory (default work/runs/<algo>-<preset>-s<seed>); "
                                 "a directory that holds a run is never overwritten")
    g.add_argument("--resume", action="store_true",
                   help="continue an interrupted run in --out from its last checkpoint (or start it over if it had "
                        "none yet)")
    g.add_argument("--model", help="a local Hugging Face causal-LM checkpoint to start from "
                                   "(default: the preset's warm start, work/sft-<preset>, else data/warm-start/<preset>)")
    g.add_argument("--task", help=f"a task directory (RL prompts from {RL_POOL}, else {SFT_POOL}; "
                                  f"{HELDOUT_POOL} held out) or one JSONL of prompt/answer pairs; refused if its "
                                  "prompts are in the warm start's SFT data (default: the preset's task directory, "
                                  "data/tasks for tiny, data/tasks-gpu for gpu, made at its task level if missing)")
    g.add_argument("--lr", type=float, help="learning rate (default: the spec's, else the preset's: "
                                            f"{_preset_values('lr')})")
    g = p.add_argument_group("in-house trainer")
    g.add_argument("--device", default="auto", help="auto, cpu or cuda (default %(default)s)")
    g.add_argument("--threads", type=int,
                   help="torch threads, for the warm start too (default: $UNIPO_THREADS, else the preset's); "
                        "use 1 on a busy machine")
    g.add_argument("--eval-every", type=int, help="rollouts between held-out evaluations "
                                                  f"(default: the preset's: {_preset_values('eval_every')})")
    g.add_argument("--eval-n", type=int, help="held-out problems per evaluation "
                                              f"(default: the preset's: {_preset_values('eval_n')})")
    g.add_argument("--detail-every", type=int, help="rollouts between rollouts logged token by token "
                                                    f"(default: the preset's: {_preset_values('detail_every')})")
    g.add_argument("--sampler-lag", type=int, metavar="K",
                   help="asynchronous sampling: each rollout is sampled by the policy as it was K rollouts "
                        "earlier, as an inference engine running ahead of the learner would (prime-rl bounds the "
                        "lag by max_off_policy_steps); the sampler's log-probs are logged beside the learner's "
                        "(default: the preset's, 0: the current policy samples)")
    g.add_argument("--checkpoint-every", type=int,
                   help="rollouts between checkpoints (default: 10, fewer for a run under 40 rollouts)")
    g.add_argument("--no-progress", action="store_true", help="print no progress bars")
    g.add_argument("--time-limit", type=float, metavar="SECONDS",
                   help="finish within SECONDS of the start (a GPU lease): stop taking rollouts once another one and "
                        "the end evaluation would not fit, then evaluate and finish as usual; the header says how "
                        "many of --steps were trained")
    p.add_argument("--engine", choices=["unipo", "openrlhf"], default="unipo",
                   help="unipo: the in-house trainer (default); openrlhf: OpenRLHF 0.11.2 on a GPU node or Ray "
                        "cluster, with the same spec (see `unipo openrlhf command`)")
    from unipo_build.cli.openrlhf import add_run_options

    add_run_options(p, in_train=True)
    p.set_defaults(func=_train)

    p = sub.add_parser("sft", help="supervised warm start of the small model",
                       description="Train the tokenizer and the preset's model from scratch on the task's worked "
                                   f"solutions ({SFT_POOL}, the SFT pool), stopping once greedy accuracy on the RL "
                                   f"pool's first rows ({RL_POOL}; the held-out set's for a task without one) reaches "
                                   f"the preset's target, and save a Hugging Face checkpoint (with {SFT_META}: the "
                                   "stop rule, where it stopped, the SFT data) that `unipo train` starts from. An "
                                   "--out that holds a checkpoint is never overwritten.")
    p.add_argument("--preset", default="tiny", type=str.lower, choices=presets,
                   help="model size and SFT schedule (default %(default)s)")
    p.add_argument("--out", help="checkpoint directory (default work/sft-<preset>, where `unipo train` looks)")
    p.add_argument("--task-dir",
                   help=f"{SFT_POOL}, {HELDOUT_POOL} and, made by generator version 3, {RL_POOL} (default: the "
                        "preset's task directory: data/tasks for tiny, data/tasks-gpu for gpu)")
    p.add_argument("--seed", type=int, default=0, help="default %(default)s")
    p.add_argument("--steps", type=int, help="at most this many steps (default: the preset's max_steps)")
    p.add_argument("--device", default="auto", help="auto, cpu or cuda (default %(default)s)")
    p.add_argument("--threads", type=int,
                   help="torch threads (default: $UNIPO_THREADS, else the preset's); use 1 on a busy machine")
    p.add_argument("--no-progress", action="store_true", help="print nothing until the checkpoint is saved")
    p.set_defaults(func=_sft)

    p = sub.add_parser("summary", help="a run in a few numbers, with its teaching moments",
                       description="Print a run in a few numbers: steps and rollouts, the mean reward over the "
                                   "first and last 10%% of updates, the held-out evaluations at the start and the "
                                   "end, the wall time, where each teaching moment is (the step the Step "
                                   "Inspector opens on), and the answer to each question practitioners ask of a run "
                                   "(is it training although the loss is 0, why is clip_ratio 0, ...): a figure, a "
                                   "verdict (fine, look here, or not measurable and why), the steps and the "
                                   "chapter. Text at 80 columns; --json for everything.")
    p.add_argument("run_dir", help="a run directory (header.json, steps.jsonl, ...)")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of lines")
    p.add_argument("--no-moments", action="store_true", help="skip the teaching moments (faster on a long run)")
    p.set_defaults(func=_summary)


def _publish(args: argparse.Namespace) -> int:
    from unipo_build.core import gzlog, runlog
    from unipo_build.trainers.unipo.publish import publish_run

    failed = False
    for run_dir in args.run_dirs:
        try:
            changed = publish_run(run_dir, args.trained_in)
        except (runlog.LogError, runlog.LogErrors) as err:
            print(f"{err}; nothing was changed there", file=sys.stderr)
            failed = True
            continue
        try:  # the logs: gzipped once the run is finished (gzlog.pack_run), or back to plain with --plain
            changed += gzlog.unpack_run(run_dir) if args.plain else gzlog.pack_run(run_dir)
        except (runlog.LogError, runlog.LogErrors) as err:
            print(f"{err}; the run's logs were left as they were", file=sys.stderr)
            failed = True
        except OSError as err:
            print(f"{run_dir}: cannot be written: {err.strerror or err}; the run's logs were left as they were",
                  file=sys.stderr)
            failed = True
        print(f"{run_dir}: {'; '.join(changed) if changed else 'nothing to change'}")
    return 1 if failed else 0


def register_publish(sub) -> None:
    p = sub.add_parser("publish", help="make runs fit to ship: relative paths, readable files, gzipped logs",
                       description="Rewrite each run's header so that it names no path of the machine that trained "
                                   "it (task source, checkpoints: relative to the project it was trained in), record "
                                   "the wall time an older trainer left as a note, and give the run's files ordinary "
                                   "permissions. A finished run's (header finished_at set) steps.jsonl, evals.jsonl "
                                   "and token files are then stored gzipped (steps.jsonl.gz, ...: the same records, "
                                   "about a tenth of the bytes, and the same bytes each time it is published); every "
                                   "command and the site read them as before. The header stays plain. A run still "
                                   "training keeps plain files. Running it again changes nothing.")
    p.add_argument("run_dirs", nargs="+", metavar="RUN_DIR", help="run directories (each holds header.json)")
    p.add_argument("--trained-in", metavar="ROOT",
                   help="the project root the runs were trained in (default: this project's)")
    p.add_argument("--plain", action="store_true",
                   help="write gzipped logs back as plain files instead (to read or edit them by hand)")
    p.set_defaults(func=_publish)


#: What ``unipo suite`` runs for each run of a suite: the ordinary ``unipo train`` (training/suite.py is handed it,
#: as training does not name the layer above it).
SUITE_TRAIN = (sys.executable, "-m", "unipo_build.cli.main", "train")


def _suite(args: argparse.Namespace) -> int:
    try:
        import torch  # noqa: F401  (each run is `unipo train`: say it once here, not once per run)
        from training.suite import DEFAULT_SUITE, SuiteError, run_suite
    except ImportError as err:
        print(no_train_extra("suite", err), file=sys.stderr)
        return 2
    try:
        return run_suite(args.suite or DEFAULT_SUITE, args.out, jobs=args.jobs, only=args.only,
                         device=args.device, dry_run=args.dry_run, time_limit=args.time_limit, train=SUITE_TRAIN)
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
    p.add_argument("--time-limit", type=float, metavar="SECONDS",
                   help="finish within SECONDS (a GPU lease): each run gets what is left when it starts (unipo train "
                        "--time-limit), and a run with under a minute left is not started")
    p.set_defaults(func=_suite)


def _cmd_import(args: argparse.Namespace) -> int:
    from unipo_build.trainers import import_log
    from unipo_build.trainers.common import OutputError
    from unipo_build.core.runlog import LogError, LogErrors

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
    print("\n".join(import_report(Path(args.out), header)))
    return 0


#: Notes an import prints (what was skipped, approximated or left unknown); the others (metric names mapped,
#: values derived by rule) stay in the header's notes, which the run card shows in full.
ATTENTION = ("skipped", "no kind", "not expressible", "unknown", "nearest", "two objectives", "left out", "ignored",
             "not understood", "--algorithm", "spec directory", "no spec")


def import_report(out: Path, header) -> list[str]:
    """What an import prints: the run in one line, its size, the notes that need a reader's attention (at most 8,
    each whole, wrapped at 80 columns), and where the full notes are."""
    config = "with its spec's components" if header.algorithm_config is not None else "algorithm_config null"
    lines = [f"{out}: run {header.run_id!r}, algorithm {header.algorithm!r} ({config})"]
    from unipo_build.core.runlog import HEADER, STEPS, has_log, log_file, log_lines, token_steps
    steps = sum(1 for _, line in log_lines(log_file(out, STEPS)) if line.strip()) if has_log(out, STEPS) else 0
    tokens = len(token_steps(out))
    lines.append(f"  {steps} step{'' if steps == 1 else 's'}, {tokens} with token detail")
    from unipo_build.trainers.notes import split_notes

    items = split_notes(header.notes)
    shown = [n for n in items if any(word in n for word in ATTENTION)]
    for note in shown[:8]:  # each note whole, wrapped at 80 columns
        lines += textwrap.wrap(note, 80, initial_indent="  ! ", subsequent_indent="    ", break_long_words=False,
                               break_on_hyphens=False)
    rest = len(items) - min(len(shown), 8)
    if items:
        lines += textwrap.wrap((f"{rest} more note{'' if rest == 1 else 's'} (metric names mapped, values derived): "
                                if rest else "") + f"all {len(items)} in {out / HEADER} (notes) and on the run "
                               f"card of `unipo explain {out}`", 80, initial_indent="  ", subsequent_indent="    ",
                               break_long_words=False, break_on_hyphens=False)
    return lines


def register_import(sub) -> None:
    p = sub.add_parser(
        "import", help="convert another tool's training log into a run directory",
        description="Convert a training log into a canonical run directory that `unipo validate` accepts and "
                    "`mkdocs build` shows (point UNIPO_RUNS at its parent). FORMAT 'unipo': UNIPO's published "
                    "log format, one .json or .jsonl file. FORMAT 'openrlhf': OpenRLHF's TensorBoard scalars, an "
                    "events.out.tfevents.* file or a directory holding them. FORMAT 'trl': TRL's GRPOTrainer output "
                    "directory (trainer_state.json), with --tap the UNIPO TRL tap's directory. FORMAT 'verl': a verl run "
                    "directory (the file logger's metrics JSONL, rollout/validation dumps, .hydra/config.yaml). FORMAT "
                    "'prime-rl': a prime-rl run directory (token_exports/, metrics.jsonl, configs/). The input is "
                    "never modified; --out "
                    "must be new or empty. Every value the importer derives is listed in the run header's notes.")
    from unipo_build.trainers import FORMATS

    p.add_argument("format", choices=sorted(FORMATS))
    p.add_argument("src", help="the log: a .json/.jsonl file (unipo), an event file or directory (openrlhf), "
                               "TRL's output_dir (trl), a run directory (verl, prime-rl)")
    p.add_argument("--out", required=True, help="the run directory to create (new or empty)")
    p.add_argument("--algorithm", help="the algorithm (a spec id such as grpo); overrides the log's header")
    p.add_argument("--run-id", help="the run's id (default: trl, prime-rl and verl: the --out directory's name; the others: "
                                    "the id the log records, else the file or directory name); refused when a run "
                                    "beside --out has it")
    p.add_argument("--max-new-tokens", type=int,
                   help="the generation budget, when the algorithm divides by it (Dr. GRPO) and the log lacks it")
    p.add_argument("--tap", help="openrlhf and trl: the UNIPO token tap's directory (manifest.json and shards), "
                                 "for the algorithm actually run and token-level detail")
    p.set_defaults(func=_cmd_import)


def _cmd_new_algorithm(args: argparse.Namespace) -> int:
    from unipo_build.cli.scaffold import MARK, ScaffoldError, nav_lines, scaffold
    from unipo_build.core.specs import SpecError

    try:
        spec_path, chapter_path, reference_path = scaffold(args.name, base=args.base, root=args.root)
    except (ScaffoldError, SpecError) as err:
        print(str(err), file=sys.stderr)
        return 1
    print(f"wrote {spec_path} (a copy of {args.base}; validates)")
    print(f"wrote {chapter_path}")
    print(f"wrote {reference_path}")
    chapter_nav, reference_nav = nav_lines(args.name, args.name.replace("_", " ").upper())
    print(f"next: rewrite every {MARK} text (grep -n '{MARK}' {spec_path} {chapter_path}), change the components, "
          f"run `unipo validate {spec_path}`, and add to nav in mkdocs.yml, under the algorithms: {chapter_nav} "
          f"and under Reference > Algorithms: {reference_nav}")
    return 0


def register_new_algorithm(sub) -> None:
    p = sub.add_parser(
        "new-algorithm", help="scaffold the spec and chapter of a new algorithm",
        description="Write data/algorithms/NAME.yaml (a copy of the base spec that validates, its texts marked "
                    "TODO(author)), docs/course/algorithms/NAME.md (a chapter using the course's macros) and "
                    "docs/reference/algorithms/NAME.md (its reference page). Existing files are never overwritten.")
    p.add_argument("name", help="the new algorithm's id: lower-case letters, digits and '_' (e.g. my_po)")
    p.add_argument("--base", default="grpo", help="the spec to start from, also the predecessor (default grpo)")
    p.add_argument("--root", default=".", help="the repository root (default: the current directory)")
    p.set_defaults(func=_cmd_new_algorithm)


def _explain(args: argparse.Namespace) -> int:
    from unipo_build.site import explain

    explain.quiet_mkdocs()
    server = None
    if args.serve:
        from functools import partial
        from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer

        class Quiet(SimpleHTTPRequestHandler):
            def log_message(self, *a):  # one line per request is noise in a practitioner's terminal
                pass

        try:  # the port first: the site is built for the address it is served at
            server = ThreadingHTTPServer(("127.0.0.1", args.port), partial(Quiet, directory=str(Path(args.out))))
        except OSError as err:
            print(f"unipo explain: port {args.port} cannot be used ({err.strerror}): pass another --port (0 picks a "
                  "free one); nothing was written", file=sys.stderr)
            return 1
    url = f"http://127.0.0.1:{server.server_address[1]}/" if server else f"http://127.0.0.1:{args.port}/"
    try:
        index = explain.build(args.runs, args.out, site_url=url)
    except explain.ExplainError as err:
        print(f"unipo explain: {err}", file=sys.stderr)
        if server:
            server.server_close()
        return 1
    n = len(args.runs)
    if args.watch:
        return _explain_watch(args, server, url, index)
    if server is None:
        print(f"built a site for {n} run{'' if n == 1 else 's'}: open {index}")
        print(f"(the Step Inspector fetches steps over HTTP, which a page opened from a file cannot: serve it with "
              f"`python3 -m http.server -d {shlex.quote(args.out)} -b 127.0.0.1 {args.port}` and open {url}, or run "
              "this command with --serve)")
        return 0
    print(f"built a site for {n} run{'' if n == 1 else 's'} in {args.out}: open {url} (Ctrl-C stops the server)",
          flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


def _explain_watch(args: argparse.Namespace, server, url: str, index: Path) -> int:
    """--watch: rebuild whenever the runs write new steps (serving the site meanwhile with --serve) until Ctrl-C."""
    import signal
    import threading

    from unipo_build.site import explain

    n = len(args.runs)
    where = f"open {url}" if server else f"open {index} (or serve {args.out})"
    print(f"built a site for {n} run{'' if n == 1 else 's'}: {where}; watching the run{'' if n == 1 else 's'} for "
          "new steps (Ctrl-C stops)", flush=True)
    if server is not None:
        threading.Thread(target=server.serve_forever, daemon=True).start()

    def say(line: str, err: bool = False) -> None:
        print(line, file=sys.stderr if err else sys.stdout, flush=True)

    # Ctrl-C sets a flag instead of raising wherever it lands: a build it interrupted (MkDocs may swallow the
    # KeyboardInterrupt) finishes, and the loop ends at once after it
    stopping = threading.Event()
    previous = signal.signal(signal.SIGINT, lambda *_: stopping.set())
    try:
        explain.watch(args.runs, args.out, site_url=url, interval=args.interval, say=say, stop=stopping.is_set,
                      wait=stopping.wait)
    except KeyboardInterrupt:
        pass
    finally:
        signal.signal(signal.SIGINT, previous)
        if server is not None:
            server.shutdown()
            server.server_close()
    return 0


def register_explain(sub) -> None:
    p = sub.add_parser(
        "explain", help="build a site around your own runs: every view, the nearest spec's chapter, the run card",
        description="Build a small site around the given runs alone, with the course's own MkDocs pages: for each "
                    "run its run card (with what the log lacks and what was derived on import), the spec it is "
                    "explained by (the one its header names, else the nearest by components) against the run's "
                    "components, the Training Explorer, the Step Inspector and the Algorithm Explainer, and the "
                    "chapter of that spec. Prints where to open it. A run that does not validate, or that no spec "
                    "matches, stops it with one line before anything is written.")
    p.add_argument("runs", nargs="+", metavar="RUN", help="run directories (header.json, steps.jsonl, ...)")
    p.add_argument("--out", default="work/explain",
                   help="where the site goes (default %(default)s): new, empty, or an earlier explain output, which is "
                        "replaced; any other directory is refused")
    p.add_argument("--serve", action="store_true", help="serve the site on 127.0.0.1 until Ctrl-C and print its URL")
    p.add_argument("--port", type=int, default=8000, help="the port of --serve (default %(default)s; 0: a free one)")
    p.add_argument("--watch", action="store_true",
                   help="keep the site up to date while the runs train: rebuild when their files change (a run "
                        "directory that `unipo train` writes; with --serve, reload the page), until Ctrl-C")
    p.add_argument("--interval", type=float, default=2.0, metavar="SECONDS",
                   help="--watch: how often to look at the runs' files (default %(default)s)")
    p.set_defaults(func=_explain)


def register_openrlhf(sub) -> None:
    from unipo_build.cli.openrlhf import register

    register(sub)


def register_trim_steps(sub) -> None:
    from unipo_build.cli.trim import register_trim_steps as register

    register(sub)


def register_model(sub) -> None:
    from unipo_build.cli.model import register_model as register

    register(sub)


REGISTRARS: list = [register_train, register_suite, register_publish, register_trim_steps, register_import,
                    register_explain, register_new_algorithm, register_openrlhf, register_model]
