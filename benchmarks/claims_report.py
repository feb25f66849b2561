"""Every computed sentence of the course, worded on each run set, side by side.

    python benchmarks/claims_report.py [--out benchmarks/results/claims_report]

Finds each call of a text macro (a sentence: neither HTML nor Markdown, ``site.context.MACROS``) in
docs/**/*.md, words it on every run set declared in mkdocs.yml (``extra.unipo_sets``) that holds
runs, and writes a table (``.md``) and the same rows as JSON (``.json``): page, call, and each set's
sentence with the figures it rests on. A sentence whose words differ between the sets once its
numbers are masked has a different verdict on the two sets; those rows are marked and printed, to
be read by a person. Prints counts and the marked calls.
"""

from __future__ import annotations

import argparse
import html
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

CALL = re.compile(r"\{\{\s*([a-z_]+)\((.*?)\)\s*\}\}", re.S)
NUMBER = re.compile(r"[+\u2212-]?\d[\d,]*(?:\.\d+)?(?:\s*[×x]\s*10[⁻⁰¹²³⁴⁵⁶⁷⁸⁹]+)?%?")


class Env:
    """Enough of mkdocs-macros' env to bind the site's macros to one set's runs outside a build."""

    def __init__(self, runs: Path):
        self.conf = {"extra": {"unipo_runs": str(runs)}, "config_file_path": str(ROOT / "mkdocs.yml")}
        self.variables: dict = {}
        self.page = None
        self.macros: dict = {}

    def macro(self, fn, name: str = ""):
        self.macros[name or fn.__name__] = fn


def bound(runs: Path) -> dict:
    from unipo_build.site import macros

    env = Env(runs)
    macros.define_env(env)
    return env.macros


def sets() -> list[tuple[str, Path]]:
    """(label, runs directory) of every declared set that holds runs."""
    import yaml

    from unipo_build.core.sets import declared_sets

    class Loader(yaml.SafeLoader):
        pass

    Loader.add_multi_constructor("", lambda loader, suffix, node: None)  # mkdocs.yml's !!python tags
    conf = yaml.load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"), Loader=Loader)
    out = []
    for s in declared_sets(conf.get("extra", {}), ROOT):
        if s.runs is not None and s.runs.is_dir() and any((p / "header.json").is_file() for p in s.runs.iterdir()):
            out.append((s.label, s.runs))
    return out


def sentence_calls() -> list[tuple[str, str, str]]:
    """(page, macro name, the call's source) of every text macro called in the docs."""
    from unipo_build.site import macros  # noqa: F401  (imports the view modules, filling MACROS)
    from unipo_build.site.context import MACROS, SITE_MODULES
    import importlib

    for name in SITE_MODULES:
        importlib.import_module(name)
    out = []
    for page in sorted((ROOT / "docs").rglob("*.md")):
        text = page.read_text(encoding="utf-8")
        for m in CALL.finditer(text):
            name = m.group(1)
            d = MACROS.get(name)
            if d is None or d.html or d.markdown or not literal_arguments(m.group(2)):
                continue
            out.append((str(page.relative_to(ROOT / "docs")), name, m.group(0)))
    return out


def literal_arguments(source: str) -> bool:
    """Whether a call's arguments are literals (a call on a page's own Jinja variables, as the
    playgrounds make, is not about the runs and cannot be worded outside its page)."""
    import ast

    try:
        call = ast.parse(f"f({source})", mode="eval").body
    except SyntaxError:
        return False
    values = list(call.args) + [k.value for k in call.keywords]
    try:
        for v in values:
            ast.literal_eval(v)
    except ValueError:
        return False
    return True


def masked(text: str) -> str:
    return NUMBER.sub("#", text)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "claims_report"))
    args = parser.parse_args()
    from jinja2 import Environment

    jinja = Environment()
    found = sets()
    if len(found) < 2:
        print(f"claims_report: {len(found)} run set(s) hold runs; two are needed to compare", file=sys.stderr)
    envs = [(label, bound(runs)) for label, runs in found]
    rows, seen = [], set()
    for page, name, call in sentence_calls():
        if (name, call) in seen:
            continue
        seen.add((name, call))
        texts = []
        for _, macros in envs:
            try:
                out = jinja.from_string(call).render(**macros)
            except Exception as err:  # an author's error stops a build; here it is a row to read
                out = f"ERROR: {type(err).__name__}: {err}"
            texts.append(html.unescape(out).strip())
        differs = len({masked(t) for t in texts}) > 1
        rows.append({"page": page, "call": call, "sentences": dict(zip([l for l, _ in found], texts)),
                     "verdict_differs": differs})
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps(rows, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    labels = [label for label, _ in found]
    lines = ["# Computed sentences on each run set", "",
             "Written by `python benchmarks/claims_report.py`. A row marked **differs** words a different verdict "
             "on the two sets once numbers are masked.", "",
             "| page | call | " + " | ".join(labels) + " | verdict |", "|---|---|" + "---|" * len(labels) + "---|"]
    for r in rows:
        cells = [r["page"], "`" + r["call"].replace("|", "\\|") + "`"]
        cells += [r["sentences"][label].replace("|", "\\|").replace("\n", " ") for label in labels]
        cells.append("**differs**" if r["verdict_differs"] else "same")
        lines.append("| " + " | ".join(cells) + " |")
    out.with_suffix(".md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    differ = [r for r in rows if r["verdict_differs"]]
    errors = [r for r in rows if any(t.startswith("ERROR") for t in r["sentences"].values())]
    print(f"{len(rows)} computed sentences on {len(found)} sets ({', '.join(labels)}): "
          f"{len(differ)} word a different verdict, {len(errors)} failed")
    for r in differ:
        print(f"  differs: {r['page']}: {r['call']}")
    for r in errors:
        print(f"  error: {r['page']}: {r['call']}")
    print(f"wrote {out.with_suffix('.md')} and {out.with_suffix('.json')}")
    return 1 if errors else 0


if __name__ == "__main__":
    raise SystemExit(main())
