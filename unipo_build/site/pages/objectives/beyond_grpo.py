"""Three changes to GRPO, each measured in its runs: SAPO's soft gate, GMPO's geometric mean, the batch's std
(docs/course/algorithms/beyond_grpo.md).

    {{ slots_apart_words("sapo", "grpo") }}     sentence: the slots in which two specs differ, and what that
                                                means for reading their runs
    {{ gains_dots(["grpo", "sapo", ...]) }}     figure: every run's held-out gain as a dot (greedy and sampled),
                                                a bar from an algorithm's lowest seed to its highest
    {{ gate_weight_words("sapo", "grpo") }}     sentences: the gradient weight SAPO's gate kept on the logged tokens
                                                that GRPO's clip silences, and where the gate halves a weight
    {{ baseline_words("sapo") }}                sentence: the spec one slot away that the variant's runs are judged
                                                against (:func:`one_slot_baseline`), and its runs in the build
    {{ baseline_gains("sapo") }}                sentences: the held-out gains against that baseline, the verdict and
                                                each seed's paired gap (``clip_family_gains``, no direction predicted)
    {{ log_clip_words("gmpo") }}                sentences: how often GMPO's log-ratio clip engaged against its
                                                baseline's clip (or a second algorithm's), and how far the ratios spread
    {{ advantage_scale_words("grpo_batch_std", "grpo") }}
                                                sentences: the advantages' scale in near-solved and near-hopeless
                                                groups against middle ones, under the batch's std and the group's
    {{ advantage_scale_figure("grpo_batch_std", "grpo") }}
                                                figure: each logged group's root mean square advantage by its
                                                number of right answers

Each variant is judged against its baseline one slot away: a spec of the project that differs from it in exactly
one slot and holds there what the variant's predecessor holds (SAPO and GMPO: GRPO without its KL term, since
GRPO itself differs from them in the clip and the KL term; batch-std GRPO: GRPO). Every verdict goes through
``effects.compare`` (``core.judge``). Every number here is read from the runs of the build:

- a token's gradient weight is its term's derivative with respect to its log-probability, divided by its
  advantage, under each objective's clip kind (``core.objective.term_and_gradient``: the registry's
  ``Kind.apply`` through torch's autograd), at the ratio and advantage the token step logged;
- the share of tokens a clip held is ``clip/frac_high + clip/frac_low`` of each update
  (``effects.run_mean``), leaving out the first update of each rollout, whose ratios are all 1;
- a group's advantage scale is the root mean square of its answers' logged advantages (a group whose
  answers are all right or all wrong has none and is left out).

A variant the build has no finished run of gives one line naming it instead of a number.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from unipo_build.core.heldout import run_change
from unipo_build.core.numbers import fmt_num, fmt_share, fmt_signed
from unipo_build.core.objective import term_and_gradient, terms_and_gradients
from unipo_build.core.runs import Run
from unipo_build.site.context import Site, macro
from unipo_build.site.facts.seeds import finished_runs
from unipo_build.site.facts.spec_facts import and_names, count_word
from unipo_build.site.fmt import escape_text, legend_html, note_html
from unipo_build.site.palette import algorithm_colour
from unipo_build.site.render import chart_spec, vega_embed
from unipo_build.site.pages.dynamics.sampler import gain_points, gains_panel_spec
from unipo_build.core.matching import slot_changes, slot_config
from unipo_build.core.specs import SLOTS
from unipo_build.site.pages.learning.effects import Side, compare, finding, measure_side, run_mean
from unipo_build.site.pages.objectives.clip_family import (
    _runs,
    bounds_of,
    clip_family_gains_text,
    clip_of,
    logged_tokens,
    missing_text,
)
from unipo_build.site.facts.diff import SLOT_LABELS, diff_algorithms

MODES = ("greedy", "sampled")
#: A group counts as near-solved or near-hopeless when at most this share of its answers, or at least
#: one minus it, are right (two of eight and fewer, six of eight and more).
NEAR = 0.25


def _slot_words(slot: str) -> str:
    label = SLOT_LABELS.get(slot, slot)
    return "the " + (label if label[:2].isupper() else label[:1].lower() + label[1:])


# ---------------------------------------------------------------------------
# What differs in the specs
# ---------------------------------------------------------------------------

@macro(name="slots_apart_words")
def slots_apart_text(site: Site, first: str, second: str = "grpo") -> str:
    """'SAPO differs from GRPO in two of the eight slots, the clip (modified) and the KL penalty (removed): ...'"""
    a, b = site.spec(first, "slots_apart_words"), site.spec(second, "slots_apart_words")
    diffs = [d for d in diff_algorithms(b, a) if d.status != "unchanged"]
    na, nb = site.algorithm_name(first), site.algorithm_name(second)
    total = len(diff_algorithms(b, a))
    if not diffs:
        return f"{na} and {nb} have the same components in every slot."
    each = and_names([f"{_slot_words(d.slot)} ({d.status})" for d in diffs])
    head = f"{na} differs from {nb} in {count_word(len(diffs))} of the {count_word(total)} slots, {each}"
    if len(diffs) == 1:
        return head + (": whatever differs between their runs of one seed is that slot's doing or the seed's, "
                       "since everything else is the same.")
    return head + (f": a difference between their runs can come from {'either' if len(diffs) == 2 else 'any'} of "
                   "them, and these runs cannot say which.")


# ---------------------------------------------------------------------------
# The baseline one slot away
# ---------------------------------------------------------------------------

def one_slot_baseline(site: Site, name: str) -> tuple[str, str] | None:
    """(spec id, slot) of the spec a variant's runs are judged against: a spec of the project (the ablation rungs
    too) that differs from it in exactly one slot (``matching.slot_changes``), and in that slot holds what the
    variant's predecessor holds, so it is the variant with one of its changes undone (SAPO: GRPO without its KL
    term, whose clip is GRPO's). The predecessor itself first, then the one with the most finished runs in the
    build, then by id; None when the variant has no predecessor or no such spec exists."""
    specs = {**site.specs(), **site.ablation_specs()}
    spec = specs.get(name)
    parent = specs.get(spec.predecessor) if spec is not None and spec.predecessor else None
    if parent is None:
        return None
    candidates = []
    for other in specs.values():
        apart = [slot for slot in SLOTS if slot_changes(*slot_config(spec, slot), *slot_config(other, slot))]
        if len(apart) != 1 or slot_changes(*slot_config(other, apart[0]), *slot_config(parent, apart[0])):
            continue
        runs = len(finished_runs(site.catalog.seeds_of(other.id))[0])
        candidates.append((other.id != parent.id, -runs, other.id, apart[0]))
    if not candidates:
        return None
    best = min(candidates)
    return best[2], best[3]


def no_baseline_text(site: Site, name: str) -> str:
    return (f"No spec of the project differs from {site.algorithm_name(name)} in one slot alone, so its runs have no "
            "baseline that isolates its change.")


@macro(name="baseline_words")
def baseline_text(site: Site, first: str) -> str:
    """'The spec one slot away from SAPO is GRPO − KL: the two differ in the clip alone, ...'."""
    found = one_slot_baseline(site, first)
    if found is None:
        return no_baseline_text(site, first)
    base, slot = found
    na, nb = site.algorithm_name(first), site.algorithm_name(base)
    runs = finished_runs(site.catalog.seeds_of(base))[0]
    full = site.any_spec(base).full_name
    named = f"{nb} ({full})" if full and full != nb else nb
    seeds = (f"This build has {count_word(len(runs))} finished run{'s' if len(runs) != 1 else ''} of {nb}"
             if runs else f"This build has no finished run of {nb}")
    return (f"The spec one slot away from {na} is {named}: the two differ in {_slot_words(slot)} alone, so this page "
            f"judges {na}'s runs against {nb}'s, where a difference is that slot's doing or the seeds'. {seeds}.")


@macro(name="baseline_gains")
def baseline_gains_text(site: Site, first: str) -> str:
    """The held-out gains against the spec one slot away (``clip_family_gains``, no direction predicted)."""
    found = one_slot_baseline(site, first)
    if found is None:
        return no_baseline_text(site, first)
    return clip_family_gains_text(site, first, found[0], baseline=True)


# ---------------------------------------------------------------------------
# Held-out gains, every seed a dot
# ---------------------------------------------------------------------------

def gains_dots_html(site: Site, algorithms: Sequence[str]) -> str:
    shown = [(a, finished_runs(site.catalog.seeds_of(a))[0]) for a in algorithms]
    missing = [a for a, rs in shown if not rs]
    shown = [(a, rs) for a, rs in shown if rs]
    if not shown:
        return note_html(" ".join(missing_text(site, (a,), "its held-out gain") for a in missing), "warning")
    labels = [f"{site.algorithm_name(a)} ({len(rs)} run{'s' if len(rs) != 1 else ''})" for a, rs in shown]
    colours = [algorithm_colour(a) for a, _ in shown]
    panels = []
    for mode in MODES:
        rows, ranges = [], []
        for (_, runs), label in zip(shown, labels):
            dots, span = gain_points(label, [(r, c) for r, c in ((r, run_change(r.evals, mode)) for r in runs)
                                             if c is not None])
            rows += dots
            ranges += span
        title = f"Held-out gain, {mode} (points)"
        if rows:
            spec = gains_panel_spec(title, rows, ranges, labels, colours)
            chart = vega_embed(spec, chart_id=site.chart_id(spec))
        else:
            chart = '<p style="margin:.5em 0;opacity:.8">No run in this build logs this evaluation.</p>'
        panels.append(f'<div class="unipo-course-panel" style="min-width:0"><p class="unipo-band-title" '
                      f'style="margin:0 0 .2em;font-weight:600">{escape_text(title)}</p>{chart}</div>')
    grid = ('<div class="unipo-course-grid" style="display:grid;grid-template-columns:repeat(auto-fit,minmax(17rem,1fr));'
            'gap:1.2rem 1.6rem">' + "".join(panels) + "</div>")
    caption = ("Each dot is one run's change in held-out accuracy from its start to its end evaluation, on the same "
               "problems (percentage points); a bar spans an algorithm's lowest to its highest seed. Hover a dot for "
               "its run and its 95% interval.")
    note = (note_html(" ".join(missing_text(site, (a,), "its held-out gain") for a in missing), "warning")
            if missing else "")
    return (f'<figure class="unipo-figure unipo-beyond-gains">{grid}<figcaption>{escape_text(caption)}</figcaption>'
            f"</figure>{note}")


# ---------------------------------------------------------------------------
# SAPO: the gradient weight its gate keeps
# ---------------------------------------------------------------------------

@dataclass(frozen=True)
class Weighed:
    """A logged token's gradient weight (d term / d log pi, divided by its advantage) under two clips."""

    step: int
    ratio: float
    advantage: float
    first: float
    second: float


