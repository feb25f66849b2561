"""Figures that belong to one algorithm chapter (docs/course/algorithms/*.md).

Each macro reads a run's logs and chooses what to show by code, so a chapter stays true when
the runs are retrained or a reader rebuilds with their own logs. Each is called on a line of
its own; a run that is missing, or lacks what a figure needs, gives a note instead of a figure.

``{{ critic_trace(run, moment=None) }}`` (PPO)
    Along one logged response: the critic's value V(s_t), the return it is trained towards,
    the GAE advantage and the KL penalty that the reward carries on every token.
``{{ advantage_noise(runs=("reinforce", "grpo")) }}`` (REINFORCE)
    The response advantages of the token-logged steps of each run, as histograms coloured by
    correctness and by whether the response's group was mixed or got one reward throughout,
    and how much of each run's advantage signal fell on such one-reward groups.

Inline (text), for numbers the prose quotes:

``{{ spec_param("dapo", "clip", "eps_high", run=None) }}``
    A parameter of an algorithm's component: the run's resolved value when ``run`` is given and
    in the build (e.g. Dr. GRPO's constant L, filled from the run's generation budget), else the
    spec's.
``{{ uniform_group_chance(p, G) }}``
    The chance that a group of G answers, each right with probability p, is all right or all
    wrong (p^G + (1-p)^G), as a percentage.

The data functions (:func:`critic_trace_data`, :func:`advantage_noise_data`) are pure
readers of the logs and are what the tests check against the logged numbers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Sequence

from . import runlog
from .moments import MOMENT_NAMES, find_moment
from .render import escape_text, vega_embed
from .runs import Run, get_run, runs_dir
from .schema import PromptGroup, Response, StepDetail

# Okabe-Ito colours: distinguishable with the common colour-vision deficiencies and readable on
# the light and the dark background. Kept apart from the pink/green token scale on purpose:
# these colours name categories, not the sign of a value.
TRACE_COLOURS = {"value": "#0072B2", "return": "#009E73", "advantage": "#D55E00"}
TRACE_DASHES = {"value": [1, 0], "return": [6, 3], "advantage": [2, 2]}
TRACE_LABELS = {"value": "value V(s_t)", "return": "return (the critic's target)", "advantage": "advantage A_t (GAE)"}
KL_BAR_COLOUR = "#CC79A7"
NOISE_CATEGORIES = (
    ("correct, mixed group", "#0072B2"),
    ("correct, every answer same reward", "#56B4E9"),
    ("wrong, mixed group", "#D55E00"),
    ("wrong, every answer same reward", "#E69F00"),
)
NOISE_BINS = 41


# ---------------------------------------------------------------------------
# Shared
# ---------------------------------------------------------------------------

def _note(text: str, kind: str = "note") -> str:
    from .course import note_html  # the course's admonition, so every chapter note looks the same

    return note_html(text, kind)


def _resolve(run: str | Run, directory: Path | None) -> tuple[Run | None, str | None]:
    """The run, or None and a note saying why it cannot be shown."""
    if isinstance(run, Run):
        found = run
    else:
        found = get_run(str(run), directory)
        if found is None:
            where = directory or runs_dir()
            return None, (f"There is no run '{run}' (no such run id and no run of that algorithm) in {where}, "
                          "so this figure is not shown.")
    if not found.ok:
        return None, f"The run '{found.id}' could not be read, so this figure is not shown: {found.error}"
    return found, None


def _masked(values: Sequence[float], mask: Sequence[int]) -> list[float]:
    return [v for v, m in zip(values, mask) if m]


def _fmt(value: float, digits: int = 3) -> str:
    text = f"{value:.{digits}g}"
    return text.replace("-", "\u2212")


def _percent(share: float) -> str:
    """A share as a percentage a reader can take in: whole percent, finer only near 0 and 100."""
    pct = 100.0 * share
    if pct == 0.0 or pct == 100.0 or 1.0 <= pct <= 99.0:
        return f"{pct:.0f}%"
    return f"{pct:.1f}%"


def html_legend(entries: Sequence[tuple[str, str, Sequence[int] | None]]) -> str:
    """A legend that wraps on a narrow screen: (label, colour, dash) per entry; dash None draws a
    square swatch, a dash list ([1, 0] for solid) a short line. Labels are escaped."""
    items = []
    for label, colour, dash in entries:
        c = escape_text(colour)
        if dash is None:
            mark = (f'<svg width="12" height="12" aria-hidden="true"><rect width="12" height="12" rx="2" '
                    f'fill="{c}"/></svg>')
        else:
            pattern = "" if dash[1] == 0 else f' stroke-dasharray="{dash[0]},{dash[1]}"'
            mark = (f'<svg width="28" height="10" aria-hidden="true"><line x1="1" y1="5" x2="27" y2="5" '
                    f'stroke="{c}" stroke-width="2.5"{pattern}/></svg>')
        items.append(f'<span style="display:inline-flex;align-items:center;gap:.4em;margin:0 1.1em .2em 0;'
                     f'white-space:nowrap">{mark}{escape_text(label)}</span>')
    return (f'<p class="unipo-chapter-legend" style="margin:.4em 0;text-align:left;font-size:.85em">'
            f'{"".join(items)}</p>')


# ---------------------------------------------------------------------------
# critic_trace: PPO's value, return, GAE advantage and KL penalty along one response
# ---------------------------------------------------------------------------

@dataclass
class CriticTrace:
    run_id: str
    step: int
    rollout: int
    group: int
    response: int
    correct: bool | None
    reward: float
    beta: float
    prompt: str
    text: str
    chosen_by: str  # a sentence saying how the response was chosen
    rows: list[dict[str, Any]] = field(default_factory=list)


def _has_critic(response: Response) -> bool:
    t = response.tokens
    return t is not None and t.value is not None and t.return_ is not None


def _mixed(group: PromptGroup) -> bool:
    rewards = {r.reward for r in group.responses}
    return not group.filtered and len(rewards) > 1


def _pick_in_step(detail: StepDetail) -> tuple[PromptGroup, Response, str] | None:
    """In one step: the longest correct response of a mixed group, else the longest response
    with critic values (the first one logged on a tie)."""
    candidates = [(g, r) for g in detail.prompts if _mixed(g) for r in g.responses if _has_critic(r)]
    correct = [(g, r) for g, r in candidates if r.correct]
    if correct:
        g, r = max(correct, key=lambda gr: gr[1].length)
        return g, r, "the longest correct answer of a group with both right and wrong answers"
    anything = [(g, r) for g in detail.prompts for r in g.responses if _has_critic(r)]
    if anything:
        g, r = max(anything, key=lambda gr: gr[1].length)
        return g, r, "the longest logged response"
    return None


def _pick_default(run: Run) -> tuple[StepDetail, PromptGroup, Response, str] | None:
    """In the last logged step (the critic has trained longest there): see :func:`_pick_in_step`.
    A step without any response with critic values is skipped for the one before it."""
    for step in reversed(run.token_steps()):
        detail = runlog.read_step_detail(run.path, step)
        picked = _pick_in_step(detail)
        if picked is not None:
            g, r, why = picked
            return detail, g, r, f"{why} in the last logged step ({step})"
    return None


def _pick_moment(run: Run, moment: str) -> tuple[StepDetail, PromptGroup, Response, str] | None:
    found = find_moment(run.path, moment)
    if found is None:
        return None
    if found.group is None:
        # A step-level moment (max_kl_step): its step, or the nearest step with token detail.
        steps = run.token_steps()
        if not steps:
            return None
        step = min(steps, key=lambda s: (abs(s - found.step), s))
        detail = runlog.read_step_detail(run.path, step)
        picked = _pick_in_step(detail)
        if picked is None:
            return None
        g, r, why = picked
        where = f"step {step}" if step == found.step else f"step {step}, the logged step nearest to step {found.step}"
        return detail, g, r, f"{why} at the teaching moment '{moment}' ({where})"
    detail = runlog.read_step_detail(run.path, found.step)
    group = next((g for g in detail.prompts if g.index == found.group and not g.filtered), None)
    if group is None:
        return None
    if found.response is not None:
        response = next((r for r in group.responses if r.index == found.response), None)
    else:
        with_values = [r for r in group.responses if _has_critic(r)]
        response = max(with_values, key=lambda r: r.length) if with_values else None
    if response is None or not _has_critic(response):
        return None
    return detail, group, response, f"the response of the teaching moment '{moment}' (step {found.step})"


def critic_trace_data(run: Run, moment: str | None = None) -> CriticTrace | None:
    """Value, return, advantage and KL of one logged response of ``run``; None if none has a critic."""
    if moment is not None and moment not in MOMENT_NAMES:
        raise ValueError(f"critic_trace: unknown moment {moment!r} (known: {', '.join(MOMENT_NAMES)})")
    picked = _pick_moment(run, moment) if moment else _pick_default(run)
    if picked is None:
        return None
    detail, group, response, chosen_by = picked
    config = run.config
    beta = 0.0
    if config is not None and config.kind("kl") == "in_reward":
        beta = float(config.param("kl", "beta") or 0.0)
    t = response.tokens
    rows = []
    for i in range(len(t.ids)):
        if not t.mask[i]:
            continue
        kl = t.kl[i] if t.kl is not None else None
        rows.append({
            "t": i,
            "token": t.text[i],
            "label": f"{i} \u201c{t.text[i]}\u201d",
            "value": t.value[i],
            "return": t.return_[i],
            "advantage": t.advantage[i],
            "kl": kl,
            "kl_penalty": (-beta * kl) if kl is not None else None,
        })
    return CriticTrace(run_id=run.id, step=detail.step, rollout=detail.rollout, group=group.index,
                       response=response.index, correct=response.correct, reward=response.reward, beta=beta,
                       prompt=group.prompt, text=response.text, chosen_by=chosen_by, rows=rows)


def critic_trace_charts(trace: CriticTrace) -> tuple[dict, dict]:
    """Two Vega-Lite specs sharing the token axis: the three curves, and the KL penalty bars."""
    import altair as alt

    order = [r["label"] for r in trace.rows]
    axis = dict(labelAngle=-60, labelOverlap="greedy", labelLimit=90)
    # The lower chart carries the axis title for both.
    x_top = alt.X("label:O", sort=order, title=None, axis=alt.Axis(**axis))
    x = alt.X("label:O", sort=order, title="token t of the response (position and text)", axis=alt.Axis(**axis))
    names = TRACE_LABELS
    long_rows = [
        {"t": r["t"], "label": r["label"], "token": r["token"], "series": names[key], "y": r[key]}
        for r in trace.rows for key in ("value", "return", "advantage")
    ]
    domain = [names[k] for k in ("value", "return", "advantage")]
    zero = alt.Chart(alt.Data(values=[{"y": 0}])).mark_rule(opacity=0.35).encode(y="y:Q")
    lines = (
        alt.Chart(alt.Data(values=long_rows))
        .mark_line(strokeWidth=2.2, point=alt.OverlayMarkDef(size=28, filled=True))
        .encode(
            x=x_top,
            y=alt.Y("y:Q", title="reward units"),
            color=alt.Color("series:N", scale=alt.Scale(domain=domain, range=[TRACE_COLOURS[k] for k in
                                                                             ("value", "return", "advantage")]),
                            legend=None),
            strokeDash=alt.StrokeDash("series:N", scale=alt.Scale(domain=domain, range=[TRACE_DASHES[k] for k in
                                                                                    ("value", "return", "advantage")]),
                                      legend=None),
            tooltip=[alt.Tooltip("t:Q", title="position"), alt.Tooltip("token:N", title="token"),
                     alt.Tooltip("series:N", title="quantity"), alt.Tooltip("y:Q", title="value", format=".4f")],
        )
    )
    top = alt.layer(zero, lines).properties(width="container", height=240)
    bars_rows = [{"t": r["t"], "label": r["label"], "token": r["token"], "kl": r["kl"], "penalty": r["kl_penalty"]}
                 for r in trace.rows if r["kl"] is not None]
    bars = (
        alt.Chart(alt.Data(values=bars_rows))
        .mark_bar(color=KL_BAR_COLOUR)
        .encode(
            x=x,
            y=alt.Y("penalty:Q", title="−β·KL_t"),
            tooltip=[alt.Tooltip("t:Q", title="position"), alt.Tooltip("token:N", title="token"),
                     alt.Tooltip("kl:Q", title="KL_t (k1)", format=".5f"),
                     alt.Tooltip("penalty:Q", title="reward term −β·KL_t", format=".6f")],
        )
    )
    bottom = alt.layer(zero, bars).properties(width="container", height=110)
    return top.to_dict(), bottom.to_dict()


def critic_trace_caption(trace: CriticTrace) -> str:
    outcome = {True: "a correct answer", False: "a wrong answer", None: "a response"}[trace.correct]
    values = [r["value"] for r in trace.rows]
    parts = [
        f"Run '{trace.run_id}', step {trace.step} (rollout {trace.rollout}), group {trace.group}, "
        f"response {trace.response}: {outcome} with reward {_fmt(trace.reward)}, chosen as {trace.chosen_by}.",
        "Top: the critic's value at each token, the return it is trained towards and the GAE advantage "
        "(return minus value). Bottom: the KL penalty −β·KL_t that the reward carries on every token; the "
        "answer's reward is added on the last token.",
    ]
    if values and max(abs(v) for v in values) < 1e-6:
        parts.append("At this step the critic still predicts 0 everywhere (its head starts at zero), so the "
                     "advantage equals the return.")
    return " ".join(parts)


# ---------------------------------------------------------------------------
# advantage_noise: response advantages with a batch baseline vs a group baseline
# ---------------------------------------------------------------------------

@dataclass
class NoiseSummary:
    run_id: str
    algorithm: str
    name: str  # the algorithm's display name
    advantage_kind: str | None
    steps: int  # token-logged steps read
    responses: int  # distinct responses (a rollout's response logged on several updates counts once)
    rows: list[dict[str, Any]] = field(default_factory=list)

    @property
    def same_reward_share(self) -> float | None:
        """Share of responses whose group gave every answer the same reward."""
        if not self.rows:
            return None
        return sum(1 for r in self.rows if r["same_reward"]) / len(self.rows)

    @property
    def same_reward_signal(self) -> float | None:
        """Share of sum(A^2) carried by responses of one-reward groups (None when every A is 0)."""
        total = sum(r["advantage"] ** 2 for r in self.rows)
        if total == 0:
            return None
        return sum(r["advantage"] ** 2 for r in self.rows if r["same_reward"]) / total

    @property
    def correct_in_same_reward_pushed(self) -> float | None:
        """Among correct answers whose whole group was correct, the share with a non-zero advantage."""
        chosen = [r for r in self.rows if r["correct"] and r["same_reward"]]
        if not chosen:
            return None
        return sum(1 for r in chosen if abs(r["advantage"]) > 1e-6) / len(chosen)


def response_advantage(response: Response) -> float | None:
    """The response's advantage: logged, or the mean of its tokens' (constant for REINFORCE)."""
    if response.advantage is not None:
        return float(response.advantage)
    if response.tokens is None:
        return None
    values = _masked(response.tokens.advantage, response.tokens.mask)
    return sum(values) / len(values) if values else None


@lru_cache(maxsize=16)
def _noise_cached(run_dir: str, mtime: float, run_id: str, algorithm: str, name: str,
                  kind: str | None) -> NoiseSummary:
    summary = NoiseSummary(run_id=run_id, algorithm=algorithm, name=name, advantage_kind=kind, steps=0, responses=0)
    seen: set[tuple[int, int, int]] = set()
    for step in runlog.token_steps(run_dir):
        detail = runlog.read_step_detail(run_dir, step)
        summary.steps += 1
        for group in detail.prompts:
            if group.filtered:
                continue
            same = len({r.reward for r in group.responses}) == 1
            for response in group.responses:
                key = (detail.rollout, group.index, response.index)
                if key in seen or response.tokens is None:
                    continue
                advantage = response_advantage(response)
                if advantage is None:
                    continue
                seen.add(key)
                summary.rows.append({"step": detail.step, "rollout": detail.rollout, "group": group.index,
                                     "response": response.index, "correct": bool(response.correct),
                                     "reward": response.reward, "advantage": advantage, "same_reward": same})
    summary.responses = len(summary.rows)
    return summary


def advantage_noise_data(run: Run) -> NoiseSummary:
    """Every distinct trained response of the run's token-logged steps with its advantage."""
    kind = run.config.kind("advantage") if run.config is not None else None
    name = run.spec.name if run.spec is not None else run.header.algorithm
    return _noise_cached(str(run.path), runlog.tokens_mtime(run.path), run.id, run.header.algorithm, name, kind)


