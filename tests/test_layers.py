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

Three more rules, each with a test that plants a bad example and sees it refused:

- No cycle among the modules (:func:`cycles`): an import inside a function counts as much as one at the top
  (it only delays the same dependency), and so does ``importlib.import_module("...")`` with a literal name.
  A module's own parent package is not counted: Python runs a package's ``__init__`` before any of its
  modules whatever they import, so a package ``__init__`` that imports its modules is no cycle.
- A module named in a string is imported by name (``python -m unipo_build.cli.main``, ``import_module``, a
  hook's ``module.function``): it obeys the layer rules as an import does (:func:`named_modules`). Between
  site/'s folders only real imports count: a string naming a module there is prose, not an import
  (``macros.define_env`` finds the modules that register macros by walking the package, naming none).
- Inside site/, each folder has a rank (:data:`SITE_RANKS`, written out for contributors in
  docs/guides/contribute.md, "Where code goes in site/"): a module imports its own folder and the folders of
  lower ranks, never a folder of its own rank or a higher one.

Every folder is read: training/'s subfolders as much as unipo_build/'s.
"""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "unipo_build"

#: The layers from the bottom up: each may import itself and those before it.
LAYERS = ("core", "trainers", "site", "cli")
#: Modules that parse arguments: the CLI, and the entry point OpenRLHF's Ray workers run by path.
ARGPARSE_ALLOWED = {"unipo_build.trainers.openrlhf.launch"}
MAX_LINES = 610
#: A script or style sheet of the site (the theme's and the views'): the same guideline, in its lines.
MAX_ASSET_LINES = 1000
#: Scripts over the guideline for now, each with its ceiling and the seam it is to be split along (issue 46 item 5):
#: none (unipo.js's scroll cues and formula fitting moved to unipo-scroll.js, loaded after it).
ASSET_CEILINGS: dict[str, int] = {}
#: 0.1.0's paths, each an alias of the module that moved (0.2.0 only: tests/test_compat.py checks that each
#: warns and is the new module). Outside the layers on purpose; remove them, and this list, after 0.2.0.
DEPRECATED_ALIASES = {"unipo_build.trl_tap", "unipo_build.macros", "unipo_build.importers"} | {
    f"unipo_build.importers.{name}" for name in ("common", "openrlhf_tb", "prime_rl", "tfevents", "trainer_config",
                                                  "trl", "trl_tap_files", "unipo_format", "verl")}
#: An alias is its docstring, a warning and the import of the new module: a few lines, never code.
MAX_ALIAS_LINES = 40


def module_name(path: Path, root: Path = REPO) -> str:
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@functools.lru_cache(maxsize=None)
def _syntax(path: Path, mtime_ns: int) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"))


def syntax(path: Path) -> ast.Module:
    """A file's syntax tree, parsed once per version of the file."""
    return _syntax(path, path.stat().st_mtime_ns)


def _from_base(node: ast.ImportFrom, path: Path, root: Path) -> str:
    """The module a ``from ... import`` statement reads from (relative imports resolved)."""
    here = module_name(path, root).split(".")
    package = here if path.name == "__init__.py" else here[:-1]
    base = node.module or ""
    if node.level:
        parent = package[: len(package) - node.level + 1]
        base = ".".join(parent + ([base] if base else []))
    return base


def imports_of(path: Path, root: Path = REPO) -> set[str]:
    """Every module a file imports (absolute names; relative imports resolved)."""
    tree = syntax(path)
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = _from_base(node, path, root)
            out.add(base)
            out.update(f"{base}.{alias.name}" for alias in node.names)
    return out


def project_imports(path: Path, prefix: str, root: Path = REPO) -> set[str]:
    return {m for m in imports_of(path, root) if m == prefix or m.startswith(prefix + ".")}


@functools.lru_cache(maxsize=None)
def is_module(name: str, root: Path = REPO) -> bool:
    return bool(name) and ((root / (name.replace(".", "/") + ".py")).is_file()
                           or (root / name.replace(".", "/") / "__init__.py").is_file())


def own_modules(path: Path, names: set[str], root: Path = REPO) -> set[str]:
    """The imported names that are modules of the package (``from x import name`` of a function
    is reported as ``x``)."""
    out = set()
    for name in names:
        while name and not is_module(name, root):
            name = name.rpartition(".")[0]
        if name:
            out.add(name)
    return out


#: A string that is nothing but a dotted name in the project (a module, or a module's attribute).
MODULE_STRING = re.compile(r"(?:unipo_build|training)(?:\.\w+)+")
#: The calls that import the module their first argument names.
IMPORT_CALLS = {"import_module", "__import__"}


def imported_modules(path: Path, root: Path = REPO) -> set[str]:
    """The project's modules a file imports, each named exactly (the cycle and site/ checks).

    ``import a.b`` imports ``a.b``; ``from a import b`` imports ``a.b`` when ``b`` is a module, else ``a``;
    ``importlib.import_module("a.b")`` and ``__import__("a.b")`` with a literal name import ``a.b``. Statements
    inside functions count. The parent packages Python runs first are not counted unless named.
    """
    tree = syntax(path)
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = _from_base(node, path, root)
            names.update(f"{base}.{a.name}" if is_module(f"{base}.{a.name}", root) else base for a in node.names)
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant) \
                and isinstance(node.args[0].value, str) \
                and getattr(node.func, "attr", getattr(node.func, "id", None)) in IMPORT_CALLS:
            names.add(node.args[0].value)
    return own_modules(path, {n for n in names if n.split(".")[0] in ("unipo_build", "training")}, root)


