"""Facts of runs and specs, quoted inline by the chapters; the runs of the build.

Every number a chapter quotes comes from a macro, so a chapter stays true when the site is
rebuilt from other logs. Inline macros return plain text, which the macro binding escapes and
keeps out of Markdown's reach (``site.context``: a spec name or a run id shows as the characters
it is); ``runs_status`` and ``skipped_runs`` return HTML (a paragraph of their own). The held-out
verdicts and the run card are in ``verdicts``; sentences that say what the runs show (length
drift, entropy, clipping) are in ``claims``.

    {{ run_fact("grpo", "eval_end_greedy") }}          a number from the run's summary or header
                                                        (RUN_FACT_KEYS; ``digits`` significant digits,
                                                        accuracies as percentages)
    {{ moment_fact("grpo", "all_correct_group") }}      where a teaching moment is (``field``: step,
                                                        group, response, token or value)
    {{ metric_fact("grpo", "groups/zero_variance_frac", "last", percent=True) }}
                                                        a metric's mean over the first/last tenth
    {{ runs_setup() }}                                  what the runs of the build share, where they differ
    {{ hybrid_status() }}                               whether the build pairs dynamic sampling with a
                                                        constant normaliser
    {{ clip_ceiling(0.01, "dapo") }}                    how far one rollout's clip lets a token rise
    {{ spec_param("dapo", "clip", "eps_high") }}        a component parameter (a run's resolved one with run=)
    {{ uniform_group_chance(p, G) }}                    P(a group of G answers is all right or all wrong)
    {{ runs_status() }} / {{ skipped_runs() }}          the runs of the build; those skipped and why

A run is named by its id, its directory name or its algorithm id (``runs.RunCatalog.get``). A run
that is not in the build gives a note ("no ... run in this build"), never a failed build; an
unknown fact key, moment, metric or beat is an author's error (``AuthorError``) and stops the build.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from unipo_build.core import runs as runs_module
from unipo_build.core.moments import MOMENT_NAMES, Moment, find_moments
from unipo_build.core.runs import Run
from unipo_build.core.schema import METRICS
from unipo_build.core.specs import SLOTS
from unipo_build.core.summary import summarize
from unipo_build.core.numbers import fmt_num, fmt_pct, plain_num
from unipo_build.site.fmt import join_words
from unipo_build.site.facts.series import edge_means, logged_values, mean_se, raw_series
from unipo_build.site.context import AuthorError, Site, macro

#: The five algorithms the course is about; comparisons show them by default (and say when one
#: has no run in the build), then any other run in the build.
COURSE_ALGORITHMS = ("reinforce", "ppo", "grpo", "dapo", "dr_grpo")

#: Members of the family that a chapter of their own compares with the algorithm they change (its
#: docs path): the figures that draw every algorithm at once (seed bands) leave them out and link
#: there, so that the course's algorithms are not lost among a dozen lines.
# kind name: keyed by algorithm (spec) ids, not kinds; cispo, dual_clip and sapo are also their clip kinds' names
OWN_CHAPTER = {
    "cispo": "course/algorithms/cispo.md",
    "dual_clip": "course/algorithms/cispo.md",
    "sapo": "course/algorithms/beyond_grpo.md",
    "gmpo": "course/algorithms/beyond_grpo.md",
    "grpo_batch_std": "course/algorithms/beyond_grpo.md",
}


#: The sampler/learner mismatch of an update: mean |log π_train − log π_sample| over its tokens.
MISMATCH = "mismatch/logp_abs_mean"


def mean_mismatch(run: Run) -> tuple[float, float | None] | None:
    """A run's sampler/learner log-prob gap (:data:`MISMATCH`) averaged over its logged updates,
    with the standard error of that mean (None from one update); None when the run does not log
    it. The clip chapter's precision sentence and the sampler chapter quote it."""
    values = logged_values(run, MISMATCH)
    return mean_se(values) if len(values) else None


def missing_run_text(run: str | Run) -> str:
    name = run.id if isinstance(run, Run) else str(run)
    return f"(no {name} run in this build)"


def run_summary(run: Run) -> dict:
    return summarize(run.path, with_moments=False)


