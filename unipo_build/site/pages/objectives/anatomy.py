"""The anatomy of one update: a logged update of a run, taken apart beat by beat.

    {{ anatomy("grpo", beat="advantages") }}     one beat (ANATOMY_BEATS), on a paragraph of its own
    {{ anatomy_fact("grpo", "step") }}           a number or a clause about that update (ANATOMY_FACTS)

The update is chosen by code (``anatomy_pick.choose_step``) unless ``step`` is given, so the page
stays true when the run is retrained or replaced. Every number is the log's, and every formula
with numbers is the registry's worked example of the run's component.
"""

from __future__ import annotations

import math

import numpy as np

from unipo_build.core.numbers import (
    NOISE,
    fmt_num,
    fmt_objective,
    fmt_pct,
    fmt_signed,
    fraction_text,
    plain_num,
    tex_num,
)
from unipo_build.core.runs import Run
from unipo_build.core.schema import PromptGroup, Response
from unipo_build.site.views.inspector import inspector
from unipo_build.site.pages.objectives.anatomy_pick import (
    AnatomyPick,
    Movement,
    chosen_token,
    get_pick,
    group_arithmetic,
    movements,
    token_objective_tex,
    weight_tex,
)
from unipo_build.site.fmt import escape_text, math_display, note_html, table, template_fold
from unipo_build.site.browser import token_label
from unipo_build.site.facts.run_facts import missing_run_text
from unipo_build.site.context import AuthorError, Site, macro

ANATOMY_BEATS = ("summary", "prompts", "responses", "rewards", "advantages", "tokens", "token_objective",
                 "aggregation", "update")


#: What the tiny set shows in full (its updates: 16 groups of 8 answers) is shown in full. An update
#: with more (the gpu set's: 64 groups of 16) lists half as many, the groups the page follows always
#: among them, and folds the rest just below (a <details> the reader opens), so the page keeps the
#: height budget of a course page (DESIGN.md, "Budgets": 10,000 px at 1280 px) and leaves nothing
#: out. The answers of a group fold as the Step Inspector's do (inspector.responses_shown).
GROUPS_ALL = 16
GROUPS_SHOWN = 8


def groups_shown(n: int) -> int:
    """How many of an update's ``n`` groups a list shows before its fold."""
    return n if n <= GROUPS_ALL else GROUPS_SHOWN


def split_shown(items: list, limit: int, keep=lambda item: False) -> tuple[list, list]:
    """(the first ``limit`` items and every other one ``keep`` names, the rest), in order."""
    shown = [x for i, x in enumerate(items) if i < limit or keep(x)]
    rest = [x for x in items if all(x is not y for y in shown)]
    return shown, rest


def folded(html: str, n: int, what: str) -> str:
    """``html`` (the rest of a list or a table) folded under "The other n <what>"; "" for none. The body is
    written in a <template> that unipo.js puts in the page when the fold opens: the gpu set's 64 groups of 16
    answers folded so are 1,000 DOM nodes a reader who does not open them never needs."""
    if not n:
        return ""
    return template_fold(f"The other {n} {what}", html, kind="unipo-fold")


def _folded_table(head: list[str], rows: list[list[str]], what: str, verdicts: list[bool | None],
                  caption: str | None = None, numeric: tuple[int, ...] = ()) -> str:
    """A table of a group's answers (``verdicts``: each row's right or wrong): those
    inspector.responses_shown shows, and the first right and the first wrong one wherever they
    are (a mixed group keeps both sides in view); the others in a second table folded below it."""
    first = {v: verdicts.index(v) for v in (True, False) if v in verdicts}
    limit = inspector.responses_shown(len(rows))
    kept = [i < limit or i in first.values() for i in range(len(rows))]
    shown = [r for r, k in zip(rows, kept) if k]
    rest = [r for r, k in zip(rows, kept) if not k]
    return (table(head, shown, caption=caption, numeric=numeric)
            + folded(table(head, rest, numeric=numeric), len(rest), what))


def _group_kind(n_correct: int | None, size: int) -> str:
    if n_correct is None:
        return "unknown"
    if n_correct == size:
        return "all correct"
    if n_correct == 0:
        return "all wrong"
    return "mixed"


