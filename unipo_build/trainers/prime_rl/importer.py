"""Import a prime-rl run (token export, metrics, resolved configs) into a canonical run.

Written against prime-rl at commit 559b447 (github.com/PrimeIntellect-ai/prime-rl), where each
file is written by:

- the token export: ``src/prime_rl/trainer/rl/token_export.py``, ``TokenExporter.export`` (trainer
  ``enable_token_export = true``), called by ``src/prime_rl/trainer/rl/train.py`` after each micro
  step's loss: ``<run>/token_exports/step_<N>/rank_<R>.jsonl``, one line per packed sequence with a
  trained token, ``{"schema_version": 1, "step", "rank", "micro_step", "micro_sequence_idx",
  "export_sequence_idx", "env_name", "token_ids", "position_ids", "loss_mask", "advantages",
  "inference_logprobs", "trainer_logprobs", "entropy", "mismatch_kl", "log_importance_ratio",
  "importance_ratio", "prob_delta", "is_masked", "is_masked_high", "is_masked_low", "rl_weights",
  "ce_weights", "ref_kl_weights"}`` (every array one entry per token, prompt included; non-finite
  numbers written as null by ``_json_float``); ``TokenExporter.mark_stable`` touches ``STABLE`` in a
  step's directory once every rank has written it.
- the metrics: ``src/prime_rl/monitors/file.py``, ``FileMonitor.log_metrics``: ``<run>/metrics.jsonl``,
  rows ``{"step", "time", <name>: value}`` appended by the trainer and the orchestrator (several rows
  per step, not in step order across the two).
- the configs: ``src/prime_rl/entrypoints/rl.py``, ``write_subconfigs``: ``<run>/configs/trainer.json``
  and ``orchestrator.json`` (``write_config``: ``rl.json`` with both, for a single-node run).

prime-rl changed the export's fields without moving ``schema_version`` from 1: :func:`export_layout` tells the
layout by the fields of a line (:data:`LAYOUTS`: 559b447's above; 004274e's adds ``export_step`` and ``run_id``
after ``step`` and per-token ``losses`` channels and ``rewards``, and drops the three ``*_weights``), refuses a
line in neither and an export that mixes two; 004274e's ``rewards`` (the sample's reward on each token) become
the responses' rewards.

Mapping: one canonical step per trainer step in the metrics (``optim/lr`` -> lr, ``optim/grad_norm``
-> grad_norm, ``entropy/all/mean`` -> entropy/mean, ``mismatch_kl/all/mean`` kept by name, others by
name). A step with a token export gets a token file: its sequences grouped by their identical prompt
tokens (the tokens before the first ``loss_mask`` one; the export has no problem id), every group's
contribution in the step's summaries and the first ``DETAIL_GROUPS`` groups token by token while they
fit ``DETAIL_TOKENS`` tokens, the first at least in part (a step of hundreds of long sequences would
make a token file far over the site's 300 KB budget); per sequence,
the trained tokens (``loss_mask`` true) are the response: ``trainer_logprobs`` -> logp,
``inference_logprobs`` -> old_logp, ``advantages`` -> advantage, ``entropy`` -> entropy; ratio, clip
side, weight and objective derived with the spec's components (``common.derive_tokens``); the export's
own ``importance_ratio``, ``is_masked_high`` and ``is_masked_low`` are kept beside them as
``source_importance_ratio`` and ``source_is_masked`` (1 high, -1 low, 0 kept).

The loss prime-rl ran (``trainer.loss``) maps onto the registry as far as kinds allow: its default
loss masks tokens by the change of their probability (``dppo_mask_low/high``), the clip kind
``dppo_mask`` (its recomputed sides are prime-rl's ``is_masked_high``/``is_masked_low``), and adds
``kl_tau x (log ratio)^2`` against the sampling policy, not a reference model, which has no kind: with
``kl_tau`` > 0 (0.001 by default) the import stops unless ``--algorithm`` names the spec to show (the gap
then in the run card). ``ipo`` masks by the probability's change whatever the advantage's sign, a gap whose
nearest kind is ``dppo_mask`` at its threshold. The orchestrator's ``algo`` (``grpo``: reward minus the
group mean) is the advantage kind ``group_mean``; aggregation is ``token_mean`` (``compute_loss`` divides by
the global batch's tokens).

What the export lacks, and the run therefore lacks (listed in the run card): the rewards (responses'
``reward`` null), the prompts' and tokens' text (the export holds token ids: each token's text is its
id as ``<id>``, decode it with the model's tokenizer), reference log-probs, correctness, held-out
evaluations.
"""

