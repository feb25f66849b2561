"""PPO's critic along one logged response: value, return, GAE advantage and the KL penalty.

    {{ critic_trace(run, moment=None) }}     on a paragraph of its own

The response is chosen by code (the longest correct answer of a mixed group in the last logged
step, or the teaching moment's), from the run's one reader. A run without critic values (no
algorithm with a critic) or not in the build gives a note instead of the figure.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

from unipo_build.core.moments import MOMENT_NAMES, find_moment
from unipo_build.core.numbers import fmt_num
from unipo_build.site.render import chart_spec, escape_text, vega_embed
from unipo_build.core.runs import Run
from unipo_build.core.schema import PromptGroup, Response, StepDetail
from unipo_build.site.browser import token_label
from unipo_build.site.fmt import legend_html, note_html
from unipo_build.site.palette import role
from unipo_build.site.context import AuthorError, Site, macro

TRACE_DASHES = {"value": [1, 0], "return": [6, 3], "advantage": [2, 2]}
TRACE_LABELS = {"value": "value V(s_t)", "return": "return (the critic's target)", "advantage": "advantage A_t (GAE)"}


def resolve_run(site: Site, run: str | Run) -> tuple[Run | None, str | None]:
    """The run, or None and a note saying why it cannot be shown."""
    if isinstance(run, Run):
        found = run
    else:
        found = site.catalog.get(str(run))
        if found is None:
            return None, (f"There is no run '{run}' (no such run id and no run of that algorithm) in "
                          f"{site.catalog.source.describe()}, so this figure is not shown.")
    if not found.ok:
        return None, f"The run '{found.id}' could not be read, so this figure is not shown: {found.error}"
    return found, None


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
        detail = run.reader.detail(step)
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
        detail = run.reader.detail(step)
        picked = _pick_in_step(detail)
        if picked is None:
            return None
        g, r, why = picked
        where = f"step {step}" if step == found.step else f"step {step}, the logged step nearest to step {found.step}"
        return detail, g, r, f"{why} at the teaching moment '{moment}' ({where})"
    detail = run.reader.detail(found.step)
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
        raise AuthorError(f"critic_trace: unknown moment {moment!r} (known: {', '.join(MOMENT_NAMES)})")
    picked = _pick_moment(run, moment) if moment else _pick_default(run)
    if picked is None:
        return None
    detail, group, response, chosen_by = picked
    config = run.config
    beta = 0.0
    if config is not None and config.component("kl").kl_place == "reward":
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
            "label": f"{i} {token_label(t.text[i])}",
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

    # Tokens in response order, sorted by their position t in the data: a sort given as a list of
    # labels would put the token texts into a Vega expression; input strings stay data.
    order = alt.EncodingSortField(field="t", op="min")
    axis = dict(labelAngle=-60, labelOverlap="greedy", labelLimit=90)
    # The lower chart carries the axis title for both.
    # The two charts share the token axis: the upper one draws its ticks, the lower one its labels.
    x_top = alt.X("label:O", sort=order, title=None, axis=alt.Axis(labels=False, ticks=True))
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
            color=alt.Color("series:N", scale=alt.Scale(domain=domain, range=[role(f"series-{k}") for k in
                                                                             ("value", "return", "advantage")]),
                            legend=None),
            strokeDash=alt.StrokeDash("series:N", scale=alt.Scale(domain=domain, range=[TRACE_DASHES[k] for k in
                                                                                    ("value", "return", "advantage")]),
                                      legend=None),
            tooltip=[alt.Tooltip("t:Q", title="position"), alt.Tooltip("token:N", title="token"),
                     alt.Tooltip("series:N", title="quantity"), alt.Tooltip("y:Q", title="value", format=".4f")],
        )
    )
    top = alt.layer(zero, lines).properties(width="container", height=200)
    bars_rows = [{"t": r["t"], "label": r["label"], "token": r["token"], "kl": r["kl"], "penalty": r["kl_penalty"]}
                 for r in trace.rows if r["kl"] is not None]
    bars = (
        alt.Chart(alt.Data(values=bars_rows))
        .mark_bar(color=role("series-kl"))
        .encode(
            x=x,
            y=alt.Y("penalty:Q", title="−β·KL_t"),
            tooltip=[alt.Tooltip("t:Q", title="position"), alt.Tooltip("token:N", title="token"),
                     alt.Tooltip("kl:Q", title="KL_t (k1)", format=".5f"),
                     alt.Tooltip("penalty:Q", title="reward term −β·KL_t", format=".6f")],
        )
    )
    bottom = alt.layer(zero, bars).properties(width="container", height=90)
    # a point, a tick and a label per token: on a canvas, not hundreds of SVG nodes (tooltips still work)
    top, bottom = chart_spec(top), chart_spec(bottom)
    for spec in (top, bottom):
        spec["usermeta"] = {"renderer": "canvas"}
    return top, bottom


def critic_trace_caption(trace: CriticTrace) -> str:
    outcome = {True: "a correct answer", False: "a wrong answer", None: "a response"}[trace.correct]
    values = [r["value"] for r in trace.rows]
    parts = [
        f"Run '{trace.run_id}', step {trace.step} (rollout {trace.rollout}), group {trace.group}, "
        f"response {trace.response}: {outcome} with reward {fmt_num(trace.reward)}, chosen as {trace.chosen_by}.",
        "Top: the critic's value at each token, the return it is trained towards and the GAE advantage "
        "(return minus value). Bottom: the KL penalty −β·KL_t that the reward carries on every token; the "
        "answer's reward is added on the last token.",
    ]
    if values and max(abs(v) for v in values) < 1e-6:
        parts.append("At this step the critic still predicts 0 everywhere (its head starts at zero), so the "
                     "advantage equals the return.")
    return " ".join(parts)


def critic_trace_html(site: Site, run: str | Run, moment: str | None, chart_ids: Sequence[str]) -> str:
    found, note = resolve_run(site, run)
    if found is None:
        return note_html(note)
    trace = critic_trace_data(found, moment)
    if trace is None:
        what = f"the teaching moment '{moment}'" if moment else "any logged step"
        return note_html(f"The run '{found.id}' has no response with critic values at {what} (the critic's value "
                     "and return are logged only by algorithms with a critic, such as PPO), so this figure is "
                     "not shown.")
    top, bottom = critic_trace_charts(trace)
    prompt = (f'<p class="unipo-trace-text" style="text-align:left"><strong>Prompt:</strong> {escape_text(trace.prompt)}<br>'
              f"<strong>Response:</strong> {escape_text(trace.text)}</p>")
    legend = legend_html([(TRACE_LABELS[k], role(f"series-{k}"), TRACE_DASHES[k]) for k in ("value", "return", "advantage")]
                         + [("KL penalty −β·KL_t (lower chart)", role("series-kl"), None)])
    return (f'<figure class="unipo-figure unipo-chart unipo-critic-trace">{prompt}{legend}'
            f"{vega_embed(top, chart_id=chart_ids[0])}{vega_embed(bottom, chart_id=chart_ids[1])}"
            f"<figcaption>{escape_text(critic_trace_caption(trace))}</figcaption></figure>")


@macro(html=True)
def critic_trace(site: Site, run: str, moment: str | None = None) -> str:
    """PPO's critic along one logged response: value, return, GAE advantage, KL penalty."""
    ids = [site.chart_id({"critic_trace": str(run), "moment": moment, "part": p}, prefix="unipo-trace")
           for p in ("curves", "kl")]
    return critic_trace_html(site, run, moment, ids)
