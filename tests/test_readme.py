"""README.md as a newcomer reads it (issue 41): short, the Quickstart's two commands, and a "Where a change
goes" table true to the files.

- at most 200 lines, its Quickstart one block of exactly the two commands;
- every row of the change table: each path it names exists (a path with ``<name>``: one of that form),
  each name said to be in a file (```VIEW_SCRIPTS`` in `unipo_build/site/macros.py```, a test's
  ```OPENRLHF```) is in it, and the kinds modules it names are the registry's;
- every relative link and image of the README exists, and every import its Python snippets make works.
"""

from __future__ import annotations

import glob
import importlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
MAX_LINES = 200

CODE = re.compile(r"`([^`]+)`")
#: A backticked token that names a file or folder of the repository.
PATH = re.compile(r"^[\w.<>-]+(/[\w.<>-]*)*$")
SUFFIXES = (".py", ".js", ".css", ".md", ".yaml", ".yml", ".json", ".txt", ".sh", ".html", ".png", ".toml")
#: A backticked token naming something inside a file: a constant (VIEW_SCRIPTS) or a config key (extra.unipo_sets).
NAME = re.compile(r"^(?:[A-Z][A-Z0-9_]+|[a-z_]+\.[a-z_.]+)$")


def readme() -> str:
    return README.read_text(encoding="utf-8")


def section(text: str, title: str) -> str:
    """The text under the ``## title`` heading, up to the next heading of that level."""
    match = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## |\Z)", text, flags=re.S | re.M)
    assert match, f"README has no section '## {title}'"
    return match.group(1)


def is_name(token: str) -> bool:
    return bool(NAME.match(token)) and not token.endswith(SUFFIXES)


def is_path(token: str) -> bool:
    if " " in token or not PATH.match(token) or is_name(token):
        return False
    return "/" in token or token.endswith(SUFFIXES)


def exists(token: str) -> bool:
    """The path exists; one with ``<name>`` parts matches at least one path of its form."""
    if "<" not in token:
        return (ROOT / token).exists()
    pattern = re.sub(r"<[^>]+>", "*", token)
    return bool(glob.glob(str(ROOT / pattern)))


def change_table() -> list[list[str]]:
    """The rows of "Where a change goes" (header and rule left out), each a list of its cells."""
    lines = [ln for ln in section(readme(), "Where a change goes").splitlines() if ln.startswith("|")]
    assert len(lines) >= 3, "the change table has no rows"
    return [[cell.strip() for cell in ln.strip().strip("|").split("|")] for ln in lines[2:]]


def table_paths() -> list[tuple[str, str]]:
    """(row, path) for every path the change table names."""
    return [(row[0], token) for row in change_table() for cell in row[1:] for token in CODE.findall(cell)
            if is_path(token)]


def test_the_readme_is_short():
    lines = readme().splitlines()
    assert len(lines) <= MAX_LINES, f"README.md has {len(lines)} lines (at most {MAX_LINES})"


def test_the_quickstart_is_the_two_commands():
    blocks = re.findall(r"```bash\n(.*?)```", section(readme(), "Quickstart"), flags=re.S)
    assert len(blocks) == 1, blocks
    assert blocks[0].split("\n")[:-1] == ["bash .ci/setup-site.sh", "bash .ci/test.sh"]
    for script in (".ci/setup-site.sh", ".ci/test.sh"):
        assert (ROOT / script).is_file(), script


def test_the_change_table_covers_each_kind_of_change():
    rows = [row[0] for row in change_table()]
    for change in ("component kind", "view", "trainer", "run set", "algorithm"):
        assert any(change in row for row in rows), f"no row for a new {change}: {rows}"
    assert all(len(row) == 3 for row in change_table()), "each row: the change, its files, its tests"


def test_every_path_of_the_change_table_exists():
    paths = table_paths()
    assert len(paths) > 30, paths
    missing = [f"{row[:40]}: {path}" for row, path in paths if not exists(path)]
    assert not missing, "the change table names paths the repository does not have:\n" + "\n".join(missing)


