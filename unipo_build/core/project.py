"""Where a project's data lives: algorithm specs, runs and tasks, found from the project root.

The project root is the directory that holds ``data/`` (and ``mkdocs.yml``). It is, in order:

1. an explicit root: the MkDocs config's directory during a build, a caller's ``root=``;
2. the environment variable ``UNIPO_ROOT``;
3. the nearest directory at or above the current one that holds ``data/algorithms``.

Never the installed package's own path: ``pip install .`` copies ``unipo_build`` into
site-packages and leaves ``data/`` behind, so a path relative to this file finds nothing there.
"""

from __future__ import annotations

import os
from pathlib import Path

ENV_ROOT = "UNIPO_ROOT"
SPECS = Path("data") / "algorithms"
RUNS = Path("data") / "runs"
TASKS = Path("data") / "tasks"


class ProjectError(ValueError):
    """No project root could be found: the message says where it looked and how to name one."""


def _is_root(path: Path) -> bool:
    return (path / SPECS).is_dir()


def find_root(root: str | Path | None = None, *, start: str | Path | None = None) -> Path:
    """The project root (see the module docstring); ProjectError names what was tried."""
    if root is not None:
        path = Path(root).expanduser().resolve()
        if not _is_root(path):
            raise ProjectError(f"{path}: not a UNIPO project (no {SPECS} in it)")
        return path
    env = os.environ.get(ENV_ROOT)
    if env:
        path = Path(env).expanduser().resolve()
        if not _is_root(path):
            raise ProjectError(f"{ENV_ROOT}={env}: not a UNIPO project (no {SPECS} in {path})")
        return path
    here = Path(start or Path.cwd()).resolve()
    for candidate in (here, *here.parents):
        if _is_root(candidate):
            return candidate
    raise ProjectError(f"no UNIPO project at or above {here} (looked for {SPECS}); run from the project's "
                       f"directory or set {ENV_ROOT} to it")


def root_or(fallback: str | Path) -> Path:
    """find_root(), or ``fallback`` where no project is found (a caller's own checkout, when it runs
    from a directory outside any project without ``UNIPO_ROOT``)."""
    try:
        return find_root()
    except ProjectError:
        return Path(fallback).resolve()


def spec_dir(root: str | Path | None = None) -> Path:
    """``<root>/data/algorithms``: one spec file per algorithm."""
    return find_root(root) / SPECS


def task_dir(root: str | Path | None = None) -> Path:
    """``<root>/data/tasks``: the generated task data."""
    return find_root(root) / TASKS