def weigh(site: Site, first: str, second: str) -> tuple[Run, list[Weighed]] | str:
    """Every trained token with a non-zero advantage in the first's chosen run's token steps, under both
    algorithms' clips; a sentence saying why when that cannot be done."""
    run = site.run(first)
    if run is None:
        return f"There is no {first!r} run in this build, so the weight its clip gives a token cannot be shown."
    if not run.token_steps():
        return f"The {run.id} run logs no token steps, so the weight its clip gives a token cannot be shown."
    clips = [clip_of(site, n) for n in (first, second)]
    if any(c is None for c in clips):
        return f"There is no {second!r} spec or run in this build, so its clip cannot weigh the tokens."
    for (kind, _), name in zip(clips, (first, second)):
        if getattr(kind, "needs_mask", False):
            return (f"{site.algorithm_name(name)}'s clip weighs a whole response, not a token on its own, so a "
                    "token's weight under it is not shown here.")
    tokens = [(step, adv, rho) for _, step, adv, rho in logged_tokens([run]) if adv != 0]
    ratios, advantages = [t[2] for t in tokens], [t[1] for t in tokens]
    weights = [terms_and_gradients(kind, params, ratios, advantages)[1] / np.asarray(advantages, dtype=float)
               for kind, params in clips] if tokens else [[], []]
    return run, [Weighed(int(step), float(rho), float(adv), float(a), float(b))
                 for (step, adv, rho), a, b in zip(tokens, *weights)]


