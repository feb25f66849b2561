"""Finding the runs a site is built from: the one runs resolver, and the catalogue it yields.

Where the runs are (:func:`runs_source`), in order:

0. when the build shows a set other than the default one (``extra.unipo_set``, set by the hook
   that builds each further set of ``extra.unipo_sets`` under ``<site>/<id>/``: see
   ``unipo_build.core.sets``), that set's runs directory, and nothing below; the run choices of
   ``extra.unipo_run_choice`` are the default set's and do not apply to it;
1. the environment variable ``UNIPO_RUNS``: one path, or several separated by ``os.pathsep``
   (``:`` on Linux and macOS), relative to the current directory;
2. ``extra.unipo_runs`` in mkdocs.yml: one path or a list, relative to the config's directory;
3. ``data/runs`` of the project.

Each path is a directory of runs, or a single run directory (it holds ``header.json`` or
``steps.jsonl``), which is taken as that run. A path that does not exist is an error
(:class:`RunsError`), never silently an empty build.

Which run a page shows when it names an algorithm (``grpo``) and several runs trained it
(``grpo``, ``grpo-s1``, ``grpo-s2``): the one ``extra.unipo_run_choice`` in mkdocs.yml names for
that algorithm (``{grpo: grpo-s1}``), else the run with token-level detail, then the lowest seed,
then the first id in sort order (:meth:`RunCatalog.chosen`), also when one of the runs has the
algorithm's id as its own. A page can always name any other run by its id or directory name.
Which algorithm a run is comes from its header, never from its directory: a GRPO run in a
directory called ``ppo`` is not what a page asking for ``ppo`` gets.

Each run is read once per build through its cached reader, by the validator's own loader
(``reader.check_run``): a run that ``unipo validate`` rejects, or an empty one, is kept with the
validator's messages so pages can say which run was skipped and why. Under UNIPO_STRICT_RUNS=1
the build fails instead, when it starts (:func:`strict_failure`, called from the MkDocs hook).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from html import escape
from pathlib import Path
from typing import Any, Mapping, Sequence

from unipo_build.core import moments  # noqa: F401  (its token digest joins the one pass over each run's token files)
from unipo_build.core import project, runlog
from unipo_build.core.cache import Cache, files_state
from unipo_build.core.paths import project_relative, without_project_root
from unipo_build.core.reader import RunReader, check_run, reader_for
from unipo_build.core.schema import EvalRecord, RunHeader
from unipo_build.core.specs import AlgorithmSpec, ResolvedAlgorithm, SpecError, load_specs

ENV_RUNS = "UNIPO_RUNS"
ENV_STRICT = "UNIPO_STRICT_RUNS"


class RunsError(ValueError):
    """The runs the build was pointed at do not exist, or a run choice names no such run."""


@dataclass
class Run:
    id: str
    path: Path
    header: RunHeader | None = None
    error: str | None = None
    spec: AlgorithmSpec | None = None
    evals: list[EvalRecord] = field(default_factory=list)
    _reader: RunReader | None = field(default=None, repr=False, compare=False)

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def config(self) -> ResolvedAlgorithm | None:
        return self.header.algorithm_config if self.header else None

    @property
    def variant(self) -> str | None:
        """The id the catalogue groups this run's seeds under (:func:`variant_of`)."""
        return variant_of(self.header) if self.header else None

    @property
    def reader(self) -> RunReader:
        """The run's reader (the one it was loaded with): every view reads the run through it."""
        if self._reader is None:
            self._reader = reader_for(self.path)
        return self._reader

    def token_steps(self) -> list[int]:
        return self.reader.token_steps

    def progress(self) -> tuple[int, int] | None:
        """(rollouts logged, rollouts planned) while the run is still training: its header has no
        ``finished_at`` and its log holds fewer rollouts than ``hyperparameters.steps`` asks for.
        None for a finished run, and for a log that does not say how many rollouts it planned."""
        if self.header is None or self.header.finished_at is not None:
            return None
        planned = self.header.hyperparameters.get("steps")
        table = self.reader.table
        logged = int(table.rollouts[-1]) + 1 if table.n else 0
        if not isinstance(planned, int) or isinstance(planned, bool) or logged >= planned:
            return None
        return logged, planned