def _category_index(row: dict[str, Any]) -> int:
    return (0 if row["correct"] else 2) + (1 if row["same_reward"] else 0)


def _bins(summaries: Sequence[NoiseSummary], n_bins: int = NOISE_BINS) -> tuple[float, float]:
    values = [r["advantage"] for s in summaries for r in s.rows]
    lo, hi = (min(values), max(values)) if values else (-1.0, 1.0)
    bound = max(abs(lo), abs(hi), 1e-3)
    # Symmetric about 0 with 0 at the centre of the middle bin, so "exactly zero" has a bar of its own.
    width = 2 * bound * 1.04 / n_bins
    return -width * n_bins / 2, width


def noise_histogram(summary: NoiseSummary, start: float, width: float, n_bins: int = NOISE_BINS) -> list[dict]:
    """Share of the run's responses per (advantage bin, category), stacked in category order:
    each row's bar runs from ``y0`` to ``y1`` (computed here, so the chart needs no stack)."""
    counts: dict[tuple[int, int], int] = {}
    for row in summary.rows:
        b = min(max(int(math.floor((row["advantage"] - start) / width)), 0), n_bins - 1)
        key = (b, _category_index(row))
        counts[key] = counts.get(key, 0) + 1
    n = max(summary.responses, 1)
    out, top = [], {}
    for (b, cat), c in sorted(counts.items()):
        y0 = top.get(b, 0.0)
        y1 = y0 + c / n
        top[b] = y1
        out.append({"lo": round(start + b * width, 6), "hi": round(start + (b + 1) * width, 6),
                    "category": NOISE_CATEGORIES[cat][0], "count": c, "share": c / n,
                    "y0": round(y0, 6), "y1": round(y1, 6)})
    return out


