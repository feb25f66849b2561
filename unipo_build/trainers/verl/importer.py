"""Import a verl run (metrics, rollout and validation dumps, Hydra config) into a canonical run.

Written against verl 0.8.0.dev (github.com/volcengine/verl, commit b178a3c), where each file is
written by:

- the metrics: ``verl/utils/tracking.py``, ``FileLogger.log`` (``trainer.logger`` includes
  ``file``): one line per ``logger.log(data=metrics, step=self.global_steps)`` call of
  ``RayPPOTrainer.fit`` (``verl/trainer/ppo/ray_trainer.py``), ``{"step": N, "data": {name: value}}``
  written with orjson (NaN becomes null), at ``$VERL_FILE_LOGGER_PATH`` or
  ``<project_name>/<experiment_name>.jsonl``. The metric names are those of
  ``verl/trainer/ppo/metric_utils.py`` (``compute_data_metrics``, ``compute_timing_metrics``) and of
  ``verl/workers/actor/dp_actor.py`` (``DataParallelPPOActor.update_policy``: ``actor/pg_loss``,
  ``actor/kl_loss``, ``actor/entropy``, ``actor/grad_norm``, ...).
- or the console: ``verl/utils/logger/aggregate_logger.py``, ``LocalLogger.log`` (``trainer.logger``
  includes ``console``): ``step:N - name:value - ...`` lines (``concat_dict_to_str``, each value
  ``pprint.pformat`` of a number), read from a ``.log``/``.txt``/``.out`` file of the run's output when
  there is no metrics JSONL; the lines may carry Ray's ``(TaskRunner pid=...)`` prefix.
- the rollout dumps: ``RayPPOTrainer._log_rollout_data`` -> ``RayPPOTrainer._dump_generations``
  (``trainer.rollout_data_dir``): one file ``<global_step>.jsonl`` per step, one line per trained
  sample ``{"input", "output", "gts", "score", "step", <reward_extra_info keys>}``: the decoded
  prompt and response, the ground truth, the summed token-level score, and what the reward function
  returned besides (``acc``, ...).
- the validation dumps: ``RayPPOTrainer._validate`` -> ``_dump_generations``
  (``trainer.validation_data_dir``), the same lines for every validation sample.
- the config: Hydra's ``.hydra/config.yaml`` (or a ``config.yaml``) in the run's output directory.

``DIR`` is the run's directory: the config at ``DIR/.hydra/config.yaml`` or ``DIR/config.yaml`` (else the
one ``.hydra/config.yaml`` below ``DIR``, as in Hydra's ``outputs/<date>/<time>/``);
the metrics the one ``*.jsonl`` under ``DIR`` whose lines are ``{"step", "data"}``; the dumps the
directories the config's ``trainer.rollout_data_dir`` / ``validation_data_dir`` name (as written,
or their last component under ``DIR``), else directories of ``<int>.jsonl`` files under ``DIR``
(one whose name contains "val" holds validation dumps).

Mapping: one canonical step per verl global step that trained (its metrics line; ``rollout`` = its
index, ``first_in_rollout`` true; verl's values are means over the step's ``ppo_epochs x
minibatches`` updates; the global step is kept as ``source_step``). ``critic/score/mean`` ->
reward/mean, ``actor/pg_loss`` -> loss/policy, ``actor/entropy`` -> entropy/mean, ``actor/kl_loss``
-> kl/mean, ``actor/grad_norm`` -> grad_norm, ``actor/lr`` -> lr, ``response_length/mean`` ->
length/mean, ``response_length/clip_ratio`` -> length/truncated_frac, ``critic/vf_loss`` ->
loss/value, ``critic/vf_explained_var`` -> value/explained_variance, ``timing_s/gen`` ->
time/rollout_s; every other metric keeps its name. From a step's rollout dump (samples grouped by
their identical ``input``: the dump has no group id) come the group metrics (zero-variance,
all-correct, all-wrong fractions), accuracy/train (the mean of ``acc`` when the reward function
returns it) and reward/mean where the metrics lack it. A validation dump becomes an EvalRecord
(``n`` = its samples, the accuracy the mean of ``acc``, greedy when ``val_kwargs.do_sample`` is
false) at the updates done before its global step; where every problem of every dump has one sample
whose ``acc`` (else score) is 0 or 1, the record keeps each problem's result (``correct_greedy`` /
``correct_sampled``, :func:`_per_problem`): the problems matched across dumps by prompt and ground truth
(verl's validation loader shuffles by default) and ordered as the first dump lists them, so that
start and end are compared problem by problem (``unipo_build.core.heldout``).

A line of only ``val-`` metrics before the first training line is the validation before training
(``pre_training_metrics`` in the header); one after it (the end-of-run validation verl logs on a line
of its own) is kept with the metrics of the training step it follows. The header's ``software.verl``
is the run's version where its files record one (a ``requirements.txt`` of the run, as wandb writes
it, naming ``verl==X``), else says it is not recorded.

The config's algorithm settings map onto the registry (:func:`components`; the policy loss and clip
by :func:`policy_loss`: vanilla is dual-clip PPO, verl's clip_ratio_c bound always on, so the
``dual_clip`` kind; gspo the sequence ratio; cispo, sapo and geo_mean their clip kinds; gspo, sapo and
geo_mean aggregate seq-mean-token-mean whatever loss_agg_mode says; ``algorithm.rollout_correction.rollout_is``
token or sequence with ``rollout_is_threshold`` is the ``truncated_is`` correction, ``rollout_rs`` token_k1,
seq_sum_k1 or seq_mean_k1 the ``masked_is`` one with kept one (:func:`rejection_sampling`), whose sampler
log-probs verl's files do not hold: listed in the header's ``missing``); a setting no kind expresses (gpg,
a divergence rollout_rs, ...) stops the import unless ``--algorithm`` names the spec to show instead.

What verl's files do not hold, and the run therefore lacks (listed in the run card): token-level
detail of any kind (the dumps hold decoded text and a score: no token ids, log-probs, reference
log-probs, advantages, or response lengths in tokens), so the run has no token files; per-update
values (verl logs one line per global step).
"""

