"""Slot-by-slot comparison of two algorithms: unchanged, modified, added, removed.

An algorithm is one component per slot (``specs.SLOTS``). Comparing algorithm A with B:

- ``unchanged``: the same kind with the same parameters;
- ``modified``: the same slot with another kind, or the same kind with other parameters;
- ``added``: the slot's kind is ``none`` in A but not in B (B adds a clip, a KL, a filter...);
- ``removed``: the reverse (B drops something A has).

The four statuses have one colour scheme and one text badge each (:data:`DIFF_STYLES`), used
the same way in formulas (``\\htmlClass{unipo-diff-<status>}``), cards and text, so a reader
who cannot tell the colours apart still reads the badge. Pure functions: no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from unipo_build.core.matching import KIND, Algorithm, slot_changes, slot_config
from unipo_build.core.specs import SLOTS
from unipo_build.site.palette import role

STATUSES = ("unchanged", "modified", "added", "removed")

#: A symbol and a word for each status, and its colour from the palette (``site/palette.py``:
#: ``colour`` for light pages, ``colour_dark`` for the slate scheme; the CSS variables
#: ``--unipo-diff-<status>`` of assets/palette.css hold the same values).
DIFF_STYLES: dict[str, dict[str, str | None]] = {
    "unchanged": {"symbol": "=", "label": "unchanged", "colour": None, "colour_dark": None,
                  "meaning": "the same component with the same parameters in both"},
    "modified": {"symbol": "~", "label": "modified", "colour": role("diff-modified"),
                 "colour_dark": role("diff-modified", dark=True),
                 "meaning": "the same slot with another component or other parameters"},
    "added": {"symbol": "+", "label": "added", "colour": role("diff-added"), "colour_dark": role("diff-added", dark=True),
              "meaning": "absent in the first algorithm, present in the second"},
    "removed": {"symbol": "\u2212", "label": "removed", "colour": role("diff-removed"),
                "colour_dark": role("diff-removed", dark=True),
                "meaning": "present in the first algorithm, absent in the second"},
}

SLOT_LABELS = {
    "advantage": "Advantage",
    "ratio": "Importance ratio",
    "clip": "Clip",
    "kl": "KL penalty",
    "aggregation": "Aggregation",
    "filter": "Sampling filter",
    "shaping": "Reward shaping",
    "correction": "Rollout correction",
}

NONE_KIND = "none"


@dataclass(frozen=True)
class SlotDiff:
    """How one slot differs between algorithm A and algorithm B."""

    slot: str
    status: str
    kind_a: str
    kind_b: str
    params_a: dict[str, Any] = field(default_factory=dict)
    params_b: dict[str, Any] = field(default_factory=dict)
    #: Names of what differs: ``["kind"]`` when the kinds differ, else the parameters whose
    #: values differ (empty when unchanged).
    changed: tuple[str, ...] = ()

    @property
    def badge(self) -> str:
        style = DIFF_STYLES[self.status]
        return f"{style['symbol']} {style['label']}"

    def as_dict(self) -> dict[str, Any]:
        return {"slot": self.slot, "status": self.status, "kind_a": self.kind_a, "kind_b": self.kind_b,
                "params_a": dict(self.params_a), "params_b": dict(self.params_b), "changed": list(self.changed),
                "badge": self.badge}


def slot_status(kind_a: str, params_a: Mapping[str, Any], kind_b: str, params_b: Mapping[str, Any]) -> tuple[str, tuple[str, ...]]:
    """The status of one slot and what changed (see the module docstring; what changed is
    :func:`unipo_build.core.matching.slot_changes`, the comparison the nearest-spec rule counts)."""
    changed = slot_changes(kind_a, params_a, kind_b, params_b)
    if changed != (KIND,):
        return ("modified" if changed else "unchanged"), changed
    if kind_a == NONE_KIND:
        return "added", changed
    if kind_b == NONE_KIND:
        return "removed", changed
    return "modified", changed


def diff_slot(a: Algorithm, b: Algorithm, slot: str) -> SlotDiff:
    kind_a, params_a = slot_config(a, slot)
    kind_b, params_b = slot_config(b, slot)
    status, changed = slot_status(kind_a, params_a, kind_b, params_b)
    return SlotDiff(slot, status, kind_a, kind_b, params_a, params_b, changed)


def diff_algorithms(a: Algorithm, b: Algorithm, slots: tuple[str, ...] = SLOTS) -> list[SlotDiff]:
    """Every slot of A against the same slot of B, in slot order."""
    return [diff_slot(a, b, slot) for slot in slots]


def statuses(a: Algorithm, b: Algorithm) -> dict[str, str]:
    """slot -> status."""
    return {d.slot: d.status for d in diff_algorithms(a, b)}


def summary_counts(diffs: list[SlotDiff]) -> dict[str, int]:
    """How many slots have each status, in the order of :data:`STATUSES`."""
    return {s: sum(1 for d in diffs if d.status == s) for s in STATUSES}


def diff_sentence(name_a: str, name_b: str, diffs: list[SlotDiff]) -> str:
    """One plain sentence, e.g. 'From GRPO to DAPO: 3 modified, 2 added, 1 removed, 1 unchanged.' (the
    comparison's aria-label, drawn by compare.js diffSentence; tests/browser/test_compare_render.py
    holds the browser's to this one)."""
    counts = summary_counts(diffs)
    parts = [f"{counts[s]} {s}" for s in ("modified", "added", "removed", "unchanged") if counts[s]]
    return f"From {name_a} to {name_b}: " + ", ".join(parts) + " (of the " + str(len(diffs)) + " slots)."
