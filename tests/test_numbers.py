"""unipo_build.core.numbers, the one number formatter: each formatter on hand-worked values, the scan that
finds number formatting anywhere else in unipo_build/ and training/, and the browser's port of it
(views-common.js) run in node on a table of values against the Python.

The scan walks each module's syntax tree and reports, outside core/numbers.py:

- an f-string or ``str.format`` field whose format spec writes a number (a presentation type of
  ``bdeEfFgGnoxX%``, a grouping ``,`` or ``_``, or a precision with no type: ``:.2f``, ``:,``, ``:.1%``,
  ``:.{digits}g``); a spec that is not the numbers' mini-language (a date's ``%Y-%m-%d``) or writes a
  string (``:<20``) is not one;
- ``'%.2f' % x`` (a ``%`` format of a number), ``format(x, '.2f')``;
- ``round(x, n)`` put into text: ``str(round(x, 2))`` or ``f"{round(x, 2)}"``.
"""

from __future__ import annotations

import ast
import json
import math
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from unipo_build.core import numbers as N

ROOT = Path(__file__).resolve().parents[1]
NUMBERS = "unipo_build/core/numbers.py"
COMMON_JS = ROOT / "unipo_build" / "site" / "views" / "views-common.js"
NODE = shutil.which("node")

#: Formatting that is not a number for a reader, each with why (path, format spec).
ALLOWED = {
    ("unipo_build/site/page_state.py", "04d"),  # a placeholder token's serial number, part of an id
    ("unipo_build/core/limits.py", "04X"),  # a code point written as U+D800
    ("unipo_build/trainers/unipo/publish.py", "o"),  # a file mode in octal, as chmod takes it (0o644 -> 644)
    ("unipo_build/core/runlog.py", "01d"),  # a token file's name: the step zero-padded (step_000012.json)
    ("unipo_build/core/runlog.py", "02x"),  # the byte that is not UTF-8, in hex (0xff)
    ("training/task.py", "01d"),  # a task row's id: its serial number zero-padded (train-00042)
}

#: Paths the scan leaves out for now: none (issue 46 item 2; a path here must still format numbers itself).
NOT_YET: tuple[str, ...] = ()

_SPEC = re.compile(r"(?:.?[<>=^])?[+\- ]?z?#?0?(?P<width>\d+)?(?P<group>[,_])?(?P<precision>\.\d+)?(?P<type>[a-zA-Z%])?")
NUMERIC_TYPES = set("bdeEfFgGnoxX%")


def numeric_spec(spec: str) -> bool:
    """Whether a format spec (its nested fields as '1') writes a number."""
    match = _SPEC.fullmatch(spec)
    if not match or not spec:
        return False
    kind = match.group("type")
    return (kind in NUMERIC_TYPES if kind else False) or bool(match.group("group")) \
        or (kind is None and bool(match.group("precision")))


def _spec_text(node: ast.JoinedStr) -> str:
    return "".join(v.value if isinstance(v, ast.Constant) else "1" for v in node.values)


def _is_round(node: ast.AST) -> bool:
    return isinstance(node, ast.Call) and getattr(node.func, "id", None) == "round" and len(node.args) == 2


_PERCENT = re.compile(r"%[-+ 0#]*\d*(?:\.\d+)?[deEfFgGi]")
_BRACES = re.compile(r"\{[^{}:]*:([^{}]*)\}")


def formatting_in(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, what) for each place a module formats a number itself."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FormattedValue):
            if node.format_spec is not None and numeric_spec(spec := _spec_text(node.format_spec)):
                found.append((node.lineno, f"format spec :{spec}"))
            if _is_round(node.value):
                found.append((node.lineno, "round() into an f-string"))
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod) and isinstance(node.left, ast.Constant) \
                and isinstance(node.left.value, str) and _PERCENT.search(node.left.value):
            found.append((node.lineno, f"% format {_PERCENT.search(node.left.value).group()}"))
        elif isinstance(node, ast.Call):
            name = getattr(node.func, "id", None)
            if name == "format" and len(node.args) == 2 and isinstance(node.args[1], ast.Constant) \
                    and numeric_spec(str(node.args[1].value)):
                found.append((node.lineno, f"format(x, {node.args[1].value!r})"))
            elif name == "str" and node.args and _is_round(node.args[0]):
                found.append((node.lineno, "str(round(...))"))
            elif isinstance(node.func, ast.Attribute) and node.func.attr == "format" \
                    and isinstance(node.func.value, ast.Constant) and isinstance(node.func.value.value, str):
                found += [(node.lineno, f"str.format spec :{spec}") for spec in _BRACES.findall(node.func.value.value)
                          if numeric_spec(spec)]
    return found