def named_modules(path: Path, root: Path = REPO) -> set[str]:
    """The project's modules a file names in a string of its own (``[sys.executable, "-m", "unipo_build.cli.main"]``,
    a hook's ``"unipo_build.trainers.openrlhf.tap.setup"``, ``import_module("...")``): an import by name, which
    the layer rules hold to as they hold an import statement."""
    tree = syntax(path)
    strings = {node.value for node in ast.walk(tree) if isinstance(node, ast.Constant)
               and isinstance(node.value, str) and MODULE_STRING.fullmatch(node.value)}
    # a string that names no module below the top package ("training.log") names none
    return {m for m in own_modules(path, strings, root) if "." in m}


def package_files(root: Path = REPO) -> list[Path]:
    """The package's modules, less the deprecated aliases of 0.1.0's paths (checked on their own below)."""
    return sorted(p for p in (root / "unipo_build").rglob("*.py") if module_name(p, root) not in DEPRECATED_ALIASES)


def training_files(root: Path = REPO) -> list[Path]:
    """training/'s modules, in every subfolder."""
    return sorted((root / "training").rglob("*.py"))


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


def upward_imports(root: Path = REPO) -> list[str]:
    """Each module of a layer that imports (or names in a string) a module of a layer above it."""
    found = []
    for path in package_files(root):
        name = module_name(path, root)
        layer = layer_of(name)
        if layer is None:
            continue
        allowed = set(LAYERS[: LAYERS.index(layer) + 1])
        imported = imported_modules(path, root)
        for how, modules in (("imports", imported), ("names in a string", named_modules(path, root) - imported)):
            upward = sorted(m for m in modules if m.startswith("unipo_build.") and layer_of(m) not in allowed)
            if upward:
                found.append(f"{name} ({layer}) {how} {upward} from a layer above it")
    return found


def test_each_layer_imports_only_itself_and_the_layers_below():
    found = upward_imports()
    assert not found, "\n".join(found)


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


def training_outside_the_core(root: Path = REPO) -> list[str]:
    """Each module of training/ (any subfolder) that imports, or names in a string, a layer other than the core."""
    found = []
    for path in training_files(root):
        modules = imported_modules(path, root) | named_modules(path, root)
        outside = sorted(m for m in modules if m.startswith("unipo_build") and layer_of(m) != "core")
        if outside:
            found.append(f"{path.relative_to(root)} imports {outside} (training may import only the core)")
    return found


def test_training_imports_only_the_core():
    found = training_outside_the_core()
    assert not found, "\n".join(found)


