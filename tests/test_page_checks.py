"""Every page of every set, as built (issue 47 items 2 and 4): each formula renders in KaTeX, no page holds a
control character, the words a reader reads have no doubled word, no "null", no ASCII arrow, ± or 2x, no TeX left
unrendered, and a diagnosis names its chapter by the title of the page it opens.

The rules live in tests/page_checks.py; each is first fed a bad sample here (the slips the issue found), so that a
check that cannot fail is caught too.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import pytest

import page_checks as C
from site_build import page_data

# ---------------------------------------------------------------------------
# Each check fails on a bad sample
# ---------------------------------------------------------------------------

FIXED_GSPO = r"s_i=\big(\pi_\theta(o_i\mid q)/\pi_{\text{old}}(o_i\mid q)\big)^{1/|o_i|}"
#: The GSPO ratio of /course/derivation/ as a string that is not raw wrote it: "\b" a backspace, "\t" a tab.
BROKEN_GSPO = FIXED_GSPO.replace("\\b", "\b").replace("\\t", "\t")


def test_the_broken_formula_holds_the_control_characters_the_issue_found():
    assert "\x08" in BROKEN_GSPO and "\t" in BROKEN_GSPO and "\x08" not in FIXED_GSPO and "\t" not in FIXED_GSPO


def test_control_characters_are_found_in_a_page_and_a_tab_only_inside_a_formula():
    page = f'<p>Its ratio <span class="arithmatex">\\({BROKEN_GSPO}\\)</span>.</p>'
    found = C.control_characters(page)
    assert any(x.startswith("U+0008") for x in found) and any(x.startswith("a tab inside the formula") for x in found)
    assert C.control_characters(f'<p>Its ratio <span class="arithmatex">\\({FIXED_GSPO}\\)</span>.</p>') == []
    # a tab between words or in code is whitespace; a form feed or a C1 control is never right
    assert C.control_characters("<p>one\ttwo</p><pre>\tindented</pre>") == []
    assert C.control_characters("<p>one\x0ctwo</p>") and C.control_characters("<p>one\x85two</p>")
    # in a page's data (JSON writes a backspace as \b): a string with one, and a tab in a formula of the data
    data = '<template class="unipo-data" id="d">{"note": "a\\bb", "tex": "\\\\rho\\tau", "text": "a\\tb"}</template>'
    found = C.control_characters(data)
    assert len(found) == 2 and "U+0008 in d (note)" in found[0] and "d (tex)" in found[1]


def test_katex_fails_on_the_broken_formula_and_renders_the_fixed_one(tmp_path):
    if C.katex_dir() is None:
        pytest.skip("node and node_modules/katex are needed (npm ci)")
    broken = [(BROKEN_GSPO, False), (r"\frac{1}{", True), (r"\href{https://example.org}{x}", False),
              (r"\htmlClass{evil}{x}", False), (r"x=é", False)]
    fine = [(FIXED_GSPO, False), (r"\htmlClass{unipo-slot-clip}{\rho}", True), (r"\text{e}", False)]
    errors = C.katex_errors(broken + fine, tmp_path)
    assert set(errors) == set(broken), errors
    assert "untrusted command \\href" in errors[broken[2]] and "untrusted command \\htmlClass" in errors[broken[3]]
    assert errors[broken[4]].startswith("strict mode")  # a console warning in the browser


def test_math_spans_and_data_formulas_are_read_as_the_page_typesets_them():
    page = ('<p>A <span class="arithmatex">\\(a&lt;b\\)</span> and</p><div class="arithmatex">\\[x\\]</div>'
            '<template class="unipo-data" id="c">{"specs": {"a": {"formula": "\\\\htmlClass{UNIPODIFF-clip}{x}"}},'
            ' "slots": {"clip": {"tex": "y"}}, "label": "\\\\notmath"}</template>')
    assert C.math_spans(page) == [("a<b", False), ("x", True)]
    assert C.data_formulas(page) == [(r"\htmlClass{unipo-diff-unchanged}{x}", True), ("y", True)]


@pytest.mark.parametrize("html, rule", [
    # the slips issue 47 found
    ("<p>the upper bound bound on 0.04% of the tokens</p>", "doubled word"),
    ("<p>Mean length of correct responses; null if none.</p>", "null"),
    ('<button title="Length (correct): Mean length of correct responses; null if none.">x</button>', "null"),
    ("<p>held-out greedy accuracy 34.9% -> 57.9%</p>", "ascii symbol"),
    ("<p>the ratio stays within exp(+/-0) of 1</p>", "ascii symbol"),
    ("<p>within 0.2 to 2x of the start</p>", "ascii symbol"),
    ("<p>weighted by pi_old / pi_sampler, capped at C</p>", "unrendered math"),
    ("<p>s_i=\\big(\\pi_\\theta\\big)</p>", "unrendered tex"),
    # a doubled word across an inline element, lower case
    ("<p>comes from <a href='#'>the</a> the tap</p>", "doubled word"),
])
def test_each_prose_rule_finds_its_slip(html, rule):
    assert rule in {name for name, _ in C.prose_problems(C.reader_blocks(html))}


@pytest.mark.parametrize("html", [
    # a doubled word split by code or a formula, a label beside a name, words in two cells
    "<p>that weight times <span class='arithmatex'>\\(w\\)</span> times <code>A</code></p>",
    "<p>from the <code>algorithm</code> the tap recorded</p>",
    "<p><strong>REINFORCE</strong> <span class='unipo-fact'>REINFORCE with a batch baseline</span></p>",
    "<table><tr><td>bound</td><td>bound</td></tr></table>",
    # symbols as the site writes them, TeX and JSON where they belong
    "<p>accuracy 34.9% \u2192 57.9%, within exp(\u00b11 \u00d7 10\u207b\u2074) of 1, 2\u00d7 the start</p>",
    "<p>The ratio <span class='arithmatex'>\\(\\pi_\\theta/\\pi_{\\text{old}}\\)</span> and <code>null</code>,"
    " <code>pi_old</code>, <code>a -> b</code></p>",
    "<p>a 0x1F byte, nullable, annulled, api_key, epsilon_high</p>",
])
def test_the_prose_rules_leave_good_text_alone(html):
    assert C.prose_problems(C.reader_blocks(html)) == []


def test_the_allowlist_names_each_place_and_why():
    assert C.allowed("null", "reference/schema/index.html") and C.allowed("null", "guides/own-logs/index.html")
    assert not C.allowed("null", "course/algorithms/dapo_dr/index.html")
    assert not C.allowed("doubled word", "reference/schema/index.html")
    assert all(a.why for a in C.ALLOWED) and len(C.ALLOWED) <= 4
    assert C.page_in_set("gpu/reference/schema/index.html", ["gpu/"]) == "reference/schema/index.html"


def test_a_link_named_otherwise_than_its_page_is_found(tmp_path):
    (tmp_path / "course" / "derivation").mkdir(parents=True)
    (tmp_path / "course" / "derivation" / "index.html").write_text(
        '<h1 id="x">From the reward to the surrogate<a class="headerlink" href="#x">¶</a></h1>')
    page = tmp_path / "runs" / "index.html"
    page.parent.mkdir()
    card = '<p class="unipo-diagnosis-source">Taught in <a href="../course/derivation/">{}</a>; asked in trl#1.</p>'
    page.write_text(card.format("From the policy gradient to a loss"))
    wrong = C.mistitled_links(page, tmp_path, "unipo-diagnosis-source")
    assert wrong == ["'From the policy gradient to a loss' -> ../course/derivation/: the page is titled "
                     "'From the reward to the surrogate'"]
    page.write_text(card.format("From the reward to the surrogate"))
    assert C.mistitled_links(page, tmp_path, "unipo-diagnosis-source") == []
    page.write_text(card.format("Gone").replace("derivation", "nowhere"))
    assert C.mistitled_links(page, tmp_path, "unipo-diagnosis-source") == ["'Gone' -> ../course/nowhere/: no such page"]


# ---------------------------------------------------------------------------
# The built site: every page of every set
# ---------------------------------------------------------------------------

@dataclass
class Page:
    relative: str  # under the site, e.g. "gpu/course/derivation/index.html"
    within_set: str  # the same page's path within its set, e.g. "course/derivation/index.html"
    html: str = field(repr=False)

    @cached_property
    def data(self):
        return page_data(self.html)


@pytest.fixture(scope="module")
def pages(built_site) -> list[Page]:
    prefixes = C.set_prefixes()
    found = [Page(str(p.relative_to(built_site)), C.page_in_set(str(p.relative_to(built_site)), prefixes),
                  p.read_text(encoding="utf-8")) for p in sorted(built_site.rglob("*.html"))]
    # every set the build makes is read: the default at the root, each other one under its id
    for prefix in prefixes:
        assert any(p.relative.startswith(prefix + "course/") for p in found), prefix
    assert any(p.relative == "course/derivation/index.html" for p in found)
    return found


def test_no_page_holds_a_control_character(pages):
    found = {p.relative: C.control_characters(p.html) for p in pages}
    assert {k: v for k, v in found.items() if v} == {}


def test_every_formula_of_every_page_renders_in_katex(pages, tmp_path):
    if C.katex_dir() is None:
        pytest.skip("node and node_modules/katex are needed (npm ci)")
    where: dict[tuple[str, bool], str] = {}
    for p in pages:
        for formula in C.math_spans(p.html) + C.data_formulas(p.html):
            where.setdefault(formula, p.relative)
    assert len(where) > 100  # the course's formulas, not an empty scan
    assert any("s_i=" in tex and "derivation" in page for (tex, _), page in where.items())
    errors = C.katex_errors(list(where), tmp_path)
    assert {f"{where[f]}: {f[0][:80]}": e for f, e in errors.items()} == {}


def test_reader_text_has_no_doubled_word_null_ascii_symbol_or_unrendered_tex(pages):
    found = {}
    for p in pages:
        problems = [f"{rule}: {words}" for rule, words in C.prose_problems(C.reader_blocks(p.html))
                    if not C.allowed(rule, p.within_set)]
        if problems:
            found[p.relative] = sorted(set(problems))
    assert found == {}


def test_each_diagnosis_names_its_chapter_by_the_pages_title(pages, built_site):
    with_cards = [p for p in pages if "unipo-diagnosis-source" in p.html]
    assert with_cards  # the chapters' run cards carry the diagnoses
    wrong = {p.relative: C.mistitled_links(built_site / p.relative, built_site, "unipo-diagnosis-source")
             for p in with_cards}
    assert {k: v for k, v in wrong.items() if v} == {}
    assert sum(len(C.links_within(p.html, "unipo-diagnosis-source")) for p in with_cards) >= 8