#: How a variant id names a run sampled by a stale policy: ``grpo@lag8``.
LAG_MARK = "@lag"


def variant_of(header: RunHeader) -> str:
    """The algorithm id a run's seeds are grouped under: its header's algorithm, with ``@lag<k>``
    appended when its rollouts were sampled by the policy of k rollouts before (``sampler_lag``).

    Runs of one spec that differ in how they were sampled are different experiments, not seeds of
    one: an asynchronous GRPO run never joins the seed band of the synchronous ones. A page names
    the asynchronous runs' band by the variant id (``grpo@lag8``), the synchronous one by ``grpo``.
    """
    lag = header.hyperparameters.get("sampler_lag") or 0
    return f"{header.algorithm}{LAG_MARK}{lag}" if isinstance(lag, int) and lag > 0 else header.algorithm


def split_variant(variant: str) -> tuple[str, int]:
    """``grpo@lag8`` -> (``grpo``, 8); an algorithm id -> (it, 0)."""
    algorithm, mark, lag = variant.partition(LAG_MARK)
    return (algorithm, int(lag)) if mark and lag.isdigit() else (variant, 0)


def is_run_dir(path: Path) -> bool:
    return (path / runlog.HEADER).is_file() or runlog.has_log(path, runlog.STEPS)


#: At most this many of a skipped run's problems are quoted on the page (unipo validate lists all).
ERRORS_SHOWN = 10


def load_run(path: Path, specs: Mapping[str, AlgorithmSpec], root: Path | None = None) -> Run:
    """A run directory read and validated once, by the validator's loader (reader.check_run),
    or the validator's messages (their paths relative to the project ``root``: pages show them):
    an empty run is skipped as well."""
    run = Run(id=path.name, path=path)
    check = check_run(path, known_algorithms=set(specs))
    problems = check.errors or ([w for w in check.warnings if w.file.endswith(runlog.STEPS)] if check.empty else [])
    if problems:
        lines = [str(e) for e in problems[:ERRORS_SHOWN]]
        if len(problems) > ERRORS_SHOWN:
            lines.append(f"... and {len(problems) - ERRORS_SHOWN} more (run `unipo validate {path}` to list them)")
        run.error = without_project_root("\n".join(lines), root)
        return run
    run._reader = check.reader
    run.header, run.evals = check.header, check.evals
    run.id = run.header.run_id
    run.spec = specs.get(run.header.algorithm)
    return run


# ---------------------------------------------------------------------------
# The resolver
# ---------------------------------------------------------------------------

@dataclass(frozen=True)
class RunsSource:
    """The paths runs are read from, where that list came from, and the run choices."""

    paths: tuple[Path, ...]
    origin: str
    choice: tuple[tuple[str, str], ...] = ()  # (algorithm id, run id or directory name)
    root: Path | None = None  # the project's: pages name the paths relative to it

    def describe(self) -> str:
        """The paths as pages show them: relative to the project, no path of the building machine."""
        return ", ".join(project_relative(p, self.root) for p in self.paths)


def _as_list(value: Any) -> list[str]:
    if value is None or value == "":
        return []
    if isinstance(value, (list, tuple)):
        return [str(v) for v in value]
    return [str(value)]


def runs_source(root: str | Path | None = None, extra: Mapping[str, Any] | None = None,
                environ: Mapping[str, str] | None = None) -> RunsSource:
    """Where the runs are (see the module docstring); RunsError for a path that does not exist."""
    environ = os.environ if environ is None else environ
    extra = extra or {}
    root_path = Path(root).resolve() if root is not None else project.find_root()
    raw_choice = extra.get("unipo_run_choice") or {}
    if not isinstance(raw_choice, Mapping):
        raise RunsError(f"mkdocs.yml extra.unipo_run_choice: a mapping of algorithm id to run id, not {raw_choice!r}")
    choice = tuple(sorted((str(k), str(v)) for k, v in raw_choice.items()))
    if extra.get("unipo_set"):
        from unipo_build.core import sets  # imports only project: no cycle

        shown = sets.find_set(extra, str(extra["unipo_set"]), root_path, environ)
        if not shown.default:
            origin = f"mkdocs.yml extra.unipo_sets ({shown.id})"
            if not shown.runs.is_dir():
                raise RunsError(f"{origin}: no such directory: {shown.runs} (a directory of runs)")
            return RunsSource((shown.runs,), origin, (), root_path)
    if environ.get(ENV_RUNS):
        origin = ENV_RUNS
        paths = [Path(p).expanduser() for p in environ[ENV_RUNS].split(os.pathsep) if p]
        paths = [p if p.is_absolute() else Path.cwd() / p for p in paths]
    elif _as_list(extra.get("unipo_runs")):
        origin = "mkdocs.yml extra.unipo_runs"
        paths = [Path(p).expanduser() for p in _as_list(extra.get("unipo_runs"))]
        paths = [p if p.is_absolute() else root_path / p for p in paths]
    else:
        origin = "the project's data/runs"
        paths = [root_path / project.RUNS]
    missing = [p for p in paths if not p.is_dir()]
    if missing:
        raise RunsError(f"{origin}: no such directory: {', '.join(str(p) for p in missing)} (a runs directory, "
                        "or a run directory holding header.json and steps.jsonl)")
    return RunsSource(tuple(p.resolve() for p in paths), origin, choice, root_path)


