"""Formulas in the search index as text (views/search_text.py)."""

from __future__ import annotations

import json

from unipo_build.views.search_text import plain_formulas, rewrite_index, site_formulas, tex_to_text


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
