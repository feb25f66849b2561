"""Formulas in the search index as text a reader can read.

Material's search plugin indexes each page's HTML before the browser has typeset its formulas,
so a result would show ``\\(\\hat{A}_{i,t}\\)``. After the build, :func:`plain_formulas` replaces
every ``\\( .. \\)`` and ``\\[ .. \\]`` of the index with its Unicode reading (``Â_i,t``), written
by pylatexenc's LaTeX-to-text converter; the hook (``unipo_build/site/hooks.py``) rewrites
``search/search_index.json`` with it.

Only the site's own formulas are read as TeX: those the built pages typeset (an ``arithmatex``
element). Text from a run or a spec that merely looks like a formula stays the text it was. KaTeX's
``\\htmlClass{classes}{body}`` (and its siblings) read as their body: the classes are styling.

The index is made from each page's HTML by Material's search plugin, which joins the text of
neighbouring elements with nothing between them (table cells, a label and its value: "Field" +
"Type" gives "FieldType"). :func:`index_view` is the page as the index should read it: a space
after every element that ends a word, and nothing of what a reader never sees as text (``hidden``,
``aria-hidden``, templates, pictures, choice lists). The hook hands the plugin this view and the
page keeps its own HTML (``unipo_build/site/hooks.py``, ``on_page_context``).
"""

from __future__ import annotations

import html
import json
import re
from functools import lru_cache
from html.parser import HTMLParser
from pathlib import Path

from pylatexenc.latex2text import LatexNodes2Text, MacroTextSpec
from pylatexenc.latex2text import get_default_latex_context_db as _text_context_db
from pylatexenc.latexwalker import LatexWalker
from pylatexenc.latexwalker import get_default_latex_context_db as _parse_context_db
from pylatexenc.macrospec import MacroSpec

_MATH = re.compile(r"\\\((.+?)\\\)|\\\[(.+?)\\\]", re.S)
# arithmatex's wrapper around a formula the site typesets (pymdownx.arithmatex, generic mode)
_TYPESET = re.compile(r'<(?:span|div) class="arithmatex">\s*(\\\(.+?\\\)|\\\[.+?\\\])\s*</(?:span|div)>', re.S)


#: KaTeX's HTML extensions (two arguments: an attribute, then the body); the reading is the body.
_HTML_MACROS = ("htmlClass", "htmlId", "htmlStyle", "htmlData")


@lru_cache(maxsize=1)
def _contexts():
    parse = _parse_context_db().filter_context()
    parse.add_context_category("katex-html", prepend=True, macros=[MacroSpec(m, "{{") for m in _HTML_MACROS])
    text = _text_context_db().filter_context()
    text.add_context_category("katex-html", prepend=True,
                              macros=[MacroTextSpec(m, simplify_repl="%(2)s") for m in _HTML_MACROS])
    return parse, text


@lru_cache(maxsize=4096)
def tex_to_text(tex: str) -> str:
    """The Unicode reading of a formula: '\\hat{A}_{i,t}' -> 'Â_i,t', '\\htmlClass{c}{x}' -> 'x';
    the source itself if it cannot be read."""
    parse, text_context = _contexts()
    try:
        nodes, _, _ = LatexWalker(tex, latex_context=parse, tolerant_parsing=False).get_latex_nodes()
        text = LatexNodes2Text(latex_context=text_context, math_mode="text",
                               strict_latex_spaces=True).nodelist_to_text(nodes)
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


# ---------------------------------------------------------------------------
# The page as the search index reads it
# ---------------------------------------------------------------------------

#: Elements whose end also ends a word (cells, items, blocks, labels and values).
_WORD_END = frozenset("td th tr li dt dd div p button option caption figcaption summary label span section strong b "
                      "h1 h2 h3 h4 h5 h6 br".split())
#: What a reader never reads as text: inert templates, pictures, the options of a choice list.
_UNREAD_TAGS = frozenset(("template", "svg", "select", "script", "style"))
_VOID = frozenset("area base br col embed hr img input link meta source track wbr".split())


class _IndexView(HTMLParser):
    """Re-writes a page's HTML for the index: see :func:`index_view`."""

    def __init__(self):
        super().__init__(convert_charrefs=False)
        self.out: list[str] = []
        self.dropping: list[str] = []  # the open tags inside a dropped element (its own first)
        self.verbatim = 0  # inside <pre> or <code>
        self.pending = False  # an element that ends a word just closed

    def _space(self, before: str | None = None) -> None:
        """The pending word break, where a word or an element follows (not before ", " or ".")."""
        if self.pending and (before is None or before[:1].isalnum()):
            self.out.append(" ")
        self.pending = False

    @staticmethod
    def _unread(tag: str, attrs: list[tuple[str, str | None]]) -> bool:
        names = dict(attrs)
        return (tag in _UNREAD_TAGS or "hidden" in names or "data-search-exclude" in names
                or (names.get("aria-hidden") or "").lower() == "true")

    def handle_starttag(self, tag, attrs):
        if self.dropping:
            if tag not in _VOID:
                self.dropping.append(tag)
            return
        if self._unread(tag, attrs) and tag not in _VOID:
            self.dropping.append(tag)
            return
        self._space()
        if tag in ("pre", "code"):
            self.verbatim += 1
        self.out.append(self.get_starttag_text())
        if tag == "br" and not self.verbatim:
            self.pending = True

    def handle_startendtag(self, tag, attrs):
        if not self.dropping:
            self.out.append(self.get_starttag_text())

    def handle_endtag(self, tag):
        if self.dropping:
            # close up to the matching open tag (HTML lets some end tags be left out)
            if tag in self.dropping:
                while self.dropping and self.dropping.pop() != tag:
                    pass
                if not self.dropping and tag in _WORD_END:
                    self.pending = True  # what follows a dropped block is another word
            return
        if tag in ("pre", "code") and self.verbatim:
            self.verbatim -= 1
        self.out.append(f"</{tag}>")
        if tag in _WORD_END and not self.verbatim:
            self.pending = True

    def handle_data(self, data):
        if not self.dropping:
            self._space(data)
            self.out.append(data)

    def handle_entityref(self, name):
        if not self.dropping:
            self._space("x")
            self.out.append(f"&{name};")

    def handle_charref(self, name):
        if not self.dropping:
            self._space("x")
            self.out.append(f"&#{name};")

    def handle_comment(self, data):
        pass

    def handle_decl(self, decl):
        self.out.append(f"<!{decl}>")


def index_view(html_text: str) -> str:
    """``html_text`` as Material's search plugin should read it: a space after every element that
    ends a word, and nothing of what a reader never sees as text (``hidden``, ``aria-hidden``, a
    view's ``data-search-exclude``, templates, pictures, choice lists). Code keeps its text. (The
    plugin's own ``data-search-exclude`` ends at the first nested element of the same tag: the
    view drops such elements whole instead.)"""
    parser = _IndexView()
    parser.feed(html_text)
    parser.close()
    return "".join(parser.out)