def course_runs(site: Site, runs: Sequence[str] | None = None) -> tuple[list[Run], list[str]]:
    """The runs a comparison shows, and the names asked for that are not in the build.

    ``runs=None``: the chosen run of each of :data:`COURSE_ALGORITHMS`, then every other loaded
    run's algorithm (a hybrid, a reader's own algorithm) with its chosen run, in the order found;
    not the ablation ladder's rungs (``Site.ablation_ids``), which the ladder figure shows, nor the
    runs sampled by a stale policy (a variant ``grpo@lag8``), which the chapter on the sampler and
    the learner compares against their synchronous runs.
    """
    names = list(COURSE_ALGORITHMS) if runs is None else [str(r) for r in runs]
    found: list[Run] = []
    missing: list[str] = []
    for name in names:
        run = site.run(name)
        if run is None:
            missing.append(name)
        elif all(run.path != r.path for r in found):
            found.append(run)
    if runs is None:
        rungs = site.ablation_ids()  # the ablation ladder's runs have a page of their own
        for chosen in site.catalog.chosen_each(skip=rungs):
            if all(chosen.path != r.path for r in found) and chosen.variant == chosen.header.algorithm:
                found.append(chosen)
    return found, missing


# ---------------------------------------------------------------------------
# run_fact
# ---------------------------------------------------------------------------

RUN_FACT_KEYS = {
    "steps": "gradient updates logged",
    "rollouts": "rollouts (sampling phases)",
    "reward_first": "mean training reward over the first 10% of updates",
    "reward_last": "mean training reward over the last 10% of updates",
    "eval_start_greedy": "held-out greedy accuracy before training (%)",
    "eval_end_greedy": "held-out greedy accuracy after training (%)",
    "eval_start_sampled": "held-out sampled accuracy before training (%)",
    "eval_end_sampled": "held-out sampled accuracy after training (%)",
    "eval_n": "number of held-out problems in the final evaluation",
    "wall_minutes": "wall-clock minutes of training",
    "parameters": "parameters of the policy",
    "seed": "random seed",
    "preset": "size preset",
    "lr": "policy learning rate",
    "group_size": "responses per prompt (G)",
    "prompts_per_step": "prompts per rollout",
    "epochs": "passes over each rollout",
    "minibatches": "minibatches (updates) per pass",
    "max_new_tokens": "generation budget in tokens",
    "temperature": "sampling temperature",
}
_PERCENT_KEYS = {"eval_start_greedy", "eval_end_greedy", "eval_start_sampled", "eval_end_sampled"}
_HYPER_KEYS = {"lr", "group_size", "prompts_per_step", "epochs", "minibatches", "max_new_tokens", "temperature"}


def run_fact_value(run: Run, key: str) -> Any:
    """The raw value of a fact (None when the log does not have it)."""
    if key not in RUN_FACT_KEYS:
        raise AuthorError(f"run_fact: unknown key {key!r} (known: {', '.join(RUN_FACT_KEYS)})")
    header = run.header
    if key in _HYPER_KEYS:
        return header.hyperparameters.get(key)
    if key == "parameters":
        return header.model.parameters
    if key == "seed":
        return header.seed
    if key == "preset":
        return header.preset
    summary = run_summary(run)
    if key in ("steps", "rollouts"):
        return summary[key]
    if key == "reward_first":
        return summary["reward_mean_first_10pct"]
    if key == "reward_last":
        return summary["reward_mean_last_10pct"]
    if key == "wall_minutes":
        wall = summary["wall_time_s"]
        return None if wall is None else wall / 60.0
    if key == "eval_n":
        end = summary["eval_end"]
        return None if end is None else end["n"]
    phase, mode = key.split("_")[1:3]
    record = summary["eval_start" if phase == "start" else "eval_end"]
    return None if record is None else record.get(f"accuracy_{mode}")


@macro(name="run_fact", with_site=False, run=True)
def run_fact_text(run: Run | None, name: str, key: str, digits: int = 3) -> str:
    """A number from a run's summary or header, as text (see RUN_FACT_KEYS)."""
    if key not in RUN_FACT_KEYS:
        raise AuthorError(f"run_fact: unknown key {key!r} (known: {', '.join(RUN_FACT_KEYS)})")
    if run is None:
        return missing_run_text(name)
    value = run_fact_value(run, key)
    if value is None:
        return f"(not in the {run.id} log)"
    if key in _PERCENT_KEYS:
        return fmt_pct(value, max(0, digits - 2))
    if key in ("preset",):
        return str(value)
    if key == "seed":
        return str(value)
    if key == "lr":
        return plain_num(float(value))
    return fmt_num(value, digits)


# ---------------------------------------------------------------------------


# ---------------------------------------------------------------------------
# moment_fact
# ---------------------------------------------------------------------------

