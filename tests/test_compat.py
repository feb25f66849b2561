"""What 0.2.0 keeps for a user of 0.1.0, and what a machine without the optional extras is told (issue 41,
items 3 and 5).

- 0.1.0's import paths (``unipo_build.trl_tap``, ``unipo_build.importers`` and its modules,
  ``unipo_build.macros``, the entry point ``unipo_build.cli:main``) still work, each warning with a
  DeprecationWarning that names the new path, pointed at the user's own line; each old module *is* the new
  one (an alias in ``sys.modules``), so what a user gets from it is the new object.
- The version is written once (pyproject.toml) and read with importlib.metadata: by ``unipo_build``, by the
  header of a new run, and CHANGELOG.md's newest entry is that version.
- ``unipo train`` (and ``sft``) where torch is not installed stop with one line saying how to install the
  train extra, no traceback, exit 2; ``unipo import trl`` needs no TRL (nor torch) at all.

Every old path is imported in a fresh interpreter: a module warns only the first time it is imported.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tomllib
from importlib import metadata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "unipo_build"
LAYERS = ("core", "trainers", "site", "cli")

#: 0.1.0 module -> the 0.2.0 module it is an alias of (CHANGELOG.md, Moved).
ALIASES = {
    "unipo_build.trl_tap": "unipo_build.trainers.trl.tap",
    "unipo_build.macros": "unipo_build.site.macros",
    "unipo_build.importers.common": "unipo_build.trainers.common",
    "unipo_build.importers.openrlhf_tb": "unipo_build.trainers.openrlhf.importer",
    "unipo_build.importers.prime_rl": "unipo_build.trainers.prime_rl.importer",
    "unipo_build.importers.tfevents": "unipo_build.trainers.tfevents",
    "unipo_build.importers.trainer_config": "unipo_build.trainers.trainer_config",
    "unipo_build.importers.trl": "unipo_build.trainers.trl.importer",
    "unipo_build.importers.trl_tap_files": "unipo_build.trainers.trl.tap_files",
    "unipo_build.importers.unipo_format": "unipo_build.trainers.unipo.importer",
    "unipo_build.importers.verl": "unipo_build.trainers.verl.importer",
}
#: 0.1.0's package of importers is a package of its own (its modules above are aliases); the names it held are
#: unipo_build.trainers' own objects.
IMPORTERS = ("unipo_build.importers", "unipo_build.trainers")
IMPORTERS_NAMES = ("FORMATS", "OUT_NAMED", "import_log", "same_id_beside", "import_trl", "import_openrlhf",
                   "import_unipo", "import_verl", "import_prime_rl", "OutputError")
ENTRY_POINT = ("unipo_build.cli:main", "unipo_build.cli.main:main")

USER_FILE = "<a user's script>"


def env(**extra: str) -> dict[str, str]:
    out = {k: v for k, v in os.environ.items() if k != "PYTHONWARNINGS"}
    return {**out, "PYTHONPATH": str(ROOT), **extra}


def python(*args: str, timeout: int = 180) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], cwd=ROOT, capture_output=True, text=True, env=env(),
                          timeout=timeout)


def moved(stderr_or_message: str, old: str) -> list[str]:
    """The 'OLD moved to ...' warnings in a text."""
    return re.findall(rf"{re.escape(old)} moved to \S+", stderr_or_message)


# --------------------------------------------------------------------------------------------------------------
# 0.1.0's paths
# --------------------------------------------------------------------------------------------------------------

def test_every_module_outside_the_layer_folders_is_an_alias_tested_here():
    """A deprecated alias sits where 0.1.0's module sat, outside the layer folders (tests/test_layers.py lets
    exactly these be); any other module there would be a module of no layer."""
    outside = set()
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(ROOT).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        if name != "unipo_build" and parts[1] not in LAYERS:
            outside.add(name)
    assert outside == set(ALIASES) | {IMPORTERS[0]}


RECORD = """
import importlib, json, sys, warnings
aliases, (package, new_package), names, user_file = json.loads(sys.argv[1])
report = {}
for old, new in [(package, new_package), *aliases.items()]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        exec(compile(f"import {old}", user_file, "exec"), {})
    report[old] = {"warnings": [[w.category.__name__, str(w.message), w.filename] for w in caught
                                if str(w.message).startswith(old + " moved to ")],
                   "is_new": sys.modules[old] is importlib.import_module(new)}
