"""Import a run of TRL's GRPOTrainer (TRL 1.16) and its UNIPO token tap into a canonical run.

``unipo import trl OUTPUT_DIR --tap TAP_DIR --out RUN``

- ``OUTPUT_DIR/trainer_state.json`` (``Trainer.save_state()``; else the newest
  ``checkpoint-N/trainer_state.json``): its ``log_history`` holds one entry per logged optimizer step
  (``Trainer.log``, with GRPOTrainer's metrics averaged over the step's micro-batches) and a last
  summary entry (``train_runtime``, ``train_loss``). Each logged step becomes one canonical step,
  numbered 0, 1, ... in order; TRL's global step (from 1) is kept as ``source_step``. Use
  ``logging_steps=1`` so that every optimizer step is there.
- ``TAP_DIR`` (``unipo_build.trl_tap.TrlTokenTap``): ``manifest.json`` (TRL version, GRPOConfig) and
  ``shard-rank*.jsonl`` (generation and update records). Without ``--tap`` the run has metrics only
  and, unless ``--algorithm`` names a spec, algorithm_config null.

Metric names: ``reward`` -> reward/mean, ``reward_std`` -> reward/std, ``kl`` -> kl/mean, ``entropy``
-> entropy/mean, ``completions/mean_length`` -> length/mean, ``completions/clipped_ratio`` ->
length/truncated_frac, ``clip_ratio/low_mean`` -> clip/frac_low, ``clip_ratio/high_mean`` ->
clip/frac_high, ``frac_reward_zero_std`` -> groups/zero_variance_frac, ``learning_rate`` -> lr,
``loss`` -> loss/policy (objective = -loss); every other name is kept as logged.

The algorithm is derived from the GRPOConfig the tap recorded (:func:`trl_components`): loss_type
gives the aggregation (grpo: mean per response then over responses; dapo: one token mean over the
generation batch; dr_grpo: sum over G x max_completion_length; bnpo: token mean; luspo: sum per
response, mean over responses), scale_rewards the advantage (group: group z-score with sample std and
TRL's 1e-4; none: group mean), importance_sampling_level the ratio, epsilon / epsilon_high the clip
and beta the KL (k3 in the loss, as TRL computes it). A setting the registry has no kind for is
named with the nearest kind in the header (``trl.gaps``) and the notes, and the import goes on with
the nearest; a loss_type whose surrogate has no kind at all (cispo, sapo, vespo) stops the import
unless ``--algorithm`` names the spec to view it against.

Token files: every tapped rollout gives, for each optimizer step that trained on it, a token file of
that step: every group of the step (its size, reward mean and share of the objective) and the tapped
groups' completions token by token. logp, old_logp and the ratio are those of the step's micro-batch
(``_compute_loss``'s own tensors); ref_logp comes from the generation. The ratio, clip side, KL and
token objective are recomputed with the spec's components (``common.derive_tokens``) and the weights
with its aggregation over every completion of the step; TRL's own values stay beside them as
``engine_ratio``, ``engine_objective`` (minus TRL's per_token_loss), ``engine_kl`` and
``engine_weight``, and the largest differences are in the notes. A group without token detail takes
its share of the objective from TRL's own per-row loss (recorded by the tap for every row).
"""

from __future__ import annotations

import json
import math
import os
import re
from collections import defaultdict
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np

from .. import objective as O
from ..limits import LOGPROB_MAX
from ..runlog import LogError, RunWriter
from ..schema import (GroupSummary, Hyperparameters, ModelInfo, PromptGroup, Response, RewardInfo, RunHeader,
                      StepDetail, StepRecord, TaskInfo, TokenArrays)
from ..specs import ResolvedAlgorithm
from ..trl_tap import MANIFEST, TAP_FORMAT, TRL_SERIES
from . import common as K

STATE = "trainer_state.json"

TRL_METRICS = {
    "reward": "reward/mean", "reward_std": "reward/std", "kl": "kl/mean", "entropy": "entropy/mean",
    "completions/mean_length": "length/mean", "completions/clipped_ratio": "length/truncated_frac",
    "clip_ratio/low_mean": "clip/frac_low", "clip_ratio/high_mean": "clip/frac_high",
    "frac_reward_zero_std": "groups/zero_variance_frac", "learning_rate": "lr", "grad_norm": "grad_norm",
    "loss": "loss/policy",
}
SUMMARY_KEYS = ("train_runtime", "train_samples_per_second", "train_steps_per_second", "train_loss", "total_flos")
#: TRL loss types -> the registry's aggregation kind (exact unless a gap says otherwise).
AGGREGATION = {"grpo": "seq_mean_token_mean", "dapo": "token_mean", "bnpo": "token_mean",
               "dr_grpo": "constant_normalizer", "luspo": "seq_mean_token_sum"}
NO_KIND = {"cispo": "a clipped importance weight times the log-probability (MiniMax-M1)",
           "sapo": "a soft sigmoid gate in place of the clip",
           "vespo": "a Gamma weighting of the sequence ratio"}


# ---------------------------------------------------------------------------
# trainer_state.json
# ---------------------------------------------------------------------------

def _state_file(src: Path) -> Path:
    if src.is_file():
        if src.name == STATE:
            return src
        raise LogError(str(src), f"not a TRL output directory: give the directory holding {STATE} "
                                 "(TRL's output_dir, or one of its checkpoint-N directories)")
    path = src / STATE
    if path.is_file():
        return path
    checkpoints = sorted((p for p in src.glob("checkpoint-*") if (p / STATE).is_file()),
                         key=lambda p: int(p.name.split("-")[-1]) if p.name.split("-")[-1].isdigit() else -1)
    if checkpoints:
        return checkpoints[-1] / STATE
    raise LogError(str(src), f"not a TRL output directory: no {STATE} here or in a checkpoint-N directory "
                             "(call trainer.save_state() after trainer.train())")