def number_formatting(root: Path = ROOT, not_yet: tuple[str, ...] = NOT_YET) -> list[str]:
    """Each place outside core/numbers.py, in unipo_build/ and training/, that formats a number itself."""
    out = []
    for folder in ("unipo_build", "training"):
        for path in sorted((root / folder).rglob("*.py")):
            rel = path.relative_to(root).as_posix()
            if rel == NUMBERS or rel.startswith(not_yet):
                continue
            for line, what in formatting_in(ast.parse(path.read_text(encoding="utf-8"))):
                spec = what.rpartition(":")[2]
                if (rel, spec) not in ALLOWED:
                    out.append(f"{rel}:{line}: {what}")
    return sorted(set(out))


def test_no_number_is_formatted_outside_the_numbers_module():
    found = number_formatting()
    assert not found, ("format numbers with unipo_build.core.numbers (or add a formatter there), not here:\n"
                       + "\n".join(found))


def test_the_temporary_exclusions_still_hold_number_formatting():
    """A path stays in NOT_YET only while it still formats numbers itself (else it is to be removed); one not
    in this checkout yet (another change adds it) has nothing to check."""
    for prefix in NOT_YET:
        paths = sorted(ROOT.glob(prefix + "**/*.py" if prefix.endswith("/") else prefix))
        if not paths:
            continue
        assert any(formatting_in(ast.parse(p.read_text(encoding="utf-8"))) for p in paths), \
            f"{prefix} no longer formats numbers: remove it from NOT_YET"


def test_the_scan_finds_planted_formatting(tmp_path):
    (tmp_path / "unipo_build" / "site").mkdir(parents=True)
    (tmp_path / "training").mkdir()
    (tmp_path / "unipo_build" / "site" / "bad.py").write_text(
        'def f(x, n, d):\n'
        '    a = f"{x:.2f} and {n:,} and {x:.1%} and {x:.{d}g}"\n'
        '    b = "%.3f" % x\n'
        '    c = format(x, ".2e")\n'
        '    e = str(round(x, 2)) + f"{round(x, 3)}"\n'
        '    g = "{:.1f} of {}".format(x, n)\n'
        '    return a, b, c, e, g\n', encoding="utf-8")
    (tmp_path / "training" / "fine.py").write_text(
        'import datetime\n'
        'def f(name, when: datetime.datetime, x):\n'
        '    return f"{name:<20} {when:%Y-%m-%d %H:%M} {x} {x!r}" + "%s" % name + "{}".format(x)\n',
        encoding="utf-8")
    assert number_formatting(tmp_path, ()) == [
        "unipo_build/site/bad.py:2: format spec :,",
        "unipo_build/site/bad.py:2: format spec :.1%",
        "unipo_build/site/bad.py:2: format spec :.1g",
        "unipo_build/site/bad.py:2: format spec :.2f",
        "unipo_build/site/bad.py:3: % format %.3f",
        "unipo_build/site/bad.py:4: format(x, '.2e')",
        "unipo_build/site/bad.py:5: round() into an f-string",
        "unipo_build/site/bad.py:5: str(round(...))",
        "unipo_build/site/bad.py:6: str.format spec :.1f",
    ]
    # an excluded folder is not read
    assert number_formatting(tmp_path, ("unipo_build/site/",)) == []


# --------------------------------------------------------------------------- the formatters, by hand


def test_fmt_num():
    assert N.fmt_num(0.012345) == "0.0123" and N.fmt_num(1.5) == "1.5" and N.fmt_num(12.44) == "12.4"
    assert N.fmt_num(1234567) == "1,234,567" and N.fmt_num(-3) == "\u22123" and N.fmt_num(-3, minus="-") == "-3"
    assert N.fmt_num(2.4913e-5) == "2.49 \u00d7 10\u207b\u2075" and N.fmt_num(12345.6) == "12,300"  # 3 significant digits
    assert N.fmt_num(None) == "–" and N.fmt_num(0.0) == "0" and N.fmt_num(True) == "true"
    assert N.fmt_num(0.5, 1) == "0.5" and N.fmt_num(2.0) == "2"


