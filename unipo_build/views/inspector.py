"""The Step Inspector: every logged prompt group of one gradient update, token by token.

``step_inspector(run, step=None, moment=None, page_url=...)`` returns the HTML of one inspector:

- a container ``<div class="unipo-inspector">`` with ``data-run``, ``data-algorithm`` and
  ``data-site-root`` (relative path to the site root, from ``common.site_root(page.url)``);
- ``<template class="unipo-data" id="<id>-data">`` (``render.json_data``): the steps that have
  token files, the run's teaching moments, the resolved algorithm and the step to open, as JSON
  escaped by ``render.json_for_script`` so no string in it can end the element (a template, not a
  ``<script type="application/json">``: Material's instant navigation re-creates scripts without
  their attributes and would run the JSON as JavaScript);
- the first step rendered on the server (the given step, the moment's step, or the first step
  with token data), so the page is useful before, or without, JavaScript.

In the browser, ``overrides/assets/inspector.js`` fetches the step's token file
(``<site>/assets/runs/<run>/steps/step_NNNNNN.json``, copied there at build time) and renders
the interactive view: colour by a chosen quantity, legend, token selection (the ``unipo:token``
event), raw tokens or text, previous / next / go-to step and teaching moments.

Everything from a log reaches the HTML through ``render.escape_text``.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import runlog
from ..moments import MOMENT_NAMES, Moment, find_moments
from ..objective import browser_config
from ..render import escape_text, json_data
from ..runs import Run, RunCatalog, catalog_of
from ..schema import PromptGroup, Response, StepDetail
from . import fmt as F
from .common import EVENT_OPEN_STEP, EVENT_TOKEN, site_root, step_path
from .palette import DIVERGING

# ---------------------------------------------------------------------------
# The token colour scale (inspector.js holds the same anchors and interpolation)
# ---------------------------------------------------------------------------

#: The diverging token scale (the palette's PiYG: pink negative, near-white zero, green positive);
#: inspector.js reads the same anchors from the inspector's data.
PIYG = DIVERGING


@dataclass(frozen=True)
class Quantity:
    key: str  # the TokenArrays field
    label: str
    centre: float  # the value drawn white
    description: str


QUANTITIES: tuple[Quantity, ...] = (
    Quantity("objective", "Token objective", 0.0,
             "What this token adds to the objective before aggregation: green tokens are made more likely by "
             "the update, pink ones less likely."),
    Quantity("advantage", "Advantage", 0.0, "How much better than expected the response (or token) did."),
    Quantity("ratio", "Importance ratio", 1.0,
             "Probability now over probability when sampled; white at 1, green above, pink below."),
    Quantity("kl", "KL to reference", 0.0, "The per-token KL estimate the objective or the reward used."),
    Quantity("entropy", "Entropy", 0.0, "Entropy of the policy's distribution at this position (never negative)."),
    Quantity("logp", "Log-probability", 0.0, "log pi_theta of the token (never positive)."),
)
QUANTITY_KEYS = tuple(q.key for q in QUANTITIES)
DEFAULT_QUANTITY = "objective"


def _hex_to_rgb(colour: str) -> tuple[int, int, int]:
    return int(colour[1:3], 16), int(colour[3:5], 16), int(colour[5:7], 16)


def diverging_colour(value: float, domain: float, centre: float = 0.0) -> str:
    """The PiYG colour of ``value`` on a scale symmetric around ``centre`` with half-width ``domain``.

    Piecewise-linear in RGB between the 11 anchors; values beyond the domain take the end colour.
    """
    if not domain or not math.isfinite(domain) or domain <= 0:
        t = 0.0
    else:
        t = max(-1.0, min(1.0, (value - centre) / domain))
    position = (t + 1.0) / 2.0 * (len(PIYG) - 1)
    lo = min(int(math.floor(position)), len(PIYG) - 2)
    frac = position - lo
    a, b = _hex_to_rgb(PIYG[lo]), _hex_to_rgb(PIYG[lo + 1])
    rgb = tuple(int(math.floor(x + (y - x) * frac + 0.5)) for x, y in zip(a, b))
    return "#%02x%02x%02x" % rgb


def relative_luminance(colour: str) -> float:
    """WCAG 2 relative luminance of a #rrggbb colour."""
    def channel(c: int) -> float:
        s = c / 255.0
        return s / 12.92 if s <= 0.04045 else ((s + 0.055) / 1.055) ** 2.4
    r, g, b = (channel(c) for c in _hex_to_rgb(colour))
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def text_colour(background: str) -> str:
    """Black or white, whichever has the higher WCAG contrast on ``background``."""
    lum = relative_luminance(background)
    return "#000000" if (lum + 0.05) / 0.05 >= 1.05 / (lum + 0.05) else "#ffffff"


