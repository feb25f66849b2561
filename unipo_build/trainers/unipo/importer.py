"""Import a training log in UNIPO's published format (github.com/poloclub/unipo,
docs/canonical_schema.json) into a canonical run directory.

Input, as UNIPO's own ``scripts/build_data.py`` reads it:

- JSON: ``{"header": {...}, "blueprint": {"prompts": [...]}?, "entries": [...]}``; the
  blueprint's prompts stand in for an entry that has none (as in UNIPO's mock data).
- JSONL: a first line ``{"type": "header", ...}``, then one ``{"type": "step", ...}`` line per
  entry (streamed: a multi-GB log is never held in memory). Lines of another type are skipped
  and counted in the notes.

An entry is one model update: ``step``, ``is_first_step_after_rollout_phase``, ``metrics``,
optionally ``prompts`` (each ``{prompt, responses: [{id, reward, advantage, response_text,
response_length, tokens: {ids, strings, log_probs, old_log_probs, ref_log_probs, values,
advantages, returns, token_kl, rewards, token_objective}}]}``) and ``batch``.

Mapping (source -> canonical):

==============================================  =================================================
header.algorithm                                algorithm: our spec id when the name matches one
                                                (ignoring case and punctuation: 'Dr. GRPO',
                                                'drgrpo' -> dr_grpo), with algorithm_config the
                                                spec resolved with the log's clip/KL hparams;
                                                otherwise the name as it is, algorithm_config null
header.hparams                                  hyperparameters
header.task / dataset / reward_strategy         task.name / task.source / reward.description
header.model_name / reference_model_name        model.name / reference_model.name
header.label                                    title
entry.step                                      step: entries numbered 0, 1, ... in log order
                                                (steps must increase); a logged number that
                                                differs is kept as source_step
entry.is_first_step_after_rollout_phase         first_in_rollout; rollout = number of rollout
                                                boundaries so far - 1 (the first entry always
                                                starts a rollout)
entry.metrics                                   metrics, names mapped onto the catalogue
                                                (common.METRIC_ALIASES), others kept
entry.prompts[p]                                tokens/step_NNNNNN.json: prompts[p], groups[p]
response.response_text / reward / advantage     text / reward (null -> 0, noted) / advantage
response.correct / truncated (booleans, if any) correct / truncated
tokens.ids / strings                            ids / text
tokens.log_probs (or prob -> log prob)          logp
tokens.old_log_probs                            old_logp (absent on the first update after a
                                                rollout: = logp, which is exact there)
tokens.ref_log_probs / values / returns         ref_logp / value / return
tokens.advantages                               advantage (absent: the response's advantage on
                                                every token)
tokens.token_kl / token_objective               kl / objective (token_objective absent:
                                                -token_loss, else derived)
==============================================  =================================================

Derived (the schema requires them; every derivation is listed in the header's notes):

- ratio = exp(logp - old_logp) (or the spec's ratio kind: GSPO's per-sequence geometric mean);
- clip side from the spec's clip bounds; 0 when the algorithm is unknown;
- weight from the spec's aggregation over the step's logged responses; a token mean over
  them when the algorithm is unknown;
- objective from token_objective; when absent from the spec's math (or ratio x advantage);
- mask 1 on every token (UNIPO logs response tokens only);
- the step objective J: metrics.policy_objective, else -policy_loss, else the sum of the
  logged responses' contributions.

A response whose tokens lack log-probs, or old log-probs off the first update of a rollout,
or any advantage, keeps its text and reward without token arrays; its source token arrays are
kept under ``source_tokens`` and the notes count it.
"""

from __future__ import annotations

import json
import math
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterator

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

HEADER_KNOWN = ("type", "algorithm", "hparams", "task", "dataset", "reward_strategy", "model_name",
                "reference_model_name", "label")
