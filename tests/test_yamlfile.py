"""unipo_build.core.yamlfile: a YAML file parsed once while unchanged, each caller with its own copy."""

from __future__ import annotations

import os

import pytest
import yaml

from unipo_build.core import yamlfile


def test_an_unchanged_file_is_parsed_once_and_an_edit_is_seen(tmp_path, monkeypatch):
    path = tmp_path / "spec.yaml"
    path.write_text("id: a\nrungs: [x, y]\n", encoding="utf-8")
    parses = []
    real = yaml.safe_load
    monkeypatch.setattr(yaml, "safe_load", lambda text: parses.append(text) or real(text))
    assert yamlfile.load(path) == {"id": "a", "rungs": ["x", "y"]}
    assert yamlfile.load(path) == {"id": "a", "rungs": ["x", "y"]}
    assert len(parses) == 1
    # an edit of the same length within the same clock tick is still an edit: the time is set apart
    path.write_text("id: b\nrungs: [x, y]\n", encoding="utf-8")
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))
    assert yamlfile.load(path)["id"] == "b" and len(parses) == 2


def test_each_caller_gets_its_own_copy(tmp_path):
    path = tmp_path / "suite.yaml"
    path.write_text("ladders:\n  dapo: [grpo, dapo]\n", encoding="utf-8")
    first = yamlfile.load(path)
    first["ladders"]["dapo"].append("changed")
    assert yamlfile.load(path) == {"ladders": {"dapo": ["grpo", "dapo"]}}


def test_a_file_that_does_not_read_raises_every_time(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("id: [unclosed\n", encoding="utf-8")
    for _ in range(2):
        with pytest.raises(yaml.YAMLError):
            yamlfile.load(bad)
    latin = tmp_path / "latin.yaml"
    latin.write_bytes(b"name: caf\xe9\n")
    with pytest.raises(UnicodeDecodeError):
        yamlfile.load(latin)
    with pytest.raises(FileNotFoundError):
        yamlfile.load(tmp_path / "missing.yaml")
