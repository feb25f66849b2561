"""The TRL token tap's files, read and checked against the run they claim to belong to.

``read_tap`` reads a tap directory (``unipo_build.trainers.trl.tap.TrlTokenTap``: ``manifest.json`` and
``shard-rank*.jsonl``) into a :class:`Tap`, refusing with one line naming file, line, step and field
a record of another run (its fingerprint, seed or loss_type), a shard whose name and rank disagree, a
rollout or micro-batch recorded twice and a record missing what the import needs. ``cross_check``
then holds the tap against ``trainer_state.json``'s ``log_history`` window by window (losses, mean
rewards, mean lengths): a tap recorded by another run is refused there. ``importers.trl`` builds the
canonical run from what these return.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import numpy as np

from unipo_build.core.limits import LOGPROB_MAX
from unipo_build.core.numbers import plain_num
from unipo_build.core.runlog import LogError
from unipo_build.trainers.trl.tap import MANIFEST, TAP_FORMAT, TRL_SERIES
from unipo_build.trainers import common as K


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
                        "with this unipo's unipo_build.trainers.trl.tap", "format")
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
        raise LogError(str(path), "no run fingerprint: record the run again with this unipo's unipo_build.trainers.trl.tap",
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
            f"the tap's {what} is {plain_num(float(ours), 6)}{how}; {source} logs {plain_num(float(theirs), 6)} at TRL step {step}: the tap was recorded "
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