def set_source(run_set: Any, root: str | Path | None = None, extra: Mapping[str, Any] | None = None,
               environ: Mapping[str, str] | None = None) -> RunsSource:
    """The runs of one set of ``extra.unipo_sets`` (a ``sets.RunSet``), whichever set the build
    shows: the default set's are the resolver's, another set's its directory."""
    plain = {k: v for k, v in (extra or {}).items() if k != "unipo_set"}
    if run_set.default:
        return runs_source(root, plain, environ)
    return runs_source(root, {**plain, "unipo_set": run_set.id}, environ)


def _run_dirs(source: RunsSource) -> list[Path]:
    out: list[Path] = []
    for path in source.paths:
        if is_run_dir(path):
            out.append(path)
        else:
            out.extend(p for p in sorted(path.iterdir()) if p.is_dir() and not p.name.startswith("."))
    return out


def _has_tokens(run: Run) -> bool:
    return bool(run.token_steps())


def seed_order(run: Run) -> tuple:
    """The sort key of runs in seed order (runs without a seed last), then by id."""
    return (run.header.seed is None, run.header.seed or 0, run.id)


class RunCatalog:
    """Every run of a :class:`RunsSource`, loaded or with its error, in the order found; and the
    one place that finds runs by name (:meth:`get`, :meth:`by_id`, :meth:`named`), by algorithm
    (:meth:`of_algorithm`, :meth:`seeds_of`, :meth:`chosen`, :meth:`chosen_each`) and by seed
    (:func:`seed_order`). A set's catalogue is ``catalog(set_source(run_set))``."""

    def __init__(self, source: RunsSource, runs: Sequence[Run], algorithms: Sequence[str] = ()):
        self.source = source
        self.runs = list(runs)
        #: Every algorithm id a page may name: the specs', the loaded runs' and their variants (grpo@lag8).
        self.algorithms = set(algorithms) | {v for r in self.runs if r.ok for v in (r.header.algorithm, r.variant)}
        self.choice = dict(source.choice)
        ids = [r.id for r in self.runs if r.ok]
        #: Run ids found more than once: the first one found wins, the others are not shown.
        self.duplicates = sorted({i for i in ids if ids.count(i) > 1})

    def loaded(self) -> list[Run]:
        seen, out = set(), []
        for run in self.runs:
            if run.ok and run.id not in seen:
                seen.add(run.id)
                out.append(run)
        return out

    def of_algorithm(self, algorithm: str) -> list[Run]:
        """Every loaded run of ``algorithm``, a variant id (:func:`variant_of`: the header's algorithm
        for a synchronous run, ``grpo@lag8`` for one sampled 8 rollouts stale), in the order found."""
        return [r for r in self.loaded() if r.variant == algorithm]

    def seeds_of(self, algorithm: str) -> list[Run]:
        """Every loaded run of the variant ``algorithm``, in seed order (:func:`seed_order`)."""
        return sorted(self.of_algorithm(algorithm), key=seed_order)

    def by_id(self, run_id: str) -> Run | None:
        """The loaded run whose id is exactly ``run_id`` (never an algorithm's chosen run), or None."""
        return next((r for r in self.loaded() if r.id == run_id), None)

    def loaded_run(self, name: str) -> Run | None:
        """:meth:`get` when the run it finds is loaded, else None."""
        found = self.get(name)
        return found if found is not None and found.ok else None

    def named(self, name: str) -> list[Run]:
        """Every loaded run of ``name`` when it is an algorithm id, in seed order; else the one
        loaded run of that id or directory name; else []."""
        runs = self.seeds_of(name)
        if runs:
            return runs
        found = self.loaded_run(name)
        return [found] if found is not None else []

    def with_seeds(self, name: str) -> tuple[Run | None, list[Run]]:
        """(the loaded run :meth:`get` finds for ``name``, every run of its algorithm in seed order);
        (None, []) when there is none."""
        run = self.loaded_run(name)
        return (None, []) if run is None else (run, self.seeds_of(run.variant))

    def chosen_each(self, skip: set[str] | frozenset[str] = frozenset()) -> list[Run]:
        """The chosen run of every algorithm of the loaded runs but those in ``skip``, in the order
        their runs were found."""
        out: list[Run] = []
        for run in self.loaded():
            if run.header.algorithm in skip or run.variant in skip:
                continue
            chosen = self.chosen(run.variant)
            if chosen is not None and all(chosen.path != r.path for r in out):
                out.append(chosen)
        return out

    def chosen(self, algorithm: str) -> Run | None:
        """The run a page shows for ``algorithm`` (see the module docstring)."""
        candidates = self.of_algorithm(algorithm)
        wanted = self.choice.get(algorithm)
        if wanted is not None:
            for run in candidates:
                if wanted in (run.id, run.path.name):
                    return run
            known = ", ".join(r.id for r in candidates) or "none"
            raise RunsError(f"mkdocs.yml extra.unipo_run_choice: {algorithm}: {wanted!r} is not a loaded run of "
                            f"{algorithm} in {self.source.describe()} (its runs: {known})")
        if not candidates:
            return None
        return min(candidates, key=lambda r: (not _has_tokens(r), *seed_order(r)))

    def why_chosen(self, algorithm: str) -> str:
        """Why :meth:`chosen` picks its run, in words ("" when the algorithm has one run or none)."""
        candidates = self.of_algorithm(algorithm)
        if len(candidates) < 2:
            return ""
        if algorithm in self.choice:
            return "mkdocs.yml names it in extra.unipo_run_choice"
        run = self.chosen(algorithm)
        others = [r for r in candidates if r is not run]
        if _has_tokens(run) and not any(_has_tokens(r) for r in others):
            return "it is the one with token-level detail"
        rivals = [r for r in others if _has_tokens(r) == _has_tokens(run)]
        if run.header.seed is not None and all(r.header.seed is None or r.header.seed > run.header.seed
                                               for r in rivals):
            return ("it has the lowest seed" if not _has_tokens(run) or len(rivals) == len(others)
                    else "it has token-level detail and the lowest seed of those that do")
        return "it comes first by run id"

    def get(self, name: str) -> Run | None:
        """The chosen run of an algorithm when ``name`` is the algorithm id of a loaded run (even if a
        run also has that id: the shipped ``grpo`` is one of GRPO's runs, and extra.unipo_run_choice
        must be able to pick another), else a run by its id or directory name (loaded or not).

        When ``name`` is an algorithm's id, a loaded run of another algorithm is never the answer,
        whatever its id or directory is called: its header decides.
        """
        if self.of_algorithm(name):
            return self.chosen(name)
        for run in self.runs:
            if name in (run.id, run.path.name):
                if run.ok and name in self.algorithms and run.variant != name:
                    continue
                return run
        return self.chosen(name)  # no run: None, or the error of a run choice that names none