def kept_share(kind, params, ratio: float, advantage: float) -> float:
    """A token's gradient weight under ``kind`` as a share of its weight with no clip (its ratio)."""
    return term_and_gradient(kind, params, ratio, advantage)[1] / (advantage * ratio)


def half_ratio(kind, params, sign: int) -> float | None:
    """The ratio, above 1 (``sign`` +1, positive advantage) or below (-1, negative), at which the kind keeps
    half a token's unclipped weight; None when it keeps more than half all the way (to 100 or to 0)."""
    far = 100.0 if sign > 0 else 1e-9
    if kept_share(kind, params, far, float(sign)) > 0.5:
        return None
    near = 1.0
    for _ in range(80):
        mid = 0.5 * (near + far)
        if kept_share(kind, params, mid, float(sign)) > 0.5:
            near = mid
        else:
            far = mid
    return 0.5 * (near + far)


@macro(name="gate_weight_words")
def gate_weight_text(site: Site, first: str = "sapo", second: str = "grpo") -> str:
    """Sentences: the gradient weight the first's gate kept on the logged tokens the second's clip silences."""
    missing = missing_text(site, (first, second), "the weight its gate keeps")
    if missing:
        return missing
    found = weigh(site, first, second)
    if isinstance(found, str):
        return found
    run, tokens = found
    (na, runs), nb = _runs(site, first), site.algorithm_name(second)
    kind, params = clip_of(site, first)
    steps = sorted({t.step for t in tokens})
    if not tokens:
        return f"The {run.id} run's logged token steps hold no token with a non-zero advantage."
    parts = [f"In the {count_word(len(steps))} updates the {run.id} run logged token by token, "
             f"{fmt_num(len(tokens))} trained tokens had a non-zero advantage."]
    silenced = [t for t in tokens if t.second == 0.0]
    low, high = bounds_of(site.run(second)) if site.run(second) is not None else (None, None)
    where = (f" (above {fmt_num(high, 3)} with a positive advantage, below {fmt_num(low, 3)} with a negative one)"
             if low is not None and high is not None else "")
    if silenced:
        shares = np.array([t.first / t.ratio for t in silenced])
        ratios = [t.ratio for t in silenced]
        under_half = int(np.sum(shares < 0.5))
        keep = ("more than half of it for every one" if under_half == 0 else
                f"less than half of it for {fmt_num(under_half)} of them")
        parts.append(f"{fmt_num(len(silenced))} of them ({fmt_share(len(silenced) / len(tokens), 1)}) had a ratio past "
                     f"{nb}'s clip on the side their advantage pushes{where}, from {fmt_num(min(ratios), 3)} to "
                     f"{fmt_num(max(ratios), 3)}, where {nb}'s clip gives a zero gradient. {na}'s gate kept "
                     f"{fmt_share(float(shares.mean()))} of the weight each would have with no clip at all (its ratio) on "
                     f"average, {fmt_share(float(shares.min()))} at the least: {keep}.")
    else:
        parts.append(f"None of them had a ratio past {nb}'s clip on the side their advantage pushes{where}, so on "
                     f"these tokens {nb}'s clip silenced nothing that {na}'s gate kept.")
    rest = [t for t in tokens if t.second != 0.0]
    if rest:
        gaps = np.array([abs(t.first - t.second) / abs(t.second) for t in rest])
        parts.append(f"On the other {fmt_num(len(rest))} the two weights differed by {fmt_share(float(gaps.mean()), 2)} "
                     f"on average and {fmt_share(float(gaps.max()), 1)} at most.")
    up, down = half_ratio(kind, params, +1), half_ratio(kind, params, -1)
    at_zero = kept_share(kind, params, 1e-9, -1.0)
    half = (f"The gate halves a token's weight only at a ratio of {fmt_num(up, 3)} with a positive advantage"
            if up is not None else "With a positive advantage the gate keeps more than half a token's weight up to a "
            "ratio of 100")
    half += (f" and at {fmt_num(down, 3)} with a negative one." if down is not None else
             f"; with a negative one it never does: near a ratio of 0 it still keeps {fmt_share(at_zero)}.")
    parts.append(half)
    highest = [(float(np.nanmax(col)), r, int(r.reader.table.steps[int(np.nanargmax(col))]))
               for r in runs for col in [r.reader.table.column("ratio/max")] if not np.all(np.isnan(col))]
    if highest:
        top, top_run, top_step = max(highest, key=lambda h: h[0])
        kb, pb = clip_of(site, second)
        mine = [kept_share(kind, params, top, s) for s in (1.0, -1.0)]
        theirs = [kept_share(kb, pb, top, s) for s in (1.0, -1.0)]
        parts.append(f"The largest ratio any update of the {count_word(len(runs))} {na} runs logged was "
                     f"{fmt_num(top, 3)} ({top_run.id}, update {fmt_num(top_step)}). At that ratio {na}'s gate keeps "
                     f"{fmt_share(mine[0])} of a token's unclipped weight with a positive advantage and {fmt_share(mine[1])} "
                     f"with a negative one; {nb}'s clip keeps {fmt_share(theirs[0])} and {fmt_share(theirs[1])}."
                     + (f" Far above 1, {na}'s gate turns a token off whatever the sign of its advantage, where {nb}'s "
                        "clip turns off only a token it pushes up and leaves one it pushes down at its full weight."
                        if max(mine) < 0.5 and theirs[0] < 0.5 <= theirs[1] else ""))
    return " ".join(parts)