def quantity_domain(detail: StepDetail, key: str, centre: float = 0.0) -> float:
    """Half-width of the colour scale: the step's largest |value - centre| over real tokens (0 if none)."""
    largest = 0.0
    for group in detail.prompts:
        for response in group.responses:
            tokens = response.tokens
            if tokens is None:
                continue
            values = getattr(tokens, "return_" if key == "return" else key)
            if values is None:
                continue
            for v, m in zip(values, tokens.mask):
                if m:
                    largest = max(largest, abs(v - centre))
    return largest


def available_quantities(detail: StepDetail) -> list[str]:
    """The quantities the step's token arrays hold (KL and entropy are optional)."""
    present = []
    for key in QUANTITY_KEYS:
        for group in detail.prompts:
            if any(r.tokens is not None and getattr(r.tokens, key) is not None for r in group.responses):
                present.append(key)
                break
    return present


# ---------------------------------------------------------------------------
# Number formatting (inspector.js and explainer.js format the same way)
# ---------------------------------------------------------------------------

MINUS = "\u2212"


def fmt(value: float | None, digits: int = 4) -> str:
    """Compact number for display: 4 significant digits, scientific outside [1e-3, 1e4)."""
    if value is None:
        return "n/a"
    if value == 0:
        return "0"
    a = abs(value)
    if 1e-3 <= a < 1e4:
        text = f"{value:.{digits}g}"
    else:
        text = f"{value:.{digits - 1}e}"
        mantissa, exponent = text.split("e")
        if "." in mantissa:
            mantissa = mantissa.rstrip("0").rstrip(".")
        text = f"{mantissa}e{int(exponent)}"
    return text.replace("-", MINUS)


def fmt_signed(value: float | None, digits: int = 4) -> str:
    text = fmt(value, digits)
    return "+" + text if value is not None and value > 0 else text


# ---------------------------------------------------------------------------
# Moments, cached per run (finding them streams every token file of the run)
# ---------------------------------------------------------------------------

MOMENT_LABELS = {
    "all_correct_group": "A group where every answer is right (zero advantage)",
    "all_wrong_group": "A group where every answer is wrong (zero advantage)",
    "clipped_high": "The token clipped furthest above 1 + \u03b5",
    "clipped_low": "The token clipped furthest below 1 \u2212 \u03b5",
    "longest_wrong": "The longest wrong answer",
    "max_kl_step": "The step with the largest KL to the reference",
    "filtered_group": "A group dropped by the sampling filter",
    "ratio_max": "The token whose ratio rose furthest (clipped or not)",
    "ratio_min": "The token whose ratio fell furthest (clipped or not)",
    "mixed_group": "A group with both right and wrong answers",
    "shared_prefix_group": "The group whose shared opening tokens got the largest net push",
}


def run_moments(run: Run) -> dict[str, Moment | None]:
    """Every teaching moment of a run (None where the run lacks it), from its one reader."""
    return find_moments(run.path)


def nearest_step(steps: list[int], step: int) -> int | None:
    """The step with token data closest to ``step`` (the earlier one on a tie)."""
    if not steps:
        return None
    return min(steps, key=lambda s: (abs(s - step), s))


def moment_entries(moments: dict[str, Moment | None], token_steps: list[int]) -> list[dict[str, Any]]:
    """The moments as the browser gets them; a moment at a step without token data points at the nearest."""
    entries = []
    for name in MOMENT_NAMES:
        moment = moments.get(name)
        if moment is None:
            continue
        entry = moment.as_dict()
        entry["label"] = MOMENT_LABELS.get(name, name)
        if moment.step not in token_steps:
            entry["open_step"] = nearest_step(token_steps, moment.step)
        else:
            entry["open_step"] = moment.step
        entries.append(entry)
    return entries


