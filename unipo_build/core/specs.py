"""Algorithm specs: one YAML file per algorithm, validated against the component registry.

An algorithm is a choice of one component per slot (advantage, ratio, clip, kl,
aggregation, filter, shaping) plus its prose. The registry (``unipo_build.core.registry``) is the
only place that knows which kinds exist, which parameters each takes, how each is computed
and written in LaTeX; the trainer's loss (unipo_build.core.objective) and the site's cards read it.

Conventions the literature splits on are explicit parameters: the std's ddof, the KL
estimator and where the KL sits, the constant normaliser.

Specs live in ``<project root>/data/algorithms`` (``unipo_build.core.project``); outside any project, the
package's own copy of the shipped specs (``unipo_build/specs``, ``project.spec_dir``) is read.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from unipo_build.core import limits, project, yamlfile
from unipo_build.core.limits import Line, Name, Text
from unipo_build.core.registry import (  # noqa: F401  (re-exported)
    OPTIONAL_SLOTS,
    REGISTRY,
    SLOTS,
    Kind,
    NoParams,
    Term,
    register,
)

#: A spec id, and the algorithm id of a run's resolved configuration.
SPEC_ID = r"^[a-z][a-z0-9_]{0,63}$"
#: At most this many values in one spec file (YAML aliases can make a small file expand).
SPEC_MAX_VALUES = 100_000


class SpecError(ValueError):
    """A spec that does not validate. The message names the file and the field."""


#: What a spec that leaves out an optional slot (registry.OPTIONAL_SLOTS) says about it.
OPTIONAL_SLOT_EXPLANATIONS = {
    "correction": "No rollout correction: the tokens are trained as if the policy being trained had sampled them "
                  "itself (the sampler's and the learner's log-probabilities are taken to agree).",
}


def _with_optional_slots(data: Any, explanation: bool) -> Any:
    """A spec's or a run's components with each optional slot it leaves out set to its default kind."""
    if not isinstance(data, dict) or not isinstance(data.get("components"), dict):
        return data
    missing = {slot: kind for slot, kind in OPTIONAL_SLOTS.items() if slot not in data["components"]}
    if not missing:
        return data
    components = dict(data["components"])
    for slot, kind in missing.items():
        components[slot] = ({"kind": kind, "explanation": OPTIONAL_SLOT_EXPLANATIONS[slot]} if explanation
                            else {"kind": kind, "params": {}})
    return {**data, "components": components}


# ---------------------------------------------------------------------------
# The spec file
# ---------------------------------------------------------------------------

class Reference(BaseModel):
    model_config = ConfigDict(extra="forbid")
    arxiv: str | None = Field(None, pattern=r"^\d{4}\.\d{4,5}$")
    title: Line
    authors: Line
    year: int = Field(ge=1900, le=2100)
    note: Text | None = None


class ComponentSpec(BaseModel):
    """One slot of an algorithm: the kind, its parameters and the algorithm's own words on it."""

    model_config = ConfigDict(extra="forbid")
    kind: Name
    params: dict[Name, Any] = Field(default_factory=dict)
    explanation: Text = Field(min_length=1, description="Plain language: what this choice does in this algorithm and why.")
    tooltips: dict[Name, Text] = Field(default_factory=dict, description="Overrides of the registry's term tooltips, by term key.")


class RunDefaults(BaseModel):
    """Training settings an algorithm asks for, over the preset's."""

    model_config = ConfigDict(extra="forbid")
    epochs: int | None = Field(None, ge=1)
    minibatches: int | None = Field(None, ge=1)
    lr: float | None = Field(None, gt=0)
    critic_lr: float | None = Field(None, gt=0)


class AlgorithmSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")
    id: str = Field(pattern=SPEC_ID)
    name: Name
    full_name: Line
    year: int = Field(ge=1990, le=2100)
    paper: Reference | None = Field(
        None, description="The paper that introduced the algorithm; null for one with no paper of its own (a hybrid), "
                          "whose sources are its references.")
    predecessor: str | None = Field(None, pattern=SPEC_ID)
    summary: Text = Field(min_length=1, description="One sentence: what the algorithm is.")
    changed: Text = Field(min_length=1, description="A paragraph: what it changed relative to its predecessor, and why.")
    components: dict[Name, ComponentSpec]
    defaults: RunDefaults = Field(default_factory=RunDefaults)
    references: list[Reference] = Field(default_factory=list)

    @model_validator(mode="before")
    @classmethod
    def _optional_slots(cls, data: Any) -> Any:
        return _with_optional_slots(data, explanation=True)

    @model_validator(mode="after")
    def _components_are_registered(self) -> "AlgorithmSpec":
        problems = []
        missing = [s for s in SLOTS if s not in self.components]
        extra = [s for s in self.components if s not in SLOTS]
        if missing:
            problems.append(f"components: missing slot(s) {', '.join(missing)}")
        if extra:
            problems.append(f"components: unknown slot(s) {', '.join(extra)} (slots: {', '.join(SLOTS)})")
        for slot, comp in self.components.items():
            if slot not in REGISTRY:
                continue
            kinds = REGISTRY[slot]
            if comp.kind not in kinds:
                problems.append(f"components.{slot}.kind: unknown component {comp.kind!r} "
                                f"(known for {slot}: {', '.join(sorted(kinds))})")
                continue
            try:
                kinds[comp.kind].params.model_validate(comp.params)
            except ValidationError as err:
                problems += _param_problems(slot, kinds[comp.kind], err)
            known_terms = {t.key for t in kinds[comp.kind].terms}
            for key in comp.tooltips:
                if key not in known_terms:
                    problems.append(f"components.{slot}.tooltips.{key}: {comp.kind} has no term {key!r} "
                                    f"(terms: {', '.join(sorted(known_terms)) or 'none'})")
        if not problems:
            problems += _cross_slot_problems(self.components)
        if problems:
            raise ValueError("; ".join(problems))
        return self

    def component(self, slot: str) -> Kind:
        return REGISTRY[slot][self.components[slot].kind]

    def params(self, slot: str) -> dict[str, Any]:
        """The slot's parameters with the registry's defaults filled in."""
        return self.component(slot).params.model_validate(self.components[slot].params).model_dump()

    def tooltip(self, slot: str, term: Term) -> str:
        return self.components[slot].tooltips.get(term.key, term.tooltip)


def _param_problems(slot: str, kind: Kind, err: ValidationError) -> list[str]:
    """A kind's parameter errors, each naming components.<slot>.params.<name>."""
    problems = []
    for e in err.errors():
        where = ".".join(str(x) for x in e["loc"])
        if e["type"] == "extra_forbidden":
            known = ", ".join(kind.params.model_fields) or "none"
            problems.append(f"components.{slot}.params.{where}: unknown parameter of {kind.name} (known: {known})")
        else:
            problems.append(f"components.{slot}.params.{where}: {e['msg'].removeprefix('Value error, ')}")
    return problems


def _cross_slot_problems(components: dict[str, ComponentSpec]) -> list[str]:
    """Combinations that validate slot by slot but cannot be trained as written."""
    problems = []
    kinds = {slot: REGISTRY[slot][components[slot].kind] for slot in SLOTS}
    if kinds["kl"].kl_place == "reward" and kinds["advantage"].group_baseline:
        token_level = sorted(k.name for k in REGISTRY["advantage"].values() if not k.group_baseline)
        problems.append(f"components.kl.kind: {kinds['kl'].name} puts the KL into per-token rewards, which only a "
                        f"token-level advantage uses ({', '.join(token_level)}); "
                        f"{components['advantage'].kind} would ignore it (use a KL in the loss)")
    clip, ratio = kinds["clip"], kinds["ratio"]
    if clip.ratio_kinds and ratio.name not in clip.ratio_kinds and not ratio.is_none:
        problems.append(f"components.clip.kind: {clip.name} weights each token's own log-probability by a ratio of kind "
                        f"{' or '.join(clip.ratio_kinds)}, not {ratio.name} (set components.ratio.kind to "
                        f"{clip.ratio_kinds[0]}, or use another clip)")
    for slot in SLOTS:
        need = kinds[slot].aggregation_kinds
        if need and kinds["aggregation"].name not in need:
            problems.append(f"components.aggregation.kind: {kinds[slot].name} ({slot}) is one term per response averaged "
                            f"over responses, which only aggregation {' or '.join(need)} weighs as it means, and "
                            f"{kinds['aggregation'].name} would reweight it (set components.aggregation.kind to {need[0]})")
    if (kinds["filter"].response_keep is not None and components["filter"].params.get("count_masked") is False
            and kinds["aggregation"].weights_from_counts):
        problems.append(f"components.filter.params.count_masked: false takes masked responses out of the normaliser, "
                        f"but {kinds['aggregation'].name} divides by the number of responses, which no trainer shrinks "
                        "when it masks (TRL counts every row, and only its token count drops masked tokens): set "
                        "count_masked true, or use the token_mean aggregation")
    if kinds["ratio"].is_none and not kinds["clip"].is_none:
        problems.append("components.clip.kind: with ratio 'none' the ratio is always 1, so clipping never acts "
                        "(use clip 'none')")
    return problems


# ---------------------------------------------------------------------------
# Loading
# ---------------------------------------------------------------------------