_CATALOGS: Cache[RunCatalog] = Cache(8)


def _load_catalog(source: RunsSource) -> RunCatalog:
    try:
        specs = load_specs()
    except (SpecError, project.ProjectError):
        specs = {}
    return RunCatalog(source, [load_run(p, specs, source.root) for p in _run_dirs(source)], list(specs))


def catalog(source: RunsSource) -> RunCatalog:
    """The runs of ``source``, each loaded once (cached while the run directories' step logs are unchanged)."""
    state = files_state(p for path in _run_dirs(source) for p in runlog.log_candidates(path / runlog.STEPS))
    return _CATALOGS.get(source, state, lambda: _load_catalog(source))


def strict_failure(source: RunsSource) -> str | None:
    """Under UNIPO_STRICT_RUNS=1, the message that fails the build when a run cannot be read:
    every such run with the validator's messages (the MkDocs hook raises it before any page)."""
    if os.environ.get(ENV_STRICT) != "1":
        return None
    bad = [r for r in catalog(source).runs if not r.ok]
    if not bad:
        return None
    return (f"runs that failed to load ({ENV_STRICT}=1):\n"
            + "\n".join(f"{r.path}:\n  " + (r.error or "").replace("\n", "\n  ") for r in bad))


def catalog_of(where: "RunCatalog | RunsSource | str | Path | Sequence[str | Path] | None") -> RunCatalog:
    """A catalogue from a catalogue, a source, one path or several (directories of runs or runs),
    or None (the default source)."""
    if isinstance(where, RunCatalog):
        return where
    if isinstance(where, RunsSource):
        return catalog(where)
    if where is None:
        return catalog(runs_source())
    paths = [where] if isinstance(where, (str, Path)) else list(where)
    return catalog(runs_source(extra={"unipo_runs": [str(Path(p).resolve()) for p in paths]}, environ={}))


