"""Slot-by-slot comparison of algorithms (site/views/compare/diff.py) and its HTML (site/views/compare/compare.py)."""

from __future__ import annotations

import json
import re

import pytest

from unipo_build.site.render import escape_text
from unipo_build.core.specs import SLOTS, load_specs, resolve
from unipo_build.site.views.compare.compare import (
    compare_html,
    compare_selector_html,
    fill_statuses,
    placeholder_formula,
    selector_data,
)
from unipo_build.site.views.compare.diff import (
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


def test_compare_html_marks_formulas_rows_and_legend_alike(specs):
    html = compare_html(specs["grpo"], specs["dapo"])
    rows = re.findall(r'<li class="unipo-diff-row unipo-diff-(\w+)" data-slot="(\w+)" data-status="(\w+)">', html)
    expected = statuses(specs["grpo"], specs["dapo"])
    # the slots that changed first, in slot order; the unchanged ones folded after them
    changed = [(slot, s) for slot, s in expected.items() if s != "unchanged"]
    same = [(slot, s) for slot, s in expected.items() if s == "unchanged"]
    assert [(slot, status) for _, slot, status in rows] == changed + same
    assert all(cls == status for cls, _, status in rows)
    folded = html[html.index('<details class="unipo-diff-same">'):]
    assert folded.count('data-status="unchanged"') == len(same) and 'data-status="modified"' not in folded
    assert "<summary>" in folded and ", ".join(SLOT_LABELS[slot] for slot, _ in same) in folded
    # the formulas carry the same status class on each slot's part
    assert r"\htmlClass{unipo-slot unipo-slot-kl unipo-diff-removed}" in html
    assert r"\htmlClass{unipo-slot unipo-slot-filter unipo-diff-added}" in html
    assert r"\htmlClass{unipo-slot unipo-slot-clip unipo-diff-modified}" in html
    assert "UNIPODIFF" not in html
    # one legend with the four badges, and the badge text in each row
    assert html.count('class="unipo-diff-legend-item') == 4
    assert "\u2212 removed" in html and "+ added" in html and "~ modified" in html and "= unchanged" in html
    # unchanged slots are shown once for both (advantage, ratio and the rollout correction here)
    assert len(same) == 3 and html.count('data-side="both"') == len(same)


def test_selector_data_covers_every_pair(specs):
    data = selector_data(specs)
    assert len(data["pairs"]) == len(specs) ** 2
    assert data["order"][0] == "reinforce"  # lineage order
    for key, pair in data["pairs"].items():
        a, b = key.split("|")
        assert {slot: v["status"] for slot, v in pair.items()} == statuses(specs[a], specs[b])
    # the placeholder formula, filled, is what compare_html shows
    pair = {slot: v["status"] for slot, v in data["pairs"]["ppo|grpo"].items()}
    filled = fill_statuses(placeholder_formula(specs["ppo"]), pair)
    assert escape_text(filled) in compare_html(specs["ppo"], specs["grpo"])


def test_compare_selector_html(specs):
    html = compare_selector_html(specs, "dapo", "dr_grpo", uid="cmp-test")
    script = re.search(r'<template class="unipo-data" id="[^"]+-data" data-search-exclude>(.*?)</template>', html).group(1)
    data = json.loads(script)
    assert set(data["specs"]) == set(specs)
    assert html.count("<option") == 2 * len(specs)
    assert 'value="dapo" selected' in html and 'value="dr_grpo" selected' in html
    with pytest.raises(ValueError, match="no algorithm"):
        compare_selector_html(specs, "dapo", "nope")


def test_every_slot_has_a_row(specs):
    html = compare_html(specs["reinforce"], specs["dr_grpo"])
    for slot in SLOTS:
        assert f'data-slot="{slot}"' in html
