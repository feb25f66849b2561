"""Outside the kinds modules the package does not branch on a kind's name: it asks the kind's registry entry
(issue 46 item 1). A comparison with a registered kind's name (``==``, ``!=``, ``in``, ``not in``, against a
string or a tuple, list or set of strings) or a dict keyed by one, anywhere in unipo_build/ outside
core/kinds_*.py and core/registry*.py, is counted; the count may not grow past :data:`LIMIT`, and each one
that stays says why in a comment on its line or the line above (``# kind name:``).

Three names are also values of a kind's parameters (``none``, ``token``, ``sequence``: the correction's level,
a baseline of none): a comparison with one of those counts only where the other side reads a kind (its text
names ``kind``), so ``level == "token"`` is not counted and ``comp["kind"] == "none"`` is.
"""

from __future__ import annotations

import ast
import typing
from pathlib import Path

from unipo_build.core.registry import REGISTRY

PACKAGE = Path(__file__).resolve().parents[1] / "unipo_build"
#: Kind-name comparisons allowed outside the kinds modules, a ratchet: lower it when one goes; it may not rise.
#: Issue 46's aim is 10. What stays (8), each commented: the TRL tap's cispo row value (it runs inside TRL, without
#: the registry); verl's seq-mean-token-sum-norm, GAE and whitened-return critic, and GMPO (4, trainers/verl/config.py);
#: hparams' PPO clip bounds (trainers/common.py); and two tables keyed by algorithm ids that are also clip kinds' names
#: (site/palette.py, site/facts/run_facts.py).
LIMIT = 8
#: site/ files that still compare kind names, uncommented: none (the last six went in issue 46 item 1's second step).
SITE_PENDING: set[str] = set()
#: Before issue 46 item 1, by this count: 80 (trainers/openrlhf/command.py 26, verl/config.py 14, trl/config.py 10,
#: trainers/common.py 8, site/pages/dynamics/sampler_facts.py 5, trl/importer.py 5, trl/tap.py 3, 3 more in trainers/,
#: 6 more in site/); 25 after its first step; 8 after its second (TRL's CISPO paper form is the kind's
#: ``paper_form``, TRL's normalisers one table of its loss types in trainers/trl/tap.py, the run page's empty choices
#: ``Kind.is_none``, the playground's aggregation legend and colours the kinds' own words, core/kinds_playground.py).
MARK = "kind name:"


def _names() -> tuple[set[str], set[str]]:
    """(every registered kind's name, those that are also values of a kind's Literal parameter)."""
    names = {n for kinds in REGISTRY.values() for n in kinds}
    values = set()
    for kinds in REGISTRY.values():
        for k in kinds.values():
            for f in k.params.model_fields.values():
                for t in (f.annotation, *typing.get_args(f.annotation)):
                    if typing.get_origin(t) is typing.Literal:
                        values |= set(typing.get_args(t))
    return names, names & values


