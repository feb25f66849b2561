"""The Step Inspector: one gradient update, its groups' contributions and one group token by token.

``step_inspector(run, step=None, moment=None, page_url=...)`` returns the HTML of one inspector:

- a container ``<div class="unipo-inspector">`` with ``data-run``, ``data-algorithm``,
  ``data-site-root`` (relative path to the site root, from ``common.site_root(page.url)``),
  ``data-step`` and ``data-group`` (the group shown);
- ``<template class="unipo-data" id="<id>-data">`` (``render.json_data``): the steps that have
  token files, the run's teaching moments, the resolved algorithm, the step and group to open,
  the token quantities and the palette's ramps, as JSON escaped by ``render.json_for_script``;
- the step rendered on the server, so the page is readable before, or without, JavaScript: the
  step objective with a bar per group of the update, and the open group (the moment's, or the
  first trained group with a nonzero advantage) with its responses as text.

One group is shown at a time: a step of 16 groups of 8 answers of up to ~90 tokens is thousands
of tokens, and a chapter has three inspectors. The group bars are the way to the others.

In the browser, ``unipo_build/site/views/inspector/inspector.js`` renders the open group token by token once the
inspector comes near the viewport (fetching ``<site>/assets/runs/<run>/steps/step_NNNNNN.json``),
colours tokens by a quantity the reader picks (``token_scale``), shows a selected token's numbers
under its response, keeps step, group, token and quantity in the URL hash (``UNIPO.state``) and
reports the selected token (the ``token`` event of ``common.EVENTS``) to the Algorithm Explainer.

Everything from a log reaches the HTML through ``render.escape_text``.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from unipo_build.core import runlog
from unipo_build.core.moments import MOMENT_NAMES, Moment, find_moments
from unipo_build.core.numbers import NOISE, fmt_num, fmt_objective, fmt_signed
from unipo_build.site.render import escape_text, json_data
from unipo_build.core.runs import Run, RunCatalog, catalog_of
from unipo_build.core.schema import PromptGroup, Response, StepDetail
from unipo_build.site import fmt as F
from unipo_build.site.browser import site_root, step_path
from unipo_build.site.views.explainer.explainer import explainer_config
from unipo_build.site.palette import (
    TOKEN_DIVERGING,
    TOKEN_DIVERGING_DARK,
    TOKEN_SEQUENTIAL,
    TOKEN_SEQUENTIAL_DARK,
)
from unipo_build.site.views.inspector.token_scale import DEFAULT_QUANTITY, MIN_TINT, QUANTITIES, QUANTITY_KEYS  # noqa: F401


def available_quantities(detail: StepDetail) -> list[str]:
    """The quantities the step's token arrays hold (KL and entropy are optional)."""
    present = []
    for q in QUANTITIES:
        for group in detail.prompts:
            if any(r.tokens is not None and getattr(r.tokens, q.source) is not None for r in group.responses):
                present.append(q.key)
                break
    return present


def group_key(group: PromptGroup) -> str:
    """How a logged group is named in element ids and the URL: its index, 'f' for a dropped one."""
    return f"{group.index}{'f' if group.filtered else ''}"


def group_name(detail: StepDetail, index: int, filtered: bool) -> str:
    """How a group is named to the reader: 'Group 3' for a trained one (its index in the update),
    'Filtered group 2' for the second group the sampling filter dropped at this step (a dropped
    group's logged index, 1000 and up in this project's trainer, means nothing to a reader).
    inspector.js ``groupName`` names them the same way."""
    if not filtered:
        return f"Group {index}"
    dropped = sorted({g.index for g in detail.filtered_groups} | {g.index for g in detail.prompts if g.filtered})
    return f"Filtered group {dropped.index(index) + 1}" if index in dropped else "Filtered group"