# ---------------------------------------------------------------------------
# HTML
# ---------------------------------------------------------------------------

def _attrs(**attrs: Any) -> str:
    out = []
    for name, value in attrs.items():
        if value is None or value is False:
            continue
        name = name.rstrip("_").replace("_", "-")
        out.append(name if value is True else f'{name}="{escape_text(value)}"')
    return (" " + " ".join(out)) if out else ""


def note_html(text: str, kind: str = "note") -> str:
    """A short note in the views' style (the site's one admonition, ``fmt.note_html``)."""
    return F.note_html(text, kind, title="Note" if kind == "note" else "Warning", css_class="unipo-view-note")


def reward_text(response: Response) -> str:
    """'reward 1 (correct 1, format 0)': plain text, escaped where it is placed."""
    text = f"reward {fmt(response.reward)}"
    if response.reward_components:
        text += " (" + ", ".join(f"{k} {fmt(v)}" for k, v in response.reward_components.items()) + ")"
    return text


def _token_spans(response: Response, key: str, domain: float, centre: float) -> str:
    tokens = response.tokens
    assert tokens is not None
    values = getattr(tokens, key)
    spans = []
    for t, text in enumerate(tokens.text):
        if values is None or not tokens.mask[t]:
            style = ""
        else:
            bg = diverging_colour(values[t], domain, centre)
            # Black text is the stylesheet's default; only dark backgrounds need white.
            style = f"background:{bg}" + (";color:#fff" if text_colour(bg) == "#ffffff" else "")
        # Bare spans (styled through .unipo-tokens--static > span): the page carries thousands.
        spans.append(f'<span{_attrs(style=style or None)}>{escape_text(text)}</span>')
    return "".join(spans)


def _response_meta(response: Response) -> str:
    marks = []
    if response.correct is True:
        marks.append('<span class="unipo-mark unipo-mark--correct">\u2713 correct</span>')
    elif response.correct is False:
        marks.append('<span class="unipo-mark unipo-mark--wrong">\u2717 wrong</span>')
    if response.truncated:
        marks.append('<span class="unipo-mark unipo-mark--truncated">truncated</span>')
    if response.filtered:
        marks.append('<span class="unipo-mark unipo-mark--filtered">filtered</span>')
    facts = [f'<span class="unipo-fact">{escape_text(reward_text(response))}</span>']
    if response.advantage is not None:
        facts.append(f'<span class="unipo-fact">advantage {escape_text(fmt_signed(response.advantage))}</span>')
    facts.append(f'<span class="unipo-fact">{response.length} tokens</span>')
    if response.contribution is not None and not response.filtered:
        facts.append(f'<span class="unipo-fact">contribution {escape_text(fmt_signed(response.contribution))}</span>')
    return (f'<div class="unipo-response-meta"><span class="unipo-response-index">#{response.index}</span>'
            + "".join(marks) + "".join(facts) + "</div>")


def zero_advantage_note(group: PromptGroup, beta: float | None) -> str | None:
    """For a trained group whose logged advantages are all 0: why it contributes (almost) nothing."""
    if group.filtered or not group.responses or any(r.tokens is None for r in group.responses):
        return None
    if any(a != 0 for r in group.responses for a, m in zip(r.tokens.advantage, r.tokens.mask) if m):
        return None
    n = len(group.responses)
    n_correct = sum(1 for r in group.responses if r.correct)
    why = "right" if n_correct == n else "wrong" if n_correct == 0 else "equally rewarded"
    text = f"Every advantage in this group is 0 (all {n} answers {why}), so its tokens push nothing through the policy gradient"
    if beta:
        return text + (f"; its contribution is only the KL term −β·KL (β = {fmt(beta)}), which still "
                       "pulls each token toward the reference model.")
    return text + ": its contribution is 0."


