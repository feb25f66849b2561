"""Every computed sentence of the course, worded on each run set, side by side; and every verdict, judged by the
rule the course used before issue 43 and by the one procedure now (core.judge), side by side.

    python benchmarks/claims_report.py [--out benchmarks/results/claims_report]

Finds each call of a text macro (a sentence: neither HTML nor Markdown, ``site.context.MACROS``) in
docs/**/*.md, words it on every run set declared in mkdocs.yml (``extra.unipo_sets``) that holds
runs, and writes a table (``.md``) and the same rows as JSON (``.json``): page, call, and each set's
sentence with the figures it rests on. A sentence whose words differ between the sets once its
numbers are masked has a different verdict on the two sets; those rows are marked and printed, to
be read by a person. Prints counts and the marked calls.

Before and after: while the sentences are worded, every verdict that sets two variants side by side
(each call of ``effects.compare``, and the scale page's lead of the group methods, ``set_differences``) is
recorded with the values it judged, and judged again by the old rule, which the course no longer has and
:func:`old_rule` reimplements here only for this comparison: with several seeds on both sides, every seed of
one beyond every seed of the other and at least 20 orderings of the runs (a one-sided 1/20, applied in both
directions); with one seed on a side, the difference against two standard errors of the runs' own noise.
Written to ``<out>_verdicts.md`` and ``.json``: page, call, set, the two variants and their seeds, the old
verdict and the new one (its words, effect and interval); the verdicts that moved are printed.
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

    from unipo_build.core.runlog import HEADER
    from unipo_build.core.sets import declared_sets

    class Loader(yaml.SafeLoader):
        pass

    Loader.add_multi_constructor("", lambda loader, suffix, node: None)  # mkdocs.yml's !!python tags
    conf = yaml.load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"), Loader=Loader)
    out = []
    for s in declared_sets(conf.get("extra", {}), ROOT):
        if s.runs is not None and s.runs.is_dir() and any((p / HEADER).is_file() for p in s.runs.iterdir()):
            out.append((s.label, s.runs))
    return out


def sentence_calls() -> list[tuple[str, str, str]]:
    """(page, macro name, the call's source) of every text macro called in the docs."""
    from unipo_build.site import macros
    from unipo_build.site.context import MACROS

    macros.import_macro_modules()  # every module that registers a macro, filling MACROS
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


# ---------------------------------------------------------------------------
# Before and after: the old rule, reimplemented for the comparison only
# ---------------------------------------------------------------------------

#: Orderings of two sets of seeds the old rule needed before complete separation counted (p <= 1/20, one-sided).
OLD_MIN_ORDERINGS = 20


def old_rule(a, b, predicted: int) -> tuple[str, str]:
    """(status, basis) of the rule the course used before core.judge, for two ``effects.Side``."""
    import math

    from unipo_build.site.pages.learning.effects import seeds_words

    for side in (a, b):
        if side.n == 0:
            return "unmeasurable", side.reason or f"the build has no run of {side.name}"
    basis = (f"{seeds_words(a.n)} each" if a.n == b.n else
             f"{a.name} {seeds_words(a.n)}, {b.name} {seeds_words(b.n)}")
    if a.n >= 2 and b.n >= 2:
        above, below = a.low > b.high, a.high < b.low
        if (above or below) and math.comb(a.n + b.n, a.n) >= OLD_MIN_ORDERINGS:
            status = "shown" if (1 if above else -1) == predicted else "contradicted"
            return status, f"{basis}, every seed of one beyond every seed of the other"
        if above or below:
            return "unclear", f"{basis}: the seeds point one way but are too few to rule out chance"
        return "unclear", f"{basis}: the seeds of the two overlap"
    if a.se is None or b.se is None:
        return "unclear", f"{basis}: the noise of a single run cannot be estimated from its log"
    se, diff = math.hypot(a.se, b.se), a.mean - b.mean
    words = f"{basis}, against two standard errors of the difference"
    if (se > 0 and abs(diff) <= 2 * se) or diff == 0:
        return "unclear", f"{words}: within two standard errors"
    return ("shown" if (1 if diff > 0 else -1) == predicted else "contradicted"), words


class Recorder:
    """Wraps every module's ``compare`` (and set_differences' ``judge``) to record each verdict the pages make,
    with the old rule's verdict on the same values, under the call being worded (``where``)."""

    def __init__(self):
        self.where: tuple[str, str, str] = ("", "", "")
        self.again = False  # words pages that repeat the sentences' verdicts (the scale page)
        self.rows: list[dict] = []
        self._seen: set = set()

    def _add(self, a_name, b_name, a_values, b_values, predicted, old, new) -> None:
        """One row per verdict of a call on a set; an HTML page's (``self.again``) only if no sentence made it."""
        key = (self.where[2], a_name, b_name, tuple(a_values), tuple(b_values), predicted)
        if (self.where[1], key) in self._seen or (self.again and key in self._seen):
            return
        self._seen.update({(self.where[1], key), key})
        j = new.judgement
        self.rows.append({
            "page": self.where[0], "call": self.where[1], "set": self.where[2], "a": a_name, "b": b_name,
            "n_a": len(a_values), "n_b": len(b_values), "predicted": predicted,
            "before": {"status": old[0], "basis": old[1]},
            "after": {"status": new.status, "words": new.basis or new.reason,
                      "effect": None if j is None else j.effect, "p": None if j is None else j.p,
                      "interval": None if j is None or j.low is None else [j.low, j.high]}})

    def install(self) -> None:
        from unipo_build.site.pages.learning import effects, set_differences

        real = effects.compare

        def compare(a, b, predicted):
            new = real(a, b, predicted)
            self._add(a.name, b.name, [v.value for v in a.values], [v.value for v in b.values], predicted,
                      old_rule(a, b, predicted), new)
            return new

        for name, module in list(sys.modules.items()):
            if name.startswith("unipo_build.site") and getattr(module, "compare", None) is real:
                module.compare = compare
        real_judge = set_differences.judge

        def judge(g, o, **kw):
            j = real_judge(g, o, **kw)
            old = (("shown" if min(g) > max(o) else "contradicted") if min(g) > max(o) or max(g) < min(o) else "unclear",
                   "every group-method run beyond every other run" if min(g) > max(o) or max(g) < min(o) else
                   "the two kinds' runs overlap")
            status = ("shown" if j.sign > 0 else "contradicted") if j.clear else "unclear"
            self._add("the group methods", "the others", list(g), list(o), +1, old,
                      effects.Verdict(status, j.words(), judgement=j))
            return j

        set_differences.judge = judge


#: Verdicts the pages make in HTML macros (not sentences), worded once on each set so that their verdicts are
#: recorded too: the scale page's cards and its section on what differs between the sets.
VERDICT_HTML = (("course/compare/scale.md", "{{ scale_comparison() }}"),
                ("course/compare/scale.md", "{{ scale_differences() }}"))
#: Comparisons the course made before issue 43 and no longer makes, recorded under both rules: SAPO and GMPO were
#: judged against GRPO, two slots away; their baseline is now the spec one slot away (GRPO without its KL term).
FORMER_CALLS = (("course/algorithms/beyond_grpo.md", '{{ clip_family_gains("sapo", "grpo", baseline=true) }}'),
                ("course/algorithms/beyond_grpo.md", '{{ clip_family_gains("gmpo", "grpo", baseline=true) }}'))


def verdict_rows_md(rows: list[dict]) -> list[str]:
    lines = ["# Every verdict, by the old rule and by the procedure", "",
             "Written by `python benchmarks/claims_report.py`. Before: the rule the course used until issue 43 "
             "(every seed of one beyond every seed of the other with at least 20 orderings; one seed against two "
             "standard errors), reimplemented in the benchmark. After: `core.judge` (an exact two-sided permutation "
             "test across seeds; clear at p <= 0.05). The difference is the first's mean minus the second's, in the "
             "quantity's own unit (a share, nats, a relative change), with its 95% interval where the test bounds it. "
             "A row marked **moved** changed status.", "",
             f"{sum(r['before']['status'] != r['after']['status'] for r in rows)} of {len(rows)} verdicts moved.", "",
             "| set | page | call | comparison | difference | before | after | |", "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        comparison = f"{r['a']} ({r['n_a']}) against {r['b']} ({r['n_b']})"
        moved = "**moved**" if r["before"]["status"] != r["after"]["status"] else ""
        after = r["after"]
        effect = "" if after["effect"] is None else f"{after['effect']:+.3g}" + (
            "" if after["interval"] is None else f" [{after['interval'][0]:+.3g}, {after['interval'][1]:+.3g}]")
        cells = [r["set"], r["page"], "`" + r["call"].replace("|", "\\|") + "`", comparison, effect,
                 f"{r['before']['status']}: {r['before']['basis']}", f"{after['status']}: {after['words']}", moved]
        lines.append("| " + " | ".join(c.replace("|", "\\|") if i != 2 else c for i, c in enumerate(cells)) + " |")
    return lines


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
    recorder = Recorder()
    recorder.install()
    rows, seen = [], set()
    for page, name, call in sentence_calls():
        if (name, call) in seen:
            continue
        seen.add((name, call))
        texts = []
        for label, macros in envs:
            recorder.where = (page, call, label)
            try:
                out = jinja.from_string(call).render(**macros)
            except Exception as err:  # an author's error stops a build; here it is a row to read
                out = f"ERROR: {type(err).__name__}: {err}"
            texts.append(html.unescape(out).strip())
        differs = len({masked(t) for t in texts}) > 1
        rows.append({"page": page, "call": call, "sentences": dict(zip([l for l, _ in found], texts)),
                     "verdict_differs": differs})
    for page, call in VERDICT_HTML + FORMER_CALLS:
        recorder.again = (page, call) in VERDICT_HTML
        for label, macros in envs:
            recorder.where = (page, call + (" (before issue 43)" if (page, call) in FORMER_CALLS else ""), label)
            try:
                jinja.from_string(call).render(**macros)
            except Exception as err:  # a set without the runs: its verdicts are the sentences' own
                print(f"  {label}: {call}: {type(err).__name__}: {err}", file=sys.stderr)
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
    verdicts = recorder.rows
    stem = out.with_name(out.name + "_verdicts")
    stem.with_suffix(".json").write_text(json.dumps(verdicts, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    stem.with_suffix(".md").write_text("\n".join(verdict_rows_md(verdicts)) + "\n", encoding="utf-8")
    moved = [r for r in verdicts if r["before"]["status"] != r["after"]["status"]]
    print(f"{len(verdicts)} verdicts between two variants; {len(moved)} moved from the old rule to the procedure:")
    for r in verdicts:
        mark = "moved" if r in moved else "same "
        effect = "" if r["after"]["effect"] is None else f", difference {r['after']['effect']:+.3g}"
        print(f"  {mark} [{r['set']}] {r['call']}: {r['a']} ({r['n_a']}) vs {r['b']} ({r['n_b']}){effect}: "
              f"{r['before']['status']} ({r['before']['basis']}) -> {r['after']['status']} ({r['after']['words']})")
    print(f"wrote {stem.with_suffix('.md')} and {stem.with_suffix('.json')}")
    return 1 if errors else 0


if __name__ == "__main__":
    raise SystemExit(main())
