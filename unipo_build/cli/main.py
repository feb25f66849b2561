"""The ``unipo`` command line.

Subcommands register themselves in ``build_parser``; training subcommands import
torch lazily so that ``unipo validate`` and the site build never need it. The project's
specs are found from ``$UNIPO_ROOT`` or the nearest directory at or above the current one
that holds data/algorithms (``unipo_build.core.project``).
"""

from __future__ import annotations

import argparse
import sys
import types
import warnings
from pathlib import Path

from unipo_build.core import project, runlog
from unipo_build.core.reader import check_run
from unipo_build.core.registry import SLOTS, explainer_problem
from unipo_build.core.specs import SpecError, ablation_spec_paths, load_spec, load_specs


def _known_algorithms() -> set[str] | None:
    """The project's spec ids, ablation rungs included; None outside a project (then no run is
    checked against them)."""
    try:
        directory = project.spec_dir()
    except project.ProjectError:
        return None
    ablations = {p.stem for p in ablation_spec_paths(directory)}
    try:
        return set(load_specs(directory)) | ablations
    except SpecError:
        return {p.stem for p in directory.glob("*.yaml")} | ablations


def validate_path(path: Path, known: set[str] | None, warnings: list[str] | None = None) -> list[str]:
    """Validate a spec file, a run directory, a directory of runs, or one file of a run.

    Returns one line per problem; warnings (an empty run, an ignored file) go to ``warnings``.
    A run directory goes through reader.check_run, the loader the site build uses too.
    """
    warnings = warnings if warnings is not None else []
    try:
        return _validate_path(path, known, warnings)
    except OSError as err:
        return [f"{path}: cannot be read: {err.strerror or err}"]


def _validate_path(path: Path, known: set[str] | None, warnings: list[str]) -> list[str]:
    if path.suffix in (".yaml", ".yml") and not path.is_dir():
        try:
            spec = load_spec(path)
        except SpecError as err:
            return str(err).splitlines()
        # a kind the Algorithm Explainer cannot explain (no explainer data in its registry entry)
        return [f"{path}: components.{slot}.kind: {problem}" for slot in SLOTS
                if (problem := explainer_problem(spec.component(slot)))]
    if path.is_dir():
        if (path / runlog.HEADER).exists() or runlog.has_log(path, runlog.STEPS):
            check = check_run(path, known_algorithms=known)
            warnings += [f"warning: {w}" for w in check.warnings]
            return [str(e) for e in check.errors]
        runs = [p for p in sorted(path.iterdir()) if p.is_dir()]
        specs = sorted(path.glob("*.yaml"))
        if not runs and not specs:
            return [f"{path}: neither a run directory (no header.json) nor a directory of runs or specs"]
        problems = []
        for sub in runs + specs:
            problems += _validate_path(sub, known, warnings)
        return problems
    if not path.exists():
        return [f"{path}: no such file or directory"]
    run_dir = path.parent.parent if path.parent.name == runlog.TOKENS_DIR else path.parent
    name = path.name.removesuffix(runlog.GZIP_SUFFIX)  # a published run's file: steps.jsonl.gz, ...
    try:
        if path.name == runlog.HEADER:
            runlog.read_header(run_dir)
        elif name == runlog.STEPS:
            if not any(True for _ in runlog.iter_steps(run_dir)):
                warnings.append(f"warning: {path}: no steps logged yet: an empty run")
        elif name == runlog.EVALS:
            list(runlog.iter_evals(run_dir))
        elif path.parent.name == runlog.TOKENS_DIR and name.endswith(".json"):
            step = runlog.token_step_of(path.name)
            if step is None:
                runlog.read_json_model(path, runlog.StepDetail)
            else:
                runlog.read_step_detail(run_dir, step)  # its step must be the one its name says
        else:
            return [f"{path}: not a spec (.yaml) or a file of a run log (header.json, steps.jsonl, evals.jsonl, tokens/step_*.json; gzipped: .gz)"]
    except runlog.LogErrors as err:
        return [str(e) for e in err.errors]
    except runlog.LogError as err:
        return [str(err)]
    return []


def cmd_validate(args: argparse.Namespace) -> int:
    known = _known_algorithms()
    failed = False
    for raw in args.paths:
        warnings: list[str] = []
        problems = validate_path(Path(raw), known, warnings)
        for line in warnings:
            print(line, file=sys.stderr)
        if problems:
            failed = True
            for line in problems:
                print(line, file=sys.stderr)
        elif not args.quiet:
            print(f"{raw}: valid" + (" (with warnings)" if warnings else ""))
    return 1 if failed else 0


class _Parser(argparse.ArgumentParser):
    """argparse, but a mistake prints one line (what is wrong, where to look) instead of the whole usage."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: {message} (see `{self.prog} --help`)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="unipo", description="UNIPO: train, log, validate and explain RL fine-tuning objectives.")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("validate", help="check run logs and algorithm specs against the schema",
                       description="Validate algorithm specs (.yaml), run directories, directories of runs, or single run files. "
                                   "Exit 0 when everything is valid, 1 otherwise, with one line per problem naming file, line/step, "
                                   "prompt/response and field. Warnings (an empty run, an ignored file) start with 'warning:' "
                                   "and do not fail. The site build reads runs with the same checks and skips a run that fails "
                                   "them (or fails under UNIPO_STRICT_RUNS=1).")
    p.add_argument("paths", nargs="+")
    p.add_argument("-q", "--quiet", action="store_true", help="print only problems")
    p.set_defaults(func=cmd_validate)

    for register in _extra_commands():
        register(sub)
    return parser


def _extra_commands():
    """Subcommands defined next to the code they run (training, import, scaffolding)."""
    from unipo_build.cli import commands as cli_commands

    return cli_commands.REGISTRARS


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    args = build_parser().parse_args(argv)
    args.argv = argv  # as typed: what a message repeats (e.g. the command that resumes a run)
    return args.func(args)


class _CalledAsMain(types.ModuleType):
    """Deprecated: 0.1.0's entry point ``unipo_build.cli:main``. cli/ is a package now, so ``from unipo_build.cli
    import main`` gives this module: calling it runs :func:`main` and warns (a ``unipo`` script installed by 0.1.0
    does just that until the package is installed again). It goes in the release after 0.2.0 (CHANGELOG.md)."""

    def __call__(self, argv: list[str] | None = None) -> int:
        warnings.warn("unipo_build.cli:main moved to unipo_build.cli.main:main in unipo 0.2.0 and goes in the next "
                      "release: install the package again (pip install -e .) to update the `unipo` script, and "
                      "write `from unipo_build.cli.main import main`", DeprecationWarning, stacklevel=2)
        return main(argv)


sys.modules[__name__].__class__ = _CalledAsMain

if __name__ == "__main__":
    sys.exit(main())
