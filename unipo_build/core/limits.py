"""The bounds every input of the build stays within: identifiers, text lengths, numbers.

Runs, specs, imports and task files are other people's files, and the site built from them is
published. Whatever the validator accepts, the build must carry: so the schemas close what was
free, and these constants say how far. They are documented in docs/reference/schema.md.

Numbers
    Every logged number is finite and at most :data:`MAX_MAGNITUDE` (10^15) in absolute value.
    No quantity of a training run comes near it (a diverging run's gradient norm is far below),
    and it leaves float64 room for what the site does with logged values: its square is 10^30,
    a sum of a billion squares 10^39, a product of a step index and a value in the chart
    downsampler 10^31, all far from the float64 limit of 1.8 x 10^308.
    Integers are within +-(2^53 - 1) (:data:`MAX_INT`), which JavaScript holds exactly.
    Log-probabilities lie in [:data:`LOGPROB_MIN`, :data:`LOGPROB_MAX`]: the site takes
    exp of their differences (importance ratios, KL estimators), and exp(300) = 2 x 10^130 times
    any other logged number, even squared, stays finite. A probability of e^-300 (10^-130) is far
    below the smallest float32 (10^-45), so no sampled token's log-probability is near the floor;
    the upper bound allows rounding above 0 in low-precision logs.

Text
    A string is Unicode text: no lone surrogates (a JSON escape such as ``\\ud800`` without its
    pair), which cannot be written as UTF-8. Lengths are capped by what a field holds:
    :data:`NAME_MAX` for names and keys, :data:`LINE_MAX` for one-line labels and paths,
    :data:`TEXT_MAX` for descriptions and notes, :data:`DOC_MAX` for prompts and responses and
    any other string, :data:`TOKEN_MAX` for one token's text. Nesting is at most
    :data:`MAX_DEPTH` levels.

Identifiers
    Run ids, algorithm ids in a run header and presets match :data:`IDENTIFIER`: letters,
    digits, ``_``, ``.``, ``-``, starting with a letter or digit, at most 128 characters.
"""

from __future__ import annotations

import math
import re
from typing import Annotated, Any, Iterator

from pydantic import Field

from unipo_build.core.numbers import MINUS, fmt_num, plain_num

MAX_MAGNITUDE = 1e15
MAX_INT = 2**53 - 1
LOGPROB_MIN = -300.0
LOGPROB_MAX = 1e-3

NAME_MAX = 200
LINE_MAX = 4_096
TEXT_MAX = 100_000
DOC_MAX = 1_000_000
TOKEN_MAX = 1_000
MAX_DEPTH = 64

IDENTIFIER_MAX = 128
IDENTIFIER = rf"^[A-Za-z0-9][A-Za-z0-9_.-]{{0,{IDENTIFIER_MAX - 1}}}$"

Finite = Annotated[float, Field(allow_inf_nan=False, ge=-MAX_MAGNITUDE, le=MAX_MAGNITUDE)]
LogProb = Annotated[float, Field(allow_inf_nan=False, ge=LOGPROB_MIN, le=LOGPROB_MAX)]
Identifier = Annotated[str, Field(pattern=IDENTIFIER)]
Name = Annotated[str, Field(max_length=NAME_MAX)]
Line = Annotated[str, Field(max_length=LINE_MAX)]
Text = Annotated[str, Field(max_length=TEXT_MAX)]
Doc = Annotated[str, Field(max_length=DOC_MAX)]
TokenText = Annotated[str, Field(max_length=TOKEN_MAX)]

_SURROGATE = re.compile("[\ud800-\udfff]")


def string_problem(text: str, limit: int = DOC_MAX) -> str | None:
    """What is wrong with a string as input text (a lone surrogate, too long), or None."""
    match = _SURROGATE.search(text)
    if match:
        return (f"holds a lone surrogate U+{ord(match.group()):04X} at character {match.start()}, "
                "which is not Unicode text")
    if len(text) > limit:
        return f"is {fmt_num(len(text))} characters long; at most {fmt_num(limit)} are allowed"
    return None


