"""Dynamic sampling filling the batch: how much a sampling filter generates for what it keeps.

    {{ batch_filling() }}                   figure and table for every run whose filter drops groups
    {{ batch_filling(["dapo", "dapo_dr"]) }}
    {{ sampling_fact("dapo", "full_frac") }}   one figure as text (SAMPLING_FACT_KEYS)

A filter such as DAPO's dynamic sampling drops the groups whose answers all got the same reward
and samples new prompts until the batch holds ``prompts_per_step`` groups again, for at most
``max_rounds`` rounds (the run header's filter parameters). Per rollout the log has:

- ``sampling/rounds``: rounds needed; ``sampling/generated_per_kept``: responses generated per
  response trained on;
- ``sampled/tokens`` and ``sampled/length``: tokens and mean length of every generated response,
  so responses generated = tokens / length, and responses trained on = generated / generated_per_kept;
- ``reward/mean``, ``accuracy/train`` over the kept groups, ``sampled/reward``, ``sampled/accuracy``
  over everything generated.

A rollout's batch is full when it trained on ``prompts_per_step x group_size`` responses. A rollout
in which the filter kept nothing made no update and has no line in steps.jsonl: it counts as not
full (a finished run's rollouts are ``hyperparameters.steps``; an unfinished one's, the last logged
rollout + 1). Logs without the ``sampled/`` metrics fall back on the rounds: fewer than the cap
means the batch filled.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from unipo_build.core.numbers import fmt_num, fmt_pct
from unipo_build.site.render import chart_spec, vega_embed
from unipo_build.core.runs import Run
from unipo_build.site.pages.dynamics.dynamics import DASHES, x_encoding
from unipo_build.site.fmt import escape_text, legend_html, note_html, table
from unipo_build.site.palette import algorithm_colour
from unipo_build.site.facts.run_facts import course_runs
from unipo_build.site.facts.seeds import seed_text, training_text
from unipo_build.site.facts.series import edge_means, round_to, run_series
from unipo_build.site.context import AuthorError, Site, macro


@dataclass(frozen=True)
class BatchFill:
    """How one run's filter filled its batches."""

    rollouts: int  # rollouts the run made (logged or not)
    logged: int  # rollouts that made an update
    full: int | None  # rollouts whose batch was full (None: cannot be told from the log)
    cap: int | None  # the filter's max_rounds
    rounds_mean: float | None
    rounds_max: float | None
    at_cap: int  # rollouts that used every round the cap allows
    generated_per_kept: tuple[float, float] | None  # first and last tenth

    @property
    def full_frac(self) -> float | None:
        return None if self.full is None or self.rollouts == 0 else self.full / self.rollouts


def filters_groups(run: Run) -> bool:
    """The run's filter drops groups (the registry's empty choice ``none`` does not)."""
    cfg = run.config
    return cfg is not None and not cfg.component("filter").is_none


def rollout_column(run: Run, name: str) -> np.ndarray:
    """A rollout-level metric, one value per logged rollout (NaN where null)."""
    table = run.reader.table
    return table.column(name)[table.first_in_rollout]


def trained_responses(run: Run) -> np.ndarray | None:
    """Responses trained on in each logged rollout, from the sampled/ metrics (None without them)."""
    tokens, length = rollout_column(run, "sampled/tokens"), rollout_column(run, "sampled/length")
    per_kept = rollout_column(run, "sampling/generated_per_kept")
    if len(tokens) == 0 or np.isnan(tokens).any() or np.isnan(length).any() or np.isnan(per_kept).any():
        return None
    with np.errstate(divide="ignore", invalid="ignore"):
        generated = np.where(length > 0, tokens / length, 0.0)
        return np.rint(np.where(per_kept > 0, generated / per_kept, 0.0))


def batch_fill(run: Run) -> BatchFill:
    table = run.reader.table
    hp = run.header.hyperparameters
    logged = int(table.first_in_rollout.sum())
    last = int(table.rollouts[-1]) + 1 if table.n else 0
    planned = hp.get("steps")  # the rollouts asked for: all of them were made once the run finished
    finished = run.header.finished_at is not None
    rollouts = planned if finished and isinstance(planned, int) and planned >= last else last
    cap = run.config.param("filter", "max_rounds") if run.config is not None else None
    rounds = rollout_column(run, "sampling/rounds")
    rounds = rounds[~np.isnan(rounds)]
    batch = hp.get("prompts_per_step"), hp.get("group_size")
    trained = trained_responses(run)
    full = None
    if trained is not None and all(isinstance(b, int) for b in batch):
        full = int((trained >= batch[0] * batch[1]).sum())
    elif cap is not None and len(rounds) == logged:
        full = int((rounds < cap).sum())
    per_kept = rollout_column(run, "sampling/generated_per_kept")
    return BatchFill(
        rollouts=rollouts, logged=logged, full=full, cap=cap,
        rounds_mean=float(rounds.mean()) if len(rounds) else None,
        rounds_max=float(rounds.max()) if len(rounds) else None,
        at_cap=int((rounds >= cap).sum()) if cap is not None else 0,
        generated_per_kept=edge_means(per_kept[~np.isnan(per_kept)]))


