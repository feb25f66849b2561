"""Join the token tap's shards into the token files of a canonical run.

``unipo import openrlhf TB_DIR --tap TAP_DIR --out RUN`` reads the TensorBoard scalars (one step per
OpenRLHF global step, i.e. per rollout: ``importers.openrlhf_tb``) and, from the tap directory:

- ``manifest.json`` (written by ``unipo train --engine openrlhf``): the algorithm, the components
  OpenRLHF actually ran (``effective_config``: the spec, or its accepted approximation), the gaps
  and the options. The run's ``algorithm_config`` is the effective config, and the gaps are in the
  header (``openrlhf.gaps``) and its notes.
- ``rollout-*.jsonl`` (the trainer actor's shard): per rollout, every group's rewards, scores and
  lengths, and the sampled groups' responses with their token ids, text, old and reference
  log-probs, KL, values, advantages and returns.
- ``policy-rank*-*.jsonl`` (one per policy worker): per gradient micro-step, each sampled response's
  log-probs at the update, ratio, clip side and entropy as OpenRLHF computed them.

Rollout ``r`` (the r-th call of OpenRLHF's advantage computation) becomes the token file of step
``r``. A response's token arrays are those of the LAST update that trained on it in that rollout
(its ratio has moved furthest from 1 there); updates are matched to rollout samples by a hash of the
sample's token ids, in order of occurrence when the same sample recurs. The per-token weight and
objective are recomputed with the effective config's components (``common.derive_tokens``) from the
logged log-probs and advantages; OpenRLHF's own ratio and clip side are kept next to them as
``engine_ratio`` and ``engine_clip``, and the largest difference between the two ratios is in the
notes. A sampled response no update trained on (the critic's warm-up with --critic.freezing_steps)
keeps logp = old_logp (ratio 1), noted.
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from unipo_build.core.numbers import plain_sci
from unipo_build.core.runlog import LogError
from unipo_build.core.schema import GroupSummary, PromptGroup, Response, StepDetail, TokenArrays
from unipo_build.core.specs import REGISTRY, ResolvedAlgorithm
from unipo_build.trainers import common as K
from unipo_build.trainers.openrlhf.tap import SHARD_FORMAT

MANIFEST = "manifest.json"
SAMPLE_FIELDS = ("ids", "text", "old_logp", "advantage")
UPDATE_FIELDS = ("logp", "old_logp", "advantage", "ratio", "clip")
SAMPLE_OPTIONAL = ("ref_logp", "kl", "value", "return")
UPDATE_OPTIONAL = ("entropy",)


@dataclass
class TapData:
    """Everything read from a tap directory."""

    directory: Path
    manifest: dict | None
    rollouts: dict[int, dict] = field(default_factory=dict)  # rollout -> its 'rollout' record
    samples: dict[int, list[dict]] = field(default_factory=lambda: defaultdict(list))
    # key -> [(ppo_call, update, record)] in file order, per policy shard merged
    updates: dict[str, list[tuple[int, int, dict]]] = field(default_factory=lambda: defaultdict(list))
    shards: list[Path] = field(default_factory=list)


def _read_shard(path: Path, data: TapData, notes: K.Notes) -> None:
    with open(path, "rb") as handle:
        lines = handle.read().split(b"\n")
    cut = lines and lines[-1] != b""
    for number, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        loc = K.Loc(str(path), line=number)
        try:
            record = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError) as err:
            if cut and number == len(lines):
                notes.add(f"the last line of {path.name} is cut off (process killed while writing?) and was ignored")
                continue
            raise loc.error(f"not JSON: {err}") from None
        if not isinstance(record, dict):
            raise loc.error(f"expected an object, got {K._type_name(record)}")
        kind = record.get("kind")
        if kind == "shard":
            if record.get("format") != SHARD_FORMAT:
                raise loc.error(f"shard format {record.get('format')!r}, expected {SHARD_FORMAT!r}", "format")
        elif kind == "rollout":
            rollout = _int(record, "rollout", loc)
            loc.step = rollout
            if not isinstance(record.get("groups"), list):
                raise loc.error("expected a list of groups", "groups")
            data.rollouts[rollout] = record
        elif kind == "sample":
            rollout = _int(record, "rollout", loc)
            loc.step = rollout
            _check_arrays(record, SAMPLE_FIELDS, loc, SAMPLE_OPTIONAL)
            data.samples[rollout].append(record)
        elif kind == "update":
            loc.step = None
            _check_arrays(record, UPDATE_FIELDS, loc, UPDATE_OPTIONAL)
            key = record.get("key")
            if not isinstance(key, str):
                raise loc.error("required: the sample's key", "key")
            data.updates[key].append((_int(record, "ppo_call", loc, minimum=-1), _int(record, "update", loc), record))
        else:
            raise loc.error(f"unknown record kind {kind!r} (known: shard, rollout, sample, update)", "kind")


def _int(record: dict, name: str, loc: K.Loc, minimum: int = 0) -> int:
    value = record.get(name)
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        raise loc.error(f"expected an integer >= {minimum}, got {value!r}", name)
    return value


def _check_arrays(record: dict, names: tuple[str, ...], loc: K.Loc, optional: tuple[str, ...] = ()) -> None:
    """Required token arrays (and optional ones, when not null): lists of one length, finite numbers."""
    n = None
    for name in names + tuple(o for o in optional if record.get(o) is not None):
        values = record.get(name)
        if not isinstance(values, list):
            raise loc.error("required: a list" if values is None else f"expected a list, got {K._type_name(values)}",
                            name)
        if n is None:
            n = len(values)
        elif len(values) != n:
            raise loc.error(f"has {len(values)} elements, expected {n} (one per response token)", name)
        if name not in ("ids", "text", "clip"):
            for i, v in enumerate(values):
                if not K.is_number(v) or not math.isfinite(v):
                    raise loc.error(f"element {i} is {v!r}, not a finite number", name)


def read_tap(directory: str | Path, notes: K.Notes) -> TapData:
    directory = Path(directory)
    if not directory.is_dir():
        raise LogError(str(directory), "not a directory (the tap's --tap-dir)")
    manifest = None
    path = directory / MANIFEST
    if path.exists():
        try:
            manifest = json.loads(path.read_text(encoding="utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError) as err:
            raise LogError(str(path), f"not JSON: {err}") from None
        if not isinstance(manifest, dict) or manifest.get("format") != SHARD_FORMAT:
            raise LogError(str(path), f"not a tap manifest (format {SHARD_FORMAT!r} expected)", field="format")
    data = TapData(directory=directory, manifest=manifest)
    data.shards = sorted(p for p in directory.glob("*.jsonl"))
    if not any(p.name.startswith("rollout-") for p in data.shards):
        raise LogError(str(directory), "no rollout-*.jsonl shard: did the run start with the tap "
                                       "(unipo train --engine openrlhf, or python -m unipo_build.trainers.openrlhf.launch)?")
    for shard in data.shards:
        _read_shard(shard, data, notes)
    return data


def effective_config(data: TapData, loc: str) -> ResolvedAlgorithm | None:
    if data.manifest is None or data.manifest.get("effective_config") is None:
        return None
    try:
        return ResolvedAlgorithm.model_validate(data.manifest["effective_config"])
    except ValueError as err:
        raise LogError(loc, f"not a resolved algorithm: {err}", field="effective_config") from None


def _updates_for(data: TapData, rollout_order: dict[str, list[int]], key: str, rollout: int) -> dict | None:
    """The last update record of the ppo_train call that trained on ``key`` in ``rollout``."""
    records = data.updates.get(key)
    if not records:
        return None
    calls = sorted({c for c, _, _ in records})
    occurrences = rollout_order[key]
    position = occurrences.index(rollout)
    if position >= len(calls):
        return None
    call = calls[position]
    return max((r for r in records if r[0] == call), key=lambda r: r[1])[2]


def step_details(data: TapData, cfg: ResolvedAlgorithm | None, notes: K.Notes) -> dict[int, StepDetail]:
    """One StepDetail per tapped rollout (objective filled in by the caller from the step's metrics)."""
    order: dict[str, list[int]] = defaultdict(list)
    for rollout in sorted(data.samples):
        seen = set()
        for s in data.samples[rollout]:
            if s["key"] not in seen:
                order[s["key"]].append(rollout)
                seen.add(s["key"])
    details = {}
    max_ratio_gap = 0.0
    kl_in_loss = cfg is not None and REGISTRY["kl"][cfg.kind("kl")].kl_place == "loss"
    for rollout, record in sorted(data.rollouts.items()):
        samples = {}
        for s in data.samples.get(rollout, []):
            samples.setdefault(s.get("group"), []).append(s)
        inputs, extras, rows = [], [], []
        for g in record["groups"]:
            for s in sorted(samples.get(g.get("group"), []), key=lambda s: s.get("index") or 0):
                loc = K.Loc(str(data.directory), step=rollout, parts=(f"group {g.get('group')}",
                                                                      f"sample {s.get('index')}"))
                update = _updates_for(data, order, s["key"], rollout)
                if update is not None and len(update["logp"]) != len(s["ids"]):
                    raise loc.error(f"the update record has {len(update['logp'])} tokens, the sample "
                                    f"{len(s['ids'])}", "logp")
                if update is None:
                    notes.add("sampled responses no update trained on: logp = old_logp (ratio 1)")
                    logp, old, adv, entropy = s["old_logp"], s["old_logp"], s["advantage"], None
                else:
                    logp, old, adv, entropy = update["logp"], update["old_logp"], update["advantage"], \
                        update.get("entropy")
                # The sample's KL is the rollout's (old_logp against ref_logp): what a KL in the reward
                # used. A KL in the loss is taken at the update's logp, so it is recomputed from ref_logp.
                kl = None if kl_in_loss else s.get("kl")
                inputs.append(K.TokenInputs(loc=loc, ids=s["ids"], text=s["text"], logp=logp, old_logp=old,
                                            advantage=adv, ref_logp=s.get("ref_logp"), value=s.get("value"),
                                            return_=s.get("return"), kl=kl, entropy=entropy))
                extras.append({} if update is None else {"engine_ratio": update["ratio"],
                                                         "engine_clip": update["clip"]})
                rows.append(s)
        outputs = K.derive_tokens(cfg, inputs, notes) if inputs else []
        by_group: dict = defaultdict(list)
        for s, t, out, extra in zip(rows, inputs, outputs, extras):
            if extra:
                gap = float(np.max(np.abs(np.asarray(extra["engine_ratio"]) - np.asarray(out.ratio)))) \
                    if out.ratio else 0.0
                max_ratio_gap = max(max_ratio_gap, gap)
            tokens = TokenArrays(ids=t.ids, text=t.text, logp=t.logp, old_logp=t.old_logp, ref_logp=t.ref_logp,
                                 value=t.value, advantage=t.advantage, kl=out.kl, ratio=out.ratio, clip=out.clip,
                                 entropy=t.entropy, weight=out.weight, objective=out.objective,
                                 mask=[1] * len(t.ids), **({"return": t.return_} if t.return_ is not None else {}),
                                 **extra)
            by_group[s.get("group")].append((s, tokens, out.contribution))
        groups, prompts = [], []
        for position, g in enumerate(record["groups"]):
            group_id = g.get("group")
            index = group_id if isinstance(group_id, int) and group_id >= 0 else position
            members = g.get("samples", [])
            rewards = [m["reward"] for m in members]
            scores = [m.get("score") for m in members]
            correct = [bool(sc >= 1.0) for sc in scores] if all(sc is not None for sc in scores) else None
            detailed = by_group.get(group_id, [])
            contribution = float(sum(c for _, _, c in detailed))
            groups.append(GroupSummary(index=index, size=max(1, len(members)),
                                       n_correct=sum(correct) if correct is not None else None,
                                       reward_mean=float(np.mean(rewards)) if rewards else None,
                                       contribution=contribution, detailed=bool(detailed)))
            if not detailed:
                continue
            responses = []
            for r, (s, tokens, c) in enumerate(detailed):
                score = s.get("score")
                responses.append(Response(
                    index=r, text=s.get("response") or "".join(tokens.text), reward=s["reward"],
                    advantage=tokens.advantage[0] if tokens.advantage and len(set(tokens.advantage)) == 1 else None,
                    length=len(tokens.ids), correct=None if score is None else bool(score >= 1.0),
                    truncated=bool(s.get("truncated")), contribution=c, tokens=tokens,
                    source_index=s.get("index")))
            prompts.append(PromptGroup(index=index, prompt=g.get("prompt") or "", answer=None if g.get("label") is None
                                       else str(g["label"]), contribution=contribution, responses=responses))
        details[rollout] = StepDetail(step=rollout, rollout=rollout, objective=0.0, groups=groups, prompts=prompts)
    if max_ratio_gap:
        notes.once(f"largest difference between OpenRLHF's ratio and the recomputed one: {plain_sci(max_ratio_gap, 2)}")
    notes.once("token arrays of each sampled response: the last update that trained on it in its rollout")
    return details
