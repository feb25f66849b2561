"""The grammar of a kind's explainer expressions (registry_base's :func:`explain` data): the names an expression may
start with, the functions it may call, and the reader that holds it to the grammar explainer.js evaluates
(``evaluate``). Split from ``registry_base`` along that seam: it needs nothing of a kind, and registry_base imports it."""

from __future__ import annotations

import re
from typing import Any, Callable

#: The names an explainer expression may start with, and the functions it may call.
EXPLAIN_ROOTS = ("token", "calc", "response", "group", "step", "update", "length", "params", "counts",
                 "ratio_symbol")
EXPLAIN_FUNCTIONS = ("mean", "std", "min", "max", "sum", "round", "count", "has", "raw", "fmtq", "nums", "join")


_TOKEN = re.compile(
    r"\s*(?:(?P<num>\d+(?:\.\d*)?(?:[eE][+-]?\d+)?)|(?P<str>'(?:[^'\\]|\\.)*')"
    r"|(?P<name>[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)(?P<call>\s*\()?"
    r"|(?P<op>==|!=|<=|>=|&&|\|\||[-+*/<>!?:(),]))")


class _Unreadable(ValueError):
    pass


def _tokens(expr: str) -> list[tuple[str, str]]:
    """(sort, text) of each token: num, str, name, call (a function's name and its '('), op."""
    out, pos = [], 0
    while expr[pos:].strip():
        m = _TOKEN.match(expr, pos)
        if m is None or m.end() == pos:
            raise _Unreadable(f"cannot read {expr[pos:].strip()[:20]!r} in {expr!r}")
        pos = m.end()
        if m.group("name"):
            out.append(("call" if m.group("call") else "name", m.group("name")))
        else:
            sort = next(k for k in ("num", "str", "op") if m.group(k) is not None)
            out.append((sort, m.group(sort)))
    return out


def _parse(expr: str, toks: list[tuple[str, str]]) -> None:
    """Reads ``toks`` with the grammar explainer.js evaluates (``evaluate``), or raises _Unreadable."""
    at = 0

    def peek(*ops: str) -> bool:
        return at < len(toks) and toks[at][0] == "op" and toks[at][1] in ops

    def take(op: str) -> None:
        nonlocal at
        if not peek(op):
            found = toks[at][1] if at < len(toks) else "the end"
            raise _Unreadable(f"expected {op!r}, found {found!r} in {expr!r}")
        at += 1

    def primary() -> None:
        nonlocal at
        if at >= len(toks):
            raise _Unreadable(f"the expression ends too soon: {expr!r}")
        sort, text = toks[at]
        at += 1
        if sort in ("num", "str", "name"):
            return
        if sort == "call":
            while not peek(")"):
                ternary()
                if not peek(")"):
                    take(",")
            take(")")
        elif text == "(":
            ternary()
            take(")")
        elif text in ("-", "!"):
            primary()
        else:
            raise _Unreadable(f"unexpected {text!r} in {expr!r}")

    def binary(operand: Callable[[], None], *ops: str, once: bool = False) -> Callable[[], None]:
        def read() -> None:
            nonlocal at
            operand()
            while peek(*ops):
                at += 1
                operand()
                if once:
                    break
        return read

    product = binary(primary, "*", "/")
    total = binary(product, "+", "-")
    comparison = binary(total, "==", "!=", "<", "<=", ">", ">=", once=True)
    disjunction = binary(binary(comparison, "&&"), "||")

    def ternary() -> None:
        nonlocal at
        disjunction()
        if peek("?"):
            at += 1
            ternary()
            take(":")
            ternary()

    ternary()
    if at < len(toks):
        raise _Unreadable(f"unexpected {toks[at][1]!r} in {expr!r}")


def expression_problem(expr: str) -> str | None:
    """What is wrong with an explainer expression (a name or function the browser does not know,
    something its grammar cannot read), or None."""
    try:
        toks = _tokens(expr)
        _parse(expr, toks)
    except _Unreadable as err:
        return str(err)
    for sort, name in toks:
        if sort == "call" and name not in EXPLAIN_FUNCTIONS:
            return f"unknown function {name!r} in {expr!r} (known: {', '.join(EXPLAIN_FUNCTIONS)})"
        if sort == "name" and name.split(".")[0] not in EXPLAIN_ROOTS and name not in ("null", "true", "false"):
            return f"unknown name {name!r} in {expr!r} (names start with {', '.join(EXPLAIN_ROOTS)})"
    return None


def placeholders(template: str) -> list[str] | str:
    """The expressions of a template's ``{...}`` placeholders, or what is wrong with its braces."""
    out, i = [], 0
    while i < len(template):
        if template[i] == "}":
            return f"a '}}' without its '{{' in {template!r}"
        if template[i] != "{":
            i += 1
            continue
        depth, j, quote = 1, i + 1, False
        while j < len(template) and depth:
            c = template[j]
            if quote:
                quote = c != "'" or template[j - 1] == "\\"
            elif c == "'":
                quote = True
            elif c == "{":
                depth += 1
            elif c == "}":
                depth -= 1
            j += 1
        if depth:
            return f"a '{{' without its '}}' in {template!r}"
        out.append(template[i + 1:j - 1])
        i = j
    return out


def _template_problem(template: Any) -> str | None:
    if isinstance(template, list):
        for case in template:
            if not isinstance(case, dict) or not isinstance(case.get("text"), str):
                return "a case without its text"
            problem = (expression_problem(case["when"]) if "when" in case else None) or _template_problem(case["text"])
            if problem:
                return problem
        return None if template else "cases() with no case"
    if not isinstance(template, str):
        return f"a text that is not a template: {template!r}"
    found = placeholders(template)
    if isinstance(found, str):
        return found
    for expr in found:
        if problem := expression_problem(expr):
            return problem
    return None