def movement_sentence(moves: list[Movement], pick: AnatomyPick) -> str:
    pos = [m for m in moves if m.advantage > 0]
    neg = [m for m in moves if m.advantage < 0]
    pos_up = sum(1 for m in pos if m.mean_delta > 0)
    neg_down = sum(1 for m in neg if m.mean_delta < 0)
    total = len(pos) + len(neg)
    if total == 0:
        return "Every response of this group had advantage 0, so the update had no direction to push it."
    parts = []
    if pos:
        mean = fmt_signed(float(np.mean([m.mean_delta for m in pos])), 3)
        head = (f"The one response with a positive advantage {'became' if pos_up else 'did not become'} more likely"
                if len(pos) == 1 else
                f"{pos_up} of the {len(pos)} responses with a positive advantage became more likely")
        parts.append(f"{head} (mean change of log-probability per token {mean})")
    if neg:
        mean = fmt_signed(float(np.mean([m.mean_delta for m in neg])), 3)
        head = (f"the one with a negative advantage {'became' if neg_down else 'did not become'} less likely"
                if len(neg) == 1 else
                f"{neg_down} of the {len(neg)} with a negative advantage became less likely")
        parts.append(f"{head} (mean change {mean})")
    agree = pos_up + neg_down
    verdict = ("every one moved the way the sign of its advantage asked" if agree == total else
               "most moved the way the sign of its advantage asked" if agree > total / 2 else
               "fewer than half moved the way the sign of its advantage asked: the other updates in between "
               "(on other groups) and the small learning rate can outweigh one group's push")
    text = "; ".join(parts) + f": {verdict}."
    return text[0].upper() + text[1:]


# -- the beats ----------------------------------------------------------------

def _correct_text(r: Response) -> str:
    if r.correct is None:
        return "–"
    return "✓ right" if r.correct else "✗ wrong"


def _group_label(pick: AnatomyPick, index: int) -> str:
    if pick.mixed is not None and index == pick.mixed.index:
        return " (the mixed group we follow)"
    if pick.all_correct is not None and index == pick.all_correct.index:
        return " (the all-correct group we follow)"
    return ""


def beat_summary(site: Site, pick: AnatomyPick) -> str:
    h = pick.run.header
    G = h.hyperparameters.get("group_size")
    rows = [
        ("Run", escape_text(f"{h.run_id} ({site.algorithm_name(h.algorithm)})")),
        ("Update (step)", escape_text(str(pick.step))),
        ("Rollout", escape_text(f"{pick.detail.rollout}" + (" — the first update on it, so every ratio is 1"
                                                             if pick.first_in_rollout else ""))),
        ("Groups in this update", escape_text(f"{len(pick.detail.groups)} groups of G = {G} answers")),
        ("Groups with token detail", escape_text(str(sum(1 for p in pick.detail.prompts if not p.filtered)))),
        ("Why this update", escape_text(f"chosen by code: the first logged update that {pick.reason}")),
    ]
    return table(["", "This update"], rows)


def beat_prompts(pick: AnatomyPick) -> str:
    """The update's groups as a list (readable at any width): counts, kind, and the prompt text
    for the groups whose tokens were logged."""
    prompts = {p.index: p for p in pick.detail.prompts if not p.filtered}
    followed = {x.index for x in (pick.mixed, pick.all_correct) if x is not None}
    groups, rest = split_shown(list(pick.detail.groups), groups_shown(len(pick.detail.groups)),
                               lambda g: g.index in followed)
    items = []
    more = []
    for g in list(groups) + list(rest):
        p = prompts.get(g.index)
        counts = f"{g.n_correct} of {g.size} right" if g.n_correct is not None else f"{g.size} answers"
        head = (f"<strong>Group {escape_text(g.index)}</strong> · {escape_text(counts)} · "
                f"{escape_text(_group_kind(g.n_correct, g.size))}")
        follow = _group_label(pick, g.index).strip(" ()")
        if follow:
            head += f" · <em>{escape_text(follow)}</em>"
        if p is not None:
            answer = f" <span style=\"opacity:.8\">(answer: {escape_text(p.answer)})</span>" if p.answer is not None else ""
            body = f"<br>{escape_text(p.prompt)}{answer}"
        else:
            # said on the group's own line: a second line each for a dozen groups made the list 1,000 px tall
            body = ' · <span style="opacity:.75">tokens not logged</span>'
        (items if any(g is x for x in groups) else more).append(f"<li>{head}{body}</li>")
    for g in pick.detail.filtered_groups:
        p = next((q for q in pick.detail.prompts if q.index == g.index and q.filtered), None)
        text = f"<br>{escape_text(p.prompt)}" if p else ""
        name = inspector.group_name(pick.detail, g.index, True)
        items.append(f"<li><strong>{escape_text(name)}</strong> · {escape_text(f'{g.n_correct} of {g.size} right')} · "
                     f"dropped by the sampling filter{text}</li>")
    return (f'<p><strong>The {len(pick.detail.groups)} groups of update {escape_text(pick.step)}</strong></p>'
            f'<ul>{"".join(items)}</ul>' + folded(f'<ul>{"".join(more)}</ul>', len(more), "groups"))


