"""One cached reader per run: ``steps.jsonl`` and the token files are parsed once per build.

Every view of the site asks the run's :class:`RunReader` (``reader_for(run_dir)``) instead of
opening the files itself:

- :attr:`RunReader.table` is the whole of ``steps.jsonl`` as columns (:class:`StepTable`: the
  step, rollout and boundary of every update and one float64 array per metric, NaN where the
  metric is null), parsed in one pass with pydantic's JSON parser. A 100,000-step log with 24
  metrics holds about 20 MB; every figure, fact and summary is computed from it.
- :meth:`RunReader.digest` serves what views need from every token file (a teaching moment's
  candidates, the anatomy page's groups, the advantages of the noise figure). The functions that
  compute them register with :func:`token_digest`; one pass over the token files runs all of
  them, so each file is parsed once, however many views read it.
- :meth:`RunReader.detail` reads one step in full (kept for the next few calls).

Readers are cached by the files' size and modification time (each log plain or gzipped, as
``unipo publish`` leaves it: ``runlog.log_path``), so ``mkdocs serve`` sees a run that changed, and a build that reads a run on thirty pages parses it once. Problems are raised
as ``runlog.LogError`` / ``LogErrors``, with the same messages as ``runlog``'s own readers.

:func:`check_run` reads a whole run through its reader and lists every problem: it is the one
loader behind both ``unipo validate`` and the site build (``unipo_build.core.runs``), so the build
never checks less than the validator, and a run it checked is already parsed for the views.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np
from pydantic import ValidationError

from unipo_build.core import limits, runlog
from unipo_build.core.cache import Cache, files_state
from unipo_build.core.schema import METRICS, EvalRecord, RunHeader, StepDetail, StepRecord

#: name -> function(StepDetail) -> anything small; run on every token file in one pass.
TOKEN_DIGESTS: dict[str, Callable[[StepDetail], Any]] = {}
#: Step details kept in full per reader (the anatomy page and the inspectors ask for a few).
DETAILS_KEPT = 8


def token_digest(name: str):
    """Register ``fn(detail) -> value`` as the digest ``name`` of every token file."""
    def decorate(fn: Callable[[StepDetail], Any]) -> Callable[[StepDetail], Any]:
        TOKEN_DIGESTS[name] = fn
        return fn
    return decorate


@dataclass
class StepTable:
    """``steps.jsonl`` as columns: one entry per logged update, in step order."""

    steps: np.ndarray  # int64
    rollouts: np.ndarray  # int64
    first_in_rollout: np.ndarray  # bool
    has_tokens: np.ndarray  # bool
    metrics: dict[str, np.ndarray] = field(default_factory=dict)  # float64, NaN where null

    @property
    def n(self) -> int:
        return len(self.steps)

    @property
    def n_rollouts(self) -> int:
        return len(np.unique(self.rollouts))

    def names(self) -> list[str]:
        """Metrics logged (not null) at least once: catalogue order, then the others by name."""
        present = {n for n, v in self.metrics.items() if not np.all(np.isnan(v))}
        return [m for m in METRICS if m in present] + sorted(n for n in present if n not in METRICS)

    def column(self, name: str) -> np.ndarray:
        """The metric at every step (NaN where null or never logged)."""
        values = self.metrics.get(name)
        return values if values is not None else np.full(self.n, np.nan)

    def series(self, name: str, *, first_in_rollout: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """(steps, values) where the metric is logged; ``first_in_rollout``: one point per rollout."""
        values = self.column(name)
        keep = ~np.isnan(values)
        if first_in_rollout:
            keep &= self.first_in_rollout
        return self.steps[keep], values[keep]

    def rollout_starts(self) -> np.ndarray:
        return self.steps[self.first_in_rollout]

    def metrics_at(self, step: int) -> dict[str, float]:
        """The metrics logged at one step (nulls left out)."""
        index = int(np.searchsorted(self.steps, step))
        if index >= self.n or self.steps[index] != step:
            return {}
        return {n: float(v[index]) for n, v in self.metrics.items() if not np.isnan(v[index])}


def _canonical_error(run_dir: Path, number: int, problem: str) -> None:
    """Report a bad steps.jsonl exactly as runlog does (its reader names file, line and field)."""
    for _ in runlog.iter_steps(run_dir):
        pass
    raise runlog.LogError(str(runlog.log_file(run_dir, runlog.STEPS)), problem, line=number or None)


def read_step_table(run_dir: str | Path) -> StepTable:
    """Parse ``steps.jsonl`` once into a :class:`StepTable` (pydantic parses each line in Rust:
    several times faster than ``json.loads`` plus validation, which matters for 100,000 lines)."""
    run_dir = Path(run_dir)
    path = runlog.log_file(run_dir, runlog.STEPS)  # steps.jsonl or, published, steps.jsonl.gz
    if not path.exists():
        raise runlog.LogError(str(path), "file is missing")
    steps: list[int] = []
    rollouts: list[int] = []
    first: list[bool] = []
    tokens: list[bool] = []
    columns: dict[str, list[float]] = {}
    nan = float("nan")
    expected = None
    lines = runlog.log_lines(path)
    while True:
        try:
            number, line = next(lines)
        except StopIteration:
            break
        except runlog.LogError:  # unreadable, or gzipped and cut off: the canonical reader adds the step
            _canonical_error(run_dir, 0, "cannot be read")
        if not line.strip():
            continue
        try:
            record = StepRecord.model_validate_json(line)
        except ValidationError:
            _canonical_error(run_dir, number, "invalid step record")
        if record.model_extra and any(True for _ in limits.problems(record.model_extra)):
            # A field the schema does not know holds a value no field may (1e308, too deep):
            # the canonical reader names it.
            _canonical_error(run_dir, number, "invalid step record")
        if expected is not None and record.step != expected:
            _canonical_error(run_dir, number, f"expected step {expected} next, found {record.step}")
        expected = record.step + 1
        row = len(steps)
        steps.append(record.step)
        rollouts.append(record.rollout)
        first.append(record.first_in_rollout)
        tokens.append(record.has_tokens)
        for name, value in record.metrics.items():
            column = columns.get(name)
            if column is None:
                column = columns[name] = [nan] * row
            column.append(nan if value is None else value)
        for name, column in columns.items():
            if len(column) == row:  # not logged on this line
                column.append(nan)
    return StepTable(steps=np.asarray(steps, dtype=np.int64), rollouts=np.asarray(rollouts, dtype=np.int64),
                     first_in_rollout=np.asarray(first, dtype=bool), has_tokens=np.asarray(tokens, dtype=bool),
                     metrics={n: np.asarray(c, dtype=np.float64) for n, c in columns.items()})


class RunReader:
    """Everything read from one run directory, each file parsed once (see the module docstring)."""

    def __init__(self, run_dir: str | Path):
        self.path = Path(run_dir)
        self._header: RunHeader | None = None
        self._evals: list[EvalRecord] | None = None
        self._table: StepTable | None = None
        self._token_steps: list[int] | None = None
        self._digests: dict[str, dict[int, Any]] = {}
        self._details: Cache[StepDetail] = Cache(DETAILS_KEPT)

    @property
    def header(self) -> RunHeader:
        if self._header is None:
            self._header = runlog.read_header(self.path)
        return self._header

    @property
    def evals(self) -> list[EvalRecord]:
        if self._evals is None:
            self._evals = list(runlog.iter_evals(self.path))
        return self._evals

    @property
    def table(self) -> StepTable:
        if self._table is None:
            self._table = read_step_table(self.path)
        return self._table

    @property
    def token_steps(self) -> list[int]:
        if self._token_steps is None:
            self._token_steps = runlog.token_steps(self.path)
        return self._token_steps

    def detail(self, step: int) -> StepDetail:
        """One step's token file in full (the last few are kept: a new reader is made when the run's files change)."""
        return self._details.get(step, None, lambda: runlog.read_step_detail(self.path, step))

    def scan_tokens(self, problems: list[runlog.LogError] | None = None, limit: int = 50) -> None:
        """Parse every token file once, running every registered digest not computed yet (and
        so validating the files: a broken one raises here; with ``problems``, each broken file's
        errors are appended there, up to ``limit`` in all, and the scan goes on)."""
        todo = {name: fn for name, fn in TOKEN_DIGESTS.items() if name not in self._digests}
        if not todo and self._digests:
            return
        results: dict[str, dict[int, Any]] = {name: {} for name in todo}
        failed = False
        for step in self.token_steps:
            try:
                detail = runlog.read_step_detail(self.path, step)
            except (runlog.LogError, runlog.LogErrors) as err:
                if problems is None:
                    raise
                failed = True
                problems.extend(err.errors if isinstance(err, runlog.LogErrors) else [err])
                if len(problems) >= limit:
                    break
                continue
            for name, fn in todo.items():
                results[name][step] = fn(detail)
        if failed:
            return
        self._digests.update(results)
        self._digests.setdefault("", {})  # marks the files as scanned, even with no digest registered

    def digest(self, name: str) -> dict[int, Any]:
        """step -> the digest ``name`` of that step's token file (see :func:`token_digest`)."""
        if name not in TOKEN_DIGESTS:
            raise KeyError(f"no token digest {name!r} (registered: {', '.join(sorted(TOKEN_DIGESTS)) or 'none'})")
        if name not in self._digests:
            self.scan_tokens()
        return self._digests[name]

    def load(self) -> None:
        """Read and validate the whole run now (header, evaluations, steps, token files)."""
        _ = self.header, self.evals, self.table
        self.scan_tokens()