# ---------------------------------------------------------------------------
# GMPO: how often the log-ratio clip engaged, and how far the ratios spread
# ---------------------------------------------------------------------------

def _bounds_words(run: Run) -> str:
    low, high = bounds_of(run)
    return f"{fmt_num(low, 3) if low is not None else '0'} to {fmt_num(high, 3) if high is not None else '∞'}"


def _seeds_values(side: Side, fmt) -> str:
    if side.n == 1:
        return fmt(side.values[0].value)
    return f"{fmt(side.mean)} on average (seeds: {and_names([fmt(v.value) for v in side.values])})"


def _share_points(value: float) -> str:
    return fmt_signed(100 * value, 2)


@macro(name="log_clip_words")
def log_clip_text(site: Site, first: str = "gmpo", second: str | None = None) -> str:
    """How often the first's clip engaged against the second's (by default the spec one slot away)."""
    if second is None:
        found = one_slot_baseline(site, first)
        if found is None:
            return no_baseline_text(site, first)
        second = found[0]
    missing = missing_text(site, (first, second), "how often their clips engaged")
    if missing:
        return missing
    (na, a), (nb, b) = _runs(site, first), _runs(site, second)
    held = [measure_side(n, rs, run_mean("clip/frac_high", "clip/frac_low", later_updates=True))
            for n, rs in ((na, a), (nb, b))]
    parts = []
    verdict = compare(held[0], held[1], -1)
    pct = lambda v: fmt_share(v, 2)  # noqa: E731
    if verdict.status == "unmeasurable":
        parts.append(f"How often the two clips engaged cannot be measured here: {verdict.reason}.")
    else:
        parts.append(f"Leaving out the first update of each rollout, whose ratios are all 1, {na}'s clip (ratios "
                     f"{_bounds_words(a[0])}) held {_seeds_values(held[0], pct)} of an update's trained tokens, "
                     f"{nb}'s ({_bounds_words(b[0])}) {_seeds_values(held[1], pct)}; "
                     + finding(verdict, _share_points, f"{na}'s wider clip held fewer",
                               f"{na}'s wider clip held more, not fewer", "the two shares are not clearly apart",
                               unit=" points")
                     + ".")
    three = lambda x: fmt_num(x, 3)  # noqa: E731
    signed_three = lambda x: ("+" if x > 0 else "") + fmt_num(x, 3)  # noqa: E731
    for metric, predicted, word in (("ratio/max", +1, "largest"), ("ratio/min", -1, "smallest")):
        sa, sb = (measure_side(n, rs, run_mean(metric, later_updates=True)) for n, rs in ((na, a), (nb, b)))
        v = compare(sa, sb, predicted)
        if v.status == "unmeasurable":
            continue
        further, nearer = ("higher", "lower") if predicted > 0 else ("lower", "higher")
        parts.append(f"The {word} ratio of an update was {_seeds_values(sa, three)} under {na} and "
                     f"{_seeds_values(sb, three)} under {nb}; "
                     + finding(v, signed_three, f"{na}'s was {further}", f"{na}'s was {nearer}, not {further}",
                               "the two are not clearly apart") + ".")
    run = site.run(first)
    if run is not None and run.token_steps() and b[0].config is not None:
        b_low, b_high = bounds_of(b[0])
        a_low, a_high = bounds_of(run)
        counted = [(adv, rho) for _, _, adv, rho in logged_tokens([run]) if adv != 0]
        past = lambda lo, hi: sum(1 for adv, rho in counted  # noqa: E731
                                  if (adv > 0 and hi is not None and rho > hi) or (adv < 0 and lo is not None and rho < lo))
        k_b, k_a = past(b_low, b_high), past(a_low, a_high)
        if counted:
            parts.append(f"In the {run.id} run's logged token steps, {fmt_num(k_b)} of the {fmt_num(len(counted))} "
                         f"tokens with a non-zero advantage had a ratio past {nb}'s bounds on the side their advantage "
                         f"pushes and {fmt_num(k_a)} past {na}'s own"
                         + (f": at {na}'s ratios, {nb}'s clip would have held {fmt_num(k_b / k_a, 2)} times as many."
                            if k_a and k_b != k_a else "."))
    return " ".join(parts)