def test_nothing_but_the_cli_imports_training():
    for path in package_files():
        name = module_name(path)
        if layer_of(name) == "cli":
            continue
        named = {m for m in named_modules(path) if m.split(".")[0] == "training"}
        assert not project_imports(path, "training") and not named, f"{name} imports training (only the CLI may)"


def test_argument_parsing_lives_in_the_cli():
    for path in package_files():
        name = module_name(path)
        if layer_of(name) == "cli" or name in ARGPARSE_ALLOWED:
            continue
        assert "argparse" not in imports_of(path), f"{name} parses arguments (the CLI modules do that)"


def test_no_module_is_over_about_600_lines():
    long = []
    for path in package_files() + training_files():
        n = len(path.read_text(encoding="utf-8").splitlines())
        if n > MAX_LINES:
            long.append(f"{path.relative_to(REPO)}: {n} lines")
    assert not long, "split these modules:\n" + "\n".join(long)


def test_no_script_or_style_sheet_is_over_about_1000_lines():
    assets = sorted(p for d in (PACKAGE / "site", REPO / "overrides") for p in d.rglob("*")
                    if p.suffix in (".js", ".css"))
    assert assets
    long = [f"{p.relative_to(REPO)}: {n} lines" for p in assets
            if (n := len(p.read_text(encoding="utf-8").splitlines()))
            > ASSET_CEILINGS.get(p.relative_to(REPO).as_posix(), MAX_ASSET_LINES)]
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


# --------------------------------------------------------------------------- cycles


def import_graph(root: Path = REPO) -> dict[str, set[str]]:
    """{module: the project modules it imports} over unipo_build/ (less the aliases) and training/."""
    graph = {module_name(p, root): imported_modules(p, root) for p in package_files(root) + training_files(root)}
    return {name: {m for m in imported if m in graph and m != name} for name, imported in graph.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import cycles of a graph: each set of modules that import one another (a strongly connected component
    of more than one module, or a module that imports itself), sorted (Tarjan's algorithm, without recursion)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, edges = work[-1]
            for nxt in edges:
                if nxt not in graph:
                    continue
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph[nxt]))))
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1 or node in graph[node]:
                        found.append(sorted(component))
    return sorted(found)


def cycle_report(graph: dict[str, set[str]]) -> list[str]:
    return [" <-> ".join(members) + "\n" + "\n".join(f"    {m} imports {sorted(graph[m] & set(members))}"
                                                    for m in members) for members in cycles(graph)]


def test_no_module_imports_itself_back():
    """No import cycle among the package's and training's modules, inside a layer or across: what two modules
    share goes into a module below both (see the module docstring for what counts as an import)."""
    found = cycle_report(import_graph())
    assert not found, "import cycles (move what both need into a module they can both import):\n" + "\n".join(found)


def test_the_cycle_check_finds_cycles_of_a_synthetic_graph():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set(), "e": {"e"}, "f": {"a"}}
    assert cycles(graph) == [["a", "b", "c"], ["e"]]
    assert cycles({"a": {"b"}, "b": {"c"}, "c": set()}) == []
    assert cycles({"x": {"y"}, "y": {"x"}, "p": {"q"}, "q": {"p", "x"}}) == [["p", "q"], ["x", "y"]]


def write_tree(root: Path, files: dict[str, str]) -> Path:
    """A project tree under ``root``: each file with its text, and every folder of modules a package."""
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    for folder in {p.parent for p in root.rglob("*.py")}:
        while folder != root:
            (folder / "__init__.py").touch()
            folder = folder.parent
    return root


