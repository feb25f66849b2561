"""The comparison's one rendering, in a real browser (issue 31: one view, one rendering).

The build sends each comparison's data and an empty target (site/views/compare/compare.py);
views/compare/compare.js renderCompare draws it: the fixed comparisons of the ``compare`` macro, the opening
pair of a ``compare_selector`` and a run compared with its spec (``explain_match``, with an
import's gaps). These tests hold that rendering to what the build's copy of it was checked for:
each row's status and badge, the order (changed slots first, the unchanged folded after them),
the formulas' status classes, the legend, the change text and the changed parameters' words, the
"both" side of unchanged slots, the gap lines under the run's label, and names shown as text.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import browser_harness as H
from helpers_runlog import trl_fixture_with_a_gap
from unipo_build.core.specs import SLOTS, load_specs
from unipo_build.site.facts.diff import SLOT_LABELS, diff_algorithms, diff_sentence
from unipo_build.trainers import import_log

pytestmark = pytest.mark.browser

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
CASES = [
    'compare("grpo", "dapo")',
    'compare("reinforce", "dr_grpo")',
    'compare("grpo", "grpo")',
    'compare_selector("dapo", "dr_grpo")',
    'explain_match("trl-gaps")',
    'explain_match("trl-gap")',
]
PAGE_SOURCE = "# Compare test\n\n" + "".join(f"## Case {i}\n\n{{{{ {c} }}}}\n\n" for i, c in enumerate(CASES))
SPECS = load_specs()


@pytest.fixture(scope="module")
def compare_url(tmp_path_factory):
    H.require_browser()
    tmp = tmp_path_factory.mktemp("compare-site")
    runs = tmp / "runs"
    import_log("trl", FIXTURES / "trl" / "gaps", runs / "trl-gaps", tap=FIXTURES / "trl" / "gaps-tap")
    src, tap = trl_fixture_with_a_gap(tmp / "fixture")  # TRL's bias-corrected KL: a gap in the kl slot
    import_log("trl", src, runs / "trl-gap", tap=tap)
    site = H.build_test_site(tmp, {"index.md": PAGE_SOURCE}, runs)
    with H.serving(site) as url:
        yield url, site


@pytest.fixture
def page(driver, compare_url):
    url, site = compare_url
    driver.get(url)
    H.wait_rendered(driver)
    H.wait_js(driver, "return document.querySelectorAll('.unipo-compare').length === %d" % len(CASES),
              what="every comparison drawn")
    H.wait_js(driver, "return document.querySelectorAll('.unipo-compare .arithmatex:not([data-unipo-rendered])')"
                      ".length === 0", what="the formulas typeset")
    yield driver, site
    assert H.console_errors(driver) == []


def _case(driver, i: int) -> dict:
    """What the reader sees of comparison ``i``: rows, formulas' classes, legend, sentence, texts."""
    return driver.execute_script("""
        const box = document.querySelectorAll('.unipo-compare')[arguments[0]];
        const text = e => e ? e.textContent.replace(/\\s+/g, ' ').trim() : null;
        const rows = [...box.querySelectorAll('.unipo-diff-row')].map(r => ({
          slot: r.dataset.slot, status: r.dataset.status, cls: r.classList.contains('unipo-diff-' + r.dataset.status),
          folded: !!r.closest('.unipo-diff-same'), badge: text(r.querySelector('.unipo-diff-badge')),
          change: text(r.querySelector('.unipo-diff-change')), changed: text(r.querySelector('.unipo-diff-changed')),
          sides: [...r.querySelectorAll('.unipo-diff-side')].map(s => [s.dataset.side, text(s.querySelector('.unipo-diff-algo'))]),
          why: text(r.querySelector('.unipo-diff-why')),
          gaps: [...r.querySelectorAll('.unipo-diff-gap')].map(text),
          gapNames: [...r.querySelectorAll('.unipo-diff-gap .unipo-diff-algo')].map(text)}));
        return {a: box.dataset.a, b: box.dataset.b, rows: rows,
          legend: [...box.querySelectorAll('.unipo-diff-legend-item')].map(text),
          sentence: text(box.querySelector('.unipo-compare-sentence')),
          label: box.querySelector('.unipo-compare-sentence').getAttribute('aria-label'),
          names: [...box.querySelectorAll('.unipo-compare-formula-head strong')].map(text),
          same: text(box.querySelector('.unipo-diff-same-names')),
          katexClasses: [...box.querySelectorAll('.unipo-compare-formula .katex [class*=unipo-diff-]')].map(e => e.className),
          raw: box.innerHTML};""", i)


