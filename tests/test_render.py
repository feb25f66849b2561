"""Safe HTML helpers (unipo_build.site.render) and the macro placeholder round trip through Markdown."""

from __future__ import annotations

import html
import json
import math
import re
from html.parser import HTMLParser
from types import SimpleNamespace

import markdown
import pytest

from unipo_build.site import macros, render

HOSTILE = [
    "</script><script>alert(1)</script>",
    "<img src=x onerror=alert(1)>",
    "{{ 7*7 }}",
    "{% raw %}{#",
    "\" onmouseover=\"alert(1)",
    "' onmouseover='alert(1)",
    "</template><script>alert(1)</script>",
    "<!-- comment -->",
    "a & b &amp; c",
    "line\u2028separator\u2029paragraph",
    "_emphasis_ *star* $x$ \\(y\\) `code` [link](http://example.com)",
]


class _Collector(HTMLParser):
    """Records elements, attributes and text the way a browser's tokenizer sees them."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.starts: list[tuple[str, dict]] = []
        self.text: dict[str, str] = {}
        self._stack: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.starts.append((tag, dict(attrs)))
        self._stack.append(tag)

    def handle_endtag(self, tag):
        if self._stack and self._stack[-1] == tag:
            self._stack.pop()

    def handle_data(self, data):
        key = self._stack[-1] if self._stack else ""
        self.text[key] = self.text.get(key, "") + data


def _template_json(fragment: str, data_id: str):
    match = re.search(
        rf'<template class="unipo-data" id="{re.escape(data_id)}" data-search-exclude>(.*?)</template>',
        fragment,
        re.S,
    )
    assert match, fragment
    return json.loads(match.group(1))


@pytest.mark.parametrize("s", HOSTILE)
def test_escape_text_leaves_no_markup(s):
    out = render.escape_text(s)
    assert "<" not in out and ">" not in out and '"' not in out and "'" not in out
    assert html.unescape(out) == s


@pytest.mark.parametrize("s", HOSTILE)
def test_json_for_script_cannot_end_its_element(s):
    out = render.json_for_script({"title": s, s: [s]})
    for forbidden in ("<", ">", "&", "\u2028", "\u2029"):
        assert forbidden not in out
    assert json.loads(out) == {"title": s, s: [s]}


def test_json_for_script_rejects_nan_and_infinity():
    for bad in (math.nan, math.inf, -math.inf):
        with pytest.raises(ValueError):
            render.json_for_script({"x": bad})


def test_json_for_script_escapes_exactly():
    assert render.json_for_script("</script>&\u2028") == '"\\u003c/script\\u003e\\u0026\\u2028"'


@pytest.mark.parametrize("s", HOSTILE)
def test_vega_embed_with_hostile_spec_and_caption(s):
    spec = {"title": s, "data": {"values": [{"label": s, "v": 1}]}, "mark": "bar"}
    out = render.vega_embed(spec, chart_id="chart-1", caption=s, css_class="wide")
    assert "\n" not in out  # one line: a single HTML block
    parser = _Collector()
    parser.feed(out)
    tags = [t for t, _ in parser.starts]
    assert tags == ["figure", "div", "template", "figcaption"]
    assert "<script" not in out.lower()
    assert out.lower().count("</template") == 1
    assert _template_json(out, "chart-1") == spec
    # The caption is text, never markup.
    assert parser.text["figcaption"] == s
    assert dict(parser.starts[0][1])["class"] == "unipo-figure unipo-chart wide"


def test_vega_embed_without_caption_uses_a_div():
    out = render.vega_embed({"mark": "point"}, chart_id="c2")
    assert out.startswith('<div class="unipo-chart"><div class="unipo-vega" data-spec-id="c2"></div>')
    assert "<figcaption>" not in out


@pytest.mark.parametrize("css_class", ['x" onclick="alert(1)', "<b>", "a'b"])
def test_quotes_in_css_class_stay_inside_the_attribute(css_class):
    out = render.vega_embed({"mark": "point"}, chart_id="c3", css_class=css_class)
    parser = _Collector()
    parser.feed(out)
    attrs = parser.starts[0][1]
    assert set(attrs) == {"class"}
    assert css_class.split()[-1] in attrs["class"]


@pytest.mark.parametrize("bad_id", ["", "1abc", 'a"b', "a b", "a<b", "x" * 200, None])
def test_chart_ids_are_validated(bad_id):
    with pytest.raises(ValueError):
        render.vega_embed({"mark": "point"}, chart_id=bad_id)


def test_vega_embed_rejects_non_dict_specs():
    with pytest.raises(TypeError):
        render.vega_embed("not a spec", chart_id="c4")  # type: ignore[arg-type]


def test_figure_escapes_the_caption_only():
    out = render.figure("<svg></svg>", "<b>bold</b> & more")
    assert out == (
        '<figure class="unipo-figure"><svg></svg>'
        "<figcaption>&lt;b&gt;bold&lt;/b&gt; &amp; more</figcaption></figure>"
    )
    assert render.figure("<i>x</i>", None) == '<figure class="unipo-figure"><i>x</i></figure>'


# ------------------------------------------------- placeholders through the site's Markdown


@pytest.fixture(scope="module")
def site_markdown(repo_root):
    from mkdocs.config import load_config

    cfg = load_config(str(repo_root / "mkdocs.yml"))
    return lambda text: markdown.markdown(
        text, extensions=cfg["markdown_extensions"], extension_configs=cfg["mdx_configs"]
    )


def _env(src_uri: str):
    return SimpleNamespace(page=SimpleNamespace(file=SimpleNamespace(src_uri=src_uri)))


def test_protected_html_survives_markdown_in_every_block(site_markdown):
    env = _env("hostile.md")
    macros.reset_page(env)
    nasty = " ".join(HOSTILE)
    spec = {"title": nasty, "data": {"values": [{"a_b": "c_d", "t": nasty}]}, "mark": "line"}
    fragment = render.vega_embed(spec, chart_id="hostile-1", caption=nasty)
    tokens = [macros.protect_html(env, fragment) for _ in range(5)]
    assert all(re.fullmatch(r"[A-Za-z0-9]+", t) for t in tokens)
    source = "\n".join(
        [
            "Intro paragraph.",
            "",
            tokens[0],
            "",
            "!!! note",
            "",
            f"    {tokens[1]}",
            "",
            '=== "Tab"',
            "",
            f"    {tokens[2]}",
            "",
            "- item",
            "",
            f"    {tokens[3]}",
            "",
            '??? info "Details"',
            "",
            f"    {tokens[4]}",
            "",
        ]
    )
    out = macros.restore_protected("hostile.md", site_markdown(source))
    assert out.count(fragment) == 5
    assert f"<p>{fragment}</p>" not in out
    assert macros.TOKEN_PREFIX not in out


def test_lost_placeholder_fails_the_build():
    from mkdocs.exceptions import PluginError

    env = _env("lost.md")
    macros.reset_page(env)
    macros.protect_html(env, "<div></div>")
    with pytest.raises(PluginError, match="own"):
        macros.restore_protected("lost.md", "<p>the placeholder vanished</p>")


def test_chart_ids_are_deterministic_per_page():
    env = _env("ids.md")
    macros.reset_page(env)
    first = [macros.chart_id(env, {"mark": "point"}), macros.chart_id(env, {"mark": "point"})]
    macros.reset_page(env)
    second = [macros.chart_id(env, {"mark": "point"}), macros.chart_id(env, {"mark": "point"})]
    assert first == second and first[0] != first[1]
    assert all(render.CHART_ID_RE.match(i) for i in first)
