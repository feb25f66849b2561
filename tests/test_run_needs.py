"""A chapter on a set without its runs (issue 47 item 1; issue 43's "a missing run names the suite entry that
makes it"): unipo_build/site/run_needs.py by hand on made-up sets, then the built site's both sets."""

from __future__ import annotations

import html
import re
from pathlib import Path

import pytest

from page_checks import EDGE, SKIPPED, page_in_set, reader_blocks, set_prefixes
from unipo_build.core import sets
from unipo_build.site import run_needs

#: The chapters the gpu set has none of the runs of (data/runs-gpu), and the runs each declares.
ABSENT_ON_GPU = {
    "course/algorithms/cispo/index.html": ("cispo", "dual_clip"),
    "course/algorithms/beyond_grpo/index.html": ("sapo", "gmpo", "grpo_batch_std"),
    "course/compare/sampler/index.html": ("async8_grpo", "async8_tis", "async8_mis"),
    "course/algorithms/gspo/index.html": ("gspo",),
    "course/algorithms/dapo_dr/index.html": ("dapo_dr",),
}
#: Strings a reader page must never hold: a missing run said as a sentence, or an author's instruction.
NOT_FOR_READERS = ("cannot be measured", "This build has no", "no finished run", "Train one (see the README)",
                   "in this build)")


class _Catalog:
    """A made-up set's runs: ``named`` as runs.RunCatalog's (a list of runs, [] when there is none)."""

    def __init__(self, *names: str):
        self.names = set(names)

    def named(self, name):
        return [name] if name in self.names else []


def _set(set_id: str, default: bool = False) -> sets.RunSet:
    return sets.RunSet(id=set_id, label=f"{set_id} set", runs=None if default else Path(f"/x/{set_id}"),
                       default=default)


def test_lacking_and_the_sets_that_have_them_by_hand():
    here = _Catalog("grpo", "dapo")
    assert run_needs.lacking(["grpo", "cispo", "dual_clip"], here) == ["cispo", "dual_clip"]
    assert run_needs.lacking([], here) == []
    # three other sets: one has both, one only one of them, one both and more
    others = [run_needs.OtherSet(_set("tiny", True), _Catalog("cispo", "dual_clip", "grpo")),
              run_needs.OtherSet(_set("half"), _Catalog("cispo")),
              run_needs.OtherSet(_set("real"), _Catalog("cispo", "dual_clip", "sapo"))]
    assert [s.id for s in run_needs.sets_having(["cispo", "dual_clip"], others)] == ["tiny", "real"]
    assert run_needs.sets_having(["gmpo"], others) == []


def test_declared_reads_the_front_matter():
    assert run_needs.declared({}) == ()
    assert run_needs.declared({"needs_runs": "cispo"}) == ("cispo",)
    assert run_needs.declared({"needs_runs": ["cispo", " sapo "]}) == ("cispo", "sapo")
    with pytest.raises(run_needs.AuthorError, match="needs_runs"):
        run_needs.declared({"needs_runs": [1]}, "x.md")


def test_the_note_names_the_runs_and_links_the_sets_that_have_them():
    note = run_needs.note_html("GPU set", [("CISPO", "cispo"), ("Dual-clip GRPO", "dual_clip")],
                               [("CPU set (tiny)", "../../../course/algorithms/cispo/")])
    assert "CISPO (<code>cispo</code>) or Dual-clip GRPO (<code>dual_clip</code>)" in note
    assert '<a href="../../../course/algorithms/cispo/">CPU set (tiny)</a>' in note
    alone = run_needs.note_html("GPU set", [("GSPO", "gspo")], [])
    assert "No set of this site has them yet" in alone and "<a " not in alone
    for text in (note, alone):
        assert not any(s in text for s in NOT_FOR_READERS + ("UNIPO_RUNS", "README"))


