"""How the site's macros are registered and found, and what the theme script knows of the views (issue 46 item 3).

- A macro is registered at its function's definition (``@macro(name=...)`` on the ``*_text`` / ``*_html``
  function itself, or ``macro(fn, name=...)`` for a function of a module that does not import the machinery):
  no ``@macro`` function only passes its own arguments on to another function (a one-line wrapper).
- ``macros.define_env`` finds the modules that register macros by walking ``unipo_build.site``: no list.
- The theme's scripts (overrides/assets/*.js) name no view: each view's script registers what it draws
  (``UNIPO.register``) and what a guided path's link opens (``UNIPO.pathView``).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from unipo_build.site import context, macros

ROOT = Path(__file__).resolve().parents[1]
SITE = ROOT / "unipo_build" / "site"


def _is_macro(node: ast.AST) -> bool:
    """``@macro``, ``@macro(...)`` or ``macro(fn, ...)`` (context.macro; not mkdocs-macros' own ``env.macro``)."""
    f = node.func if isinstance(node, ast.Call) else node
    return isinstance(f, ast.Name) and f.id == "macro"


def _passes_on(node: ast.AST, params: set[str]) -> bool:
    """An argument that is one of the function's own parameters (or ``site``), perhaps through str() or bool()."""
    if isinstance(node, ast.Name):
        return node.id in params
    if isinstance(node, ast.Call) and getattr(node.func, "id", None) in ("str", "bool") and len(node.args) == 1:
        return _passes_on(node.args[0], params)
    if isinstance(node, ast.Starred):
        return _passes_on(node.value, params)
    return False


def wrappers(tree: ast.Module) -> list[str]:
    """The ``@macro`` functions of a module whose body (past a docstring) is ``return f(...)`` of its own
    parameters only: a name for ``f``, which is where ``@macro(name=...)`` belongs."""
    found = []
    for fn in ast.walk(tree):
        if not isinstance(fn, ast.FunctionDef) or not any(_is_macro(d) for d in fn.decorator_list):
            continue
        body = [b for b in fn.body if not (isinstance(b, ast.Expr) and isinstance(b.value, ast.Constant))]
        if len(body) != 1 or not isinstance(body[0], ast.Return) or not isinstance(body[0].value, ast.Call):
            continue
        call = body[0].value
        params = {a.arg for a in fn.args.args + fn.args.kwonlyargs} | {
            a.arg for a in (fn.args.vararg, fn.args.kwarg) if a is not None}
        if all(_passes_on(a, params) for a in call.args) and all(_passes_on(k.value, params) for k in call.keywords):
            found.append(f"{fn.name} -> {ast.unparse(call.func)}")
    return found


def test_no_macro_is_a_wrapper_of_another_function():
    found = [f"{p.relative_to(ROOT)}: {w}" for p in sorted(SITE.rglob("*.py"))
             for w in wrappers(ast.parse(p.read_text(encoding="utf-8")))]
    assert not found, ("register the function itself (@macro(name=...) at its definition) instead of a wrapper:\n"
                       + "\n".join(found))


def test_the_wrapper_check_finds_a_planted_wrapper():
    tree = ast.parse(
        "@macro\ndef a(site, run, key='x'):\n    '''doc'''\n    return a_text(site, str(run), key)\n\n"
        "@macro(html=True)\ndef b(site, *names):\n    return b_html(site, *names)\n\n"
        "@macro\ndef c(site, run):\n    return c_text(site.run(run), str(run))\n\n"  # resolves the run: not only passing on
        "@macro(name='d')\ndef d_text(site, run):\n    return ' '.join([run, run])\n")
    assert wrappers(tree) == ["a -> a_text", "b -> b_html"]


def registering_modules() -> set[str]:
    """The site's modules whose syntax tree registers a macro (a ``@macro`` decorator or a ``macro(...)`` call)."""
    out = set()
    for path in sorted(SITE.rglob("*.py")):
        if path.name == "context.py":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        if any(isinstance(n, ast.FunctionDef) and any(_is_macro(d) for d in n.decorator_list) for n in ast.walk(tree)) \
                or any(isinstance(n, ast.Expr) and isinstance(n.value, ast.Call) and _is_macro(n.value)
                       for n in ast.walk(tree)):
            parts = path.relative_to(ROOT).with_suffix("").parts
            out.add(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return out


def test_define_env_finds_every_module_that_registers_a_macro():
    found = macros.macro_modules()
    assert len(found) == len(set(found))
    assert set(found) == registering_modules()
    assert "unipo_build.site.hooks" not in found and "unipo_build.site.build" not in found
    assert not hasattr(context, "SITE_MODULES")  # no hand-kept list


def test_a_run_macro_gets_the_run_and_its_name():
    class Stub(context.Site):
        def __init__(self):
            self.seen = []

        def run(self, name):
            return None if name == "absent" else f"<run {name}>"

        def protect(self, html):
            return html

        def use_scripts(self, names):
            pass

    def fact(run, name, key, digits=3):
        return f"{run}|{name}|{key}|{digits}"

    definition = context.MacroDef(fact, "fact_probe", False, (), with_site=False, run=True)
    bound = context.bind(Stub(), definition)
    assert bound("grpo", "steps", digits=2) == "&lt;run grpo&gt;|grpo|steps|2"
    assert bound("absent", "steps") == "None|absent|steps|3"


# --------------------------------------------------------------------------- the theme script and the views

#: What names a view in a script: the views' names (page_state.VIEW_SCRIPTS, and the comparisons), their
#: elements' classes and the attributes one view reads of another.
VIEW_WORDS = re.compile(r"explorer|inspector|explainer|compare|playground", re.I)


def script_code(text: str) -> str:
    """A script less its comments (``/* ... */`` and ``// ...`` outside strings)."""
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    return re.sub(r"(?<![:\\\"'])//[^\n]*", "", text)


def test_the_theme_scripts_name_no_view():
    from unipo_build.site.page_state import VIEW_SCRIPTS
    assert set(VIEW_SCRIPTS) <= {"explorer", "inspector", "explainer", "playgrounds"}  # VIEW_WORDS covers them
    found = [f"{p.relative_to(ROOT)}:{i + 1}: {line.strip()}" for p in sorted((ROOT / "overrides" / "assets").glob("*.js"))
             for i, line in enumerate(script_code(p.read_text(encoding="utf-8")).split("\n")) if VIEW_WORDS.search(line)]
    assert not found, "the view's own script registers this (UNIPO.register, UNIPO.pathView):\n" + "\n".join(found)


def test_each_guided_path_kind_is_registered_by_its_view():
    """Every kind of link guided.py writes (``path_link(text, kind, ...)``, data-path-view) is registered by
    the script of a view (UNIPO.pathView); unipo.js itself knows none."""
    guided = (SITE / "pages" / "objectives" / "guided.py").read_text(encoding="utf-8")
    kinds = set(re.findall(r'path_link\((?:f?"[^"]*"|[^,]+), "([a-z-]+)"', guided))
    assert {"explorer", "explorer-inspector", "compare"} <= kinds
    registered = {kind for p in sorted((SITE / "views").rglob("*.js"))
                  for kind in re.findall(r'pathView\("([a-z-]+)"', p.read_text(encoding="utf-8"))}
    assert kinds <= registered, f"no view script registers {sorted(kinds - registered)}"
