"""Paths as published: relative to the project, never the building machine's absolute paths.

Run headers (task source, checkpoint) and built pages (the runs directory, a run's error) name
files. An absolute path there says where one machine kept its checkout and means nothing on the
next, so paths inside the project are written relative to its root (``unipo_build.core.project``),
and a path outside it keeps only its last part.
"""

from __future__ import annotations

import os
from pathlib import Path

from unipo_build.core import project


def _root(root: str | Path | None) -> Path:
    if root is not None:
        return Path(root).resolve()
    try:
        return project.find_root()
    except project.ProjectError:
        return Path.cwd().resolve()


def project_relative(path: str | Path, root: str | Path | None = None) -> str:
    """``path`` relative to the project root (POSIX separators) when it lies inside; else ``.../<name>``.

    ``root``: the project root (default: found as ``unipo_build.core.project`` finds it). A relative
    ``path`` is taken as given: it is already relative to where it was given.
    """
    path = Path(path)
    if not path.is_absolute():
        return path.as_posix()
    base = _root(root)
    # As written first (a link inside the project, e.g. work/sft-tiny pointing at a shared copy, is
    # named where the project has it), then with links resolved.
    for candidate in (Path(os.path.normpath(path)), path.resolve()):
        try:
            return candidate.relative_to(base).as_posix() or "."
        except ValueError:
            continue
    return f".../{path.name}"


def without_project_root(text: str, root: str | Path | None = None) -> str:
    """``text`` (an error message, say) with the project root's absolute path taken out of every path."""
    base = str(_root(root))
    return text.replace(base + os.sep, "").replace(base, ".")