def _expected_order(a: str, b: str) -> list[tuple[str, str]]:
    diffs = diff_algorithms(SPECS[a], SPECS[b])
    return ([(d.slot, d.status) for d in diffs if d.status != "unchanged"]
            + [(d.slot, d.status) for d in diffs if d.status == "unchanged"])


def test_a_fixed_comparison_marks_formulas_rows_and_legend_alike(page):
    driver, _ = page
    c = _case(driver, 0)
    assert (c["a"], c["b"]) == ("grpo", "dapo")
    rows = c["rows"]
    assert [(r["slot"], r["status"]) for r in rows] == _expected_order("grpo", "dapo")
    assert all(r["cls"] for r in rows)
    same = [r for r in rows if r["status"] == "unchanged"]
    # the unchanged slots folded after the changed ones, named in one line, each shown once for both
    assert len(same) == 3 and all(r["folded"] for r in same) and not any(r["folded"] for r in rows if r not in same)
    assert c["same"] == ", ".join(SLOT_LABELS[r["slot"]] for r in same)
    assert all(r["sides"] == [["both", "GRPO and DAPO"]] for r in same)
    # the formulas carry each slot's status class, every placeholder filled
    joined = " ".join(c["katexClasses"])
    for slot, status in (("kl", "removed"), ("filter", "added"), ("clip", "modified")):
        assert f"unipo-slot-{slot} unipo-diff-{status}" in joined or \
            any(f"unipo-slot-{slot}" in k and f"unipo-diff-{status}" in k for k in c["katexClasses"]), (slot, joined)
    assert "UNIPODIFF" not in c["raw"]
    # one legend with the four badges, and each row's badge in words
    assert len(c["legend"]) == 4
    badges = {"unchanged": "= unchanged", "modified": "~ modified", "added": "+ added", "removed": "\u2212 removed"}
    assert all(r["badge"] == badges[r["status"]] for r in rows)
    assert c["names"] == ["GRPO", "DAPO"]
    assert c["sentence"].startswith("From GRPO to DAPO: ")
    assert c["label"] == diff_sentence("GRPO", "DAPO", diff_algorithms(SPECS["grpo"], SPECS["dapo"]))
    # the sentence's badges: each status's count, changed ones first
    counts = {s: sum(1 for r in rows if r["status"] == s) for s in badges}
    assert c["sentence"] == "From GRPO to DAPO: " + " ".join(
        badges[s].replace(" ", f" {counts[s]} ", 1) for s in ("modified", "added", "removed", "unchanged") if counts[s])
    # a changed slot says what it was and what it is; the removed KL says nothing is left
    kl = next(r for r in rows if r["slot"] == "kl")
    assert kl["change"].endswith("\u2192 nothing") and kl["sides"][0][0] == "a" and kl["sides"][1] == ["b", "DAPO"]
    clip = next(r for r in rows if r["slot"] == "clip")
    assert "\u2192" in clip["change"] and clip["changed"].startswith("changed: ")
    assert clip["why"] and clip["why"].startswith("DAPO ")


def test_every_slot_has_a_row_and_a_pair_with_itself_is_all_unchanged(page):
    driver, _ = page
    c = _case(driver, 1)
    assert sorted(r["slot"] for r in c["rows"]) == sorted(SLOTS)
    assert [(r["slot"], r["status"]) for r in c["rows"]] == _expected_order("reinforce", "dr_grpo")
    same = _case(driver, 2)
    assert (same["a"], same["b"]) == ("grpo", "grpo")
    assert all(r["status"] == "unchanged" for r in same["rows"]) and len(same["rows"]) == len(SLOTS)
    # the "both" side names the algorithm once when both sides are it
    assert all(r["sides"] == [["both", "GRPO"]] for r in same["rows"])


def test_the_selector_draws_its_opening_pair_on_load(page):
    driver, site = page
    c = _case(driver, 3)
    assert (c["a"], c["b"]) == ("dapo", "dr_grpo")
    assert [(r["slot"], r["status"]) for r in c["rows"]] == _expected_order("dapo", "dr_grpo")
    assert driver.execute_script("return document.querySelector('.unipo-compare-selector').dataset.pair") == "dapo|dr_grpo"
    # the built page holds no comparison markup: the script is its one renderer
    html = (site / "index.html").read_text(encoding="utf-8")
    assert "unipo-diff-row" not in html.split("<template")[0] and 'class="unipo-compare"' not in html