SAMPLING_FACT_KEYS = {
    "full_frac": "share of the run's rollouts whose batch was full (%)",
    "rollouts": "rollouts the run made",
    "full": "rollouts whose batch was full",
    "cap": "the filter's cap on sampling rounds per rollout",
    "rounds_mean": "mean sampling rounds per rollout",
    "rounds_max": "most sampling rounds in one rollout",
    "at_cap": "rollouts that used every round the cap allows",
    "generated_per_kept_first": "responses generated per response trained on, first tenth of the run",
    "generated_per_kept_last": "responses generated per response trained on, last tenth of the run",
}


@macro(name="sampling_fact", with_site=False, run=True)
def sampling_fact_text(run: Run | None, name: str, key: str) -> str:
    """One figure of a run's batch filling as text (SAMPLING_FACT_KEYS)."""
    if key not in SAMPLING_FACT_KEYS:
        raise AuthorError(f"sampling_fact: unknown key {key!r} (known: {', '.join(SAMPLING_FACT_KEYS)})")
    if run is None:
        return f"(no {name} run in this build)"
    if not filters_groups(run):
        return f"(the {run.id} run has no sampling filter)"
    fill = batch_fill(run)
    if key in ("generated_per_kept_first", "generated_per_kept_last"):
        edges = fill.generated_per_kept
        return "–" if edges is None else fmt_num(edges[0 if key.endswith("first") else 1], 3)
    value = fill.full_frac if key == "full_frac" else getattr(fill, key)
    if value is None:
        return f"(not in the {run.id} log)"
    return fmt_pct(value) if key == "full_frac" else fmt_num(value, 3)


def _panel(site: Site, rows: list[dict], labels: list[str], colours: list[str], title: str, y_title: str,
           dashed: bool = False, rule: float | None = None, percent: bool = False) -> str:
    import altair as alt

    colour = alt.Color("algorithm:N", scale=alt.Scale(domain=labels, range=colours), legend=None)
    enc = dict(x=x_encoding("fraction"), y=alt.Y("y:Q", title=y_title, scale=alt.Scale(zero=False),
                                                   axis=alt.Axis(format=".0%" if percent else "~r", tickCount=5)),
               color=colour, detail="line:N",
               tooltip=[alt.Tooltip("line:N", title="Line"), alt.Tooltip("step:Q", title="Update"),
                        alt.Tooltip("y:Q", title=y_title, format=".1%" if percent else ".3~g")])
    if dashed:
        enc["strokeDash"] = alt.StrokeDash("kind:N", scale=alt.Scale(domain=["kept", "all sampled"],
                                                                     range=[DASHES["correct"], DASHES["wrong"]]),
                                           legend=None)
    layers = [alt.Chart(alt.Data(values=rows)).mark_line(strokeWidth=2).encode(**enc)]
    if rule is not None:
        layers.append(alt.Chart(alt.Data(values=[{"cap": rule}])).mark_rule(strokeDash=[2, 3], opacity=0.7).encode(
            y="cap:Q", tooltip=[alt.Tooltip("cap:Q", title="Cap on rounds")]))
    spec = chart_spec(alt.layer(*layers).properties(
        width="container", height=170, autosize=alt.AutoSizeParams(type="fit-x", contains="padding")))
    spec["description"] = f"{title} over training, one line per run."
    return (f'<div class="unipo-course-panel" style="min-width:0"><p style="margin:0 0 .2em;font-weight:600">'
            f"{escape_text(title)}</p>{vega_embed(spec, chart_id=site.chart_id(spec))}</div>")


def _rows(run: Run, label: str, metric: str, kind: str = "") -> list[dict]:
    s = run_series(run, [metric])[metric]
    if s is None:
        return []
    line = f"{label}: {kind}" if kind else label
    return [{"algorithm": label, "line": line, "kind": kind, "step": int(step), "x": round_to(frac, 5),
             "y": round_to(value)} for step, value, frac in zip(s.steps.tolist(), s.values.tolist(),
                                                                   s.fraction.tolist())]


