"""Safe HTML helpers for build-time views.

Everything that comes from a log, a spec or a reader's own data reaches the page through
these functions: text and attribute values through :func:`escape_text`, data for the browser
through :func:`json_data` (JSON in an inert ``<template>`` element, escaped by
:func:`json_for_script`), charts through :func:`vega_embed`. They are pure: no MkDocs, no
global state.

Why ``<template>`` and not ``<script type="application/json">``: Material's instant navigation
re-creates every ``<script>`` of the new page's content without its attributes, so a JSON
script loses its ``type`` and ``id`` and is run as JavaScript (a SyntaxError). A template is
never run, keeps its attributes, is not displayed, and ``data-search-exclude`` keeps its text
out of the search index. The browser reads it with ``UNIPO.data(id)`` (overrides/assets/unipo.js).

The HTML they return is a single line. Inside an indented Markdown block (an admonition, a
content tab, a list item) Python-Markdown would still process a raw HTML line as inline text,
so macros do not put this HTML into the Markdown directly: they hand it to
``unipo_build.site.macros.protect_html``, which inserts it after Markdown has run.
"""

from __future__ import annotations

import html
import json
import re
from typing import Any

__all__ = ["escape_text", "isolate", "json_for_script", "json_data", "vega_embed", "figure", "CHART_ID_RE"]

#: Ids of chart containers and their data elements: safe in attributes, CSS selectors
#: and ``document.getElementById`` without escaping.
CHART_ID_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,127}$")

# Characters that could end a <script> element, start a tag, an entity or a comment inside a
# <template>, or that older JavaScript parsers treat as line terminators. In JSON they only occur inside strings,
# where the \uXXXX form means the same character.
_SCRIPT_UNSAFE = {
    "<": "\\u003c",
    ">": "\\u003e",
    "&": "\\u0026",
    "\u2028": "\\u2028",
    "\u2029": "\\u2029",
}
_SCRIPT_UNSAFE_RE = re.compile("[<>&\u2028\u2029]")


def escape_text(s: Any) -> str:
    """Escape a value for HTML text or a double- or single-quoted attribute value."""
    return html.escape(str(s), quote=True)


def isolate(text: str) -> str:
    """``text`` between FIRST STRONG ISOLATE and POP DIRECTIONAL ISOLATE (U+2068, U+2069), for a
    token's text inside a sentence, a chart label or a tooltip: a direction override in it (an
    unterminated U+202E) then ends with it instead of reversing what follows. Escape the result
    as any text (unipo_build/site/views/views-common.js ``isolate`` does the same in the browser)."""
    return f"\u2068{text}\u2069"


def json_for_script(obj: Any) -> str:
    """Serialize ``obj`` as JSON that is safe as the text of a ``<script>`` or ``<template>``.

    NaN and infinities are rejected (they are not JSON and ``JSON.parse`` fails on them).
    """
    text = json.dumps(obj, allow_nan=False, ensure_ascii=False, separators=(",", ":"))
    return _SCRIPT_UNSAFE_RE.sub(lambda m: _SCRIPT_UNSAFE[m.group(0)], text)


def _check_id(element_id: str) -> str:
    if not isinstance(element_id, str) or not CHART_ID_RE.match(element_id):
        raise ValueError(
            f"element id {element_id!r} must start with a letter and contain only letters, "
            "digits, '-' and '_' (at most 128 characters)"
        )
    return element_id


def json_data(obj: Any, *, data_id: str) -> str:
    """``obj`` as JSON in ``<template class="unipo-data" id=data_id>``; read it in the
    browser with ``UNIPO.data(data_id)``."""
    return (
        f'<template class="unipo-data" id="{escape_text(_check_id(data_id))}" data-search-exclude>'
        f"{json_for_script(obj)}</template>"
    )


def _classes(*names: str) -> str:
    parts: list[str] = []
    for name in names:
        parts.extend(p for p in str(name).split() if p)
    return escape_text(" ".join(parts))


def figure(html_: str, caption: str | None, *, css_class: str = "") -> str:
    """Wrap trusted ``html_`` in a ``<figure>``; the caption is escaped as text."""
    cap = f"<figcaption>{escape_text(caption)}</figcaption>" if caption else ""
    return f'<figure class="{_classes("unipo-figure", css_class)}">{html_}{cap}</figure>'


def chart_spec(chart: Any) -> dict:
    """An Altair chart as its Vega-Lite dict, without Altair's schema check.

    Altair checks a chart against the Vega-Lite JSON schema when it becomes a dict (and, in its debug
    mode, every part of it as it is made): a fifth of a build's time for charts the project's own code
    makes. A build turns the check off (``macros.define_env``); the tests keep it, on every chart of the
    built site at once (tests/test_site_build.py validates each embedded spec against Altair's schema).
    """
    return chart.to_dict(validate=False)


def vega_embed(
    spec: dict, *, chart_id: str, caption: str | None = None, css_class: str = ""
) -> str:
    """HTML for one Vega-Lite chart, rendered in the browser by ``overrides/assets/unipo.js``.

    A ``<div class="unipo-vega" data-spec-id=ID>`` container and the spec as JSON in a
    ``<template id=ID>`` (see :func:`json_data`); with a caption, both inside a ``<figure>``.
    """
    if not isinstance(spec, dict):
        raise TypeError(f"vega_embed expects a Vega-Lite spec as a dict, got {type(spec).__name__}")
    cid = escape_text(_check_id(chart_id))
    body = f'<div class="unipo-vega" data-spec-id="{cid}"></div>{json_data(spec, data_id=chart_id)}'
    if caption:
        return figure(body, caption, css_class=_join("unipo-chart", css_class))
    return f'<div class="{_classes("unipo-chart", css_class)}">{body}</div>'


def _join(*names: str) -> str:
    return " ".join(n for n in names if n)
