"""How a run's components stand to the project's specs: the one rule that names a run's nearest spec, and
the trainer settings no registry kind expresses.

Every place that names the spec a run is explained by uses :func:`nearest_spec`: ``unipo explain`` and its
pages, the course's views, and every importer (the spec an import note names, and the algorithm id an import
writes when a spec has all of the run's kinds). So the import note and the explain page of one run name the
same spec.

The rule (:func:`nearest_spec`), over the specs given, each compared slot by slot with the run's resolved
components (:func:`slot_changes`, the spec's run-filled parameters taken from the run, :func:`as_run_of`):

1. the spec the run's header names (its ``algorithm`` is the spec's id), whatever its components;
2. else exact kinds first: the fewest slots whose kind differs from the run's (0: every kind alike);
3. then the fewest slots of the same kind whose parameters differ;
4. then the earlier spec of the lineage (``specs.lineage``: a predecessor before its successors, then the
   earlier year), then the spec id.

A trainer's setting that no kind of the registry expresses is a :class:`Gap`: the importer imports the
nearest kind in its place and records the gap in the run's header (``imported_from.gaps``), which the
explain page's slot panel and the run card's notes show. An import with ``--algorithm SPEC`` records, as gaps of
cause ``"algorithm"``, every slot where what the trainer ran is not what the spec shows (the run holds the spec's
components): the slots the nearest-spec path would show as differing from that spec.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Iterable, Mapping, Sequence

from unipo_build.core.registry import SLOTS
from unipo_build.core.specs import AlgorithmSpec, ResolvedAlgorithm, ResolvedComponent, lineage

#: The first entry of a slot's changes when its kind differs (else the changes are parameter names).
KIND = "kind"

Algorithm = AlgorithmSpec | ResolvedAlgorithm | Mapping[str, tuple[str, Mapping[str, Any]]]


def slot_config(algorithm: Algorithm, slot: str) -> tuple[str, dict[str, Any]]:
    """(kind, parameters) of one slot; a spec's parameters with the registry's defaults filled in."""
    if isinstance(algorithm, AlgorithmSpec):
        return algorithm.components[slot].kind, algorithm.params(slot)
    if isinstance(algorithm, ResolvedAlgorithm):
        comp = algorithm.components[slot]
        return comp.kind, dict(comp.params)
    kind, params = algorithm[slot]
    return kind, dict(params)


def slot_changes(kind_a: str, params_a: Mapping[str, Any], kind_b: str, params_b: Mapping[str, Any]) -> tuple[str, ...]:
    """What differs in one slot: ``("kind",)`` when the kinds differ, else the names of the parameters whose
    values differ (in name order; empty when the slot is the same)."""
    if kind_a != kind_b:
        return (KIND,)
    return tuple(k for k in sorted(set(params_a) | set(params_b)) if params_a.get(k) != params_b.get(k))


def as_run_of(spec: AlgorithmSpec, config: ResolvedAlgorithm) -> ResolvedAlgorithm:
    """The spec's components with the parameters a run fills in (the constant normaliser, the overlong
    lengths) taken from ``config`` where both use the same kind: a spec leaves them null, so without this
    every Dr. GRPO run would differ from the Dr. GRPO spec in its normaliser."""
    components = {}
    for slot in SLOTS:
        kind, params = spec.component(slot), spec.params(slot)
        if config.kind(slot) == kind.name:
            for name in kind.run_resolved:
                if params.get(name) is None:
                    params[name] = config.param(slot, name)
        components[slot] = ResolvedComponent(kind=kind.name, params=params)
    return ResolvedAlgorithm(id=spec.id, name=spec.name, components=components)


@dataclass(frozen=True)
class SlotChange:
    """One slot of a spec (``kind_spec``) against the same slot of a run (``kind_run``)."""

    slot: str
    kind_spec: str
    kind_run: str
    #: ``("kind",)``, or the names of the parameters that differ; empty when the slot is the same.
    changed: tuple[str, ...]


@dataclass(frozen=True)
class SpecMatch:
    """A spec and how a run's components differ from it, slot by slot in slot order."""

    spec: AlgorithmSpec
    diffs: tuple[SlotChange, ...]
    #: The run's header names this spec (its ``algorithm`` is the spec's id).
    by_id: bool

    @property
    def kinds_changed(self) -> tuple[str, ...]:
        """The slots whose kind differs from the run's."""
        return tuple(d.slot for d in self.diffs if d.changed == (KIND,))

    @property
    def params_changed(self) -> tuple[str, ...]:
        """The slots of the same kind whose parameters differ from the run's."""
        return tuple(d.slot for d in self.diffs if d.changed and d.changed != (KIND,))

    @property
    def exact_kinds(self) -> bool:
        """Every slot of the run has the spec's kind (its parameters may differ)."""
        return not self.kinds_changed

    def differing(self, gaps: Iterable[str] = ()) -> tuple[str, ...]:
        """The slots in which the run differs from the spec, in slot order: another kind, other parameters, or a
        trainer setting no kind expresses (``gaps``: the slots of the import's gaps, :func:`header_gaps`). The one
        count of differing slots: the import's note (:meth:`how`) and the explain page both give this one."""
        gaps = set(gaps)
        return tuple(d.slot for d in self.diffs if d.changed or d.slot in gaps)

    def how(self, gaps: Iterable[str] = ()) -> str:
        """How near, in words, counted by :meth:`differing`: 'every slot alike', '2 of 8 slots differ: another kind
        in kl and aggregation', '3 of 8 slots differ: another kind in filter, other parameters in advantage, a
        trainer setting its components do not show in clip' (a gap). No '; ' in it: an import's notes are joined by
        '; '."""
        differing = self.differing(gaps)
        if not differing:
            return "every slot alike"
        kinds, params = self.kinds_changed, self.params_changed
        unexpressed = tuple(slot for slot in differing if slot not in kinds and slot not in params)
        parts = [f"{what} in {_and(slots)}" for what, slots in (("another kind", kinds), ("other parameters", params),
                 ("a trainer setting its components do not show", unexpressed)) if slots]
        return f"{len(differing)} of {len(self.diffs)} slots differ: " + ", ".join(parts)


