"""A trainer's own configuration (verl's Hydra config, prime-rl's resolved configs) onto the registry.

An importer translates its trainer's settings slot by slot into registry kinds (``unipo_build.core.specs.
REGISTRY``). A setting no kind expresses is a :class:`unipo_build.core.matching.Gap`: the setting, what the
trainer did, and the nearest kind (the one Gap type of every importer). :func:`choose` then

- with no gap: attaches the translated components; the algorithm is the nearest spec
  (:func:`unipo_build.core.matching.nearest_spec`, the rule ``unipo explain`` names a run's spec by) when it
  has all of the run's kinds (its id), else ``<trainer>_<name>`` with that nearest spec noted;
- with gaps and no ``--algorithm``: stops with one line naming the config file, the setting, the
  nearest kind and what to do (pass ``--algorithm SPEC``, the nearest spec of the translated
  components as the example, to import with that spec's components);
- with ``--algorithm SPEC``: attaches that spec's components and records every gap, and every slot where
  the spec differs from what the trainer ran (:func:`algorithm_gaps`: the slots the nearest-spec path would
  show as differing from that spec), in the run card's notes and in the header's ``imported_from.gaps``;
  ``imported_from.algorithm_option`` says whether the trainer's settings were there to compare.

A ``--algorithm`` that names no spec stops every import in one line listing the spec ids
(:func:`check_algorithm`).
"""

from __future__ import annotations

import re
from typing import Any

from unipo_build.core.matching import Gap, nearest_spec, slot_changes
from unipo_build.core.numbers import plain_num
from unipo_build.core.registry import SLOTS, settings_of
from unipo_build.core.runlog import LogError
from unipo_build.core.specs import REGISTRY, ResolvedAlgorithm, resolve
from unipo_build.trainers import common as K


def get(config: Any, dotted: str, default: Any = None) -> Any:
    """``config['a']['b']`` for ``'a.b'``; ``default`` where a level is missing or null."""
    node = config
    for part in dotted.split("."):
        if not isinstance(node, dict) or node.get(part) is None:
            return default
        node = node[part]
    return node


def _validated(components: dict[str, dict], spec_id: str, name: str) -> ResolvedAlgorithm:
    for slot, comp in components.items():
        REGISTRY[slot][comp["kind"]].params.model_validate(comp["params"])
    return ResolvedAlgorithm.model_validate({"id": spec_id, "name": name, "components": components})


def check_algorithm(algorithm: str, where: str) -> str:
    """The spec id ``--algorithm`` names (any case and punctuation); LogError in one line listing the spec ids where
    it names none (or where no specs are found)."""
    specs = K.known_specs()
    spec_id = K.match_spec(algorithm, specs)
    if spec_id is None:
        raise LogError(where, f"--algorithm {algorithm!r} names no spec" + (
            f"; the spec ids are {', '.join(sorted(specs))}" if specs else
            " (no spec directory found: run from the project or set UNIPO_ROOT)"))
    return spec_id


def _comp_text(comp: dict) -> str:
    """'cispo (eps_low None, eps_high 0.28)': a component as kind and parameters."""
    params = ", ".join(f"{k} {plain_num(float(v))}" if isinstance(v, float) else f"{k} {v}" for k, v in sorted(comp["params"].items()))
    return comp["kind"] + (f" ({params})" if params else "")


def _normalised(slot: str, comp: dict) -> dict:
    """A component with its kind's parameter defaults filled in, as a run's resolved configuration stores it."""
    kind = REGISTRY[slot].get(comp["kind"])
    return {"kind": comp["kind"], "params": kind.params.model_validate(comp["params"]).model_dump() if kind
            else dict(comp["params"])}


