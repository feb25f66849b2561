"""Finding and loading the runs a site is built from.

The runs directory is, in order: the environment variable UNIPO_RUNS, mkdocs.yml
``extra.unipo_runs``, or data/runs. A run that fails to load does not stop the build:
it is recorded with its error so pages can say which run was skipped and why (unless
the build is strict about runs: UNIPO_STRICT_RUNS=1).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import numpy as np

from . import runlog
from .schema import EvalRecord, RunHeader
from .specs import SPEC_DIR, AlgorithmSpec, ResolvedAlgorithm, SpecError, load_specs

REPO = Path(__file__).resolve().parent.parent


def runs_dir(config_value: str | None = None) -> Path:
    raw = os.environ.get("UNIPO_RUNS") or config_value or "data/runs"
    path = Path(raw)
    return path if path.is_absolute() else (REPO / path)


@dataclass
class Run:
    id: str
    path: Path
    header: RunHeader | None = None
    error: str | None = None
    spec: AlgorithmSpec | None = None
    evals: list[EvalRecord] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def config(self) -> ResolvedAlgorithm | None:
        return self.header.algorithm_config if self.header else None

    def token_steps(self) -> list[int]:
        return runlog.token_steps(self.path)


#: At most this many of a skipped run's problems are quoted on the page (unipo validate lists all).
ERRORS_SHOWN = 10


def _load(path: Path, specs: dict[str, AlgorithmSpec]) -> Run:
    """A run through the validator's own loader (runlog.check_run): a run that ``unipo validate``
    rejects is skipped with the validator's messages, and an empty run is skipped as well."""
    run = Run(id=path.name, path=path)
    check = runlog.check_run(path, known_algorithms=set(specs))
    problems = check.errors or ([w for w in check.warnings if w.file.endswith(runlog.STEPS)] if check.steps == 0 else [])
    if problems:
        lines = [str(e) for e in problems[:ERRORS_SHOWN]]
        if len(problems) > ERRORS_SHOWN:
            lines.append(f"... and {len(problems) - ERRORS_SHOWN} more (run `unipo validate {path}` to list them)")
        run.error = "\n".join(lines)
        return run
    run.header = check.header
    run.evals = check.evals
    run.id = run.header.run_id
    run.spec = specs.get(run.header.algorithm)
    return run


@lru_cache(maxsize=8)
def _discover_cached(directory: str, mtime_key: float) -> tuple[tuple[Run, ...], frozenset[str]]:
    """The runs of a directory and the spec ids they were checked against."""
    try:
        specs = load_specs(SPEC_DIR)
    except SpecError:
        specs = {}
    root = Path(directory)
    if not root.is_dir():
        return (), frozenset(specs)
    runs = [_load(p, specs) for p in sorted(root.iterdir()) if p.is_dir() and not p.name.startswith(".")]
    return tuple(runs), frozenset(specs)


def _key(directory: Path) -> float:
    return max((p.stat().st_mtime for p in directory.glob("*/steps.jsonl")), default=0.0) if directory.is_dir() else 0.0


def discover(directory: Path | None = None) -> list[Run]:
    """Every run directory under the runs directory, loaded or with its error.

    UNIPO_STRICT_RUNS=1 is applied once, when the build starts (unipo_build.hooks, with
    :func:`strict_failure`), so a strict build fails with the validator's messages, not inside a page.
    """
    directory = directory or runs_dir()
    return list(_discover_cached(str(directory), _key(directory))[0])


def strict_failure(directory: Path) -> str | None:
    """Under UNIPO_STRICT_RUNS=1, the message that fails the build when a run cannot be read."""
    if os.environ.get("UNIPO_STRICT_RUNS") != "1":
        return None
    bad = [r for r in discover(directory) if not r.ok]
    if not bad:
        return None
    return ("runs that failed to load (UNIPO_STRICT_RUNS=1):\n"
            + "\n".join(f"{r.path}:\n  " + (r.error or "").replace("\n", "\n  ") for r in bad))


def get_run(name: str, directory: Path | None = None) -> Run | None:
    """A run by its id, or the run of an algorithm (its spec id), resolved by the run's header.

    In order: the run whose header has ``run_id`` and ``algorithm`` both ``name``; a run that
    could not be read from a directory called ``name`` (so the page says why); the first run
    whose header's algorithm is ``name``; the run whose header's ``run_id`` is ``name``; the run
    in a directory called ``name``. When ``name`` is an algorithm's id, a run of another
    algorithm is never the answer, whatever its id or directory: the header decides.
    """
    directory = directory or runs_dir()
    runs, spec_ids = _discover_cached(str(directory), _key(directory))
    loaded = [r for r in runs if r.ok and (name not in spec_ids or r.header.algorithm == name)]
    for candidates in ([r for r in loaded if r.id == name and r.header.algorithm == name],
                       [r for r in runs if not r.ok and r.path.name == name],
                       [r for r in loaded if r.header.algorithm == name],
                       [r for r in loaded if r.id == name],
                       [r for r in loaded if r.path.name == name]):
        if candidates:
            return candidates[0]
    return None