def test_a_planted_cycle_is_refused_even_through_a_function_or_a_string(tmp_path):
    write_tree(tmp_path, {
        "unipo_build/core/reg.py": "def load():\n    from unipo_build.core import kinds  # registers\n",
        "unipo_build/core/kinds.py": "from unipo_build.core.reg import load\n",
        "unipo_build/site/a.py": "import importlib\n\ndef f():\n    return importlib.import_module('unipo_build.site.b')\n",
        "unipo_build/site/b.py": "from unipo_build.site import a\n",
        # a package that imports its own modules, which import a sibling: no cycle
        "unipo_build/trainers/__init__.py": "from unipo_build.trainers.x.imp import go\n",
        "unipo_build/trainers/common.py": "X = 1\n",
        "unipo_build/trainers/x/imp.py": "from unipo_build.trainers import common\n\ndef go():\n    return common.X\n",
    })
    assert cycles(import_graph(tmp_path)) == [["unipo_build.core.kinds", "unipo_build.core.reg"],
                                              ["unipo_build.site.a", "unipo_build.site.b"]]


# --------------------------------------------------------------------------- imports by name


def test_a_planted_string_import_upward_is_refused(tmp_path):
    write_tree(tmp_path, {
        "unipo_build/core/a.py": "import importlib\nM = importlib.import_module('unipo_build.site.b')\n",
        "unipo_build/site/b.py": "HOOK = 'unipo_build.site.b.setup'\n",  # its own layer: allowed
        "unipo_build/trainers/c.py": "X = 1\n",
        "unipo_build/cli/main.py": "X = 1\n",
        "training/sub/run.py": "import sys\nCMD = [sys.executable, '-m', 'unipo_build.cli.main', 'train']\n",
        "training/sub/deep/fit.py": "from unipo_build.trainers import c\n",
    })
    assert upward_imports(tmp_path) == [
        "unipo_build.core.a (core) imports ['unipo_build.site.b'] from a layer above it"]
    assert training_outside_the_core(tmp_path) == [
        "training/sub/deep/fit.py imports ['unipo_build.trainers.c'] (training may import only the core)",
        "training/sub/run.py imports ['unipo_build.cli.main'] (training may import only the core)"]


# --------------------------------------------------------------------------- site/'s folders

#: site/'s folders from the bottom up, like the layers (docs/guides/contribute.md, "Where code goes in site/",
#: says why): a module imports its own folder and the folders of lower ranks, never another folder of its own
#: rank nor one of a higher rank. "" is site/'s own modules (render, fmt, palette, context, ...), with the
#: packages views/ and pages/ themselves (whose __init__ holds nothing). A new folder gets a rank here and a
#: line in the guide.
SITE_RANKS: tuple[tuple[str, ...], ...] = (
    ("", "views", "pages"),
    ("facts",),
    ("views/explainer",),
    ("views/compare", "views/explorer", "views/inspector"),
    ("pages/learning",),
    ("pages/dynamics",),
    ("pages/objectives",),
    ("pages/guides", "pages/scale", "playgrounds"),
)
#: site/'s own modules that put the site together (MkDocs' hooks and macros module, the views' macros,
#: ``unipo explain``'s builder): above every folder, and imported by none.
SITE_TOP = ("hooks", "macros", "view_macros", "explain", "build")


def site_group(module: str, root: Path = REPO) -> str:
    """A site module's folder under site/ ("" for site/'s own modules; "top" for :data:`SITE_TOP`)."""
    parts = module.split(".")[2:]
    if len(parts) == 1 and parts[0] in SITE_TOP:
        return "top"
    is_package = (root / "unipo_build" / "site" / "/".join(parts) / "__init__.py").is_file()
    return "/".join(parts if is_package else parts[:-1])


def site_rank(group: str) -> int | None:
    if group == "top":
        return len(SITE_RANKS)
    return next((rank for rank, groups in enumerate(SITE_RANKS) if group in groups), None)


def site_violations(root: Path = REPO) -> list[str]:
    """Each import inside site/ that :data:`SITE_RANKS` does not allow, and each folder it gives no rank."""
    found = []
    graph = import_graph(root)
    for name in sorted(m for m in graph if m.startswith("unipo_build.site")):
        mine = site_group(name, root)
        if site_rank(mine) is None:
            found.append(f"site/{mine}/ has no rank in SITE_RANKS (give it one, and its line in the contribute guide)")
            continue
        for other in sorted(m for m in graph[name] if m.startswith("unipo_build.site")):
            theirs = site_group(other, root)
            if theirs == mine or site_rank(theirs) is None:
                continue
            if site_rank(theirs) >= site_rank(mine):
                where = "its own rank" if site_rank(theirs) == site_rank(mine) else "a higher rank"
                found.append(f"{name} (site/{mine}) imports {other} (site/{theirs}, {where})")
    return sorted(set(found))


