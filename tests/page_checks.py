"""Checks over the built pages' text (issue 47 items 2 and 4): every formula renders, no control character,
and the words a reader reads have no doubled word, no "null", no ASCII stand-in for a symbol the site writes
(→, ±, ×) and no TeX left unrendered.

Each check is a function of a page's HTML (or of formulas), so the tests can feed it a bad sample and see it fail
(tests/test_page_checks.py) as well as run it over every page of every set of the built site. A module of its own
(not site_build.py) so that it can be read as one list of rules.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import textwrap
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import urlsplit

from site_build import REPO_ROOT, page_data

# ---------------------------------------------------------------------------
# Control characters
# ---------------------------------------------------------------------------

#: C0 controls but newline, carriage return and tab (ordinary whitespace in HTML), DEL and the C1 controls: none
#: belongs in a page. A backspace is what "\b" becomes in a Python string that is not raw ("\big" -> BS + "ig").
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
#: A tab is whitespace in prose, but inside a formula it is "\t" of a string that is not raw ("\theta", "\text").
_TAB = "\t"


def _where(text: str, at: int) -> str:
    return repr(text[max(0, at - 40):at + 20])


def control_characters(html: str) -> list[str]:
    """Where the page holds a control character: anywhere in its HTML, a tab inside one of its formulas (a math
    span, or a TeX string of its data: a ``tex`` or ``formula`` value), or a control character in its data's
    strings (JSON writes a backspace as the two characters \\b, which a raw scan cannot tell from TeX's)."""
    found = [f"U+{ord(m.group()):04X} at {_where(html, m.start())}" for m in _CONTROL.finditer(html)]
    for tex, _ in math_spans(html):
        if _TAB in tex:
            found.append(f"a tab inside the formula {_where(tex, tex.index(_TAB))}")
    for data_id, data in page_data(html):
        for key, value in _strings(data):
            if m := _CONTROL.search(value):
                found.append(f"U+{ord(m.group()):04X} in {data_id} ({key}) at {_where(value, m.start())}")
            elif key in TEX_KEYS and _TAB in value:
                found.append(f"a tab inside the formula {data_id} ({key}) at {_where(value, value.index(_TAB))}")
    return found


def _strings(data, key: str = ""):
    """(the key it is under, string) for every string of a JSON value."""
    if isinstance(data, dict):
        for k, v in data.items():
            yield from _strings(v, k)
    elif isinstance(data, list):
        for v in data:
            yield from _strings(v, key)
    elif isinstance(data, str):
        yield key, data


# ---------------------------------------------------------------------------
# Formulas
# ---------------------------------------------------------------------------

#: The keys of a page's data whose strings the views typeset (explainer.js displayMath): a component's TeX and a
#: spec's objective in the comparison, whose UNIPODIFF-<slot> placeholders the view fills with a status class.
TEX_KEYS = {"tex", "formula"}
_DIFF_PLACEHOLDER = re.compile(r"UNIPODIFF-([a-z_]+)")


class _MathSpans(HTMLParser):
    """The text of every element whose class holds ``arithmatex`` (pymdownx.arithmatex, generic mode), with
    whether it is a span (inline) or not (display), as overrides/assets/unipo.js typesets it."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.spans: list[tuple[str, bool]] = []
        self._open: list[list] = []  # [tag, depth, text parts, display] of each math element being read

    def handle_starttag(self, tag, attrs):
        for item in self._open:
            item[1] += 1
        if "arithmatex" in (dict(attrs).get("class") or "").split():
            self._open.append([tag, 0, [], tag != "span"])

    def handle_endtag(self, tag):
        for item in list(self._open):
            if item[1] == 0 and item[0] == tag:
                self._open.remove(item)
                self.spans.append(("".join(item[2]), item[3]))
            else:
                item[1] -= 1

    def handle_data(self, data):
        for item in self._open:
            item[2].append(data)


def math_spans(html: str) -> list[tuple[str, bool]]:
    """(TeX, display) of every formula of a page's HTML, delimiters removed as unipo.js ``typeset`` does."""
    parser = _MathSpans()
    parser.feed(html)
    parser.close()
    out = []
    for text, display in parser.spans:
        tex = text.strip()
        if tex[:2] == "\\[" and tex[-2:] == "\\]":
            tex, display = tex[2:-2], True
        elif tex[:2] == "\\(" and tex[-2:] == "\\)":
            tex, display = tex[2:-2], False
        out.append((tex, display))
    return out


def data_formulas(html: str) -> list[tuple[str, bool]]:
    """(TeX, display) of every formula in a page's data that a view typesets (:data:`TEX_KEYS`)."""
    return [(_DIFF_PLACEHOLDER.sub("unipo-diff-unchanged", value), True)
            for _, data in page_data(html) for key, value in _strings(data) if key in TEX_KEYS and value]


def katex_dir() -> Path | None:
    """node_modules/katex (package.json pins it), or None where node or it is missing."""
    katex = REPO_ROOT / "node_modules" / "katex"
    return katex if shutil.which("node") and (katex / "package.json").is_file() else None


#: KaTeX with the site's options (overrides/assets/unipo.js KATEX_OPTIONS), but throwing on an error, and stricter:
#: a command the site does not trust (KaTeX draws it in red as text, no exception) and a strict-mode warning (a
#: console message in the browser) are failures too.
_KATEX_SCRIPT = textwrap.dedent("""
    const katex = require(process.argv[1]);
    const formulas = JSON.parse(require("fs").readFileSync(process.argv[2], "utf8"));
    const OWN_CLASS = /^unipo-[a-z0-9-]+$/;
    const errors = {};
    formulas.forEach(([tex, display], i) => {
      const refused = [], warned = [];
      try {
        katex.renderToString(tex, {
          displayMode: display, throwOnError: true,
          trust: (ctx) => {
            const classes = String(ctx.class || "").split(/\\s+/).filter(Boolean);
            const ok = ctx.command === "\\\\htmlClass" && classes.length > 0 && classes.every((c) => OWN_CLASS.test(c));
            if (!ok) refused.push(ctx.command);
            return ok;
          },
          strict: (code, message) => {
            if (code !== "htmlExtension") warned.push(code + ": " + message);
            return "ignore";
          },
        });
        if (refused.length) errors[i] = "untrusted command " + refused.join(", ");
        else if (warned.length) errors[i] = "strict mode: " + warned.join("; ");
      } catch (e) {
        errors[i] = e.message;
      }
    });
    console.log(JSON.stringify(errors));
""")


def katex_errors(formulas: list[tuple[str, bool]], workdir: Path) -> dict[tuple[str, bool], str]:
    """{(TeX, display): KaTeX's error} for every formula KaTeX cannot render, in one node process."""
    katex = katex_dir()
    assert katex is not None, "node and node_modules/katex are needed (npm ci)"
    unique = sorted(set(formulas))
    src = Path(workdir) / "formulas.json"
    src.write_text(json.dumps(unique), encoding="utf-8")
    result = subprocess.run(["node", "-e", _KATEX_SCRIPT, str(katex), str(src)], capture_output=True, text=True,
                            timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    return {unique[int(i)]: message for i, message in json.loads(result.stdout).items()}


# ---------------------------------------------------------------------------
# The words a reader reads
# ---------------------------------------------------------------------------

#: Elements whose text is not prose: code, scripts and data, formulas (typeset by KaTeX), drawings.
_NOT_PROSE_TAGS = {"script", "style", "template", "code", "pre", "kbd", "samp", "svg", "math", "textarea"}
_NOT_PROSE_CLASSES = {"arithmatex", "katex"}
#: Elements that end a block of text: a doubled word is looked for within a block, never across two.
_BLOCK_TAGS = {"p", "li", "td", "th", "div", "h1", "h2", "h3", "h4", "h5", "h6", "summary", "figcaption", "dt", "dd",
               "br", "option", "button", "label", "caption", "blockquote", "section", "article", "nav", "header",
               "footer", "ul", "ol", "table", "tr", "details", "figure", "hr", "aside", "main", "form", "select"}
_VOID_TAGS = {"br", "img", "input", "hr", "meta", "link", "area", "base", "col", "embed", "source", "track", "wbr"}
#: Attributes a reader (or a screen reader) is given as words.
_WORD_ATTRS = ("title", "aria-label", "alt", "placeholder")
#: What stands in a block for an element left out (code, a formula): no word, so "and <code>x</code> and" is no
#: doubled "and"; and where an inline element starts or ends (a label beside a name: "GRPO</strong> <span>GRPO").
SKIPPED, EDGE = "\x02", "\x01"


class _ReaderText(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.blocks: list[str] = []
        self._stack: list[tuple[str, bool]] = []
        self._skip = 0
        self._parts: list[str] = []

    def _flush(self):
        text = "".join(self._parts)
        if text.replace(SKIPPED, "").replace(EDGE, "").strip():
            self.blocks.append(text)
        self._parts = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if not self._skip:
            self.blocks.extend(a[k] for k in _WORD_ATTRS if a.get(k))
        if tag in _VOID_TAGS:
            if tag in _BLOCK_TAGS:
                self._flush()
            return
        skip = tag in _NOT_PROSE_TAGS or bool(_NOT_PROSE_CLASSES & set((a.get("class") or "").split()))
        if skip and not self._skip:
            self._parts.append(SKIPPED)
        self._stack.append((tag, skip))
        self._skip += skip
        if tag in _BLOCK_TAGS:
            self._flush()
        elif not self._skip:
            self._parts.append(EDGE)

    def handle_endtag(self, tag):
        if tag in _VOID_TAGS or not any(t == tag for t, _ in self._stack):
            return
        while self._stack:
            t, skip = self._stack.pop()
            self._skip -= skip
            if t == tag:
                break
        if tag in _BLOCK_TAGS:
            self._flush()
        elif not self._skip:
            self._parts.append(EDGE)

    def handle_data(self, data):
        if not self._skip:
            self._parts.append(data)

    def close(self):
        super().close()
        self._flush()


def reader_blocks(html: str) -> list[str]:
    """The page's text as a reader reads it, block by block (with :data:`SKIPPED` where code or a formula stood
    and :data:`EDGE` where an inline element starts or ends), and the words of its title and label attributes."""
    parser = _ReaderText()
    parser.feed(html)
    parser.close()
    return parser.blocks


#: A word written twice ("bound bound", "the the"). Across an inline element's edge only a lower-case word counts:
#: a label beside a name ("REINFORCE" then "REINFORCE with a batch baseline") is two elements, not a slip.
_DOUBLED = re.compile(rf"\b([A-Za-z]+)((?:\s|{EDGE})+)(\1)\b", re.I)
#: The rules over a block's words (edges and skipped elements taken out): (name, pattern, what it finds).
PROSE_RULES: tuple[tuple[str, re.Pattern, str], ...] = (
    ("null", re.compile(r"\bnull\b"), "the JSON word for 'no value' in reader text"),
    ("ascii symbol", re.compile(r"->|<-|=>|\+/-|\+-(?=\s*\d)|\b\d+(?:\.\d+)?x\b"),
     "an ASCII stand-in for a symbol the site writes (\u2192, \u00b1, \u00d7)"),
    ("unrendered tex", re.compile(r"\\[A-Za-z]+"), "a TeX command outside a formula"),
    ("unrendered math", re.compile(r"\b(?:pi|rho|varrho|theta|omega|sigma|mu)_\{?[A-Za-z]\w*"),
     "a symbol with its subscript spelt in snake_case (pi_old) outside a formula"),
)


@dataclass(frozen=True)
class Allowed:
    """A rule a page may break, and why: pages under ``prefix`` (a page path within one set, e.g. "reference/")."""

    rule: str
    prefix: str
    why: str


#: The few places a rule does not hold, each with its reason.
ALLOWED = (
    # The reference documents the log and spec formats, where null is the JSON/YAML value a field takes
    # ("integer or null", "cap: null means no cap"); the guides tell a reader to write or read those files.
    Allowed("null", "reference/", "the log and spec formats' own value (JSON/YAML null)"),
    Allowed("null", "guides/", "the guides write and read log and spec files, whose value null is"),
)


def prose_problems(blocks: list[str]) -> list[tuple[str, str]]:
    """(rule, the words around it) for every doubled word and every :data:`PROSE_RULES` match in the blocks."""
    found = []
    for block in blocks:
        for m in _DOUBLED.finditer(block):
            if EDGE in m.group(2) and not m.group(1).islower():
                continue
            found.append(("doubled word", _context(block, m)))
        words = block.replace(EDGE, "").replace(SKIPPED, " ")
        for name, pattern, _ in PROSE_RULES:
            found += [(name, _context(words, m)) for m in pattern.finditer(words)]
    return found


def _context(text: str, m: re.Match) -> str:
    around = text[max(0, m.start() - 60):m.end() + 40].replace(EDGE, "").replace(SKIPPED, "\u2026")
    return " ".join(around.split())


def allowed(rule: str, page: str) -> bool:
    """Whether :data:`ALLOWED` lets the page (its path within its set) break the rule."""
    return any(a.rule == rule and page.startswith(a.prefix) for a in ALLOWED)


def set_prefixes() -> list[str]:
    """The folders the sets other than the default are built into (mkdocs.yml extra.unipo_sets: <site>/<id>/)."""
    from site_build import project_config

    sets = project_config().get("extra", {}).get("unipo_sets") or []
    return [f"{s['id']}/" for s in sets[1:]]


def page_in_set(relative: str, prefixes: list[str]) -> str:
    """A page's path within its set: 'gpu/reference/schema/index.html' -> 'reference/schema/index.html'."""
    for prefix in prefixes:
        if relative.startswith(prefix):
            return relative[len(prefix):]
    return relative


# ---------------------------------------------------------------------------
# Links named by their pages' titles
# ---------------------------------------------------------------------------

class _Links(HTMLParser):
    """(href, text) of the links inside elements of one class; and the page's first <h1> text."""

    def __init__(self, within: str):
        super().__init__(convert_charrefs=True)
        self.within, self.links, self.h1 = within, [], None
        self._depth = 0  # inside an element of class ``within``: how deep
        self._link: list | None = None
        self._h1: list[str] | None = None
        self._skip = 0  # inside a heading's permalink

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        classes = (a.get("class") or "").split()
        if self._depth:
            self._depth += tag not in _VOID_TAGS
        elif self.within in classes:
            self._depth = 1
        if tag == "a" and self._depth and self._link is None:
            self._link = [a.get("href") or "", []]
        if tag == "h1" and self.h1 is None:
            self._h1 = []
        if tag == "a" and "headerlink" in classes:
            self._skip += 1

    def handle_endtag(self, tag):
        if tag == "a" and self._skip:
            self._skip -= 1
        elif tag == "a" and self._link is not None:
            self.links.append((self._link[0], " ".join("".join(self._link[1]).split())))
            self._link = None
        if tag == "h1" and self._h1 is not None:
            self.h1, self._h1 = " ".join("".join(self._h1).split()), None
        if self._depth:
            self._depth -= 1

    def handle_data(self, data):
        if self._link is not None:
            self._link[1].append(data)
        if self._h1 is not None and not self._skip:
            self._h1.append(data)


def links_within(html: str, css_class: str) -> list[tuple[str, str]]:
    """(href, text) of every link inside an element of class ``css_class``."""
    parser = _Links(css_class)
    parser.feed(html)
    return parser.links


def page_heading(html: str) -> str | None:
    """The text of a page's first <h1> (its permalink left out)."""
    parser = _Links("")
    parser.feed(html)
    return parser.h1


def mistitled_links(page: Path, site_dir: Path, css_class: str) -> list[str]:
    """The links inside ``css_class`` elements of a built page whose text is not the title (first <h1>) of the
    page they open (or that open no page of the site)."""
    wrong = []
    for href, text in links_within(page.read_text(encoding="utf-8"), css_class):
        path = urlsplit(href).path
        target = (page.parent / path).resolve()
        target = target / "index.html" if path.endswith("/") or target.is_dir() else target
        if not target.is_file() or not target.is_relative_to(site_dir.resolve()):
            wrong.append(f"{text!r} -> {href}: no such page")
            continue
        title = page_heading(target.read_text(encoding="utf-8"))
        if text != title:
            wrong.append(f"{text!r} -> {href}: the page is titled {title!r}")
    return wrong