from __future__ import annotations

import json
import math
import re
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

from unipo_build.core.matching import Gap
from unipo_build.core.numbers import plain_num
from unipo_build.core.registry import REGISTRY
from unipo_build.core.runlog import LogError, RunWriter
from unipo_build.core.schema import (
    GroupSummary,
    ModelInfo,
    PromptGroup,
    Response,
    RewardInfo,
    RunHeader,
    StepDetail,
    StepRecord,
    TaskInfo,
    TokenArrays,
)
from unipo_build.trainers import common as K
from unipo_build.trainers.trainer_config import choose, get, numeric

PRIME_RL_COMMIT = "559b447"
EXPORT_SCHEMA = 1
#: prime-rl changed its token export's fields without moving schema_version from 1: the layout is told by the
#: fields a line holds. Commit -> (what marks it, the fields that mark it). Both hold what the import reads (READ).
LAYOUTS = {
    "559b447": ("per-loss weights", frozenset({"rl_weights", "ce_weights", "ref_kl_weights"})),
    "004274e": ("loss channels and rewards", frozenset({"losses", "rewards", "export_step", "run_id"})),
}
READ = ("token_ids", "loss_mask", "advantages", "inference_logprobs", "trainer_logprobs")
LOGPROB_TOLERANCE = 1e-4  # a float32 log-prob of a certain token rounds to a tiny positive number at most
DETAIL_GROUPS = 4  # groups of a step kept token by token, as the in-house trainer's detail_groups (core/presets.py)
DETAIL_TOKENS = 2048  # and at most this many tokens: a step file of the site stays under its 300 KB budget
WINDOW = 8  # steps a metrics row may lag behind the newest step seen (trainer and orchestrator interleave)
METRICS = {"optim/lr": "lr", "optim/grad_norm": "grad_norm", "entropy/all/mean": "entropy/mean"}
STEP_DIR = re.compile(r"^step_(\d+)$")
#: prime-rl's DefaultLossConfig defaults of dppo_mask_low and dppo_mask_high, which the dppo_mask kind's are.
DPPO_DEFAULTS = {name: field.default for name, field in REGISTRY["clip"]["dppo_mask"].params.model_fields.items()}