def _log_history(path: Path, notes: K.Notes) -> tuple[dict[int, dict], dict]:
    """TRL global step -> merged log entries; and the summary entry."""
    try:
        state = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise LogError(str(path), f"not JSON: {err}") from None
    history = state.get("log_history") if isinstance(state, dict) else None
    if not isinstance(history, list):
        raise LogError(str(path), "no log_history list: not a Trainer state file", field="log_history")
    steps: dict[int, dict] = {}
    summary: dict = {}
    for i, entry in enumerate(history):
        if not isinstance(entry, dict) or not isinstance(entry.get("step"), int) or entry["step"] < 0:
            notes.add(f"{path.name}: log_history[{i}] has no integer step, skipped")
            continue
        if any(k in entry for k in SUMMARY_KEYS):
            summary = {k: v for k, v in entry.items() if K.is_number(v)}
            continue
        values = {}
        for key, value in entry.items():
            if key == "step":
                continue
            if value is not None and not K.is_number(value):
                notes.add(f"{path.name}: log_history[{i}] (step {entry['step']}) field {key!r} is not a number, "
                          "skipped")
                continue
            values[key] = value
        steps.setdefault(entry["step"], {}).update(values)
    if not steps:
        raise LogError(str(path), "log_history holds no training step (was the state saved before training?)",
                       field="log_history")
    return steps, summary


def _metrics(raw: dict, loc: K.Loc, notes: K.Notes) -> dict[str, float | None]:
    out: dict[str, float | None] = {}
    for name, value in raw.items():
        target = TRL_METRICS.get(name, name)
        if target != name:
            notes.once(f"metric {name!r} -> {target!r}")
        if value is not None:
            value = float(value)
            if not math.isfinite(value):
                notes.add(f"non-finite value of metric {name!r} kept as null")
                value = None
        out[target] = value
    if out.get("loss/policy") is not None:
        out["objective"] = -out["loss/policy"]
        notes.once("metric objective = -loss (TRL's training loss of the step)")
    return out


# ---------------------------------------------------------------------------
# The tap
# ---------------------------------------------------------------------------

class Tap:
    def __init__(self, directory: Path):
        self.directory = directory
        self.manifest: dict = {}
        self.generations: dict[int, dict] = {}            # rollout -> generation record
        self.updates: dict[int, list[dict]] = defaultdict(list)  # TRL step -> update records
        self.files: list[Path] = []
        self.where: dict[int, tuple[Path, int]] = {}      # id(record) -> (shard, line), for error messages
        #: rollout -> every row (and every tapped sample) of that generation batch, over all shards (all ranks)
        self.rows: dict[int, list[dict]] = defaultdict(list)
        self.samples: dict[int, list[dict]] = defaultdict(list)

    def identity(self) -> str:
        """The run the tap recorded, in words: its fingerprint, seed and loss_type."""
        m = self.manifest
        return f"run {m.get('run')}, seed {m.get('seed')}, loss_type {m.get('loss_type')}"

    def loc(self, record: dict, step: int | None = None) -> K.Loc:
        shard, line = self.where.get(id(record), (self.directory, None))
        return K.Loc(str(shard), line=line, step=step)


def _version_check(record: dict, loc: K.Loc) -> None:
    if record.get("format") != TAP_FORMAT:
        raise loc.error(f"tap format {record.get('format')!r}; this unipo reads {TAP_FORMAT!r}: record the run again "
                        "with this unipo's unipo_build.trl_tap", "format")
    version = str(record.get("trl_version"))
    if not version.startswith(TRL_SERIES + "."):
        raise loc.error(f"written by TRL {version}; this importer reads taps of TRL {TRL_SERIES}.x: train with "
                        f"trl=={TRL_SERIES}.* (pip install 'trl=={TRL_SERIES}.*')", "trl_version")


IDENTITY = ("run", "seed", "loss_type")


def _identity_check(record: dict, manifest: dict, loc: K.Loc, what: str) -> None:
    """A shard of the tap must be the manifest's run (same fingerprint, seed and loss_type); a record, its run."""
    for name in IDENTITY if what == "shard" else ("run",):
        if record.get(name) != manifest.get(name):
            raise loc.error(f"this {what} was recorded by another run ({name} {record.get(name)!r}; the tap's "
                            f"manifest.json: {manifest.get(name)!r}): a tap directory holds the shards of one run only; "
                            "give each run's TrlTokenTap its own directory and import the tap of this run alone", name)


def _check_logp(values, loc: K.Loc, name: str) -> None:
    for i, v in enumerate(values or []):
        if v is not None and v > LOGPROB_MAX:
            raise loc.error(f"element {i} is {v!r}: a log-probability is at most 0 (beyond rounding: "
                            f"{LOGPROB_MAX}); this tap was not written by TRL's log-softmax: record the run again "
                            "with an unmodified GRPOTrainer", name)
        if v is None:
            raise loc.error(f"element {i} is NaN or infinite: record the run again", name)


REQUIRED = {
    "generation": (("rollout", int), ("rows", list), ("samples", list)),
    "update": (("rollout", int), ("step", int), ("micro_step", int), ("loss", float), ("rows", list),
               ("loss_tokens", list), ("samples", list)),
    "generation row": (("row", int), ("group", int), ("index", int), ("length", int)),
    "generation sample": (("row", int), ("group", int), ("index", int), ("ids", list), ("text", list),
                          ("advantage", float), ("mask", list)),
    "update sample": (("row", int), ("logp", list), ("old_logp", list), ("ratio", list), ("loss", list),
                      ("mask", list)),
}


