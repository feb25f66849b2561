"""Does it hold at scale? The course's computed claims, side by side for the run sets of the build.

    {{ scale_comparison() }}    one card per claim: each set's sentence, worded by the chapter's own
                                function, its figure, and a verdict on whether the sets agree (HTML)

The run sets are mkdocs.yml's ``extra.unipo_sets`` (``unipo_build.core.sets``; ``scale_sets`` names them and
binds a Site to each). Each claim
(:data:`SCALE_CLAIMS`) reads one set through a :class:`Site` bound to that set's runs
(``Site.with_runs``) and calls the same measure and words as the chapter that makes it
(``claims.claim_result`` and the claim's words, ``claims.batch_fill_measure``,
``verdicts.learning_verdict_text``, ``lessons_groups.sharpening_measure``), so the sentence beside
the tiny set is the chapter's sentence, and the one beside another set is what that chapter would
say built on it. The verdict under a claim is computed from the two readings: the same direction
at both scales, a difference, or not measurable in one of them, and why.
"""

from __future__ import annotations

import math
from functools import partial
from dataclasses import dataclass
from typing import Callable, Literal

import numpy as np

from unipo_build.core.numbers import fmt_num, fmt_pct, fmt_signed, fmt_signed_points
from unipo_build.site.pages.learning.claims import (
    CLAIMS,
    Result,
    batch_fill_measure,
    batch_fill_words,
    capitalised,
    claim_result,
    unmeasurable_text,
)
from unipo_build.site.browser import site_root
from unipo_build.site.pages.learning.effects import Side
from unipo_build.site.pages.objectives.ladder_effects import entropy_ladder, entropy_ladder_words
from unipo_build.site.fmt import escape_text, note_html
from unipo_build.site.pages.objectives.lessons_groups import (
    share_points,
    sharpening_measure,
    sharpening_words,
)
from unipo_build.site.pages.scale.scale_sets import set_gist, set_lacks_text, set_views
from unipo_build.site.context import Site, macro
from unipo_build.site.facts.spec_facts import and_names, count_word
from unipo_build.site.pages.learning.verdicts import changes_of, learning_verdict_text

Status = Literal["shown", "contradicted", "unclear", "unmeasurable"]

# ---------------------------------------------------------------------------
# One claim read on one set
# ---------------------------------------------------------------------------

@dataclass(frozen=True)
class Reading:
    """A claim read on one set: the chapter's sentence, its figure, and what it found."""

    text: str
    number: str  # the figure(s) the sentence rests on, "" when nothing was measured
    status: Status  # as ``effects.Verdict``: shown (as predicted, clear of the noise), contradicted, unclear
    sign: int  # the direction measured: +1, -1, or 0 (none, or a yes/no finding)
    reason: str = ""  # unmeasurable: why, in a reader's words
    finding: str = ""  # a yes/no claim (a full batch): what was found, compared as is between sets
    short: str = ""  # the figure in a few characters, for a folded group's summary line


@dataclass(frozen=True)
class ScaleClaim:
    key: str
    title: str
    question: str
    chapter: str  # the page (docs path without .md, then #anchor) where the course makes the claim
    chapter_title: str
    read: Callable[[Site], Reading]
    #: How the claim's direction reads, for the verdict: what +1 and -1 mean.
    up: str
    down: str
    #: Claims of one group (the held-out change of each core algorithm) are folded together under
    #: one summary line that gives each card's verdict, so the page keeps its height budget.
    group: str = ""
    #: The algorithm a per-algorithm claim is about: "{name}" in the title and question is its spec's name.
    algorithm: str = ""

    def worded(self, site: Site) -> tuple[str, str]:
        """(title, question), with the algorithm named as its spec names it."""
        name = site.algorithm_name(self.algorithm) if self.algorithm else ""
        return self.title.format(name=name), self.question.format(name=name)


def _sign(value: float) -> int:
    return 0 if value == 0 or math.isnan(value) else (1 if value > 0 else -1)


def _side_values(side: Side, fmt: Callable[[float], str]) -> str:
    if side.n == 1:
        return fmt(side.mean)
    return f"{fmt(side.mean)} (mean of {count_word(side.n)} seeds)"


