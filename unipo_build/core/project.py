"""Where a project's data lives: algorithm specs, runs and tasks, found from the project root.

The project root is the directory that holds ``data/`` (and ``mkdocs.yml``). It is, in order:

1. an explicit root: the MkDocs config's directory during a build, a caller's ``root=``;
2. the environment variable ``UNIPO_ROOT``;
3. the nearest directory at or above the current one that holds ``data/algorithms``.

Runs and tasks are never found from the installed package's own path: ``pip install .`` copies ``unipo_build``
into site-packages and leaves ``data/`` behind. The shipped specs are the one exception (:func:`spec_dir`): the
package carries them as ``unipo_build/specs`` (in the checkout a link to ``data/algorithms``; in a wheel a copy,
MANIFEST.in), so ``unipo import`` and ``unipo explain`` name a run's algorithm from any directory; a project found
as above (or named by ``UNIPO_ROOT``) still comes first, its own specs included.
"""

from __future__ import annotations

import os
from pathlib import Path

ENV_ROOT = "UNIPO_ROOT"
SPECS = Path("data") / "algorithms"
RUNS = Path("data") / "runs"
TASKS = Path("data") / "tasks"
#: The specs shipped inside the package (not resolved: in a checkout it is the link to data/algorithms).
SHIPPED_SPECS = Path(__file__).resolve().parent.parent / "specs"


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


def shipped_spec_dir() -> Path | None:
    """The specs the installed package carries (``unipo_build/specs``); None where it has none."""
    return SHIPPED_SPECS if SHIPPED_SPECS.is_dir() and any(SHIPPED_SPECS.glob("*.yaml")) else None


def spec_dir(root: str | Path | None = None) -> Path:
    """``<root>/data/algorithms``: one spec file per algorithm. With no ``root`` and no ``UNIPO_ROOT``, outside any
    project, the specs shipped with the package (:func:`shipped_spec_dir`); ProjectError where there are none."""
    if root is None and not os.environ.get(ENV_ROOT):
        try:
            return find_root() / SPECS
        except ProjectError:
            shipped = shipped_spec_dir()
            if shipped is None:
                raise
            return shipped
    return find_root(root) / SPECS


def package_project() -> Path | None:
    """The project the package was imported from (an editable install, a checkout on the path: the directory above
    ``unipo_build`` holds data/algorithms and mkdocs.yml); None for an installed copy."""
    here = Path(__file__).resolve().parents[2]
    return here if _is_root(here) and (here / "mkdocs.yml").is_file() else None


def task_dir(root: str | Path | None = None) -> Path:
    """``<root>/data/tasks``: the generated task data."""
    return find_root(root) / TASKS