def _group_html(uid: str, group: PromptGroup, key: str, domains: dict[str, float], centres: dict[str, float],
                beta: float | None = None) -> str:
    n = len(group.responses)
    n_correct = sum(1 for r in group.responses if r.correct)
    cls = "unipo-group unipo-group--filtered" if group.filtered else "unipo-group"
    head = [f'<span class="unipo-group-name">Group {group.index}</span>',
            f'<span class="unipo-fact">{n_correct}/{n} correct</span>']
    if group.filtered:
        head.append('<span class="unipo-mark unipo-mark--filtered">dropped by the sampling filter</span>')
    elif group.contribution is not None:
        head.append(f'<span class="unipo-fact">contribution {escape_text(fmt_signed(group.contribution))}</span>')
    body = [f'<div class="unipo-group-head">{"".join(head)}</div>',
            f'<p class="unipo-prompt"><span class="unipo-label">Prompt</span> {escape_text(group.prompt)}</p>']
    if group.answer is not None:
        body.append(f'<p class="unipo-answer"><span class="unipo-label">Answer</span> {escape_text(group.answer)}</p>')
    if group.filtered:
        body.append('<p class="unipo-group-note">Every response got the same correctness, so every advantage would be '
                    '0: the group was dropped and more prompts were sampled. It is not part of the update.</p>')
    zero = zero_advantage_note(group, beta)
    if zero:
        body.append(f'<p class="unipo-group-note unipo-group-note--zero">{escape_text(zero)}</p>')
    items = []
    for response in group.responses:
        if response.tokens is not None:
            text = f'<div class="unipo-tokens unipo-tokens--static">{_token_spans(response, key, domains.get(key, 0.0), centres.get(key, 0.0))}</div>'
        else:
            text = f'<div class="unipo-tokens unipo-tokens--plain">{escape_text(response.text)}</div>'
        items.append(f'<li class="unipo-response"{_attrs(data_response=response.index)}>{_response_meta(response)}{text}</li>')
    body.append(f'<ol class="unipo-responses">{"".join(items)}</ol>')
    gid = f"{uid}-g{group.index}{'f' if group.filtered else ''}"
    return f'<section class="{cls}"{_attrs(id=gid, data_group=group.index, data_filtered="1" if group.filtered else None)}>{"".join(body)}</section>'


BAR_FLOOR = 1e-6
#: |J| below this is zero up to float32 rounding of the minibatch sums.
ZERO_OBJECTIVE = 1e-7
ZERO_OBJECTIVE_NOTE = ("J is 0 up to rounding. That is the value of the objective, not what moves the policy: "
                       "its gradient is not 0, and the token colours show where it pushes (green tokens up, pink "
                       "tokens down). On the first update after sampling every ratio is 1, each token's objective is "
                       "its advantage; when every response weighs the same, a group's advantages cancel out.")


def kl_in_loss_beta(config) -> float | None:
    if config is not None and config.component("kl").kl_place == "loss":
        return float(config.param("kl", "beta"))
    return None