def test_site_folders_import_only_lower_ranks():
    found = site_violations()
    assert not found, ("imports inside site/ that its ranks do not allow (docs/guides/contribute.md, "
                       "'Where code goes in site/'):\n" + "\n".join(found))


def test_every_site_folder_has_a_rank_and_the_guide_says_each():
    folders = {site_group(module_name(p)) for p in sorted((PACKAGE / "site").rglob("*.py"))}
    assert {f for f in folders if site_rank(f) is None} == set()
    ranked = {g for groups in SITE_RANKS for g in groups}
    assert ranked - {"", "views", "pages"} <= folders, f"ranked folders that are gone: {ranked - folders}"
    guide = (REPO / "docs" / "guides" / "contribute.md").read_text(encoding="utf-8")
    section = guide[guide.index("## Where code goes in site/"):].split("\n## ")[0]
    for folder in ranked - {"", "views", "pages"}:
        assert f"`{folder}/`" in section, f"the guide's 'Where code goes in site/' does not place {folder}/"


@pytest.mark.parametrize("bad, message", [
    ({"unipo_build/site/facts/spec_facts.py": "from unipo_build.site.views.compare import diff\n"},
     "unipo_build.site.facts.spec_facts (site/facts) imports unipo_build.site.views.compare.diff "
     "(site/views/compare, a higher rank)"),
    ({"unipo_build/site/views/explorer/explorer.py": "def f():\n    from unipo_build.site.views.inspector import inspector\n"},
     "unipo_build.site.views.explorer.explorer (site/views/explorer) imports unipo_build.site.views.inspector.inspector "
     "(site/views/inspector, its own rank)"),
    ({"unipo_build/site/pages/learning/bands.py": "from unipo_build.site.pages.guides.reference import page_linker\n"},
     "unipo_build.site.pages.learning.bands (site/pages/learning) imports unipo_build.site.pages.guides.reference "
     "(site/pages/guides, a higher rank)"),
    ({"unipo_build/site/render.py": "from unipo_build.site.facts import series\n"},
     "unipo_build.site.render (site/) imports unipo_build.site.facts.series (site/facts, a higher rank)"),
    ({"unipo_build/site/facts/series.py": "from unipo_build.site import hooks\n"},
     "unipo_build.site.facts.series (site/facts) imports unipo_build.site.hooks (site/top, a higher rank)"),
    ({"unipo_build/site/views/new_view/new.py": "X = 1\n"},
     "site/views/new_view/ has no rank in SITE_RANKS (give it one, and its line in the contribute guide)"),
])
def test_a_planted_sideways_import_in_site_is_refused(tmp_path, bad, message):
    good = {  # allowed: downward, within a folder, to views/explainer, by the top modules
        "unipo_build/site/render.py": "X = 1\n",
        "unipo_build/site/hooks.py": "from unipo_build.site.pages.guides import reference\n",
        "unipo_build/site/facts/series.py": "from unipo_build.site import render\n",
        "unipo_build/site/facts/spec_facts.py": "from unipo_build.site.facts import series\n",
        "unipo_build/site/views/compare/diff.py": "X = 1\n",
        "unipo_build/site/views/explainer/explainer.py": "from unipo_build.site.facts import spec_facts\n",
        "unipo_build/site/views/inspector/inspector.py": "from unipo_build.site.views.explainer import explainer\n",
        "unipo_build/site/views/explorer/explorer.py": "from unipo_build.site import render\n",
        "unipo_build/site/pages/guides/reference.py": "from unipo_build.site.pages.learning import bands\n",
        "unipo_build/site/pages/learning/bands.py": "from unipo_build.site.views.compare import diff\n",
    }
    assert site_violations(write_tree(tmp_path / "good", good)) == []
    assert site_violations(write_tree(tmp_path / "bad", {**good, **bad})) == [message]
