"""Formulas in the search index as text (site/search_text.py)."""

from __future__ import annotations

import json

from unipo_build.site.search_text import plain_formulas, rewrite_index, site_formulas, tex_to_text


def test_formulas_read_as_text():
    assert tex_to_text(r"\hat{A}_{i,t}") == "Â_i,t"
    assert tex_to_text(r"\pi_{\text{ref}}") == "π_ref"
    assert tex_to_text(r"o_1,\dots,o_G") == "o_1,…,o_G"
    assert plain_formulas(r"<p>the advantage \(\hat{A}_i\) of \(G\) answers</p>") == "<p>the advantage Â_i of G answers</p>"
    assert plain_formulas(r"display \[\beta\,\mathbb{D}\] end") == "display β 𝔻 end"
    # the index holds HTML: an escaped < inside a formula stays escaped after it is read
    assert plain_formulas(r"\(a &lt; b\)") == "a &lt; b"
    assert plain_formulas("no formula here") == "no formula here"


def test_rewrite_index(tmp_path):
    path = tmp_path / "search_index.json"
    path.write_text(json.dumps({"config": {"lang": ["en"]}, "docs": [
        {"location": "a/", "title": r"The \(\rho\) ratio", "text": r"<p>\(\rho_{i,t}\) and \(\varepsilon\)</p>"},
        {"location": "b/", "title": "Plain", "text": "<p>nothing</p>"}]}), encoding="utf-8")
    assert rewrite_index(path) == 2
    docs = json.loads(path.read_text(encoding="utf-8"))["docs"]
    assert docs[0]["title"] == "The ρ ratio" and docs[0]["text"] == "<p>ρ_i,t and ε</p>"
    assert docs[1]["text"] == "<p>nothing</p>"


def test_only_the_sites_own_formulas_are_read_as_tex(tmp_path):
    """A token or a spec name that looks like TeX is not the site's formula: it stays as written."""
    site = tmp_path / "site"
    (site / "a").mkdir(parents=True)
    (site / "a" / "index.html").write_text(r'<p><span class="arithmatex">\(\rho_{i,t}\)</span> and a token '
                                           r'<code>\(\url{javascript:x}\)</code></p>', encoding="utf-8")
    known = site_formulas(site)
    assert known == {r"\(\rho_{i,t}\)"}
    path = tmp_path / "search_index.json"
    path.write_text(json.dumps({"docs": [{"location": "a/", "title": "T",
                                          "text": r"<p>\(\rho_{i,t}\) and a token \(\url{javascript:x}\)</p>"}]}),
                    encoding="utf-8")
    assert rewrite_index(path, known) == 1
    assert json.loads(path.read_text(encoding="utf-8"))["docs"][0]["text"] == r"<p>ρ_i,t and a token \(\url{javascript:x}\)</p>"


def test_katex_html_classes_read_as_their_body():
    """The composer wraps slots in \\htmlClass: the index reads the formula, not the class names."""
    tex = r"\Bigg[\htmlClass{unipo-slot unipo-slot-aggregation unipo-diff-modified}{\frac{1}{G}\sum_{i=1}^{G}}\Big(\rho\Big)\Bigg]"
    assert tex_to_text(tex) == "[1/G∑_i=1^G(ρ)]"
    assert tex_to_text(r"\htmlClass{unipo-tex-em}{k_3 = (r - 1)}") == "k_3 = (r - 1)"


def test_the_index_view_keeps_words_apart_and_leaves_out_what_is_not_read():
    from unipo_build.site.search_text import index_view

    html = ('<table><tr><th>Field</th><th>Type</th></tr><tr><td>a</td><td>b</td></tr></table>'
            '<div class="g"><span class="t">Aggregation</span><button><span class="k">mean</span></button></div>'
            '<p>x <span class="arithmatex">\\(G\\)</span>, then<span hidden>a description</span>'
            '<span aria-hidden="true">✗<span>0</span></span> end</p>'
            '<div data-search-exclude><div>reward</div><div>Reward 0.5</div></div>after'
            '<template>{"json": 1}</template><svg><text>axis</text></svg>'
            '<pre><code><span>un</span><span>ipo</span></code></pre><p class="a hidden b">kept</p>GRPO<br>Group')
    view = index_view(html)
    text = __import__("re").sub(r"<[^>]+>", "", view)
    assert "Field Type" in text and "a b" in text
    assert "Aggregation mean" in text
    assert "G, then end" in text.replace("\\(", "").replace("\\)", "")  # no space before a comma
    for gone in ("description", "✗", "reward", "Reward 0.5", "json", "axis"):
        assert gone not in text, gone
    assert "after" in text and "unipo" in text and "kept" in text  # code keeps its text; a class "hidden" hides nothing
    assert "GRPO Group" in text