def algorithm_gaps(trainer: str, ran: dict[str, dict], shown: dict[str, dict], spec_id: str,
                   gaps: list[Gap]) -> list[Gap]:
    """Every slot where what ``trainer`` ran (its settings translated to kinds: ``ran``) is not what ``--algorithm``'s
    spec shows (``shown``: the spec resolved for the run), as gaps of cause "algorithm": a kind or a parameter that
    differs (:func:`matching.slot_changes`, the nearest-spec path's rule). A slot whose setting has no kind is a gap
    already (``gaps``) and is not listed twice. The setting is named by the ran kind's setting in the trainer (the
    registry's trainer settings), else by the slot (no setting of the trainer selects that kind)."""
    out = []
    no_kind = {g.slot for g in gaps}
    for slot in SLOTS:
        have, spec_comp = ran.get(slot), shown.get(slot)
        if have is None or spec_comp is None or slot in no_kind:
            continue
        have, spec_comp = _normalised(slot, have), _normalised(slot, spec_comp)
        if not slot_changes(have["kind"], have["params"], spec_comp["kind"], spec_comp["params"]):
            continue
        kind = REGISTRY[slot].get(have["kind"])
        keys = [s.key for s in (settings_of(kind, trainer) if kind else ()) if s.key]
        out.append(Gap(keys[0] if keys else slot, _comp_text(have), slot,
                       f"{spec_id}'s {_comp_text(spec_comp)}", cause="algorithm"))
    return out


def choose(trainer: str, name: str, components: dict[str, dict], gaps: list[Gap], config_file: str,
           algorithm: str | None, max_new_tokens: int | None, notes: K.Notes, *,
           ref_logprobs: bool = True) -> tuple[str, ResolvedAlgorithm | None, dict]:
    """(algorithm id, algorithm_config, header extras) for a trainer run; see the module docstring.

    ``ref_logprobs`` False: the log has no reference log-probs, so a spec's KL term in the loss cannot be
    computed for its tokens; that slot is imported as ``none`` and the notes say so."""
    specs = K.known_specs(notes)
    extras: dict[str, Any] = {"gaps": [g.as_dict() for g in gaps]} if gaps else {}
    if algorithm is not None:
        spec_id = check_algorithm(algorithm, config_file)
        spec = specs[spec_id]
        budget = max_new_tokens or 1
        config = resolve(spec, max_new_tokens=budget).model_dump()["components"]
        for gap in gaps:
            notes.once(f"not expressible, imported as {spec_id}'s {gap.slot}: {gap.line()}")
        if not ref_logprobs and REGISTRY["kl"][config["kl"]["kind"]].kl_place == "loss":
            notes.once(f"{spec_id}'s KL term in the loss left out (kl: none): {trainer}'s log has no reference "
                       "log-probs to compute it from")
            config["kl"] = {"kind": "none", "params": {}}  # the slot's empty choice
        differ = algorithm_gaps(trainer, components, config, spec_id, gaps)
        for gap in differ:
            notes.once(f"{trainer} ran {gap.slot} {gap.value} where the run card shows --algorithm {gap.nearest}")
        everything = gaps + differ
        extras = {"gaps": [g.as_dict() for g in everything]} if everything else {}
        extras["algorithm_option"] = {"spec": spec_id, "settings": "compared" if components else "not recorded"}
        return spec_id, _validated(config, spec_id, spec.name), extras
    run_id = re.sub(r"[^a-z0-9_]+", "_", f"{trainer}_{name}".lower()).strip("_")[:64]
    config = _validated(components, run_id, f"{name} ({trainer})")
    if gaps:
        match, first = nearest_spec(None, config, specs), gaps[0]
        more = f" (and {len(gaps) - 1} more setting(s))" if len(gaps) > 1 else ""
        raise LogError(config_file, f"{first.value!r} has no kind in the registry's {first.slot} slot{more} "
                                    f"(nearest: {first.nearest}); pass --algorithm SPEC (e.g. --algorithm "
                                    f"{match.spec.id if match else 'grpo'}) to import it with that spec's components, "
                                    "the difference listed in the run card", field=first.setting)
    spec_id = K.nearest_algorithm(config, specs, trainer, notes)
    if spec_id != run_id:
        config = config.model_copy(update={"id": spec_id, "name": specs[spec_id].name})
    return spec_id, config, extras


def numeric(data: dict, notes: K.Notes, trainer: str) -> dict:
    """The metrics of a row that are numbers or null; any other value (a list, a string, a boolean) is left
    out and counted in the notes, so that one odd metric does not stop the import of a log."""
    kept = {}
    for key, value in data.items():
        if value is None or K.is_number(value):
            kept[key] = value
        else:
            notes.add(f"{trainer} metric {key!r} is not a number (a {type(value).__name__}): left out")
    return kept
