"""Facts of the specs and the registry, quoted in prose: counts, which algorithms fill a slot, a slot's
formula, DAPO's overlong numbers. A chapter never types them, so adding a spec or changing a
parameter keeps the text true.

    {{ spec_count() }}                         how many algorithms the course has, as a word ("seven")
    {{ slot_count() }}                         how many slots an objective has (the registry's), as a word
    {{ algorithms_with("filter") }}            the algorithms whose slot is filled ("DAPO and Dr. GRPO + DS")
    {{ same_kind("reinforce", "aggregation") }}  the other algorithms with the same kind in that slot
    {{ slot_formula("dapo", "shaping") }}      one slot's formula, as the cards write it (display math)
    {{ overlong_fact("dapo", "floor") }}       a number of the overlong shaping (OVERLONG_KEYS)
    {{ slot_diff_count("grpo", "dapo") }}     how many slots differ between two specs, as a word
                                              (``status``: only those modified, added or removed)
"""

from __future__ import annotations

from typing import Any, Sequence

from unipo_build.core.formula import with_ratio
from unipo_build.core.numbers import NUMBER_WORDS, count_word, fmt_num, fmt_pct  # noqa: F401 (views import the words here)
from unipo_build.core.specs import SLOTS, AlgorithmSpec, lineage
from unipo_build.site.facts.diff import STATUSES, diff_algorithms
from unipo_build.site.fmt import math_display
from unipo_build.site.context import AuthorError, Site, macro

def and_names(names: Sequence[str]) -> str:
    """'A', 'A and B', 'A, B and C' ('' for none): the one way the views join words into a list."""
    names = list(names)
    if len(names) <= 2:
        return " and ".join(names)
    return ", ".join(names[:-1]) + " and " + names[-1]


def _slot(slot: str, macro_name: str) -> str:
    if slot not in SLOTS:
        raise AuthorError(f"{macro_name}: no slot {slot!r} (slots: {', '.join(SLOTS)})")
    return slot


def algorithms_with_text(specs: dict[str, AlgorithmSpec], slot: str) -> str:
    """The algorithms whose ``slot`` holds something (not the empty kind), in lineage order."""
    names = [s.name for s in lineage(specs) if not s.component(slot).is_none]
    return and_names(names) if names else "none of the algorithms"


def same_kind_text(specs: dict[str, AlgorithmSpec], algorithm: str, slot: str) -> str:
    """The other algorithms with the same kind in ``slot`` as ``algorithm``."""
    kind = specs[algorithm].components[slot].kind
    names = [s.name for s in lineage(specs) if s.id != algorithm and s.components[slot].kind == kind]
    return and_names(names) if names else "no other algorithm of the course"


def slot_tex(spec: AlgorithmSpec, slot: str) -> str:
    """A slot's registry formula with the spec's parameters and ratio (as the cards show it)."""
    tex = spec.component(slot).latex(spec.params(slot))
    return tex if slot == "ratio" else with_ratio(tex, spec.component("ratio"))


# ---------------------------------------------------------------------------
# DAPO's overlong shaping, in shares of the generation budget
# ---------------------------------------------------------------------------

OVERLONG_KEYS = {
    "cache_share": "L_cache as a share of the budget (a percentage)",
    "zone_start": "where the penalty starts, as a share of the budget (a percentage)",
    "midpoint": "the middle of the cache zone, as a share of the budget (a percentage)",
    "midpoint_term": "the shaping term of an answer that stops in the middle of the cache zone",
    "floor": "the term at and beyond the budget (minus the penalty)",
    "penalty": "the penalty (the size of the floor)",
}
#: A budget large enough that the shares below are exact in tokens.
_BUDGET = 1_000_000


def overlong_values(spec: AlgorithmSpec) -> dict[str, float]:
    """The overlong numbers of a spec, computed through its shaping kind (no run needed: the
    budget cancels out of the shares)."""
    kind = spec.component("shaping")
    if kind.resolve is None or kind.apply is None or "cache_fraction" not in kind.params.model_fields:
        raise AuthorError(f"overlong_fact: {spec.id}'s shaping ({kind.name}) has no overlong cache")
    import numpy as np

    params = kind.resolve(spec.params("shaping"), _BUDGET)
    cache = params["cache_length"] / params["max_length"]
    mid = 1.0 - cache / 2
    term = float(kind.apply(np.array([round(mid * _BUDGET)]), params)[0])
    floor = float(kind.apply(np.array([_BUDGET + 1]), params)[0])
    return {"cache_share": cache, "zone_start": 1.0 - cache, "midpoint": mid, "midpoint_term": term,
            "floor": floor, "penalty": -floor}


def overlong_fact_text(spec: AlgorithmSpec, key: str) -> str:
    if key not in OVERLONG_KEYS:
        raise AuthorError(f"overlong_fact: unknown key {key!r} (known: {', '.join(OVERLONG_KEYS)})")
    value = overlong_values(spec)[key]
    if key in ("cache_share", "zone_start", "midpoint"):
        return fmt_pct(value, 0 if abs(value * 100 - round(value * 100)) < 1e-9 else 1)
    return fmt_num(value, 4)


# ---------------------------------------------------------------------------
# Macros
# ---------------------------------------------------------------------------

@macro
def spec_count(site: Site) -> str:
    """How many algorithms (specs) the course has, as a word."""
    return count_word(len(site.specs()))


@macro
def slot_count(site: Site) -> str:
    """How many slots an objective has (``specs.SLOTS``: a slot added to the registry changes it), as a word."""
    return count_word(len(SLOTS))


@macro
def algorithms_with(site: Site, slot: str) -> str:
    """The algorithms whose ``slot`` is filled (a filter, a shaping, a KL term...), by name."""
    return algorithms_with_text(site.specs(), _slot(slot, "algorithms_with"))


@macro
def same_kind(site: Site, algorithm: str, slot: str) -> str:
    """The other algorithms whose ``slot`` holds the same kind as ``algorithm``'s."""
    site.spec(algorithm, "same_kind")
    return same_kind_text(site.specs(), algorithm, _slot(slot, "same_kind"))


@macro
def slot_diff_count(site: Site, a: str, b: str, status: str | None = None, capital: bool = False) -> str:
    """How many slots differ from ``a`` to ``b`` (or have ``status``), as a word ("three"; "Three"
    with ``capital``)."""
    if status is not None and status not in STATUSES:
        raise AuthorError(f"slot_diff_count: unknown status {status!r} (known: {', '.join(STATUSES)})")
    diffs = diff_algorithms(site.spec(a, "slot_diff_count"), site.spec(b, "slot_diff_count"))
    word = count_word(sum(1 for d in diffs if (d.status != "unchanged" if status is None else d.status == status)))
    return word.capitalize() if capital else word


@macro(html=True)
def slot_formula(site: Site, algorithm: str, slot: str) -> str:
    """One slot's formula (display math), as the objective card writes it."""
    tex = slot_tex(site.spec(algorithm, "slot_formula"), _slot(slot, "slot_formula"))
    if not tex:
        raise AuthorError(f"slot_formula: {algorithm}'s {slot} adds no term to the objective")
    return math_display(tex)


@macro
def overlong_fact(site: Site, algorithm: str, key: str) -> Any:
    """A number of an algorithm's overlong shaping (OVERLONG_KEYS), from its spec."""
    return overlong_fact_text(site.spec(algorithm, "overlong_fact"), key)