def _strings(node: ast.AST) -> list[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return [s for e in node.elts for s in _strings(e)]
    return []


def kind_name_uses(root: Path = PACKAGE) -> list[tuple[str, int, str, bool]]:
    """(file, line, the names, whether a comment marks it) of every kind-name comparison or dict key outside
    the kinds modules and the registry."""
    names, ambiguous = _names()
    out = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        if rel.startswith(("core/kinds_", "core/registry")):
            continue
        text = path.read_text(encoding="utf-8")
        lines = text.splitlines()
        for node in ast.walk(ast.parse(text)):  # (sorted below: walk's order is breadth-first)
            found: list[str] = []
            if isinstance(node, ast.Compare) and all(
                    isinstance(op, (ast.Eq, ast.NotEq, ast.In, ast.NotIn)) for op in node.ops):
                sides = [node.left, *node.comparators]
                for side in sides:
                    others = " ".join(ast.get_source_segment(text, s) or "" for s in sides if s is not side)
                    found += [s for s in _strings(side) if s in names and (s not in ambiguous or "kind" in others)]
            elif isinstance(node, ast.Dict):
                found = [s for key in node.keys if key is not None for s in _strings(key)
                         if s in names and s not in ambiguous]
            if found:
                near = " ".join(lines[max(node.lineno - 2, 0):node.lineno])
                out.append((rel, node.lineno, ",".join(sorted(set(found))), MARK in near))
    return sorted(out)


def test_the_package_does_not_branch_on_kind_names():
    uses = kind_name_uses()
    listing = "\n".join(f"  unipo_build/{f}:{line} {names}" for f, line, names, _ in uses)
    assert len(uses) <= LIMIT, (f"{len(uses)} comparisons with a kind's name outside the kinds modules (limit {LIMIT}): "
                                f"ask the kind's registry entry instead (core/registry_trainers.py)\n{listing}")


def test_each_kind_name_that_stays_says_why():
    unmarked = [f"unipo_build/{f}:{line} {names}" for f, line, names, marked in kind_name_uses()
                if not marked and f not in SITE_PENDING]
    assert not unmarked, f"say why with a '# {MARK} ...' comment on the line or the one above:\n" + "\n".join(unmarked)


def test_the_count_sees_a_planted_comparison(tmp_path):
    (tmp_path / "trainers").mkdir()
    (tmp_path / "trainers" / "x.py").write_text(
        'def f(k, level, comp):\n    if k == "cispo" or level == "token":\n        return {"gae": 1}\n'
        '    # kind name: the empty choice\n    return comp["kind"] != "none"\n', encoding="utf-8")
    (tmp_path / "core").mkdir()
    (tmp_path / "core" / "kinds_x.py").write_text('A = "cispo" == "cispo"\n', encoding="utf-8")
    assert sorted(kind_name_uses(tmp_path)) == [
        ("trainers/x.py", 2, "cispo", False), ("trainers/x.py", 3, "gae", False), ("trainers/x.py", 5, "none", True)]


def test_the_readme_says_a_kind_touches_no_trainer_code():
    """README's 'Where a change goes': a component kind's row names the kinds modules and the registry's trainer
    module, and no file of unipo_build/trainers/ (the builders read the kind's entry)."""
    import re

    text = (PACKAGE.parent / "README.md").read_text(encoding="utf-8")
    row = next(line for line in text.splitlines() if line.startswith("| A component kind"))
    files = set(re.findall(r"`(unipo_build/[\w/.-]+\.(?:py|js))`", row.split(" | ")[1]))
    assert not {f for f in files if f.startswith("unipo_build/trainers/")}, files
    assert {"unipo_build/core/kinds_openrlhf.py", "unipo_build/core/kinds_import.py",
            "unipo_build/core/registry_trainers.py"} <= files
    assert "tests/test_kind_reaches_trainers.py" in row and "ESTIMATOR" not in row


def test_what_replaced_the_names_says_the_same():
    """The tables that replaced kind names (issue 46 item 1's second step) hold what the names said."""
    from unipo_build.core import registry
    from unipo_build.site.playgrounds import loss_shapes, shape_charts
    from unipo_build.site.playgrounds.charts import METHOD_COLOURS, NEUTRAL
    from unipo_build.trainers.trl import config as trl_config

    assert trl_config.MASK_TRUNCATED_COUNTS == {"grpo": True, "dr_grpo": True, "sapo": True, "bnpo": False,
                                                "dapo": False, "cispo": False}
    assert trl_config.DELTA_CLIPS == {"dual_clip"}
    assert registry.paper_form_kind("trl", "clip", "loss_type", "cispo") == "cispo"
    assert all(registry.paper_form_kind("trl", "clip", "loss_type", t) is None
               for t in ("grpo", "sapo", "dapo", "bnpo", "dr_grpo", "luspo", None))
    assert loss_shapes.AGGREGATION_LABELS == {
        "seq_mean_token_mean": "seq-mean-token-mean (GRPO, GSPO)", "token_mean": "token-mean (DAPO)",
        "constant_normalizer": "constant L (Dr. GRPO)", "seq_mean_token_sum": "seq-mean-token-sum"}
    assert shape_charts.AGGREGATION_COLOURS == {
        "seq_mean_token_mean": METHOD_COLOURS["grpo"], "token_mean": METHOD_COLOURS["dapo"],
        "constant_normalizer": METHOD_COLOURS["dr_grpo"], "seq_mean_token_sum": NEUTRAL}