def default_group(detail: StepDetail, moment: Moment | None = None) -> PromptGroup | None:
    """The group an inspector opens on: the moment's (when it is on this step), else the first
    trained group with a nonzero advantage, else the first trained group, else the first logged.
    (inspector.js ``defaultGroup`` chooses the same way.)"""
    if not detail.prompts:
        return None
    if moment is not None and moment.group is not None and moment.step == detail.step:
        dropped = moment.name == "filtered_group"
        for g in detail.prompts:
            if g.index == moment.group and g.filtered == dropped:
                return g
    trained = [g for g in detail.prompts if not g.filtered]
    for g in trained:
        if any(r.tokens is not None and any(a != 0 for a, m in zip(r.tokens.advantage, r.tokens.mask) if m)
               for r in g.responses):
            return g
    return trained[0] if trained else detail.prompts[0]


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
    text = f"reward {fmt_num(response.reward, 4)}"
    if response.reward_components:
        text += " (" + ", ".join(f"{k} {fmt_num(v, 4)}" for k, v in response.reward_components.items()) + ")"
    return text


def response_facts(response: Response) -> str:
    """Every fact of a response in words (read by screen readers, and the row's tooltip)."""
    facts = [reward_text(response)]
    if response.advantage is not None:
        facts.append(f"advantage {fmt_signed(response.advantage, 4)}")
    facts.append(f"{response.length} tokens")
    if response.contribution is not None and not response.filtered:
        facts.append(f"contribution {fmt_objective(response.contribution, signed=True)}")
    if response.truncated:
        facts.append("truncated at the generation budget")
    if response.filtered:
        facts.append("filtered")
    return " \u00b7 ".join(facts)


def _response_meta(response: Response) -> str:
    """The response's row head: index, right or wrong, reward and advantage as columns
    (inspector.js ``responseMeta`` writes the same)."""
    mark = {True: ("correct", "\u2713"), False: ("wrong", "\u2717")}.get(response.correct, ("unknown", "?"))
    # the reward, advantage and marks are read in the screen-reader sentence (unipo-sr), once
    extra = "".join(f'<span class="unipo-mark unipo-mark--{k}" aria-hidden="true">{k}</span>'
                    for k, on in (("truncated", response.truncated), ("filtered", response.filtered)) if on)
    advantage = fmt_signed(response.advantage, 4) if response.advantage is not None else "\u2013"
    return (f'<span class="unipo-response-meta" title="{escape_text(response_facts(response))}">'
            f'<span class="unipo-response-index">#{response.index}</span>'
            f'<span class="unipo-response-mark unipo-response-mark--{mark[0]}" aria-hidden="true">{mark[1]}</span>'
            f'<span class="unipo-response-reward" aria-hidden="true">{escape_text(fmt_num(response.reward, 4))}</span>'
            f'<span class="unipo-response-adv" aria-hidden="true">{escape_text(advantage)}</span>'
            f'<span class="unipo-sr">{escape_text(mark[0] + ", " + response_facts(response))}</span>{extra}</span>')


RESPONSE_HEAD = ('<li class="unipo-response-head" aria-hidden="true"><span>#</span><span></span><span>reward</span>'
                 '<span>advantage</span><span>response</span></li>')


def zero_advantage_note(group: PromptGroup, beta: float | None) -> str | None:
    """For a trained group whose logged advantages are all 0: why it contributes (almost) nothing."""
    if group.filtered or not group.responses or any(r.tokens is None for r in group.responses):
        return None
    if any(a != 0 for r in group.responses for a, m in zip(r.tokens.advantage, r.tokens.mask) if m):
        return None
    n = len(group.responses)
    n_correct = sum(1 for r in group.responses if r.correct)
    known = any(r.correct is not None for r in group.responses)
    why = "equally rewarded" if not known else "right" if n_correct == n else "wrong" if n_correct == 0 else "equally rewarded"
    text = f"Every advantage in this group is 0 (all {n} answers {why}), so its tokens push nothing through the policy gradient"
    if beta:
        return text + (f"; its contribution is only the KL term −β·KL (β = {fmt_num(beta, 4)}), which still "
                       "pulls each token toward the reference model.")
    return text + ": its contribution is 0."


#: A group of up to RESPONSES_ALL responses (the tiny set's group size) shows every one; a larger
#: group (the gpu set's 16) its first RESPONSES_SHOWN, the rest one click away (inspector.js has
#: the same two numbers).
RESPONSES_ALL = 8
RESPONSES_SHOWN = 4