ENTRY_KNOWN = ("type", "step", "is_first_step_after_rollout_phase", "metrics", "prompts")
PROMPT_KNOWN = ("prompt", "responses", "answer")
RESPONSE_KNOWN = ("reward", "advantage", "response_text", "response_length", "tokens", "correct", "truncated")
TOKENS_KNOWN = ("ids", "strings", "log_probs", "prob", "old_log_probs", "ref_log_probs", "values", "advantages",
                "returns", "token_kl", "token_objective", "token_loss", "entropy")
TOKENS_OPTIONAL = {"ref_log_probs": "ref_logp", "values": "value", "returns": "return_", "token_kl": "kl",
                   "entropy": "entropy"}


def _reserved(model) -> set[str]:
    return set(model.model_fields) | {f.alias for f in model.model_fields.values() if f.alias}


# ---------------------------------------------------------------------------
# Reading
# ---------------------------------------------------------------------------

def _json_error(path: Path, err: json.JSONDecodeError, line: int | None = None, cut: bool = False) -> LogError:
    hint = " (the line is cut off: was the log truncated?)" if cut else ""
    return LogError(str(path), f"not valid JSON: {err.msg}{hint}", line=line if line is not None else err.lineno)


def _parse(text: str):
    return json.loads(text, parse_constant=float)


def read_source(path: Path, notes: K.Notes) -> tuple[dict, Iterator[tuple[K.Loc, dict]]]:
    """(header, iterator of (location, entry)); JSONL is streamed line by line."""
    if path.suffix.lower() == ".jsonl":
        return _read_jsonl(path, notes)
    return _read_json(path)