def _effect_reading(site: Site, key: str, first: str, second: str | None,
                    number: Callable[[Result], str]) -> Reading:
    """A claim of ``claims.CLAIMS``, measured and worded as the ``effect`` macro does."""
    claim = CLAIMS[key]
    r = claim_result(site, key, first, second)
    if r.verdict.status == "unmeasurable":
        return Reading(unmeasurable_text(claim, r), "", "unmeasurable", 0, r.verdict.reason)
    sign = _sign(r.a.mean - r.b.mean) if r.b is not None else _sign(r.a.mean)
    return Reading(claim.words(r), number(r), r.verdict.status, sign, r.verdict.reason)


def _start_end(r: Result, fmt: Callable[[float], str], unit: str = "") -> str:
    """'29.6 → 43.6 tokens, mean of three seeds': the first tenth's value and the last's."""
    a = r.a
    start = float(np.mean([v.start for v in a.values]))
    end = float(np.mean([v.end for v in a.values]))
    seeds = "" if a.n == 1 else f", mean of {count_word(a.n)} seeds"
    return f"{fmt(start)} \u2192 {fmt(end)}{unit}{seeds}"


def _pair(r: Result, fmt: Callable[[float], str]) -> str:
    return f"{r.a.name}: {_side_values(r.a, fmt)}; {r.b.name}: {_side_values(r.b, fmt)}"


def read_length_growth(site: Site) -> Reading:
    return _effect_reading(site, "length_grows", "grpo", None, lambda r: _start_end(r, lambda v: fmt_num(v, 3), " tokens"))


def read_entropy(site: Site) -> Reading:
    """Entropy and clip-higher, read on the ladder rung that changes the clip alone (DAPO against GRPO
    differs in five slots and cannot isolate it), with the rung whose step is largest."""
    m = entropy_ladder(site)
    text = entropy_ladder_words(m)
    if not m.measured:
        return Reading(text, "", "unmeasurable", 0, m.reason)
    r = m.clip
    number = f"clip-only rung {fmt_pct(r.a.mean, 0, signed=True)}, the rung before it {fmt_pct(r.b.mean, 0, signed=True)}"
    if m.high is not None and m.high.verdict.status != "unmeasurable":
        number += f"; upper bound clipped {fmt_pct(m.high.a.mean, 1, small=2)} of its tokens"
    steps = m.clear_steps
    number += ("; no rung's step clear of the noise" if not steps else "; steps clear of the noise: "
               + ", ".join(f"{s.rung.name} {fmt_signed(100 * s.step, 0)} points" for s in steps))
    return Reading(text, number, r.verdict.status, _sign(r.a.mean - r.b.mean), r.verdict.reason)


def read_clip_higher(site: Site) -> Reading:
    """Does the clip-only rung's higher upper bound clip fewer tokens on the high side?"""
    m = entropy_ladder(site)
    if m.high is None:
        return Reading(f"Whether a higher upper bound clips fewer tokens cannot be measured in this build: {m.reason}.",
                       "", "unmeasurable", 0, m.reason)
    claim, r = CLAIMS["fewer_high_clips"], m.high
    if r.verdict.status == "unmeasurable":
        return Reading(unmeasurable_text(claim, r), "", "unmeasurable", 0, r.verdict.reason)
    return Reading(capitalised(claim.words(r)), _pair(r, partial(fmt_pct, decimals=1, small=2)), r.verdict.status,
                   _sign(r.a.mean - r.b.mean),
                   r.verdict.reason)


def read_length_bias(site: Site) -> Reading:
    return _effect_reading(site, "length_bias", "grpo", "dr_grpo", lambda r: _pair(r, lambda v: fmt_signed(v, 2) + " tokens"))


def read_filter_fill(site: Site) -> Reading:
    fill = batch_fill_measure(site, "dapo")
    text = batch_fill_words(fill)
    if not fill.measured:
        return Reading(text, "", "unmeasurable", 0, fill.reason)
    number = (f"{fmt_num(float(np.mean(fill.rounds)), 2)} of {fmt_num(fill.cap)} rounds"
              + (f", {fmt_num(float(np.mean(fill.generated)), 2)} answers generated per answer trained on"
                 if fill.generated else "")
              + f"; {fmt_num(fill.capped)} of {fmt_num(fill.total)} rollouts used every round")
    finding = "every batch was full" if fill.full else "not every batch was full"
    return Reading(text, number, "shown" if fill.full else "contradicted", 0, finding=finding)


