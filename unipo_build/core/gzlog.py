"""Gzipped run logs, the writing side: what ``unipo publish`` does to a finished run's files.

:func:`pack_run` stores a finished run's steps, evaluations and token files gzipped (``steps.jsonl.gz``,
``evals.jsonl.gz``, ``tokens/step_000012.json.gz``) as :func:`gzip_bytes` writes them: one gzip member with no
file name, modification time 0, deflate level ``runlog.GZIP_LEVEL`` and OS byte 255, so the same run gives the
same bytes every time (with the same zlib) and a re-published set leaves git nothing to diff. The header stays
plain. :func:`unpack_run` writes them back plain. Reading either form is ``runlog``'s (``runlog.log_path``,
``log_lines``, ``read_log_bytes``): every reader of a run goes through it.
"""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

from unipo_build.core import runlog
from unipo_build.core.numbers import fmt_num


def gzip_bytes(data: bytes) -> bytes:
    """``data`` as one gzip member that depends on nothing but the data: no file name, modification time 0,
    deflate level runlog.GZIP_LEVEL, OS byte 255 ("unknown"). The same bytes every time (with the same zlib)."""
    header = b"\x1f\x8b\x08\x00" + struct.pack("<I", 0) + b"\x02\xff"  # magic, deflate, no flags, mtime 0, best, OS
    body = zlib.compress(data, level=runlog.GZIP_LEVEL, wbits=-15)
    return header + body + struct.pack("<II", zlib.crc32(data), len(data) & 0xFFFFFFFF)


def write_log_bytes(path: Path, data: bytes) -> None:
    """Rewrite a log file in the form it has (``path`` from :func:`runlog.log_path`): gzipped as :func:`gzip_bytes`
    writes it when it is gzipped, plain otherwise; atomically."""
    runlog.atomic_write_bytes(path, gzip_bytes(data) if runlog.is_packed(path) else data)


def copy_plain(source: Path, target: Path) -> int:
    """Write ``source`` (plain or gzipped) to ``target`` plain, unless ``target`` already holds those bytes (a
    rebuild rewrites nothing); the plain size. What the site serves of a published run's token file."""
    data = runlog.read_log_bytes(source)
    try:
        if target.stat().st_size == len(data) and target.read_bytes() == data:
            return len(data)
    except OSError:
        pass
    runlog.atomic_write_bytes(target, data)
    return len(data)


def _run_logs(run_dir: Path) -> list[Path]:
    """The plain paths of the files :func:`pack_run` may gzip: steps, evaluations, every token file."""
    found = [run_dir / name for name in runlog.PACKED_LOGS]
    found += sorted({p.with_name(p.name.removesuffix(runlog.GZIP_SUFFIX)) for p in runlog.token_paths(run_dir)})
    return found


def pack_run(run_dir: str | Path) -> list[str]:
    """Gzip a finished run's steps, evaluations and token files (what ``unipo publish`` ships); what changed,
    one phrase each ([]: nothing).

    Each file becomes NAME.gz as :func:`gzip_bytes` writes it (the same bytes each time), written atomically
    before the plain file goes; a file the gzip would not make smaller (an empty evals.jsonl) stays plain. A
    run without ``finished_at`` is left plain: the trainer may still append to it, ``unipo explain --watch``
    follows its steps.jsonl, and a resume rewrites it. A run holding a file in both forms (a publish stopped
    between the two) keeps the gzipped one when both hold the same records; otherwise that is a LogError,
    and nothing of the run is changed. Raises LogError for a run without a readable header.
    """
    run_dir = Path(run_dir)
    header = runlog.read_header(run_dir)
    if header.finished_at is None:
        return ["not finished (no finished_at): logs left plain"]
    todo: list[tuple[Path, Path]] = []
    stale: list[Path] = []
    for plain in _run_logs(run_dir):
        _, packed = runlog.log_candidates(plain)
        if plain.exists() and packed.exists():
            if runlog.read_log_bytes(packed) != plain.read_bytes():
                runlog.log_path(plain)  # raises: both, and they differ
            stale.append(plain)
        elif plain.exists():
            todo.append((plain, packed))
    packed_bytes = plain_bytes = files = 0
    for plain, packed in todo:
        data = plain.read_bytes()
        squeezed = gzip_bytes(data)
        if len(squeezed) >= len(data):
            continue
        runlog.atomic_write_bytes(packed, squeezed)
        plain.unlink()
        files += 1
        plain_bytes += len(data)
        packed_bytes += len(squeezed)
    for plain in stale:
        plain.unlink()
    changed = []
    if files:
        changed.append(f"{files} log file{'s' if files != 1 else ''} gzipped ({fmt_num(plain_bytes)} -> {fmt_num(packed_bytes)} bytes)")
    if stale:
        changed.append(f"{len(stale)} plain file{'s' if len(stale) != 1 else ''} removed beside {'its' if len(stale) == 1 else 'their'} gzipped copy")
    return changed


def unpack_run(run_dir: str | Path) -> list[str]:
    """The inverse of :func:`pack_run`: every gzipped log file of the run written back plain (to edit a run by
    hand, or to continue one); what changed ([]: nothing). Raises LogError for a file in both forms or a
    gzipped file that cannot be read (nothing of that file is changed)."""
    run_dir = Path(run_dir)
    files = 0
    for plain in _run_logs(run_dir):
        path = runlog.log_path(plain)
        if not runlog.is_packed(path):
            continue
        runlog.atomic_write_bytes(plain, runlog.read_log_bytes(path))
        path.unlink()
        files += 1
    return [f"{files} log file{'s' if files != 1 else ''} written back plain"] if files else []


__all__ = ["copy_plain", "gzip_bytes", "pack_run", "unpack_run", "write_log_bytes"]