def first_of_each_verdict(responses: list[Response]) -> set[int]:
    """The indices of a group's first right and first wrong response: a folded group shows both,
    so a mixed group keeps its two sides in view (inspector.js does the same)."""
    out: dict[bool, int] = {}
    for r in responses:
        if r.correct is not None:
            out.setdefault(bool(r.correct), r.index)
    return set(out.values())


def responses_shown(n: int) -> int:
    """How many of a group's ``n`` responses show before the reader asks for the rest."""
    return n if n <= RESPONSES_ALL else RESPONSES_SHOWN
#: How many groups' bars the server writes while the list is folded (hidden but for the open one):
#: every one up to the tiny set's 16 groups per update, else the open one alone.
GROUPS_SHOWN = 16


def group_html(uid: str, group: PromptGroup, beta: float | None = None, focus: int | None = None,
               name: str | None = None) -> str:
    """One logged group: head, prompt, answer, notes, and its responses as text (inspector.js
    renders the same group token by token). ``focus``: a teaching moment's response, shown alone
    until the reader asks for the others."""
    n = len(group.responses)
    n_correct = sum(1 for r in group.responses if r.correct)
    cls = "unipo-group unipo-group--filtered" if group.filtered else "unipo-group"
    # A log that records no correctness (prime-rl's token export) says so instead of "0/n correct".
    correct = (f"{n_correct}/{n} correct" if any(r.correct is not None for r in group.responses)
               else "correctness not logged")
    head = [f'<span class="unipo-group-name">{escape_text(name or f"Group {group.index}")}</span>',
            f'<span class="unipo-fact">{correct}</span>']
    if group.filtered:
        head.append('<span class="unipo-mark unipo-mark--filtered">dropped by the sampling filter</span>')
    elif group.contribution is not None:
        head.append(f'<span class="unipo-fact">contribution {escape_text(fmt_objective(group.contribution, signed=True))}</span>')
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
    key = group_key(group)
    focus = focus if any(r.index == focus for r in group.responses) else None

    def item(r: Response) -> str:
        return (f'<li class="unipo-response"{_attrs(id=f"{uid}-g{key}-r{r.index}", data_response=r.index)}>'
                f'{_response_meta(r)}<div class="unipo-tokens unipo-tokens--plain">{escape_text(r.text)}</div></li>')

    # A moment's response alone, else responses_shown: inspector.js renders the others when the
    # reader asks, so a set that samples more answers per prompt keeps its pages within the node
    # and height budgets.
    limit = responses_shown(len(group.responses))
    sides = first_of_each_verdict(group.responses)
    shown = [r for i, r in enumerate(group.responses)
             if (r.index == focus if focus is not None else i < limit or r.index in sides)]
    rest = [r for r in group.responses if all(r is not x for x in shown)]
    body.append(f'<ol class="unipo-responses">{RESPONSE_HEAD}{"".join(item(r) for r in shown)}</ol>')
    if rest:
        body.append(f'<p class="unipo-responses-more">The group\'s other {len(rest)} responses are '
                    'folded (the Step Inspector shows them with JavaScript).</p>')
    return (f'<section class="{cls}"{_attrs(id=f"{uid}-g{key}", data_group=group.index, data_key=key, data_filtered="1" if group.filtered else None)}>'
            f'{"".join(body)}</section>')


#: |J| below this is zero up to float32 rounding of the minibatch sums.
ZERO_OBJECTIVE = NOISE
ZERO_OBJECTIVE_NOTE = ("J is 0 up to rounding. That is the value of the objective, not what moves the policy: "
                       "its gradient is not 0, and the token colours show where it pushes (green tokens up, pink "
                       "tokens down). On the first update after sampling every ratio is 1, each token's objective is "
                       "its advantage; when every response weighs the same, a group's advantages cancel out.")


def zero_advantage_title(beta: float | None) -> str:
    """The zero-advantage mark's explanation (inspector.js zeroAdvantageTitle)."""
    return ("Every answer got the same reward, so the policy gradient gets nothing from this group"
            + (f"; only the KL term \u2212\u03b2\u00b7KL (\u03b2 = {fmt_num(beta, 4)}) acts on its tokens." if beta
               else ": it contributes 0."))


def kl_in_loss_beta(config) -> float | None:
    if config is not None and config.component("kl").kl_place == "loss":
        return float(config.param("kl", "beta"))
    return None


