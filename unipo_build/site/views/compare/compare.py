"""Comparison mode: two objectives one above the other, slot by slot.

``compare_html(a, b)`` shows algorithm A's objective above B's, each slot's part of both
formulas marked with its status (``\\htmlClass{... unipo-diff-<status>}``), then one row per
slot with a text badge (= unchanged, ~ modified, + added, − removed), both components and B's
own words on its choice. The statuses come from ``diff.py``; one colour scheme and legend
(``diff.DIFF_STYLES``, CSS in compare.css beside this module) is used in formulas, rows and text.

``compare_selector_html(specs, a, b)`` adds two ``<select>`` of every spec. It embeds (as JSON
in a ``<template>``, ``render.json_data``) each
spec's formula (with ``UNIPODIFF-<slot>`` placeholders for the status classes) and components,
and every pair's statuses, so explainer.js re-renders the comparison in the browser without
any further request.

Where it is rendered (issue 31, "one view, one rendering"), decided but not yet carried out:
this module stays the renderer. The comparisons are the chapters' text (``compare`` pages, the
opening pair of every selector, ``unipo explain``'s run pages): they are searched, and read
before any script runs, so they are written here. The second rendering is explainer.js
``renderCompare`` (with ``diffSentence``, ``badge`` and the row markup), which rebuilds the same
markup for any other pair the reader picks from :func:`selector_data`. Deleting it needs every
pair's markup in the page without the script turning strings into HTML (no view script does:
text reaches the page through ``textContent`` only): every pair rendered here would be about
1 MB per chapter, so the way left is to render each spec's formula and each of its slots once
here as ``<template>`` pieces that the selector clones and labels, at some page weight on every
chapter. Until then both renderings are tested, this one by tests/test_diff.py and the
selector's by tests/browser/test_inspector.py and test_views_state.py, and each names the other
where they must agree.
"""

from __future__ import annotations

import hashlib
from dataclasses import replace
from typing import Any

from unipo_build.site.render import escape_text, json_data
from unipo_build.core.specs import SLOTS, AlgorithmSpec, ResolvedAlgorithm, lineage
from unipo_build.core.matching import as_run_of
from unipo_build.site.views.compare.diff import (
    DIFF_STYLES,
    SLOT_LABELS,
    STATUSES,
    diff_algorithms,
    diff_sentence,
    summary_counts,
)
from unipo_build.site.views.explainer.explainer import (
    DIFF_PLACEHOLDER,
    PARAM_WORDS,
    Component,
    components_of,
    kind_label,
    objective_formula,
    param_words,
)
from unipo_build.site.fmt import math_display


def legend_html() -> str:
    """The one legend of the diff scheme: swatch, badge and meaning of each status."""
    items = "".join(
        f'<li class="unipo-diff-legend-item unipo-diff-{s}"><span class="unipo-diff-badge">'
        f'{escape_text(DIFF_STYLES[s]["symbol"])} {escape_text(DIFF_STYLES[s]["label"])}</span> '
        f'<span class="unipo-diff-meaning">{escape_text(DIFF_STYLES[s]["meaning"])}</span></li>'
        for s in STATUSES)
    return f'<ul class="unipo-diff-legend" aria-label="Legend of the comparison">{items}</ul>'


def sentence_html(name_a: str, name_b: str, diffs) -> str:
    """The summary sentence with each count as the status's badge (the text form of the scheme)."""
    counts = summary_counts(diffs)
    parts = [f'<span class="unipo-diff-{s}"><span class="unipo-diff-badge">{escape_text(DIFF_STYLES[s]["symbol"])} '
             f'{counts[s]} {escape_text(DIFF_STYLES[s]["label"])}</span></span>'
             for s in ("modified", "added", "removed", "unchanged") if counts[s]]
    return (f'<p class="unipo-compare-sentence" aria-label="{escape_text(diff_sentence(name_a, name_b, diffs))}">'
            f'From {escape_text(name_a)} to {escape_text(name_b)}: {" ".join(parts)}</p>')


def placeholder_formula(spec: AlgorithmSpec | ResolvedAlgorithm) -> str:
    """The spec's objective with a ``UNIPODIFF-<slot>`` class placeholder on each slot's part."""
    return objective_formula(spec, diff_class=lambda slot: DIFF_PLACEHOLDER.format(slot=slot))


