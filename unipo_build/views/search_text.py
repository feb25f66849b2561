"""Formulas in the search index as text a reader can read.

Material's search plugin indexes each page's HTML before the browser has typeset its formulas,
so a result would show ``\\(\\hat{A}_{i,t}\\)``. After the build, :func:`plain_formulas` replaces
every ``\\( .. \\)`` and ``\\[ .. \\]`` of the index with its Unicode reading (``Â_i,t``), written
by pylatexenc's LaTeX-to-text converter; the hook (``unipo_build/hooks.py``) rewrites
``search/search_index.json`` with it.
"""

from __future__ import annotations

import html
import json
import re
from functools import lru_cache
from pathlib import Path

from pylatexenc.latex2text import LatexNodes2Text

_MATH = re.compile(r"\\\((.+?)\\\)|\\\[(.+?)\\\]", re.S)


@lru_cache(maxsize=4096)
def tex_to_text(tex: str) -> str:
    """The Unicode reading of a formula: '\\hat{A}_{i,t}' -> 'Â_i,t'; the source itself if it
    cannot be read."""
    try:
        text = LatexNodes2Text(math_mode="text", strict_latex_spaces=True).latex_to_text(tex)
    except Exception:  # pylatexenc raises its own parse errors on malformed input
        return tex
    return re.sub(r"\s+", " ", text).strip()


def plain_formulas(text: str) -> str:
    """``text`` (HTML from the index) with every formula replaced by its reading, HTML-escaped."""
    def one(match: re.Match) -> str:
        tex = html.unescape(match.group(1) if match.group(1) is not None else match.group(2))
        return html.escape(tex_to_text(tex), quote=False)

    return _MATH.sub(one, text)


def rewrite_index(path: Path) -> int:
    """Rewrite a built ``search_index.json`` in place; returns how many entries changed."""
    index = json.loads(path.read_text(encoding="utf-8"))
    changed = 0
    for doc in index.get("docs", []):
        for key in ("title", "text"):
            value = doc.get(key)
            if isinstance(value, str) and "\\" in value:
                plain = plain_formulas(value)
                if plain != value:
                    doc[key] = plain
                    changed += 1
    path.write_text(json.dumps(index, ensure_ascii=False, separators=(",", ":")), encoding="utf-8")
    return changed