def noise_chart(summary: NoiseSummary, title: str, start: float, width: float, y_max: float) -> dict:
    import altair as alt

    rows = noise_histogram(summary, start, width)
    domain = [name for name, _ in NOISE_CATEGORIES]
    zero = alt.Chart(alt.Data(values=[{"x": 0}])).mark_rule(opacity=0.35, strokeDash=[3, 3]).encode(x="x:Q")
    bars = (
        alt.Chart(alt.Data(values=rows))
        .mark_rect(stroke=None)
        .encode(
            x=alt.X("lo:Q", title="response advantage", scale=alt.Scale(domain=[start, -start], nice=False)),
            x2="hi:Q",
            y=alt.Y("y0:Q", title="share of responses", axis=alt.Axis(format="%", tickCount=4),
                    scale=alt.Scale(domain=[0, y_max], nice=False)),
            y2="y1:Q",
            color=alt.Color("category:N", scale=alt.Scale(domain=domain, range=[c for _, c in NOISE_CATEGORIES]),
                            legend=None),
            tooltip=[alt.Tooltip("category:N", title="responses"),
                     alt.Tooltip("lo:Q", title="advantage from", format=".3f"),
                     alt.Tooltip("hi:Q", title="advantage to", format=".3f"),
                     alt.Tooltip("count:Q", title="responses"),
                     alt.Tooltip("share:Q", title="share of the run's", format=".1%")],
        )
    )
    chart = alt.layer(zero, bars, title=alt.TitleParams(title, anchor="start", fontSize=13, fontWeight="normal"))
    return chart.properties(width="container", height=170).to_dict()


