"""The site's HTML helpers: tables, notes, formulas, legends.

Every view builds its HTML from these, so a note, a table or a legend looks the same on every
page. Text from a log or a spec goes through ``render.escape_text`` here; TeX goes into
``<span class="arithmatex">\\(..\\)</span>`` / ``<div class="arithmatex">\\[..\\]</div>``, escaped as
text, for unipo.js to typeset with KaTeX. Numbers are not formatted here: views import
``unipo_build.core.numbers``, the project's one number formatter.
"""

from __future__ import annotations

from typing import Iterable, Sequence

from unipo_build.site.render import escape_text

__all__ = ["escape_text", "table", "two_lines", "note_html", "math_inline", "math_display", "panel_grid", "legend_html",
           "code", "join_words"]

NOTE_TITLES = {"note": "Note", "warning": "Not in this build", "info": "About this figure"}


def table(head: Sequence[str], rows: Iterable[Sequence[str]], caption: str | None = None,
          numeric: Sequence[int] = (), row_attrs: Sequence[str] | None = None) -> str:
    """A Material-styled table (no class on <table>, so Material styles and wraps it).

    ``head`` and ``rows`` hold HTML (callers escape what comes from a log or a spec).
    ``numeric``: column indices aligned right. ``row_attrs``: attributes of each body row.
    """
    def cell(tag: str, i: int, html: str) -> str:
        align = ' style="text-align:right"' if i in numeric else ""
        return f"<{tag}{align}>{html}</{tag}>"

    cap = f'<caption style="text-align:left">{escape_text(caption)}</caption>' if caption else ""
    thead = "<tr>" + "".join(cell("th", i, h) for i, h in enumerate(head)) + "</tr>"
    body = "".join(f"<tr{(' ' + row_attrs[n]) if row_attrs else ''}>" + "".join(cell("td", i, c) for i, c in enumerate(r))
                   + "</tr>" for n, r in enumerate(rows))
    # A bare <table>: Material's script wraps it in its own horizontally scrolling container.
    return f"<table>{cap}<thead>{thead}</thead><tbody>{body}</tbody></table>"


def two_lines(main: str, detail: str = "") -> str:
    """A table cell: a figure, and under it in small type what it summarises (both escaped)."""
    if not detail:
        return escape_text(main)
    return f'{escape_text(main)}<br><span style="font-size:.85em;opacity:.8">{escape_text(detail)}</span>'


def note_html(text: str, kind: str = "note", title: str | None = None, css_class: str = "unipo-course-note") -> str:
    """A Material admonition with escaped text."""
    title = title or NOTE_TITLES.get(kind, "Note")
    return (f'<div class="admonition {escape_text(kind)} {escape_text(css_class)}"><p class="admonition-title">'
            f"{escape_text(title)}</p><p>{escape_text(text)}</p></div>")


def template_fold(summary: str, html: str, kind: str = "abstract") -> str:
    """``html`` folded under ``summary`` in a Material collapsible of ``kind`` (as ``??? abstract`` writes
    it), its body in a <template> that unipo.js puts in the page when the reader opens the fold (its
    formulas typeset, its charts drawn, its views started then): a view few readers open, such as a
    chapter's second Algorithm Explainer, costs the page no DOM until it is opened."""
    return (f'<details class="{escape_text(kind)}"><summary>{escape_text(summary)}</summary>'
            f'<template class="unipo-fold-body">{html}</template></details>')


def math_inline(tex: str) -> str:
    return f'<span class="arithmatex">{escape_text(chr(92) + "(" + tex + chr(92) + ")")}</span>'


def math_display(tex: str, css_class: str = "") -> str:
    cls = "arithmatex" + (f" {css_class}" if css_class else "")
    return f'<div class="{escape_text(cls)}">{escape_text(chr(92) + "[" + tex + chr(92) + "]")}</div>'


def code(text) -> str:
    return f"<code>{escape_text(text)}</code>"


def panel_grid(panels: Sequence[str], gap: str = "1.2rem 1.6rem") -> str:
    """Chart panels side by side where the column is wide enough (15rem each at least), stacked on
    a phone."""
    return ('<div class="unipo-course-grid" style="display:grid;grid-template-columns:repeat(auto-fit,minmax(15rem,1fr));'
            f'gap:{gap}">' + "".join(panels) + "</div>")


def legend_html(entries: Sequence[tuple[str, str, Sequence[int] | None]], css_class: str = "unipo-legend-row") -> str:
    """A legend that wraps on a narrow screen: (label, colour, dash) per entry. ``dash`` None draws
    a square swatch, a dash list ([1, 0] solid, [6, 3] dashed) a short line; colour
    ``currentColor`` draws in the text colour. Labels are escaped."""
    items = []
    for label, colour, dash in entries:
        c = escape_text(colour)
        if dash is None:
            mark = (f'<svg width="12" height="12" aria-hidden="true"><rect width="12" height="12" rx="2" '
                    f'fill="{c}"/></svg>')
        else:
            pattern = "" if dash[1] == 0 else f' stroke-dasharray="{",".join(str(d) for d in dash)}"'
            mark = (f'<svg width="28" height="10" aria-hidden="true"><line x1="1" y1="5" x2="27" y2="5" '
                    f'stroke="{c}" stroke-width="2.5"{pattern}/></svg>')
        items.append(f'<span style="display:inline-flex;align-items:center;gap:.4em;margin:0 1.1em .2em 0;'
                     f'white-space:nowrap">{mark}{escape_text(label)}</span>')
    return (f'<p class="{escape_text(css_class)}" style="margin:.4em 0;text-align:left;font-size:.85em">'
            f'{"".join(items)}</p>')


def join_words(items: Sequence[str]) -> str:
    """'a; b; and c' for clauses that may hold commas."""
    items = list(items)
    if len(items) <= 1:
        return "".join(items)
    return "; ".join(items[:-1]) + "; and " + items[-1]