def _missing(record, kind) -> str | None:
    """The first required field a generation or update record (or one of its rows) lacks, or None."""
    def check(obj, what):
        for name, typ in REQUIRED[what]:
            value = obj.get(name) if isinstance(obj, dict) else None
            ok = K.is_number(value) if typ is float else isinstance(value, typ) and not isinstance(value, bool)
            if not ok:
                return f"{what.split()[-1]} field {name!r}" if " " in what else f"field {name!r}"
        return None

    if kind not in ("generation", "update"):
        return None
    found = check(record, kind)
    if found is None and kind == "generation":
        found = next(filter(None, (check(r, "generation row") for r in record["rows"])), None) or \
            next(filter(None, (check(x, "generation sample") for x in record["samples"])), None)
    if found is None and kind == "update":
        found = next(filter(None, (check(x, "update sample") for x in record["samples"])), None)
        if found is None and len(record["rows"]) != len(record["loss_tokens"]):
            found = "one loss_tokens entry per row"
    return found


def read_tap(directory: Path, notes: K.Notes) -> Tap:
    if not directory.is_dir():
        raise LogError(str(directory), "not a directory (the TrlTokenTap's tap_dir)")
    path = directory / MANIFEST
    if not path.is_file():
        raise LogError(str(directory), f"no {MANIFEST}: not a TRL tap directory (TrlTokenTap(tap_dir).install"
                                       "(trainer) writes it)")
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise LogError(str(path), f"not JSON: {err}") from None
    if not isinstance(manifest, dict) or not isinstance(manifest.get("trainer"), dict):
        raise LogError(str(path), "not a TRL tap manifest: no trainer section", field="trainer")
    _version_check(manifest, K.Loc(str(path)))
    if not isinstance(manifest.get("run"), str):
        raise LogError(str(path), "no run fingerprint: record the run again with this unipo's unipo_build.trl_tap",
                       field="run")
    tap = Tap(directory)
    tap.manifest = manifest
    tap.files = [path] + sorted(directory.glob("shard-rank*.jsonl"))
    if len(tap.files) == 1:
        raise LogError(str(directory), "no shard-rank*.jsonl: the tap recorded nothing (was train() called after "
                                       "install()?)")
    seen: dict[tuple, int] = {}  # (what, rank, rollout or step, micro_step) -> line, to refuse a record twice
    for shard in tap.files[1:]:
        lines = shard.read_bytes().split(b"\n")
        named_rank = shard.name.removeprefix("shard-rank").removesuffix(".jsonl")
        shard_seen = False
        for number, raw in enumerate(lines, start=1):
            if not raw.strip():
                continue
            loc = K.Loc(str(shard), line=number)
            try:
                record = json.loads(raw)
            except (json.JSONDecodeError, UnicodeDecodeError):
                notes.add(f"{shard.name} line {number}: not JSON (cut off?), skipped")
                continue
            kind = record.get("kind") if isinstance(record, dict) else None
            missing = _missing(record, kind)
            if missing:
                notes.add(f"{shard.name} line {number}: {kind} record without {missing}, skipped")
                continue
            if kind in ("shard", "generation", "update"):
                _identity_check(record, tap.manifest, loc, "shard" if kind == "shard" else f"{kind} record")
                if kind != "shard" and not shard_seen:
                    raise loc.error("a record before the shard's first line (a shard record): lines of another "
                                    "file joined to this one? import the tap as TrlTokenTap wrote it", "kind")
                if kind == "shard" and shard_seen:
                    raise loc.error("a second shard record in one file: the lines of another shard were appended "
                                    "to this one; import the tap as TrlTokenTap wrote it", "kind")
            if kind == "shard":
                _version_check(record, loc)
                if str(record.get("rank")) != named_rank:
                    raise loc.error(f"the shard record says rank {record.get('rank')!r} but the file is named for rank "
                                    f"{named_rank}: a shard renamed or copied from another run", "rank")
                shard_seen = True
            elif kind == "generation":
                loc.step = record.get("rollout")
                key = ("generation", named_rank, record["rollout"])
                if key in seen:
                    raise loc.error(f"rollout {record['rollout']} was recorded twice in this shard (first at line "
                                    f"{seen[key]}): two runs' records in one file", "rollout")
                seen[key] = number
                for s in record.get("samples", []):
                    for name in ("old_logp", "ref_logp", "sampling_logp"):
                        _check_logp(s.get(name), loc.at(f"row {s.get('row')}"), f"samples.{name}")
                tap.generations.setdefault(record["rollout"], record)
                tap.rows[record["rollout"]] += record["rows"]
                tap.samples[record["rollout"]] += record["samples"]
                tap.where[id(record)] = (shard, number)
            elif kind == "update":
                loc.step = record.get("step")
                key = ("update", named_rank, record["step"], record["micro_step"])
                if key in seen:
                    raise loc.error(f"micro-batch {record['micro_step']} of step {record['step']} was recorded twice "
                                    f"in this shard (first at line {seen[key]}): two runs' records in one file",
                                    "micro_step")
                seen[key] = number
                for s in record.get("samples", []):
                    for name in ("logp", "old_logp"):
                        _check_logp(s.get(name), loc.at(f"row {s.get('row')}"), f"samples.{name}")
                tap.updates[record["step"]].append(record)
                tap.where[id(record)] = (shard, number)
            else:
                notes.add(f"{shard.name} line {number}: unknown record kind {kind!r}, skipped")
    return tap