def components(trainer: dict, orchestrator: dict) -> tuple[str, dict[str, dict], list[Gap]]:
    gaps: list[Gap] = []
    algo = get(orchestrator, "algo", {}) or {}
    kind = str(get(algo, "type", "grpo"))
    if kind == "grpo":
        advantage = {"kind": "group_mean", "params": {}}
        if get(algo, "length_penalty") is not None:
            gaps.append(Gap("orchestrator.algo.length_penalty", json.dumps(get(algo, "length_penalty")),
                            "advantage", "group_mean (without the length penalty)"))
    else:
        gaps.append(Gap("orchestrator.algo.type", kind, "advantage", "group_mean"))
        advantage = {"kind": "group_mean", "params": {}}
    loss = get(trainer, "loss", {}) or {}
    ltype = str(get(loss, "type", "default"))
    low = float(get(loss, "dppo_mask_low", DPPO_DEFAULTS["delta_low"]))
    high = float(get(loss, "dppo_mask_high", DPPO_DEFAULTS["delta_high"]))
    clip = {"kind": "dppo_mask", "params": {"delta_low": low, "delta_high": high}}  # the default loss, exactly
    if ltype == "ipo":
        threshold = float(get(loss, "ipo_threshold", 0.1))
        gaps.append(Gap("trainer.loss.type", f"ipo (ipo_threshold = {plain_num(float(threshold))}: a token masked when its probability "
                                             "moved that far either way, whatever the sign of its advantage)", "clip",
                        f"dppo_mask (delta_low = delta_high = {plain_num(float(threshold))}, on the side the advantage pushes)"))
        clip = {"kind": "dppo_mask", "params": {"delta_low": threshold, "delta_high": threshold}}
    elif ltype != "default":
        gaps.append(Gap("trainer.loss.type", ltype, "clip", "symmetric clip of the ratio"))
        clip = {"kind": "symmetric", "params": {"eps": 0.2}}
    kl_tau = float(get(loss, "kl_tau", 1e-3))
    if kl_tau > 0:
        gaps.append(Gap("trainer.loss.kl_tau", str(kl_tau), "kl",
                        "none (the term pulls toward the sampling policy, not a reference model)"))
    if float(get(loss, "adv_tau", 1.0)) != 1.0:
        gaps.append(Gap("trainer.loss.adv_tau", str(get(loss, "adv_tau")), "advantage", "advantage x 1"))
    comps = {"advantage": advantage, "ratio": {"kind": "token", "params": {}}, "clip": clip,
             "kl": {"kind": "none", "params": {}}, "aggregation": {"kind": "token_mean", "params": {}},
             "filter": {"kind": "none", "params": {}}, "shaping": {"kind": "none", "params": {}}}
    return kind, comps, gaps