def _format_validation(path: Path, err: ValidationError) -> str:
    lines = []
    for e in err.errors():
        loc = ".".join(str(x) for x in e["loc"])
        msg = e["msg"].removeprefix("Value error, ")
        if e["type"] == "value_error" and not loc:
            lines.extend(f"{path}: {part}" for part in msg.split("; "))
        elif e["type"] == "extra_forbidden":
            lines.append(f"{path}: {loc}: unknown field")
        else:
            lines.append(f"{path}: {loc}: {msg}")
    return "\n".join(lines)


def load_spec(path: str | Path) -> AlgorithmSpec:
    """Load and validate one spec file; SpecError names the file and every bad field."""
    path = Path(path)
    try:
        raw = yamlfile.load(path)
    except FileNotFoundError:
        raise SpecError(f"{path}: no such spec file") from None
    except OSError as err:
        raise SpecError(f"{path}: cannot be read: {err.strerror or err}") from None
    except UnicodeDecodeError as err:
        raise SpecError(f"{path}: not valid UTF-8 (byte {err.start})") from None
    except (yaml.YAMLError, RecursionError) as err:
        raise SpecError(f"{path}: not valid YAML: {err if isinstance(err, yaml.YAMLError) else 'nested too deeply'}") from None
    if not isinstance(raw, dict):
        raise SpecError(f"{path}: a spec is a mapping with id, name, components, ...")
    bad = [f"{path}: {'.'.join(str(k) for k in loc) or '(top)'}: {message}"
           for loc, message in limits.problems(raw, max_nodes=SPEC_MAX_VALUES)]
    if bad:
        raise SpecError("\n".join(bad[:50]))
    try:
        spec = AlgorithmSpec.model_validate(raw)
    except ValidationError as err:
        raise SpecError(_format_validation(path, err)) from None
    if spec.id != path.stem:
        raise SpecError(f"{path}: id: {spec.id!r} must match the file name {path.stem!r}")
    return spec


def load_specs(directory: str | Path | None = None) -> dict[str, AlgorithmSpec]:
    """Every spec in a directory (default: the project's data/algorithms), by id; predecessors
    must name a spec that exists."""
    directory = Path(directory) if directory is not None else project.spec_dir()
    specs = {}
    errors = []
    for path in sorted(directory.glob("*.yaml")):
        try:
            spec = load_spec(path)
        except SpecError as err:
            errors.append(str(err))
            continue
        specs[spec.id] = spec
    for spec in specs.values():
        if spec.predecessor is not None and spec.predecessor not in specs:
            errors.append(f"{directory / (spec.id + '.yaml')}: predecessor: no spec {spec.predecessor!r} "
                          f"in {directory}")
    errors += [_cycle_problem(directory, cycle) for cycle in predecessor_cycles(specs)]
    if errors:
        raise SpecError("\n".join(errors))
    return specs


def predecessor_cycles(specs: dict[str, AlgorithmSpec]) -> list[list[str]]:
    """Each cycle of predecessors once (``[a, b]``: a's predecessor is b, b's is a), from its smallest id."""
    cycles, seen = [], set()
    for start in sorted(specs):
        chain, at = [], start
        while at in specs and at not in seen and at not in chain:
            chain.append(at)
            at = specs[at].predecessor
        if at in chain:
            cycle = chain[chain.index(at):]
            first = cycle.index(min(cycle))
            cycles.append(cycle[first:] + cycle[:first])
        seen.update(chain)
    return cycles


def _cycle_problem(directory: Path | None, cycle: list[str]) -> str:
    """One line naming the cycle's first spec file and its predecessor field."""
    path = f"{cycle[0]}.yaml" if directory is None else directory / f"{cycle[0]}.yaml"
    loop = " -> ".join([*cycle, cycle[0]])
    return (f"{path}: predecessor: {cycle[1 % len(cycle)]!r} leads back to {cycle[0]!r} ({loop}: each names the "
            f"next as its predecessor); a lineage must start at a spec without one")


def lineage(specs: dict[str, AlgorithmSpec]) -> list[AlgorithmSpec]:
    """Specs ordered so each comes after its predecessor (then by year, then id).

    SpecError for a cycle of predecessors (load_specs refuses one first, naming its directory).
    """
    cycles = predecessor_cycles(specs)
    if cycles:
        raise SpecError(_cycle_problem(None, cycles[0]))
    ordered, placed = [], set()
    remaining = sorted(specs.values(), key=lambda s: (s.year, s.id))
    while remaining:
        for spec in remaining:
            if spec.predecessor is None or spec.predecessor in placed or spec.predecessor not in specs:
                ordered.append(spec)
                placed.add(spec.id)
                remaining.remove(spec)
                break
    return ordered


