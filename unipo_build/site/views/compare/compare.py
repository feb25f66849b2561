"""Comparison mode: two objectives one above the other, slot by slot, as data.

A comparison shows algorithm A's objective above B's, each slot's part of both formulas marked
with its status (``\\htmlClass{... unipo-diff-<status>}``), then one row per slot with a text
badge (= unchanged, ~ modified, + added, − removed), both components and B's own words on its
choice. The statuses come from ``diff.py``; one colour scheme and legend (``diff.DIFF_STYLES``,
CSS in compare.css beside this module) is used in formulas, rows and text.

Where it is rendered (issue 31, "one view, one rendering"): in the browser, by compare.js
``renderCompare``, the one renderer. This module computes the data once and writes a container
with it (``render.json_data``) and an empty ``.unipo-compare-target``:

- ``compare_html(a, b, uid=...)`` (the ``compare`` macro): :func:`compare_data`, the two sides
  under the keys ``a`` and ``b`` (their ids in ``ids``), each side's formula with
  ``UNIPODIFF-<slot>`` placeholders and its components, and the pair ``a|b``'s statuses.
- ``compare_run_html(...)`` (``unipo explain``'s run pages): :func:`compare_run_data`, the same
  with the run's label as the second name, the run's id in ``ids`` and the import's gaps per
  slot (``gaps``, each line drawn as a ``unipo-diff-gap`` row under the run's label).
- ``compare_selector_html(specs, a, b)`` adds two ``<select>`` of every spec and embeds
  :func:`selector_data`: every spec and every pair's statuses, so the script draws the opening
  pair on load and any pair the reader picks without a further request. Each pair is sent once,
  without its unchanged slots (:func:`pair_of` reads it back, as compare.js ``comparePair`` does).

The comparisons' text is therefore not in the search index (as the Step Inspector's is not).
tests/test_diff.py checks the data; tests/browser/test_compare_render.py checks the drawn
comparison (statuses, badges, change text, changed parameters, gap lines, names as text).
"""

from __future__ import annotations

import hashlib
from dataclasses import replace
from typing import Any

from unipo_build.site.render import escape_text, json_data
from unipo_build.core.specs import SLOTS, AlgorithmSpec, ResolvedAlgorithm, lineage
from unipo_build.core.matching import as_run_of
from unipo_build.site.facts.diff import (
    DIFF_STYLES,
    SLOT_LABELS,
    STATUSES,
    diff_algorithms,
)
from unipo_build.site.views.explainer.explainer import (
    DIFF_PLACEHOLDER,
    PARAM_WORDS,
    Component,
    components_of,
    kind_label,
    objective_formula,
)


def placeholder_formula(spec: AlgorithmSpec | ResolvedAlgorithm) -> str:
    """The spec's objective with a ``UNIPODIFF-<slot>`` class placeholder on each slot's part."""
    return objective_formula(spec, diff_class=lambda slot: DIFF_PLACEHOLDER.format(slot=slot))


def side_data(name: str, algorithm: AlgorithmSpec | ResolvedAlgorithm, comps: dict[str, Component],
              full_name: str | None = None) -> dict[str, Any]:
    """One side of a comparison as the browser reads it: its name, its objective with placeholders
    and each slot's component (kind, label, formula, the algorithm's own words on it)."""
    return {
        "name": name,
        "full_name": full_name if full_name is not None else name,
        "formula": placeholder_formula(algorithm),
        "slots": {slot: {"kind": c.name, "kind_label": kind_label(c), "tex": c.latex(),
                         "explanation": c.explanation or ""} for slot, c in comps.items()},
    }


def pair_data(diffs) -> dict[str, dict[str, Any]]:
    """Each slot's status and what changed in it (``diff.diff_algorithms``), as the browser reads it."""
    return {d.slot: {"status": d.status, "changed": list(d.changed)} for d in diffs}


def _scheme() -> dict[str, Any]:
    return {"slots": list(SLOTS), "slot_labels": SLOT_LABELS, "styles": DIFF_STYLES, "statuses": list(STATUSES),
            "param_words": PARAM_WORDS}


def compare_data(a: AlgorithmSpec, b: AlgorithmSpec) -> dict[str, Any]:
    """A fixed comparison of two specs as data: the sides under the keys ``a`` and ``b`` (their
    ids in ``ids``), the pair ``a|b``'s statuses; compare.js ``renderCompare`` draws it."""
    return {**_scheme(), "ids": {"a": a.id, "b": b.id}, "gaps": {},
            "specs": {"a": side_data(a.name, a, components_of(a), a.full_name),
                      "b": side_data(b.name, b, components_of(b), b.full_name)},
            "pairs": {"a|b": pair_data(diff_algorithms(a, b))}}


def compare_run_data(spec: AlgorithmSpec, config: ResolvedAlgorithm, run_label: str, run_id: str,
                     gaps: dict[str, list[str]] | None = None) -> dict[str, Any]:
    """A spec above a run's resolved components, slot by slot (``unipo explain``), as data: what
    the run trained that the spec does not say. The spec's run-filled parameters (the normaliser)
    are the run's where both use the same kind, so only real differences show. ``gaps``: slot ->
    what the trainer ran there that no kind expresses (an import's gaps): such a slot is modified
    even where the nearest kind is the spec's, and its row says what the trainer did (``gaps`` in
    the data, one line each under the run's label)."""
    as_run = as_run_of(spec, config)
    diffs = diff_algorithms(as_run, config)
    gaps = {slot: list(lines) for slot, lines in (gaps or {}).items() if lines}
    if gaps:
        diffs = [replace(d, status="modified", changed=d.changed or ("trainer setting without a kind",))
                 if d.slot in gaps and d.status == "unchanged" else d for d in diffs]
    # The run's side has no words of its own: the spec's reasons are not the run's.
    return {**_scheme(), "ids": {"a": spec.id, "b": run_id}, "gaps": gaps,
            "specs": {"a": side_data(spec.name, spec, components_of(spec, as_run), spec.full_name),
                      "b": side_data(run_label, config, components_of(None, config))},
            "pairs": {"a|b": pair_data(diffs)}}