def _baseline_words(summary: NoiseSummary) -> str:
    return {
        "reinforce_return": "batch baseline",
        "group_zscore": "group z-score",
        "group_mean": "group mean",
        "leave_one_out": "leave-one-out baseline",
        "gae": "critic (GAE)",
    }.get(summary.advantage_kind or "", summary.advantage_kind or "unknown advantage")


def _run_label(summary: NoiseSummary) -> str:
    """'REINFORCE (batch baseline)'; a run whose id is not its algorithm's also names its id."""
    own_id = summary.run_id in (summary.algorithm, summary.name)
    name = summary.name if own_id else f"{summary.name} run '{summary.run_id}'"
    return f"{name} ({_baseline_words(summary)})"


def _run_phrase(summary: NoiseSummary) -> str:
    """'the REINFORCE run' (or "the REINFORCE run 'mine'") for sentences."""
    own_id = summary.run_id in (summary.algorithm, summary.name)
    return f"the {summary.name} run" + ("" if own_id else f" '{summary.run_id}'")


def noise_table(summaries: Sequence[NoiseSummary]) -> str:
    """The counts behind the figure, one row per run (numbers right-aligned, Material's table style)."""
    head = ["Run", "Answers", "In one-reward groups", "Their signal share"]
    right = ' style="text-align:right"'
    thead = "<tr>" + "".join(f"<th{right if i else ''}>{escape_text(h)}</th>" for i, h in enumerate(head)) + "</tr>"
    body = []
    for s in summaries:
        cells = [_run_label(s), str(s.responses)]
        for share in (s.same_reward_share, s.same_reward_signal):
            cells.append("–" if share is None else _percent(share))
        body.append("<tr>" + "".join(f"<td{right if i else ''}>{escape_text(c)}</td>" for i, c in enumerate(cells))
                    + "</tr>")
    # Material scrolls a wide table itself (display: inline-block), so no wrapper is needed.
    return f"<table>{f'<thead>{thead}</thead>'}<tbody>{''.join(body)}</tbody></table>"