def _which_group(pick: AnatomyPick, group: str) -> PromptGroup | None:
    if group not in ("mixed", "all_correct"):
        raise AuthorError(f"anatomy: group must be 'mixed' or 'all_correct', not {group!r}")
    return pick.mixed if group == "mixed" else pick.all_correct


def _missing_group_note(group: str) -> str:
    words = "a group with both right and wrong answers" if group == "mixed" else "a group where every answer is right"
    return note_html(f"The update shown has no {words} with token detail in this build's run, so this part of the "
                     "walkthrough cannot be shown with real numbers.", "warning")


def beat_responses(pick: AnatomyPick, group: str) -> str:
    g = _which_group(pick, group)
    if g is None:
        return _missing_group_note(group)
    rows = []
    for r in g.responses:
        cut = " <em>(cut off at the budget)</em>" if r.truncated else ""
        rows.append([escape_text(r.index), escape_text(r.text) + cut,
                     escape_text(_correct_text(r)) + f"<br><small>{escape_text(fmt_num(r.length))} tokens</small>"])
    head = (f'<p><strong>Prompt (group {escape_text(g.index)}):</strong> {escape_text(g.prompt)} '
            f"<strong>Reference answer:</strong> {escape_text(g.answer if g.answer is not None else '–')}</p>")
    return head + _folded_table(["#", "The answer as sampled", "Verdict"], rows, "answers",
                                [r.correct for r in g.responses])


def beat_rewards(pick: AnatomyPick, group: str) -> str:
    g = _which_group(pick, group)
    if g is None:
        return _missing_group_note(group)
    comp_names = sorted({k for r in g.responses for k in r.reward_components})
    rows = []
    for r in g.responses:
        comps = [escape_text(fmt_num(r.reward_components.get(k), 3)) for k in comp_names]
        rows.append([escape_text(r.index), escape_text(_correct_text(r))] + comps + [escape_text(fmt_num(r.reward, 4))])
    vector = r"r=(" + ",\\ ".join(tex_num(r.reward) for r in g.responses) + ")"
    weights = {c.name: c.weight for c in pick.run.header.reward.components}
    wtext = " + ".join(f"{fmt_num(weights[k])} × {k}" for k in comp_names if k in weights)
    caption = f"Rewards of group {g.index}"
    if wtext:
        caption += f"; r = {wtext}" + (" + shaping" if "shaping" in comp_names else "")
    n = len(comp_names)
    return (math_display(vector) + _folded_table(["#", "Verdict"] + [escape_text(k) for k in comp_names] + ["r"],
                                                   rows, "rewards", [r.correct for r in g.responses], caption=caption, numeric=tuple(range(2, 3 + n))))


def beat_advantages(pick: AnatomyPick, group: str) -> str:
    g = _which_group(pick, group)
    if g is None:
        return _missing_group_note(group)
    ar = group_arithmetic(pick.run.config, g)
    if ar is None:
        kind = pick.run.config.kind("advantage") if pick.run.config else "unknown"  # named in the note
        return note_html(f"This run's advantage ({kind}) is not computed from the group alone, so there is no group "
                         "arithmetic to show; the Step Inspector shows each token's advantage.")
    formulas = "".join(math_display(line) for line in ar.lines)
    rows = [[escape_text(r.index), escape_text(fmt_num(r.reward, 4)), escape_text(fmt_num(a, 4)),
             escape_text(fmt_num(r.advantage, 4) if r.advantage is not None else "–")]
            for r, a in zip(g.responses, ar.advantages)]
    check = ("The advantages recomputed here equal the ones the trainer logged." if ar.matches else
             "The recomputed advantages differ from the logged ones: the log was written with another convention.")
    return formulas + _folded_table(["#", "r", "Â, recomputed", "Â, logged"], rows, "advantages",
                                     [r.correct for r in g.responses], numeric=(1, 2, 3)) + f"<p>{escape_text(check)}</p>"


