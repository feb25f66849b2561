"""Response advantages with a batch baseline against a group baseline, from the runs' token files.

    {{ advantage_noise(runs=("reinforce", "grpo")) }}     on a paragraph of its own

The advantages of each run's token-logged steps as histograms coloured by correctness and by
whether the response's group was mixed or got one reward throughout, and how much of each run's
advantage signal fell on such one-reward groups. Each token file contributes its rows in the run
reader's one pass (a ``reader.token_digest``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Sequence

from unipo_build.core.numbers import fmt_pct
from unipo_build.core.reader import token_digest
from unipo_build.core.registry import REGISTRY
from unipo_build.site.render import chart_spec, escape_text, vega_embed
from unipo_build.core.runs import Run
from unipo_build.core.schema import Response, StepDetail
from unipo_build.site.pages.dynamics.critic_trace import resolve_run
from unipo_build.site.fmt import legend_html, note_html
from unipo_build.site.palette import role
from unipo_build.site.context import Site, macro

#: (category, palette role): correct / wrong answers of mixed / one-reward groups.
NOISE_CATEGORIES = (
    ("correct, mixed group", "correct-mixed"),
    ("correct, every answer same reward", "correct-same"),
    ("wrong, mixed group", "wrong-mixed"),
    ("wrong, every answer same reward", "wrong-same"),
)
NOISE_BINS = 41


def _masked(values: Sequence[float], mask: Sequence[int]) -> list[float]:
    return [v for v, m in zip(values, mask) if m]


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


@token_digest("advantage_noise")
def step_rows(detail: StepDetail) -> list[dict[str, Any]]:
    """Every trained response of one token file with its advantage (the noise figure's rows)."""
    rows = []
    for group in detail.prompts:
        if group.filtered:
            continue
        same = len({r.reward for r in group.responses}) == 1
        for response in group.responses:
            if response.tokens is None:
                continue
            advantage = response_advantage(response)
            if advantage is None:
                continue
            rows.append({"step": detail.step, "rollout": detail.rollout, "group": group.index,
                         "response": response.index, "correct": bool(response.correct),
                         "reward": response.reward, "advantage": advantage, "same_reward": same})
    return rows


def advantage_noise_data(site: Site, run: Run) -> NoiseSummary:
    """Every distinct trained response of the run's token-logged steps with its advantage (a
    rollout's response logged on several updates counts once)."""
    kind = run.config.kind("advantage") if run.config is not None else None
    summary = NoiseSummary(run_id=run.id, algorithm=run.header.algorithm,
                           name=site.algorithm_name(run.header.algorithm), advantage_kind=kind, steps=0, responses=0)
    seen: set[tuple[int, int, int]] = set()
    per_step = run.reader.digest("advantage_noise")
    for step in sorted(per_step):
        summary.steps += 1
        for row in per_step[step]:
            key = (row["rollout"], row["group"], row["response"])
            if key not in seen:
                seen.add(key)
                summary.rows.append(row)
    summary.responses = len(summary.rows)
    return summary


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
            color=alt.Color("category:N", scale=alt.Scale(domain=domain, range=[role(c) for _, c in NOISE_CATEGORIES]),
                            legend=None),
            tooltip=[alt.Tooltip("category:N", title="responses"),
                     alt.Tooltip("lo:Q", title="advantage from", format=".3f"),
                     alt.Tooltip("hi:Q", title="advantage to", format=".3f"),
                     alt.Tooltip("count:Q", title="responses"),
                     alt.Tooltip("share:Q", title="share of the run's", format=".1%")],
        )
    )
    chart = alt.layer(zero, bars, title=alt.TitleParams(title, anchor="start", fontSize=13, fontWeight="normal"))
    return chart_spec(chart.properties(width="container", height=170))


def _baseline_words(summary: NoiseSummary) -> str:
    kind = REGISTRY["advantage"].get(summary.advantage_kind or "")
    return kind.label if kind is not None and kind.label else (summary.advantage_kind or "unknown advantage")


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
            cells.append("–" if share is None else fmt_pct(share, None))
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
        return (f"In {run}, {fmt_pct(share, None)} of the logged answers sat in groups where every answer got the same "
                "reward, and they carry none of its advantage signal: the group baseline cancels them.")
    return (f"In {run}, {fmt_pct(share, None)} of the logged answers sat in groups where every answer got the same "
            f"reward, yet they carry {fmt_pct(signal, None)} of its advantage signal (the sum of squared advantages): "
            "pushes that say how easy or hard the prompt was, not which answer was better.")


def advantage_noise_html(summaries: Sequence[NoiseSummary], chart_ids: Sequence[str], notes: Sequence[str] = ()) -> str:
    if not summaries:
        return "".join(note_html(n) for n in notes)
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
    notes_html = "".join(note_html(n) for n in notes)
    legend = legend_html([(name, role(colour), None) for name, colour in NOISE_CATEGORIES])
    return (f'<figure class="unipo-figure unipo-chart unipo-advantage-noise">{notes_html}{legend}{charts}'
            f"{noise_table(summaries)}<figcaption>{escape_text(caption)}</figcaption></figure>")


@macro(html=True)
def advantage_noise(site: Site, runs: Sequence[str] = ("reinforce", "grpo")) -> str:
    """Response advantages of several runs side by side: batch baseline vs group baseline."""
    summaries, notes = [], []
    for name in runs:
        found, note = resolve_run(site, name)
        if found is None:
            notes.append(note)
            continue
        summary = advantage_noise_data(site, found)
        if not summary.rows:
            notes.append(f"The run '{found.id}' has no trained responses with token detail, so it is not shown.")
            continue
        summaries.append(summary)
    ids = [site.chart_id({"advantage_noise": s.run_id}, prefix="unipo-noise") for s in summaries]
    return advantage_noise_html(summaries, ids, notes)
