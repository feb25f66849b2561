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
- with ``--algorithm SPEC``: attaches that spec's components and records every gap (and every slot
  where the spec differs from what the trainer ran) in the run card's notes and in the header's
  ``imported_from.gaps``.
"""

from __future__ import annotations

import re
from typing import Any

from unipo_build.core.matching import Gap, nearest_spec
from unipo_build.core.registry import SLOTS
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


def choose(trainer: str, name: str, components: dict[str, dict], gaps: list[Gap], config_file: str,
           algorithm: str | None, max_new_tokens: int | None, notes: K.Notes, *,
           ref_logprobs: bool = True) -> tuple[str, ResolvedAlgorithm | None, dict]:
    """(algorithm id, algorithm_config, header extras) for a trainer run; see the module docstring.

    ``ref_logprobs`` False: the log has no reference log-probs, so a spec's KL term in the loss cannot be
    computed for its tokens; that slot is imported as ``none`` and the notes say so."""
    specs = K.known_specs(notes)
    extras: dict[str, Any] = {"gaps": [g.as_dict() for g in gaps]} if gaps else {}
    if algorithm is not None:
        spec_id = K.match_spec(algorithm, specs)
        if spec_id is None:
            raise LogError(config_file, f"--algorithm {algorithm!r} is not one of the project's specs "
                                        f"({', '.join(sorted(specs))}); pass one of them")
        spec = specs[spec_id]
        budget = max_new_tokens or 1
        config = resolve(spec, max_new_tokens=budget).model_dump()["components"]
        for gap in gaps:
            notes.once(f"not expressible, imported as {spec_id}'s {gap.slot}: {gap.line()}")
        if not ref_logprobs and config["kl"]["kind"] == "in_loss":
            notes.once(f"{spec_id}'s KL term in the loss left out (kl: none): {trainer}'s log has no reference "
                       "log-probs to compute it from")
            config["kl"] = {"kind": "none", "params": {}}
        for slot in SLOTS:
            ran = components.get(slot)
            if ran is not None and ran != config[slot] and not any(g.slot == slot for g in gaps):
                notes.once(f"{trainer} ran {slot} {ran['kind']} {ran['params'] or ''}".rstrip()
                           + f"; the run card shows --algorithm {spec_id}'s {config[slot]['kind']}")
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
