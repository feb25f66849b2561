"""One escaping path: whatever a macro returns from an input reaches the page as the text it is.

A text macro's string is HTML-escaped and protected from Markdown by the binding of
``site.context`` (unipo_build/site/context.py); here such a string, holding each hostile payload of
tests/hostile.py, is put into a page in every Markdown context a sentence can sit in (a paragraph,
emphasis, a list, a table cell, an admonition, a content tab, inline math), run through
Python-Markdown with the site's own extensions and put back by the hook's restore step. The page
must then hold the payload as text, and no element or attribute made from it.
"""

from __future__ import annotations

import html
import os
from html.parser import HTMLParser
from pathlib import Path
from types import SimpleNamespace

import markdown
import pytest

from hostile import BODIES, MARK
from unipo_build.site import macros
from unipo_build.site import context as site_layer

REPO = Path(__file__).resolve().parents[1]
PAGE = "text-path.md"

CONTEXTS = {
    "paragraph": "Before {x} after.",
    "emphasis": "Some *emphasised {x} words* here.",
    "list": "- an item: {x}\n- another",
    "table": "| a | b |\n|---|---|\n| {x} | 2 |",
    "admonition": "!!! note\n\n    Inside: {x}.",
    "tab": '=== "Tab"\n\n    In a tab: {x}.',
    "math": "Inline \\(x = {x}\\) math.",
}


@pytest.fixture(scope="module")
def md() -> markdown.Markdown:
    os.environ.setdefault("NO_MKDOCS_2_WARNING", "1")
    from mkdocs.config import load_config

    config = load_config(str(REPO / "mkdocs.yml"))
    return markdown.Markdown(extensions=config.markdown_extensions, extension_configs=config.mdx_configs)


@pytest.fixture
def text_macro():
    """A text macro (the default kind) bound to a Site whose page is PAGE."""
    env = SimpleNamespace(conf={"extra": {}}, page=SimpleNamespace(file=SimpleNamespace(src_uri=PAGE)))
    definition = site_layer.MacroDef(lambda value: value, "echo", html=False, scripts=(), with_site=False)
    yield site_layer.bind(site_layer.Site(env, root=REPO), definition)
    macros._PROTECTED.pop(PAGE, None)


class Scan(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.text, self.bad = [], []

    def handle_starttag(self, tag, attrs):
        for name, value in attrs:
            if name == MARK or name.startswith("on") or (value or "").strip().lower().startswith("javascript:"):
                self.bad.append(f"<{tag} {name}={value!r}>")
        if tag in ("script", "img", "svg", "template", "a"):
            self.bad.append(f"<{tag}>")

    def handle_data(self, data):
        self.text.append(data)


@pytest.mark.parametrize("context", CONTEXTS)
@pytest.mark.parametrize("kind", [k for k in BODIES if k != "nul"])
def test_a_text_macro_shows_any_input_as_its_text(md, text_macro, context, kind):
    payload = BODIES[kind].format(tag="h1", mark=MARK)
    placeholder = text_macro(payload)
    assert macros.TOKEN_PREFIX in placeholder and payload not in placeholder
    md.reset()
    page = macros.restore_protected(PAGE, md.convert(CONTEXTS[context].format(x=placeholder)))
    scan = Scan()
    scan.feed(page)
    assert scan.bad == [], page
    shown = "".join(scan.text)
    # The exact characters (a line break inside a table cell or a list item is still one).
    assert payload in shown or " ".join(payload.split()) in " ".join(shown.split()), page
    if context == "math":
        # Still inside the formula's element, as escaped text for KaTeX to typeset: no new element.
        assert '<span class="arithmatex">' in page and html.escape(payload, quote=True) in page


def test_a_macro_returns_html_or_markdown_not_both():
    with pytest.raises(ValueError, match="html or markdown"):
        site_layer.macro(lambda: "", name="both_kinds", html=True, markdown=True)
    assert "both_kinds" not in site_layer.MACROS


def test_what_is_not_a_string_passes_through(text_macro):
    assert text_macro({"n": 1}) == {"n": 1} and text_macro(3) == 3