def test_a_run_compared_with_its_spec_shows_the_gaps_under_its_label(page):
    """The TRL run with scale_rewards='batch' and mask_truncated_completions: its components hold those kinds
    (group_mean_batch_std, mask_truncated), so its nearest spec is batch-std GRPO (the same advantage), the filter
    is added, and no row has a gap."""
    driver, _ = page
    c = _case(driver, 4)
    assert (c["a"], c["b"]) == ("grpo_batch_std", "trl-gaps")
    assert c["names"] == ["Batch-std GRPO", "run trl-gaps"]
    assert c["sentence"] == "From Batch-std GRPO to run trl-gaps: + 1 added = 7 unchanged"
    rows = {r["slot"]: r for r in c["rows"]}
    assert (rows["advantage"]["status"], rows["filter"]["status"]) == ("unchanged", "added")
    assert rows["ratio"]["status"] == rows["aggregation"]["status"] == "unchanged"
    assert rows["ratio"]["sides"] == [["both", "Batch-std GRPO and run trl-gaps"]]
    assert all(not r["gaps"] for r in c["rows"])
    # the run's side has no words of its own
    assert all(r["why"] is None for r in c["rows"])
    # TRL's bias-corrected KL has a gap: its kl row says what TRL ran under the run's label
    c = _case(driver, 5)
    rows = {r["slot"]: r for r in c["rows"]}
    assert rows["kl"]["status"] == "modified"
    assert any(g.startswith("run trl-gap ran use_bias_correction_kl = True (the KL times the ratio): no kind "
                            "expresses it; nearest: k3 in the loss") for g in rows["kl"]["gaps"])
    assert all(n == "run trl-gap" for r in c["rows"] for n in r["gapNames"])


def test_hostile_names_are_text(page):
    """A comparison whose names, words and gap lines hold markup shows them as text: the data is
    drawn with textContent, never parsed as HTML."""
    driver, _ = page
    evil = '<img src=x onerror="window.__pwned=1"><b>bold</b>'
    shown = driver.execute_script("""
        const data = JSON.parse(JSON.stringify(window.UNIPO.data(
          document.querySelectorAll('.unipo-compare-view')[0].id + '-data')));
        const evil = arguments[0];
        data.specs.b.name = evil;
        for (const slot of data.slots) { data.specs.b.slots[slot].explanation = evil; data.specs.b.slots[slot].kind_label = evil; }
        data.gaps = {clip: [evil]};
        const box = document.createElement('div');
        box.className = 'unipo-compare-view';
        box.id = 'evil-compare';
        const tpl = document.createElement('template');
        tpl.className = 'unipo-data'; tpl.id = 'evil-compare-data'; tpl.content.textContent = JSON.stringify(data);
        const target = document.createElement('div'); target.className = 'unipo-compare-target';
        box.append(tpl, target);
        document.querySelector('article, body').appendChild(box);
        window.UNIPOViews.renderComparisons(box.parentNode);
        const c = box.querySelector('.unipo-compare');
        return {imgs: c.querySelectorAll('img, b').length, head: c.querySelector('.unipo-compare-formula[data-side=b] strong').textContent,
                gap: c.querySelector('.unipo-diff-row[data-slot=clip] .unipo-diff-gap').textContent,
                why: c.querySelector('.unipo-diff-row[data-slot=clip] .unipo-diff-why').textContent};""", evil)
    assert shown["imgs"] == 0
    assert shown["head"] == evil and shown["gap"] == evil + " " + evil and shown["why"] == evil + " " + evil
    assert driver.execute_script("return window.__pwned === undefined")


def test_the_build_sends_each_comparison_as_data(compare_url):
    """The data of the run's comparison (one JSON template per view): the gaps per slot and its ids."""
    _, site = compare_url
    html = (site / "index.html").read_text(encoding="utf-8")
    views = re.findall(r'<div class="unipo-compare-view" id="([^"]+)"><template class="unipo-data" id="\1-data"'
                       r'[^>]*>(.*?)</template><div class="unipo-compare-target" aria-live="polite"></div></div>',
                       html, flags=re.S)
    assert len(views) == 5
    data = [json.loads(raw) for _, raw in views]
    assert [d["ids"] for d in data] == [{"a": "grpo", "b": "dapo"}, {"a": "reinforce", "b": "dr_grpo"},
                                        {"a": "grpo", "b": "grpo"}, {"a": "grpo_batch_std", "b": "trl-gaps"},
                                        {"a": "grpo", "b": "trl-gap"}]
    assert data[3]["gaps"] == {}  # scale_rewards='batch' and mask_truncated_completions map to kinds
    assert set(data[4]["gaps"]) == {"kl"}  # TRL's bias-corrected KL
