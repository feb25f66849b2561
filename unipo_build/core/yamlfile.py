"""YAML files read once while unchanged.

A build reads the same few YAML files many times (each spec of data/algorithms whenever a catalogue, a
command table or a check loads the specs; data/suite.yaml for every ladder on a page): a build parsed 226
files for 15 distinct ones, at about 3 ms each with PyYAML's parser. :func:`load`
parses a file once per state (its size and modification time, so `mkdocs serve` sees an edit) and hands
each caller its own copy, so no caller can change what another reads.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml

_PARSED: dict[tuple[str, int, int], Any] = {}
#: Files kept; a build reads about fifteen, a test session a few hundred different ones.
_MAX_FILES = 256


def load(path: str | Path) -> Any:
    """The YAML document of ``path`` (``yaml.safe_load`` of its UTF-8 text), parsed once while the file
    is unchanged. Raises what reading and parsing raise (OSError, UnicodeDecodeError, yaml.YAMLError),
    every time: a file that does not parse is not kept."""
    path = Path(path)
    stat = path.stat()
    key = (str(path.resolve()), stat.st_mtime_ns, stat.st_size)
    if key not in _PARSED:
        parsed = yaml.safe_load(path.read_bytes().decode("utf-8"))
        if len(_PARSED) >= _MAX_FILES:
            _PARSED.clear()
        _PARSED[key] = parsed
    return copy.deepcopy(_PARSED[key])