def group_bars_html(uid: str, detail: StepDetail, config) -> str:
    """The step objective and each group's contribution as a small bar list (every group of the update)."""
    groups = list(detail.groups)
    # Drawn to the largest contribution, but never to less than BAR_FLOOR: on a step whose every
    # contribution is rounding noise (ratios all 1, advantages summing to 0) the bars stay empty.
    largest = max(max((abs(g.contribution) for g in groups), default=0.0), BAR_FLOOR)
    beta = kl_in_loss_beta(config)
    group_based = config is None or config.component("advantage").group_baseline
    rows = []
    for g in groups:
        width = 50.0 * abs(g.contribution) / largest
        sign = "pos" if g.contribution > 0 else ("neg" if g.contribution < 0 else "zero")
        label = f"Group {g.index}"
        facts = []
        if g.n_correct is not None:
            facts.append(f"{g.n_correct}/{g.size} correct")
        zero_adv = group_based and g.n_correct is not None and g.n_correct in (0, g.size)
        note = ""
        if zero_adv:
            note = ("advantage 0: nothing from the policy gradient"
                    + (f"; only \u2212\u03b2\u00b7KL (\u03b2 = {fmt(beta)})" if beta else ""))
        link = (f'<a href="#{escape_text(uid)}-g{g.index}" class="unipo-bar-label">{escape_text(label)}</a>'
                if g.detailed else f'<span class="unipo-bar-label">{escape_text(label)}</span>')
        detailed = '<span class="unipo-mark unipo-mark--detailed">tokens below</span>' if g.detailed else ""
        rows.append(
            f'<li class="unipo-bar-row unipo-bar-row--{sign}"{_attrs(data_group=g.index)}>{link}'
            f'<span class="unipo-bar-track" aria-hidden="true"><span class="unipo-bar unipo-bar--{sign}" '
            f'style="width:{width:.1f}%"></span></span>'
            f'<span class="unipo-bar-value">{escape_text(fmt_signed(g.contribution))}</span>'
            f'<span class="unipo-bar-facts">{escape_text(" · ".join(facts))}{detailed}'
            f'{"<span class=" + chr(34) + "unipo-bar-note" + chr(34) + ">" + escape_text(note) + "</span>" if note else ""}</span></li>')
    filtered = ""
    if detail.filtered_groups:
        items = "".join(
            f'<li>Group {g.index}: {g.n_correct if g.n_correct is not None else "?"}/{g.size} correct, dropped</li>'
            for g in detail.filtered_groups)
        filtered = (f'<div class="unipo-filtered-list"><span class="unipo-label">Dropped by the sampling filter '
                    f'before this update ({len(detail.filtered_groups)} logged)</span><ul>{items}</ul></div>')
    n_detailed = sum(1 for g in groups if g.detailed)
    return (f'<div class="unipo-step-objective"><p class="unipo-step-j">Step objective '
            f'<strong>J = {escape_text(fmt_signed(detail.objective))}</strong>: the sum of the {len(groups)} groups\' '
            f'contributions in this update ({n_detailed} shown token by token below).</p>'
            + (f'<p class="unipo-step-note">{escape_text(ZERO_OBJECTIVE_NOTE)}</p>'
               if abs(detail.objective) < ZERO_OBJECTIVE else "")
            + f'<ul class="unipo-bars">{"".join(rows)}</ul>{filtered}</div>')


def legend_html(key: str, domain: float, centre: float) -> str:
    q = next(q for q in QUANTITIES if q.key == key)
    stops = ", ".join(f"{c} {100 * i / (len(PIYG) - 1):.0f}%" for i, c in enumerate(PIYG))
    ticks = [centre - domain, centre - domain / 2, centre, centre + domain / 2, centre + domain]
    labels = "".join(f"<span>{escape_text(fmt(t))}</span>" for t in ticks)
    title = q.label + (f": {fmt(centre)} on every token of this step" if domain == 0 else "")
    return (f'<div class="unipo-legend"><span class="unipo-legend-title">{escape_text(title)}</span>'
            f'<span class="unipo-legend-bar" style="background:linear-gradient(to right, {stops})"></span>'
            f'<span class="unipo-legend-ticks">{labels}</span></div>')


def step_html(uid: str, detail: StepDetail, config, quantity: str = DEFAULT_QUANTITY) -> str:
    """The server-rendered view of one step (no JavaScript needed to read it)."""
    centres = {q.key: q.centre for q in QUANTITIES}
    domains = {q.key: quantity_domain(detail, q.key, q.centre) for q in QUANTITIES}
    if quantity not in available_quantities(detail):
        quantity = DEFAULT_QUANTITY
    trained = [g for g in detail.prompts if not g.filtered]
    dropped = [g for g in detail.prompts if g.filtered]
    beta = kl_in_loss_beta(config)
    groups = "".join(_group_html(uid, g, quantity, domains, centres, beta) for g in trained + dropped)
    return (f'<div class="unipo-inspector-step"{_attrs(data_step=detail.step)}>'
            f'<p class="unipo-step-title">Step {detail.step} <span class="unipo-fact">rollout {detail.rollout}</span></p>'
            f'{legend_html(quantity, domains[quantity], centres[quantity])}'
            f'{group_bars_html(uid, detail, config)}<div class="unipo-groups">{groups}</div></div>')


def _uid(*parts: Any) -> str:
    digest = hashlib.sha256(json.dumps(parts, default=str).encode("utf-8")).hexdigest()[:8]
    return f"unipo-insp-{digest}"