def test_fmt_signed_and_fmt_objective():
    assert N.fmt_signed(0.25) == "+0.25" and N.fmt_signed(-0.25) == "\u22120.25" and N.fmt_signed(0) == "0"
    assert N.fmt_signed(None) == "–"
    assert N.fmt_objective(3e-8) == "\u2248 0" and N.fmt_objective(0.014763) == "0.01476"
    assert N.fmt_objective(0.014763, signed=True) == "+0.01476" and N.fmt_objective(None) == "–"


def test_fmt_fixed():
    assert N.fmt_fixed(0.25, 3) == "0.250" and N.fmt_fixed(-4.125, 1) == "\u22124.1"
    assert N.fmt_fixed(-0.0001, 2) == "0.00"  # no sign on what prints as zero
    assert N.fmt_fixed(0.70710678, 4, signed=True) == "+0.7071" and N.fmt_fixed(0.0004, 2, signed=True) == "0.00"
    assert N.fmt_fixed(-1.25, 2, minus="-") == "-1.25" and N.fmt_fixed(12.7, 0) == "13"


def test_fmt_pct():
    assert N.fmt_pct(0.4313) == "43.1%" and N.fmt_pct(0.4313, 0) == "43%" and N.fmt_pct(None) == "–"
    assert N.fmt_pct(0.0003) == "0.03%" and N.fmt_pct(0.00004, 1) == "under 0.01%"  # never 0% for a non-zero share
    # as many decimals as a reader needs: whole percent but near 0 and 100
    assert [N.fmt_pct(x, None) for x in (0.0, 0.004, 0.43, 0.996, 0.9996, 1.0, 0.0003)] == [
        "0%", "0.4%", "43%", "99.6%", "over 99.9%", "100%", "0.03%"]
    assert N.fmt_pct(0.05, 0, signed=True) == "+5%" and N.fmt_pct(-0.3, 0, signed=True) == "\u221230%"
    assert N.fmt_pct(0.0, 0, signed=True) == "0%" and N.fmt_pct(0.001, 0, signed=True) == "+0.1%"
    # a clip fraction: two decimals under 1%
    assert N.fmt_pct(0.0047, 1, small=2) == "0.47%" and N.fmt_pct(0.123, 1, small=2) == "12.3%"


def test_fmt_share_and_points():
    assert N.fmt_share(0.00095) == "0.095%" and N.fmt_share(0.00004) == "under 0.01%" and N.fmt_share(0.5) == "50%"
    assert N.fmt_share(-0.00004) == "above \u22120.01%"
    assert N.fmt_signed_points(0.232) == "+23.2" and N.fmt_signed_points(-0.041) == "\u22124.1"
    assert N.fmt_signed_points(0.0001) == "0.0"


def test_fmt_metric():
    assert N.fmt_metric(0.53125) == "0.531" and N.fmt_metric(1234.4) == "1,234" and N.fmt_metric(-98.76) == "\u221298.8"
    assert N.fmt_metric(1379.2) == "1,379"  # never fewer digits than the whole part
    assert N.fmt_metric(0.0001234) == "1.23 \u00d7 10\u207b\u2074"
    assert N.fmt_metric(0.5625, "% of groups") == "56.2%" and N.fmt_metric(0.001, "% of tokens") == "0.1%"
    assert N.fmt_metric(0) == "0" and N.fmt_metric(None) == "–" and N.fmt_metric(math.nan) == "–"


def test_plain_num_param_text_and_round_sig():
    assert N.plain_num(1e-5) == "1e-05" and N.plain_num(0.2) == "0.2" and N.plain_num(2.5e7) == "2.5e+07"
    assert N.plain_num(3) == "3" and N.plain_num("x") == "x" and N.plain_num(True) == "True"
    assert N.plain_num(0.123456789, 3) == "0.123" and N.plain_num(1234.0, 3) == "1.23e+03"
    assert N.param_text(0.28) == "0.28" and N.param_text(8) == "8"
    assert N.plain_num(800.0) == "800" and N.plain_num(2e-6) == "2e-06" and N.plain_num(1e6) == "1e+06"  # as :g
    assert N.round_sig(0.012345, 3) == 0.0123 and N.round_sig(123456.0, 2) == 120000.0
    assert isinstance(N.round_sig(3, 4), float)