def number_problem(value: Any) -> str | None:
    """What is wrong with a parsed number (NaN, infinite, out of range), or None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, float):
        if not math.isfinite(value):
            return "NaN or infinity is not allowed here"
        if abs(value) > MAX_MAGNITUDE:
            bound = plain_num(MAX_MAGNITUDE).replace("e+", "e")
            return f"{value!r} is outside \u00b1{bound}, the range the site's math carries"
    elif isinstance(value, int) and abs(value) > MAX_INT:
        digits = len(str(abs(value)))
        return (f"an integer of {digits} digits is outside \u00b1(2^{MAX_INT.bit_length()} - 1), the range JavaScript "
                "holds exactly")
    return None


def _plain_numbers_within_limits(items: list) -> bool:
    """True when a list holds only floats, or only ints (not bools), each of which :func:`number_problem`
    accepts: the token arrays of a step file, checked without visiting each value. False sends the list
    down the value-by-value path, which locates what is wrong."""
    if not items:
        return False
    kind = type(items[0])
    if kind is float:
        if not all(type(x) is float for x in items):
            return False
        # A finite sum means no NaN and no infinity (either makes the sum non-finite); values within
        # the bound cannot overflow a float sum of any list that fits in memory; values beyond it are
        # caught by the max, or make the sum infinite (the slow path then names them).
        return math.isfinite(sum(items)) and max(map(abs, items)) <= MAX_MAGNITUDE
    if kind is int:
        return all(type(x) is int for x in items) and max(map(abs, items)) <= MAX_INT
    return False


def problems(value: Any, loc: tuple = (), *, max_nodes: int | None = None) -> Iterator[tuple[tuple, str]]:
    """(location, message) of every value in parsed JSON or YAML that no schema may accept.

    Checks numbers, strings, keys and nesting everywhere, in unknown fields too, so a value kept
    as it was logged is as safe as a typed one. With ``max_nodes``, a document of more values
    than that is one problem (YAML aliases can expand a small file enormously).
    """
    stack = [(value, loc)]
    seen = 0
    while stack:
        item, where = stack.pop()
        seen += 1
        if max_nodes is not None and seen > max_nodes:
            yield loc, f"holds more than {fmt_num(max_nodes)} values"
            return
        if len(where) > MAX_DEPTH:
            yield where, f"nested deeper than {MAX_DEPTH} levels"
            continue
        if isinstance(item, str):
            if (message := string_problem(item)) is not None:
                yield where, message
        elif isinstance(item, dict):
            for key, sub in reversed(list(item.items())):
                if isinstance(key, str) and (message := string_problem(key, NAME_MAX)) is not None:
                    yield where, f"a key {message}"
                    continue
                stack.append((sub, where + (key,)))
        elif isinstance(item, list):
            if _plain_numbers_within_limits(item):
                seen += len(item)  # a token array: checked at once, counted value by value
                if max_nodes is not None and seen > max_nodes:
                    yield loc, f"holds more than {fmt_num(max_nodes)} values"
                    return
                continue
            stack.extend((sub, where + (i,)) for i, sub in reversed(list(enumerate(item))))
        elif (message := number_problem(item)) is not None:
            yield where, message


def describe(name: str) -> str:
    """A bound of this module as prose writes it: ``MAX_MAGNITUDE`` -> 10<sup>15</sup>, ``MAX_INT``
    -> 2<sup>53</sup> − 1, ``LINE_MAX`` -> 4,096, ``LOGPROB_MIN`` -> −300. KeyError for a name that
    is not a numeric bound of this module."""
    value = globals().get(name)
    if not name.isupper() or isinstance(value, bool) or not isinstance(value, (int, float)):
        raise KeyError(f"unipo_build.core.limits has no numeric bound {name!r}")
    if name == "MAX_INT":
        return f"2<sup>{MAX_INT.bit_length()}</sup> \u2212 1"
    if isinstance(value, float) and value >= 10 and math.log10(value).is_integer():
        return f"10<sup>{int(math.log10(value))}</sup>"
    return plain_num(value).replace("-", MINUS) if isinstance(value, float) else fmt_num(value)


def format_bound(value: float) -> str:
    """A bound of a schema as the reference tables write it (HTML): this module's named bounds
    by their form (10<sup>15</sup>, 2<sup>53</sup> − 1, −300), other numbers in the shortest form
    with thousands separators and a real minus."""
    for name in ("MAX_MAGNITUDE", "MAX_INT", "LOGPROB_MIN", "LOGPROB_MAX"):
        bound = globals()[name]
        if value == bound:
            return describe(name)
        if value == -bound and bound > 0:
            text = describe(name)
            return "\u2212" + (f"({text})" if " " in text else text)
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        value = int(value)
    return fmt_num(value) if isinstance(value, int) else plain_num(value).replace("-", MINUS)