# ---------------------------------------------------------------------------
# The tap against trainer_state.json: one run, or a refusal
# ---------------------------------------------------------------------------

#: |tap - logged| allowed: TRL sums the float32 losses of the micro-batches, the tap the same values in float64.
LOSS_ATOL, LOSS_RTOL = 1e-5, 1e-4


def _close(a: float, b: float) -> bool:
    return abs(a - b) <= LOSS_ATOL + LOSS_RTOL * max(abs(a), abs(b))


def _generation_step(rollout: int, trainer: dict) -> int | None:
    """TRL's global step (from 1) whose first micro-batch generated ``rollout``; None when a step can hold
    several generations (its logged reward is then their mean, not one generation's)."""
    gas = int(trainer.get("gradient_accumulation_steps") or 1)
    every = int(trainer.get("steps_per_generation") or gas) * int(trainer.get("num_iterations") or 1)
    if every < gas:
        return None
    return (rollout * every) // gas + 1


def cross_check(tap: Tap, logged: dict[int, dict], state_path: Path, notes: K.Notes) -> dict:
    """Refuse a tap that another run recorded: what the tap holds must be what TRL logged. Trainer.log averages over
    the steps since the previous log (``logging_steps``), so each logged step's window (previous logged step, this
    one] is compared where the tap holds all of it: the mean of its steps' losses (a step's loss: the sum of its
    micro-batches' losses over the processes) against ``loss``, and the mean over its generations of their mean
    reward and mean completion length against ``reward`` and ``completions/mean_length``. Returns what was
    compared (windows)."""
    trainer = tap.manifest["trainer"]
    processes = int(trainer.get("num_processes") or 1)
    gas = int(trainer.get("gradient_accumulation_steps") or 1)
    expected = gas * processes
    compared = {"loss": 0, "reward": 0, "length": 0}
    source = f"{state_path.name}'s log_history"

    def refuse(record, step, field, what, ours, theirs, how="") -> None:
        raise tap.loc(record, step).error(
            f"the tap's {what} is {ours:.6g}{how}; {source} logs {theirs:.6g} at TRL step {step}: the tap was recorded "
            f"by another run than {state_path.parent} ({tap.identity()}): import the tap that this run's "
            "TrlTokenTap wrote", field)

    def span(first: int, last: int) -> str:
        return f"TRL step {last}" if first == last else f"TRL steps {first}-{last} (their mean)"

    step_loss: dict[int, float] = {}
    for step, updates in sorted(tap.updates.items()):
        if len(updates) > expected:
            first = sorted(updates, key=lambda u: tap.where.get(id(u), (None, 0))[1] or 0)[expected]
            raise tap.loc(first, step).error(
                f"{len(updates)} micro-batch records for TRL step {step}, where gradient_accumulation_steps "
                f"{gas} x {processes} process(es) make {expected}: records of another run are in the tap", "step")
        if len(updates) < expected:
            notes.add("tapped steps with micro-batches missing from the tap (cut off?): their loss not compared")
            continue
        step_loss[step] = float(sum(u["loss"] for u in updates)) / processes
    per_generation = {}
    for rollout, rows in tap.rows.items():
        step = _generation_step(rollout, trainer)
        rewards = [r["reward"] for r in rows if K.is_number(r.get("reward"))]
        per_generation[rollout] = (step, float(np.mean(rewards)) if rewards else None,
                                   float(np.mean([r["length"] for r in rows])) if rows else None)
    schedule = _generation_step(0, trainer) is not None
    previous = 0
    for step in sorted(logged):
        entry, window = logged[step], range(previous + 1, step + 1)
        previous = step
        if K.is_number(entry.get("loss")) and window and all(s in step_loss for s in window):
            ours = float(np.mean([step_loss[s] for s in window]))
            if not _close(ours, float(entry["loss"])):
                first = tap.updates[window[0]][0]
                refuse(first, step, "loss", f"loss of {span(window[0], step)}", ours, float(entry["loss"]),
                       f" (the sum of each step's {expected} micro-batches' losses)")
            compared["loss"] += 1
        if not schedule:
            continue
        # The generations TRL made in this window: every rollout whose generating step falls in it.
        per_rollout = int(trainer.get("steps_per_generation") or gas) * int(trainer.get("num_iterations") or 1)
        rollouts = [r for r in range(((window[0] - 1) * gas) // per_rollout, (step * gas) // per_rollout + 1)
                    if _generation_step(r, trainer) in window] if window else []
        if not rollouts or not all(r in per_generation for r in rollouts):
            continue
        record = tap.generations[rollouts[0]]
        for field, index, metric, what in (("rows.reward", 1, "reward", "mean reward"),
                                           ("rows.length", 2, "completions/mean_length", "mean completion length")):
            values = [per_generation[r][index] for r in rollouts]
            if any(v is None for v in values) or not K.is_number(entry.get(metric)):
                continue
            ours = float(np.mean(values))
            named = (f"rollout {rollouts[0]}" if len(rollouts) == 1 else
                     f"rollouts {rollouts[0]}-{rollouts[-1]} (the mean of their means)")
            if not _close(ours, float(entry[metric])):
                refuse(record, step, field, f"{what} of {named}", ours, float(entry[metric]))
            compared["reward" if index == 1 else "length"] += 1
    return compared


# ---------------------------------------------------------------------------
# GRPOConfig -> the registry's components
# ---------------------------------------------------------------------------

def trl_components(trainer: dict, loc: K.Loc) -> tuple[dict, list[dict]]:
    """(components, gaps) of the run's GRPOConfig; a LogError for a loss_type with no kind."""
    gaps: list[dict] = []

    def gap(slot: str, setting: str, nearest: str) -> None:
        gaps.append({"slot": slot, "trl": setting, "nearest": nearest})

    loss_type = trainer.get("loss_type")
    if loss_type in NO_KIND:
        raise loc.error(f"loss_type {loss_type!r} ({NO_KIND[loss_type]}) has no kind in the registry: pass "
                        "--algorithm SPEC (e.g. dapo) to view the run against that spec's objective, TRL's own loss "
                        "kept beside it", "trainer.loss_type")
    if loss_type not in AGGREGATION:
        raise loc.error(f"unknown loss_type {loss_type!r} (TRL {TRL_SERIES} has {', '.join(sorted(AGGREGATION))}, "
                        f"{', '.join(sorted(NO_KIND))}): pass --algorithm SPEC", "trainer.loss_type")
    comps: dict[str, dict] = {}
    scale = trainer.get("scale_rewards")
    if scale == "none":
        comps["advantage"] = {"kind": "group_mean", "params": {}}
    else:
        comps["advantage"] = {"kind": "group_zscore", "params": {"std_ddof": 1, "eps": 1e-4}}
        if scale == "batch":
            gap("advantage", "scale_rewards='batch' (the reward minus the group mean, over the std of the whole "
                             "batch)", "group_zscore (the group's own std)")
    if trainer.get("multi_objective_aggregation", "sum_then_normalize") == "normalize_then_sum":
        gap("advantage", "multi_objective_aggregation='normalize_then_sum'", "the z-score of the summed reward")
    level = trainer.get("importance_sampling_level", "token")
    comps["ratio"] = {"kind": "sequence" if level == "sequence" else "token", "params": {}}
    low, high = float(trainer.get("epsilon_low", 0.2)), float(trainer.get("epsilon_high", 0.2))
    comps["clip"] = ({"kind": "symmetric", "params": {"eps": low}} if low == high
                     else {"kind": "asymmetric", "params": {"eps_low": low, "eps_high": high}})
    beta = float(trainer.get("beta") or 0.0)
    comps["kl"] = {"kind": "in_loss", "params": {"estimator": "k3", "beta": beta}} if beta else \
        {"kind": "none", "params": {}}
    kind = AGGREGATION[loss_type]
    comps["aggregation"] = {"kind": kind, "params": {"normalizer": int(trainer["max_completion_length"])}
                            if kind == "constant_normalizer" else {}}
    if loss_type == "bnpo" and int(trainer.get("gradient_accumulation_steps", 1)) > 1:
        gap("aggregation", "loss_type='bnpo' with gradient accumulation (a token mean per micro-batch)",
            "token_mean over the whole step")
    if loss_type == "dapo" and (trainer.get("steps_per_generation") != trainer.get("gradient_accumulation_steps")):
        gap("aggregation", "loss_type='dapo' with steps_per_generation != gradient_accumulation_steps (tokens "
                           "divided by the generation batch's count)", "token_mean over the step")
    comps["filter"] = {"kind": "none", "params": {}}
    comps["shaping"] = {"kind": "none", "params": {}}
    if trainer.get("mask_truncated_completions"):
        gap("filter", "mask_truncated_completions (truncated completions left out of the loss, still counted "
                      "in the batch)", "filter none, their tokens kept with mask 0")
    config = trainer.get("config") or {}
    if config.get("delta") is not None:
        gap("clip", f"delta={config['delta']} (two-sided clip of the ratio)", comps["clip"]["kind"])
    if config.get("use_bias_correction_kl"):
        gap("kl", "use_bias_correction_kl (the KL times the ratio)", "k3 in the loss")
    if (config.get("top_entropy_quantile") or 1.0) < 1.0:
        gap("filter", f"top_entropy_quantile={config['top_entropy_quantile']} (only high-entropy tokens trained)",
            "every token trained")
    if config.get("off_policy_mask_threshold") is not None:
        gap("filter", "off_policy_mask_threshold (off-policy sequences with negative advantage dropped)", "none")
    if config.get("use_vllm") and config.get("vllm_importance_sampling_correction"):
        gap("ratio", "vLLM importance-sampling correction (the loss times pi_old / pi_sampler)",
            "the ratio to pi_old alone (the sampler's log-probs kept as sample_logp in the token files)")
    if config.get("entropy_coef"):
        gap("kl", f"entropy_coef={config['entropy_coef']} (an entropy bonus in the loss)", "no entropy term")
    return comps, gaps


def _algorithm(tap: Tap | None, algorithm: str | None, max_new_tokens: int | None, loc: K.Loc,
               notes: K.Notes) -> tuple[ResolvedAlgorithm | None, str, list[dict]]:
    specs = K.known_specs(notes)
    if algorithm is not None:
        spec_id = K.match_spec(algorithm, specs)
        if spec_id is None:
            notes.add(f"algorithm {algorithm!r}: not one of ours ({', '.join(sorted(specs))}), algorithm_config is null")
            return None, algorithm, []
        budget = max_new_tokens or (tap.manifest["trainer"].get("max_completion_length") if tap else None)
        cfg = K.resolve_for_import(specs[spec_id], {}, budget, loc, notes, hparams_field=False)
        notes.once(f"components of the spec {spec_id} (--algorithm); TRL's own loss kept as engine_objective")
        return cfg, spec_id, []
    if tap is None:
        notes.add("algorithm unknown (trainer_state.json does not record the GRPOConfig; pass --tap or --algorithm)")
        return None, "unknown", []
    trainer = {**tap.manifest["trainer"], "config": tap.manifest.get("config") or {}}
    trainer.setdefault("multi_objective_aggregation", trainer["config"].get("multi_objective_aggregation"))
    comps, gaps = trl_components(trainer, K.Loc(str(tap.directory / MANIFEST)))
    loss_type = trainer.get("loss_type")
    near, same = K.nearest_specs(comps, specs)
    nearest = near[0] if near else None
    name = nearest if same == len(comps) else None
    if loss_type in specs:
        nearest = loss_type  # TRL names this loss after that algorithm
    run_name = name or f"trl-{loss_type}"
    if name is None and nearest is not None:
        notes.once(f"no spec has exactly these components, nearest spec: {nearest}")
    cfg = ResolvedAlgorithm.model_validate({"id": re.sub(r"[^a-z0-9_]", "_", run_name.lower()),
                                            "name": f"TRL GRPOTrainer, loss_type={loss_type}",
                                            "components": comps})
    for g in gaps:
        notes.once(f"no kind for TRL's {g['trl']} ({g['slot']}), nearest kind: {g['nearest']}")
    return cfg, run_name, gaps


# ---------------------------------------------------------------------------
# Token files
# ---------------------------------------------------------------------------

def _rollout_of(step: int, trainer: dict) -> int:
    gas = int(trainer.get("gradient_accumulation_steps") or 1)
    every = int(trainer.get("steps_per_generation") or gas) * int(trainer.get("num_iterations") or 1)
    return ((step - 1) * gas) // every


def _detail(tap: Tap, trl_step: int, index: int, rollout: int, cfg: ResolvedAlgorithm | None,
            notes: K.Notes, gaps_seen: dict) -> StepDetail | None:
    updates = [u for u in tap.updates.get(trl_step, []) if u.get("rollout") == rollout]
    if len(updates) != len(tap.updates.get(trl_step, [])):
        notes.add("steps that train on more than one generation batch: token detail of the last one only")
    generation = tap.generations.get(rollout)
    if not updates or generation is None:
        return None
    # Every process wrote the rows of its own part of the generation batch: all of them, from every shard.
    rows = {r["row"]: r for r in tap.rows[rollout]}
    samples = {s["row"]: s for s in tap.samples[rollout]}
    # Every row of the step, with its loss tokens and TRL's share of the loss.
    order, loss_tokens, engine_share, engine_weight, trained = [], {}, {}, {}, {}
    for u in sorted(updates, key=lambda u: u["micro_step"]):
        for i, row in enumerate(u["rows"]):
            order.append(row)
            loss_tokens[row] = u["loss_tokens"][i]
            if u.get("row_loss") is not None:
                engine_share[row] = -u["row_loss"][i]
                engine_weight[row] = u["row_weight"][i]
        for s in u["samples"]:
            trained[s["row"]] = s
    width = max(1, max(loss_tokens.values()))
    full_mask = np.zeros((len(order), width))
    for k, row in enumerate(order):
        full_mask[k, : loss_tokens[row]] = 1.0
    position = {row: k for k, row in enumerate(order)}
    weights = np.asarray(O.weights(cfg, full_mask)) if cfg is not None else full_mask / max(1.0, full_mask.sum())

    inputs, kept = [], []
    for row in order:
        if row not in samples or row not in trained:
            continue
        s, u = samples[row], trained[row]
        n = len(s["ids"])
        loc = K.Loc(str(tap.directory), step=trl_step, parts=(f"group {s['group']}", f"row {row}"))
        mask = s["mask"]
        inputs.append(K.TokenInputs(loc=loc, ids=s["ids"], text=s["text"], logp=u["logp"][:n],
                                    old_logp=u["old_logp"][:n], advantage=[s["advantage"]] * n,
                                    ref_logp=s.get("ref_logp"),
                                    entropy=u["entropy"][:n] if u.get("entropy") else None))
        kept.append((row, s, u, mask))
    outputs = K.derive_tokens(cfg, inputs, notes) if inputs else []
    gaps_ratio, gaps_obj, gaps_w = 0.0, 0.0, 0.0
    responses_by_group: dict[int, list] = defaultdict(list)
    for (row, s, u, mask), t, out in zip(kept, inputs, outputs):
        n = len(t.ids)
        w = [float(weights[position[row], 0]) * m if loss_tokens[row] else 0.0 for m in mask]
        objective = out.objective
        contribution = float(sum(a * b for a, b in zip(w, objective)))
        engine_obj = [-x for x in u["loss"][:n]]
        extras = {"engine_ratio": u["ratio"][:n], "engine_objective": engine_obj}
        if u.get("kl") is not None:
            extras["engine_kl"] = u["kl"][:n]
        if row in engine_weight:
            extras["engine_weight"] = [engine_weight[row] * m for m in mask]
            gaps_w = max(gaps_w, max((abs(a - b) for a, b in zip(extras["engine_weight"], w)), default=0.0))
        if s.get("sampling_logp") is not None:  # vLLM's log-probs: the schema's sample_logp
            extras["sample_logp"] = s["sampling_logp"]
        live = [k for k in range(n) if mask[k]]
        gaps_ratio = max(gaps_ratio, max((abs(out.ratio[k] - u["ratio"][k]) for k in live), default=0.0))
        gaps_obj = max(gaps_obj, max((abs(objective[k] - engine_obj[k]) for k in live), default=0.0))
        tokens = TokenArrays(ids=t.ids, text=t.text, logp=t.logp, old_logp=t.old_logp, ref_logp=t.ref_logp,
                             advantage=t.advantage, kl=out.kl, ratio=out.ratio, clip=out.clip, entropy=t.entropy,
                             weight=w, objective=objective, mask=mask, **extras)
        if not all(mask):
            notes.once("tokens outside TRL's loss mask (mask 0) keep the log-probabilities TRL's tensors hold "
                       "(0 for a completion masked as truncated: TRL does not attend to it)")
        r = rows[row]
        if r["reward"] is None:
            notes.add("completions every reward function left unscored (TRL: advantage 0) shown with reward 0")
        components = {k: float(v) for k, v in (r.get("rewards") or {}).items() if K.is_number(v) and math.isfinite(v)}
        responses_by_group[s["group"]].append(Response(
            index=s["index"], text=s.get("completion") or "".join(t.text), reward=r["reward"] or 0.0,
            reward_components=components, advantage=s["advantage"], length=n, truncated=bool(r.get("truncated")),
            contribution=contribution, tokens=tokens, source_row=row))
    gaps_seen["ratio"] = max(gaps_seen.get("ratio", 0.0), gaps_ratio)
    gaps_seen["objective"] = max(gaps_seen.get("objective", 0.0), gaps_obj)
    gaps_seen["weight"] = max(gaps_seen.get("weight", 0.0), gaps_w)

    groups, prompts = [], []
    for g in sorted({rows[row]["group"] for row in order}):
        members = [row for row in order if rows[row]["group"] == g]
        rewards = [rows[row]["reward"] for row in members if rows[row]["reward"] is not None]
        detailed = sorted(responses_by_group.get(g, []), key=lambda r: r.index)
        if detailed and len(detailed) == len(members):
            contribution = float(sum(r.contribution for r in detailed))
        else:
            contribution = float(sum(engine_share.get(row, 0.0) for row in members))
            notes.add("groups without token detail: their share of the objective is TRL's own per-row loss")
            detailed = []
        groups.append(GroupSummary(index=g, size=len(members), reward_mean=float(np.mean(rewards)) if rewards else None,
                                   contribution=contribution, detailed=bool(detailed)))
        if detailed:
            prompt = samples[members[0]].get("prompt", "")
            prompts.append(PromptGroup(index=g, prompt=prompt, contribution=contribution, responses=detailed))
    objective = float(sum(g.contribution for g in groups))
    trl_loss = float(sum(u["loss"] / u.get("num_processes", 1) for u in updates))
    extras = {}
    if abs(objective + trl_loss) > OBJECTIVE_ATOL * (1.0 + abs(trl_loss)):
        extras["objective_differs"] = objective_reason(tap.manifest["trainer"], gaps_seen.get("gaps", []))
    return StepDetail(step=index, rollout=rollout, objective=objective, groups=groups, prompts=prompts,
                      trl_loss=trl_loss, trl_objective=-trl_loss, **extras)


#: The token file's step objective and minus TRL's loss agree to this (x (1 + |loss|)) where TRL's convention has
#: kinds: both are float64 sums of the same float32 terms (tests/test_trl_run.py holds them to 1e-6).
OBJECTIVE_ATOL = 1e-6

#: The gaps that make the token file's objective another number than TRL's loss (the tokens carry TRL's own
#: advantages, so an advantage gap does not).
OBJECTIVE_SLOTS = ("aggregation", "filter", "kl", "ratio", "clip")


def objective_reason(trainer: dict, gaps: list[dict]) -> str:
    """Why a step's objective in the token file is not minus TRL's loss: what each one is, and the settings."""
    gas = int(trainer.get("gradient_accumulation_steps") or 1)
    settings = [g["trl"] for g in gaps if g["slot"] in OBJECTIVE_SLOTS]
    return ("two different things: steps.jsonl's objective is minus TRL's loss, summed over the step's "
            f"{gas} micro-batch{'es' if gas != 1 else ''}, each aggregated by loss_type={trainer.get('loss_type')} "
            "over its own completions; the token file's is the run's components applied to the whole step's "
            "completions (the tapped groups token by token, TRL's own loss for the others)"
            + (": they part where TRL's settings have no kind: " + "; ".join(settings) if settings else ""))


# ---------------------------------------------------------------------------
# The import
# ---------------------------------------------------------------------------

def import_trl(src: Path, stage: Path, *, algorithm: str | None = None, run_id: str | None = None,
               max_new_tokens: int | None = None, tap: Path | None = None) -> RunHeader:
    """Write the canonical run of the TRL output directory ``src`` (and tap) into ``stage``."""
    notes = K.Notes()
    state_path = _state_file(src)
    logged, summary = _log_history(state_path, notes)
    tap_data = read_tap(Path(tap), notes) if tap is not None else None
    compared = cross_check(tap_data, logged, state_path, notes) if tap_data else None
    cfg, name, gaps = _algorithm(tap_data, algorithm, max_new_tokens, K.Loc(str(state_path)), notes)
    trainer = tap_data.manifest["trainer"] if tap_data else {}
    config = tap_data.manifest.get("config") or {} if tap_data else {}

    finished = datetime.fromtimestamp(os.stat(state_path).st_mtime, tz=timezone.utc)
    runtime = summary.get("train_runtime")
    started = finished - timedelta(seconds=float(runtime)) if runtime is not None and runtime >= 0 else finished
    G = trainer.get("num_generations")
    gen_batch = config.get("generation_batch_size")
    hyper = {"group_size": G, "max_new_tokens": trainer.get("max_completion_length"),
             "temperature": config.get("temperature"), "lr": config.get("learning_rate"),
             "epochs": trainer.get("num_iterations"), "grad_clip": config.get("max_grad_norm"),
             "weight_decay": config.get("weight_decay"), "seed": config.get("seed"),
             "prompts_per_step": (gen_batch // G) if gen_batch and G else None,
             "detail_groups": (tap_data.manifest.get("options") or {}).get("groups") if tap_data else None,
             "detail_every": (tap_data.manifest.get("options") or {}).get("every") if tap_data else None,
             **{k: trainer.get(k) for k in ("loss_type", "beta", "epsilon_low", "epsilon_high", "scale_rewards",
                                            "importance_sampling_level", "mask_truncated_completions",
                                            "steps_per_generation", "gradient_accumulation_steps",
                                            "per_device_train_batch_size") if trainer.get(k) is not None}}
    gas = int(trainer.get("gradient_accumulation_steps") or 1)
    per_rollout = int(trainer.get("steps_per_generation") or gas) * int(trainer.get("num_iterations") or 1)
    funcs = trainer.get("reward_func_names") or []
    weights = trainer.get("reward_weights") or []
    reward = ("TRL reward functions: " + ", ".join(f"{f} x {w:g}" for f, w in zip(funcs, weights))
              if funcs else "unknown (pass --tap: trainer_state.json does not record it)")
    files = [state_path] + (tap_data.files if tap_data else [])
    header = RunHeader(
        run_id=K.check_run_id(run_id or K.run_id_from(Path(src).resolve())),
        algorithm=K.algorithm_id(name, notes), algorithm_config=cfg,
        title=f"{name} (imported from TRL {tap_data.manifest['trl_version'] if tap_data else ''} GRPOTrainer)"
              .replace("  ", " "),
        task=TaskInfo(name="unknown (TRL does not record it)", source=str(src)),
        reward=RewardInfo(description=reward),
        model=ModelInfo(name=str(trainer.get("model") or "unknown (TRL's trainer_state.json does not record it)"),
                        architecture=trainer.get("model_type")),
        hyperparameters=Hyperparameters.model_validate({k: v for k, v in hyper.items() if v is not None}),
        seed=config.get("seed"),
        software={k: str(tap_data.manifest[f"{k}_version"]) for k in ("trl", "transformers", "torch")
                  if tap_data and tap_data.manifest.get(f"{k}_version")},
        engine="trl", created_at=started, finished_at=finished,
        steps_per_rollout=per_rollout // gas if tap_data and per_rollout % gas == 0 and per_rollout >= gas else None,
        imported_from={"format": "trl", "path": str(src),
                       "files": [{"path": str(p), "sha256": K.sha256_file(p)} for p in files]},
        trl={"version": tap_data.manifest.get("trl_version") if tap_data else None, "gaps": gaps,
             "tap_run": tap_data.manifest.get("run") if tap_data else None, "cross_check": compared,
             "summary": summary, "config": config or None},
    )
    writer = RunWriter(stage, header)
    notes.once("one step per logged TRL optimizer step (TRL's global step kept as source_step)")
    if not tap_data:
        notes.once("rollout = step (without --tap the generation schedule is unknown)")
    gaps_seen: dict = {"gaps": gaps}
    details = 0
    differ: list[tuple[float, int]] = []
    trl_steps = sorted(logged)
    previous_rollout = None
    for index, trl_step in enumerate(K.progress(trl_steps, desc="importing TRL steps")):
        loc = K.Loc(str(state_path), step=trl_step)
        metrics = _metrics(logged[trl_step], loc, notes)
        rollout = _rollout_of(trl_step, trainer) if tap_data else index
        detail = _detail(tap_data, trl_step, index, rollout, cfg, notes, gaps_seen) if tap_data else None
        if detail is not None:
            writer.step_detail(detail)
            details += 1
            if getattr(detail, "objective_differs", None):
                differ.append((abs(detail.objective - detail.trl_objective), index))
        writer.step(StepRecord(step=index, rollout=rollout, first_in_rollout=rollout != previous_rollout,
                               metrics=metrics, has_tokens=detail is not None, source_step=trl_step))
        previous_rollout = rollout
    if tap_data:
        skipped = sorted(set(tap_data.updates) - set(trl_steps))
        if skipped:
            notes.add(f"tapped TRL steps not in log_history, skipped (set logging_steps=1): {skipped[:20]}")
        largest = {k: v for k, v in gaps_seen.items() if k != "gaps"}
        if largest:
            notes.once("largest differences to TRL's own values over the tapped tokens: "
                       + ", ".join(f"{k} {v:.2e}" for k, v in largest.items()))
        worst = max(differ, default=None)
        header_trl = writer.header.trl
        header_trl["objectives"] = {
            "steps": details, "differ": len(differ), "max_difference": worst[0] if worst else 0.0,
            "at_step": worst[1] if worst else None,
            "reason": objective_reason(trainer, gaps) if differ else None}
        if differ:
            notes.once(f"two objectives per step: the token file's (the run's components over the step) and "
                       f"steps.jsonl's (minus TRL's loss) differ on {len(differ)} of {details} steps, by up to "
                       f"{worst[0]:.3g} (step {worst[1]}): each token file names why (objective_differs)")
    prefix = (f"Imported from TRL's trainer_state.json ({len(trl_steps)} logged steps)"
              + (f" and its UNIPO tap ({details} steps with token detail)" if tap_data else "")
              + " by `unipo import trl`.")
    writer.finish(notes=notes.text(prefix))
    return writer.header
