"""The layers of DESIGN.md, checked on the source as folders: what may import what, and how long a
module may be.

unipo_build/ is four layers, each a folder, each importing only itself and the layers below:
- ``core/`` (schema, specs and the registry, component math, objective, run-log reader and writer,
  recomputation, the run catalogue) imports only the core;
- ``trainers/`` (one folder per outside trainer: its tap, importer, config mapping, command builder;
  UNIPO's published format is one of them) imports the core and itself;
- ``site/`` (hooks and macros, the views, the chapters' facts, the playgrounds) imports the core, the
  trainers and itself;
- ``cli/`` is on top: the only layer that may import training, and the only one that parses arguments.
``training/`` imports only the core. No module of unipo_build/ or training/ is over about 600 lines,
and no script or style sheet of the site is over about 1,000.

The one exception to "every module in a layer folder": 0.1.0's module paths, kept for one release as
deprecated aliases of the modules that moved (:data:`DEPRECATED_ALIASES`; CHANGELOG.md, Moved). They sit
where 0.1.0's modules sat, hold nothing of their own, and nothing in the project imports them.

Imports inside functions count: the check walks every import statement of a module's syntax tree.
"""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "unipo_build"

#: The layers from the bottom up: each may import itself and those before it.
LAYERS = ("core", "trainers", "site", "cli")
#: Modules that parse arguments: the CLI, and the entry point OpenRLHF's Ray workers run by path.
ARGPARSE_ALLOWED = {"unipo_build.trainers.openrlhf.launch"}
MAX_LINES = 610
#: A script or style sheet of the site (the theme's and the views'): the same guideline, in its lines.
MAX_ASSET_LINES = 1000
#: 0.1.0's paths, each an alias of the module that moved (0.2.0 only: tests/test_compat.py checks that each
#: warns and is the new module). Outside the layers on purpose; remove them, and this list, after 0.2.0.
DEPRECATED_ALIASES = {"unipo_build.trl_tap", "unipo_build.macros", "unipo_build.importers"} | {
    f"unipo_build.importers.{name}" for name in ("common", "openrlhf_tb", "prime_rl", "tfevents", "trainer_config",
                                                  "trl", "trl_tap_files", "unipo_format", "verl")}
#: An alias is its docstring, a warning and the import of the new module: a few lines, never code.
MAX_ALIAS_LINES = 40


def module_name(path: Path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path) -> set[str]:
    """Every module a file imports (absolute names; relative imports resolved)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    here = module_name(path).split(".")
    package = here if path.name == "__init__.py" else here[:-1]
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package[: len(package) - node.level + 1]
                base = ".".join(parent + ([base] if base else []))
            out.add(base)
            out.update(f"{base}.{alias.name}" for alias in node.names)
    return out


def project_imports(path: Path, prefix: str) -> set[str]:
    return {m for m in imports_of(path) if m == prefix or m.startswith(prefix + ".")}


def own_modules(path: Path, names: set[str]) -> set[str]:
    """The imported names that are modules of the package (``from x import name`` of a function
    is reported as ``x``)."""
    out = set()
    for name in names:
        while name and not ((REPO / (name.replace(".", "/") + ".py")).is_file()
                            or (REPO / name.replace(".", "/") / "__init__.py").is_file()):
            name = name.rpartition(".")[0]
        if name:
            out.add(name)
    return out


def package_files() -> list[Path]:
    """The package's modules, less the deprecated aliases of 0.1.0's paths (checked on their own below)."""
    return sorted(p for p in PACKAGE.rglob("*.py") if module_name(p) not in DEPRECATED_ALIASES)


def layer_of(module: str) -> str | None:
    """The layer a module of unipo_build belongs to (None for the package itself)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else None


def test_every_module_is_in_a_layer_folder():
    loose = [module_name(p) for p in package_files()
             if module_name(p) != "unipo_build" and layer_of(module_name(p)) not in LAYERS]
    assert not loose, f"modules outside the layer folders {LAYERS}: {loose}"


def test_the_deprecated_aliases_are_only_aliases_and_nothing_imports_them():
    files = {module_name(p): p for p in PACKAGE.rglob("*.py") if module_name(p) in DEPRECATED_ALIASES}
    assert set(files) == DEPRECATED_ALIASES, f"aliases listed but missing: {DEPRECATED_ALIASES - set(files)}"
    for name, path in files.items():
        text = path.read_text(encoding="utf-8")
        assert len(text.splitlines()) <= MAX_ALIAS_LINES, f"{name} is more than an alias"
        assert "DeprecationWarning" in text and "stacklevel=2" in text, f"{name} does not warn its importer"
    users = sorted(f"{path.relative_to(REPO)} imports {sorted(hit)}"
                   for folder in ("unipo_build", "training", "tests", "benchmarks")
                   for path in sorted((REPO / folder).rglob("*.py"))
                   if module_name(path) not in DEPRECATED_ALIASES and path.name != "test_compat.py"
                   and (hit := own_modules(path, imports_of(path)) & DEPRECATED_ALIASES))
    assert not users, "use the new paths, not the deprecated aliases:\n" + "\n".join(users)