def read_heldout(site: Site, algorithm: str = "grpo") -> Reading:
    run, seeds = site.catalog.with_seeds(algorithm)
    text = learning_verdict_text(site, run, algorithm, seeds)
    measured = [c for c in (changes_of(r)["greedy"] for r in (seeds or ([run] if run else []))) if c is not None]
    if run is None:
        return Reading(text, "", "unmeasurable", 0, f"it has no {site.algorithm_name(algorithm)} run")
    shown = changes_of(run)["greedy"]
    if shown is None or not measured:
        return Reading(text, "", "unmeasurable", 0,
                       f"its {run.id} log has no held-out evaluation at both start and end")
    directions = {c.direction for c in measured}
    status: Status = ("shown" if directions == {"up"} else "contradicted" if directions == {"down"} else "unclear")
    number = (f"{fmt_pct(shown.start)} \u2192 {fmt_pct(shown.end)} greedy, "
              f"{fmt_signed_points(shown.change)} points [{fmt_signed_points(shown.low)}, "
              f"{fmt_signed_points(shown.high)}]")
    if len(measured) > 1:
        number += "; seeds: " + ", ".join(fmt_signed_points(c.change) for c in measured)
    reason = "" if status != "unclear" else (
        "no seed's interval excludes zero" if directions == {"flat"} else "the seeds' intervals do not all agree")
    changes = sorted(c.change for c in measured)
    short = (fmt_signed_points(changes[0]) if len(changes) == 1 else
             f"{fmt_signed_points(changes[0])} to {fmt_signed_points(changes[-1])}")
    return Reading(text, number, status, _sign(float(np.mean([c.change for c in measured]))), reason, short=short)


HELDOUT_GROUP = "Held-out change of each core algorithm"


def _heldout_claim(algorithm: str) -> ScaleClaim:
    return ScaleClaim(f"heldout_{algorithm}" if algorithm != "grpo" else "heldout", "Held-out change: {name}",
                      "Does {name} get better on problems it never trained on?",
                      "course/compare/dynamics#did-they-learn-the-held-out-evaluation", "Training dynamics",
                      lambda site: read_heldout(site, algorithm), "a gain", "a drop", HELDOUT_GROUP, algorithm)


def read_sharpening(site: Site) -> Reading:
    m = sharpening_measure(site)
    text = sharpening_words(m)
    if m.n == 0:
        return Reading(text, "", "unmeasurable", 0,
                       "no run evaluated both greedy and sampled answers at its start and end")
    number = (f"size of greedy minus sampled: {share_points(m.start_size)} \u2192 {share_points(m.end_size)} points "
              f"(signed: {share_points(m.start)} \u2192 {share_points(m.end)}; mean of {count_word(m.n)} "
              f"run{'s' if m.n != 1 else ''}); shrank clearly in {fmt_num(len(m.closed))}, grew clearly in "
              f"{fmt_num(len(m.opened))}, changed sign in {fmt_num(len(m.crossed))}")
    if len(m.closed) == m.n:
        status: Status = "shown"
    elif len(m.opened) > len(m.closed):
        status = "contradicted"
    else:
        status = "unclear"
    reason = "" if status != "unclear" else (
        "the gap's size shrank clearly in some runs and not in others" if m.closed
        else "no run's change of the gap's size is clear of the noise")
    # closing is the predicted direction (sharpening): the sign is that of the change of the gap's size
    return Reading(text, number, status, _sign(m.end_size - m.start_size), reason)