def _bar_width(value: float, largest: float) -> float:
    """Percent of the track's half: contributions below rounding noise draw no bar."""
    return 0.0 if abs(value) < NOISE or largest < NOISE else 50.0 * abs(value) / largest


def j_text(value: float) -> str:
    """'J = +0.0123', or 'J ≈ 0' when the objective is rounding noise (inspector.js jText)."""
    text = fmt_objective(value, signed=True)
    return f"J {text}" if text.startswith("\u2248") else f"J = {text}"


def group_bars_html(uid: str, detail: StepDetail, config, open_key: str | None = None, folded: bool = False) -> str:
    """The step objective and each group's contribution as a bar list (every group of the update);
    ``folded``: only the open group's bar shows (the others one click away in the browser)."""
    groups = list(detail.groups)
    largest = max((abs(g.contribution) for g in groups), default=0.0)
    beta = kl_in_loss_beta(config)
    group_based = config is None or config.component("advantage").group_baseline
    # folded whenever a group is open, a dropped one included (then no bar shows, the list stays)
    folded = folded and bool(open_key) and any(group_key(g) == open_key for g in (*groups, *detail.filtered_groups))
    # Folded, the other groups' bars are hidden; an update of more groups than the tiny set's leaves
    # them out of the page (inspector.js draws them when the reader unfolds the list), so its pages
    # keep the node budget.
    folded_rows = folded and len(groups) > GROUPS_SHOWN
    rows: list[str] = []
    for g in groups:
        width = _bar_width(g.contribution, largest)
        sign = "zero" if width == 0 else ("pos" if g.contribution > 0 else "neg")
        facts = [f"{g.n_correct}/{g.size} correct"] if g.n_correct is not None else []
        zero_adv = group_based and g.n_correct is not None and g.n_correct in (0, g.size)
        note = (f'<span class="unipo-bar-note" title="{escape_text(zero_advantage_title(beta))}">advantage 0</span>'
                if zero_adv else "")
        detailed = '<span class="unipo-mark unipo-mark--detailed">tokens</span>' if g.detailed else ""
        is_open = " unipo-bar-row--open" if open_key == str(g.index) else ""
        if folded_rows and not is_open:
            continue
        rows.append(
            f'<li class="unipo-bar-row unipo-bar-row--{sign}{is_open}"{_attrs(data_group=g.index, data_key=g.index, data_detailed="1" if g.detailed else None)}>'
            f'<span class="unipo-bar-label">Group {g.index}</span>'
            f'<span class="unipo-bar-track" aria-hidden="true"><span class="unipo-bar unipo-bar--{sign}" '
            f'style="width:{width:.1f}%"></span></span>'
            f'<span class="unipo-bar-value">{escape_text(fmt_objective(g.contribution, signed=True))}</span>'
            f'<span class="unipo-bar-facts">{escape_text(" · ".join(facts))}{detailed}{note}</span></li>')
    filtered = ""
    if detail.filtered_groups:
        items = "".join(
            f'<li>{escape_text(group_name(detail, g.index, True))}: '
            f'{g.n_correct if g.n_correct is not None else "?"}/{g.size} correct, dropped</li>'
            for g in detail.filtered_groups)
        filtered = (f'<div class="unipo-filtered-list"><span class="unipo-label">Dropped by the sampling filter '
                    f'before this update ({len(detail.filtered_groups)} logged)</span><ul>{items}</ul></div>')
    n_detailed = sum(1 for g in groups if g.detailed)
    return (f'<div class="unipo-step-objective"{" data-folded" if folded else ""}><p class="unipo-step-j">Step objective '
            f'<strong>{escape_text(j_text(detail.objective))}</strong>, the sum of the {len(groups)} groups\' '
            f'contributions; {n_detailed} were logged token by token (marked \u201ctokens\u201d).</p>'
            + (f'<details class="unipo-step-note"><summary>Why is J \u2248 0?</summary><p>{escape_text(ZERO_OBJECTIVE_NOTE)}</p>'
               '</details>' if abs(detail.objective) < ZERO_OBJECTIVE else "")
            + f'<ul class="unipo-bars">{"".join(rows)}</ul>{filtered}</div>')