# ---------------------------------------------------------------------------
# The batch's std: the advantage scale of each group
# ---------------------------------------------------------------------------

@dataclass(frozen=True)
class GroupScale:
    rollout: int
    right: int
    size: int
    rms: float  # root mean square of the group's logged advantages
    divisor: float | None  # (reward - group mean) / advantage: what the advantage was divided by


def group_scales(run: Run) -> list[GroupScale]:
    """Each logged group with both right and wrong answers, once per rollout (a rollout's two updates log the
    same groups), with its answers' logged advantages' root mean square."""
    seen, out = set(), []
    for step in run.token_steps():
        detail = run.reader.detail(step)
        for group in detail.prompts:
            key = (detail.rollout, group.index)
            if key in seen or group.filtered or not group.responses:
                continue
            seen.add(key)
            right = sum(1 for r in group.responses if r.correct)
            if right in (0, len(group.responses)):
                continue
            adv = np.array([r.advantage for r in group.responses], dtype=np.float64)
            rewards = np.array([r.reward for r in group.responses], dtype=np.float64)
            centred = rewards - rewards.mean()
            i = int(np.argmax(np.abs(adv)))
            divisor = float(centred[i] / adv[i]) if adv[i] != 0 else None
            out.append(GroupScale(int(detail.rollout), right, len(group.responses), float(np.sqrt(np.mean(adv ** 2))),
                                  divisor))
    return out


