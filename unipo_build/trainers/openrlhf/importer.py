"""Import OpenRLHF's TensorBoard scalars (``--logger.tensorboard_dir``) into a canonical run.

OpenRLHF 0.11 writes, per global step, ``train/<name>`` for every entry of its status dict
(``TensorboardLogger.log_train``) and ``eval/<name>`` after an evaluation (``log_eval``). One
global step is one rollout and the training on it: the values are means over that rollout's
gradient updates, so each global step becomes one canonical step (``rollout`` = its index,
``first_in_rollout`` true, ``steps_per_rollout`` unknown). Steps are numbered 0, 1, ... in
global-step order; the global step is kept as ``source_step``.

Scalar names (the ``train/`` prefix dropped) are mapped onto the metric catalogue by
``common.METRIC_ALIASES``:

========================================  =========================================
reward                                    reward/mean
policy_loss                               loss/policy (and objective = -policy_loss)
critic_loss                               loss/value
kl                                        kl/mean
entropy_loss (OpenRLHF's mean entropy)    entropy/mean
response_length                           length/mean
actor_lr                                  lr
dynamic_filtering_pass_rate (percent)     sampling/pass_rate (a fraction)
========================================  =========================================

``ppo_clip_ratio`` (the fraction of clipped tokens, both sides together: OpenRLHF does not
split it into low and high, which is what the catalogue's clip/frac_low and clip/frac_high
are) and every other scalar keep their own names. ``time/wall_s`` is derived from the events'
wall times. ``eval/<name>`` scalars are kept as metrics ``eval/<name>`` on the step with the
same global step; when the evaluation reports ``eval_num_samples`` it also becomes an
EvalRecord (``accuracy_sampled`` = ``eval_pass1``, or OpenRLHF 0.11.2's ``eval_<datasource>_pass1``
when there is one datasource: the mean reward, when it lies in [0, 1];
``mean_length`` = ``eval_response_length_mean``). Scalars at a global step without training
scalars are kept in the header under ``unmatched_scalars``.

There is no token-level detail in TensorBoard. The algorithm is not recorded either: pass
``--algorithm`` (a spec id) to attach its resolved components, otherwise the run's algorithm
is 'unknown' with algorithm_config null.

With ``--tap DIR`` (a run started by ``unipo train --engine openrlhf``, which loads the UNIPO token
tap into OpenRLHF's workers), the tap's manifest supplies the algorithm and the components OpenRLHF
actually ran, and its shards give sampled steps token-level detail: see
``unipo_build.trainers.openrlhf.convert`` for that mapping.
"""

from __future__ import annotations

import math
from datetime import datetime, timezone
from pathlib import Path

from unipo_build.core.runlog import LogError, RunWriter
from unipo_build.core.schema import EvalRecord, ModelInfo, RewardInfo, RunHeader, StepRecord, TaskInfo
from unipo_build.trainers import common as K
from unipo_build.trainers.tfevents import EventFileError, ReadStats, event_files, read_scalars
from unipo_build.trainers.trainer_config import algorithm_gaps


def _collect(src: Path, notes: K.Notes) -> tuple[dict[str, dict[int, tuple[float, float]]], list[Path]]:
    """tag -> global step -> (wall time, value); a later event of the same tag and step wins."""
    files = event_files(src)
    if not files:
        raise LogError(str(src), "no TensorBoard event files (events.out.tfevents.*) here")
    stats = ReadStats()
    series: dict[str, dict[int, tuple[float, float]]] = {}
    for path in files:
        try:
            for s in read_scalars(path, stats):
                previous = series.setdefault(s.tag, {}).get(s.step)
                if previous is None or s.wall_time >= previous[0]:
                    series[s.tag][s.step] = (s.wall_time, s.value)
        except EventFileError as err:
            raise LogError(str(err.path), f"record at byte {err.offset}: {err.message}") from None
        except OSError as err:
            raise LogError(str(path), f"cannot read: {err}") from None
    for path in stats.truncated:
        notes.add(f"the last record of {Path(path).name} is cut off (run still writing?) and was ignored")
    for kind, count in sorted(stats.skipped_values.items()):
        notes.add(f"{kind} summaries skipped", count)
    if not series:
        raise LogError(str(src), "the event files hold no scalars")
    return series, files


def _pass1(values: dict[str, float], notes: K.Notes) -> float | None:
    """OpenRLHF 0.11.2 logs eval_<datasource>_pass1 per datasource ('default' when the prompts have no
    datasource field). A plain eval_pass1 is taken as it is; one datasource gives the run's pass@1."""
    if "eval_pass1" in values:
        return values["eval_pass1"]
    found = {k: v for k, v in values.items() if k.startswith("eval_") and k.endswith("_pass1")}
    if len(found) == 1:
        (key, value), = found.items()
        notes.once(f"accuracy_sampled = {key} (the mean reward of the held-out samples)")
        return value
    if found:
        notes.once("several eval datasources: no single accuracy_sampled (their pass1 kept under scalars)")
    return None


