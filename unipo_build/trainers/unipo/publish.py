"""Make a run trained in another checkout fit to publish: `unipo publish RUN...`.

The trainer writes a header's paths relative to its project (``unipo_build.core.paths``), records its
wall time in ``wall_time_s`` and gives its files ordinary permissions. A run trained by an older
trainer, or in another checkout of the project (a second worktree, a GPU node), carries instead
that machine's absolute paths (task source, checkpoints, a model given by path), its wall time
only as a ``wall time N s`` note, and files only their owner may read. This rewrites the header
(nothing else: steps, evaluations and token files are left as they are) and the permissions.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from unipo_build.core import runlog
from unipo_build.core.paths import project_relative

#: The note older trainers left instead of ``wall_time_s``.
_WALL_NOTE = re.compile(r"^wall time (\d+(?:\.\d+)?) s$")


def _relocated(value: str | None, trained_in: Path | None) -> str | None:
    """An absolute path as the trainer now writes it; anything else (a relative path, a name) unchanged."""
    if value is None or not Path(value).is_absolute():
        return value
    return project_relative(value, trained_in)


def publish_run(run_dir: str | Path, trained_in: str | Path | None = None) -> list[str]:
    """Rewrite ``run_dir``'s header and file modes; return what changed, one phrase each ([]: nothing).

    ``trained_in``: the project root the run was trained in (default: this project's). Paths
    inside it become relative to it; any other absolute path keeps its last part (``.../name``).
    Raises runlog.LogError for a directory without a readable header.
    """
    run_dir = Path(run_dir)
    header = runlog.read_header(run_dir)
    root = Path(trained_in) if trained_in is not None else None
    changed, update = [], {}
    task_source = _relocated(header.task.source, root)
    if task_source != header.task.source:
        update["task"] = header.task.model_copy(update={"source": task_source})
        changed.append(f"task.source {task_source}")
    for field in ("model", "reference_model"):
        info = getattr(header, field)
        if info is None:
            continue
        fixed = {key: _relocated(getattr(info, key), root) for key in ("name", "checkpoint")}
        fixed = {key: value for key, value in fixed.items() if value != getattr(info, key)}
        if fixed:
            update[field] = info.model_copy(update=fixed)
            changed += [f"{field}.{key} {value}" for key, value in fixed.items()]
    note = _WALL_NOTE.match(header.notes or "")
    if header.wall_time_s is None and header.finished_at is not None and note:
        update.update(wall_time_s=float(note.group(1)), notes=None)
        changed.append(f"wall_time_s {note.group(1)} (from the note)")
    if update:
        runlog.atomic_write_text(run_dir / runlog.HEADER, runlog.dumps(header.model_copy(update=update)))
    mode = runlog.new_file_mode()
    private = [p for p in sorted(run_dir.rglob("*")) if p.is_file() and p.stat().st_mode & 0o777 != mode]
    for path in private:
        os.chmod(path, mode)
    if private:
        changed.append(f"{len(private)} file{'s' if len(private) != 1 else ''} given mode {mode:o}")
    return changed