def beat_tokens(site: Site, pick: AnatomyPick) -> str:
    site.use_scripts(("inspector",))
    uid = site.chart_id({"anatomy": pick.run.id, "step": pick.step}, prefix="unipo-insp")
    return inspector.step_inspector(pick.run, step=pick.step, page_url=site.page_url, catalog=site.catalog, uid=uid)


def beat_token_objective(pick: AnatomyPick) -> str:
    g = pick.mixed
    if g is None:
        return _missing_group_note("mixed")
    chosen = chosen_token(g)
    if chosen is None:
        return note_html("No token of the mixed group has a non-zero advantage.")
    response, t = chosen
    tok = response.tokens
    config = pick.run.config
    lines = token_objective_tex(config, response, t)
    lines.append(weight_tex(config, pick.detail, response, t))
    intro = (f"<p>Token {t} of response {response.index} in group {g.index}, the text "
             f"<code>{escape_text(token_label(tok.text[t]))}</code>, is the one the policy was least sure of when it wrote "
             f"that answer (probability {escape_text(fmt_pct(math.exp(tok.old_logp[t])))}); the answer is "
             f"{'right' if response.correct else 'wrong'}, so its advantage is "
             f"{escape_text(fmt_num(tok.advantage[t], 4))}:</p>")
    lo, hi = max(0, t - 2), min(len(tok.ids), t + 4)
    rows = []
    for i in range(lo, hi):
        mark = " ◀" if i == t else ""
        rows.append([f"{escape_text(i)}: <code>{escape_text(token_label(tok.text[i]))}</code>{mark}",
                     escape_text(fmt_num(tok.ratio[i], 5)), escape_text(fmt_num(tok.advantage[i], 4)),
                     escape_text(fmt_num(tok.kl[i], 3) if tok.kl is not None else "–"),
                     escape_text(fmt_num(tok.objective[i], 5)), escape_text(fraction_text(tok.weight[i]))])
    shown = table(["t: token", "ρ", "Â", "D (KL)", "ℓ", "w"], rows,
                   caption=f"Tokens {lo} to {hi - 1} of response {response.index} (of {response.length})",
                   numeric=(1, 2, 3, 4, 5))
    return intro + "".join(math_display(line) for line in lines) + shown


def beat_aggregation(pick: AnatomyPick) -> str:
    def row(g) -> list[str]:
        return [escape_text(str(g.index)) + escape_text(_group_label(pick, g.index)),
                escape_text(_group_kind(g.n_correct, g.size)),
                escape_text(f"{g.n_correct}/{g.size}" if g.n_correct is not None else "–"),
                escape_text(fmt_objective(g.contribution))]

    followed = {x.index for x in (pick.mixed, pick.all_correct) if x is not None}
    groups, rest = split_shown(list(pick.detail.groups), groups_shown(len(pick.detail.groups)),
                               lambda g: g.index in followed)
    total = sum(g.contribution for g in pick.detail.groups)
    rows = [row(g) for g in groups]
    if rest:
        rows.append([escape_text(f"The other {len(rest)} groups (listed below)"), "", "",
                     escape_text(fmt_objective(sum(g.contribution for g in rest)))])
    rows.append(["<strong>Sum: the step objective J</strong>", "", "",
                 f"<strong>{escape_text(fmt_objective(total))}</strong>"])
    head = ["Group", "Kind", "Correct", "Contribution Σ w·ℓ"]
    return (table(head, rows, caption=f"Each group's share of the objective of update {pick.step}", numeric=(2, 3))
            + folded(table(head, [row(g) for g in rest], numeric=(2, 3)), len(rest), "groups' shares"))