def test_the_import_check_sees_imports_inside_functions():
    probe = PACKAGE / "site" / "context.py"
    assert "unipo_build.core.runs" in own_modules(probe, project_imports(probe, "unipo_build"))
    assert "training.rl" in imports_of(PACKAGE / "cli" / "commands.py")  # imported inside _train


def test_each_layer_imports_only_itself_and_the_layers_below():
    for path in package_files():
        name = module_name(path)
        layer = layer_of(name)
        if layer is None:
            continue
        allowed = set(LAYERS[: LAYERS.index(layer) + 1])
        upward = sorted(m for m in own_modules(path, project_imports(path, "unipo_build"))
                        if layer_of(m) is not None and layer_of(m) not in allowed)
        assert not upward, f"{name} ({layer}) imports {upward} from a layer above it"


def test_the_layers_have_no_cycle_between_trainers():
    """One trainer's folder never imports another's: what they share is trainers/common.py."""
    for path in sorted((PACKAGE / "trainers").rglob("*.py")):
        name = module_name(path).split(".")
        if len(name) < 4:
            continue
        own = name[2]
        other = sorted(m for m in own_modules(path, project_imports(path, "unipo_build.trainers"))
                       if len(m.split(".")) > 3 and m.split(".")[2] != own)
        assert not other, f"{'.'.join(name)} imports another trainer's modules {other}"


def test_training_imports_only_the_core():
    for path in sorted((REPO / "training").glob("*.py")):
        outside = sorted(m for m in own_modules(path, project_imports(path, "unipo_build"))
                         if layer_of(m) != "core")
        assert not outside, f"{path.relative_to(REPO)} imports {outside} (training may import only the core)"


def test_nothing_but_the_cli_imports_training():
    for path in package_files():
        name = module_name(path)
        if layer_of(name) == "cli":
            continue
        assert not project_imports(path, "training"), f"{name} imports training (only the CLI may)"


def test_argument_parsing_lives_in_the_cli():
    for path in package_files():
        name = module_name(path)
        if layer_of(name) == "cli" or name in ARGPARSE_ALLOWED:
            continue
        assert "argparse" not in imports_of(path), f"{name} parses arguments (the CLI modules do that)"


def test_no_module_is_over_about_600_lines():
    long = []
    for path in package_files() + sorted((REPO / "training").glob("*.py")):
        n = len(path.read_text(encoding="utf-8").splitlines())
        if n > MAX_LINES:
            long.append(f"{path.relative_to(REPO)}: {n} lines")
    assert not long, "split these modules:\n" + "\n".join(long)


def test_no_script_or_style_sheet_is_over_about_1000_lines():
    assets = sorted(p for d in (PACKAGE / "site", REPO / "overrides") for p in d.rglob("*")
                    if p.suffix in (".js", ".css"))
    assert assets
    long = [f"{p.relative_to(REPO)}: {n} lines" for p in assets
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_ASSET_LINES]
    assert not long, "split these scripts and style sheets:\n" + "\n".join(long)


def test_no_source_file_of_the_package_is_ignored_by_git():
    """A fresh clone and a non-editable install see what git tracks: a source file that .gitignore
    matches (as ``site/`` once matched all of unipo_build/site/) would be missing from both, while
    an editable checkout still imports it."""
    import subprocess
    sources = [str(p.relative_to(REPO)) for p in sorted(PACKAGE.rglob("*"))
               if p.suffix in (".py", ".js", ".css", ".md", ".yaml") and "__pycache__" not in p.parts]
    assert len(sources) > 100
    ignored = subprocess.run(["git", "check-ignore", "--no-index", "--stdin"], cwd=REPO, input="\n".join(sources),
                             capture_output=True, text=True).stdout.split()
    assert not ignored, f".gitignore matches source files of the package: {ignored}"


def test_every_package_folder_is_a_regular_package():
    """setuptools' package finder skips a folder without __init__.py (an implicit namespace package
    imports in a checkout but is left out of the wheel)."""
    missing = [str(d.relative_to(REPO)) for d in sorted(PACKAGE.rglob("*")) if d.is_dir()
               and d.name != "__pycache__" and any(d.glob("*.py")) and not (d / "__init__.py").is_file()]
    assert not missing, f"folders of modules without __init__.py: {missing}"