from __future__ import annotations

import json
import math
import re
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterator

import yaml

from unipo_build.core.registry import REGISTRY
from unipo_build.core.runlog import LogError, RunWriter
from unipo_build.core.schema import EvalRecord, ModelInfo, RewardInfo, RunHeader, StepRecord, TaskInfo
from unipo_build.trainers import common as K
from unipo_build.trainers.trainer_config import choose, get, numeric
from unipo_build.trainers.verl.config import _hyperparameters, components, correction_missing

VERL_VERSION = "0.8.0.dev"
#: A pinned verl in a requirements file of the run (wandb's files/requirements.txt).
PINNED = re.compile(r"^verl\s*==\s*([A-Za-z0-9_.+-]+)\s*$", re.M)


def run_version(src: Path) -> str:
    """The header's ``software.verl``: the version the run's files name, else that none does (and which
    release's format they were read as)."""
    for path in sorted(src.rglob("requirements.txt"))[:20]:
        try:
            m = PINNED.search(path.read_text(encoding="utf-8", errors="replace"))
        except OSError:
            continue
        if m:
            return m.group(1)
    return f"version not recorded in the run's files (read as verl {VERL_VERSION} writes them)"

METRICS = {
    "critic/score/mean": "reward/mean",
    "actor/pg_loss": "loss/policy",
    "actor/entropy": "entropy/mean",
    "actor/kl_loss": "kl/mean",
    "actor/grad_norm": "grad_norm",
    "actor/lr": "lr",
    "response_length/mean": "length/mean",
    "response_length/clip_ratio": "length/truncated_frac",
    "critic/vf_loss": "loss/value",
    "critic/vf_explained_var": "value/explained_variance",
    "timing_s/gen": "time/rollout_s",
}

# ---------------------------------------------------------------------------
# Files
# ---------------------------------------------------------------------------

def _first_object(path: Path) -> dict | None:
    try:
        with path.open("rb") as fh:
            for raw in fh:
                if raw.strip():
                    value = json.loads(raw.decode("utf-8"))
                    return value if isinstance(value, dict) else None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError):
        return None
    return None


