"""The layers of DESIGN.md, checked on the source: what may import what, and how long a module may be.

- the core (schema, specs and the registry, component math, objective, run-log reader and writer
  and the text of its tokens,
  recomputation, project paths, presets) imports only the core;
- training imports only the core of unipo_build;
- nothing in unipo_build imports training except the CLI (the top layer);
- the site (views, playgrounds, macros, hooks) never imports training;
- no module of unipo_build/ or training/ is over about 600 lines;
- argument parsing (argparse) is done by the CLI modules only.

Imports inside functions count: the check walks every import statement of a module's syntax tree.
"""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "unipo_build"

CORE = {
    "unipo_build", "unipo_build.components", "unipo_build.downsample", "unipo_build.formula",
    "unipo_build.moments", "unipo_build.numbers", "unipo_build.objective", "unipo_build.presets",
    "unipo_build.project", "unipo_build.reader", "unipo_build.recompute", "unipo_build.registry",
    "unipo_build.kinds_loss", "unipo_build.kinds_reward",
    "unipo_build.render", "unipo_build.runlog", "unipo_build.schema", "unipo_build.specs", "unipo_build.summary",
    "unipo_build.matching",
    "unipo_build.heldout", "unipo_build.limits", "unipo_build.paths", "unipo_build.token_text",
    # what practitioners ask of a run, answered from its log alone (summary prints it; the views draw it)
    "unipo_build.diagnose",
}
CLI = {"unipo_build.cli", "unipo_build.cli_commands"}
#: Modules that parse arguments: the CLI, and the entry point OpenRLHF's Ray workers run by path.
ARGPARSE_ALLOWED = CLI | {"unipo_build.openrlhf.launch"}
MAX_LINES = 610


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
    return sorted(PACKAGE.rglob("*.py"))


def test_the_import_check_sees_imports_inside_functions(tmp_path):
    probe = PACKAGE / "views" / "site.py"
    assert "unipo_build.runs" in own_modules(probe, project_imports(probe, "unipo_build"))
    assert "training.rl" in imports_of(PACKAGE / "cli_commands.py")  # imported inside _train


def test_the_core_imports_only_the_core():
    for path in package_files():
        name = module_name(path)
        if name not in CORE:
            continue
        outside = own_modules(path, project_imports(path, "unipo_build")) - CORE
        assert not outside, f"{name} (core) imports {sorted(outside)}"
        assert not project_imports(path, "training"), f"{name} (core) imports training"


def test_training_imports_only_the_core():
    for path in sorted((REPO / "training").glob("*.py")):
        outside = own_modules(path, project_imports(path, "unipo_build")) - CORE
        assert not outside, f"{path.relative_to(REPO)} imports {sorted(outside)} (training may import only the core)"


def test_nothing_but_the_cli_imports_training():
    for path in package_files():
        name = module_name(path)
        if name in CLI:
            continue
        assert not project_imports(path, "training"), f"{name} imports training (only the CLI may)"


def test_argument_parsing_lives_in_the_cli():
    for path in package_files():
        name = module_name(path)
        if name in ARGPARSE_ALLOWED:
            continue
        assert "argparse" not in imports_of(path), f"{name} parses arguments (the CLI modules do that)"


def test_no_module_is_over_about_600_lines():
    long = []
    for path in package_files() + sorted((REPO / "training").glob("*.py")):
        n = len(path.read_text(encoding="utf-8").splitlines())
        if n > MAX_LINES:
            long.append(f"{path.relative_to(REPO)}: {n} lines")
    assert not long, "split these modules:\n" + "\n".join(long)