def load_algorithm(name: str, root: str | Path | None = None) -> AlgorithmSpec:
    """A spec by id (``<root>/data/algorithms/<id>.yaml``) or by the path of a spec file.

    An id is matched ignoring case. Raises SpecError for a bad spec file and ValueError naming the
    known ids (and the closest one) for an unknown one (project.ProjectError, a ValueError, when no
    project root is found).
    """
    path = Path(name)
    if path.suffix in (".yaml", ".yml") or path.exists():
        return load_spec(path)
    directory = project.spec_dir(root)
    specs = load_specs(directory)
    rungs = {p.stem: p for p in ablation_spec_paths(directory)}
    for candidate in (name, name.lower()):  # GRPO, Dapo: ids are lower-case
        if candidate in specs:
            return specs[candidate]
        if candidate in rungs:
            return load_spec(rungs[candidate])
    import difflib

    close = difflib.get_close_matches(name.lower(), [*specs, *rungs], n=1)
    hint = f"did you mean {close[0]!r}? " if close else ""
    raise ValueError(f"unknown algorithm {name!r}: {hint}known: {', '.join(sorted(specs))}; or give a spec file path")


def ablation_spec_paths(directory: str | Path) -> list[Path]:
    """Specs in subdirectories of the spec directory (ladder/: the ablation ladder's rungs).

    They train and validate like any spec but are not chapters of the course: load_specs, which
    lists the course's algorithms, reads the top-level directory only.
    """
    return sorted(Path(directory).glob("*/*.yaml"))


# ---------------------------------------------------------------------------
# Resolution: the concrete configuration a run trains with (copied into its log)
# ---------------------------------------------------------------------------

class ResolvedComponent(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)
    kind: Name
    params: dict[Name, Any] = Field(default_factory=dict)


class ResolvedAlgorithm(BaseModel):
    """What a run actually trained with: every slot's kind and concrete parameters.

    Each slot's parameters are validated by its kind's parameter model (types and ranges) and
    stored with the registry's defaults filled in. In a run's header, the parameters a run
    resolves (the constant normaliser, the overlong lengths) must be set; validation of the
    header names each one left null.
    """

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)
    id: str = Field(pattern=SPEC_ID)
    name: Name
    components: dict[Name, ResolvedComponent]

    @model_validator(mode="before")
    @classmethod
    def _optional_slots(cls, data: Any) -> Any:
        """A configuration written before a slot existed (schema unipo-run/1 has no correction) reads as
        that slot's default kind."""
        return _with_optional_slots(data, explanation=False)

    @model_validator(mode="after")
    def _registered(self) -> "ResolvedAlgorithm":
        problems = []
        for slot in SLOTS:
            if slot not in self.components:
                problems.append(f"components: missing slot {slot}")
                continue
            comp = self.components[slot]
            if comp.kind not in REGISTRY[slot]:
                problems.append(f"components.{slot}.kind: unknown component {comp.kind!r} "
                                f"(known for {slot}: {', '.join(sorted(REGISTRY[slot]))})")
                continue
            kind = REGISTRY[slot][comp.kind]
            try:
                comp.params = kind.params.model_validate(comp.params).model_dump()
            except ValidationError as err:
                problems += _param_problems(slot, kind, err)
        problems += [f"components.{slot}: unknown slot (slots: {', '.join(SLOTS)})"
                     for slot in self.components if slot not in SLOTS]
        if problems:
            raise ValueError("; ".join(problems))
        return self

    def kind(self, slot: str) -> str:
        return self.components[slot].kind

    def unresolved(self) -> list[str]:
        """``components.<slot>.params.<name>`` of each run-resolved parameter left null."""
        return [f"components.{slot}.params.{name}" for slot, comp in self.components.items() if slot in REGISTRY
                for name in REGISTRY[slot][comp.kind].run_resolved if comp.params.get(name) is None]

    def component(self, slot: str) -> Kind:
        """The registry's entry of this slot's kind."""
        return REGISTRY[slot][self.components[slot].kind]

    def param(self, slot: str, name: str, default: Any = None) -> Any:
        return self.components[slot].params.get(name, default)


def resolve(spec: AlgorithmSpec, *, max_new_tokens: int) -> ResolvedAlgorithm:
    """Fill the run-dependent parameters (normaliser, overlong lengths) from the run."""
    components = {}
    for slot in SLOTS:
        params = spec.params(slot)
        kind = spec.component(slot)
        if kind.resolve is not None:
            params = kind.resolve(params, max_new_tokens)
        components[slot] = ResolvedComponent(kind=kind.name, params=params)
    return ResolvedAlgorithm(id=spec.id, name=spec.name, components=components)