def noise_sentence(summary: NoiseSummary) -> str:
    """What this run's logs show, worded from the numbers."""
    run = _run_phrase(summary)
    share, signal = summary.same_reward_share, summary.same_reward_signal
    if share is None:
        return f"{run.capitalize()} has no trained responses with token detail."
    if share == 0:
        return (f"In the logged steps of {run} no group gave all its answers the same reward, so the difference "
                "between a batch and a group baseline does not show in them.")
    if signal is None:
        return f"In {run} every logged advantage is zero."
    if signal < 1e-9:
        return (f"In {run}, {_percent(share)} of the logged answers sat in groups where every answer got the same "
                "reward, and they carry none of its advantage signal: the group baseline cancels them.")
    return (f"In {run}, {_percent(share)} of the logged answers sat in groups where every answer got the same "
            f"reward, yet they carry {_percent(signal)} of its advantage signal (the sum of squared advantages): "
            "pushes that say how easy or hard the prompt was, not which answer was better.")


def advantage_noise_html(summaries: Sequence[NoiseSummary], chart_ids: Sequence[str], notes: Sequence[str] = ()) -> str:
    if not summaries:
        return "".join(_note(n) for n in notes)
    start, width = _bins(summaries)
    y_max = 0.0
    for s in summaries:
        y_max = max([y_max] + [row["y1"] for row in noise_histogram(s, start, width)])
    y_max = min(1.0, max(y_max * 1.05, 0.05))
    charts = "".join(
        vega_embed(noise_chart(s, _run_label(s), start, width, y_max), chart_id=cid)
        for s, cid in zip(summaries, chart_ids)
    )
    sentences = " ".join(noise_sentence(s) for s in summaries)
    caption = ("Response advantages in the token-logged steps, as a share of each run's logged responses (a "
               "response trained on in several updates of its rollout counts once). Light bars: answers from "
               "groups in which every answer got the same reward; they say nothing about which answer to a "
               "prompt is better. " + sentences)
    notes_html = "".join(_note(n) for n in notes)
    legend = html_legend([(name, colour, None) for name, colour in NOISE_CATEGORIES])
    return (f'<figure class="unipo-figure unipo-chart unipo-advantage-noise">{notes_html}{legend}{charts}'
            f"{noise_table(summaries)}<figcaption>{escape_text(caption)}</figcaption></figure>")