old_package, new = importlib.import_module(package), importlib.import_module(new_package)
report["names"] = {name: getattr(old_package, name) is getattr(new, name) for name in names}
from unipo_build.trl_tap import TrlTokenTap
from unipo_build.trainers.trl.tap import TrlTokenTap as NewTap
from unipo_build.macros import define_env
from unipo_build.site.macros import define_env as new_define_env
report["objects"] = {"TrlTokenTap": TrlTokenTap is NewTap, "define_env": define_env is new_define_env}
print(json.dumps(report))
"""


@pytest.fixture(scope="module")
def imported_old_paths() -> dict:
    """Each of 0.1.0's paths imported once in one fresh interpreter, as a user's script would: the warnings
    each gave, and whether it is the new module."""
    proc = python("-c", RECORD, json.dumps([ALIASES, IMPORTERS, IMPORTERS_NAMES, USER_FILE]))
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


@pytest.mark.parametrize("old", [IMPORTERS[0], *ALIASES])
def test_an_old_path_warns_once_naming_the_new_one_at_the_users_line(imported_old_paths, old):
    new = dict([IMPORTERS, *ALIASES.items()])[old]
    caught = imported_old_paths[old]["warnings"]
    assert len(caught) == 1, caught
    category, message, filename = caught[0]
    assert category == "DeprecationWarning"
    assert message.startswith(f"{old} moved to {new} in unipo 0.2.0 and goes in the next release: ")
    assert filename == USER_FILE  # stacklevel=2: the line that imported it, not the alias itself


@pytest.mark.parametrize("old", list(ALIASES))
def test_an_old_module_is_the_new_module(imported_old_paths, old):
    assert imported_old_paths[old]["is_new"]


def test_the_old_importers_package_holds_the_new_objects(imported_old_paths):
    assert imported_old_paths["names"] == dict.fromkeys(IMPORTERS_NAMES, True)


def test_the_tap_and_the_macros_module_are_the_new_objects(imported_old_paths):
    """``unipo_build.trl_tap.TrlTokenTap is unipo_build.trainers.trl.tap.TrlTokenTap``, and the macros
    plugin's ``define_env`` is the site's."""
    assert imported_old_paths["objects"] == {"TrlTokenTap": True, "define_env": True}


@pytest.mark.parametrize("old", ["unipo_build.trl_tap", "unipo_build.macros", "unipo_build.importers"])
def test_an_old_import_fails_where_deprecations_are_errors(old):
    """``python -W error::DeprecationWarning``: the import fails on the warning, which names the new path (what
    a test suite run with warnings as errors shows its author)."""
    proc = python("-W", "error::DeprecationWarning", "-c", f"import {old}")
    assert proc.returncode == 1
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("DeprecationWarning: ") and moved(last, old), proc.stderr


def test_the_tap_line_a_trl_script_pasted_works_and_warns_by_default():
    """Issue 41's check, with Python's default warning filters: a script's own DeprecationWarnings are shown."""
    proc = python("-c", "from unipo_build.trl_tap import TrlTokenTap; print(TrlTokenTap.__module__)")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "unipo_build.trainers.trl.tap"
    assert moved(proc.stderr, "unipo_build.trl_tap") == ["unipo_build.trl_tap moved to unipo_build.trainers.trl.tap"]


#: What pip wrote as the `unipo` script for 0.1.0's entry point, unipo_build.cli:main.
OLD_SCRIPT = """import re
import sys
from unipo_build.cli import main
if __name__ == '__main__':
    sys.argv[0] = re.sub(r'(-script\\.pyw|\\.exe)?$', '', sys.argv[0])
    sys.exit(main())
"""


def test_the_unipo_script_of_0_1_0_still_runs_and_warns(tmp_path):
    script = tmp_path / "unipo"
    script.write_text(OLD_SCRIPT)
    proc = python(str(script), "validate", "-q", "data/algorithms/grpo.yaml")
    assert proc.returncode == 0, proc.stderr
    old, new = ENTRY_POINT
    assert moved(proc.stderr, old) == [f"{old} moved to {new}"]
    assert f"{script}:6: DeprecationWarning" in proc.stderr  # the script's own line
    strict = python("-W", "error::DeprecationWarning", str(script), "validate", "-q", "data/algorithms/grpo.yaml")
    assert strict.returncode == 1 and moved(strict.stderr.strip().splitlines()[-1], old), strict.stderr


def test_the_new_paths_do_not_warn():
    """The new paths, the `unipo` script of 0.2.0 and ``from unipo_build.cli import main as module``, which the
    tests and ``python -m unipo_build.cli`` use, give no deprecation."""
    code = ("import sys; import unipo_build.trainers.trl.tap, unipo_build.site.macros, unipo_build.trainers; "
            "from unipo_build.cli import main as cli; from unipo_build.cli.main import main; "
            "sys.exit(main(['validate', '-q', 'data/algorithms/grpo.yaml']) + cli.main(['validate', '-q', "
            "'data/algorithms/grpo.yaml']))")
    for args in (["-c", code], ["-m", "unipo_build.cli", "validate", "-q", "data/algorithms/grpo.yaml"]):
        proc = python("-W", "always::DeprecationWarning", *args)
        assert proc.returncode == 0, proc.stderr
        assert " moved to " not in proc.stderr, proc.stderr


