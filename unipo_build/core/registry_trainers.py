"""What the trainers' code reads of a kind's registry entry: the one source of each kind's name and settings in
TRL, verl, prime-rl and OpenRLHF.

A kind's ``trainers`` (``setting(...)``, core/registry_base.py) say what selects it in each trainer; its
``translators`` (``trainer_settings(..., openrlhf=fn, verl=fn, trl=fn)``) compute what the settings alone cannot:

- the OpenRLHF command builder (trainers/openrlhf/command.py) asks each slot's kind for its :class:`Flags`
  (``translators["openrlhf"](params, cfg, max_new_tokens)``): the flags, the notes, the gaps where OpenRLHF falls
  short and the kind it trains in their place. A kind without one is refused in one line (:func:`openrlhf_flags`);
- an importer (trainers/verl/config.py, trainers/trl/config.py) asks :func:`select` which kind of a slot the
  trainer's config selects, by the kinds' settings of that trainer (the kind whose keyed settings all hold, the one
  with the most of them first; :func:`default_kind`: the one whose setting is the trainer's default), and
  :func:`params_from` for its parameters (``translators[trainer](read)``, {} without one);
- TRL's importer asks :func:`paper_form_kind` whether the loss type it read selects a kind whose loss TRL writes in
  the paper's form (:attr:`Kind.paper_form`: CISPO's -sg(w) A log pi), and compares with TRL's loss in that form.

So a kind added in one module (a test's own, tests/kinds_for_tests.py) reaches every trainer from its entry alone.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from unipo_build.core.registry_base import REGISTRY, Kind, kind, settings_of, trainer_values


@dataclass
class Flags:
    """What one kind adds to a trainer's command: ``flags``, ``notes``, ``gaps`` (each ``(what the spec says, why
    the trainer cannot: a clause after its name, the nearest approximation, the flags it takes)``), ``runs``: the
    ``(kind, params)`` trained in its place (None: itself), ``single_update``: one optimizer step per rollout, and
    ``then``: {a later slot: ``fn(kind, params) -> Flags | None``}, which that slot's translation goes through
    first (None: the slot's own kind translates it; GSPO's loss forces its aggregation)."""

    flags: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    gaps: list[tuple[str, str, str, tuple[str, ...]]] = field(default_factory=list)
    runs: tuple[str, dict] | None = None
    single_update: bool = False
    then: dict[str, Callable[[str, dict], "Flags | None"]] = field(default_factory=dict)


def openrlhf_flags(slot: str, name: str, params: dict, cfg: Any, max_new_tokens: int) -> Flags:
    """The kind's OpenRLHF flags (its ``translators["openrlhf"]``), or a ValueError in one line naming the kind."""
    fn = kind(slot, name).translators.get("openrlhf")
    if fn is None:
        raise ValueError(f"{slot} kind {name!r} has no OpenRLHF translation yet")
    return fn(params, cfg, max_new_tokens)


def _holds(k: Kind, trainer: str, read: Callable[..., Any]) -> int | None:
    """How many keyed settings of ``trainer`` select ``k`` in the config ``read`` reads (None: one does not hold)."""
    keyed = [s for s in settings_of(k, trainer) if s.key]
    if not keyed or any(read(s.key) != s.value for s in keyed):
        return None
    return len(keyed)


def select(trainer: str, slot: str, read: Callable[..., Any]) -> str | None:
    """The kind of ``slot`` whose settings of ``trainer`` all hold in the config (``read(key)``: its value, None
    where it has none), the one with the most settings first; None where no kind's do."""
    best, most = None, 0
    for k in REGISTRY[slot].values():
        n = _holds(k, trainer, read)
        if n is not None and n > most:
            best, most = k.name, n
    return best


def default_kind(trainer: str, slot: str, key: str) -> str | None:
    """The kind of ``slot`` whose setting of ``key`` in ``trainer`` is the trainer's default (``default=True``)."""
    return next((k.name for k in REGISTRY[slot].values()
                 for s in settings_of(k, trainer) if s.key == key and s.default), None)


def params_from(trainer: str, slot: str, name: str, read: Callable[..., Any]) -> dict:
    """The parameters of the kind the trainer's config selects (its ``translators[trainer](read)``; {} without)."""
    fn = kind(slot, name).translators.get(trainer)
    return dict(fn(read)) if fn is not None else {}


def paper_form_kind(trainer: str, slot: str, key: str, value: Any) -> str | None:
    """The kind of ``slot`` that ``key`` = ``value`` selects in ``trainer`` (TRL's loss_type 'cispo': the cispo clip)
    where the trainer writes its loss in the paper's form (:attr:`Kind.paper_form`); None for any other value."""
    name = trainer_values(trainer, key, slot).get(value)
    return name if name is not None and trainer in REGISTRY[slot][name].paper_form else None


class Unreadable(ValueError):
    """A setting a kind's reader cannot read (not a number, out of the kind's range), with the setting's name."""

    def __init__(self, setting: str, message: str):
        super().__init__(message)
        self.setting = setting


class Reader:
    """``read(key, default=None)`` over a trainer's config (with the trainer's own dotted lookup ``get``; ``prefix``
    before each key), as a kind's reader reads it: ``read.number(key, default)`` a number or :class:`Unreadable`,
    ``read.note(text)`` a line for the import's notes, ``read.forces(slot, value)`` a setting the trainer's loss
    imposes on another slot whatever its config says (verl's gspo, sapo and geo_mean losses aggregate per sequence)."""

    def __init__(self, config: Any, get: Callable[[Any, str, Any], Any], prefix: str = ""):
        self.config, self.get, self.prefix = config, get, prefix
        self.notes: list[str] = []
        self.forced: dict[str, Any] = {}

    def __call__(self, key: str, default: Any = None) -> Any:
        return self.get(self.config, key, default)

    def number(self, key: str, default: float) -> float:
        value = self(key, default)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise Unreadable(self.prefix + key, f"{value!r} is not a number")
        return float(value)

    def note(self, text: str) -> None:
        self.notes.append(text)

    def forces(self, slot: str, value: Any) -> None:
        self.forced[slot] = value


def reader(config: Any, get: Callable[[Any, str, Any], Any], prefix: str = "") -> Reader:
    """A :class:`Reader` over a trainer's config with the trainer's own dotted lookup ``get``."""
    return Reader(config, get, prefix)
