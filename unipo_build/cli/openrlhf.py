"""The OpenRLHF part of the ``unipo`` command line: ``unipo openrlhf command ALGO`` and
``unipo train ALGO --engine openrlhf`` (arguments here; the translation in ``openrlhf.command``)."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

from unipo_build.core.file_names import HELDOUT_POOL, RL_POOL, SFT_POOL
from unipo_build.trainers.openrlhf import OPENRLHF_VERSION
from unipo_build.trainers.openrlhf.command import (
    ApproximationRefused,
    Command,
    RunOptions,
    build_command,
    missing_for_a_run,
    write_manifest,
)


# ---------------------------------------------------------------------------------------------
# Command line: `unipo openrlhf command ALGO` and `unipo train ALGO --engine openrlhf`
# ---------------------------------------------------------------------------------------------

def add_run_options(p, *, in_train: bool = False) -> None:
    """The RunOptions flags, shared by `unipo openrlhf command` and `unipo train --engine openrlhf`.

    ``in_train``: `unipo train` already has --model, --seed, --lr and --steps (the number of rollouts).
    """
    d = RunOptions()
    g = p.add_argument_group("OpenRLHF run options (with --engine openrlhf)" if in_train else "OpenRLHF run options")
    actions = []

    def add(*flags, **kw):
        actions.append(g.add_argument(*flags, **kw))

    if in_train:
        add("--dry-run", action="store_true", help="print the OpenRLHF command, run nothing")
    if not in_train:
        add("--preset", default="tiny", choices=["tiny", "gpu"],
                       help="take the batch shape, lr, budget and number of rollouts from the in-house trainer's "
                            "preset (default %(default)s); the flags below override it")
        add("--model", help="actor checkpoint, a local HF directory (default work/sft-<preset>)")
        add("--rollouts", type=int, help="number of rollouts (default: the preset's)")
    add("--prompts", help="training prompts, JSONL (default: the preset's task directory's RL pool, "
                                     f"{RL_POOL}, or its {SFT_POOL} where it has none: data/tasks for tiny, "
                                     "data/tasks-gpu for gpu)")
    add("--eval-dataset", help="held-out prompts, JSONL; '' for none (default: the preset's task "
                                          f"directory's {HELDOUT_POOL})")
    add("--input-key", default=d.input_key, help="prompt field of the JSONL (default %(default)s)")
    add("--label-key", default=d.label_key, help="answer field of the JSONL (default %(default)s)")
    add("--reward-file", default=d.reward_file, help="the reward_func file (default: training/reward.py)")
    add("--prompts-per-step", type=int, help="default: the preset's")
    add("--group-size", type=int, help="default: the preset's")
    add("--max-new-tokens", type=int, help="default: the preset's")
    add("--max-len", type=int, default=d.max_len, help="prompt + response tokens (default %(default)s)")
    if not in_train:
        add("--eval-every", type=int, help="rollouts between held-out evaluations (default: the preset's)")
    add("--epochs", type=int, help="passes over each rollout (default: the spec's, else the preset's)")
    add("--minibatches", type=int, help="optimizer steps per pass (default: the spec's, else the preset's)")
    add("--critic-lr", type=float, help="with a critic (PPO): its learning rate (default: the spec's)")
    add("--temperature", type=float, help="default: the preset's")
    add("--micro-batch-size", type=int, default=d.micro_batch_size, help="default %(default)s")
    add("--nodes", type=int, default=d.nodes, help="default %(default)s")
    add("--gpus-per-node", type=int, default=d.gpus_per_node, help="default %(default)s")
    add("--vllm-engines", type=int, help="default: one per GPU")
    add("--no-colocate", action="store_true", help="give vLLM and the models their own GPUs")
    add("--save-path", default=d.save_path, help="where OpenRLHF saves the trained model (default %(default)s)")
    add("--tensorboard-dir", default=d.tensorboard_dir, help="default %(default)s")
    add("--run-name", help="default <algo>-openrlhf-s<seed>")
    add("--tap-dir", help="where the token tap writes its shards (default <tensorboard-dir>/../tap)")
    add("--tap-fraction", type=float, default=0.25,
                   help="fraction of prompt groups recorded token by token (default %(default)s)")
    add("--no-tap", action="store_true", help="run OpenRLHF's entry point directly, without the tap")
    add("--accept-approximation", action="store_true",
                   help="train OpenRLHF's nearest approximation where it cannot express the spec exactly")
    if in_train:
        # what `unipo train` refuses without --engine openrlhf: the in-house trainer has none of these
        p.set_defaults(openrlhf_only=tuple((a.option_strings[0], a.dest, a.default) for a in actions))


def openrlhf_only_given(args) -> list[str]:
    """The OpenRLHF run options of `unipo train` given a value other than their default."""
    return [flag for flag, dest, default in getattr(args, "openrlhf_only", ()) if getattr(args, dest) != default]


def options_from_args(args) -> RunOptions:
    """RunOptions from the preset, overridden by every flag given (`unipo train` says --steps for rollouts)."""
    return RunOptions.from_preset(
        args.preset, model=args.model, prompts=args.prompts, eval_dataset=args.eval_dataset,
        input_key=args.input_key, label_key=args.label_key, reward_file=args.reward_file,
        prompts_per_step=args.prompts_per_step, group_size=args.group_size, max_new_tokens=args.max_new_tokens,
        max_len=args.max_len, rollouts=getattr(args, "rollouts", None) or getattr(args, "steps", None),
        epochs=args.epochs, minibatches=args.minibatches, lr=args.lr, critic_lr=args.critic_lr,
        temperature=args.temperature, seed=args.seed, micro_batch_size=args.micro_batch_size, nodes=args.nodes,
        gpus_per_node=args.gpus_per_node, vllm_engines=args.vllm_engines, colocate=not args.no_colocate,
        save_path=args.save_path, tensorboard_dir=args.tensorboard_dir, run_name=args.run_name,
        eval_every=getattr(args, "eval_every", None))


def tap_dir_for(args) -> str | None:
    if args.no_tap:
        return None
    return args.tap_dir or str(Path(args.tensorboard_dir).parent / "tap")


def command_from_args(args, *, run_here: bool = False) -> Command:
    """The command of these arguments; ``run_here``: with absolute paths and this interpreter, to run now."""
    opts = options_from_args(args)
    tap = tap_dir_for(args)
    if run_here:
        opts = opts.absolute()
        tap = str(Path(tap).resolve()) if tap else None
    return build_command(args.algorithm, opts, accept_approximation=args.accept_approximation, tap_dir=tap,
                         tap_fraction=args.tap_fraction, python=sys.executable if run_here else None)


def _command_or_message(args, prog: str, *, run_here: bool = False) -> Command | None:
    """The command, or None after printing why there is none (a gap not accepted, a bad option)."""
    try:
        return command_from_args(args, run_here=run_here)
    except ApproximationRefused as err:
        print(str(err), file=sys.stderr)
    except ValueError as err:
        print(f"{prog}: {err}", file=sys.stderr)
    return None


def _cmd_command(args) -> int:
    cmd = _command_or_message(args, "unipo openrlhf command")
    if cmd is None:
        return 2
    t = cmd.translation
    if args.json:
        print(json.dumps({**cmd.manifest(), "argv": cmd.argv}, indent=2))
        return 0
    print(f"# {cmd.algorithm} on OpenRLHF {OPENRLHF_VERSION}" +
          (" (approximation accepted)" if t.gaps else " (exact up to the notes below)"))
    for gap in t.gaps:
        print(f"# gap, {gap.slot}: {gap.spec_says}; runs instead: {gap.nearest}")
    for note in t.notes:
        print(f"# note: {note}")
    print(cmd.shell())
    return 0


def run_openrlhf(args) -> int:
    """`unipo train ALGO --engine openrlhf`: check the install and the machine, write the manifest, run."""
    import subprocess

    from unipo_build.trainers.openrlhf import VersionError, check_version

    cmd = _command_or_message(args, "unipo train --engine openrlhf", run_here=not args.dry_run)
    if cmd is None:
        return 2
    if args.dry_run:
        print(cmd.shell())
        return 0
    try:
        check_version()
    except VersionError as err:
        print(f"unipo train --engine openrlhf: {err}", file=sys.stderr)
        return 2
    problems = missing_for_a_run(cmd)
    if problems:
        print("unipo train --engine openrlhf: this machine cannot run it yet; nothing was started or written:",
              file=sys.stderr)
        for problem in problems:
            print(f"- {problem}", file=sys.stderr)
        return 2
    if cmd.tap_dir is not None:
        write_manifest(cmd, cmd.tap_dir)
    print(f"running: {' '.join(shlex.quote(a) for a in cmd.argv)}", flush=True)
    code = subprocess.call(cmd.argv)
    if code == 0 and cmd.tap_dir is not None:
        print(f"done; convert the logs with: unipo import openrlhf {shlex.quote(args.tensorboard_dir)} "
              f"--tap {shlex.quote(cmd.tap_dir)} --out work/runs/{cmd.algorithm}-openrlhf")
    return code


def register(sub) -> None:
    p = sub.add_parser("openrlhf", help="train on OpenRLHF 0.11.2 with a spec: print the command",
                       description="Work with OpenRLHF 0.11.2, the engine for training at scale.")
    osub = p.add_subparsers(dest="openrlhf_command", required=True)
    c = osub.add_parser("command", help="print the OpenRLHF command that trains ALGO",
                        description="Translate ALGO (a spec id or spec file) and the run options into an OpenRLHF "
                                    "0.11.2 train_ppo_ray command and print it. Where OpenRLHF cannot express the "
                                    "spec exactly, the gap and the nearest approximation are named and the command "
                                    "is refused unless --accept-approximation is given.")
    c.add_argument("algorithm")
    c.add_argument("--seed", type=int, default=0)
    c.add_argument("--lr", type=float)
    c.add_argument("--json", action="store_true", help="print the manifest (flags, gaps, notes, argv) as JSON")
    add_run_options(c)
    c.set_defaults(func=_cmd_command)
