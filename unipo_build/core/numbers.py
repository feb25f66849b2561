"""Numbers as a reader sees them: in prose, in plain text and inside formulas. Pure functions, no HTML.

The project's one number formatter. Every other module imports from here, and tests/test_numbers.py
scans unipo_build/ and training/ for number formatting anywhere else (a format spec such as ``:.2f``,
``:,`` or ``:.1%``, ``'%.2f' % x``, ``format(x, '.2f')``, ``str(round(x, 2))``). The formatters, by
what they write:

- :func:`fmt_num`: a number for prose (true minus, thousands separators, significant digits, tiny
  values as 2.49 × 10⁻⁵); :func:`fmt_signed` with its sign; :func:`fmt_objective` for an objective
  or a contribution (≈ 0 for rounding noise); :func:`fmt_metric` for a logged metric with its unit
  (the Training Explorer's read-outs);
- :func:`fmt_fixed`: a fixed number of decimals (p-values, the playgrounds' settings);
- :func:`fmt_pct`: a fraction as a percentage (fixed decimals, or as many as a reader needs),
  :func:`fmt_share` a share that may be tiny, :func:`fmt_signed_points` a change in percentage points;
- :func:`plain_num`: Python's general form (``1e-05``, ``0.2``) for plain text: the CLI, notes
  about settings, a parameter in a label (:func:`param_text`); :func:`plain_fixed` and
  :func:`plain_sci` Python's fixed and exponent forms (``0.250``, ``3.00e-04``): the trainer's
  progress lines, the CLI's messages;
- :func:`fraction_text`, :func:`count_word`: a weight as 1/2000, a count as a word;
- :func:`tex_num`, :func:`tex_fraction`: a number inside a formula (the registry's worked examples
  use them too, so a formula on a page and the same formula in a card print a number the same way);
- :func:`round_sig`: a float rounded to significant digits, for data a chart or a view reads (not text).

In the browser, ``unipo_build/site/views/views-common.js`` ports :func:`fmt_num`, :func:`fmt_signed`,
:func:`fmt_objective` and :func:`fmt_metric` (``fmt``, ``fmtSigned``, ``fmtObjective``,
``fmtMetric``); tests/test_numbers.py runs the port in node on a table of values and compares its
strings with these.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

_SUPERSCRIPT = str.maketrans("-0123456789", "\u207b\u2070\u00b9\u00b2\u00b3\u2074\u2075\u2076\u2077\u2078\u2079")
MINUS = "\u2212"
#: Below this, a logged objective or contribution is float32 rounding noise around zero.
NOISE = 1e-7


def fmt_num(value: float | int | None, digits: int = 3, minus: str = MINUS) -> str:
    """A number for prose: integers with thousands separators, floats to ``digits`` significant
    digits (0.0123, 1.5, 12.4), tiny ones as 2.49 × 10⁻⁵; negative numbers with a true minus sign
    (``minus="-"`` for ASCII)."""
    if value is None:
        return "–"
    if isinstance(value, (bool, np.bool_)):
        return str(bool(value)).lower()
    if isinstance(value, (int, np.integer)):
        return f"{int(value):,}".replace("-", minus)
    x = float(value)
    if not math.isfinite(x):
        return str(x)
    if x == 0:
        return "0"
    if x.is_integer() and abs(x) < 1e15:
        return f"{int(x):,}".replace("-", minus)
    if abs(x) < 1e-3:
        mantissa, exponent = f"{x:.{max(1, digits) - 1}e}".split("e")
        mantissa = mantissa.rstrip("0").rstrip(".") if "." in mantissa else mantissa
        return f"{mantissa} × 10{str(int(exponent)).translate(_SUPERSCRIPT)}".replace("-", minus)
    text = np.format_float_positional(x, precision=max(1, digits), unique=False, fractional=False, trim="-")
    if text in ("-0", "0"):
        return "0"
    whole, _, frac = text.partition(".")
    if len(whole.lstrip("-")) > 3:
        sign = "-" if whole.startswith("-") else ""
        whole = sign + f"{int(whole.lstrip('-')):,}"
    return (whole + ("." + frac if frac else "")).replace("-", minus)


def fmt_objective(value: float | None, digits: int = 4, signed: bool = False) -> str:
    """An objective or a contribution: '≈ 0' when it is rounding noise (sums of float32 values
    that cancel exactly in exact arithmetic), else :func:`fmt_num` (:func:`fmt_signed` with
    ``signed``: the Step Inspector's contributions, +0.01476)."""
    if value is None:
        return "–"
    if abs(value) < NOISE:
        return "\u2248 0"
    return fmt_signed(value, digits) if signed else fmt_num(value, digits)


def fmt_signed(value: float | None, digits: int = 3) -> str:
    """:func:`fmt_num` with a '+' on a positive number that does not print as 0 (−0.25, 0, +0.25);
    None prints as '–'."""
    text = fmt_num(value, digits)
    return "+" + text if value is not None and value > 0 and text != "0" else text


def _small_share(value: float) -> str:
    """A non-zero share under 1% as a reader can tell it from 0: two significant digits (0.095%, 0.03%),
    under 0.01% as 'under 0.01%' (a negative one as 'above −0.01%')."""
    if abs(value) < 1e-4:
        return "under 0.01%" if value > 0 else f"above {MINUS}0.01%"
    return f"{fmt_num(100 * value, 2)}%"


def fmt_pct(value: float | None, decimals: int | None = 1, signed: bool = False, small: int | None = None) -> str:
    """A fraction as a percentage: 0.4313 -> '43.1%' (``decimals=0``: '43%'); ``small``: the decimals of
    a share under 1% (a clip fraction: ``fmt_pct(x, 1, small=2)`` writes 0.0047 as '0.47%').

    A non-zero fraction that would round to 0 is written as :func:`fmt_share` writes it (0.0003 ->
    '0.03%', not '0.0%'). ``decimals=None``: as many decimals as a reader needs, whole percent
    except near 0 and 100 (0%, 0.4%, 43%, 99.6%, 100%), and a share that is not 1 never reads as
    100% (0.9996 -> 'over 99.9%'). ``signed``: a change, with '+' or a true minus unless it prints
    as zero (+5%, −30%, 0%). None prints as '–'.
    """
    if value is None:
        return "–"
    x = float(value)
    if small is not None and abs(x) < 0.01:
        decimals = small
    if signed:
        text = fmt_pct(abs(x), decimals)
        return text if x == 0 or text.strip("0.%") == "" else ("+" if x > 0 else MINUS) + text
    if decimals is None:
        pct = 100.0 * x
        if pct == 0.0 or pct == 100.0 or 1.0 <= pct <= 99.0:
            return f"{pct:.0f}%"
        text = fmt_pct(x, 1)
        return "over 99.9%" if text == "100.0%" and pct < 100 else text
    text = f"{100 * x:.{decimals}f}"
    if x != 0 and math.isfinite(x) and float(text) == 0:
        return _small_share(x)
    return text + "%"


def fmt_share(value: float, decimals: int = 0) -> str:
    """:func:`fmt_pct` for a share that may be tiny: under 1% with two significant digits (0.095%), under
    0.01% as 'under 0.01%', so that a small share never reads as 0%."""
    if value != 0 and abs(value) < 0.01:
        return _small_share(value)
    return fmt_pct(value, decimals)


def fmt_fixed(value: float, decimals: int, signed: bool = False, minus: str = MINUS) -> str:
    """A number with a fixed number of decimals: 0.25 -> '0.250' (3), −4.1 with a true minus
    (``minus="-"`` for ASCII). A value that prints as zero has no sign ('0.00', not '−0.00');
    ``signed`` puts '+' on a positive one (+23.2)."""
    text = f"{float(value):.{decimals}f}"
    if float(text) == 0:
        return f"{0:.{decimals}f}"
    if signed and not text.startswith("-"):
        text = "+" + text
    return text.replace("-", minus)


def fmt_signed_points(value: float, decimals: int = 1) -> str:
    """A change of a fraction in percentage points with its sign: +23.2, −4.1, 0.0 (a drop reads as
    a drop)."""
    return fmt_fixed(100 * float(value), decimals, signed=True)


def fmt_metric(value: float | None, unit: str = "") -> str:
    """A logged metric for a chip, a read-out or a legend: 3 significant digits as :func:`fmt_num`
    (a tiny value as 2.49 × 10⁻⁵), but never fewer than its whole part has (1,379, not 1,380); a
    fraction as a percentage when its unit starts with '%' ('% of tokens': 0.5625 -> '56.2%').
    None, NaN and infinities print as '–'."""
    if value is None or not math.isfinite(value):
        return "–"
    percent = unit.startswith("%")
    x = 100.0 * value if percent else value
    digits = max(3, int(math.floor(math.log10(abs(x)))) + 1) if x else 3
    return fmt_num(x, digits) + ("%" if percent else "")


def plain_num(value, digits: int = 6) -> str:
    """A number in Python's general form, to ``digits`` significant digits: 1e-05, 0.2, 2.5e+07; an
    int as it is, and anything else as ``str``. For plain text (the CLI, notes on a trainer's
    settings, a parameter in a label), where a reader expects what Python prints."""
    if isinstance(value, bool) or not isinstance(value, (float, np.floating)):
        return str(value)
    return f"{float(value):.{digits}g}"


def plain_fixed(value: float, decimals: int) -> str:
    """A number with ``decimals`` decimals as Python prints it (``:.3f``): 0.25 -> '0.250', ASCII minus, and a
    negative that rounds to zero keeps its sign ('-0.000', where :func:`fmt_fixed` writes '0.000'). For plain
    text whose bytes are fixed: the trainer's progress lines and log messages, the CLI's messages."""
    return f"{float(value):.{decimals}f}"


def plain_sci(value: float, decimals: int = 2) -> str:
    """A number in Python's exponent form (``:.2e``) with ``decimals`` decimals: 0.0003 -> '3.00e-04',
    ASCII minus. For plain text: a learning rate in the trainer's progress lines."""
    return f"{float(value):.{decimals}e}"


def round_sig(value: float, digits: int = 4) -> float:
    """``value`` rounded to ``digits`` significant digits (0.012345 -> 0.01235): data a chart or a
    view reads, kept short in the page's JSON. Not text."""
    return float(f"{float(value):.{digits}g}")


def fraction_text(value: float, max_denominator: int = 100_000, rel_tol: float = 1e-6) -> str:
    """A weight as a fraction ('1/2000') when it is one (to ``rel_tol``: logged weights are
    float32), else a number."""
    frac = Fraction(float(value)).limit_denominator(max_denominator)
    if frac.numerator != 0 and abs(float(frac) - value) <= rel_tol * abs(value):
        return f"{frac.numerator}/{frac.denominator}" if frac.denominator != 1 else str(frac.numerator)
    return fmt_num(value, 4)


def tex_num(value: float, digits: int = 4) -> str:
    """A number inside a formula: ASCII minus, no thousands separators, tiny ones as a x 10^{-k}."""
    x = float(value)
    if x != 0 and abs(x) < 1e-3:
        mantissa, exponent = f"{x:.{max(1, digits) - 1}e}".split("e")
        mantissa = mantissa.rstrip("0").rstrip(".") if "." in mantissa else mantissa
        head = "" if mantissa in ("1", "-1") else mantissa + r"\times "
        if mantissa == "-1":
            head = "-"
        return head + "10^{" + str(int(exponent)) + "}"
    return fmt_num(x, digits, minus="-").replace(",", "")


def tex_fraction(w: float) -> str:
    """A weight inside a formula: \\frac{1}{2000} when it is a fraction, else :func:`tex_num`."""
    text = fraction_text(w)
    if "/" in text:
        a, b = text.split("/")
        return r"\frac{" + a + "}{" + b + "}"
    return tex_num(w)


def param_text(value) -> str:
    """A parameter value as it appears in a formula or a label: shortest exact decimal
    (:func:`plain_num`, by the name the registry's kinds call it)."""
    return plain_num(value)


NUMBER_WORDS = ("no", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven",
                "twelve")


def count_word(n: int) -> str:
    """'seven' for 7; digits from 13 on."""
    return NUMBER_WORDS[n] if 0 <= n < len(NUMBER_WORDS) else str(n)