@macro(name="batch_filling", html=True)
def batch_filling_html(site: Site, runs: Sequence[str] | None = None) -> str:
    """Dynamic sampling filling the batch: generated per kept, rounds, full batches, kept vs all sampled."""
    shown, missing = course_runs(site, runs)
    shown = [r for r in shown if filters_groups(r)]
    if not shown:
        return note_html("No run in this build has a sampling filter that drops groups (such as DAPO's dynamic "
                         "sampling), so there is no batch filling to show.", "warning")
    extra: dict[str, str] = {}
    labels = [site.run_label(r) for r in shown]
    colours = [algorithm_colour(r.header.algorithm, extra) for r in shown]
    caps = {batch_fill(r).cap for r in shown}
    per_kept, rounds, rewards = [], [], []
    for run, label in zip(shown, labels):
        per_kept += _rows(run, label, "sampling/generated_per_kept")
        rounds += _rows(run, label, "sampling/rounds")
        rewards += _rows(run, label, "accuracy/train", "kept") + _rows(run, label, "sampled/accuracy",
                                                                             "all sampled")
    panels = [_panel(site, per_kept, labels, colours, "Responses generated per response trained on", "generated / kept"),
              _panel(site, rounds, labels, colours, "Sampling rounds per rollout", "rounds",
                     rule=next(iter(caps)) if len(caps) == 1 and None not in caps else None)]
    if rewards:
        panels.append(_panel(site, rewards, labels, colours, "Accuracy: kept groups (solid) and all sampled (dashed)",
                             "accuracy", dashed=True, percent=True))
    grid = ('<div class="unipo-course-grid" style="display:grid;grid-template-columns:repeat(auto-fit,minmax(15rem,1fr));'
            'gap:1.2rem 1.6rem">' + "".join(panels) + "</div>")
    legend = legend_html([(label, colour, None) for label, colour in zip(labels, colours)]
                         + [("kept groups", "currentColor", DASHES["correct"]),
                            ("all sampled", "currentColor", DASHES["wrong"])])
    caption = ("Moving averages over the rollouts of each run (the run a chapter shows for each algorithm). The dotted "
               "rule marks the cap on sampling rounds per rollout. The third panel compares the accuracy of the "
               "groups the filter kept, which the update trains on, with that of every response generated.")
    if any(r.progress() is not None for r in shown):
        caption += " A run still training ends where it has got to."
    figure = f'<figure class="unipo-figure unipo-batch-filling">{legend}{grid}<figcaption>{escape_text(caption)}</figcaption></figure>'
    return figure + batch_table_html(site, shown) + (
        note_html("Not in this build: " + ", ".join(site.algorithm_name(m) for m in missing) + ".", "warning")
        if missing and runs is not None else "")  # by default, only the filtering runs there are


def batch_table_html(site: Site, shown: list[Run]) -> str:
    rows = []
    for chosen in shown:
        for run in site.catalog.seeds_of(chosen.variant):
            fill = batch_fill(run)
            edges = {m: edge_means(rollout_column(run, m)[~np.isnan(rollout_column(run, m))])
                     for m in ("accuracy/train", "sampled/accuracy", "reward/mean", "sampled/reward")}

            def last(metric: str, pct: bool) -> str:
                e = edges[metric]
                return "–" if e is None else (fmt_pct(e[1]) if pct else fmt_num(e[1], 3))

            full = ("–" if fill.full is None else
                    f"{fmt_num(fill.full)} of {fmt_num(fill.rollouts)} ({fmt_pct(fill.full_frac)})")
            gpk = fill.generated_per_kept
            training = training_text(run)
            rows.append([
                escape_text((f"{site.run_label(run)}, {seed_text(run)}" if run.id != run.header.algorithm else
                             f"{site.run_label(run)} ({seed_text(run)})") + (f"; {training}" if training else "")),
                escape_text(full),
                escape_text("–" if fill.rounds_mean is None else
                            f"{fmt_num(fill.rounds_mean, 3)} (most {fmt_num(fill.rounds_max)}; cap "
                            f"{fmt_num(fill.cap) if fill.cap is not None else '–'}, reached {fmt_num(fill.at_cap)}×)"),
                escape_text("–" if gpk is None else f"{fmt_num(gpk[0], 3)} → {fmt_num(gpk[1], 3)}"),
                escape_text(f"{last('accuracy/train', True)} / {last('sampled/accuracy', True)}"),
                escape_text(f"{last('reward/mean', False)} / {last('sampled/reward', False)}"),
            ])
    return table(["Run", "Rollouts with a full batch", "Rounds per rollout: mean", "Generated per kept: first → last tenth",
                  "Accuracy, last tenth: kept / all sampled", "Reward, last tenth: kept / all sampled"], rows,
                 caption="How each run of an algorithm with a sampling filter filled its batches (every seed)",
                 numeric=(1, 2, 3, 4, 5))