def fill_statuses(tex: str, statuses: dict[str, str]) -> str:
    for slot in SLOTS:
        tex = tex.replace(DIFF_PLACEHOLDER.format(slot=slot), f"unipo-diff-{statuses.get(slot, 'unchanged')}")
    return tex


def _side_html(spec: AlgorithmSpec, component: Component, side: str, label: str | None = None) -> str:
    tex = component.latex()
    formula = math_display(tex) if tex else '<p class="unipo-diff-none">(nothing)</p>'
    return (f'<div class="unipo-diff-side" data-side="{side}"><p class="unipo-diff-side-head">'
            f'<span class="unipo-diff-algo">{escape_text(label or spec.name)}</span> '
            f'<span class="unipo-kind">{escape_text(kind_label(component))}</span></p>{formula}</div>')


def _badge(status: str) -> str:
    style = DIFF_STYLES[status]
    return f'<span class="unipo-diff-badge">{escape_text(style["symbol"])} {escape_text(style["label"])}</span>'


def compare_html(a: AlgorithmSpec, b: AlgorithmSpec) -> str:
    """The comparison of two specs (no JavaScript needed; the selector re-renders the same markup)."""
    return _compare_html(a, b, components_of(a), components_of(b), diff_algorithms(a, b), b.name, b.id)


def compare_run_html(spec: AlgorithmSpec, config: ResolvedAlgorithm, run_label: str, run_id: str,
                     gaps: dict[str, list[str]] | None = None) -> str:
    """A spec above a run's resolved components, slot by slot (``unipo explain``): what the run
    trained that the spec does not say. The spec's run-filled parameters (the normaliser) are the
    run's where both use the same kind, so only real differences show. ``gaps``: slot -> what the
    trainer ran there that no kind expresses (an import's gaps): such a slot is modified even where
    the nearest kind is the spec's, and its row says what the trainer did."""
    as_run = as_run_of(spec, config)
    diffs = diff_algorithms(as_run, config)
    gaps = {slot: lines for slot, lines in (gaps or {}).items() if lines}
    if gaps:
        diffs = [replace(d, status="modified", changed=d.changed or ("trainer setting without a kind",))
                 if d.slot in gaps and d.status == "unchanged" else d for d in diffs]
    # The run's side has no words of its own: the spec's reasons are not the run's.
    return _compare_html(spec, config, components_of(spec, as_run), components_of(None, config), diffs,
                         run_label, run_id, gaps=gaps)


