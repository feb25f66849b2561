"""Sentences about the kinds' settings in the trainers, written from the registry (``Kind.trainers``), so that a
chapter never types a trainer's setting a second time.

    {{ trainer_setting("clip", "cispo", "verl") }}
        the kind's settings in one trainer as one types them, each with "(the default)" and its note:
        <code>actor_rollout_ref.actor.policy_loss.loss_mode=cispo</code> (the weight clamped to ...)
    {{ trainer_defaults("dual_clip", "verl", given=["advantage"]) }}
        what a run of the trainer has of a spec when the ``given`` slots are set to the spec's kinds and every
        other setting is left at its default: the slots it matches, and for each slot it does not, the kind its
        defaults select and the setting the spec's kind needs

A kind is at a trainer's defaults when it has settings with a key in that trainer and each is marked
``default`` (verl's dual clip: ``clip_ratio_c=3.0``, the default). A slot whose kinds' settings in the trainer
are notes alone (verl's token ratio: "always") cannot be told from the registry and is left out of the
sentence, never guessed. The builders return inline HTML (settings and kind names in ``<code>``, the rest
escaped text); the macros hand it to ``site.protect`` as one inline piece, so it may sit inside a sentence.
"""

from __future__ import annotations

from typing import Sequence

from unipo_build.core import registry
from unipo_build.core.specs import REGISTRY, SLOTS, AlgorithmSpec, Kind
from unipo_build.site.context import Site, macro
from unipo_build.site.facts.spec_facts import and_names
from unipo_build.site.fmt import code
from unipo_build.site.render import escape_text
from unipo_build.site.facts.diff import SLOT_LABELS


def setting_words(s: registry.Setting, with_note: bool = True) -> str:
    """One setting in HTML: <code>key=value</code>, "(the default)" where it is, and its note in parentheses."""
    head = code(s.text()) if s.key else ""
    bits = [b for b in (head, "(the default)" if s.default else "") if b]
    if with_note and s.note:
        bits.append(escape_text(f"({s.note})" if s.key else s.note))
    return " ".join(bits)


def settings_words(kind: Kind, trainer: str, with_note: bool = True) -> str:
    """The kind's settings in one trainer, joined with "and"; "" where the trainer does not ship it."""
    return and_names([setting_words(s, with_note) for s in registry.settings_of(kind, trainer)])


def at_defaults(kind: Kind, trainer: str) -> bool | None:
    """Whether the trainer's defaults select the kind: True when every keyed setting of it is the default, False
    when one is not or the trainer does not ship it, None when its settings there are notes alone."""
    settings = registry.settings_of(kind, trainer)
    keyed = [s for s in settings if s.key]
    if not keyed:
        return None if settings else False
    return all(s.default for s in keyed)


def default_kinds(slot: str, trainer: str) -> list[Kind]:
    """The kinds of a slot the trainer's defaults select (more than one where they overlap)."""
    return [k for k in REGISTRY[slot].values() if at_defaults(k, trainer)]


def defaults_against_spec(spec: AlgorithmSpec, trainer: str, given: Sequence[str] = ()):
    """([slots the trainer's defaults match], [(slot, the spec's kind, the kinds the defaults select)]), over the
    slots not ``given``, leaving out those the registry cannot tell."""
    same, differ = [], []
    for slot in SLOTS:
        if slot in given:
            continue
        mine = spec.component(slot)
        state = at_defaults(mine, trainer)
        if state:
            same.append(slot)
        elif state is False and (defaults := default_kinds(slot, trainer)):
            differ.append((slot, mine, defaults))
    return same, differ


def _slot(slot: str) -> str:
    """'the KL penalty' stays capitalised, 'Clip' becomes 'clip'."""
    label = SLOT_LABELS.get(slot, slot)
    return label if label.split()[0].isupper() else label.lower()


def trainer_defaults_text(spec: AlgorithmSpec, trainer: str, given: Sequence[str] = ()) -> str:
    """One paragraph: which of a spec's slots a run of the trainer at its defaults has, and what it needs for the
    others (see the module docstring)."""
    name = escape_text(registry.TRAINERS[trainer])
    setup = and_names([settings_words(spec.component(slot), trainer, with_note=False) for slot in given
                       if registry.settings_of(spec.component(slot), trainer)])
    same, differ = defaults_against_spec(spec, trainer, given)
    start = f"In {name}, {setup} with every other setting at its default" if setup else f"In {name} at its defaults"
    has = (f" has this spec's {and_names([_slot(s) for s in same])}" if same else " has none of this spec's slots")
    if not differ:
        return start + has + ", in every slot the components reference can tell."
    parts = []
    for slot, mine, defaults in differ:
        got = and_names([f"{code(k.name)} ({settings_words(k, trainer, with_note=False)})" for k in defaults])
        need = settings_words(mine, trainer)
        parts.append(f"its {_slot(slot)} is {got}, where this spec's {code(mine.name)} "
                     + (f"needs {need}" if need else f"is not one {name} ships"))
    return start + has + " but not the rest: " + "; ".join(parts) + "."


@macro(markdown=True)
def trainer_setting(site: Site, slot: str, kind: str, trainer: str) -> str:
    """A kind's settings in one trainer, from the registry (``setting_words``), inline."""
    return site.protect(settings_words(registry.kind(slot, kind), trainer)
                        or escape_text(f"none: {registry.TRAINERS[trainer]} does not ship it"))


@macro(markdown=True)
def trainer_defaults(site: Site, algorithm: str, trainer: str, given: Sequence[str] = ("advantage",)) -> str:
    """What a run of ``trainer`` at its defaults has of the spec (``trainer_defaults_text``), inline."""
    return site.protect(trainer_defaults_text(site.spec(algorithm, "trainer_defaults"), trainer, tuple(given)))