def _read_json(path: Path) -> dict:
    try:
        raw = json.loads(path.read_bytes().decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as err:
        raise LogError(str(path), f"not JSON ({str(err).splitlines()[0]}): fix it or move it out") from None
    if not isinstance(raw, dict):
        raise LogError(str(path), "expected prime-rl's resolved config (an object)")
    return raw


def _configs(src: Path) -> tuple[dict, dict, Path | None]:
    conf = src / "configs"
    if (conf / "trainer.json").is_file() or (conf / "orchestrator.json").is_file():
        t = _read_json(conf / "trainer.json") if (conf / "trainer.json").is_file() else {}
        o = _read_json(conf / "orchestrator.json") if (conf / "orchestrator.json").is_file() else {}
        return t, o, conf / ("trainer.json" if t else "orchestrator.json")
    if (conf / "rl.json").is_file():
        rl = _read_json(conf / "rl.json")
        return rl.get("trainer") or {}, rl.get("orchestrator") or {}, conf / "rl.json"
    return {}, {}, None


def _token_text(token: int) -> str:
    return f"<{token}>"


class _Null(Exception):
    """A trained token's value was written as null (non-finite in the trainer)."""


def _column(row: dict, name: str, keep: np.ndarray, loc: K.Loc, *, required: bool = True) -> np.ndarray | None:
    """The trained tokens' values of one per-token column, as float64 (vectorised: an export step is megabytes).

    A null among them raises _Null when ``required``, else gives None; any other non-number is an error."""
    values = row.get(name)
    try:
        fast = np.asarray(values, dtype=np.float64)[keep]  # None becomes NaN here: told apart below
        if np.all(np.isfinite(fast)):
            return fast
    except (TypeError, ValueError):
        pass
    if not isinstance(values, list):
        if required:
            raise loc.error(f"expected a list (one entry per token), got {type(values).__name__}", name)
        return None
    picked = [values[i] for i in keep.tolist()]
    for k, v in enumerate(picked):
        if v is None:
            if required:
                raise _Null(f"{name} of trained token {k} is null")
            return None
        if not K.is_number(v) or not math.isfinite(v):
            if required:
                raise loc.error(f"trained token {k}: expected a finite number, got {v!r}", name)
            return None
    return np.asarray(picked, dtype=np.float64)


def export_layout(row: dict, loc: K.Loc) -> str:
    """The commit whose token export layout ``row`` is in (:data:`LAYOUTS`), told by its fields; a LogError naming
    the fields for a line in neither (or missing what the import reads)."""
    keys = set(row)
    version = row.get("schema_version")
    if version != EXPORT_SCHEMA:
        raise loc.error(f"is {version!r}; this importer reads prime-rl's token export schema {EXPORT_SCHEMA} "
                        f"(the layouts of prime-rl {', '.join(LAYOUTS)}): import it with a matching unipo version",
                        "schema_version")
    lacking = [name for name in READ if name not in keys]
    if lacking:
        raise loc.error(f"a token export line without {', '.join(lacking)}: not prime-rl's token export (every layout "
                        f"of {', '.join(LAYOUTS)} has {', '.join(READ)})", lacking[0])
    found = [commit for commit, (_, marks) in LAYOUTS.items() if marks <= keys]
    if len(found) != 1:
        known = "; ".join(f"{commit}: {', '.join(sorted(marks))} ({what})" for commit, (what, marks) in LAYOUTS.items())
        extra = sorted(keys - set(READ) - {"schema_version", "step", "rank", "micro_step", "micro_sequence_idx",
                                              "export_sequence_idx", "env_name"})
        raise loc.error(f"a token export layout this importer does not know (schema_version 1 with the fields "
                        f"{', '.join(extra) or 'none beyond the common ones'}); it tells prime-rl's layouts by their "
                        f"fields: {known}; import it with a unipo that reads this prime-rl", "schema_version")
    return found[0]


def _sequence(row: dict, loc: K.Loc, skipped: list[str], notes: K.Notes):
    """(prompt ids, TokenInputs, masked sides, prime-rl's ratio) of one exported sequence, or None (listed in
    skipped)."""
    ids, mask = row.get("token_ids"), row.get("loss_mask")
    if not isinstance(ids, list) or not isinstance(mask, list) or len(ids) != len(mask):
        raise loc.error("token_ids and loss_mask must be lists of the same length (prime-rl's token export)",
                        "token_ids")
    n = len(ids)
    for name in ("advantages", "inference_logprobs", "trainer_logprobs"):
        if not isinstance(row.get(name), list) or len(row[name]) != n:
            raise loc.error(f"expected a list of {n} entries (the length of token_ids)", name)
    keep = np.flatnonzero(np.asarray(mask, dtype=bool))
    if not keep.size:
        return None
    first = int(keep[0])
    if keep.size != n - first:
        notes.add("tokens inside a response with loss_mask false (environment turns) left out")
    try:
        lp, old, adv = (_column(row, name, keep, loc) for name in ("trainer_logprobs", "inference_logprobs", "advantages"))
    except _Null as err:
        skipped.append(f"{loc.file}: line {loc.line} (step {loc.step}): {err} (non-finite in the trainer); "
                       "sequence left out")
        return None
    for name, values in (("trainer_logprobs", lp), ("inference_logprobs", old)):
        k = int(np.argmax(values))
        if values[k] > LOGPROB_TOLERANCE:
            raise loc.error(f"trained token {k} has log-prob {float(values[k])!r} > 0, which no probability has: the "
                            "file is not a prime-rl token export (or was altered); re-export it", name)
    try:
        tok = np.asarray(ids, dtype=np.int64)
    except (TypeError, ValueError, OverflowError):
        raise loc.error("token ids must be non-negative integers", "token_ids") from None
    if np.any(tok < 0) or any(isinstance(t, bool) or not isinstance(t, int) for t in ids[first:first + 1]):
        raise loc.error("token ids must be non-negative integers", "token_ids")
    entropy = _column(row, "entropy", keep, loc, required=False) if isinstance(row.get("entropy"), list) and len(
        row["entropy"]) == n else None
    high = _column(row, "is_masked_high", keep, loc, required=False) if isinstance(row.get("is_masked_high"), list) \
        and len(row["is_masked_high"]) == n else None
    low = _column(row, "is_masked_low", keep, loc, required=False) if isinstance(row.get("is_masked_low"), list) \
        and len(row["is_masked_low"]) == n else None
    sides = (np.where(high > 0, 1, np.where(low > 0, -1, 0)).tolist()
             if high is not None and low is not None else None)
    ratio = _column(row, "importance_ratio", keep, loc, required=False) if isinstance(row.get("importance_ratio"), list) \
        and len(row["importance_ratio"]) == n else None
    inputs = K.TokenInputs(loc=loc, ids=tok[keep].tolist(), text=[], logp=lp.tolist(), old_logp=old.tolist(),
                           advantage=adv.tolist(), entropy=None if entropy is None else entropy.tolist())
    rewards = row.get("rewards")  # the layout of 004274e: the sample's reward on each of its tokens
    if isinstance(rewards, list) and len(rewards) == n:
        value = rewards[first]
        inputs.extras["reward"] = float(value) if K.is_number(value) and math.isfinite(value) else None
    return tuple(tok[:first].tolist()), inputs, sides, None if ratio is None else ratio.tolist()


def _step_detail(step: int, g: int, d: Path, config, skipped: list[str], notes: K.Notes,
                 layout: dict | None = None) -> StepDetail | None:
    layout = {} if layout is None else layout
    groups: dict[tuple[int, ...], list] = {}
    for path in sorted(d.glob("rank_*.jsonl")):
        for line, row in K.jsonl_objects(path, skipped):
            loc = K.Loc(str(path), line=line, step=g)
            found = export_layout(row, loc)
            if layout.setdefault("commit", found) != found:
                raise loc.error(f"a line in the layout of prime-rl {found} ({LAYOUTS[found][0]}) in an export whose "
                                f"lines so far are in that of {layout['commit']} ({LAYOUTS[layout['commit']][0]}): "
                                "exports of two prime-rl versions mixed", "schema_version")
            seq = _sequence(row, loc, skipped, notes)
            if seq is not None:
                groups.setdefault(seq[0], []).append(seq[1:])
    if not groups:
        return None
    flat = [s[0] for members in groups.values() for s in members]
    outputs = iter(K.derive_tokens(config, flat, notes))
    prompts, summaries, total, kept = [], [], 0.0, 0
    for index, (prompt, members) in enumerate(groups.items()):
        responses, contrib = [], 0.0
        size = sum(len(m[0].ids) for m in members)
        # whole groups while they fit the token budget; the first group at least in part
        detailed = index < DETAIL_GROUPS and (kept + size <= DETAIL_TOKENS or index == 0)
        partial = False
        for r_index, (inputs, sides, src_ratio) in enumerate(members):
            out = next(outputs)
            contrib += out.contribution
            if not detailed:
                continue
            if responses and kept + len(inputs.ids) > DETAIL_TOKENS:
                partial = True
                continue
            kept += len(inputs.ids)
            extra = {}
            if sides is not None:
                extra["source_is_masked"] = sides
            if src_ratio is not None:
                extra["source_importance_ratio"] = src_ratio
            text = [_token_text(t) for t in inputs.ids]
            tokens = TokenArrays(ids=inputs.ids, text=text, logp=inputs.logp, old_logp=inputs.old_logp,
                                 advantage=inputs.advantage, ratio=out.ratio, clip=out.clip, weight=out.weight,
                                 objective=out.objective, mask=[1] * len(inputs.ids), entropy=inputs.entropy, **extra)
            responses.append(Response(index=r_index, text="".join(text), reward=inputs.extras.get("reward"),
                                      length=len(inputs.ids),
                                      contribution=out.contribution, tokens=tokens))
        if detailed:
            text = "".join(_token_text(t) for t in prompt)
            if partial:
                notes.add(f"a group over the token budget ({DETAIL_TOKENS} tokens) kept in part: its logged "
                          "contribution null, the step's summary has the whole group's")
            prompts.append(PromptGroup(index=index, prompt=text, contribution=None if partial else contrib,
                                       responses=responses))
        summaries.append(GroupSummary(index=index, size=len(members), contribution=contrib, detailed=detailed))
        total += contrib
    return StepDetail(step=step, rollout=step, objective=total, groups=summaries, prompts=prompts)


def _first_layout(exports: dict[int, Path]) -> dict:
    """{"commit": ...} of the export's first line (the layout every other line must share), {} without one."""
    for g in sorted(exports):
        for path in sorted(exports[g].glob("rank_*.jsonl")):
            for line, row in K.jsonl_objects(path, []):
                return {"commit": export_layout(row, K.Loc(str(path), line=line, step=g))}
    return {}


def _export_steps(src: Path) -> dict[int, Path]:
    root = src / "token_exports"
    if not root.is_dir():
        return {}
    return {int(m.group(1)): p for p in root.iterdir() if p.is_dir() and (m := STEP_DIR.match(p.name))}


def import_prime_rl(src: Path, stage: Path, *, algorithm: str | None = None, run_id: str | None = None,
                    max_new_tokens: int | None = None) -> RunHeader:
    """Write the canonical run of the prime-rl run directory ``src`` into ``stage``."""
    if not src.is_dir():
        raise LogError(str(src), "prime-rl's import reads a run directory (token_exports/, metrics.jsonl, configs/); "
                                 "pass the directory, not a file")
    notes = K.Notes()
    skipped: list[str] = []
    exports = _export_steps(src)
    metrics_path = src / "metrics.jsonl"
    if not exports and not metrics_path.is_file():
        raise LogError(str(src), "no token_exports/step_<N>/ and no metrics.jsonl: is this a prime-rl run directory "
                                 "(the trainer's output_dir, with enable_token_export = true)?")
    trainer, orchestrator, cfg_path = _configs(src)
    budget = max_new_tokens or get(orchestrator, "train.sampling.max_completion_tokens")
    if cfg_path is not None:
        name, comps, gaps = components(trainer, orchestrator)
        spec_id, config, extras = choose("prime-rl", name, comps, gaps, str(cfg_path), algorithm, budget, notes,
                                         ref_logprobs=False)
    elif algorithm is not None:
        spec_id, config, extras = choose("prime-rl", algorithm, {}, [], str(src), algorithm, budget, notes,
                                         ref_logprobs=False)
        notes.once("no configs/: the components are --algorithm's, not read from prime-rl's config")
    else:
        spec_id, config, extras = "unknown", None, {}
        notes.once("algorithm unknown (no configs/ and no --algorithm): algorithm_config is null")
    unstable = sorted(g for g, d in exports.items() if not (d / "STABLE").exists())
    if unstable:
        notes.add("token export steps without STABLE (a rank may not have written yet) read as they are",
                  len(unstable))

    files = [p for p in (cfg_path, metrics_path if metrics_path.is_file() else None) if p is not None]
    files += [p for d in exports.values() for p in d.glob("rank_*.jsonl")]
    layout = _first_layout(exports)
    with_rewards = layout.get("commit") == "004274e"
    if layout:
        notes.once(f"token export layout of prime-rl {layout['commit']} ({LAYOUTS[layout['commit']][0]}), told by its "
                   "fields")
    mtimes = [p.stat().st_mtime for p in files] or [src.stat().st_mtime]
    model = get(trainer, "model.name")
    header = RunHeader(
        run_id=K.check_run_id(run_id or K.run_id_from(src.resolve())),
        algorithm=spec_id, algorithm_config=config, title=f"{src.name} (imported from prime-rl)",
        task=TaskInfo(name="unknown (not in prime-rl's export)", source=str(src)),
        reward=RewardInfo(description="the environment's rubric" + ("" if with_rewards else
                                                                     " (prime-rl's export holds no rewards)")),
        model=ModelInfo(name=str(model or "unknown (not in prime-rl's configs)"), checkpoint=model),
        hyperparameters={k: v for k, v in {
            "group_size": get(orchestrator, "group_size"),
            "max_new_tokens": get(orchestrator, "train.sampling.max_completion_tokens"),
            "temperature": get(orchestrator, "train.sampling.temperature"), "lr": get(trainer, "optim.lr"),
            "steps": get(orchestrator, "max_steps") or get(trainer, "max_steps"),
            "batch_size": get(orchestrator, "batch_size")}.items() if v is not None},
        engine="prime-rl", software={"prime-rl": f"token export schema {EXPORT_SCHEMA}, layout of commit "
                                                 f"{layout.get('commit', PRIME_RL_COMMIT)}"},
        created_at=datetime.fromtimestamp(min(mtimes), tz=timezone.utc),
        finished_at=datetime.fromtimestamp(max(mtimes), tz=timezone.utc),
        imported_from={"format": "prime-rl", "path": str(src), "config": str(cfg_path) if cfg_path else None, **extras},
        missing=(["rewards (responses' reward is null)"] if not with_rewards else []) + [
                 "prompt and token text (token ids only: each shown as <id>)",
                 "reference log-probs", "correctness", "held-out evaluations", "problem ids (groups are sequences "
                 "with identical prompt tokens)"],
    )
    writer = RunWriter(stage, header, durable=False)
    pending: dict[int, dict[str, Any]] = {}
    written: dict[int, int] = {}
    state = {"last": -1}

    export_order = sorted(exports)
    state["next_export"] = 0

    def flush(upto: int | None) -> None:
        # an exported step the metrics have no row for still becomes a step, in its place
        while state["next_export"] < len(export_order) and (upto is None or export_order[state["next_export"]] <= upto):
            g = export_order[state["next_export"]]
            state["next_export"] += 1
            if g not in pending and g > state["last"]:
                pending[g] = {}
                notes.add("exported steps without a metrics row (metrics empty)")
        for g in sorted(pending):
            if upto is not None and g > upto:
                break
            metrics = pending.pop(g)
            i = len(written)
            detail = _step_detail(i, g, exports[g], config, skipped, notes, layout) if g in exports else None
            if detail is not None:
                writer.step_detail(detail)
                if metrics.get("objective") is None:
                    metrics["objective"] = detail.objective
                    notes.once("step objective = the sum of the exported groups' contributions (prime-rl logs none)")
            writer.step(StepRecord(step=i, rollout=i, first_in_rollout=True, metrics=metrics,
                                   has_tokens=detail is not None, source_step=g))
            written[g] = i
            state["last"] = g

    if metrics_path.is_file():
        newest = -1
        for line, row in K.progress(K.jsonl_objects(metrics_path, skipped), desc="importing prime-rl metrics",
                                    unit="line"):
            g = row.get("step")
            if not isinstance(g, int) or isinstance(g, bool) or g < 0:
                skipped.append(f"{metrics_path}: line {line}: no integer step")
                continue
            if g <= state["last"]:
                skipped.append(f"{metrics_path}: line {line}: a row for step {g} more than {WINDOW} steps after it "
                               "(left out)")
                continue
            data = numeric({k: v for k, v in row.items() if k not in ("step", "time")}, notes, "prime-rl")
            loc = K.Loc(str(metrics_path), line=line, step=g)
            bucket = pending.setdefault(g, {})
            for key, value in K.map_metrics(data, loc, notes).items():
                target = METRICS.get(key, key)
                if target != key:
                    notes.once(f"metric {key!r} -> {target!r}")
                bucket[target] = value
            newest = max(newest, g)
            if len(pending) > WINDOW:
                flush(newest - WINDOW)
    flush(None)
    orphans = [g for g in exports if g not in written]
    if orphans:
        skipped.append(f"{src / 'token_exports'}: {len(orphans)} exported step(s) out of order with the metrics, left out")
    if not written:
        raise LogError(str(src), "no step could be read: " + "; ".join(skipped[:3]))
    if skipped:
        notes.once(f"skipped {len(skipped)} unreadable line(s) or sequence(s), listed in imported_from.skipped")
        writer.header.imported_from["skipped"] = skipped[:200]
    notes.once("missing from prime-rl's export (see the header's missing): " + ("" if with_rewards else "rewards, ")
               + "text (token ids only), reference log-probs, correctness, evaluations")
    prefix = f"Imported from prime-rl ({len(written)} steps, {len(exports)} with a token export) by `unipo import prime-rl`."
    writer.finish(notes=notes.text(prefix))
    return writer.header