STEP_FILE = re.compile(r"^(\d+)\.jsonl$")


def _dump_dirs(src: Path, cfg: dict) -> tuple[Path | None, Path | None]:
    found: dict[str, Path | None] = {}
    for key in ("rollout_data_dir", "validation_data_dir"):
        named = get(cfg, f"trainer.{key}")
        found[key] = None
        if named:
            for cand in (Path(named) if Path(named).is_absolute() else src / named, src / Path(named).name):
                if cand.is_dir():
                    found[key] = cand
                    break
    if found["rollout_data_dir"] is None or found["validation_data_dir"] is None:
        dirs = sorted({p.parent for p in src.rglob("*.jsonl") if STEP_FILE.match(p.name)})
        for d in dirs:
            key = "validation_data_dir" if "val" in d.name.lower() else "rollout_data_dir"
            if found[key] is None and d not in found.values():
                found[key] = d
    return found["rollout_data_dir"], found["validation_data_dir"]


def _metrics_file(src: Path, exclude: set[Path]) -> Path | None:
    candidates = []
    for path in sorted(src.rglob("*.jsonl")):
        if path.parent in exclude or STEP_FILE.match(path.name):
            continue
        first = _first_object(path)
        if first is not None and set(first) == {"step", "data"} and isinstance(first.get("data"), dict):
            candidates.append(path)
    if len(candidates) > 1:
        raise LogError(str(src), "several verl metrics files (" + ", ".join(str(p.relative_to(src)) for p in candidates)
                       + "): import one run at a time (move the others out, or point at the run's own directory)")
    return candidates[0] if candidates else None


# verl/utils/logger/aggregate_logger.py, LocalLogger.log -> concat_dict_to_str: "step:N - key:value - ...", each
# value pprint.pformat of a number (numpy 2 writes np.float64(0.5)); under Ray the driver's lines carry a
# "(TaskRunner pid=...)" prefix.
CONSOLE_LINE = re.compile(r"^(?:\([^)]*\) )?step:(\d+)(?: - (.*))?$")
NUMPY_SCALAR = re.compile(r"^np\.\w+\((.*)\)$")
CONSOLE_SUFFIXES = (".log", ".txt", ".out")
CONSOLE_SNIFF_BYTES = 64 << 20  # a console log's first step line comes after the start-up output


def _console_value(text: str) -> float | None:
    text = text.strip()
    m = NUMPY_SCALAR.match(text)
    if m:
        text = m.group(1)
    if text in ("True", "False"):
        return float(text == "True")
    try:
        value = float(text)
    except ValueError:
        raise ValueError(text) from None
    return value if math.isfinite(value) else None


def _console_rows(path: Path, skipped: list[str]) -> Iterator[tuple[int, dict]]:
    """(line number, {"step", "data"}) of each console line LocalLogger printed; other output passed over."""
    with path.open("rb") as fh:
        for number, raw in enumerate(fh, 1):
            text = raw.decode("utf-8", errors="replace").rstrip("\r\n")
            m = CONSOLE_LINE.match(text)
            if not m:
                continue
            data: dict[str, float | None] = {}
            for part in (m.group(2) or "").split(" - "):
                key, sep, value = part.rpartition(":")
                if not sep or not key:
                    continue
                try:
                    data[key] = _console_value(value)
                except ValueError:
                    skipped.append(f"{path}: line {number} (step {m.group(1)}): {key}: {value.strip()[:40]!r} is not a "
                                   "number; left out")
            yield number, {"step": int(m.group(1)), "data": data}