# ---------------------------------------------------------------------------
# Inline numbers
# ---------------------------------------------------------------------------

def spec_param_value(algorithm: str, slot: str, name: str, run: Run | None = None) -> Any:
    """A component parameter: the run's resolved one when the run trained ``algorithm``, else the spec's."""
    from .specs import SLOTS, load_specs

    specs = load_specs()
    if algorithm not in specs:
        raise ValueError(f"spec_param: no algorithm {algorithm!r} (known: {', '.join(sorted(specs))})")
    if slot not in SLOTS:
        raise ValueError(f"spec_param: no slot {slot!r} (known: {', '.join(SLOTS)})")
    if run is not None and run.ok and run.header.algorithm == algorithm and run.config is not None:
        params = run.config.components[slot].params
        if name in params and params[name] is not None:
            return params[name]
    params = specs[algorithm].params(slot)
    if name not in params:
        kind = specs[algorithm].components[slot].kind
        raise ValueError(f"spec_param: {algorithm}'s {slot} ({kind}) has no parameter {name!r} "
                         f"(it has: {', '.join(sorted(params)) or 'none'})")
    return params[name]


def spec_param_text(value: Any) -> str:
    if value is None:
        return "(set from the run)"
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return str(value)
    from .course import fmt_num

    return fmt_num(value, 4)