def discover(where=None) -> list[Run]:
    """Every run found (loaded or with its error)."""
    return list(catalog_of(where).runs)


def get_run(name: str, where=None) -> Run | None:
    """A run by its id or directory name, or the chosen run of an algorithm (its spec id)."""
    return catalog_of(where).get(name)


# ---------------------------------------------------------------------------
# Which runs the build read, and which it skipped and why
# ---------------------------------------------------------------------------

def skipped_runs_html(runs: list[Run], directory: Path | str | None = None) -> str:
    """An admonition naming every run that failed to load and its error; "" when none did.

    Everything from the log (directory names, error text) is escaped.
    """
    bad = [r for r in runs if not r.ok]
    if not bad:
        return ""
    where = f" in <code>{escape(project_relative(directory))}</code>" if directory is not None else ""
    items = "".join(f"<li><p><strong>{escape(r.path.name)}</strong></p><pre><code>{escape(r.error or 'unknown error')}"
                    "</code></pre></li>" for r in bad)
    return (f'<div class="admonition failure unipo-skipped-runs"><p class="admonition-title">'
            f"{len(bad)} run{'s' if len(bad) != 1 else ''}{where} could not be read and "
            f"{'were' if len(bad) != 1 else 'was'} skipped</p>"
            "<p>The rest of the site was built without them. Fix the log (run <code>unipo validate</code> on its "
            "directory to list every problem) and rebuild; set <code>UNIPO_STRICT_RUNS=1</code> to make such a "
            f"run fail the build instead.</p><ul>{items}</ul></div>")


def runs_status_html(where) -> str:
    """Which runs this build read and from where, which run each algorithm's pages show, and
    which runs it skipped and why."""
    cat = catalog_of(where)
    ok = cat.loaded()
    names = ", ".join(f"<code>{escape(r.id)}</code> ({escape(r.header.algorithm)})" for r in ok) or "none"
    shown = []
    for algorithm in sorted({r.variant for r in ok}):
        runs = cat.of_algorithm(algorithm)
        if len(runs) > 1:
            shown.append(f"<code>{escape(algorithm)}</code>: <code>{escape(cat.chosen(algorithm).id)}</code> "
                         f"of {len(runs)}")
    choice = (f"<p>Pages that name an algorithm with several runs show: {'; '.join(shown)}.</p>" if shown else "")
    dupes = (f"<p>Run ids found more than once (the first one is used): "
             f"{', '.join(f'<code>{escape(d)}</code>' for d in cat.duplicates)}.</p>" if cat.duplicates else "")
    where_text = ", ".join(f"<code>{escape(project_relative(p, cat.source.root))}</code>" for p in cat.source.paths)
    loaded = (f'<div class="admonition info unipo-runs-status"><p class="admonition-title">Runs in this build</p>'
              f"<p>From {where_text} ({escape(cat.source.origin)}): {len(ok)} run{'s' if len(ok) != 1 else ''} "
              f"loaded: {names}.</p>{choice}{dupes}</div>")
    return loaded + skipped_runs_html(cat.runs, cat.source.describe())