def test_every_row_names_its_tests_and_they_exist():
    for row in change_table():
        tests = [t for t in CODE.findall(row[2]) if is_path(t)]
        assert tests and all(t.startswith("tests/") for t in tests), (row[0], tests)
        assert any(exists(t) for t in tests if t.endswith(".py")), row[0]


def test_the_names_said_to_be_in_a_file_are_there():
    """Within one line of a cell (cells break at <br>), each NAME beside paths is in every file that line names:
    ```VIEW_SCRIPTS`, `VIEW_STYLES` in `unipo_build/site/macros.py```, ```tests/test_openrlhf_command.py`
    (`OPENRLHF` ...)``, ```extra.unipo_sets` in `mkdocs.yml``` (its last part)."""
    checked, absent = 0, []
    for row in change_table():
        for cell in row[1:]:
            for part in cell.split("<br>"):
                tokens = CODE.findall(part)
                names = [t for t in tokens if is_name(t)]
                files = [t for t in tokens if is_path(t) and "<" not in t and (ROOT / t).is_file()]
                for name in names:
                    assert files, f"{row[0][:40]}: `{name}` with no file beside it: {part}"
                    for path in files:
                        checked += 1
                        if name.split(".")[-1] not in (ROOT / path).read_text(encoding="utf-8"):
                            absent.append(f"`{name}` is not in {path}")
    assert checked >= 8, checked
    assert not absent, "\n".join(absent)


def test_the_kind_modules_named_are_the_registrys():
    """A new kinds module (core/kinds_*.py) gets its place in the table's component-kind row."""
    row = next(row for row in change_table() if "component kind" in row[0])
    named = {t for t in CODE.findall(row[1]) if re.fullmatch(r"unipo_build/core/kinds_\w+\.py", t)}
    shipped = {str(p.relative_to(ROOT)) for p in (ROOT / "unipo_build" / "core").glob("kinds_*.py")}
    assert named == shipped


def test_every_link_and_image_of_the_readme_exists():
    targets = re.findall(r"\]\(([^)\s]+)\)", readme())
    local = [t.split("#")[0] for t in targets if "://" not in t and not t.startswith(("#", "mailto:"))]
    assert local, targets
    missing = [t for t in local if not (ROOT / t).exists()]
    assert not missing, f"README links to what the repository does not have: {missing}"
    for image in re.findall(r"!\[[^\]]*\]\(([^)\s]+)\)", readme()):
        assert (ROOT / image).stat().st_size < 300_000, f"{image}: keep the README's picture small"


def test_no_path_outside_the_repository_s_own_folders_is_a_build_output():
    """Backticked paths in the prose under the project's folders exist: none is a file only a build writes
    (as `assets/unipo-math.js`, which is `unipo_build/site/views/explainer/unipo-math.js` in the repository)."""
    prose = re.sub(r"```.*?```", "", readme(), flags=re.S)
    folders = ("data/", "docs/", "unipo_build/", "tests/", "training/", "benchmarks/", "overrides/", ".ci/",
               ".github/", "assets/")
    named = {t for t in CODE.findall(prose) if is_path(t) and t.startswith(folders)}
    missing = sorted(t for t in named if not exists(t))
    assert not missing, f"README names paths the repository does not have: {missing}"


@pytest.mark.parametrize("line", [ln.strip() for block in re.findall(r"```python\n(.*?)```", readme(), flags=re.S)
                                  for ln in block.splitlines() if ln.startswith(("from unipo_build", "import unipo_build"))])
def test_the_python_snippets_import(line):
    """The TRL tap's import line, as a user pastes it into a training script (trl itself is not needed to import it)."""
    module, _, names = line.removeprefix("from ").partition(" import ")
    loaded = importlib.import_module(module)
    for name in names.split(","):
        assert hasattr(loaded, name.strip()), f"{module} has no {name.strip()}"