SCALE_CLAIMS: tuple[ScaleClaim, ...] = (
    ScaleClaim("length_growth", "Length growth", "Do GRPO's answers grow longer over training?",
               "course/compare/dynamics#what-to-look-at", "Training dynamics", read_length_growth,
               "longer", "shorter"),
    ScaleClaim("entropy", "Entropy", "Does clip-higher alone (the ladder rung that changes only the clip) keep "
               "entropy up, and which rung carries entropy's fall?", "course/algorithms/dapo#the-training-run", "DAPO",
               read_entropy, "entropy fell less with the clip", "entropy fell more with the clip"),
    ScaleClaim("clip_higher", "Clip-higher", "Does the higher upper bound clip fewer tokens on the high side than the "
               "rung before it?", "course/algorithms/dapo#the-training-run", "DAPO", read_clip_higher,
               "the wider clip clipped more", "the wider clip clipped fewer"),
    ScaleClaim("length_bias", "Length bias", "Do wrong answers drift longer, relative to right ones, under GRPO "
               "than under Dr. GRPO?", "course/compare/aggregation#grpos-length-bias-in-the-logs", "Aggregation and length bias",
               read_length_bias, "the drift was larger under GRPO", "the drift was larger under Dr. GRPO"),
    ScaleClaim("filter_fill", "Filter fill", "Does DAPO's dynamic sampling fill every batch, and at what cost?",
               "course/compare/choosing#1-how-many-of-your-groups-will-teach-nothing", "Choosing an algorithm",
               read_filter_fill, "", ""),
    *(_heldout_claim(algorithm) for algorithm in ("grpo", "dapo", "dr_grpo", "ppo", "reinforce")),
    ScaleClaim("sharpening", "Sharpening", "Does the gap between greedy and sampled accuracy close?",
               "course/compare/dynamics#sharpening-greedy-and-sampled-accuracy", "Training dynamics",
               read_sharpening, "the gap widened", "the gap closed"),
)


# ---------------------------------------------------------------------------
# The verdict between two sets
# ---------------------------------------------------------------------------

CLEAR = {"shown", "contradicted"}

Agreement = Literal["same", "differs", "neither", "missing"]


def compare_readings(claim: ScaleClaim, base: Reading, other: Reading, base_label: str,
                     other_label: str) -> tuple[Agreement, str]:
    """(same | differs | neither | missing, one sentence) for a claim read on the default set and another: ``neither``
    where both sets measure it and neither shows it clear of the noise (nothing to agree or differ on)."""
    if base.status == "unmeasurable" and other.status == "unmeasurable":
        return "missing", (f"Not measurable in either set: in the {base_label}, {base.reason}; in the "
                           f"{other_label}, {other.reason}.")
    for gone, kept, gone_label, kept_label in ((base, other, base_label, other_label),
                                               (other, base, other_label, base_label)):
        if gone.status == "unmeasurable":
            return "missing", (f"Not visible in the {gone_label}: {gone.reason}. Only the {kept_label} measures it, "
                               "so whether it holds at both scales cannot be said.")
    if base.finding or other.finding:
        if base.finding == other.finding:
            return "same", f"The same in both sets: {base.finding}."
        return "differs", (f"Differs: in the {base_label} {base.finding}, in the {other_label} "
                           f"{other.finding}.")
    way = {1: claim.up, -1: claim.down}
    if base.status == other.status and base.status in CLEAR and base.sign == other.sign:
        which = "as predicted" if base.status == "shown" else "against the prediction"
        return "same", (f"Holds at both scales: clear of the noise in both sets and the same way "
                        f"({way.get(base.sign, 'no change')}, {which}).")
    if base.status in CLEAR and other.status in CLEAR:
        return "differs", (f"Reverses at scale: clear of the noise in both sets, but {way.get(base.sign, 'one way')} "
                           f"in the {base_label} and {way.get(other.sign, 'the other way')} in the {other_label}.")
    if base.status in CLEAR or other.status in CLEAR:
        clear, vague, clear_label, vague_label = ((base, other, base_label, other_label) if base.status in CLEAR
                                                  else (other, base, other_label, base_label))
        lean = ("though it points the same way" if vague.sign == clear.sign and vague.sign != 0
                else "and it points the other way" if vague.sign == -clear.sign and vague.sign != 0 else "")
        return "differs", (f"Clear only in the {clear_label} ({way.get(clear.sign, 'no change')}); in the "
                           f"{vague_label} it is within the noise{', ' + lean if lean else ''}"
                           f"{': ' + vague.reason if vague.reason else ''}.")
    if base.sign == other.sign and base.sign != 0:
        return "neither", (f"Within the noise in both sets, though both point the same way ({way[base.sign]}): "
                           "neither set shows it clearly.")
    return "neither", "Within the noise in both sets, and they point different ways: neither set shows it."


# ---------------------------------------------------------------------------
# The comparison
# ---------------------------------------------------------------------------

AGREEMENT_WORDS = {"same": "Same", "differs": "Differs", "neither": "Neither set", "missing": "Not measurable"}