def test_plain_fixed_and_plain_sci():
    """Python's fixed and exponent forms, byte for byte (:.3f, :.2e): ASCII minus, a rounded-to-zero negative signed."""
    assert N.plain_fixed(0.25, 3) == "0.250" and N.plain_fixed(0.53125, 4) == "0.5312"  # half to even, as :.4f
    assert N.plain_fixed(1234.5678, 1) == "1234.6" and N.plain_fixed(2.5, 0) == "2" and N.plain_fixed(3.5, 0) == "4"
    assert N.plain_fixed(-1.25, 1) == "-1.2" and N.plain_fixed(-0.0001, 3) == "-0.000" and N.plain_fixed(0, 2) == "0.00"
    assert N.plain_fixed(7, 1) == "7.0" and N.plain_fixed(math.inf, 2) == "inf" and N.plain_fixed(math.nan, 1) == "nan"
    assert N.plain_sci(0.0003) == "3.00e-04" and N.plain_sci(1e-5, 1) == "1.0e-05" and N.plain_sci(0) == "0.00e+00"
    assert N.plain_sci(-12345.0) == "-1.23e+04" and N.plain_sci(5e-4, 0) == "5e-04"


def test_fractions_words_and_tex():
    assert N.fraction_text(0.0005) == "1/2000" and N.fraction_text(0.5) == "1/2" and N.fraction_text(3.0) == "3"
    assert N.fraction_text(3.14159e-7) == "3.142 \u00d7 10\u207b\u2077"  # no fraction near it
    assert N.count_word(7) == "seven" and N.count_word(13) == "13" and N.count_word(0) == "no"
    assert N.tex_num(-1234.5) == "-1234" and N.tex_num(2e-5) == r"2\times 10^{-5}" and N.tex_num(1e-4) == "10^{-4}"
    assert N.tex_num(-1e-4) == "-10^{-4}" and N.tex_fraction(0.0005) == r"\frac{1}{2000}" and N.tex_fraction(0.3) == r"\frac{3}{10}"
    assert N.tex_fraction(3.14159e-7) == r"3.142\times 10^{-7}"


# --------------------------------------------------------------------------- the browser's port

#: Values the port must write as the Python does: signs, zero, integers and floats, tiny, large,
#: values on a rounding edge, and what a view may be handed (null, NaN, infinities).
VALUES = [0.0, 1.0, -1.0, 0.5, 1e-6, -1.5e-4, 0.0012345, 0.7246, -0.7246, 12.5, 1234.0, 12345.6, 1.0e-9,
          3.14159, -2.5e7, 0.001, 1 / 3, 2 / 3, 0.9995, 999.95, 1379.2, 99999.5, 123456789.0, -0.000999,
          7, 1e12 + 2, 0.125, 4.35, 2.675, 1e-3 - 1e-12]
UNITS = ["", "tokens", "% of tokens", "%"]


def run_js(calls: list) -> list:
    runner = r"""
const m = require(process.argv[1]);
const calls = JSON.parse(process.argv[2]);
process.stdout.write(JSON.stringify(calls.map(([fn, ...args]) => m[fn](...args.map((a) => a === "NaN" ? NaN : a)))));
"""
    proc = subprocess.run([NODE, "-e", runner, str(COMMON_JS), json.dumps(calls)], capture_output=True, text=True,
                          timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


@pytest.mark.skipif(NODE is None, reason="node is not installed")
def test_the_browser_formats_numbers_as_the_python_does():
    calls, expected = [], []
    for v in VALUES:
        for digits in (3, 4):
            calls += [["fmt", v, digits], ["fmtSigned", v, digits]]
            expected += [N.fmt_num(v, digits), N.fmt_signed(v, digits)]
        calls += [["fmtObjective", v, False], ["fmtObjective", v, True]]
        expected += [N.fmt_objective(v, 4), N.fmt_objective(v, 4, signed=True)]
        for unit in UNITS:
            calls.append(["fmtMetric", v, unit])
            expected.append(N.fmt_metric(v, unit))
    for v in (None, "NaN"):
        calls += [["fmt", v, 4], ["fmtMetric", v, ""], ["fmtObjective", v, False]]
        expected += ["–", "–", "–"]
    got = run_js(calls)
    wrong = [f"{c}: browser {g!r}, python {e!r}" for c, g, e in zip(calls, got, expected) if g != e]
    assert not wrong, "\n".join(wrong)
