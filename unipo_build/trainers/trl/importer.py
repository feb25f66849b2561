"""Import a run of TRL's GRPOTrainer (TRL 1.16) and its UNIPO token tap into a canonical run.

``unipo import trl OUTPUT_DIR --tap TAP_DIR --out RUN``

- ``OUTPUT_DIR/trainer_state.json`` (``Trainer.save_state()``; else the newest
  ``checkpoint-N/trainer_state.json``): its ``log_history`` holds one entry per logged optimizer step
  (``Trainer.log``, with GRPOTrainer's metrics averaged over the step's micro-batches) and a last
  summary entry (``train_runtime``, ``train_loss``). Each logged step becomes one canonical step,
  numbered 0, 1, ... in order; TRL's global step (from 1) is kept as ``source_step``. Use
  ``logging_steps=1`` so that every optimizer step is there.
- ``TAP_DIR`` (``unipo_build.trainers.trl.tap.TrlTokenTap``): ``manifest.json`` (TRL version, GRPOConfig) and
  ``shard-rank*.jsonl`` (generation and update records). Without ``--tap`` the run has metrics only
  and, unless ``--algorithm`` names a spec, algorithm_config null.

Metric names: ``reward`` -> reward/mean, ``reward_std`` -> reward/std, ``kl`` -> kl/mean, ``entropy``
-> entropy/mean, ``completions/mean_length`` -> length/mean, ``completions/clipped_ratio`` ->
length/truncated_frac, ``clip_ratio/low_mean`` -> clip/frac_low, ``clip_ratio/high_mean`` ->
clip/frac_high, ``frac_reward_zero_std`` -> groups/zero_variance_frac, ``learning_rate`` -> lr,
``loss`` -> loss/policy (objective = -loss); every other name is kept as logged.

Evaluations (``Trainer.evaluate``: entries of eval_ metrics only, :func:`_is_evaluation`) are no training steps:
their metrics join the logged step they were made at (else the first logged step after it), and the one before
training (TRL's step 0, eval_on_start) is the header's ``pre_training_metrics``. TRL 1.16 logs an evaluation's means
only; the one file it writes per completion (log_completions: ``completions/completions_<step>.parquet``, each reward
function's value per completion) is written from buffers of one generation batch, so an evaluation's file replaces
the training file of its step and holds the last generation_batch_size completions made, none marked as the
evaluation's. No EvalRecord is made of them, and the notes say a held-out change between them could only be unpaired.

The algorithm is derived from the GRPOConfig the tap recorded (:func:`trl_components`): loss_type
gives the aggregation (grpo and sapo: mean per response then over responses; dapo and cispo: one token
mean over the generation batch; dr_grpo: sum over G x max_completion_length; bnpo: token mean, with gradient accumulation
micro_token_mean, a token mean per micro-batch of per_device_train_batch_size completions; luspo:
sum per response, mean over responses) and the clip slot's form (:func:`trl_clip`: PPO's clip from
epsilon / epsilon_high; cispo: the ``cispo`` kind, no lower bound, eps_high = epsilon_high - 1, since
TRL caps the weight at epsilon_high itself; sapo: the ``sapo`` kind with sapo_temperature_pos / _neg),
scale_rewards the advantage (group: group z-score with sample std and TRL's 1e-4; none: group mean;
batch: ``group_mean_batch_std``, the group's mean over the whole batch's sample std + 1e-4),
mask_truncated_completions the filter (``mask_truncated``, count_masked true for grpo, dr_grpo and sapo,
false for bnpo, dapo and cispo; with luspo a gap), importance_sampling_level the ratio and beta the KL (k3 in the loss, as TRL computes it). The run's
algorithm is the nearest spec (``common.nearest_algorithm``: ``unipo explain``'s rule) when it has all
of these kinds, else ``trl-<loss_type>`` with that nearest spec in the notes. A setting the registry
has no kind for is named with the nearest kind in the header (``imported_from.gaps``,
:class:`unipo_build.core.matching.Gap`) and the notes, and the import goes on with the nearest; a
loss_type with no kind (vespo) stops the import unless ``--algorithm`` names the spec to view it against.

vLLM's importance-sampling correction (use_vllm with vllm_importance_sampling_correction) is the
``truncated_is`` or ``masked_is`` correction (:func:`trl_correction`) when the tap holds the sampling
log-probs of every tapped completion (recomputed from them; TRL's own weight kept as
``engine_correction_weight``); without them it is a gap and the header's ``missing`` names them
(:func:`sampler_missing`): no weight is invented.

CISPO's value: TRL writes its per-token loss as the MiniMax-M1 paper does, -sg(w) A log pi, while the
registry's cispo kind has the value sg(w / rho) rho A = w A; the gradients are the same (w A grad log pi).
The token files hold the kind's objective; each is compared with TRL's per-token loss in TRL's form
(:func:`trl_token_loss`), and each step's token file holds ``objective_in_trl_form`` (the recomputation
in TRL's form, minus TRL's loss to 1e-6) beside its ``objective_differs`` saying why the two parts.

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
from collections import defaultdict
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np

from unipo_build.core import objective as O
from unipo_build.core import registry
from unipo_build.core.matching import Gap
from unipo_build.core.numbers import plain_num, plain_sci
from unipo_build.core.runlog import LogError, RunWriter
from unipo_build.core.schema import (
    GroupSummary,
    Hyperparameters,
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
from unipo_build.core.specs import REGISTRY, ResolvedAlgorithm
from unipo_build.trainers import common as K
from unipo_build.trainers.trl.config import _algorithm, cispo_weight_cap, sampler_missing, trl_token_loss
from unipo_build.trainers.trl.tap_files import Tap, cross_check, read_tap

STATE = "trainer_state.json"

TRL_METRICS = {
    "reward": "reward/mean", "reward_std": "reward/std", "kl": "kl/mean", "entropy": "entropy/mean",
    "completions/mean_length": "length/mean", "completions/clipped_ratio": "length/truncated_frac",
    "clip_ratio/low_mean": "clip/frac_low", "clip_ratio/high_mean": "clip/frac_high",
    "frac_reward_zero_std": "groups/zero_variance_frac", "learning_rate": "lr", "grad_norm": "grad_norm",
    "loss": "loss/policy", "cispo_clip_ratio": "clip/frac_high",
}
SUMMARY_KEYS = ("train_runtime", "train_samples_per_second", "train_steps_per_second", "train_loss", "total_flos")


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


def _is_evaluation(entry: dict) -> bool:
    """A log_history entry that ``Trainer.evaluate`` wrote: nothing but eval_ metrics (beside step and epoch)."""
    keys = [k for k in entry if k not in ("step", "epoch")]
    return bool(keys) and all(str(k).startswith("eval_") for k in keys)


def _log_history(path: Path, notes: K.Notes) -> tuple[dict[int, dict], dict, dict]:
    """TRL global step -> merged log entries; the summary entry; and the metrics of an evaluation before the first
    update (TRL's step 0: eval_on_start), for the header's pre_training_metrics.

    An evaluation (:func:`_is_evaluation`) is no training step: its eval_ metrics join the logged step it was made
    at, else the first logged step after it (the logging window it fell in; the last logged step if none is)."""
    try:
        state = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise LogError(str(path), f"not JSON: {err}") from None
    history = state.get("log_history") if isinstance(state, dict) else None
    if not isinstance(history, list):
        raise LogError(str(path), "no log_history list: not a Trainer state file", field="log_history")
    steps: dict[int, dict] = {}
    evaluations: dict[int, dict] = {}
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
        (evaluations if _is_evaluation(entry) else steps).setdefault(entry["step"], {}).update(values)
    if not steps:
        raise LogError(str(path), "log_history holds no training step (was the state saved before training?)",
                       field="log_history")
    before: dict = {}
    for step, values in sorted(evaluations.items()):
        values = {k: v for k, v in values.items() if k.startswith("eval_")}
        if step == 0:
            before = {k: float(v) for k, v in values.items() if v is not None and math.isfinite(v)}
            continue
        joins = step if step in steps else min((s for s in steps if s > step), default=max(steps))
        for key, value in values.items():
            steps[joins].setdefault(key, value)
    if evaluations:
        notes.once(f"TRL's evaluations (log_history's eval_ entries at TRL step{'s' if len(evaluations) > 1 else ''} "
                   f"{', '.join(map(str, sorted(evaluations)))}) are means only (eval_reward, "
                   "eval_rewards/<function>/mean): TRL keeps no result per problem of an evaluation (log_completions' "
                   "file of its step holds the last generation batch of completions, scored per reward function, "
                   "none marked as the evaluation's), so they are kept as metrics"
                   + (" (the one before training in the header's pre_training_metrics)" if 0 in evaluations else "")
                   + " with the step they follow, not as held-out evaluations, and a held-out change between two "
                   "of them could only be unpaired")
    return steps, summary, before


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
    # CISPO: TRL's loss is the paper's sg(w) A log pi, the kind's value w A (same gradient). The kind's share of a
    # row without token detail is the tap's row_value_loss; TRL's form is kept beside ours to compare with its loss.
    # (the clip kind TRL's loss_type selects, whose value TRL writes in the paper's form: Kind.paper_form)
    paper = registry.paper_form_kind("trl", "clip", "loss_type", tap.manifest["trainer"].get("loss_type"))
    cispo = paper is not None and cfg is not None and cfg.kind("clip") == paper
    beta = float(cfg.param("kl", "beta") or 0.0) if cfg is not None and REGISTRY["kl"][cfg.kind("kl")].kl_place == "loss" else 0.0
    value_share, trl_form = {}, {}
    for u in sorted(updates, key=lambda u: u["micro_step"]):
        for i, row in enumerate(u["rows"]):
            order.append(row)
            loss_tokens[row] = u["loss_tokens"][i]
            if u.get("row_loss") is not None:
                engine_share[row] = -u["row_loss"][i]
                if cispo and (u.get("row_value_loss") or [None] * (i + 1))[i] is not None:
                    value_share[row] = -u["row_value_loss"][i]
                engine_weight[row] = u["row_weight"][i]
        for s in u["samples"]:
            trained[s["row"]] = s
    # mask_truncated: TRL zeroed a truncated row's loss tokens (completion_mask); the filter is given its
    # max_completion_length tokens and its flag, and masks it itself, counting it in the normaliser or not
    truncated = (np.array([bool(rows[row].get("truncated")) for row in order])
                 if cfg is not None and O.masks_responses(cfg) else None)
    budget = int(tap.manifest["trainer"].get("max_completion_length") or 0) if truncated is not None else 0
    width = max(1, max(loss_tokens.values()), budget)
    full_mask = np.zeros((len(order), width))
    for k, row in enumerate(order):
        full_mask[k, : budget if truncated is not None and truncated[k] else loss_tokens[row]] = 1.0
    position = {row: k for k, row in enumerate(order)}
    weights = (np.asarray(O.weights(cfg, full_mask, truncated=truncated)) if cfg is not None
               else full_mask / max(1.0, full_mask.sum()))

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
                                    ref_logp=s.get("ref_logp"), sample_logp=s.get("sampling_logp"),
                                    truncated=bool(rows[row].get("truncated")), mask=mask,
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
        if u.get("is_weight") is not None:  # the correction's weight TRL multiplied the policy loss by
            extras["engine_correction_weight"] = u["is_weight"][:n]
        live = [k for k in range(n) if mask[k]]
        gaps_ratio = max(gaps_ratio, max((abs(out.ratio[k] - u["ratio"][k]) for k in live), default=0.0))
        # what TRL's per-token loss is, written from our recomputation (minus the objective; CISPO: TRL's form)
        ours_as_trl = -trl_token_loss("cispo" if cispo else "", objective, out.kl, beta, t.logp)
        trl_form[row] = float(np.sum(np.asarray(w) * ours_as_trl))
        gaps_obj = max(gaps_obj, max((abs(ours_as_trl[k] - engine_obj[k]) for k in live), default=0.0))
        tokens = TokenArrays(ids=t.ids, text=t.text, logp=t.logp, old_logp=t.old_logp, ref_logp=t.ref_logp,
                             advantage=t.advantage, kl=out.kl, ratio=out.ratio, clip=out.clip, entropy=t.entropy,
                             weight=w, objective=objective, mask=mask, **extras)
        if not all(mask):
            notes.once("tokens outside TRL's loss mask (mask 0) keep the log-probabilities TRL's tensors hold "
                       "(0 for a completion masked as truncated: TRL does not attend to it); their ratio, clip "
                       "side, objective and weight are 0")
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
            if cispo and all(row in value_share for row in members):
                contribution = float(sum(value_share[row] for row in members))
                notes.add("groups without token detail: their share of the objective is TRL's own per-row loss, in "
                          "the cispo kind's value (the tap's row_value_loss)")
            else:
                contribution = float(sum(engine_share.get(row, 0.0) for row in members))
                notes.add("groups without token detail: their share of the objective is TRL's own per-row loss"
                          + (" in TRL's form (the tap has no row_value_loss)" if cispo else ""))
            detailed = []
        groups.append(GroupSummary(index=g, size=len(members), reward_mean=float(np.mean(rewards)) if rewards else None,
                                   contribution=contribution, detailed=bool(detailed)))
        if detailed:
            prompt = samples[members[0]].get("prompt", "")
            prompts.append(PromptGroup(index=g, prompt=prompt, contribution=contribution, responses=detailed))
    objective = float(sum(g.contribution for g in groups))
    trl_loss = float(sum(u["loss"] / u.get("num_processes", 1) for u in updates))
    extras = {}
    if cispo:
        # minus TRL's loss, recomputed in TRL's form: the tapped rows' tokens, TRL's own share for the others
        detailed_rows = {r.source_row for p in prompts for r in p.responses}
        extras["objective_in_trl_form"] = float(sum(trl_form[row] if row in detailed_rows else engine_share.get(row, 0.0)
                                                    for row in order))
        gaps_seen["step objective in TRL's form"] = max(gaps_seen.get("step objective in TRL's form", 0.0),
                                                        abs(extras["objective_in_trl_form"] + trl_loss))
    if abs(objective + trl_loss) > OBJECTIVE_ATOL * (1.0 + abs(trl_loss)):
        extras["objective_differs"] = objective_reason(tap.manifest["trainer"], gaps_seen.get("gaps", []),
                                                       extras.get("objective_in_trl_form"), trl_loss)
    return StepDetail(step=index, rollout=rollout, objective=objective, groups=groups, prompts=prompts,
                      trl_loss=trl_loss, trl_objective=-trl_loss, **extras)


#: The token file's step objective and minus TRL's loss agree to this (x (1 + |loss|)) where TRL's convention has
#: kinds: both are float64 sums of the same float32 terms (tests/test_trl_run.py holds them to 1e-6).
OBJECTIVE_ATOL = 1e-6

#: The gaps that make the token file's objective another number than TRL's loss (the tokens carry TRL's own
#: advantages, so an advantage gap does not).
OBJECTIVE_SLOTS = ("aggregation", "filter", "kl", "ratio", "clip")


#: Why a CISPO step's two objectives part although every term agrees.
CISPO_FORM = ("TRL writes CISPO's per-token loss as the MiniMax-M1 paper does, -sg(w) A log pi, whose value is log pi "
              "times the registry kind's w A (the gradient, w A grad log pi, is the same): the token file's objective "
              "is the kind's, and objective_in_trl_form is the same recomputation in TRL's form")


def objective_reason(trainer: dict, gaps: list[Gap], in_trl_form: float | None = None,
                     trl_loss: float | None = None) -> str:
    """Why a step's objective in the token file is not minus TRL's loss: what each one is, and the settings.
    A CISPO step whose recomputation in TRL's form (``in_trl_form``) is minus ``trl_loss`` parts for that
    reason alone."""
    gas = int(trainer.get("gradient_accumulation_steps") or 1)
    settings = [f"{g.setting} = {g.value}" for g in gaps if g.slot in OBJECTIVE_SLOTS]
    if in_trl_form is not None and trl_loss is not None:
        if abs(in_trl_form + trl_loss) <= OBJECTIVE_ATOL * (1.0 + abs(trl_loss)):
            return CISPO_FORM + f" ({plain_num(float(in_trl_form), 9)}, minus TRL's loss to {plain_num(float(OBJECTIVE_ATOL))})"
        return (CISPO_FORM + f"; in TRL's form it is {plain_num(float(in_trl_form), 9)} against minus TRL's loss {plain_num(float(-trl_loss), 9)}"
                + (": they part where TRL's settings have no kind: " + "; ".join(settings) if settings else ""))
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
    logged, summary, before = _log_history(state_path, notes)
    tap_data = read_tap(Path(tap), notes) if tap is not None else None
    compared = cross_check(tap_data, logged, state_path, notes) if tap_data else None
    cfg, name, gaps, option = _algorithm(tap_data, algorithm, max_new_tokens, K.Loc(str(state_path)), notes)
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
    reward = ("TRL reward functions: " + ", ".join(f"{f} x {plain_num(float(w))}" for f, w in zip(funcs, weights))
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
        **({"missing": missing} if (missing := sampler_missing(tap_data, notes)) else {}),
        imported_from={"format": "trl", "path": str(src),
                       "files": [{"path": str(p), "sha256": K.sha256_file(p)} for p in files],
                       **({"gaps": [g.as_dict() for g in gaps]} if gaps else {}),
                       **({"weight_cap": cap} if tap_data and (cap := cispo_weight_cap(trainer)) else {}),
                       **({"algorithm_option": option} if option else {})},
        **({"pre_training_metrics": before} if before else {}),
        trl={"version": tap_data.manifest.get("trl_version") if tap_data else None,
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
                       + ", ".join(f"{k} {plain_sci(v, 2)}" for k, v in largest.items()))
        worst = max(differ, default=None)
        header_trl = writer.header.trl
        # TRL's cispo loss is the paper's form of the kind it selects (CISPO_FORM says why they differ)
        paper = registry.paper_form_kind("trl", "clip", "loss_type", trainer.get("loss_type"))
        paper_form = paper is not None and cfg is not None and cfg.kind("clip") == paper
        header_trl["objectives"] = {
            "steps": details, "differ": len(differ), "max_difference": worst[0] if worst else 0.0,
            "at_step": worst[1] if worst else None,
            "reason": (CISPO_FORM if paper_form and not any(g.slot in OBJECTIVE_SLOTS for g in gaps)
                       else objective_reason(trainer, gaps)) if differ else None}
        if differ:
            notes.once(f"two objectives per step: the token file's (the run's components over the step) and "
                       f"steps.jsonl's (minus TRL's loss) differ on {len(differ)} of {details} steps, by up to "
                       f"{plain_num(float(worst[0]), 3)} (step {worst[1]}): each token file names why (objective_differs)")
    prefix = (f"Imported from TRL's trainer_state.json ({len(trl_steps)} logged steps)"
              + (f" and its UNIPO tap ({details} steps with token detail)" if tap_data else "")
              + " by `unipo import trl`.")
    writer.finish(notes=notes.text(prefix))
    return writer.header