def beat_update(pick: AnatomyPick) -> str:
    J = pick.detail.objective
    grad = pick.metrics.get("grad_norm")
    lr = pick.metrics.get("lr")
    facts = [("Step objective J (logged)", fmt_objective(J)),
             ("Loss minimised, −J", fmt_objective(-J)),
             ("Gradient norm before clipping", fmt_num(grad, 4) if grad is not None else "–"),
             ("Learning rate", plain_num(lr) if lr is not None else "–")]
    html = table(["Quantity", "Value"], [[escape_text(a), escape_text(b)] for a, b in facts], numeric=(1,))
    if pick.later_group is None or pick.mixed is None:
        return html + note_html("This run's log does not detail the same group again later in the same rollout, so "
                                "how its tokens' log-probabilities moved cannot be shown here.")
    moves = movements(pick.mixed, pick.later_group)
    rows = [[escape_text(m.index), escape_text("✓ right" if m.correct else "✗ wrong"),
             escape_text(fmt_num(m.advantage, 3)), escape_text(fmt_signed(m.mean_delta, 3)),
             escape_text(fmt_pct(m.frac_up, 0))] for m in moves]
    shown = _folded_table(["#", "Verdict", "Â", "Mean Δ log π per token", "Tokens up"], rows, "answers",
                          [m.correct for m in moves], caption=(f"Group {pick.mixed.index}: log-probabilities at update {pick.later_step} minus "
                                   f"those at update {pick.step}"), numeric=(2, 3, 4))
    return html + shown + f"<p>{escape_text(movement_sentence(moves, pick))}</p>"


@macro(name="anatomy", html=True, scripts=('inspector',), run=True)
def anatomy_html(site: Site, run: Run | None, name: str, step: int | None = None, beat: str = "summary",
                 group: str = "mixed") -> str:
    """One beat of the anatomy of one update (see ANATOMY_BEATS); the update is chosen by code
    unless ``step`` is given."""
    if beat not in ANATOMY_BEATS:
        raise AuthorError(f"anatomy: unknown beat {beat!r} (known: {', '.join(ANATOMY_BEATS)})")
    if run is None:
        return note_html(f"There is no {name} run in this build, so this part of the walkthrough cannot be shown. "
                         "Train it (see the README) or point UNIPO_RUNS at a directory of runs, then rebuild.",
                         "warning")
    pick = get_pick(run, step)
    if pick is None:
        return note_html(f"The {run.id} run has no token-level detail{'' if step is None else f' at step {step}'}, "
                         "so the walkthrough cannot show one update.", "warning")
    if beat == "summary":
        return beat_summary(site, pick)
    if beat == "prompts":
        return beat_prompts(pick)
    if beat == "responses":
        return beat_responses(pick, group)
    if beat == "rewards":
        return beat_rewards(pick, group)
    if beat == "advantages":
        return beat_advantages(pick, group)
    if beat == "tokens":
        return beat_tokens(site, pick)
    if beat == "token_objective":
        return beat_token_objective(pick)
    if beat == "aggregation":
        return beat_aggregation(pick)
    return beat_update(pick)


ANATOMY_FACTS = ("step", "rollout", "later_step", "updates_between", "n_groups", "group_size", "responses",
                 "mixed_group", "mixed_correct", "all_correct_group", "objective", "grad_norm",
                 "mixed_adv_right", "mixed_adv_wrong", "all_correct_contribution", "mixed_contribution",
                 "kl_beta", "bigger_advantage", "std_convention", "later_sentence", "all_correct_sentence")


