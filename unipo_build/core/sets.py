"""Run sets: the same course shown on more than one set of runs (issue 20: the tiny CPU set and
the gpu set).

A set is a named runs directory. mkdocs.yml lists them in ``extra.unipo_sets``::

    unipo_sets:
      - {id: tiny, label: "CPU set (tiny)", runs: data/runs}
      - {id: gpu, label: "GPU set", runs: data/runs-gpu}

The first set is the default: its pages are the site's root, and its runs are whatever the runs
resolver (``unipo_build.core.runs``: ``UNIPO_RUNS``, ``extra.unipo_runs``, ``data/runs``) finds, so
the course builds exactly as before when no other set is present. Every other set is shown only
when its runs directory exists and holds at least one run directory: a clone without the gpu set
builds the tiny course alone, with no switch.

The environment variable ``UNIPO_SET_<ID>_RUNS`` (the id upper-cased, ``-`` as ``_``: e.g.
``UNIPO_SET_GPU_RUNS``) points a set other than the default at another runs directory without
editing mkdocs.yml, as ``UNIPO_RUNS`` does for the default set; a relative path is taken from the
current directory.

Without ``extra.unipo_sets`` there is one set, ``default``, whose runs are the resolver's.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from unipo_build.core import project

SET_ID = re.compile(r"^[a-z][a-z0-9-]{0,31}$")


class SetsError(ValueError):
    """``extra.unipo_sets`` is malformed: the message names the entry and the field."""


@dataclass(frozen=True)
class RunSet:
    id: str
    label: str
    #: The set's runs directory (absolute), or None for the default set (the runs resolver's).
    runs: Path | None
    default: bool = False

    @property
    def prefix(self) -> str:
        """Where the set's pages live under the site: "" for the default set, "<id>/" otherwise."""
        return "" if self.default else f"{self.id}/"


def _has_runs(path: Path) -> bool:
    return path.is_dir() and any(p.is_dir() and not p.name.startswith(".") for p in path.iterdir())


def env_name(set_id: str) -> str:
    """The environment variable that overrides a (non-default) set's runs: ``UNIPO_SET_GPU_RUNS``."""
    return f"UNIPO_SET_{set_id.upper().replace('-', '_')}_RUNS"


def declared_sets(extra: Mapping[str, Any] | None, root: str | Path | None = None,
                  environ: Mapping[str, str] | None = None) -> list[RunSet]:
    """Every set mkdocs.yml declares, present or not (SetsError for a malformed entry). A relative
    ``runs`` is relative to `root`, the config's directory, as ``extra.unipo_runs`` is; it need not
    be a UNIPO project (a config that INHERITs the course's from elsewhere simply has no further set
    there)."""
    environ = os.environ if environ is None else environ
    raw = (extra or {}).get("unipo_sets")
    if not raw:
        return [RunSet(id="default", label="Runs", runs=None, default=True)]
    if not isinstance(raw, list):
        raise SetsError(f"mkdocs.yml extra.unipo_sets: a list of {{id, label, runs}}, not {type(raw).__name__}")
    root_path = Path(root).resolve() if root is not None else project.find_root()
    out: list[RunSet] = []
    for i, entry in enumerate(raw):
        where = f"mkdocs.yml extra.unipo_sets[{i}]"
        if not isinstance(entry, Mapping):
            raise SetsError(f"{where}: a mapping with id, label and runs, not {entry!r}")
        unknown = sorted(set(entry) - {"id", "label", "runs"})
        if unknown:
            raise SetsError(f"{where}: unknown field {unknown[0]!r} (fields: id, label, runs)")
        for key in ("id", "label", "runs"):
            if not isinstance(entry.get(key), str) or not entry[key].strip():
                raise SetsError(f"{where}.{key}: a non-empty string is required")
        if not SET_ID.match(entry["id"]):
            raise SetsError(f"{where}.id: {entry['id']!r} must be lower-case letters, digits and '-' "
                            "(it becomes a folder of the site)")
        if entry["id"] in {s.id for s in out}:
            raise SetsError(f"{where}.id: {entry['id']!r} is used twice")
        runs = Path(entry["runs"]).expanduser()
        runs = runs if runs.is_absolute() else root_path / runs
        override = environ.get(env_name(entry["id"])) if i > 0 else None
        if override:
            runs = Path(override).expanduser()
            runs = runs if runs.is_absolute() else Path.cwd() / runs
        out.append(RunSet(id=entry["id"], label=entry["label"].strip(), runs=runs.resolve(), default=i == 0))
    return out


#: The runs resolver's variable (unipo_build.core.runs.ENV_RUNS; that module imports this one).
ENV_RUNS = "UNIPO_RUNS"


def available_sets(extra: Mapping[str, Any] | None, root: str | Path | None = None,
                   environ: Mapping[str, str] | None = None) -> list[RunSet]:
    """The sets this build shows: the default one always, every other one whose runs exist. A build
    pointed at other runs with ``UNIPO_RUNS`` (your own logs, a test's) shows those alone: a further
    set joins it only when its own ``UNIPO_SET_<ID>_RUNS`` names its runs too."""
    environ = os.environ if environ is None else environ
    own_runs = bool(environ.get(ENV_RUNS))
    sets = declared_sets(extra, root, environ)
    return [s for s in sets if s.default or (s.runs is not None and _has_runs(s.runs)
                                             and (not own_runs or environ.get(env_name(s.id))))]


def find_set(extra: Mapping[str, Any] | None, set_id: str, root: str | Path | None = None,
             environ: Mapping[str, str] | None = None) -> RunSet:
    """A declared set by id (SetsError naming the declared ids when there is none)."""
    sets = declared_sets(extra, root, environ)
    for s in sets:
        if s.id == set_id:
            return s
    raise SetsError(f"no run set {set_id!r} in mkdocs.yml extra.unipo_sets (sets: {', '.join(s.id for s in sets)})")


def shown_set(extra: Mapping[str, Any] | None, root: str | Path | None = None,
              environ: Mapping[str, str] | None = None) -> RunSet:
    """The set a build shows: the one ``extra.unipo_set`` names (the hook sets it for each further
    set's build), else the default set."""
    shown = (extra or {}).get("unipo_set")
    if shown:
        return find_set(extra, str(shown), root, environ)
    return declared_sets(extra, root, environ)[0]