def _view_html(data: dict[str, Any], uid: str) -> str:
    return (f'<div class="unipo-compare-view" id="{escape_text(uid)}">{json_data(data, data_id=uid + "-data")}'
            f'<div class="unipo-compare-target" aria-live="polite"></div></div>')


def compare_html(a: AlgorithmSpec, b: AlgorithmSpec, *, uid: str) -> str:
    """The container of a fixed comparison: its data and the empty target compare.js draws into."""
    return _view_html(compare_data(a, b), uid)


def compare_run_html(spec: AlgorithmSpec, config: ResolvedAlgorithm, run_label: str, run_id: str,
                     gaps: dict[str, list[str]] | None = None, *, uid: str) -> str:
    """The container of a spec compared with a run (:func:`compare_run_data`), drawn by compare.js."""
    return _view_html(compare_run_data(spec, config, run_label, run_id, gaps), uid)


#: A pair read the other way: what A added, B removes (what changed in a slot is the same both ways).
MIRRORED = {"added": "removed", "removed": "added"}


def selector_pairs(specs: dict[str, AlgorithmSpec], ordered: list[str]) -> dict[str, dict[str, Any]]:
    """Each pair once, ``x|y`` with x before y in ``ordered``, with only the slots that are not unchanged. The
    rest follows (:func:`pair_of`): ``y|x`` is ``x|y`` read the other way, ``x|x`` changes nothing. Every pair
    with all its slots was 78 of the 130 KB the selector sends with each algorithm chapter (14 algorithms)."""
    return {f"{x}|{y}": {slot: d for slot, d in pair_data(diff_algorithms(specs[x], specs[y])).items()
                         if d["status"] != "unchanged"}
            for i, x in enumerate(ordered) for y in ordered[i + 1:]}


def pair_of(data: dict[str, Any], a: str, b: str) -> dict[str, dict[str, Any]]:
    """Pair ``a|b`` of a comparison's data, every slot with its status and what changed: as listed, or ``b|a``
    read the other way; a slot neither lists is unchanged (compare.js ``comparePair`` reads the data so)."""
    listed, other = data["pairs"].get(f"{a}|{b}"), data["pairs"].get(f"{b}|{a}")
    out = {}
    for slot in data["slots"]:
        if listed is not None and slot in listed:
            out[slot] = dict(listed[slot])
        elif listed is None and other is not None and slot in other:
            d = other[slot]
            out[slot] = {"status": MIRRORED.get(d["status"], d["status"]), "changed": list(d["changed"])}
        else:
            out[slot] = {"status": "unchanged", "changed": []}
    return out


def selector_data(specs: dict[str, AlgorithmSpec]) -> dict[str, Any]:
    """Everything the browser needs to draw any pair: per-spec formulas and components,
    per-pair statuses and what changed (:func:`selector_pairs`)."""
    ordered = [s.id for s in lineage(specs)]
    spec_data = {sid: side_data(specs[sid].name, specs[sid], components_of(specs[sid]), specs[sid].full_name)
                 for sid in ordered}
    return {"order": ordered, "specs": spec_data, "pairs": selector_pairs(specs, ordered), "gaps": {}, **_scheme()}


def compare_selector_html(specs: dict[str, AlgorithmSpec], default_a: str, default_b: str, *,
                          uid: str | None = None, aggregation: dict[str, dict] | None = None) -> str:
    """Two selects of every algorithm and the pair's comparison. ``aggregation``: per algorithm,
    its shipped run's aggregation slot as the browser's math port reads it
    (``objective.browser_config``), so a selected token's card can show the other algorithm's
    weight for it (algorithms without a run are left out)."""
    for sid in (default_a, default_b):
        if sid not in specs:
            raise ValueError(f"compare_selector: no algorithm {sid!r} (known: {', '.join(sorted(specs))})")
    uid = uid or "unipo-cmp-" + hashlib.sha256(f"{default_a}|{default_b}".encode()).hexdigest()[:8]
    data = selector_data(specs)
    data["aggregation"] = dict(aggregation or {})

    def select(side: str, label: str, chosen: str) -> str:
        options = "".join(
            f'<option value="{escape_text(sid)}"{" selected" if sid == chosen else ""}>'
            f'{escape_text(specs[sid].name)}</option>' for sid in data["order"])
        return (f'<label class="unipo-compare-pick"><span>{label}</span>'
                f'<select data-side="{side}" id="{uid}-{side}">{options}</select></label>')

    controls = (f'<div class="unipo-compare-controls">{select("a", "First (above)", default_a)}'
                f'<button type="button" class="unipo-compare-swap" title="Swap the two algorithms">\u21c5 Swap</button>'
                f'{select("b", "Second (below)", default_b)}</div>')
    return (f'<div class="unipo-compare-selector" id="{uid}">'
            f'{json_data(data, data_id=uid + "-data")}'
            f'{controls}<div class="unipo-compare-target" aria-live="polite"></div></div>')
