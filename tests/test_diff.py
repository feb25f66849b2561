"""Slot-by-slot comparison of algorithms (site/facts/diff.py) and the data the build sends for it
(site/views/compare/compare.py); the drawn comparison is checked in tests/browser/test_compare_render.py."""

from __future__ import annotations

import json
import re

import pytest

from unipo_build.core.specs import SLOTS, load_specs, resolve
from unipo_build.site.views.compare.compare import (
    compare_data,
    compare_html,
    compare_selector_html,
    pair_data,
    pair_of,
    placeholder_formula,
    selector_data,
)
from unipo_build.site.views.explainer.explainer import DIFF_PLACEHOLDER
from unipo_build.site.facts.diff import (
    SLOT_LABELS,
    DIFF_STYLES,
    STATUSES,
    diff_algorithms,
    diff_sentence,
    slot_status,
    statuses,
    summary_counts,
)


@pytest.fixture(scope="module")
def specs():
    return load_specs()


def test_slot_status_rules():
    assert slot_status("symmetric", {"eps": 0.2}, "symmetric", {"eps": 0.2}) == ("unchanged", ())
    assert slot_status("symmetric", {"eps": 0.2}, "symmetric", {"eps": 0.3}) == ("modified", ("eps",))
    assert slot_status("symmetric", {"eps": 0.2}, "asymmetric", {"eps_low": 0.2, "eps_high": 0.28}) == ("modified", ("kind",))
    assert slot_status("none", {}, "in_loss", {"beta": 0.04}) == ("added", ("kind",))
    assert slot_status("in_loss", {"beta": 0.04}, "none", {}) == ("removed", ("kind",))
    assert slot_status("none", {}, "none", {}) == ("unchanged", ())
    # a parameter present on one side only counts as changed
    assert slot_status("gae", {"gamma": 1.0}, "gae", {"gamma": 1.0, "lam": 0.9}) == ("modified", ("lam",))


def test_grpo_to_dapo(specs):
    assert statuses(specs["grpo"], specs["dapo"]) == {
        "advantage": "unchanged", "ratio": "unchanged", "clip": "modified", "kl": "removed",
        "aggregation": "modified", "filter": "added", "shaping": "added", "correction": "unchanged"}


def test_reinforce_to_ppo_adds_ratio_clip_and_kl(specs):
    s = statuses(specs["reinforce"], specs["ppo"])
    assert s["ratio"] == "added" and s["clip"] == "added" and s["kl"] == "added"
    assert s["advantage"] == "modified" and s["aggregation"] == "unchanged"


def test_dapo_to_dr_grpo(specs):
    diffs = {d.slot: d for d in diff_algorithms(specs["dapo"], specs["dr_grpo"])}
    assert diffs["advantage"].status == "modified" and diffs["advantage"].changed == ("kind",)
    assert diffs["clip"].status == "modified"  # asymmetric -> symmetric
    assert diffs["aggregation"].status == "modified"  # token_mean -> constant normaliser
    assert diffs["filter"].status == "removed" and diffs["shaping"].status == "removed"
    assert diffs["kl"].status == "unchanged"  # none in both


def test_diff_is_antisymmetric(specs):
    flip = {"added": "removed", "removed": "added", "modified": "modified", "unchanged": "unchanged"}
    for a in specs.values():
        assert set(statuses(a, a).values()) == {"unchanged"}
        for b in specs.values():
            ab, ba = statuses(a, b), statuses(b, a)
            assert ab == {slot: flip[s] for slot, s in ba.items()}, (a.id, b.id)


def test_parameters_only_change_is_modified(specs):
    grpo = specs["grpo"]
    other = grpo.model_copy(deep=True)
    other.components["kl"].params = {"estimator": "k3", "beta": 0.1}
    d = {x.slot: x for x in diff_algorithms(grpo, other)}
    assert d["kl"].status == "modified" and d["kl"].changed == ("beta",)
    # resolved run configurations compare the same way
    r1, r2 = resolve(specs["dr_grpo"], max_new_tokens=32), resolve(specs["dr_grpo"], max_new_tokens=64)
    d2 = {x.slot: x for x in diff_algorithms(r1, r2)}
    assert d2["aggregation"].status == "modified" and d2["aggregation"].changed == ("normalizer",)


def test_sentence_and_counts(specs):
    diffs = diff_algorithms(specs["grpo"], specs["dapo"])
    assert summary_counts(diffs) == {"unchanged": 3, "modified": 2, "added": 2, "removed": 1}
    assert diff_sentence("GRPO", "DAPO", diffs) == \
        "From GRPO to DAPO: 2 modified, 2 added, 1 removed, 3 unchanged (of the 8 slots)."


def test_one_scheme_with_badges():
    assert set(DIFF_STYLES) == set(STATUSES)
    # every status is readable without colour: a distinct symbol and a word
    assert len({DIFF_STYLES[s]["symbol"] for s in STATUSES}) == 4
    colours = [DIFF_STYLES[s]["colour"] for s in ("modified", "added", "removed")]
    assert len(set(colours)) == 3 and DIFF_STYLES["unchanged"]["colour"] is None


def _view_data(html: str) -> dict:
    return json.loads(re.search(r'<template class="unipo-data" id="[^"]+-data" data-search-exclude>(.*?)</template>',
                                html).group(1))