def _console_file(src: Path, exclude: set[Path]) -> Path | None:
    """The one console log under ``src`` (a .log/.txt/.out file with LocalLogger's step lines)."""
    found = []
    for path in sorted(p for p in src.rglob("*") if p.suffix in CONSOLE_SUFFIXES and p.is_file()):
        if path.parent in exclude:
            continue
        with path.open("rb") as fh:
            seen = 0
            for raw in fh:
                seen += len(raw)
                if CONSOLE_LINE.match(raw.decode("utf-8", errors="replace").rstrip("\r\n")):
                    found.append(path)
                    break
                if seen > CONSOLE_SNIFF_BYTES:
                    break
    if len(found) > 1:
        raise LogError(str(src), "several verl console logs (" + ", ".join(str(p.relative_to(src)) for p in found[:4])
                       + "): import one run at a time, or log to a file (trainer.logger 'file')")
    return found[0] if found else None


def _step_files(d: Path | None) -> dict[int, Path]:
    if d is None:
        return {}
    return {int(m.group(1)): p for p in d.iterdir() if (m := STEP_FILE.match(p.name))}


def _config(src: Path) -> tuple[dict, Path | None]:
    found = [c for c in (src / ".hydra" / "config.yaml", src / "config.yaml") if c.is_file()]
    if not found:
        # Hydra's own layout below the directory given: outputs/<date>/<time>/.hydra/config.yaml
        found = sorted(p for p in src.rglob("config.yaml") if p.parent.name == ".hydra")
        if len(found) > 1:
            raise LogError(str(src), "several Hydra configs (" + ", ".join(str(p.relative_to(src)) for p in found[:4])
                           + "): point at the one run's output directory")
    for cand in found[:1]:
        if cand.is_file():
            try:
                raw = yaml.safe_load(cand.read_bytes().decode("utf-8"))
            except (yaml.YAMLError, UnicodeDecodeError, RecursionError) as err:
                raise LogError(str(cand), f"not valid YAML ({str(err).splitlines()[0]}): fix the file or move it out "
                                          "to import without the config") from None
            if not isinstance(raw, dict):
                raise LogError(str(cand), "expected Hydra's config (a mapping of sections), got "
                                          f"{type(raw).__name__}")
            return raw, cand
    return {}, None


# ---------------------------------------------------------------------------
# Samples
# ---------------------------------------------------------------------------

def _unit(value: Any) -> float | None:
    if isinstance(value, bool):
        return float(value)
    if K.is_number(value) and math.isfinite(value) and 0 <= value <= 1:
        return float(value)
    return None


def _samples(path: Path, step: int, skipped: list[str], keys: list | None = None
             ) -> tuple[list[float], list[float | None], dict[str, list[float]]]:
    """Scores, acc (None where absent) and the score of every sample by its prompt, streamed; ``keys``: each kept
    sample's problem (its prompt and ground truth) appended, in order."""
    scores, accs, groups = [], [], {}
    for number, row in K.jsonl_objects(path, skipped):
        score = row.get("score")
        if not K.is_number(score) or not math.isfinite(score):
            skipped.append(f"{path}: line {number} (step {step}): score is {score!r}, not a number")
            continue
        scores.append(float(score))
        accs.append(_unit(row.get("acc")))
        groups.setdefault(str(row.get("input")), []).append(float(score))
        if keys is not None:
            keys.append((str(row.get("input")), json.dumps(row.get("gts"), sort_keys=True, default=str)))
    return scores, accs, groups


def _per_problem(dumps: dict[int, tuple[list, list[float], list[float | None]]], notes: K.Notes
                 ) -> dict[int, str] | None:
    """Each validation dump's per-problem results ('1' right, '0' wrong), in one order for all of them: the
    problems (prompt and ground truth) as the first dump lists them. None, with a note saying why, where a problem
    has several samples (val_kwargs.n > 1), a result is not 0 or 1, or two dumps did not score the same problems."""
    order: list | None = None
    out: dict[int, str] = {}
    for g, (keys, scores, accs) in sorted(dumps.items()):
        right = [a if a is not None else s for a, s in zip(accs, scores)]
        if len(set(keys)) != len(keys):
            notes.once("validation dumps with several samples of a problem: no per-problem results (the held-out "
                       "change is unpaired)")
            return None
        if any(r not in (0.0, 1.0) for r in right):
            notes.once("validation results other than 0 and 1 (acc, else score): no per-problem results (the held-out "
                       "change is unpaired)")
            return None
        if order is None:
            order = list(keys)
        elif set(keys) != set(order):
            notes.once(f"the validation dump of step {g} scored other problems than the first: no per-problem results "
                       "(the held-out change is unpaired)")
            return None
        by_key = dict(zip(keys, right))
        out[g] = "".join("1" if by_key[k] == 1.0 else "0" for k in order)
    if out:
        notes.once("per-problem validation results from the dumps (each sample's acc, else its score), the problems "
                   "matched across dumps by prompt and ground truth and ordered as the first dump lists them: start "
                   "and end compare problem by problem")
    return out