def test_the_suite_entry_that_makes_a_run(tmp_path):
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "suite.yaml").write_text("runs:\n  - {name: cispo, algorithm: cispo, seed: 0}\n")
    (tmp_path / "data" / "suite-gpu.yaml").write_text("runs:\n  - {name: grpo, algorithm: grpo, seed: 0}\n")
    tiny, gpu, real = _set("tiny", True), _set("gpu"), _set("real")
    assert run_needs.suite_entry_text(tmp_path, tiny, "cispo") == "data/suite.yaml's entry name: cispo makes it"
    assert run_needs.suite_entry_text(tmp_path, gpu, "cispo") == "data/suite-gpu.yaml has no entry that makes it"
    assert "no suite file" in run_needs.suite_entry_text(tmp_path, real, "cispo")


# ---------------------------------------------------------------------------
# The built site, both sets
# ---------------------------------------------------------------------------

def _read(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def _nav_items(page_html: str) -> list[str]:
    return re.findall(r'class="md-nav__link[^"]*"[^>]*>(.*?)</a>', page_html, re.S)


def test_a_chapter_on_a_set_without_its_runs(built_site, site_build):
    gpu = set_prefixes()[0]
    for page, names in ABSENT_ON_GPU.items():
        on_gpu, on_tiny = _read(built_site / gpu / page), _read(built_site / page)
        # one note, right under the title, naming the runs and linking the same page in the tiny set
        notes = re.findall(r'<div class="admonition info unipo-runs-absent">.*?</div>', on_gpu, re.S)
        assert len(notes) == 1, page
        assert on_gpu.index("</h1>") < on_gpu.index("unipo-runs-absent"), page
        for name in names:
            assert f"<code>{name}</code>" in notes[0], (page, name)
        href = re.search(r'<a href="([^"]+)">CPU set', notes[0]).group(1)
        target = (built_site / gpu / page).parent / html.unescape(href)
        assert (target / "index.html").resolve() == (built_site / page).resolve(), (page, href)
        assert "unipo-runs-absent" not in on_tiny, page
        # the nav of the gpu set marks the page on every page of that set; the tiny set's never does
        folder = page[:-len("index.html")]
        marked = [item for item in _nav_items(_read(built_site / gpu / "index.html")) if run_needs.NAV_MARK in item]
        assert len(marked) == len(ABSENT_ON_GPU), marked
        assert run_needs.NAV_MARK not in _read(built_site / "index.html")
        assert run_needs.NAV_MARK not in on_tiny, folder
    # the build log says each missing run once, at INFO, naming the suite file
    if site_build.log is not None:
        lines = [line for line in site_build.log.splitlines() if "unipo: the gpu set has no run " in line]
        said = [re.search(r"has no run (\S+)", line).group(1) for line in lines]
        assert sorted(said) == sorted(set(said)) and "cispo" in said, lines
        assert all(line.lstrip().startswith("INFO") and "data/suite-gpu.yaml" in line for line in lines), lines


def test_no_missing_run_sentence_or_author_instruction_on_those_chapters(built_site):
    for prefix in [""] + set_prefixes():
        for page in ABSENT_ON_GPU:
            text = html.unescape(re.sub(r"<[^>]+>", " ", _read(built_site / prefix / page)))
            for s in NOT_FOR_READERS + ("UNIPO_RUNS", "the card above fills in"):
                if s == "the card above fills in" and not prefix:
                    continue
                assert s not in text, (prefix + page, s)


#: Strings no reader page of any set holds: a missing run said as a sentence, or an author's instruction.
NOT_ON_ANY_PAGE = ("This build has no", "cannot be measured", "Train one", "UNIPO_RUNS", "no finished run",
                   "in this build)", "No run in this build", "then rebuild")
#: Pages that document these for authors: how the build finds runs (UNIPO_RUNS) and what to do when a set lacks
#: a chapter's runs (train it, then rebuild) is the guides' business, never a chapter's (run_needs.py).
FOR_AUTHORS = ("guides/own-logs/", "guides/openrlhf/", "guides/contribute/")


def reader_text(page_html: str) -> str:
    """A page's text as a reader sees it: scripts, styles and templates (data, not text) out, tags stripped."""
    words = re.sub(r"<(script|style|template)\b.*?</\1>", " ", page_html, flags=re.S | re.I)
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", words)).split())


def test_no_page_of_any_set_says_a_run_is_missing_or_instructs_an_author(built_site):
    prefixes = set_prefixes()
    found = []
    for path in sorted(built_site.rglob("*.html")):
        relative = path.relative_to(built_site).as_posix()
        if page_in_set(relative, prefixes).startswith(FOR_AUTHORS):
            continue
        text = reader_text(_read(path))
        found += [f"{relative}: {text[max(0, i - 60):i + 80]}" for s in NOT_ON_ANY_PAGE
                  for i in [text.find(s)] if i >= 0]
    assert not found, "\n".join(found)
    pages = {page_in_set(p.relative_to(built_site).as_posix(), prefixes)
             for p in (built_site / prefixes[0]).rglob("*.html")}
    assert "reference/judging/index.html" in pages and "course/compare/ladder/index.html" in pages
    # the gpu set's lists leave out what it lacks: the worked example on a pair it has, the rungs it has
    gpu = prefixes[0]
    judging = reader_text(_read(built_site / gpu / "reference/judging/index.html"))
    assert "Worked through on the course's runs" in judging and "In this build, " in judging
    ladder = reader_text(_read(built_site / gpu / "course/compare/ladder/index.html"))
    assert "From GRPO to CISPO" not in ladder and "This set has no run of the rung" in ladder
    assert "From GRPO to CISPO" in reader_text(_read(built_site / "course/compare/ladder/index.html"))


def test_the_guides_tell_authors_what_reader_pages_do_not(built_site):
    guide = reader_text(_read(built_site / "guides/own-logs/index.html"))
    for said in ("needs_runs", "has_runs", "runs not in this set", "data/suite-gpu.yaml", "rebuild"):
        assert said in guide, said


def test_the_tiny_set_keeps_those_chapters_whole(built_site):
    cispo = _read(built_site / "course/algorithms/cispo/index.html")
    for kept in ('class="unipo-inspector"', "How many tokens kept a gradient", "Did CISPO learn more?",
                 "How far the ratios went, against the floor", "Run card"):
        assert kept in cispo, kept
    sampler = _read(built_site / "course/compare/sampler/index.html")
    for kept in ("How large the mismatch is", "Do the corrections win it back?", 'class="unipo-inspector"'):
        assert kept in sampler, kept
    beyond = _read(built_site / "course/algorithms/beyond_grpo/index.html")
    for kept in ("What the gate did.", "What the wider clip did.", "What the batch", "All five over training"):
        assert kept in beyond, kept


#: A fill that broke a sentence: "((" or a parenthesis left open at the end of a block, formulas left out.
def fill_parentheses(blocks: list[str]) -> list[str]:
    found = []
    for block in blocks:
        words = block.replace(EDGE, "")  # a formula or code left out (SKIPPED) parts two parentheses
        if re.search(r"\(\s*\(", words) or words.count("(") > words.count(")"):
            found.append(" ".join(words.split())[:160])
    return found


def test_fill_parentheses_finds_a_broken_fill():
    assert fill_parentheses(["within one rollout ((no dual_clip run) here, on answers"])
    assert fill_parentheses(["within one rollout (2 here, on answers"])
    assert fill_parentheses([f"one rollout ({EDGE}(no dual_clip run){EDGE} here, on"])
    assert not fill_parentheses(["within one rollout (2 here), on answers", f"ratio {SKIPPED} (a formula)",
                                 f"TRL's too ({SKIPPED} (its default))"])


@pytest.mark.parametrize("page", sorted(ABSENT_ON_GPU))
def test_no_broken_fill_on_those_chapters(built_site, page):
    for prefix in [""] + set_prefixes():
        assert fill_parentheses(reader_blocks(_read(built_site / prefix / page))) == [], prefix + page
