"""Guided paths: the UNIPO paper's two usage scenarios as short sections a teacher can project.

    {{ guided_all_correct("grpo") }}              scenario 1 (paper, 4.1): Explorer -> an all-correct
                                                  group -> a token whose only push is the KL term
    {{ guided_aggregation("dapo", "dr_grpo") }}   scenario 2 (paper, 4.2): the two aggregation
                                                  cards side by side with a real step's numbers

Each step of a path is a sentence whose numbers come from the shipped runs (the step, group and
token are found by searching the logs, never typed into a chapter) and a link that opens a view
of the page at that place by code: the link carries the view's state as the URL hash reads it
(``UNIPO.state`` in overrides/assets/unipo.js, which resolves ``data-path-*`` to the view's id).
A run that is missing or lacks such a moment gives a note, not a failed build.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from unipo_build.core.numbers import NOISE, fmt_num, fmt_signed
from unipo_build.site.render import escape_text
from unipo_build.core.specs import REGISTRY
from unipo_build.site.browser import token_label
from unipo_build.site.fmt import math_inline, note_html
from unipo_build.site.views.inspector.inspector import kl_in_loss_beta
from unipo_build.site.context import Site, macro


def path_link(text: str, view: str, params: dict[str, Any], *, run: str | None = None,
              moment: str | None = None, focus: str | None = None) -> str:
    """A link that opens ``view`` of this page at ``params`` (unipo.js turns it into the URL)."""
    attrs = {"data-path-view": view, "data-path-run": run, "data-path-moment": moment,
             "data-path-params": ",".join(f"{k}={v}" for k, v in params.items()), "data-path-focus": focus}
    rendered = "".join(f' {k}="{escape_text(v)}"' for k, v in attrs.items() if v is not None)
    return f'<a class="unipo-path-link md-button"{rendered}>{escape_text(text)}</a>'


def path_html(slug: str, title: str, steps: list[tuple[str, str]]) -> str:
    """The path: a numbered list, each step its sentence (HTML) and its link (HTML, may be "")."""
    items = "".join(f'<li class="unipo-path-step"><p>{sentence} {link}</p></li>' if link.startswith("<a ")
                    else f'<li class="unipo-path-step"><p>{sentence}</p>{link}</li>' for sentence, link in steps)
    return (f'<div class="unipo-path" data-path="{escape_text(slug)}" role="group" aria-label="{escape_text(title)}">'
            f'<ol class="unipo-path-steps">{items}</ol></div>')


# ------------------------------------------------------------------ scenario 1: the all-correct group


@dataclass(frozen=True)
class KlOnlyToken:
    """A token of an all-correct group: advantage 0, so its objective is the KL term alone."""

    step: int
    n_steps: int
    group: int
    n_groups: int
    size: int
    reward: float
    response: int
    t: int
    text: str
    ratio: float
    kl: float
    beta: float
    objective: float
    group_contribution: float | None
    step_objective: float


#: Which token of the group the path selects, by its KL among the group's tokens.
PERCENTILE = 0.9


def kl_only_token(run) -> KlOnlyToken | None:
    """The first logged all-correct group (by step) whose tokens' KL terms are above float noise,
    and its token at the :data:`PERCENTILE` of the KL among those; None when the KL is not in the
    loss or no such group was logged."""
    beta = kl_in_loss_beta(run.config)
    if beta is None:
        return None
    steps = run.token_steps()
    for step in steps:
        detail = run.reader.detail(step)
        for group in detail.prompts:
            responses = group.responses
            if group.filtered or not responses or any(r.tokens is None or r.tokens.kl is None for r in responses):
                continue
            if not all(r.correct for r in responses):
                continue
            # a clearly pulled token that is not the group's outlier (the KL is heavy-tailed): the
            # 90th percentile of the KL among the tokens above float noise
            pushed = sorted(((abs(k), r.index, t, r, k) for r in responses
                             for t, (m, a, k) in enumerate(zip(r.tokens.mask, r.tokens.advantage, r.tokens.kl))
                             if m and a == 0 and abs(k) >= NOISE), key=lambda x: x[:3])
            if not pushed:
                continue
            _, _, t, r, k = pushed[int(PERCENTILE * (len(pushed) - 1))]
            best = (r, t, k)
            r, t, k = best
            summary = next((g for g in detail.groups if g.index == group.index and not g.filtered), None)
            return KlOnlyToken(step=step, n_steps=len(steps), group=group.index, n_groups=len(detail.groups),
                               size=len(responses), reward=r.reward, response=r.index, t=t, text=r.tokens.text[t],
                               ratio=r.tokens.ratio[t], kl=k, beta=beta, objective=r.tokens.objective[t],
                               group_contribution=summary.contribution if summary else group.contribution,
                               step_objective=detail.objective)
    return None


KL_TERM_TEX = r"-\beta\,\mathbb{D}"


_token_text = token_label  # the one way a token is named (site/browser.py)


@macro(name="guided_all_correct", html=True)
def all_correct_path(site: Site, run_name: str = "grpo") -> str:
    """Scenario 1 of the UNIPO paper as a guided path: Explorer -> all-correct group -> KL-only token."""
    run = site.run(run_name)
    if run is None:
        return note_html(f"The guided path needs a run of '{run_name}', which is not in this build.", "warning")
    found = kl_only_token(run)
    if found is None:
        return note_html(f"The run '{run.id}' logged no all-correct group whose tokens carry a KL term above "
                         f"{fmt_num(NOISE)} (or its KL is not in the loss), so this path has no group to open.")
    f = found
    step_link = path_link(f"Open update {f.step} in the Training Explorer", "explorer", {"step": f.step}, run=run.id)
    group_link = path_link(f"Open group {f.group}", "explorer-inspector", {"step": f.step, "group": f.group},
                           run=run.id, focus=".unipo-group")
    token_link = path_link(f"Select its token {_token_text(f.text)}", "explorer-inspector",
                           {"step": f.step, "group": f.group, "token": f"{f.response}.{f.t}"},
                           run=run.id, focus=".unipo-tok--selected")
    kl_link = path_link("Colour the group by its KL", "explorer-inspector",
                        {"step": f.step, "group": f.group, "token": f"{f.response}.{f.t}", "colour": "kl"},
                        run=run.id, focus=".unipo-tok--selected")
    contribution = ("" if f.group_contribution is None else
                    f" The whole group adds {escape_text(fmt_signed(f.group_contribution))} to the update's objective "
                    f"J = {escape_text(fmt_signed(f.step_objective))}: its KL terms, nothing else; the groups with both "
                    "right and wrong answers carry the rest.")
    steps = [
        (f"Update {f.step} is the first of the {f.n_steps} logged token by token with a group whose answers are all "
         "right and whose tokens already differ from the reference model.", step_link),
        (f"Group {f.group}, one of its {f.n_groups}: all {f.size} answers right, reward "
         f"{escape_text(fmt_num(f.reward))} each, so every advantage (reward minus the group's mean) is 0. "
         "Predict the colour of its tokens.", group_link),
        (f"Token {_token_text(escape_text(f.text))} of answer #{f.response} (one of the group's most pulled) has ratio {escape_text(fmt_num(f.ratio, 4))} "
         f"and advantage 0, so its clipped term is 0. Its KL to the reference model is {escape_text(fmt_num(f.kl, 4))}, "
         f"so its objective is {math_inline(KL_TERM_TEX)} = \u2212{escape_text(fmt_num(f.beta))} \u00d7 "
         f"{escape_text(fmt_num(f.kl, 4))} = {escape_text(fmt_signed(f.objective, 4))}: the KL term is the only push on it, "
         "pulling it back toward the reference model.", token_link),
        ("Coloured by the KL, the group shows where that pull is strongest." + contribution, kl_link),
    ]
    return path_html("all-correct", "Guided path: a group where every answer is right", steps)


# ------------------------------------------------------------------ scenario 2: two aggregations


@dataclass(frozen=True)
class AnswerWeight:
    response: int
    length: int
    correct: bool | None
    token_weight: float  # the weight of each of its tokens (the first real token's)
    total: float  # the sum of its tokens' weights


@dataclass(frozen=True)
class LongShort:
    """The longest and the shortest answer of one logged group of one update."""

    step: int
    group: int
    n_responses: int  # answers in the update (N)
    long: AnswerWeight
    short: AnswerWeight


def _answer(r) -> AnswerWeight:
    tk = r.tokens
    weights = [w for w, m in zip(tk.weight, tk.mask) if m]
    return AnswerWeight(r.index, sum(1 for m in tk.mask if m), r.correct, weights[0] if weights else 0.0, sum(weights))


def long_short(run, step: int) -> LongShort | None:
    """At ``step``, the trained logged group whose longest answer is the most times its shortest."""
    detail = run.reader.detail(step)
    best = None
    for g in detail.prompts:
        answers = [_answer(r) for r in g.responses if r.tokens is not None and not r.filtered]
        answers = [a for a in answers if a.length > 0]
        if g.filtered or len(answers) < 2:
            continue
        long_ = max(answers, key=lambda a: a.length)
        short = min(answers, key=lambda a: a.length)
        if best is None or long_.length / short.length > best[0]:
            best = (long_.length / short.length, g.index, long_, short)
    if best is None:
        return None
    n = sum(g.size for g in detail.groups)
    return LongShort(step=step, group=best[1], n_responses=n, long=best[2], short=best[3])


def _weight_card(site: Site, run, first: LongShort, last: LongShort | None) -> str:
    cfg = run.config
    kind = cfg.components["aggregation"].kind
    entry = REGISTRY["aggregation"][kind]
    name = site.algorithm_name(run.header.algorithm)
    weight_tex = entry.weight_tex
    rows = []
    for a, which in ((first.long, "long"), (first.short, "short")):
        verdict = " \u2713" if a.correct else " \u2717" if a.correct is False else ""
        rows.append(f'<tr data-answer="{which}"><th scope="row" title="answer #{a.response}, '
                    f'{"right" if a.correct else "wrong" if a.correct is False else "unscored"}">{which} #{a.response}{verdict}: '
                    f'{escape_text(fmt_num(a.length))} tokens</th>'
                    f'<td class="unipo-num" data-value="{a.token_weight!r}">{escape_text(fmt_num(a.token_weight, 4))}</td>'
                    f'<td class="unipo-num" data-value="{a.total!r}">{escape_text(fmt_num(a.total, 4))}</td></tr>')
    ratio = first.long.total / first.short.total if first.short.total else None
    same_token = abs(first.long.token_weight - first.short.token_weight) <= 1e-12 * max(1.0, first.long.token_weight)
    if same_token:
        per_token = "every token of the update weighs the same, so the long answer carries its length's share"
    else:
        per_token = (f"a token of the short answer weighs {escape_text(fmt_num(first.short.token_weight / first.long.token_weight, 3))} "
                     "times one of the long answer, so each answer carries the same total")
    sentence = (f"Update {first.step}, group {first.group} (N = {escape_text(fmt_num(first.n_responses))} answers in the update): "
                f"{per_token}" + (f"; the long answer weighs {escape_text(fmt_num(ratio, 3))} times the short one." if ratio else "."))
    across = ""
    if last is not None and last.step != first.step:
        w0, w1 = first.long.token_weight, last.long.token_weight
        if abs(w0 - w1) <= 1e-9 * max(abs(w0), 1e-30):
            across = (f" At update {last.step} a token still weighs {escape_text(fmt_num(w1, 4))}: the weight does not "
                      "depend on the other answers of the batch.")
        else:
            across = (f" At update {last.step} a token weighs {escape_text(fmt_num(w1, 4))} instead: the weight moves with "
                      "the lengths of all the other answers of the batch.")
    return (f'<div class="unipo-agg-card" data-algorithm="{escape_text(run.header.algorithm)}" data-step="{first.step}">'
            f'<p class="unipo-agg-card-head"><strong>{escape_text(name)}</strong> <code>{escape_text(kind)}</code></p>'
            f'<p class="unipo-agg-card-formula">{math_inline(weight_tex)}</p>'
            f'<p class="unipo-agg-card-meaning">{escape_text(entry.weight_meaning)}</p>'
            f'<div class="unipo-table-wrap"><table class="unipo-agg-card-table"><thead><tr><th title="\u2713 right, \u2717 wrong">answer</th>'
            f'<th>per token</th><th>whole answer</th></tr></thead><tbody>{"".join(rows)}</tbody></table></div>'
            f'<p class="unipo-agg-card-says">{sentence}{across}</p></div>')


def aggregation_path(site: Site, a: str, b: str) -> str:
    cards, missing = [], []
    for name in (a, b):
        run = site.run(name)
        steps = run.token_steps() if run is not None else []
        found = long_short(run, steps[0]) if steps else None
        if run is None or found is None:
            missing.append(site.algorithm_name(name) if run is None else run.id)
            continue
        later = next((x for x in (long_short(run, s) for s in reversed(steps[1:])) if x is not None), None)
        cards.append(_weight_card(site, run, found, later))
    if missing:
        return note_html("The side-by-side aggregation needs logged token detail of " + ", ".join(missing) +
                         ", which this build does not have.", "warning")
    name_a, name_b = site.algorithm_name(a), site.algorithm_name(b)
    compare_link = path_link(f"Open {name_a} above {name_b}, aggregation slot open", "compare",
                             {"a": a, "b": b, "open": "aggregation"}, focus='.unipo-diff-row[data-slot="aggregation"]')
    steps = [
        (f"The two objectives slot by slot: {escape_text(name_a)} and {escape_text(name_b)} differ in their aggregation "
         "(and in what else the comparison marks).", compare_link),
        ("Each aggregation card with a real update of its own run: the longest and the shortest answer of one logged "
         "group, the weight of each of their tokens, and the weight of the whole answer.",
         f'<div class="unipo-agg-pair">{"".join(cards)}</div>'),
    ]
    return path_html("aggregation", f"Guided path: {name_a} against {name_b}", steps)


@macro(html=True)
def guided_aggregation(site: Site, a: str = "dapo", b: str = "dr_grpo") -> str:
    """Scenario 2 of the UNIPO paper: two aggregation cards side by side, each with its run's numbers."""
    site.spec(a, "guided_aggregation")
    site.spec(b, "guided_aggregation")
    return aggregation_path(site, a, b)