def step_inspector(run: str | Run, step: int | None = None, moment: str | None = None, *,
                   page_url: str | None = None, catalog: RunCatalog | str | Path | None = None,
                   uid: str | None = None) -> str:
    """HTML of a Step Inspector for ``run`` (a run id or an algorithm id) on the page at ``page_url``.

    Opens at ``step``, or at the teaching moment ``moment`` (highlighting its group, response and
    token), or at the first step with token data. A missing run, step or moment gives a note,
    never a failed build. ``uid`` names the instance (element ids); derived from the arguments
    when not given.
    """
    if moment is not None and moment not in MOMENT_NAMES:
        raise ValueError(f"step_inspector: unknown moment {moment!r} (known: {', '.join(MOMENT_NAMES)})")
    runs = catalog_of(catalog) if not isinstance(run, Run) else None
    found = run if isinstance(run, Run) else runs.get(run)
    label = run.id if isinstance(run, Run) else str(run)
    if found is None:
        known = ", ".join(r.id for r in runs.loaded()) or "none"
        return note_html(f"The Step Inspector has no run '{label}' to show: there is no such run or algorithm in "
                         f"{runs.source.describe()} (runs found: {known}). Train one (see the README) or point "
                         "UNIPO_RUNS at your logs, then rebuild.")
    if not found.ok:
        return note_html(f"The run '{label}' could not be read, so the Step Inspector is not shown: {found.error}",
                         "warning")
    steps = found.token_steps()
    if not steps:
        return note_html(f"The run '{found.id}' has no token-level detail (no tokens/step_*.json), so there is "
                         "nothing for the Step Inspector to show.")
    uid = uid or _uid(found.id, step, moment, page_url)
    notes = []
    moments = run_moments(found)
    chosen_moment = None
    open_step = steps[0]
    if moment is not None:
        chosen_moment = moments.get(moment)
        if chosen_moment is None:
            notes.append(f"This run has no teaching moment '{moment}' ({MOMENT_LABELS.get(moment, moment)}): "
                         f"a run trained with other settings or seeds may lack it. Showing step {open_step} instead.")
        else:
            if chosen_moment.step in steps:
                open_step = chosen_moment.step
            else:
                open_step = nearest_step(steps, chosen_moment.step)
                notes.append(f"The moment '{moment}' is at step {chosen_moment.step}, which has no token detail; "
                             f"showing the nearest step with tokens, {open_step}.")
    if step is not None:
        if step in steps:
            open_step = step
        else:
            near = nearest_step(steps, step)
            notes.append(f"Step {step} of run '{found.id}' has no token detail; showing the nearest step that has, "
                         f"{near}.")
            open_step = near
    try:
        detail = found.reader.detail(open_step)
    except (runlog.LogError, runlog.LogErrors) as err:
        return note_html(f"Step {open_step} of run '{found.id}' could not be read: {err}", "warning")
    config = found.config
    root = site_root(page_url)
    entries = moment_entries(moments, steps)
    data = {
        "run": found.id,
        "algorithm": found.header.algorithm,
        "title": found.header.title or found.id,
        "steps": steps,
        "step": open_step,
        "moments": entries,
        "moment": next((e for e in entries if e["name"] == chosen_moment.name), None) if chosen_moment else None,
        "config": browser_config(config) if config is not None else None,
        "scale": list(PIYG),
        "quantities": [{"key": q.key, "label": q.label, "centre": q.centre, "description": q.description}
                       for q in QUANTITIES],
        "step_path": step_path(found.id, 0).rsplit("/", 1)[0] + "/",
        "events": {"open_step": EVENT_OPEN_STEP, "token": EVENT_TOKEN},
    }
    title = found.header.title or found.id
    caption = (f'<p class="unipo-inspector-caption"><span class="unipo-label">Step Inspector</span> '
               f'{escape_text(title)} <span class="unipo-fact">{escape_text(found.header.algorithm)}</span> '
               f'<span class="unipo-fact">{len(steps)} steps with token detail</span></p>')
    notes_html = "".join(note_html(n) for n in notes)
    moment_attr = chosen_moment.name if chosen_moment is not None else None
    return (f'<div class="unipo-inspector"{_attrs(id=uid, data_run=found.id, data_algorithm=found.header.algorithm, data_site_root=root, data_step=open_step, data_moment=moment_attr)}>'
            f'{json_data(data, data_id=uid + "-data")}'
            f'{caption}{notes_html}<div class="unipo-inspector-controls" hidden></div>'
            f'<div class="unipo-inspector-body">{step_html(uid, detail, config)}</div></div>')