def _reading_html(label: str, gist: str, reading: Reading) -> str:
    number = reading.number or "not measurable"
    return (f'<div class="unipo-scale-side"><p class="unipo-scale-side-title">{escape_text(label)}'
            f'<span class="unipo-scale-gist">{escape_text(gist)}</span></p>'
            f'<p class="unipo-scale-number">{escape_text(number)}</p><p>{escape_text(reading.text)}</p></div>')


def _folded(cards: list[tuple[ScaleClaim, str, str]], labels: list[str]) -> list[str]:
    """The cards in order, each group's run of cards folded under a summary that gives each card's
    figures on every set (held-out points: "GRPO +20.7 to +22.6 | +15.9 to +18.8")."""
    out, i = [], 0
    while i < len(cards):
        claim, html, _ = cards[i]
        if not claim.group:
            out.append(html)
            i += 1
            continue
        j = i
        while j < len(cards) and cards[j][0].group == claim.group:
            j += 1
        members = cards[i:j]
        figures = "; ".join(short for _, _, short in members)
        out.append(f'<details class="abstract unipo-scale-fold"><summary>{escape_text(claim.group)}, points '
                   f"({escape_text(' | '.join(labels))}): {escape_text(figures)}</summary>"
                   f"{''.join(h for _, h, _ in members)}</details>")
        i = j
    return out


@macro(name="scale_comparison", html=True)
def scale_comparison_html(site: Site) -> str:
    """A card per claim: each present set's reading side by side, then the default set against each
    other present set. Sets that hold no run are named once, above the cards; under them, what no card
    compares (the algorithms one set has runs of and the other has not, ``set_lacks_text``)."""
    views = set_views(site)
    present = [v for v in views if v.site is not None]
    base, others = present[0], present[1:]
    absent = [v for v in views if v.site is None]
    root = site_root(site.page_url)
    gists = {v.run_set.id: set_gist(v) for v in present}
    cards: list[tuple[ScaleClaim, str, str]] = []  # (claim, its card, its figures in a few words, named)
    for claim in SCALE_CLAIMS:
        readings = {v.run_set.id: claim.read(v.site) for v in present}
        sides = "".join(_reading_html(v.run_set.label, gists[v.run_set.id], readings[v.run_set.id]) for v in present)
        verdicts = [compare_readings(claim, readings[base.run_set.id], readings[o.run_set.id], base.run_set.label,
                                     o.run_set.label) for o in others]
        verdict_html = "".join(
            f'<p class="unipo-scale-verdict unipo-scale-verdict--{kind}"><span class="unipo-scale-badge">'
            f"{escape_text(AGREEMENT_WORDS[kind])}</span> {escape_text(text)}</p>" for kind, text in verdicts)
        page, _, anchor = claim.chapter.partition("#")
        href = f"{root}{page}/" + (f"#{anchor}" if anchor else "")
        title, question = claim.worded(site)
        short = " | ".join(readings[v.run_set.id].short or "not measurable" for v in present)
        cards.append((claim, (
            f'<section class="unipo-scale-claim" id="claim-{escape_text(claim.key)}">'
            f'<p class="unipo-scale-claim-title"><strong>{escape_text(title)}</strong>: '
            f'{escape_text(question)} <a href="{escape_text(href)}">{escape_text(claim.chapter_title)}</a></p>'
            f'<div class="unipo-scale-sides">{sides}</div>{verdict_html}</section>'),
            f"{site.algorithm_name(claim.algorithm)} {short}" if claim.algorithm else short))
    lead = ""
    if absent:
        names = and_names([f"the {v.run_set.label} ({v.where})" for v in absent])
        lead = note_html(f"Only the {base.run_set.label} is in this build, so each card shows its reading alone. "
                         f"The column of {names} and the verdict between the sets appear here once "
                         f"{'that directory holds' if len(absent) == 1 else 'those directories hold'} runs and the "
                         "site is built again (the command is above).", "info", "One set in this build")
    labels = [v.run_set.label for v in present]
    lacks = "".join(f'<p class="unipo-scale-lacks">{escape_text(set_lacks_text(base, o))}</p>' for o in others)
    return lead + f'<div class="unipo-scale">{"".join(_folded(cards, labels))}</div>' + lacks
