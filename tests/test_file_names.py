"""Each file name the project writes and reads is written once (issue 46 item 5): a run's own files in
unipo_build/core/runlog.py, a task directory's and a warm start's in unipo_build/core/file_names.py, a
checkpoint's record in training/runstate.py. Everywhere else the code names them by those constants; prose
(docstrings, help text made with the constants) is not code and is not read here."""

from __future__ import annotations

import ast
from pathlib import Path

from unipo_build.core import file_names, runlog

REPO = Path(__file__).resolve().parents[1]
#: name -> the one module that writes it.
DEFINED = {
    runlog.HEADER: "unipo_build/core/runlog.py",
    runlog.STEPS: "unipo_build/core/runlog.py",
    runlog.EVALS: "unipo_build/core/runlog.py",
    **{name: "unipo_build/core/file_names.py" for name in (*file_names.POOL_FILES.values(), file_names.SFT_META)},
    file_names.TASK_META: "unipo_build/core/file_names.py",
}


def names_a_file(text: str) -> str | None:
    """The file name a string of code names: the name itself, or a path ending in it."""
    return next((name for name in DEFINED if text == name or text.endswith("/" + name)), None)


def written_again(path: Path, root: Path = REPO) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                  and node.body and isinstance(node.body[0], ast.Expr)
                  and isinstance(node.body[0].value, ast.Constant)}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            name = names_a_file(node.value)
            # runstate.CHECKPOINT_META is a checkpoint's meta.json, another file than a task's
            if name and DEFINED[name] != path.relative_to(root).as_posix() \
                    and not (name == file_names.TASK_META and path.name == "runstate.py"):
                found.append(f"{path.relative_to(root)}:{node.lineno} {node.value!r}")
    return found


def test_each_file_name_is_written_once():
    sources = sorted(p for folder in ("unipo_build", "training") for p in (REPO / folder).rglob("*.py"))
    found = [line for path in sources for line in written_again(path)]
    assert not found, "name these files by their constants (runlog, core/file_names.py):\n" + "\n".join(found)


def test_the_check_sees_a_name_in_code_and_not_in_prose(tmp_path):
    probe = tmp_path / "training" / "probe.py"
    probe.parent.mkdir()
    probe.write_text('"""Reads train.jsonl."""\n\nHELP = "the SFT pool (train.jsonl)"\n'
                     'PATH = "data/tasks/train.jsonl"\nHEADER = "header.json"\n', encoding="utf-8")
    assert written_again(probe, tmp_path) == ["training/probe.py:4 'data/tasks/train.jsonl'",
                                              "training/probe.py:5 'header.json'"]