def _rollout_metrics(path: Path, step: int, skipped: list[str], notes: K.Notes) -> dict[str, float]:
    scores, accs, groups = _samples(path, step, skipped)
    if not scores:
        return {}
    out = {"dump/reward_mean": sum(scores) / len(scores)}
    if all(a is not None for a in accs):
        out["accuracy/train"] = sum(accs) / len(accs)
        notes.once("accuracy/train = the mean of the rollout dump's acc (the reward function's)")
    sizes = [len(g) for g in groups.values()]
    if min(sizes) > 1:
        out["groups/zero_variance_frac"] = sum(max(g) == min(g) for g in groups.values()) / len(groups)
        binary = all(s in (0.0, 1.0) for s in scores)
        if binary:
            out["groups/all_correct_frac"] = sum(min(g) == 1.0 for g in groups.values()) / len(groups)
            out["groups/all_wrong_frac"] = sum(max(g) == 0.0 for g in groups.values()) / len(groups)
        notes.once("group fractions from the rollout dumps, samples grouped by identical input (the dump has no "
                   "group id)" + ("; all-correct/all-wrong where every score is 0 or 1" if binary else ""))
    return out


# ---------------------------------------------------------------------------
# The import
# ---------------------------------------------------------------------------

def import_verl(src: Path, stage: Path, *, algorithm: str | None = None, run_id: str | None = None,
                max_new_tokens: int | None = None) -> RunHeader:
    """Write the canonical run of the verl run directory ``src`` into ``stage``."""
    if not src.is_dir():
        raise LogError(str(src), "verl's import reads a run directory (its metrics JSONL, dumps and .hydra/config.yaml); "
                                 "pass the directory, not a file")
    notes = K.Notes()
    skipped: list[str] = []
    cfg, cfg_path = _config(src)
    rollout_dir, val_dir = _dump_dirs(src, cfg)
    dumps = {d for d in (rollout_dir, val_dir) if d is not None}
    metrics_path = _metrics_file(src, dumps)
    console = None
    if metrics_path is None:
        metrics_path = console = _console_file(src, dumps)
        if console is not None:
            notes.once("metrics from the console log (LocalLogger's step lines; the file logger's JSONL is not here): "
                       "values as printed")
    if metrics_path is None and rollout_dir is None:
        raise LogError(str(src), "no verl metrics JSONL (lines {\"step\": N, \"data\": {...}} from trainer.logger "
                                 "'file'), no console log (step:N - key:value lines) and no rollout dumps "
                                 "(<step>.jsonl under trainer.rollout_data_dir): is this a verl run directory?")

    budget = max_new_tokens or get(cfg, "data.max_response_length")
    if cfg_path is not None:
        name, comps, gaps = components(cfg, notes, str(cfg_path))
        spec_id, config, extras = choose("verl", name, comps, gaps, str(cfg_path), algorithm, budget, notes)
    elif algorithm is not None:
        spec_id, config, extras = choose("verl", algorithm, {}, [], str(src), algorithm, budget, notes)
        notes.once("no .hydra/config.yaml: the components are --algorithm's, not read from verl's config")
    else:
        spec_id, config, extras = "unknown", None, {}
        notes.once("algorithm unknown (no .hydra/config.yaml and no --algorithm): algorithm_config is null")

    rollouts = _step_files(rollout_dir)
    vals = _step_files(val_dir)
    files = [p for p in (cfg_path, metrics_path) if p is not None] + sorted(rollouts.values()) + sorted(vals.values())
    mtimes = [p.stat().st_mtime for p in files]
    model = get(cfg, "actor_rollout_ref.model.path")
    header = RunHeader(
        run_id=K.check_run_id(run_id or K.run_id_from(Path(get(cfg, "trainer.experiment_name") or src.resolve().name))),
        algorithm=spec_id, algorithm_config=config,
        title=f"{get(cfg, 'trainer.experiment_name') or src.name} (imported from verl)",
        task=TaskInfo(name=str(get(cfg, "data.train_files", "unknown (not in verl's config)")),
                      source=str(get(cfg, "data.train_files", src))),
        reward=RewardInfo(description=str(get(cfg, "custom_reward_function.path") or
                                          "verl's reward function for the data source (default_compute_score)")),
        model=ModelInfo(name=str(model or "unknown (not in verl's config)"), checkpoint=model),
        hyperparameters=_hyperparameters(cfg),
        seed=get(cfg, "data.seed"),
        engine="verl",
        software={"verl": run_version(src)},
        created_at=datetime.fromtimestamp(min(mtimes), tz=timezone.utc),
        finished_at=datetime.fromtimestamp(max(mtimes), tz=timezone.utc),
        imported_from={"format": "verl", "path": str(src), "config": str(cfg_path) if cfg_path else None,
                       "metrics": str(metrics_path) if metrics_path else None,
                       "rollout_data_dir": str(rollout_dir) if rollout_dir else None,
                       "validation_data_dir": str(val_dir) if val_dir else None, **extras},
        missing=["token-level detail: verl's rollout dumps hold decoded text and the summed score, no token ids, "
                 "log-probs, reference log-probs, advantages or lengths in tokens",
                 "per-update values: one metrics line per global step (means over its updates)",
                 *correction_missing(cfg, notes)],
    )
    writer = RunWriter(stage, header, durable=False)
    notes.once("one step per verl global step that trained (values are means over its ppo_epochs x minibatches updates)")

    done: dict[int, int] = {}  # verl global step -> canonical steps done after it
    pre: dict[str, float | None] = {}
    last = None
    # the last training step (index, verl step, metrics), written once no later validation line can join it
    pending: list[tuple[int, int, dict]] = []

    def flush() -> None:
        if pending:
            i, g, metrics = pending.pop()
            writer.step(StepRecord(step=i, rollout=i, first_in_rollout=True, metrics=metrics, source_step=g))

    def emit(g: int, data: dict, line: int | None, where: Path) -> None:
        nonlocal last
        loc = K.Loc(str(where), line=line, step=g)
        data = numeric(data, notes, "verl")
        if all(str(k).startswith("val-") for k in data) and data:
            if last is None:  # the validation before training (trainer.val_before_train)
                pre.update(K.map_metrics(data, loc, notes))
                return
            # after training began (the end-of-run validation, on a line of its own): with the step it follows
            metrics = pending[-1][2]
            for key, value in K.map_metrics(data, loc, notes).items():
                metrics.setdefault(key, value)
            notes.once(f"validation metrics logged on a line of their own after a training step (verl step {g}) kept "
                       "with the metrics of the step they follow")
            return
        if last is not None and g <= last:
            skipped.append(f"{where}: line {line}: step {g} again after step {last} (a resumed run?); the first kept")
            return
        metrics = {}
        for key, value in K.map_metrics(data, loc, notes).items():
            target = METRICS.get(key, key)
            if target != key:
                notes.once(f"metric {key!r} -> {target!r}")
            metrics[target] = value
        if g in rollouts:
            for key, value in _rollout_metrics(rollouts[g], g, skipped, notes).items():
                if key == "dump/reward_mean":
                    if metrics.get("reward/mean") is None:
                        metrics["reward/mean"] = value
                        notes.once("reward/mean from the rollout dump's scores where the metrics lack critic/score/mean")
                elif metrics.get(key) is None:
                    metrics[key] = value
        if metrics.get("objective") is None and metrics.get("loss/policy") is not None:
            kl_part = 0.0
            if config is not None and REGISTRY["kl"][config.kind("kl")].kl_place == "loss" and metrics.get("kl/mean") is not None:
                kl_part = config.param("kl", "beta") * metrics["kl/mean"]
                notes.once("metric objective = -(actor/pg_loss + kl_loss_coef x actor/kl_loss) (verl logs no "
                           "objective)")
            else:
                notes.once("metric objective = -actor/pg_loss (verl logs no objective)")
            metrics["objective"] = -metrics["loss/policy"] - kl_part
        i = len(done)
        flush()
        pending.append((i, g, metrics))
        done[g] = i + 1
        last = g

    if metrics_path is not None:
        rows = _console_rows(console, skipped) if console is not None else K.jsonl_objects(metrics_path, skipped)
        for line, row in K.progress(rows, desc="importing verl metrics", unit="line"):
            g, data = row.get("step"), row.get("data")
            if not isinstance(g, int) or isinstance(g, bool) or g < 0 or not isinstance(data, dict):
                skipped.append(f"{metrics_path}: line {line}: not {{\"step\": N, \"data\": {{...}}}}")
                continue
            emit(g, data, line, metrics_path)
    else:
        notes.once("no metrics JSONL: the steps' metrics come from the rollout dumps alone")
        for g in sorted(rollouts):
            emit(g, {}, None, rollouts[g])
    flush()
    without = [g for g in rollouts if g not in done]
    if without:
        skipped.append(f"{rollout_dir}: {len(without)} rollout dump(s) without a metrics line (steps "
                       f"{', '.join(map(str, sorted(without)[:5]))}{', ...' if len(without) > 5 else ''})")
    if not done:
        raise LogError(str(metrics_path or rollout_dir), "no training step could be read (every line skipped): "
                                                         + "; ".join(skipped[:3]))

    greedy = not get(cfg, "actor_rollout_ref.rollout.val_kwargs.do_sample", False)
    if val_dir is not None and "actor_rollout_ref" not in cfg:
        notes.once("validation taken as greedy (verl's default val_kwargs.do_sample false; the config is missing)")
    ordered = sorted(done)
    read: dict[int, tuple[list, list[float], list[float | None]]] = {}
    for g, path in sorted(vals.items()):
        keys: list = []
        scores, accs, _ = _samples(path, g, skipped, keys)
        if scores:
            read[g] = (keys, scores, accs)
    bits = _per_problem(read, notes) or {}
    mode = "greedy" if greedy else "sampled"
    for g, (keys, scores, accs) in sorted(read.items()):
        before = sum(1 for s in ordered if s <= g)
        acc = sum(accs) / len(accs) if all(a is not None for a in accs) else None
        if acc is None and all(s in (0.0, 1.0) for s in scores):
            acc = sum(scores) / len(scores)
            notes.once("validation accuracy = the mean score (every score 0 or 1; the dump has no acc)")
        phase = "start" if before == 0 else ("end" if before == len(done) else "periodic")
        per_problem = ({f"correct_{mode}": bits[g], "problems": f"eval rows 1-{len(bits[g])}"} if g in bits
                       else {})
        writer.eval(EvalRecord(step=before, phase=phase, n=len(scores), **{f"accuracy_{mode}": acc},
                               temperature=get(cfg, "actor_rollout_ref.rollout.val_kwargs.temperature"),
                               mean_score=sum(scores) / len(scores), source_step=g, **per_problem))
    if pre:
        writer.header = writer.header.model_copy(update={"pre_training_metrics": pre})
        notes.once("validation metrics logged before training kept in the header (pre_training_metrics)")
    if skipped:
        notes.once(f"skipped {len(skipped)} unreadable line(s) or file(s), listed in imported_from.skipped")
        writer.header.imported_from["skipped"] = skipped[:200]
    notes.once("missing from verl's files (see the header's missing): token-level detail (no token ids, log-probs, "
               "reference log-probs, advantages or token lengths in the dumps), so no token files")
    prefix = (f"Imported from verl ({len(done)} steps, {len(rollouts)} rollout dump(s), {len(vals)} validation "
              "dump(s)) by `unipo import verl`.")
    writer.finish(notes=notes.text(prefix))
    return writer.header