def near_edge(g: GroupScale) -> bool:
    share = g.right / g.size
    return share <= NEAR or share >= 1 - NEAR


@macro(name="advantage_scale_words")
def advantage_scale_text(site: Site, first: str = "grpo_batch_std", second: str = "grpo") -> str:
    """Sentences: the advantage scale of near-solved and near-hopeless groups against middle ones, in both runs."""
    missing = missing_text(site, (first, second), "the advantages' scale")
    if missing:
        return missing
    na, nb = site.algorithm_name(first), site.algorithm_name(second)
    found = []
    for name in (first, second):
        run = site.run(name)
        if run is None or not run.token_steps():
            return (f"The {name} run logs no token steps, so the scale of its groups' advantages cannot be measured "
                    "from its log.")
        groups = group_scales(run)
        if not groups:
            return (f"The {run.id} run's logged steps hold no group with both right and wrong answers, so the scale "
                    "of its advantages cannot be measured.")
        found.append((run, groups))
    (ra, ga), (rb, gb) = found
    size = ga[0].size
    parts = []
    near_a, mid_a = [g.rms for g in ga if near_edge(g)], [g.rms for g in ga if not near_edge(g)]
    rollouts = len({g.rollout for g in ga})
    lo_right, hi_right = int(math.floor(NEAR * size)), int(math.ceil((1 - NEAR) * size))
    divisors = [g.divisor for g in ga if g.divisor is not None]
    by = (f", each divided by the batch's std, {fmt_num(min(divisors), 3)} to {fmt_num(max(divisors), 3)} at these "
          "rollouts" if divisors else "")
    text = (f"In the {count_word(rollouts)} rollouts the {ra.id} run logged group by group, {fmt_num(len(ga))} groups "
            f"had both right and wrong answers{by}. The root mean square of a group's advantages ran from "
            f"{fmt_num(min(g.rms for g in ga), 3)} to {fmt_num(max(g.rms for g in ga), 3)}")
    if near_a and mid_a:
        text += (f": {fmt_num(float(np.mean(near_a)), 3)} on average in the {fmt_num(len(near_a))} groups with at most "
                 f"{lo_right} or at least {hi_right} of {size} right, {fmt_num(float(np.mean(mid_a)), 3)} in the "
                 f"{fmt_num(len(mid_a))} others.")
    else:
        text += f", and every one of them {'was' if near_a else 'was not'} near-solved or near-hopeless, so the two kinds cannot be compared here."
    parts.append(text)
    rms_b = [g.rms for g in gb]
    spread_b = max(rms_b) - min(rms_b)
    same = spread_b <= 1e-3 * max(rms_b)
    parts.append(f"Under {nb}'s group std the {fmt_num(len(gb))} such groups the {rb.id} run logged had a root mean "
                 + (f"square of {fmt_num(float(np.mean(rms_b)), 3)} every one, whatever their number right: a "
                    "group's own std scales every group with mixed answers to the same size."
                    if same else
                    f"square of {fmt_num(min(rms_b), 3)} to {fmt_num(max(rms_b), 3)}."))
    near_b, mid_b = [g.rms for g in gb if near_edge(g)], [g.rms for g in gb if not near_edge(g)]
    if near_a and mid_a:
        ratio_a = float(np.mean(near_a)) / float(np.mean(mid_a))
        ratio_b = (float(np.mean(near_b)) / float(np.mean(mid_b))) if near_b and mid_b else None
        against = ((f"where {nb} gives both the same" if abs(ratio_b - 1) <= 0.005 else
                    f"where {nb} gives them {fmt_num(ratio_b, 2)} times") if ratio_b is not None else
                   f"where {nb}'s logged groups do not hold both kinds")
        word = "less" if ratio_a < 1 else "more"
        parts.append(f"So {na} gives a near-solved or near-hopeless group {fmt_num(ratio_a, 2)} times the advantage "
                     f"scale of a middle one, {against}: under the batch's std such a group pushes {word} than a "
                     "middle group does." if abs(ratio_a - 1) > 0.05 else
                     f"So {na} gives a near-solved or near-hopeless group about the advantage scale of a middle one "
                     f"({fmt_num(ratio_a, 2)} times), {against}.")
    return " ".join(parts)