def _tap_description(tap_data) -> dict:
    """Header fields from the tap's manifest: what was asked for, what ran, with what, and how."""
    if tap_data is None or tap_data.manifest is None:
        return {}
    m = tap_data.manifest
    options = m.get("options") or {}
    described = {}
    if options.get("run_name"):
        described["run_id"] = options["run_name"]
    if options.get("prompts"):
        described["task"] = TaskInfo(name=f"prompts of {options['prompts']}", source=str(options["prompts"]))
    if options.get("model"):
        described["model"] = ModelInfo(name=str(options["model"]), checkpoint=str(options["model"]))
    if options.get("reward_file"):
        described["reward"] = RewardInfo(description=f"reward_func of {options['reward_file']}, loaded by OpenRLHF")
    if m.get("algorithm"):
        described["title"] = f"{m['algorithm']} on OpenRLHF {m.get('openrlhf_version', '')}".strip()
    return {**described,
        "hyperparameters": {k: v for k, v in options.items() if v is not None},
        "seed": options.get("seed"),
        "openrlhf": {"version": m.get("openrlhf_version"), "gaps": m.get("gaps", []),
                     "requested_config": m.get("requested_config"), "notes": m.get("notes", []),
                     "argv": m.get("argv")},
    }


def import_openrlhf(src: Path, stage: Path, *, algorithm: str | None = None, run_id: str | None = None,
                    max_new_tokens: int | None = None, tap: Path | None = None) -> RunHeader:
    """Write the canonical run of the OpenRLHF TensorBoard logs under ``src`` into ``stage``."""
    notes = K.Notes()
    tap_data = None
    if tap is not None:
        from unipo_build.trainers.openrlhf.convert import read_tap

        tap_data = read_tap(tap, notes)
        manifest = tap_data.manifest
        if manifest is None:
            notes.add("the tap directory has no manifest.json: pass --algorithm for the components")
        elif algorithm is None:
            algorithm = manifest.get("algorithm")
    series, files = _collect(src, notes)
    train_tags = [t for t in series if t.startswith("train/")]
    eval_tags = [t for t in series if t.startswith("eval/")]
    other_tags = [t for t in series if t not in train_tags and t not in eval_tags]
    step_tags = train_tags or other_tags
    if not step_tags:
        raise LogError(str(src), "only eval/ scalars: no training steps to import")
    global_steps = sorted({g for t in step_tags for g in series[t]})
    index = {g: i for i, g in enumerate(global_steps)}
    walls = [w for t in series.values() for (w, _) in t.values()]
    start = min(walls)

    loc = K.Loc(str(src))
    specs = K.known_specs(notes)
    config, name = None, algorithm or "unknown"
    effective = None
    differ: list = []
    option = None
    if tap_data is not None and tap_data.manifest is not None:
        from unipo_build.trainers.openrlhf.convert import effective_config

        effective = effective_config(tap_data, str(Path(tap) / "manifest.json"))
    if effective is not None and algorithm == tap_data.manifest.get("algorithm"):
        # What OpenRLHF ran, resolved when the command was built (budget included).
        config, name = effective, tap_data.manifest.get("algorithm", name)
        for gap in tap_data.manifest.get("gaps", []):
            notes.once(f"approximation trained (OpenRLHF cannot express the spec): {gap.get('slot')}: "
                       f"{gap.get('nearest')}")
    elif algorithm is not None:
        spec_id = K.match_spec(algorithm, specs)
        if spec_id is not None:
            name = spec_id
            config = K.resolve_for_import(specs[spec_id], {}, max_new_tokens, loc, notes, hparams_field=False)
            # what OpenRLHF ran (the tap's command) against the spec shown: every slot that differs is a gap
            ran = ({slot: c.model_dump() for slot, c in effective.components.items()} if effective is not None
                   else {})
            shown = {slot: c.model_dump() for slot, c in config.components.items()}
            differ = algorithm_gaps("openrlhf", ran, shown, spec_id, [])
            for gap in differ:
                notes.once(f"OpenRLHF ran {gap.slot} {gap.value} where the run card shows --algorithm {gap.nearest}")
            option = {"spec": spec_id, "settings": "compared" if ran else "not recorded"}
    if config is None:
        notes.add(f"algorithm {name!r}: not one of ours ({', '.join(sorted(specs))}), algorithm_config is null"
                  if algorithm else "algorithm unknown (TensorBoard does not record it; pass --algorithm)")

    per_step: list[dict[str, float | None]] = [{} for _ in global_steps]
    step_wall = [start] * len(global_steps)
    unmatched: dict[str, list[list[float]]] = {}
    for tag, points in series.items():
        short = tag.removeprefix("train/") if tag in train_tags else tag
        for g, (wall, value) in sorted(points.items()):
            if g not in index:
                unmatched.setdefault(tag, []).append([g, value if math.isfinite(value) else None])
                continue
            i = index[g]
            if tag in step_tags:
                step_wall[i] = max(step_wall[i], wall)
            loc_step = K.Loc(str(src), step=g)
            mapped = K.map_metrics({short: value}, loc_step, notes) if tag in train_tags else \
                {tag: value if math.isfinite(value) else None}
            for key, v in mapped.items():
                if key in per_step[i] and key != short:
                    per_step[i][short] = v  # two sources of one catalogue name: keep the second by its own
                else:
                    per_step[i][key] = v
    if unmatched:
        notes.add("scalars at global steps without training scalars kept in the header (unmatched_scalars)")

    described = _tap_description(tap_data)
    header = RunHeader(
        run_id=K.check_run_id(run_id or described.pop("run_id", None) or K.run_id_from(Path(src).resolve())),
        algorithm=K.algorithm_id(name, notes),
        algorithm_config=config,
        **{"title": f"{name} (imported from OpenRLHF TensorBoard logs)",
           "task": TaskInfo(name="unknown (TensorBoard does not record it)", source=str(src)),
           "reward": RewardInfo(description="unknown (TensorBoard does not record it)"),
           "model": ModelInfo(name="unknown (TensorBoard does not record it)"), **described},
        engine="openrlhf",
        created_at=datetime.fromtimestamp(start, tz=timezone.utc),
        finished_at=datetime.fromtimestamp(max(walls), tz=timezone.utc),
        imported_from={"format": "openrlhf", "path": str(src),
                       "files": [{"path": str(p), "sha256": K.sha256_file(p)} for p in files],
                       **({"gaps": [g.as_dict() for g in differ]} if differ else {}),
                       **({"algorithm_option": option} if option else {})},
        **({"unmatched_scalars": unmatched} if unmatched else {}),
    )
    writer = RunWriter(stage, header, durable=False)
    notes.once("one step per OpenRLHF global step (a rollout; its values are means over that rollout's updates)")
    notes.once("time/wall_s from the events' wall times")
    details = {}
    if tap_data is not None:
        from unipo_build.trainers.openrlhf.convert import step_details

        details = step_details(tap_data, config, notes)
        beyond = [r for r in details if r >= len(global_steps)]
        if beyond:
            notes.add("tapped rollouts without a TensorBoard step (ignored)", len(beyond))
    evals = []
    for i, g in enumerate(K.progress(global_steps, desc="importing OpenRLHF steps")):
        metrics = per_step[i]
        if metrics.get("objective") is None and metrics.get("loss/policy") is not None:
            metrics["objective"] = -metrics["loss/policy"]
            notes.once("metric objective = -policy_loss")
        metrics.setdefault("time/wall_s", step_wall[i] - start)
        extras = {"source_step": g} if g != i else {}
        detail = details.get(i)
        if detail is not None:
            # The token file's J is that of its own responses (their weights are computed over them), so
            # the inspector's groups add up to it; TensorBoard's objective, a mean over the rollout's
            # updates of every group, stays the step's metric.
            objective = sum(grp.contribution for grp in detail.groups)
            if metrics.get("objective") is None:
                metrics["objective"] = objective
                notes.once("step objective = sum of the tapped groups' contributions where TensorBoard has none")
            notes.once("a token file's step objective = the sum of its tapped groups' contributions (the step's "
                       "objective metric is TensorBoard's, over all groups and updates)")
            writer.step_detail(detail.model_copy(update={"objective": objective}))
        writer.step(StepRecord(step=i, rollout=i, first_in_rollout=True, metrics=metrics,
                               has_tokens=detail is not None, **extras))
        values = {k.removeprefix("eval/"): v for k, v in metrics.items() if k.startswith("eval/") and v is not None}
        n = values.get("eval_num_samples")
        if n is not None and n >= 1:
            done = i + 1
            pass1 = _pass1(values, notes)
            evals.append(EvalRecord(
                step=done, phase="end" if done == len(global_steps) else "periodic", n=int(n),
                accuracy_sampled=pass1 if pass1 is not None and 0 <= pass1 <= 1 else None,
                mean_length=values.get("eval_response_length_mean"), scalars=values))
    for record in evals:
        writer.eval(record)
    if evals:
        notes.add("evaluations with eval_num_samples kept as EvalRecords (accuracy_sampled = the pass1 of the "
                  "single eval datasource)")
    prefix = f"Imported from OpenRLHF TensorBoard scalars ({len(files)} event file(s)) by `unipo import openrlhf`."
    writer.finish(notes=notes.text(prefix))
    return writer.header