def test_compare_html_sends_the_pair_as_data_and_an_empty_target(specs):
    html = compare_html(specs["grpo"], specs["dapo"], uid="cmp-fixed")
    assert html.startswith('<div class="unipo-compare-view" id="cmp-fixed"><template class="unipo-data" id="cmp-fixed-data"')
    assert html.endswith('<div class="unipo-compare-target" aria-live="polite"></div></div>')
    assert "unipo-diff-row" not in html  # compare.js draws the rows
    data = _view_data(html)
    assert data == json.loads(json.dumps(compare_data(specs["grpo"], specs["dapo"])))
    assert data["ids"] == {"a": "grpo", "b": "dapo"} and data["gaps"] == {}
    assert [data["specs"][k]["name"] for k in ("a", "b")] == ["GRPO", "DAPO"]
    pair = data["pairs"]["a|b"]
    assert {slot: v["status"] for slot, v in pair.items()} == statuses(specs["grpo"], specs["dapo"])
    # unchanged slots are shown once for both (advantage, ratio and the rollout correction here)
    assert [slot for slot, v in pair.items() if v["status"] == "unchanged"] == ["advantage", "ratio", "correction"]
    # each side's formula has a placeholder on each slot's part, which compare.js fills with the pair's
    # status (tests/browser/test_compare_render.py checks the drawn classes): GRPO's KL term is removed,
    # DAPO's filter added and its clip modified
    def marked(formula: str, slot: str) -> bool:
        return r"\htmlClass{unipo-slot unipo-slot-" + slot + " " + DIFF_PLACEHOLDER.format(slot=slot) + "}" in formula

    assert marked(data["specs"]["a"]["formula"], "kl") and pair["kl"]["status"] == "removed"
    assert marked(data["specs"]["b"]["formula"], "filter") and pair["filter"]["status"] == "added"
    assert marked(data["specs"]["b"]["formula"], "clip") and pair["clip"]["status"] == "modified"
    # the legend's four statuses, each with a symbol and a word
    assert data["statuses"] == list(STATUSES) and data["styles"] == DIFF_STYLES
    assert set(data["slots"]) == set(SLOTS) and data["slot_labels"] == SLOT_LABELS
    # the words a changed clip row shows: its kinds, what changed, DAPO's reason
    assert pair["clip"]["changed"] and data["specs"]["b"]["slots"]["clip"]["explanation"]
    assert data["specs"]["a"]["slots"]["clip"]["kind_label"] != data["specs"]["b"]["slots"]["clip"]["kind_label"]


def test_selector_data_covers_every_pair(specs):
    data = selector_data(specs)
    assert data["order"][0] == "reinforce"  # lineage order
    # each pair once (x before y in the order), without its unchanged slots
    order = data["order"]
    assert list(data["pairs"]) == [f"{x}|{y}" for i, x in enumerate(order) for y in order[i + 1:]]
    assert all(v["status"] != "unchanged" for pair in data["pairs"].values() for v in pair.values())
    # every pair, either way round and with itself, reads back whole: as the diff says it
    for a in order:
        for b in order:
            pair = pair_of(data, a, b)
            assert list(pair) == list(SLOTS)
            assert pair == pair_data(diff_algorithms(specs[a], specs[b])), (a, b)
    # the selector's and a fixed comparison's data are the same per side and per pair
    fixed = compare_data(specs["ppo"], specs["grpo"])
    assert fixed["specs"]["a"] == data["specs"]["ppo"] and fixed["specs"]["b"] == data["specs"]["grpo"]
    assert fixed["pairs"]["a|b"] == pair_of(data, "ppo", "grpo") == pair_of(fixed, "a", "b")
    assert data["specs"]["ppo"]["formula"] == placeholder_formula(specs["ppo"])


def test_a_pair_read_the_other_way_swaps_added_and_removed():
    """pair_of (and compare.js comparePair) by hand: b|a from a|b, a slot not listed unchanged."""
    data = {"slots": ["kl", "filter", "clip", "ratio"],
            "pairs": {"a|b": {"kl": {"status": "removed", "changed": ["kind"]},
                              "filter": {"status": "added", "changed": ["kind"]},
                              "clip": {"status": "modified", "changed": ["eps_high"]}}}}
    unchanged = {"status": "unchanged", "changed": []}
    assert pair_of(data, "b", "a") == {"kl": {"status": "added", "changed": ["kind"]},
                                       "filter": {"status": "removed", "changed": ["kind"]},
                                       "clip": {"status": "modified", "changed": ["eps_high"]}, "ratio": unchanged}
    assert pair_of(data, "a", "b")["ratio"] == unchanged and pair_of(data, "a", "b")["kl"]["status"] == "removed"
    assert pair_of(data, "a", "a") == {slot: unchanged for slot in data["slots"]}


def test_compare_selector_html(specs):
    html = compare_selector_html(specs, "dapo", "dr_grpo", uid="cmp-test")
    script = re.search(r'<template class="unipo-data" id="[^"]+-data" data-search-exclude>(.*?)</template>', html).group(1)
    data = json.loads(script)
    assert set(data["specs"]) == set(specs)
    assert html.count("<option") == 2 * len(specs)
    assert 'value="dapo" selected' in html and 'value="dr_grpo" selected' in html
    # the opening pair is drawn by compare.js: the target is empty
    assert '<div class="unipo-compare-target" aria-live="polite"></div></div>' in html and "unipo-diff-row" not in html
    with pytest.raises(ValueError, match="no algorithm"):
        compare_selector_html(specs, "dapo", "nope")


def test_every_slot_has_a_status_and_both_sides(specs):
    data = compare_data(specs["reinforce"], specs["dr_grpo"])
    assert set(data["pairs"]["a|b"]) == set(SLOTS)
    assert set(data["specs"]["a"]["slots"]) == set(data["specs"]["b"]["slots"]) == set(SLOTS)
