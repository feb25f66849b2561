"""What the importers share: the output directory, metric names, notes, algorithm resolution and
the token-level derivations.

Rules every importer follows:

- It never writes to its input: inputs are opened read-only, and ``--out`` must be a new or
  empty directory that is not inside the input. The run is written to a hidden staging
  directory next to ``--out`` and renamed into place only once it validates, so a failed
  import leaves nothing behind.
- Bad input stops the import with a :class:`unipo_build.core.runlog.LogError` naming the file, the
  line or entry, the step, the prompt and response, and the field.
- Unknown fields are kept: under their own names as extra fields of the record they belong to
  (a name that collides with one of ours gets the prefix ``source_``).
- Every value the source did not log but the importer filled in is listed in the run header's
  ``notes`` (and in ``imported_from.derivations``), with how it was derived.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

import numpy as np

from unipo_build.core import components as C
from unipo_build.core import objective as O
from unipo_build.core.matching import nearest_spec
from unipo_build.core.project import ProjectError
from unipo_build.core.reader import validate_run
from unipo_build.core.runlog import LogError
from unipo_build.core.specs import REGISTRY, AlgorithmSpec, ResolvedAlgorithm, SpecError, load_specs, resolve
from unipo_build.trainers.notes import NOTES_LEAD, Notes, one_note, split_notes  # noqa: F401  (the importers read them here)

EXTRA_PREFIX = "source_"


class OutputError(Exception):
    """``--out`` cannot be used (not empty, inside the input, ...)."""


# ---------------------------------------------------------------------------
# Locations for error messages
# ---------------------------------------------------------------------------

@dataclass
class Loc:
    """Where in the input a value is, for LogError."""

    file: str
    line: int | None = None
    step: int | None = None
    parts: tuple[str, ...] = ()

    def at(self, part: str) -> "Loc":
        return Loc(self.file, self.line, self.step, self.parts + (part,))

    def error(self, message: str, field_name: str | None = None) -> LogError:
        return LogError(self.file, message, line=self.line, step=self.step,
                        where=", ".join(self.parts) or None, field=field_name)


def _type_name(value: Any) -> str:
    return "null" if value is None else {bool: "a boolean", str: "a string", list: "a list", dict: "an object",
                                          int: "an integer", float: "a number"}.get(type(value), type(value).__name__)


def is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def number(value: Any, loc: Loc, field_name: str, *, finite: bool = True) -> float:
    if not is_number(value):
        raise loc.error(f"expected a number, got {_type_name(value)}", field_name)
    value = float(value)
    if finite and not math.isfinite(value):
        raise loc.error("NaN or infinity is not allowed here", field_name)
    return value


def number_list(value: Any, loc: Loc, field_name: str, length: int | None) -> list[float]:
    if not isinstance(value, list):
        raise loc.error(f"expected a list of numbers, got {_type_name(value)}", field_name)
    if length is not None and len(value) != length:
        raise loc.error(f"has {len(value)} elements, expected {length} (the length of tokens.ids)", field_name)
    out = []
    for i, item in enumerate(value):
        if not is_number(item):
            raise loc.error(f"element {i} is {_type_name(item)}, expected a number", field_name)
        item = float(item)
        if not math.isfinite(item):
            raise loc.error(f"element {i} is NaN or infinity, which is not allowed here", field_name)
        out.append(item)
    return out


def free_form(value: Any, notes: Notes, what: str) -> Any:
    """Unknown data kept as it is, except NaN and infinities (not JSON): they become null."""
    if isinstance(value, float) and not math.isfinite(value):
        notes.add(f"non-finite numbers in {what} kept as null")
        return None
    if isinstance(value, dict):
        return {str(k): free_form(v, notes, what) for k, v in value.items()}
    if isinstance(value, list):
        return [free_form(v, notes, what) for v in value]
    return value


def keep_extras(raw: dict, known: Iterable[str], reserved: Iterable[str], notes: Notes, what: str) -> dict:
    """Fields of ``raw`` not in ``known``, renamed ``source_<name>`` if ``<name>`` is one of ours."""
    known, reserved = set(known), set(reserved)
    out = {}
    for key, value in raw.items():
        if key in known:
            continue
        name = f"{EXTRA_PREFIX}{key}" if key in reserved else str(key)
        out[name] = free_form(value, notes, what)
    return out


# ---------------------------------------------------------------------------
# Metric names: the source's names onto the catalogue (unipo_build.core.schema.METRICS)
# ---------------------------------------------------------------------------

def _percent(value: float) -> float:
    return value / 100.0


#: source name -> (catalogue name, conversion or None). Used by both importers: UNIPO's
#: published logs were made with OpenRLHF and use its names.
METRIC_ALIASES: dict[str, tuple[str, Callable[[float], float] | None]] = {
    "reward": ("reward/mean", None),
    "reward_std": ("reward/std", None),
    "policy_objective": ("objective", None),
    "policy_loss": ("loss/policy", None),
    "value_loss": ("loss/value", None),
    "critic_loss": ("loss/value", None),
    "entropy": ("entropy/mean", None),
    # OpenRLHF logs the mean token entropy under this name (its loss subtracts coef x entropy).
    "entropy_loss": ("entropy/mean", None),
    "kl": ("kl/mean", None),
    "grad_norm": ("grad_norm", None),
    "learning_rate": ("lr", None),
    "policy_lr": ("lr", None),
    "actor_lr": ("lr", None),
    "response_length": ("length/mean", None),
    "importance_sampling_ratio": ("ratio/mean", None),
    # Both are percentages (OpenRLHF: kept / sampled * 100); the catalogue's is a fraction.
    "dynamic_sampling_pass_rate": ("sampling/pass_rate", _percent),
    "dynamic_filtering_pass_rate": ("sampling/pass_rate", _percent),
}


def map_metrics(raw: Any, loc: Loc, notes: Notes, *, prefix_unknown: str = "") -> dict[str, float | None]:
    """Source metrics onto catalogue names; unknown names are kept (with ``prefix_unknown``).

    A value must be a number or null; NaN and infinities become null (the schema's "undefined
    at this step"), counted in the notes. When two source names map to the same catalogue
    name, the first one wins and the other keeps its own name.
    """
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise loc.error(f"expected an object of metric name -> number, got {_type_name(raw)}", "metrics")
    out: dict[str, float | None] = {}
    for name, value in raw.items():
        name = str(name)
        if value is not None and not is_number(value):
            raise loc.error(f"expected a number or null, got {_type_name(value)}", f"metrics.{name}")
        target, convert = METRIC_ALIASES.get(name, (None, None))
        if target is None or target in out:
            if target is not None:
                notes.once(f"metric {name!r} also maps to {target!r}; kept under its own name")
            target, convert = f"{prefix_unknown}{name}", None
        elif target != name:
            notes.once(f"metric {name!r} -> {target!r}" + (" (percent / 100)" if convert else ""))
        if value is not None:
            value = float(value)
            if not math.isfinite(value):
                notes.add(f"non-finite value of metric {name!r} kept as null")
                value = None
            elif convert is not None:
                value = convert(value)
        out[target] = value
    return out


# ---------------------------------------------------------------------------
# Algorithms
# ---------------------------------------------------------------------------

def _normalise(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower())


def known_specs(notes: Notes | None = None) -> dict[str, AlgorithmSpec]:
    """The project's specs (outside a project, those shipped with the package: ``project.spec_dir``); none where
    there are neither or a spec is broken (the import then keeps the log's own algorithm name). With ``notes``, the
    run's notes say which spec directory the run was matched against, or that none was found and why (an import
    must not lose its nearest spec silently)."""
    from unipo_build.core import project

    try:
        directory = project.spec_dir()
    except ProjectError:
        if notes is not None:
            notes.once(f"no spec directory found (no {project.SPECS} at or above {Path.cwd()}, and "
                       f"{project.ENV_ROOT} unset): the run is matched to no spec, so no nearest spec is named "
                       f"(import from inside the project, or set {project.ENV_ROOT})")
        return {}
    try:
        specs = load_specs(directory)
    except SpecError as err:
        if notes is not None:
            notes.once(f"the specs of {directory} do not load ({str(err).splitlines()[0]}): the run is matched to "
                       "no spec")
        return {}
    if notes is not None:
        notes.once(f"matched against the specs shipped with unipo ({directory}): no {project.SPECS} at or above "
                   f"{Path.cwd()}" if directory == project.shipped_spec_dir() else
                   f"matched against the specs of {directory}")
    return specs


def algorithm_id(name: str, notes: Notes | None = None) -> str:
    """An algorithm's name as the header's identifier: letters, digits, '_', '.', '-' (the name
    itself stays in the title); noted when it had to change."""
    cleaned = re.sub(r"[^A-Za-z0-9_.-]+", "_", name.strip()).strip("_.-")[:128] or "unknown"
    if notes is not None and cleaned != name:
        notes.once(f"algorithm {name!r} written as the identifier {cleaned!r}")
    return cleaned


def match_spec(name: str, specs: dict[str, AlgorithmSpec]) -> str | None:
    """Our spec id for an algorithm name, ignoring case and punctuation ('Dr. GRPO', 'drgrpo' -> dr_grpo)."""
    wanted = _normalise(name)
    for spec_id, spec in sorted(specs.items()):
        if wanted in (_normalise(spec_id), _normalise(spec.name)):
            return spec_id
    return None


BUDGET_KEYS = ("generate_max_len", "max_new_tokens", "max_response_length", "max_completion_length", "max_tokens")
CLIP_KEYS = ("clip_eps", "eps_clip", "eps_clip_low_high", "clip_range")
KL_COEF_KEYS = ("init_kl_coef", "kl_coef", "beta")


def nearest_algorithm(config: ResolvedAlgorithm, specs: dict[str, AlgorithmSpec], trainer: str,
                      notes: Notes, gaps: Iterable[str] = ()) -> str:
    """The algorithm id an import writes for a trainer's own components: the nearest spec's
    (:func:`unipo_build.core.matching.nearest_spec`, the rule ``unipo explain`` names a run's spec by) when it has all of
    the run's kinds, else ``config.id``. The notes name the nearest spec and how it differs, counted as the explain
    page counts (``SpecMatch.how``: ``gaps``, the slots of the import's gaps, differ too), so the import note and
    the explain page of the run name the same spec and the same number of slots."""
    match = nearest_spec(None, config, specs)
    if match is None:
        return config.id
    if match.exact_kinds:
        if match.differing(gaps):
            notes.once(f"{match.spec.id}'s kinds with {trainer}'s settings, {match.how(gaps)}")
        return match.spec.id
    notes.once(f"no spec has all of {trainer}'s kinds, nearest spec: {match.spec.id} ({match.how(gaps)})")
    return config.id


def _first(hparams: dict, keys: tuple[str, ...]) -> tuple[str | None, Any]:
    for key in keys:
        if key in hparams and hparams[key] is not None:
            return key, hparams[key]
    return None, None


def _needs_budget(spec: AlgorithmSpec) -> list[str]:
    """What of the spec the run's generation budget fills in (a kind whose ``resolve`` reads it: the constant
    normaliser, the overlong lengths, where the spec leaves them null), as 'its <label> (<slot>)'."""
    uses = []
    for slot, comp in spec.components.items():
        k, params = REGISTRY[slot][comp.kind], spec.params(slot)
        if k.resolve is not None and k.resolve(params, 1) != k.resolve(params, 2):
            uses.append(f"its {k.label} ({slot})")
    return uses


def resolve_for_import(spec: AlgorithmSpec, hparams: dict, max_new_tokens: int | None, loc: Loc,
                       notes: Notes, *, hparams_field: bool = True) -> ResolvedAlgorithm:
    """The spec resolved for an imported run, with the clip and KL settings the log records.

    The generation budget (for a constant normaliser or overlong shaping left to the run) is
    ``--max-new-tokens``, else the first of ``hparams`` generate_max_len, max_new_tokens, ... .
    ``hparams`` clip_eps / eps_clip (a number or [low, high]) set the clip bounds, init_kl_coef
    / kl_coef the KL coefficient (0 removes the KL term), kl_estimator the estimator.
    """
    budget = max_new_tokens
    if budget is None:
        key, value = _first(hparams, BUDGET_KEYS)
        if key is not None and is_number(value) and value >= 1:
            budget = int(value)
    uses = _needs_budget(spec) if budget is None else []
    if uses:
        raise loc.error(f"{spec.id} needs the generation budget ({' and '.join(uses)}), which the log does not "
                        "record: pass --max-new-tokens N" + (" (or log hparams.generate_max_len)" if hparams_field
                                                            else ""),
                        "hparams.generate_max_len" if hparams_field else None)
    config = resolve(spec, max_new_tokens=budget or 1).model_dump()
    comps = config["components"]

    key, value = _first(hparams, CLIP_KEYS)
    if key is not None:
        bounds = None
        if is_number(value) and 0 < value < 1:
            bounds = (float(value), float(value))
        elif (isinstance(value, list) and len(value) == 2 and all(is_number(v) for v in value)
              and 0 < value[0] < 1 and value[1] > 0):
            bounds = (float(value[0]), float(value[1]))
        clip = comps["clip"]
        if bounds is None:
            notes.add(f"hparams.{key} = {value!r} not understood as clip bounds; the spec's kept")
        elif REGISTRY["clip"][clip["kind"]].is_none:
            notes.add(f"hparams.{key} ignored: {spec.id} does not clip")
        else:
            low, high = bounds
            # kind name: hparams' clip bounds are PPO's, the symmetric or the asymmetric kind, whichever they fit
            new = ({"kind": "symmetric", "params": {"eps": low}} if low == high and clip["kind"] == "symmetric"
                   else {"kind": "asymmetric", "params": {"eps_low": low, "eps_high": high}})
            if new != clip:
                notes.add(f"clip set from hparams.{key}: {new['kind']} {new['params']}")
                comps["clip"] = new

    kl = comps["kl"]
    key, value = _first(hparams, KL_COEF_KEYS)
    if key is not None and is_number(value) and not REGISTRY["kl"][kl["kind"]].is_none:
        if value == 0:
            notes.add(f"KL term removed: hparams.{key} is 0")
            comps["kl"] = {"kind": "none", "params": {}}  # the slot's empty choice
        elif value > 0 and value != kl["params"].get("beta"):
            notes.add(f"KL beta set from hparams.{key}: {value}")
            kl["params"]["beta"] = float(value)
    est = hparams.get("kl_estimator")
    if not REGISTRY["kl"][comps["kl"]["kind"]].is_none and est in C.KL_ESTIMATORS and est != comps["kl"]["params"].get("estimator"):
        notes.add(f"KL estimator set from hparams.kl_estimator: {est}")
        comps["kl"]["params"]["estimator"] = est

    for slot, comp in comps.items():
        REGISTRY[slot][comp["kind"]].params.model_validate(comp["params"])
    return ResolvedAlgorithm.model_validate(config)


# ---------------------------------------------------------------------------
# Token-level derivations (one step's logged responses at a time)
# ---------------------------------------------------------------------------

@dataclass
class TokenInputs:
    """One response's logged token arrays, checked; ``objective`` is None when not logged."""

    loc: Loc
    ids: list[int]
    text: list[str]
    logp: list[float]
    old_logp: list[float]
    advantage: list[float]
    ref_logp: list[float] | None = None
    value: list[float] | None = None
    return_: list[float] | None = None
    kl: list[float] | None = None
    entropy: list[float] | None = None
    objective: list[float] | None = None
    extras: dict = field(default_factory=dict)
    #: the sampler's log-probs (the rollout correction's pi_sampler), where the trainer logged them
    sample_logp: list[float] | None = None
    #: whether the response hit the generation budget, where the trainer logged it (a filter masking truncated
    #: responses needs it for the weights)
    truncated: bool | None = None
    #: which tokens the trainer's loss counted (None: all). A token outside it has no log-probs of its own (TRL
    #: masks a truncated completion out of attention: its log-probs are placeholders), so its ratio, clip side,
    #: objective and weight are 0, as objective.token_terms writes any token outside the mask
    mask: list[int] | None = None


@dataclass
class TokenOutputs:
    ratio: list[float]
    clip: list[int]
    weight: list[float]
    objective: list[float]
    kl: list[float] | None
    contribution: float


def _pad(rows: list[list[float]], width: int) -> np.ndarray:
    out = np.zeros((len(rows), width), dtype=np.float64)
    for i, row in enumerate(rows):
        out[i, : len(row)] = row
    return out


#: How a run of an algorithm the registry cannot express is read token by token: the token ratio, no clip, no KL,
#: one token mean over the logged tokens of the step (its advantage is the one the log holds).
UNKNOWN = ResolvedAlgorithm.model_validate({"id": "unknown", "name": "unknown", "components": {
    "advantage": {"kind": "group_mean"}, "ratio": {"kind": "token"}, "clip": {"kind": "none"}, "kl": {"kind": "none"},
    "aggregation": {"kind": "token_mean"}, "filter": {"kind": "none"}, "shaping": {"kind": "none"}}})


def derive_tokens(cfg: ResolvedAlgorithm | None, responses: list[TokenInputs], notes: Notes) -> list[TokenOutputs]:
    """Ratio, clip side, aggregation weight and (when not logged) objective of every token, by
    ``objective.token_terms`` and ``objective.weights`` with the run's components (:data:`UNKNOWN`'s
    for an unknown algorithm, ``cfg`` None):

    - ratio: the spec's ratio from the log-probs (token: exp(logp - old_logp); sequence: the
      geometric mean of the response's token ratios; none: 1); unknown algorithm: token ratio.
    - clip side: where the spec's clip bounds were active (A > 0 and ratio > 1 + eps_high: 1;
      A < 0 and ratio < 1 - eps_low: -1); unknown algorithm: 0.
    - weight: the spec's aggregation over the logged responses of the step (the log holds a
      sample of the minibatch, so a group-size-dependent weight is that of the sample);
      unknown algorithm: one over the number of logged tokens of the step (a token mean).
    - objective: as logged; otherwise the spec's surrogate minus beta x KL when the KL is in
      the loss (KL as logged, else the spec's estimator from ref_logp; a response with neither
      has its objective without the KL term, noted); unknown: ratio x A. With a rollout correction the
      surrogate is weighed by the correction's weight from ``sample_logp`` (a response without the
      sampler's log-probs stops the import with one line: none is invented).
    """
    if not responses:
        return []
    algo = cfg if cfg is not None else UNKNOWN
    width = max(1, max(len(r.ids) for r in responses))
    mask = _pad([[1.0] * len(r.ids) for r in responses], width)  # the responses' tokens, for the weights
    in_objective = _pad([[1.0] * len(r.ids) if r.mask is None else r.mask for r in responses], width)
    logp = _pad([r.logp for r in responses], width)
    in_loss = O.kl_in_loss(algo)
    kl_in_loss = None
    if in_loss:
        # The spec's estimate where the reference's log-probs are logged (a response without them: the policy's
        # own, an estimate of 0), replaced by the KL the trainer logged where it did.
        ref = _pad([r.ref_logp if r.ref_logp is not None else r.logp for r in responses], width)
        kl_in_loss = np.asarray(O.reference_kl(algo, logp, ref, mask))
        for i, r in enumerate(responses):
            if r.kl is not None:
                kl_in_loss[i, : len(r.kl)] = r.kl
        kl_in_loss = kl_in_loss * in_objective
    sampler = None
    if algo.component("correction").apply is not None:
        # the rollout correction weighs each token by the learner's over the sampler's probability: never invented
        lacking = next((r for r in responses if r.sample_logp is None), None)
        if lacking is not None:
            raise lacking.loc.error("the run's rollout correction needs the sampler's log-probs, which this response "
                                    "lacks", "tokens.sample_logp")
        sampler = _pad([r.sample_logp for r in responses], width)
    with np.errstate(over="ignore", invalid="ignore"):
        terms = O.token_terms(algo, logp=logp, old_logp=_pad([r.old_logp for r in responses], width),
                              advantages=_pad([r.advantage for r in responses], width), mask=in_objective,
                              kl=kl_in_loss, sampler_logp=sampler)
        ratio, side, derived = np.asarray(terms.ratio), np.asarray(terms.clip_side), np.asarray(terms.objective)
        flags = ([bool(r.truncated) for r in responses] if O.masks_responses(algo)
                 and all(r.truncated is not None for r in responses) else None)
        weights = (np.zeros_like(mask) if mask.sum() == 0 else
                   np.asarray(O.weights(algo, mask, truncated=None if flags is None else np.array(flags)))
                   * in_objective)

    outputs = []
    for i, r in enumerate(responses):
        n = len(r.ids)
        kl = r.kl
        if kl is None and in_loss and r.ref_logp is not None:
            kl = kl_in_loss[i, :n].tolist()
            notes.add("token kl computed from ref_log_probs with the spec's estimator")
        if r.objective is not None:
            objective = list(r.objective)
        else:
            if in_loss and kl is None:
                notes.add("token objective derived without its KL term (no ref_log_probs or token_kl logged)")
            objective = derived[i, :n].tolist()
            notes.add("token objective derived from the spec's math (token_objective not logged)"
                      if cfg is not None else "token objective derived as ratio x advantage (algorithm unknown)")
        row_ratio = ratio[i, :n]
        for name, values in (("ratio", row_ratio), ("objective", np.asarray(objective, dtype=np.float64))):
            bad = np.flatnonzero(~np.isfinite(values))
            if bad.size:
                raise r.loc.error(f"the derived {name} of token {int(bad[0])} is not finite (log-probs too far "
                                  "apart?)", f"tokens.{name}")
        w = weights[i, :n]
        contribution = float(np.sum(w * np.asarray(objective, dtype=np.float64))) if n else 0.0
        outputs.append(TokenOutputs(ratio=row_ratio.tolist(), clip=[int(s) for s in side[i, :n]],
                                    weight=w.tolist(), objective=objective, kl=kl, contribution=contribution))
    if cfg is None:
        notes.once("clip side 0 for every token (algorithm unknown: no clip bounds)")
        notes.once("token weights = 1 / (logged tokens of the step), a token mean (algorithm unknown)")
    else:
        notes.once("ratio, clip side and weights derived with the spec's components over the logged responses of "
                  "each step")
    return outputs


# ---------------------------------------------------------------------------
# Files
# ---------------------------------------------------------------------------

def jsonl_objects(path: Path, skipped: list[str]) -> Iterator[tuple[int, dict]]:
    """(line number, object) of each line; an unreadable line is listed in ``skipped`` and passed over."""
    with path.open("rb") as fh:
        for number, raw in enumerate(fh, 1):
            if not raw.strip():
                continue
            try:
                value = json.loads(raw.decode("utf-8"))
            except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as err:
                skipped.append(f"{path}: line {number}: not JSON ({str(err).splitlines()[0][:80]})")
                continue
            if not isinstance(value, dict):
                skipped.append(f"{path}: line {number}: not an object")
                continue
            yield number, value


def progress(iterable, *, desc: str, unit: str = "step", total: int | None = None):
    """``iterable`` with a progress bar on a terminal (tqdm, when installed: the train extra), gone when done; as
    it is elsewhere (a pipe, a test, the site's environment without tqdm)."""
    try:
        from tqdm import tqdm
    except ImportError:
        return iterable
    return tqdm(iterable, desc=desc, unit=unit, total=total, leave=False, dynamic_ncols=True, disable=None)


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def run_id_from(path: Path) -> str:
    stem = path.name
    for suffix in (".jsonl", ".json", ".gz"):
        stem = stem.removesuffix(suffix)
    cleaned = re.sub(r"[^A-Za-z0-9_.-]+", "-", stem).strip("-.") or "imported"
    return cleaned if cleaned[0].isalnum() else f"run-{cleaned}"


RUN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


def check_run_id(run_id: str) -> str:
    if not RUN_ID.match(run_id):
        raise OutputError(f"--run-id {run_id!r}: use letters, digits, '_', '.', '-' (starting with a letter or digit)")
    return run_id


def staging_dir(out: Path, src: Path) -> Path:
    """Check ``out`` and return a fresh hidden directory next to it to write the run into."""
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise OutputError(f"{out}: exists and is not a directory; choose a new --out")
    if out.is_dir() and any(out.iterdir()):
        raise OutputError(f"{out}: is not empty; an import never writes over anything, choose a new --out")
    src_r, out_r = Path(src).resolve(), out.resolve()
    if src_r.is_dir() and (out_r == src_r or src_r in out_r.parents):
        raise OutputError(f"{out}: is inside the input {src}; choose --out outside it")
    out.parent.mkdir(parents=True, exist_ok=True)
    stage = out.parent / f".{out.name}.importing-{os.getpid()}"
    if stage.exists():
        shutil.rmtree(stage)
    stage.mkdir()
    return stage


def publish(stage: Path, out: Path) -> Path:
    """Validate the staged run, then move it to ``out``. An invalid run is a bug: it is reported."""
    problems = validate_run(stage)
    if problems:
        raise RuntimeError("the importer wrote a run that does not validate (a bug; please report it):\n"
                           + "\n".join(str(p) for p in problems))
    if out.is_dir():
        out.rmdir()
    os.replace(stage, out)
    return out


def discard(stage: Path) -> None:
    shutil.rmtree(stage, ignore_errors=True)
