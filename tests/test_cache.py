"""unipo_build.core.cache: one value per key made again when its state changes, worked by hand; and the
package builds no file-state key and keeps no module cache of its own beside it."""

from __future__ import annotations

import ast
import os
from pathlib import Path

import pytest

from unipo_build.core.cache import Cache, file_state, files_state

PACKAGE = Path(__file__).resolve().parents[1] / "unipo_build"
TRAINING = PACKAGE.parent / "training"


def _touch(path: Path, text: str) -> None:
    """Write ``text`` and set the modification time 1 ms later than it was: an edit within one clock tick."""
    before = path.stat().st_mtime_ns if path.exists() else 0
    path.write_text(text, encoding="utf-8")
    now = path.stat()
    os.utime(path, ns=(now.st_atime_ns, max(now.st_mtime_ns, before + 1_000_000)))


def test_file_state_is_path_size_and_time_and_none_for_a_missing_file(tmp_path):
    path = tmp_path / "a.txt"
    assert file_state(path) == (str(path), None, None)
    path.write_text("abc", encoding="utf-8")
    os.utime(path, ns=(5, 7_000_000_000))
    assert file_state(path) == (str(path), 3, 7_000_000_000)
    assert files_state([path, tmp_path / "b"]) == ((str(path), 3, 7_000_000_000), (str(tmp_path / "b"), None, None))


def test_a_value_is_made_once_per_state():
    cache: Cache[str] = Cache(4)
    made = []

    def make(text):
        return lambda: made.append(text) or text

    assert cache.get("k", 1, make("one")) == "one"
    assert cache.get("k", 1, make("two")) == "one"  # same state: kept, make not called
    assert made == ["one"]
    assert cache.get("k", 2, make("three")) == "three"  # the state changed: made again, and kept instead
    assert cache.get("k", 2, make("four")) == "three"
    assert cache.get("k", 1, make("five")) == "five"  # back to the first state: the old value was not kept
    assert made == ["one", "three", "five"] and len(cache) == 1


def test_the_least_recently_used_key_goes_first():
    cache: Cache[int] = Cache(2)
    cache.get("a", 0, lambda: 1)
    cache.get("b", 0, lambda: 2)
    cache.get("a", 0, lambda: -1)  # a used again: b is now the oldest
    cache.get("c", 0, lambda: 3)
    assert "a" in cache and "b" not in cache and "c" in cache and len(cache) == 2
    assert cache.get("b", 0, lambda: 20) == 20 and "a" not in cache
    cache.clear()
    assert len(cache) == 0
    with pytest.raises(ValueError):
        Cache(0)


def test_a_value_that_fails_is_not_kept_and_its_stale_value_goes():
    cache: Cache[int] = Cache(4)
    cache.get("k", 1, lambda: 10)

    def fail():
        raise OSError("gone")

    for _ in range(2):  # the error comes every time
        with pytest.raises(OSError):
            cache.get("k", 2, fail)
    assert "k" not in cache
    assert cache.get("k", 1, lambda: 11) == 11  # the value of state 1 went with the failed remake


def test_an_edit_of_a_file_is_seen(tmp_path):
    """Kept on file_state: the same length written again within one clock tick is still another state."""
    path = tmp_path / "spec.yaml"
    _touch(path, "id: a\n")
    cache: Cache[str] = Cache(4)
    reads = []

    def read():
        reads.append(1)
        return path.read_text(encoding="utf-8")

    assert cache.get(str(path), file_state(path), read) == "id: a\n"
    assert cache.get(str(path), file_state(path), read) == "id: a\n" and len(reads) == 1
    _touch(path, "id: b\n")
    assert cache.get(str(path), file_state(path), read) == "id: b\n" and len(reads) == 2
    path.unlink()
    with pytest.raises(FileNotFoundError):
        cache.get(str(path), file_state(path), read)


def test_a_state_may_be_an_object_kept_by_identity():
    """A run's series is kept on its reader: a new reader (the run's files changed) makes it again."""
    class Reader:
        pass

    first, second = Reader(), Reader()
    cache: Cache[int] = Cache(4)
    assert cache.get("run", first, lambda: 1) == 1
    assert cache.get("run", first, lambda: 2) == 1
    assert cache.get("run", second, lambda: 3) == 3


def _sources() -> list[Path]:
    return sorted(p for folder in (PACKAGE, TRAINING) for p in folder.rglob("*.py") if p.name != "cache.py")


def test_no_module_builds_a_file_state_of_its_own():
    """st_mtime_ns is read in core/cache.py only: every other key of a file's version is its file_state."""
    found = [f"{p.relative_to(PACKAGE.parent)}:{n.lineno}" for p in _sources()
             for n in ast.walk(ast.parse(p.read_text(encoding="utf-8")))
             if isinstance(n, ast.Attribute) and n.attr == "st_mtime_ns"]
    assert not found, f"build the key with unipo_build.core.cache.file_state: {found}"


def _module_dicts(tree: ast.Module) -> list[tuple[str, int]]:
    """Module-level names bound to an empty dict or OrderedDict (the shape of a hand-rolled cache)."""
    out = []
    for node in tree.body:
        target, value = (node.target, node.value) if isinstance(node, ast.AnnAssign) else \
            (node.targets[0], node.value) if isinstance(node, ast.Assign) and len(node.targets) == 1 else (None, None)
        empty = isinstance(value, ast.Dict) and not value.keys or isinstance(value, ast.Call) and not value.args \
            and getattr(value.func, "id", getattr(value.func, "attr", None)) in ("dict", "OrderedDict")
        if isinstance(target, ast.Name) and empty:
            out.append((target.id, node.lineno))
    return out


#: Module-level dicts that start empty and are no cache of what a file holds: registries filled at import,
#: the per-page state of one build, and what a build has said once.
NOT_CACHES = {
    "unipo_build/core/reader.py": {"TOKEN_DIGESTS"},
    "unipo_build/site/context.py": {"MACROS"},
    "unipo_build/site/page_state.py": {"_PROTECTED", "_CHART_COUNTS", "_SCRIPTS"},
    "unipo_build/site/hooks.py": {"_RUNS_LOGGED"},
}


def test_no_module_keeps_a_cache_of_its_own():
    """A module that keeps what it read uses a Cache: no module-level dict that starts empty, beyond those
    named in NOT_CACHES."""
    found = []
    for path in _sources():
        rel = path.relative_to(PACKAGE.parent).as_posix()
        allowed = NOT_CACHES.get(rel, set())
        found += [f"{rel}:{line} {name}" for name, line in _module_dicts(ast.parse(path.read_text(encoding="utf-8")))
                  if name not in allowed]
    assert not found, f"keep these in a unipo_build.core.cache.Cache: {found}"
