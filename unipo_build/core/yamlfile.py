"""YAML files read once while unchanged.

A build reads the same few YAML files many times (each spec of data/algorithms whenever a catalogue, a
command table or a check loads the specs; data/suite.yaml for every ladder on a page): a build parsed 226
files for 15 distinct ones, at about 3 ms each with PyYAML's parser. :func:`load`
parses a file once per state (``cache.file_state``: its size and modification time, so `mkdocs serve` sees
an edit) and hands each caller its own copy, so no caller can change what another reads.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml

from unipo_build.core.cache import Cache, file_state

#: Files kept; a build reads about fifteen, a test session a few hundred different ones.
_PARSED: Cache[Any] = Cache(256)


def load(path: str | Path) -> Any:
    """The YAML document of ``path`` (``yaml.safe_load`` of its UTF-8 text), parsed once while the file
    is unchanged. Raises what reading and parsing raise (OSError, UnicodeDecodeError, yaml.YAMLError),
    every time: a file that does not parse is not kept."""
    path = Path(path).resolve()
    parsed = _PARSED.get(str(path), file_state(path), lambda: yaml.safe_load(path.read_bytes().decode("utf-8")))
    return copy.deepcopy(parsed)