def _read_json(path: Path):
    try:
        raw = _parse(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as err:
        raise _json_error(path, err) from None
    except UnicodeDecodeError as err:
        raise LogError(str(path), f"not UTF-8 text: {err}") from None
    if not isinstance(raw, dict):
        raise LogError(str(path), f"the root is {K._type_name(raw)}; expected an object with header and entries")
    header, entries = raw.get("header"), raw.get("entries")
    if not isinstance(header, dict):
        raise LogError(str(path), "missing or not an object", field="header")
    if not isinstance(entries, list):
        raise LogError(str(path), "missing or not a list", field="entries")
    blueprint = raw.get("blueprint")
    blueprint_prompts = blueprint.get("prompts") if isinstance(blueprint, dict) else None
    header = dict(header)
    extra_roots = {k: v for k, v in raw.items() if k not in ("header", "entries", "blueprint")}
    if extra_roots:
        header["source_root_fields"] = extra_roots

    def entries_iter():
        for index, entry in enumerate(entries):
            loc = K.Loc(str(path), parts=(f"entry {index}",))
            if not isinstance(entry, dict):
                raise loc.error(f"an entry is an object, got {K._type_name(entry)}")
            if entry.get("prompts") is None and blueprint_prompts is not None:
                entry = dict(entry, prompts=blueprint_prompts)
            yield loc, entry

    return header, entries_iter()


def _decode(path: Path, raw: bytes, number: int) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise LogError(str(path), f"not UTF-8 text: {err}", line=number) from None


def _read_jsonl(path: Path, notes: K.Notes):
    fh = path.open("rb")  # bytes, decoded line by line: an encoding error names its line
    try:
        first = _decode(path, fh.readline(), 1)
        if not first.strip():
            raise LogError(str(path), "the file is empty; the first line is the header", line=1)
        try:
            header = _parse(first)
        except json.JSONDecodeError as err:
            raise _json_error(path, err, 1, not first.endswith("\n")) from None
        if not isinstance(header, dict) or header.get("type", "header") != "header":
            raise LogError(str(path), 'the first line must be the header object ({"type": "header", ...})', line=1)
    except BaseException:
        fh.close()
        raise

    def entries_iter():
        with fh:
            for number, raw in enumerate(fh, start=2):
                line = _decode(path, raw, number)
                if not line.strip():
                    continue
                try:
                    entry = _parse(line)
                except json.JSONDecodeError as err:
                    raise _json_error(path, err, number, not line.endswith("\n")) from None
                loc = K.Loc(str(path), line=number)
                if not isinstance(entry, dict):
                    raise loc.error(f"a line is an object, got {K._type_name(entry)}")
                kind = entry.get("type", "step")
                if kind != "step":
                    notes.add(f"lines of type {kind!r} skipped")
                    continue
                yield loc, entry

    return header, entries_iter()


# ---------------------------------------------------------------------------
# Header
# ---------------------------------------------------------------------------

def _text(value: Any, loc: K.Loc, field_name: str, default: str) -> str:
    if value is None:
        return default
    if not isinstance(value, str):
        raise loc.error(f"expected a string, got {K._type_name(value)}", field_name)
    return value


def build_header(raw: dict, src: Path, *, algorithm: str | None, run_id: str | None, max_new_tokens: int | None,
                 notes: K.Notes) -> RunHeader:
    loc = K.Loc(str(src), line=1 if src.suffix.lower() == ".jsonl" else None, parts=("header",))
    name = algorithm or raw.get("algorithm")
    if not isinstance(name, str) or not name.strip():
        raise loc.error("missing: the algorithm's name (or pass --algorithm)", "algorithm")
    hparams = raw.get("hparams") or {}
    if not isinstance(hparams, dict):
        raise loc.error(f"expected an object, got {K._type_name(hparams)}", "hparams")
    hparams = K.free_form(hparams, notes, "hparams")
    specs = K.known_specs(notes)
    spec_id = K.match_spec(name, specs)
    config = None
    if spec_id is not None:
        if spec_id != name:
            notes.add(f"algorithm {name!r} -> spec {spec_id!r}")
        config = K.resolve_for_import(specs[spec_id], hparams, max_new_tokens, loc, notes)
    else:
        notes.add(f"algorithm {name!r} is not one of ours ({', '.join(sorted(specs))}): algorithm_config is null")
    task = _text(raw.get("task"), loc, "task", "unknown task")
    dataset = _text(raw.get("dataset"), loc, "dataset", "unknown (not in the log)")
    model = _text(raw.get("model_name"), loc, "model_name", "unknown (not in the log)")
    ref = raw.get("reference_model_name")
    created = datetime.fromtimestamp(src.stat().st_mtime, tz=timezone.utc)
    notes.once("created_at is the source file's modification time")
    extras = K.keep_extras(raw, HEADER_KNOWN, K_RESERVED_HEADER, notes, "header")
    return RunHeader(
        run_id=K.check_run_id(run_id or K.run_id_from(src)),
        algorithm=spec_id or K.algorithm_id(name, notes),
        algorithm_config=config,
        title=_text(raw.get("label"), loc, "label", f"{name} (imported from {src.name})"),
        task=TaskInfo(name=task, source=dataset),
        reward=RewardInfo(description=_text(raw.get("reward_strategy"), loc, "reward_strategy",
                                            "unknown (not in the log)")),
        model=ModelInfo(name=model),
        reference_model=ModelInfo(name=_text(ref, loc, "reference_model_name", "")) if ref else None,
        hyperparameters=hparams,
        engine="unipo-import",
        created_at=created,
        imported_from={"format": "unipo", "path": str(src), "sha256": K.sha256_file(src)},
        **extras,
    )


K_RESERVED_HEADER = _reserved(RunHeader)


# ---------------------------------------------------------------------------
# Entries
# ---------------------------------------------------------------------------

def _tokens(raw: Any, loc: K.Loc, first_in_rollout: bool, advantage: float | None,
            notes: K.Notes) -> K.TokenInputs | None:
    if not isinstance(raw, dict):
        raise loc.error(f"expected an object of token arrays, got {K._type_name(raw)}", "tokens")
    ids = raw.get("ids")
    if not isinstance(ids, list):
        raise loc.error("required: the token ids" if ids is None else f"expected a list of integers, got "
                        f"{K._type_name(ids)}", "tokens.ids")
    for i, item in enumerate(ids):
        if not isinstance(item, int) or isinstance(item, bool) or item < 0:
            raise loc.error(f"element {i} is {K._type_name(item)} {item!r}, expected a non-negative integer",
                            "tokens.ids")
    n = len(ids)
    strings = raw.get("strings")
    if strings is None:
        text = [f"⟨{i}⟩" for i in ids]
        notes.add("token text missing (no tokens.strings): shown as ⟨id⟩")
    else:
        if not isinstance(strings, list) or len(strings) != n or not all(isinstance(s, str) for s in strings):
            raise loc.error(f"expected {n} strings (one per id)", "tokens.strings")
        text = list(strings)

    def arr(name: str) -> list[float] | None:
        return None if raw.get(name) is None else K.number_list(raw[name], loc, f"tokens.{name}", n)

    logp = arr("log_probs")
    if logp is None and raw.get("prob") is not None:
        probs = K.number_list(raw["prob"], loc, "tokens.prob", n)
        for i, p in enumerate(probs):
            if not 0 < p <= 1:
                raise loc.error(f"element {i} is {p}, a probability must be in (0, 1]", "tokens.prob")
        logp = [math.log(p) for p in probs]
        notes.add("log_probs = log(prob)")
    old = arr("old_log_probs")
    adv = arr("advantages")
    missing = None
    if logp is None:
        missing = "no log_probs (or prob)"
    elif old is None:
        if first_in_rollout:
            old = list(logp)
            notes.add("old_log_probs = log_probs on the first update after a rollout (the policy has not moved)")
        else:
            missing = "no old_log_probs off the first update of a rollout"
    if missing is None and adv is None:
        if advantage is not None:
            adv = [advantage] * n
            notes.add("token advantages = the response's advantage (tokens.advantages not logged)")
        else:
            missing = "no advantages"
    if missing is not None:
        notes.add(f"responses without token arrays ({missing}); their source tokens kept under source_tokens")
        return None
    objective = arr("token_objective")
    if objective is None and raw.get("token_loss") is not None:
        objective = [-v for v in arr("token_loss")]
        notes.add("token objective = -token_loss")
    optional = {attr: arr(name) for name, attr in TOKENS_OPTIONAL.items()}
    extras = K.keep_extras(raw, TOKENS_KNOWN, K_RESERVED_TOKENS, notes, "tokens")
    return K.TokenInputs(loc=loc, ids=list(ids), text=text, logp=logp, old_logp=old, advantage=adv,
                         objective=objective, extras=extras, **optional)


K_RESERVED_TOKENS = _reserved(TokenArrays)
K_RESERVED_RESPONSE = _reserved(Response)
K_RESERVED_PROMPT = _reserved(PromptGroup)
K_RESERVED_STEP = _reserved(StepRecord)


def _detail(entry_loc: K.Loc, prompts: Any, step: int, rollout: int, first: bool, cfg, metrics: dict,
            notes: K.Notes) -> tuple[StepDetail, float | None]:
    if not isinstance(prompts, list):
        raise entry_loc.error(f"expected a list of prompt groups, got {K._type_name(prompts)}", "prompts")
    parsed = []  # (prompt loc, raw prompt, [(response loc, raw response, reward, advantage, TokenInputs|None)])
    for p, raw_prompt in enumerate(prompts):
        ploc = entry_loc.at(f"prompt {p}")
        if not isinstance(raw_prompt, dict):
            raise ploc.error(f"a prompt group is an object, got {K._type_name(raw_prompt)}")
        prompt = raw_prompt.get("prompt")
        if not isinstance(prompt, str):
            raise ploc.error("required: the prompt text" if prompt is None else
                             f"expected a string, got {K._type_name(prompt)}", "prompt")
        responses = raw_prompt.get("responses")
        if not isinstance(responses, list) or not responses:
            raise ploc.error("expected a non-empty list of responses", "responses")
        rows = []
        for r, raw_resp in enumerate(responses):
            rloc = ploc.at(f"response {r}")
            if not isinstance(raw_resp, dict):
                raise rloc.error(f"a response is an object, got {K._type_name(raw_resp)}")
            reward = raw_resp.get("reward")
            if reward is None:
                reward = 0.0
                notes.add("null reward shown as 0 (as UNIPO's viewer does)")
            else:
                reward = K.number(reward, rloc, "reward")
            advantage = raw_resp.get("advantage")
            advantage = None if advantage is None else K.number(advantage, rloc, "advantage")
            tokens = None
            if raw_resp.get("tokens") is not None:
                tokens = _tokens(raw_resp["tokens"], rloc, first, advantage, notes)
            rows.append((rloc, raw_resp, reward, advantage, tokens))
        parsed.append((ploc, raw_prompt, prompt, rows))

    inputs = [t for _, _, _, rows in parsed for (_, _, _, _, t) in rows if t is not None]
    outputs = iter(K.derive_tokens(cfg, inputs, notes))
    groups, prompt_groups, total = [], [], 0.0
    for p, (ploc, raw_prompt, prompt, rows) in enumerate(parsed):
        responses, contribution, rewards, detailed = [], 0.0, [], False
        for r, (rloc, raw_resp, reward, advantage, t) in enumerate(rows):
            extras = K.keep_extras(raw_resp, RESPONSE_KNOWN, K_RESERVED_RESPONSE, notes, "responses")
            text = raw_resp.get("response_text")
            if text is not None and not isinstance(text, str):
                raise rloc.error(f"expected a string, got {K._type_name(text)}", "response_text")
            logged_length = raw_resp.get("response_length")
            if logged_length is not None and not (K.is_number(logged_length) and logged_length >= 0):
                raise rloc.error(f"expected a non-negative number, got {logged_length!r}", "response_length")
            tokens, resp_contribution = None, None
            if t is not None:
                out = next(outputs)
                if advantage is None and len(set(t.advantage)) == 1 and t.advantage:
                    advantage = t.advantage[0]
                tokens = TokenArrays(
                    ids=t.ids, text=t.text, logp=t.logp, old_logp=t.old_logp, ref_logp=t.ref_logp, value=t.value,
                    advantage=t.advantage, kl=out.kl, ratio=out.ratio, clip=out.clip, entropy=t.entropy,
                    weight=out.weight, objective=out.objective, mask=[1] * len(t.ids),
                    **({"return": t.return_} if t.return_ is not None else {}), **t.extras)
                resp_contribution = out.contribution
                contribution += out.contribution
                detailed = True
                length = len(t.ids)
                if logged_length is not None and int(logged_length) != length:
                    extras["source_response_length"] = logged_length
            else:
                if raw_resp.get("tokens") is not None:
                    extras["source_tokens"] = K.free_form(raw_resp["tokens"], notes, "tokens")
                length = int(logged_length) if logged_length is not None else 0
            if text is None:
                text = "".join(t.text) if t is not None else ""
                notes.add("response text missing: the tokens' text joined")
            flags = {}
            for flag in ("correct", "truncated"):
                value = raw_resp.get(flag)
                if value is not None and not isinstance(value, bool):
                    raise rloc.error(f"expected true or false, got {K._type_name(value)}", flag)
                if value is not None:
                    flags[flag] = value
            responses.append(Response(index=r, text=text, reward=reward, advantage=advantage, length=length,
                                      contribution=resp_contribution, tokens=tokens, **flags, **extras))
            rewards.append(reward)
        extras = K.keep_extras(raw_prompt, PROMPT_KNOWN, K_RESERVED_PROMPT, notes, "prompts")
        answer = raw_prompt.get("answer")
        prompt_groups.append(PromptGroup(index=p, prompt=prompt, answer=None if answer is None else str(answer),
                                         contribution=contribution if detailed else None, responses=responses,
                                         **extras))
        if not detailed:
            notes.add("prompt groups without token arrays: contribution 0 (unknown)")
        correct = [resp.correct for resp in responses]
        groups.append(GroupSummary(index=p, size=len(responses), reward_mean=sum(rewards) / len(rewards),
                                   n_correct=sum(correct) if all(c is not None for c in correct) else None,
                                   contribution=contribution, detailed=detailed))
        total += contribution

    objective = metrics.get("objective")
    if objective is None:
        objective = total
        notes.add("step objective = sum of the logged responses' contributions (no policy_objective or "
                  "policy_loss logged)")
    return StepDetail(step=step, rollout=rollout, objective=objective, groups=groups, prompts=prompt_groups), objective


def import_unipo(src: Path, stage: Path, *, algorithm: str | None = None, run_id: str | None = None,
                 max_new_tokens: int | None = None) -> RunHeader:
    """Write the canonical run of UNIPO log ``src`` into the (empty) directory ``stage``."""
    notes = K.Notes()
    raw_header, entries = read_source(src, notes)
    header = build_header(raw_header, src, algorithm=algorithm, run_id=run_id, max_new_tokens=max_new_tokens,
                          notes=notes)
    cfg = header.algorithm_config
    writer = RunWriter(stage, header)
    previous, rollout, count = None, -1, 0
    first_flags: list[int] = []
    for loc, entry in entries:
        logged = entry.get("step")
        if not isinstance(logged, int) or isinstance(logged, bool) or logged < 0:
            raise loc.error("required: a non-negative integer" if logged is None else
                            f"expected a non-negative integer, got {K._type_name(logged)} {logged!r}", "step")
        loc.step = logged
        if previous is not None and logged <= previous:
            raise loc.error(f"step {logged} comes after step {previous}: steps must increase (a step logged twice?)",
                            "step")
        previous = logged
        step = count
        if step != logged:
            notes.once("steps numbered 0, 1, ... in log order; the logged step number kept as source_step")
        flag = entry.get("is_first_step_after_rollout_phase")
        if flag is not None and not isinstance(flag, bool):
            raise loc.error(f"expected true or false, got {K._type_name(flag)}", "is_first_step_after_rollout_phase")
        first = bool(flag) or count == 0
        if count == 0 and not flag:
            notes.add("the first step starts a rollout (is_first_step_after_rollout_phase was not true)")
        if first:
            rollout += 1
            first_flags.append(count)
        metrics = K.map_metrics(entry.get("metrics"), loc, notes)
        if metrics.get("objective") is None and metrics.get("loss/policy") is not None:
            metrics["objective"] = -metrics["loss/policy"]
            notes.once("metric objective = -policy_loss")
        has_tokens = entry.get("prompts") is not None
        if has_tokens:
            detail, objective = _detail(loc, entry["prompts"], step, rollout, first, cfg, metrics, notes)
            metrics.setdefault("objective", objective)
            if metrics["objective"] is None:
                metrics["objective"] = objective
            writer.step_detail(detail)
        extras = K.keep_extras(entry, ENTRY_KNOWN, K_RESERVED_STEP, notes, "entries")
        if step != logged:
            extras["source_step"] = logged
        writer.step(StepRecord(step=step, rollout=rollout, first_in_rollout=first, metrics=metrics,
                               has_tokens=has_tokens, **extras))
        count += 1
    if count == 0:
        raise LogError(str(src), "no entries: nothing to import", field="entries")
    gaps = {b - a for a, b in zip(first_flags, first_flags[1:] + [count])}
    steps_per_rollout = gaps.pop() if len(gaps) == 1 else None
    prefix = f"Imported from UNIPO's log format ({src.name}) by `unipo import unipo`."
    writer.finish(steps_per_rollout=steps_per_rollout, notes=notes.text(prefix))
    return writer.header