def step_html(uid: str, detail: StepDetail, config, open_group: PromptGroup | None, folded: bool = False,
              focus: int | None = None) -> str:
    """The server-rendered view of one step (no JavaScript needed to read it)."""
    group = (group_html(uid, open_group, kl_in_loss_beta(config), focus,
                        group_name(detail, open_group.index, open_group.filtered))
             if open_group is not None else "")
    open_key = group_key(open_group) if open_group is not None else None
    return (f'<div class="unipo-inspector-step"{_attrs(data_step=detail.step)}>'
            f'<p class="unipo-step-title">Step {detail.step} <span class="unipo-fact">rollout {detail.rollout}</span></p>'
            f'{group_bars_html(uid, detail, config, open_key, folded)}<div class="unipo-group-view">{group}</div></div>')


def last_step(run: Run, token_steps: list[int]) -> int:
    """The run's last logged step (its metrics), else its last step with token detail."""
    table = run.reader.table
    return int(table.steps[-1]) if table.n else int(token_steps[-1])


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
        return note_html(f"The run '{found.id}' has no token-level detail (no {runlog.TOKENS_DIR}/{runlog.TOKEN_FILE_GLOB}), so there is "
                         "nothing for the Step Inspector to show.")
    uid = uid or _uid(found.id, step, moment, page_url)
    notes = []
    status = ""  # where the moment is when its step has no tokens (the browser's status line says it too)
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
                status = (f'<p class="unipo-inspector-status unipo-moment-note">{escape_text(MOMENT_LABELS.get(moment, moment))} '
                          f'is at step {chosen_moment.step}, which has no token detail; showing the nearest step with '
                          f'tokens, {open_step}.</p>')
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
    shown_moment = chosen_moment if chosen_moment is not None and chosen_moment.step == open_step else None
    open_group = default_group(detail, shown_moment)
    data = {
        "run": found.id,
        "algorithm": found.header.algorithm,
        "title": found.header.title or found.id,
        "steps": steps,
        # the run's last logged step: a link from another run set maps its step to the same
        # fraction of training here (inspector.js mapStep)
        "last_step": last_step(found, steps),
        "step": open_step,
        "moments": entries,
        "moment": next((e for e in entries if e["name"] == chosen_moment.name), None) if chosen_moment else None,
        "group": group_key(open_group) if open_group is not None else None,
        # with each kind's explainer data: the card beside a selected token (explainer.js)
        "config": explainer_config(config) if config is not None else None,
        # the token ramps: the page's text colour reads on every token (palette.text_safe)
        "ramps": {"diverging": list(TOKEN_DIVERGING), "diverging_dark": list(TOKEN_DIVERGING_DARK),
                  "sequential": list(TOKEN_SEQUENTIAL), "sequential_dark": list(TOKEN_SEQUENTIAL_DARK),
                  "min_tint": MIN_TINT},
        "quantities": [{"key": q.key, "label": q.label, "kind": q.kind, "source": q.source, "transform": q.transform,
                        "description": q.description} for q in QUANTITIES],
        # the run's step-file folder; the file name comes from the page's browser data (common.browser_data)
        "step_path": step_path(found.id, 0).rsplit("/", 1)[0] + "/",
    }
    title = found.header.title or found.id
    caption = (f'<p class="unipo-inspector-caption"><span class="unipo-label">Step Inspector</span> '
               f'{escape_text(title)} <span class="unipo-fact">{escape_text(found.header.algorithm)}</span> '
               f'<span class="unipo-fact">{len(steps)} steps with token detail</span></p>')
    notes_html = "".join(note_html(n) for n in notes)
    moment_attr = chosen_moment.name if chosen_moment is not None else None
    return (f'<div class="unipo-inspector"{_attrs(id=uid, data_run=found.id, data_algorithm=found.header.algorithm, data_site_root=root, data_step=open_step, data_last_step=data["last_step"], data_group=data["group"], data_moment=moment_attr)}>'
            f'{json_data(data, data_id=uid + "-data")}'
            f'{caption}{notes_html}<div class="unipo-inspector-controls" hidden></div>{status}'
            f'<div class="unipo-inspector-body">'
            f'{step_html(uid, detail, config, open_group, folded=True, focus=shown_moment.response if shown_moment else None)}'
            '</div></div>')