def _compare_html(a: AlgorithmSpec, b: AlgorithmSpec | ResolvedAlgorithm, comps_a: dict[str, Component],
                  comps_b: dict[str, Component], diffs, b_name: str, b_id: str,
                  gaps: dict[str, list[str]] | None = None) -> str:
    statuses = {d.slot: d.status for d in diffs}
    formulas = "".join(
        f'<div class="unipo-compare-formula" data-side="{side}"><p class="unipo-compare-formula-head">'
        f'<span class="unipo-diff-side-label">{label}</span> <strong>{escape_text(name)}</strong></p>'
        f'{math_display(fill_statuses(placeholder_formula(algorithm), statuses))}</div>'
        for side, label, name, algorithm in (("a", "First", a.name, a), ("b", "Second", b_name, b)))
    rows, same = [], []
    for d in diffs:
        changed = ""
        if d.status == "modified":
            what = "component" if d.changed == ("kind",) else ", ".join(
                c if c == "trainer setting without a kind" else param_words(c) for c in d.changed)
            changed = f'<span class="unipo-diff-changed">changed: {escape_text(what)}</span>'
        why = comps_b[d.slot].explanation if d.status != "unchanged" else None
        if d.status == "unchanged":
            sides = _side_html(a, comps_a[d.slot], "both", f"{a.name} and {b_name}" if a.id != b_id else a.name)
            head = (f'<p class="unipo-diff-row-head">{_badge(d.status)} <span class="unipo-slot-name">'
                    f'{escape_text(SLOT_LABELS[d.slot])}</span></p>')
            body = f'<div class="unipo-diff-sides">{sides}</div>'
        else:
            sides = _side_html(a, comps_a[d.slot], "a") + _side_html(b, comps_b[d.slot], "b", b_name)
            # A changed slot is one line, what it was and what it is, that opens to both formulas
            # and the second algorithm's reason (the coloured objectives above show where).
            head = (f'<summary class="unipo-diff-row-head">{_badge(d.status)} <span class="unipo-slot-name">'
                    f'{escape_text(SLOT_LABELS[d.slot])}</span> '
                    f'<span class="unipo-diff-change">{escape_text(change_text(d.status, comps_a[d.slot], comps_b[d.slot]))}</span>'
                    f'{changed}</summary>')
            body = (f'<div class="unipo-diff-sides">{sides}</div>'
                    + (f'<p class="unipo-diff-why"><span class="unipo-diff-algo">{escape_text(b_name)}</span> '
                       f'{escape_text(why)}</p>' if why else "")
                    + "".join(f'<p class="unipo-diff-gap"><span class="unipo-diff-algo">{escape_text(b_name)}</span> '
                              f'{escape_text(line)}</p>' for line in (gaps or {}).get(d.slot, [])))
            head, body = f'<details class="unipo-diff-detail">{head}', body + "</details>"
        (same if d.status == "unchanged" else rows).append(
            f'<li class="unipo-diff-row unipo-diff-{d.status}" data-slot="{d.slot}" data-status="{d.status}">'
            f'{head}{body}</li>')
    return (f'<div class="unipo-compare" data-a="{escape_text(a.id)}" data-b="{escape_text(b_id)}">'
            f'{legend_html()}{sentence_html(a.name, b_name, diffs)}'
            f'<div class="unipo-compare-formulas">{formulas}</div>'
            f'<ol class="unipo-diff-rows">{"".join(rows)}</ol>'
            f'{unchanged_html([d.slot for d in diffs if d.status == "unchanged"], same)}</div>')


def change_text(status: str, a: Component, b: Component) -> str:
    """A changed slot in words: 'batch baseline → critic (GAE): γ 1, λ 0.95' (explainer.js changeText)."""
    if status == "added":
        return kind_label(b)
    if status == "removed":
        return kind_label(a) + " \u2192 nothing"
    return f"{kind_label(a)} \u2192 {kind_label(b)}"


def unchanged_html(slots: list[str], rows: list[str]) -> str:
    """The unchanged slots folded into one line that opens to their rows (explainer.js: the same)."""
    if not rows:
        return ""
    names = ", ".join(SLOT_LABELS[s] for s in slots)
    return (f'<details class="unipo-diff-same"><summary><span class="unipo-diff-unchanged">{_badge("unchanged")}</span> '
            f'<span class="unipo-diff-same-names">{escape_text(names)}</span> '
            f'<span class="unipo-diff-same-hint">(open for their formulas)</span></summary>'
            f'<ol class="unipo-diff-rows">{"".join(rows)}</ol></details>')


def selector_data(specs: dict[str, AlgorithmSpec]) -> dict[str, Any]:
    """Everything the browser needs to re-render any pair: per-spec formulas and components,
    per-pair statuses and what changed."""
    ordered = [s.id for s in lineage(specs)]
    spec_data = {}
    for sid in ordered:
        spec = specs[sid]
        comps = components_of(spec)
        spec_data[sid] = {
            "name": spec.name,
            "full_name": spec.full_name,
            "formula": placeholder_formula(spec),
            "slots": {slot: {"kind": c.name, "kind_label": kind_label(c), "tex": c.latex(),
                             "explanation": c.explanation or ""} for slot, c in comps.items()},
        }
    pairs = {}
    for x in ordered:
        for y in ordered:
            pairs[f"{x}|{y}"] = {d.slot: {"status": d.status, "changed": list(d.changed)}
                                 for d in diff_algorithms(specs[x], specs[y])}
    return {"order": ordered, "specs": spec_data, "pairs": pairs, "slots": list(SLOTS),
            "slot_labels": SLOT_LABELS, "styles": DIFF_STYLES, "statuses": list(STATUSES), "param_words": PARAM_WORDS}


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
            f'{controls}<div class="unipo-compare-target" aria-live="polite">'
            f'{compare_html(specs[default_a], specs[default_b])}</div></div>')