# --------------------------------------------------------------------------------------------------------------
# The version, written once
# --------------------------------------------------------------------------------------------------------------

def pyproject_version() -> str:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["version"]


def test_the_installed_version_is_pyprojects():
    import unipo_build

    version = pyproject_version()
    assert metadata.version("unipo") == version, (
        f"the installed package says {metadata.version('unipo')}, pyproject.toml {version}: install it again "
        "(pip install -e .)")
    assert unipo_build.__version__ == version


def test_a_new_run_header_records_the_installed_version():
    pytest.importorskip("torch", reason="the train extra is not installed")
    pytest.importorskip("transformers", reason="the train extra is not installed")
    from training import run_info

    assert run_info.software()["unipo"] == metadata.version("unipo") == pyproject_version()


def test_no_source_file_types_the_version():
    """pyproject.toml is the one place: a version typed in code goes stale at the next bump (0.1.0 stayed in
    training/run_info.py for every header)."""
    version = pyproject_version()
    typed = [f"{path.relative_to(ROOT)}" for folder in ("unipo_build", "training", "benchmarks")
             for path in sorted((ROOT / folder).rglob("*.py"))
             if re.search(rf"""["']{re.escape(version)}["']""", path.read_text(encoding="utf-8"))]
    assert not typed, f"the version {version} typed in {typed}: read it with importlib.metadata"
    package = json.loads((ROOT / "package.json").read_text(encoding="utf-8"))
    assert "version" not in package, "package.json (the browser libraries) carries no version of its own"


def changelog_versions() -> list[str]:
    text = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    return re.findall(r"^## \[(\d+\.\d+\.\d+)\] - \d{4}-\d{2}-\d{2}$", text, flags=re.M)


def test_the_changelogs_newest_entry_is_the_packages_version():
    versions = changelog_versions()
    assert versions and versions[0] == pyproject_version(), versions
    assert versions == sorted(versions, key=lambda v: tuple(map(int, v.split("."))), reverse=True)


def test_the_changelog_lists_every_alias_with_its_new_path():
    text = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    for old, new in [IMPORTERS, *ALIASES.items(), ENTRY_POINT]:
        assert f"`{old}` -> `{new}`" in text, f"CHANGELOG.md does not say {old} -> {new}"


# --------------------------------------------------------------------------------------------------------------
# Without the extras
# --------------------------------------------------------------------------------------------------------------

#: A fresh interpreter in which the packages named in argv[1] are not installed (a finder ahead of the others
#: answers for them as an empty environment would), running `unipo` with the rest of argv.
WITHOUT = """
import sys

class Absent:
    def __init__(self, names):
        self.names = set(names.split(","))

    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in self.names:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, Absent(sys.argv[1]))
from unipo_build.cli.main import main
sys.exit(main(sys.argv[2:]))
"""

NO_TORCH = ("unipo {} needs the train extra (torch is not installed): pip install torch==2.13.0 && pip install -e "
            "'.[train]' (torch first and pinned, as the extra keeps any torch it finds; for the CPU build add "
            "--index-url https://download.pytorch.org/whl/cpu to the first command)")


def without(modules: str, *argv: str) -> subprocess.CompletedProcess:
    return python("-c", WITHOUT, modules, *argv)


def test_the_stand_in_really_hides_a_package():
    proc = python("-c", WITHOUT.replace("from unipo_build.cli.main import main\nsys.exit(main(sys.argv[2:]))",
                                        "import torch"), "torch")
    assert proc.returncode == 1 and "ModuleNotFoundError: No module named 'torch'" in proc.stderr


@pytest.mark.parametrize("command", [["train", "grpo", "--steps", "1"], ["sft", "--steps", "1"],
                                     ["suite", "--jobs", "1"]])
def test_a_training_command_without_torch_says_how_to_install_the_extra(tmp_path, command):
    out = tmp_path / "run"
    proc = without("torch", *command, "--out", str(out))
    assert proc.returncode == 2
    assert proc.stderr.splitlines() == [NO_TORCH.format(command[0])], proc.stderr
    assert "Traceback" not in proc.stderr and proc.stdout == ""
    assert not out.exists()


def test_importing_a_trl_run_needs_no_trl(tmp_path):
    """`unipo import trl` reads TRL's trainer_state.json and the tap's JSON files: with neither TRL nor torch,
    transformers or datasets installed it imports the recorded run (tests/fixtures/trl) as it does with them."""
    fixture, out = ROOT / "tests" / "fixtures" / "trl", tmp_path / "run"
    proc = without("trl,torch,transformers,datasets", "import", "trl", str(fixture / "run1"), "--tap",
                   str(fixture / "run1-tap"), "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    assert proc.stdout.startswith(f"{out}: run 'run', algorithm 'grpo'")
    header = json.loads((out / "header.json").read_text(encoding="utf-8"))
    assert (header["engine"], header["software"]["trl"]) == ("trl", "1.16.0")