MOMENT_WORDS = {
    "all_correct_group": "all-correct group",
    "all_wrong_group": "all-wrong group",
    "clipped_high": "token clipped on the high side",
    "clipped_low": "token clipped on the low side",
    "longest_wrong": "longest wrong answer",
    "max_kl_step": "step of largest KL",
    "filtered_group": "group dropped by the sampling filter",
    "ratio_max": "token whose ratio rose furthest",
    "ratio_min": "token whose ratio fell furthest",
    "mixed_group": "group with both right and wrong answers",
    "shared_prefix_group": "group with a net push on its shared opening tokens",
}
MOMENT_FIELDS = ("step", "group", "response", "token", "value")


def run_moment(run: Run, name: str) -> Moment | None:
    return find_moments(run.path).get(name)


@macro(name="moment_fact", with_site=False, run=True)
def moment_fact_text(run: Run | None, name: str, moment: str, field_name: str = "step") -> str:
    """Where a teaching moment is in a run: its step, group, response, token or value."""
    if moment not in MOMENT_NAMES:
        raise AuthorError(f"moment_fact: unknown moment {moment!r} (known: {', '.join(MOMENT_NAMES)})")
    if field_name not in MOMENT_FIELDS:
        raise AuthorError(f"moment_fact: unknown field {field_name!r} (known: {', '.join(MOMENT_FIELDS)})")
    if run is None:
        return missing_run_text(name)
    found = run_moment(run, moment)
    if found is None:
        return f"(the {run.id} run has no {MOMENT_WORDS.get(moment, moment)} in its logs)"
    value = getattr(found, field_name)
    if value is None:
        return f"(the {MOMENT_WORDS.get(moment, moment)} has no {field_name})"
    return fmt_num(value, 3) if field_name == "value" else str(value)


# ---------------------------------------------------------------------------
# family_tree


# ---------------------------------------------------------------------------
# Facts from metrics, specs and probability (so prose types no decimals)
# ---------------------------------------------------------------------------

@macro(name="metric_fact", with_site=False, run=True)
def metric_fact_text(run: Run | None, name: str, metric: str, when: str = "last", digits: int = 3,
                     percent: bool = False) -> str:
    """The mean of a metric over the first or last tenth of a run's points (rollout-level metrics:
    one point per rollout)."""
    if metric not in METRICS:
        raise AuthorError(f"metric_fact: unknown metric {metric!r} (known: {', '.join(METRICS)})")
    if when not in ("first", "last", "all"):
        raise AuthorError(f"metric_fact: when must be 'first', 'last' or 'all', not {when!r}")
    if run is None:
        return missing_run_text(name)
    _, y, _ = raw_series(run, metric)
    if len(y) == 0:
        return f"(not logged by the {run.id} run)"
    first, last = edge_means(y)
    value = first if when == "first" else last if when == "last" else float(np.mean(y))
    return fmt_pct(value, max(0, digits - 2)) if percent else fmt_num(value, digits)


@macro(name="clip_ceiling")
def clip_ceiling_text(site: Site, p: float, algorithm: str = "grpo") -> str:
    """How far one update's clip lets a token of probability p rise: p (1 + eps_high), as a %."""
    spec = site.spec(algorithm, "clip_ceiling")
    _, high = spec.component("clip").bounds(spec.params("clip"))
    if high is None:
        return "no ceiling (this algorithm does not clip)"
    ceiling = min(1.0, p * (1 + high))
    return fmt_pct(ceiling, 2 if ceiling < 0.1 else 1)


def spec_param_value(site: Site, algorithm: str, slot: str, name: str, run: Run | None = None) -> Any:
    """A component parameter: the run's resolved one when the run trained ``algorithm``, else the spec's."""
    spec = site.spec(algorithm, "spec_param")
    if slot not in SLOTS:
        raise AuthorError(f"spec_param: no slot {slot!r} (known: {', '.join(SLOTS)})")
    if run is not None and run.ok and run.header.algorithm == algorithm and run.config is not None:
        params = run.config.components[slot].params
        if name in params and params[name] is not None:
            return params[name]
    params = spec.params(slot)
    if name not in params:
        raise AuthorError(f"spec_param: {algorithm}'s {slot} ({spec.components[slot].kind}) has no parameter "
                          f"{name!r} (it has: {', '.join(sorted(params)) or 'none'})")
    return params[name]


def spec_param_text(value: Any) -> str:
    if value is None:
        return "(set from the run)"
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return str(value)
    return fmt_num(value, 4)


def uniform_group_chance_value(p: float, group_size: int) -> float:
    """P(all G answers right) + P(all wrong) for independent answers right with probability p."""
    if not 0.0 <= p <= 1.0 or group_size < 1:
        raise AuthorError(f"uniform_group_chance: need 0 <= p <= 1 and G >= 1, got p={p}, G={group_size}")
    return p ** group_size + (1.0 - p) ** group_size