def metric_series(run: Run, names: list[str]) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """(steps, values) per metric, streamed; steps where a metric is null are skipped."""
    steps: dict[str, list[int]] = {n: [] for n in names}
    values: dict[str, list[float]] = {n: [] for n in names}
    for record in runlog.iter_steps(run.path):
        for n in names:
            v = record.metrics.get(n)
            if v is not None:
                steps[n].append(record.step)
                values[n].append(v)
    return {n: (np.asarray(steps[n], dtype=np.int64), np.asarray(values[n], dtype=np.float64)) for n in names}


def rollout_starts(run: Run) -> np.ndarray:
    """Steps that begin a rollout (the boundaries the Training Explorer draws)."""
    return np.asarray([r.step for r in runlog.iter_steps(run.path) if r.first_in_rollout], dtype=np.int64)


def available_metrics(run: Run) -> list[str]:
    """Metric names present in the run, in catalogue order, then unknown ones by name."""
    from .schema import METRICS

    seen: dict[str, None] = {}
    for record in runlog.iter_steps(run.path):
        for name, value in record.metrics.items():
            if value is not None:
                seen.setdefault(name, None)
    known = [m for m in METRICS if m in seen]
    return known + sorted(m for m in seen if m not in METRICS)


# ---------------------------------------------------------------------------
# Which runs the build skipped, and why (a page can say so: see register below)
# ---------------------------------------------------------------------------

def skipped_runs_html(runs: list[Run], directory: Path | None = None) -> str:
    """An admonition naming every run that failed to load and its error; "" when none did.

    Everything from the log (directory names, error text) is escaped.
    """
    from html import escape

    bad = [r for r in runs if not r.ok]
    if not bad:
        return ""
    where = f" in <code>{escape(str(directory))}</code>" if directory is not None else ""
    items = "".join(f"<li><p><strong>{escape(r.path.name)}</strong></p><pre><code>{escape(r.error or 'unknown error')}"
                    "</code></pre></li>" for r in bad)
    return (f'<div class="admonition failure unipo-skipped-runs"><p class="admonition-title">'
            f"{len(bad)} run{'s' if len(bad) != 1 else ''}{where} could not be read and "
            f"{'were' if len(bad) != 1 else 'was'} skipped</p>"
            "<p>The rest of the site was built without them. Fix the log (run <code>unipo validate</code> on its "
            "directory to list every problem) and rebuild; set <code>UNIPO_STRICT_RUNS=1</code> to make such a "
            f"run fail the build instead.</p><ul>{items}</ul></div>")


def runs_status_html(directory: Path) -> str:
    """Which runs this build read from ``directory``, and which it skipped and why."""
    from html import escape

    runs = discover(directory)
    ok = [r for r in runs if r.ok]
    names = ", ".join(f"<code>{escape(r.id)}</code> ({escape(r.header.algorithm)})" for r in ok) or "none"
    loaded = (f'<div class="admonition info unipo-runs-status"><p class="admonition-title">Runs in this build</p>'
              f"<p>From <code>{escape(str(directory))}</code>: {len(ok)} run{'s' if len(ok) != 1 else ''} "
              f"loaded: {names}.</p></div>")
    return loaded + skipped_runs_html(runs, directory)


def register(env) -> None:
    """Macros (when ``unipo_build.runs`` is in ``macros.MACRO_MODULES``): ``{{ runs_status() }}``
    and ``{{ skipped_runs() }}``, each on a paragraph of its own."""
    from .macros import protect_html

    def directory() -> Path:
        conf = getattr(env, "conf", None) or {}
        extra = conf.get("extra", {}) if hasattr(conf, "get") else {}
        return runs_dir((extra or {}).get("unipo_runs"))

    @env.macro
    def runs_status() -> str:
        """The runs this build read, and those it skipped with their errors."""
        return protect_html(env, runs_status_html(directory()))

    @env.macro
    def skipped_runs() -> str:
        """An admonition naming the runs that could not be read (nothing when every run loaded)."""
        path = directory()
        return protect_html(env, skipped_runs_html(discover(path), path))
