"""Formulas in the search index as text a reader can read.

Material's search plugin indexes each page's HTML before the browser has typeset its formulas,
so a result would show ``\\(\\hat{A}_{i,t}\\)``. After the build, :func:`plain_formulas` replaces
every ``\\( .. \\)`` and ``\\[ .. \\]`` of the index with its Unicode reading (``Â_i,t``), written
by pylatexenc's LaTeX-to-text converter; the hook (``unipo_build/hooks.py``) rewrites
``search/search_index.json`` with it.

Only the site's own formulas are read as TeX: those the built pages typeset (an ``arithmatex``
element). Text from a run or a spec that merely looks like a formula stays the text it was.
"""

from __future__ import annotations

import html
import json
import re
from functools import lru_cache
from pathlib import Path

from pylatexenc.latex2text import LatexNodes2Text

_MATH = re.compile(r"\\\((.+?)\\\)|\\\[(.+?)\\\]", re.S)
# arithmatex's wrapper around a formula the site typesets (pymdownx.arithmatex, generic mode)
_TYPESET = re.compile(r'<(?:span|div) class="arithmatex">\s*(\\\(.+?\\\)|\\\[.+?\\\])\s*</(?:span|div)>', re.S)


@lru_cache(maxsize=4096)
def tex_to_text(tex: str) -> str:
    """The Unicode reading of a formula: '\\hat{A}_{i,t}' -> 'Â_i,t'; the source itself if it
    cannot be read."""
    try:
        text = LatexNodes2Text(math_mode="text", strict_latex_spaces=True).latex_to_text(tex)
    except Exception:  # pylatexenc raises its own parse errors on malformed input
        return tex
    return re.sub(r"\s+", " ", text).strip()


def site_formulas(site_dir: Path) -> set[str]:
    """Every formula the built pages typeset, as it appears in their HTML (delimiters included)."""
    found: set[str] = set()
    for page in site_dir.rglob("*.html"):
        found.update(_squeeze(f) for f in _TYPESET.findall(page.read_text(encoding="utf-8", errors="replace")))
    return found


def _squeeze(formula: str) -> str:
    """Entities read and whitespace runs as one space: the index holds a page's text with its line
    breaks collapsed, and pages and index escape characters differently."""
    return re.sub(r"\s+", " ", html.unescape(formula)).strip()


def plain_formulas(text: str, known: set[str] | None = None) -> str:
    """``text`` (HTML from the index) with every formula replaced by its reading, HTML-escaped;
    ``known``: only these formulas (as in the pages' HTML), any other stays as it is."""
    def one(match: re.Match) -> str:
        if known is not None and _squeeze(match.group(0)) not in known:
            return match.group(0)
        tex = html.unescape(match.group(1) if match.group(1) is not None else match.group(2))
        return html.escape(tex_to_text(tex), quote=False)

    return _MATH.sub(one, text)


def rewrite_index(path: Path, known: set[str] | None = None) -> int:
    """Rewrite a built ``search_index.json`` in place (``known``: only the site's own formulas, see
    :func:`site_formulas`); returns how many entries changed."""
    index = json.loads(path.read_text(encoding="utf-8"))
    changed = 0
    for doc in index.get("docs", []):
        for key in ("title", "text"):
            value = doc.get(key)
            if isinstance(value, str) and "\\" in value:
                plain = plain_formulas(value, known)
                if plain != value:
                    doc[key] = plain
                    changed += 1
    path.write_text(json.dumps(index, ensure_ascii=False, separators=(",", ":")), encoding="utf-8")
    return changed