def uniform_group_chance_value(p: float, group_size: int) -> float:
    """P(all G answers right) + P(all wrong) for independent answers right with probability p."""
    if not 0.0 <= p <= 1.0 or group_size < 1:
        raise ValueError(f"uniform_group_chance: need 0 <= p <= 1 and G >= 1, got p={p}, G={group_size}")
    return p ** group_size + (1.0 - p) ** group_size


# ---------------------------------------------------------------------------
# Macros
# ---------------------------------------------------------------------------

def _directory(env: Any) -> Path:
    conf = getattr(env, "conf", None) or {}
    extra = conf.get("extra", {}) if hasattr(conf, "get") else {}
    return runs_dir((extra or {}).get("unipo_runs"))


def critic_trace_html(run: str | Run, moment: str | None, chart_ids: Sequence[str], directory: Path | None) -> str:
    found, note = _resolve(run, directory)
    if found is None:
        return _note(note)
    trace = critic_trace_data(found, moment)
    if trace is None:
        what = f"the teaching moment '{moment}'" if moment else "any logged step"
        return _note(f"The run '{found.id}' has no response with critic values at {what} (the critic's value "
                     "and return are logged only by algorithms with a critic, such as PPO), so this figure is "
                     "not shown.")
    top, bottom = critic_trace_charts(trace)
    prompt = (f'<p class="unipo-trace-text" style="text-align:left"><strong>Prompt:</strong> {escape_text(trace.prompt)}<br>'
              f"<strong>Response:</strong> {escape_text(trace.text)}</p>")
    legend = html_legend([(TRACE_LABELS[k], TRACE_COLOURS[k], TRACE_DASHES[k]) for k in ("value", "return", "advantage")]
                         + [("KL penalty −β·KL_t (lower chart)", KL_BAR_COLOUR, None)])
    return (f'<figure class="unipo-figure unipo-chart unipo-critic-trace">{prompt}{legend}'
            f"{vega_embed(top, chart_id=chart_ids[0])}{vega_embed(bottom, chart_id=chart_ids[1])}"
            f"<figcaption>{escape_text(critic_trace_caption(trace))}</figcaption></figure>")


def register(env: Any) -> None:
    from . import macros as unipo_macros  # imported here: macros imports this module by name

    @env.macro
    def critic_trace(run: str, moment: str | None = None) -> str:
        """PPO's critic along one logged response: value, return, GAE advantage, KL penalty."""
        ids = [unipo_macros.chart_id(env, {"critic_trace": str(run), "moment": moment, "part": p},
                                     prefix="unipo-trace") for p in ("curves", "kl")]
        return unipo_macros.protect_html(env, critic_trace_html(run, moment, ids, _directory(env)))

    @env.macro
    def spec_param(algorithm: str, slot: str, name: str, run: str | None = None) -> str:
        """A component parameter as text (the run's resolved value when the run is in the build)."""
        found = get_run(str(run), _directory(env)) if run is not None else None
        return spec_param_text(spec_param_value(algorithm, slot, name, found))

    @env.macro
    def uniform_group_chance(p: float, G: int) -> str:
        """The chance that a group of G answers is all right or all wrong, as a whole percentage."""
        return _percent(uniform_group_chance_value(float(p), int(G)))

    @env.macro
    def advantage_noise(runs: Sequence[str] = ("reinforce", "grpo")) -> str:
        """Response advantages of several runs side by side: batch baseline vs group baseline."""
        directory = _directory(env)
        summaries, notes = [], []
        for name in runs:
            found, note = _resolve(name, directory)
            if found is None:
                notes.append(note)
                continue
            summary = advantage_noise_data(found)
            if not summary.rows:
                notes.append(f"The run '{found.id}' has no trained responses with token detail, so it is not shown.")
                continue
            summaries.append(summary)
        ids = [unipo_macros.chart_id(env, {"advantage_noise": s.run_id}, prefix="unipo-noise") for s in summaries]
        return unipo_macros.protect_html(env, advantage_noise_html(summaries, ids, notes))
