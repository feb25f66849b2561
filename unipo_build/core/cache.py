"""What is read from files, made once while the files are unchanged: the package's one cache.

A build asks for the same few things many times: a YAML file, a directory's specs, a run catalogue, a
run's reader, a run's downsampled series, the anatomy page's pick. Each is made once and kept while what
it was made from holds: its *state*. The state of a file is :func:`file_state` (its path, size and
modification time in nanoseconds: ``mkdocs serve`` sees an edit), of several files :func:`files_state`;
a value made from another kept value (a run's series from its reader) takes that value as its state.

    _PARSED = Cache(256)

    def load(path):
        return _PARSED.get(str(path), file_state(path), lambda: parse(path))

A :class:`Cache` holds one value per key: asked again with the same state it returns the value it kept;
with another state it makes the value again and keeps that instead. Past ``kept`` keys the least recently
used goes. A value that fails to be made (its ``make`` raises) is not kept, so the error comes again.
Plain code: a dict in the order of use, no decorator and no framework.
"""

from __future__ import annotations

import os
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable
from pathlib import Path
from typing import Generic, TypeVar

V = TypeVar("V")

#: A file's state: (path, size in bytes, modification time in ns); (path, None, None) where it cannot be read.
FileState = tuple[str, int | None, int | None]


def file_state(path: str | Path) -> FileState:
    """(path, size, modification time in ns) of a file: what a value read from it is kept on. A file that
    cannot be stat'ed (missing, unreadable) is (path, None, None): reading it then raises its own error."""
    try:
        stat = os.stat(path)
    except OSError:
        return str(path), None, None
    return str(path), stat.st_size, stat.st_mtime_ns


def files_state(paths: Iterable[str | Path]) -> tuple[FileState, ...]:
    """The state of several files, in the order given: it changes when any of them changes, appears or goes."""
    return tuple(file_state(p) for p in paths)


class Cache(Generic[V]):
    """One value per key, made again when the key's state changes; at most ``kept`` keys (least recently
    used out first)."""

    def __init__(self, kept: int):
        if kept < 1:
            raise ValueError(f"a cache keeps at least one value, not {kept}")
        self.kept = kept
        self._entries: OrderedDict[Hashable, tuple[Hashable, V]] = OrderedDict()

    def get(self, key: Hashable, state: Hashable, make: Callable[[], V]) -> V:
        """The value kept for ``key`` if it was made in ``state``; else ``make()``, kept with ``state``."""
        entry = self._entries.get(key)
        if entry is not None and entry[0] == state:
            self._entries.move_to_end(key)
            return entry[1]
        self._entries.pop(key, None)  # made in another state: it is stale whether or not make() succeeds
        value = make()
        self._entries[key] = (state, value)
        while len(self._entries) > self.kept:
            self._entries.popitem(last=False)
        return value

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: Hashable) -> bool:
        return key in self._entries

    def clear(self) -> None:
        self._entries.clear()


__all__ = ["Cache", "FileState", "file_state", "files_state"]