def _rollouts_word(run: Run) -> int | str:
    """The run's rollouts; '70 of 100 so far' for a run still training."""
    progress = run.progress()
    if progress is None:
        return run_summary(run)["rollouts"]
    return f"{fmt_num(progress[0])} of {fmt_num(progress[1])} so far"


@macro(name="runs_setup")
def runs_setup_text(site: Site, runs: Sequence[str] | None = None) -> str:
    """A sentence on what the runs of this build share and where they differ."""
    found, missing = course_runs(site, runs)
    if not found:
        return "No runs are part of this build, so the figures below show notes instead of data."
    fields = [("the preset", lambda r: r.header.preset),
              ("the seed", lambda r: r.header.seed),
              ("the number of rollouts", _rollouts_word),
              ("G, the answers per prompt", lambda r: r.header.hyperparameters.get("group_size")),
              ("the prompts per rollout", lambda r: r.header.hyperparameters.get("prompts_per_step")),
              ("the generation budget", lambda r: r.header.hyperparameters.get("max_new_tokens")),
              ("the learning rate", lambda r: r.header.hyperparameters.get("lr"))]
    same, differ = [], []
    for words, get in fields:
        values = [get(r) for r in found]
        if all(v == values[0] for v in values):
            shown = "–" if values[0] is None else (plain_num(values[0]) if isinstance(values[0], float) else
                                                   fmt_num(values[0]) if isinstance(values[0], int) else str(values[0]))
            same.append(f"{words} ({shown})")
        else:
            detail = ", ".join(f"{site.run_label(r)} {fmt_num(v) if isinstance(v, int) else v}"
                               for r, v in zip(found, values))
            differ.append(f"{words} ({detail})")
    n = len(found)
    rungs = site.ablation_ids()
    more = sum(1 for r in site.catalog.loaded() if r.header.algorithm not in rungs) > n and runs is None
    head = ("The run of this build" if n == 1 else
            f"The {n} runs these pages show, one per algorithm," if more else f"The {n} runs of this build")
    text = f"{head} share {join_words(same)}." if same else f"{head} share none of their main settings."
    if differ:
        text += f" They differ in {join_words(differ)}."
    if missing:
        text += " Not in this build: " + ", ".join(site.algorithm_name(m) for m in missing) + "."
    return text


def hybrid_runs(site: Site) -> list[Run]:
    """Runs whose sampling filter drops groups and whose aggregation divides by a constant (no
    length in the weights): DAPO's dynamic sampling with Dr. GRPO's normaliser."""
    out = []
    for run in site.catalog.loaded():
        cfg = run.config
        if cfg is None:
            continue
        # a filter that drops groups, and weights divided by a constant the run fills in (L)
        if not cfg.component("filter").is_none and "normalizer" in cfg.component("aggregation").run_resolved:
            out.append(run)
    return out


@macro(name="hybrid_status")
def hybrid_status_text(site: Site) -> str:
    """A sentence: whether this build has a run pairing dynamic sampling with the constant normaliser."""
    found = hybrid_runs(site)
    if not found:
        return ("No run of this hybrid is part of this build: no run in it pairs the dynamic-sampling filter "
                "with the constant normaliser, so the case made for it here is an argument from the objectives, "
                "not a measured result.")
    names = ", ".join(f"{r.id} ({site.algorithm_name(r.header.algorithm)})" for r in found)
    return (f"This build has {'a run' if len(found) == 1 else 'runs'} of such a hybrid: {names}. Its figures are "
            "on the pages that show every run, such as the training-dynamics chapter.")


# ---------------------------------------------------------------------------
# Macros
# ---------------------------------------------------------------------------

@macro
def spec_param(site: Site, algorithm: str, slot: str, name: str, run: str | None = None) -> str:
    """A component parameter as text (the run's resolved value when the run is in the build)."""
    found = site.run(run) if run is not None else None
    return spec_param_text(spec_param_value(site, algorithm, slot, name, found))


@macro
def uniform_group_chance(site: Site, p: float, G: int) -> str:
    """The chance that a group of G answers is all right or all wrong, as a whole percentage."""
    return fmt_pct(uniform_group_chance_value(float(p), int(G)), None)


@macro(html=True)
def runs_status(site: Site) -> str:
    """The runs this build read, which run each algorithm's pages show, and those it skipped."""
    return runs_module.runs_status_html(site.catalog)


@macro(html=True)
def skipped_runs(site: Site) -> str:
    """An admonition naming the runs that could not be read (nothing when every run loaded)."""
    cat = site.catalog
    return runs_module.skipped_runs_html(cat.runs, cat.source.describe())