def _state(run_dir: Path) -> tuple:
    """What a cached reader is kept on: the state of the header, steps and evaluations, and how many token
    files there are and the newest one's time."""
    logs = [run_dir / runlog.HEADER, *runlog.log_candidates(run_dir / runlog.STEPS),
            *runlog.log_candidates(run_dir / runlog.EVALS)]  # plain and gzipped: publishing changes the state
    return (files_state(logs), len(runlog.token_paths(run_dir)), runlog.tokens_mtime(run_dir))


#: Readers kept at once (a build reads its runs; tests make many small ones).
READERS_KEPT = 32
_READERS: Cache[RunReader] = Cache(READERS_KEPT)


def reader_for(run_dir: str | Path) -> RunReader:
    """The cached reader of a run directory (a new one when its files changed)."""
    path = Path(run_dir).resolve()
    return _READERS.get(str(path), _state(path), lambda: RunReader(path))


# ---------------------------------------------------------------------------
# The one loader of a run: unipo validate and the site build
# ---------------------------------------------------------------------------

@dataclass
class RunCheck:
    """What :func:`check_run` found in a run directory: the reader it read the run with, the
    problems that make the run unusable, and warnings that do not."""

    reader: RunReader
    header: RunHeader | None = None
    evals: list[EvalRecord] = field(default_factory=list)
    steps: int = 0
    errors: list[runlog.LogError] = field(default_factory=list)
    warnings: list[runlog.LogError] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.errors

    @property
    def empty(self) -> bool:
        """No step logged yet (``steps.jsonl`` exists but is empty): valid, but nothing to show."""
        return not self.errors and self.steps == 0