def _and(items: Sequence[str]) -> str:
    """'a', 'a and b', 'a, b and c'."""
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def compare(spec: AlgorithmSpec, config: ResolvedAlgorithm, algorithm: str | None = None) -> SpecMatch:
    """The spec against the run's resolved components (``algorithm``: the id the run's header names)."""
    as_run = as_run_of(spec, config)
    diffs = []
    for slot in SLOTS:
        kind_s, params_s = slot_config(as_run, slot)
        kind_r, params_r = slot_config(config, slot)
        diffs.append(SlotChange(slot, kind_s, kind_r, slot_changes(kind_s, params_s, kind_r, params_r)))
    return SpecMatch(spec, tuple(diffs), spec.id == algorithm)


def ranked(algorithm: str | None, config: ResolvedAlgorithm, specs: Mapping[str, AlgorithmSpec]) -> list[SpecMatch]:
    """Every spec against the run, nearest first by the module's rule."""
    order = {spec.id: i for i, spec in enumerate(lineage(dict(specs)))}
    matches = [compare(spec, config, algorithm) for spec in specs.values()]
    return sorted(matches, key=lambda m: (not m.by_id, len(m.kinds_changed), len(m.params_changed),
                                          order[m.spec.id], m.spec.id))


def nearest_spec(algorithm: str | None, config: ResolvedAlgorithm | None,
                 specs: Mapping[str, AlgorithmSpec]) -> SpecMatch | None:
    """The spec a run is explained by (the module's rule): the one its header names (``algorithm``), else exact
    kinds first, then the fewest slots of another kind, then the fewest with other parameters, ties to the earlier
    spec of the lineage, then the id. None when the run has no resolved components (an imported run of an
    algorithm the registry cannot express) or there is no spec: nothing matches."""
    if config is None or not specs:
        return None
    return ranked(algorithm, config, specs)[0]


# ---------------------------------------------------------------------------
# Trainer settings no kind expresses
# ---------------------------------------------------------------------------

@dataclass(frozen=True)
class Gap:
    """One setting of an outside trainer that no registry kind expresses; the run holds ``nearest`` in its place."""

    setting: str  # the trainer's setting, e.g. "algorithm.adv_estimator", "scale_rewards"
    value: str  # what it was set to (and what that does)
    slot: str
    nearest: str  # the nearest kind, e.g. "group_mean", "group_zscore (the group's own std)"; cause "algorithm": the spec's
    #: "kind": no kind expresses the setting, the run holds the nearest; "algorithm": --algorithm named a spec whose
    #: slot is not what the trainer ran, the run holds the spec's
    cause: str = "kind"

    def line(self) -> str:
        if self.cause == "algorithm":
            return f"{self.setting} = {self.value} is not --algorithm's {self.slot} (the run holds {self.nearest})"
        return f"{self.setting} = {self.value} has no kind in the registry's {self.slot} slot (nearest: {self.nearest})"

    def as_dict(self) -> dict[str, str]:
        out = asdict(self)
        if self.cause == "kind":
            del out["cause"]
        return out

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> "Gap":
        return cls(**{name: str(raw.get(name, "")) for name in ("setting", "value", "slot", "nearest")},
                   cause=str(raw.get("cause") or "kind"))


def header_gaps(header: Any) -> list[Gap]:
    """The gaps an import recorded in a run's header (``imported_from.gaps``); none for a run trained here."""
    imported = (getattr(header, "model_extra", None) or {}).get("imported_from")
    if not isinstance(imported, dict):
        return []
    return [Gap.from_dict(g) for g in imported.get("gaps") or [] if isinstance(g, dict)]