@macro(name="advantage_scale_figure", html=True)
def advantage_scale_html(site: Site, first: str = "grpo_batch_std", second: str = "grpo") -> str:
    """Each logged group's root mean square advantage by its number of right answers, for both runs."""
    import altair as alt

    missing = missing_text(site, (first, second), "the advantages' scale")
    if missing:
        return note_html(missing, "warning")
    rows, labels, colours = [], [], []
    for shift, name in zip((-0.1, 0.1), (first, second)):  # side by side at the same number right
        run = site.run(name)
        groups = group_scales(run) if run is not None and run.token_steps() else []
        if not groups:
            return note_html(f"The {name} run logs no group with mixed answers, so no figure can be drawn.", "warning")
        label = f"{site.algorithm_name(name)} ({run.id})"
        labels.append(label)
        colours.append(algorithm_colour(name))
        rows += [{"a": label, "k": g.right, "kx": g.right + shift, "rms": round(g.rms, 4), "roll": g.rollout,
                  "size": g.size} for g in groups]
    size = rows[0]["size"]
    colour = alt.Color("a:N", scale=alt.Scale(domain=labels, range=colours), legend=None)
    dots = alt.Chart(alt.Data(values=rows)).mark_point(filled=True, size=80, opacity=0.9).encode(
        x=alt.X("kx:Q", title=f"Right answers of the group's {size}", scale=alt.Scale(domain=[0, size], nice=False),
                axis=alt.Axis(tickMinStep=1, values=list(range(size + 1)))),
        y=alt.Y("rms:Q", title="RMS of the advantages", scale=alt.Scale(zero=True)),
        color=colour, shape=alt.Shape("a:N", scale=alt.Scale(domain=labels, range=["circle", "diamond"]), legend=None),
        tooltip=[alt.Tooltip("a:N", title="Run"), alt.Tooltip("k:Q", title="Right"),
                 alt.Tooltip("roll:Q", title="Rollout"), alt.Tooltip("rms:Q", title="RMS advantage", format=".3f")])
    spec = chart_spec(dots.properties(width="container", height=190,
                                      autosize=alt.AutoSizeParams(type="fit-x", contains="padding")))
    spec["description"] = ("Root mean square of each logged group's advantages against its number of right answers, "
                           "one dot per group, for the two runs.")
    legend = legend_html([(label, colour, None) for label, colour in zip(labels, colours)])
    caption = (f"Each mark is one group the runs logged answer by answer (a group of {size} with both right and wrong "
               "answers), at its number of right answers; its height is the root mean square of its answers' "
               f"advantages, the size of the push the group gives. Circles are {labels[0]}, diamonds {labels[1]}.")
    return (f'<figure class="unipo-figure unipo-beyond-scale">{legend}'
            f"{vega_embed(spec, chart_id=site.chart_id(spec))}<figcaption>{escape_text(caption)}</figcaption></figure>")


# ---------------------------------------------------------------------------
# Macros
# ---------------------------------------------------------------------------

@macro(html=True)
def gains_dots(site: Site, algorithms: Sequence[str]) -> str:
    """Every run's held-out gain as a dot, greedy and sampled, a bar per algorithm over its seeds."""
    return gains_dots_html(site, [str(a) for a in algorithms])