def _sampler_logp_missing(reader: RunReader, config, steps: list[int]) -> runlog.LogError | None:
    """One error for a run whose rollout correction cannot be recomputed: the first logged response without
    the sampler's log-probs (recompute.sampler_logp_problems), with how many more there are."""
    from unipo_build.core.objective import uses_sampler_logp
    from unipo_build.core.recompute import sampler_logp_problems

    if not uses_sampler_logp(config):  # no rollout correction: no token file need be read again
        return None
    found = [(step, where, message) for step in steps for where, message in sampler_logp_problems(config, reader.detail(step))]
    if not found:
        return None
    step, where, message = found[0]
    more = f" ({len(found) - 1} more response{'s' if len(found) > 2 else ''} like it)" if len(found) > 1 else ""
    return runlog.LogError(str(runlog.token_file(reader.path, step)), message + more,
                           step=step, where=where, field="tokens.sample_logp")


def check_run(run_dir: str | Path, *, known_algorithms: set[str] | None = None, limit: int = 50) -> RunCheck:
    """Read a whole run directory through its reader and report every problem (up to ``limit``).

    Checked: the header (and, with ``known_algorithms``, that a run of this trainer names a
    known spec), every step, every evaluation, every token file (its step must be the one its
    name says), and that each step marked ``has_tokens`` has its file. Warnings: an empty run,
    a token file for a step ``steps.jsonl`` does not have, a file in ``tokens/`` not named as
    token files are.
    """
    run_dir = Path(run_dir)
    reader = reader_for(run_dir)
    result = RunCheck(reader)
    errors = result.errors

    def collect(fn):
        try:
            return fn()
        except runlog.LogErrors as err:
            errors.extend(err.errors)
        except runlog.LogError as err:
            errors.append(err)
        return None

    header = result.header = collect(lambda: reader.header)
    # A run of our own trainer always names a spec it trained; an imported run may carry an
    # algorithm no spec describes (algorithm_config null): the views then show it with a note.
    if header is not None and known_algorithms is not None and header.algorithm not in known_algorithms \
            and header.algorithm_config is None and header.engine == "unipo":
        errors.append(runlog.LogError(
            str(run_dir / runlog.HEADER), f"unknown algorithm {header.algorithm!r} (known: "
            f"{', '.join(sorted(known_algorithms))}); add data/algorithms/{header.algorithm}.yaml or copy the "
            "resolved components into algorithm_config", field="algorithm"))
    table = collect(lambda: reader.table)
    result.evals = collect(lambda: list(reader.evals)) or []
    reader.scan_tokens(problems=errors, limit=limit)
    steps = reader.token_steps
    if header is not None and header.algorithm_config is not None and not errors:
        missing = _sampler_logp_missing(reader, header.algorithm_config, steps)
        if missing is not None:
            errors.append(missing)
    if table is not None:
        result.steps = table.n
        if table.n == 0 and not errors:
            result.warnings.append(runlog.LogError(
                str(run_dir / runlog.STEPS), "no steps logged yet: an empty run, which the site lists as skipped "
                "until its first step is written"))
        first, last = (int(table.steps[0]), int(table.steps[-1])) if table.n else (0, -1)
        if table.n and not errors:
            result.warnings += [runlog.LogError(
                str(runlog.token_file(run_dir, step)),
                f"{runlog.STEPS} has no step {step} (a step being written, or one lost)", step=step, field="step")
                for step in steps if not first <= step <= last]
        for step in sorted(set(table.steps[table.has_tokens].tolist()) - set(steps)):
            errors.append(runlog.LogError(
                str(run_dir / runlog.TOKENS_DIR / runlog.token_file_name(step)),
                f"file is missing, but {runlog.STEPS} marks step {step} with has_tokens", step=step,
                field="has_tokens"))
    result.warnings += [runlog.LogError(str(path), f"ignored: token files are named {runlog.token_file_name(0)}, "
                                        "six digits or more")
                        for path in runlog.token_paths(run_dir) if runlog.token_step_of(path.name) is None]
    del errors[limit:]
    return result


def validate_run(run_dir: str | Path, *, known_algorithms: set[str] | None = None, limit: int = 50) -> list[runlog.LogError]:
    """Every problem found in a run directory (up to ``limit``); empty when valid: :func:`check_run`'s errors
    (``unipo validate``, the importers and the site build read a run through the same checks)."""
    return check_run(run_dir, known_algorithms=known_algorithms, limit=limit).errors