@macro(name="anatomy_fact", with_site=False, run=True)
def anatomy_fact_text(run: Run | None, name: str, key: str, step: int | None = None) -> str:
    """A number (or a short clause) about the anatomy page's update (see ANATOMY_FACTS)."""
    if key not in ANATOMY_FACTS:
        raise AuthorError(f"anatomy_fact: unknown key {key!r} (known: {', '.join(ANATOMY_FACTS)})")
    if run is None:
        return missing_run_text(name)
    pick = get_pick(run, step)
    if pick is None:
        return f"(the {run.id} run has no token-level detail)"
    none = "(not in this run's log)"
    summaries = {g.index: g for g in pick.detail.groups}
    if key == "step":
        return str(pick.step)
    if key == "rollout":
        return str(pick.detail.rollout)
    if key == "later_step":
        return str(pick.later_step) if pick.later_step is not None else none
    if key == "updates_between":
        return str(pick.updates_between) if pick.updates_between is not None else none
    if key == "n_groups":
        return str(len(pick.detail.groups))
    if key == "group_size":
        return str(run.header.hyperparameters.get("group_size") or (len(pick.mixed.responses) if pick.mixed else none))
    if key == "responses":
        return str(sum(g.size for g in pick.detail.groups))
    if key == "objective":
        return fmt_objective(pick.detail.objective, 3)
    if key == "grad_norm":
        value = pick.metrics.get("grad_norm")
        return fmt_num(value, 3) if value is not None else none
    if key == "std_convention":
        cfg = run.config
        ddof = cfg.param("advantage", "std_ddof") if cfg is not None else None
        if ddof is None:
            return "(this run does not divide by a standard deviation)"
        return ("the sample standard deviation, dividing by G − 1" if ddof == 1 else
                "the population standard deviation, dividing by G")
    if key == "later_sentence":
        if pick.later_step is None or pick.later_group is None:
            return ("The log does not detail this group again later in the same rollout, so the change cannot be "
                    "followed token by token here.")
        return (f"The same group is logged again at update {pick.later_step}, after {pick.updates_between} "
                f"update{'s' if pick.updates_between != 1 else ''} (this one included"
                f"{', the others on other groups' if pick.updates_between and pick.updates_between > 1 else ''}), "
                "so the log-probabilities of its tokens can be compared before and after.")
    if key == "kl_beta":
        cfg = run.config
        if cfg is None or cfg.component("kl").is_none:
            return "0"
        return fmt_num(cfg.param("kl", "beta"), 3)
    if key == "all_correct_sentence":
        if pick.all_correct is None:
            return ("This update has no all-correct group with token detail, so the point cannot be checked on "
                    "it here.")
        value = summaries[pick.all_correct.index].contribution
        cfg = run.config
        has_kl = cfg is not None and cfg.component("kl").kl_place == "loss"
        if abs(value) < NOISE:
            tail = (" Even the KL term adds nothing here: at this update the policy has not yet moved away from "
                    "the reference model." if has_kl else "")
            return f"The group's whole contribution to this update's objective is zero.{tail}"
        if has_kl:
            return (f"The group's whole contribution to this update's objective is {fmt_objective(value, 3)}, all of "
                    f"it from the KL term (β = {fmt_num(cfg.param('kl', 'beta'), 3)}), which pulls the tokens back "
                    "towards the reference model whether they were right or not.")
        return f"The group's whole contribution to this update's objective is {fmt_objective(value, 3)}."
    if key in ("all_correct_group", "all_correct_contribution"):
        if pick.all_correct is None:
            return "(no all-correct group in this update)"
        if key == "all_correct_group":
            return str(pick.all_correct.index)
        return fmt_objective(summaries[pick.all_correct.index].contribution, 3)
    if pick.mixed is None:
        return "(no mixed group in this update)"
    g = pick.mixed
    if key == "mixed_group":
        return str(g.index)
    if key == "mixed_correct":
        return f"{sum(1 for r in g.responses if r.correct)} of {len(g.responses)}"
    if key == "mixed_contribution":
        return fmt_objective(summaries[g.index].contribution, 3)
    right = [r.advantage for r in g.responses if r.correct and r.advantage is not None]
    wrong = [r.advantage for r in g.responses if r.correct is False and r.advantage is not None]
    if key == "mixed_adv_right":
        return fmt_signed(right[0], 3) if right else none
    if key == "mixed_adv_wrong":
        return fmt_signed(wrong[0], 3) if wrong else none
    # bigger_advantage: a sentence on which side of the group gets the larger push
    n_right, n_wrong = len(right), len(wrong)
    if not right or not wrong:
        return none
    if abs(abs(right[0]) - abs(wrong[0])) < 1e-6:
        return (f"they are equal in size ({fmt_signed(right[0], 3)} and {fmt_signed(wrong[0], 3)}): half the group "
                "is right, so the mean sits exactly between the two rewards")
    bigger = "right" if abs(right[0]) > abs(wrong[0]) else "wrong"
    n_bigger = n_right if bigger == "right" else n_wrong
    subject = f"the {bigger} answer gets" if n_bigger == 1 else f"the {bigger} answers get"
    each_right = "the right answer" if n_right == 1 else "each right answer"
    each_wrong = "the wrong one" if n_wrong == 1 else "each wrong one"
    minority, n_minority = ("right", n_right) if n_right < n_wrong else ("wrong", n_wrong)
    far = f"the lone {minority} answer is" if n_minority == 1 else f"the {minority} minority is"
    return (f"{subject} the larger advantage ({fmt_signed(right[0], 3)} for {each_right}, "
            f"{fmt_signed(wrong[0], 3)} for {each_wrong}): with {n_right} right and {n_wrong} wrong, the mean "
            f"sits closer to the majority, so {far} further from it")
