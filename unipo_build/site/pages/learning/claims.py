"""Sentences that say what the runs show, chosen by what the runs of the build measure.

    {{ effect("entropy_kept", "dapo", "grpo") }}     did entropy fall less under the first than the second?
    {{ effect("overlong_finish", "dapo") }}          did one algorithm's runs change as predicted?
    {{ length_verdict("grpo") }}                     wrong vs right answer lengths, start and end, with the change
    {{ effect("length_grows", "grpo") }}             did one algorithm's answers grow longer?

Each claim (:data:`CLAIMS`) measures a quantity on every run of each algorithm named (one run per
seed), compares it with a predicted direction (``effects.compare``: two algorithms across their seeds by
the procedure of ``core.judge``; or ``effects.direction``: each seed's change within its run) and words the
verdict through ``effects.finding``: clearly shown, clearly contradicted, not clear (with the judgement's
words: suggestive, not separable with N seeds, not separated), or not measurable here, always with the
numbers, the difference and the number of seeds. The sentences never assume the effect: a
rebuild on other logs rewrites them. An algorithm is named by its spec id (all its runs) or by a
run id (that run alone).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

from functools import partial

import numpy as np

from unipo_build.core.numbers import fmt_num, fmt_pct, fmt_signed
from unipo_build.core.runs import Run
from unipo_build.core.specs import SLOTS
from unipo_build.site.pages.learning.effects import (
    Side,
    Verdict,
    compare,
    direction,
    edge_change,
    finding,
    gap_change,
    measure_side,
    relative_change_words,
    run_mean,
    values_text,
)
from unipo_build.site.facts.run_facts import course_runs
from unipo_build.site.context import AuthorError, Site, macro
from unipo_build.site.facts.spec_facts import and_names, count_word

#: A relative change as a signed whole percentage (+5%, −30%); a clip fraction (0.47%, 12.3%).
SIGNED_PCT = partial(fmt_pct, decimals=0, signed=True)
CLIP_SHARE = partial(fmt_pct, decimals=1, small=2)


def runs_named(site: Site, name: str) -> tuple[str, list[Run]]:
    """(label, runs): every loaded run of an algorithm id in seed order, or the one run of a run id.
    The label is the spec's name, else the name the runs' logs give their algorithm."""
    runs = site.catalog.named(name)
    if not runs:
        return site.algorithm_name(name), []
    if runs[0].header.algorithm != name:  # the one run of a run id
        return site.run_label(runs[0]), runs
    label = site.algorithm_name(name)
    if label == name and runs[0].config is not None:
        label = runs[0].config.name
    return label, runs


def slots_apart(a: list[Run], b: list[Run]) -> list[str]:
    """The slots in which the first runs of two algorithms trained with different components."""
    if not a or not b or a[0].config is None or b[0].config is None:
        return []
    ca, cb = a[0].config.components, b[0].config.components
    return [s for s in SLOTS if (ca[s].kind, ca[s].params) != (cb[s].kind, cb[s].params)]


def cause_note(a_name: str, b_name: str, a: list[Run], b: list[Run], slot: str) -> str:
    """A sentence on what else differs between the two: nothing but ``slot``, or several slots."""
    apart = slots_apart(a, b)
    if apart == [slot]:
        return f"The {slot} is the only slot in which {a_name} and {b_name} differ."
    if not [s for s in apart if s != slot]:
        return ""
    return (f"{a_name} and {b_name} differ in {count_word(len(apart))} slots ({and_names(apart)}), so the {slot} is "
            "one candidate cause among several.")


@dataclass(frozen=True)
class Result:
    """What a claim's words get: the sides, the verdict, the runs and the site."""

    a: Side
    b: Side | None
    verdict: Verdict
    note: str  # the cause note (comparisons)
    apart: tuple[str, ...] = ()  # comparisons: the slots in which the two sides' specs differ

    @property
    def slot_alone(self) -> bool:
        """The two sides differ in the claim's slot and nothing else, so the slot is the cause."""
        return len(self.apart) == 1

    @property
    def basis(self) -> str:
        return self.verdict.basis

    def noted(self, text: str) -> str:
        """The claim's sentences, then the cause note."""
        return f"{text} {self.note}" if self.note else text


@dataclass(frozen=True)
class Claim:
    what: str  # "whether ..." in words ({a}: the first algorithm, {b}: ``than`` naming the second)
    measure: Callable[[], Callable[[Run], object]]
    predicted: int  # +1: the first side above the second (or the change positive); -1: below
    words: Callable[[Result], str]
    slot: str = ""  # the slot the claim is about (comparisons: named in the cause note)
    pair: bool = True  # a comparison of two algorithms, or a change within one
    than: str = " than under {b}"  # how ``what`` names the second algorithm


# ---------------------------------------------------------------------------
# The words of each claim
# ---------------------------------------------------------------------------

def capitalised(text: str) -> str:
    """A sentence that opens with a page's label ("the clip-higher rung ...") starts with a capital."""
    return text[:1].upper() + text[1:]


def unmeasurable_text(claim: "Claim", r: Result) -> str:
    b = claim.than.format(b=r.b.name) if r.b is not None else ""
    return f"Whether {claim.what.format(a=r.a.name, b=b)} cannot be measured in this build: {r.verdict.reason}."


def points(value: float) -> str:
    """A difference of two shares or relative changes in percentage points, signed ('+4.1'; the unit is
    ``POINTS``)."""
    return fmt_signed(100 * value, 2)


POINTS = " points"


def _entropy(r: Result) -> str:
    """Clip-higher is named as the cause only when the two sides differ in the clip alone (an
    ablation rung and the rung before it); between DAPO and GRPO, five slots apart, the words say
    what the runs show and the cause note lists the candidates."""
    a, b = r.a, r.b
    both = (f"from the first tenth of training to the last, entropy {values_text(a, relative_change_words, SIGNED_PCT)} "
            f"under {a.name} and {values_text(b, relative_change_words, SIGNED_PCT)} under {b.name}")
    unclear = (f"These runs neither show nor contradict that clip-higher keeps entropy up: {both}" if r.slot_alone else
               f"These runs do not show entropy falling less under {a.name} than under {b.name}: {both}")
    text = finding(r.verdict, points,
                   f"Entropy fell less under {a.name} than under {b.name}: {both}",
                   f"Entropy fell more under {a.name} than under {b.name}, not less: {both}", unclear, sep="; ",
                   unit=POINTS)
    tail = {"shown": " That is what clip-higher is meant to do.",
            "contradicted": " In these runs clip-higher did not keep entropy up."}.get(r.verdict.status, "")
    return r.noted(text + "." + (tail if r.slot_alone else ""))


def _fewer_high(r: Result) -> str:
    a, b = r.a, r.b
    both = (f"{values_text(a, CLIP_SHARE)} of {a.name}'s tokens against {values_text(b, CLIP_SHARE)} of {b.name}'s, on the updates "
            "after the first of each rollout")
    expected = ", as its higher upper bound leads one to expect" if r.slot_alone else ""
    text = finding(r.verdict, points,
                   f"{a.name} clipped fewer tokens on the high side than {b.name}{expected}: {both}",
                   f"{a.name} clipped more tokens on the high side than {b.name}, not fewer: {both}",
                   f"Whether {a.name} clipped fewer tokens on the high side than {b.name} is not clear from these runs: "
                   f"{both}", sep="; ", unit=POINTS)
    if r.verdict.status == "contradicted":
        text += (". A higher bound clips fewer tokens only if the ratios drift as far; how far they drift depends on "
                 "the rest of the objective too")
    return r.noted(text + ".")


def _more_clips(r: Result) -> str:
    a, b = r.a, r.b
    both = (f"{values_text(a, CLIP_SHARE)} of {a.name}'s tokens were clipped (on either side) against "
            f"{values_text(b, CLIP_SHARE)} of {b.name}'s, on the updates after the first of each rollout")
    return finding(r.verdict, points,
                   f"{a.name} clipped far more than {b.name}, as its paper reports for its tight bounds: {both}",
                   f"{a.name} clipped fewer tokens than {b.name}, the opposite of what its paper reports: {both}",
                   f"Whether {a.name} clipped a larger share of tokens than {b.name} is not clear from these runs: "
                   f"{both}",
                   sep="; ", unit=POINTS) + "."


def _gap_words(value: float) -> str:
    return fmt_signed(value, 2) + " tokens"


def _length_bias(r: Result) -> str:
    a, b = r.a, r.b
    both = (f"the gap between wrong and right answers' mean lengths changed by {values_text(a, _gap_words)} under "
            f"{a.name} and by {values_text(b, _gap_words)} under {b.name}, from the first tenth of training to the "
            "last")
    text = finding(r.verdict, lambda v: fmt_signed(v, 2),
                   f"Wrong answers drifted longer, relative to right ones, under {a.name} than under {b.name}: {both}",
                   f"Wrong answers drifted longer under {b.name} than under {a.name}, the opposite of the length-bias "
                   f"argument: {both}",
                   f"These runs neither show nor rule out the length bias: {both}", sep="; ", unit=" tokens")
    tail = {"shown": " That is the drift the length-bias argument predicts.",
            "contradicted": f" In these runs it did not pay to be wrong at length under {a.name}."}
    return r.noted(text + "." + tail.get(r.verdict.status, ""))


def _change_of(r: Result, fmt: Callable[[float], str]) -> str:
    a = r.a
    if a.n == 1:
        v = a.values[0]
        return f"from {fmt(v.start)} to {fmt(v.end)}"
    starts = [v.start for v in a.values]
    ends = [v.end for v in a.values]
    return f"from {fmt(float(np.mean(starts)))} to {fmt(float(np.mean(ends)))} on average over the seeds"


def _overlong(r: Result) -> str:
    a = r.a
    status = r.verdict.status
    change = _change_of(r, lambda v: fmt_num(v, 2))
    if status == "shown":
        return (f"{a.name}'s answers learned to finish before the cut-off: the mean overlong term went {change} "
                f"between the first and the last tenth of training, closer to zero ({r.basis}).")
    if status == "contradicted":
        return (f"{a.name}'s answers ran further into the cache zone, not less: the mean overlong term went {change} "
                f"between the first and the last tenth of training ({r.basis}).")
    return (f"The mean overlong term of {a.name}'s answers went {change} between the first and the last tenth of "
            f"training; {r.verdict.reason} ({r.basis}), so these runs do not show the answers learning to finish "
            "earlier.")


def _runs_of(side: Side) -> str:
    """'the GRPO run' or 'GRPO's runs'."""
    return f"the {side.name} run" if side.n == 1 else f"{side.name}'s runs"


def _all_correct(r: Result) -> str:
    a = r.a
    status = r.verdict.status
    change = _change_of(r, lambda v: fmt_pct(v, 0))
    if status == "shown":
        return (f"In {_runs_of(a)} the share of groups with every answer right grew, {change} from the first "
                f"tenth of training to the last ({r.basis}): as the model improves, more of its samples teach "
                "nothing.")
    if status == "contradicted":
        return (f"In {_runs_of(a)} the share of groups with every answer right shrank, {change} from the first "
                f"tenth of training to the last ({r.basis}).")
    return (f"In {_runs_of(a)} the share of groups with every answer right went {change} from the first tenth of "
            f"training to the last; {r.verdict.reason} ({r.basis}).")


def _length_grows(r: Result) -> str:
    a = r.a
    status = r.verdict.status
    start = float(np.mean([v.start for v in a.values]))
    end = float(np.mean([v.end for v in a.values]))
    change = (("" if a.n == 1 else "on average ") + f"from {fmt_num(start, 3)} to {fmt_num(end, 3)} tokens between "
              "the first tenth of training and the last")
    if status == "shown":
        return (f"In {_runs_of(a)} the mean answer length grew, {change} ({r.basis}): the policy moved towards longer "
                "answers.")
    if status == "contradicted":
        return (f"In {_runs_of(a)} the mean answer length shrank, {change} ({r.basis}): the policy moved towards "
                "shorter answers.")
    return (f"In {_runs_of(a)} the mean answer length went {change}; {r.verdict.reason} ({r.basis}), so no growth "
            "is shown.")


CLAIMS: dict[str, Claim] = {
    "entropy_kept": Claim("entropy fell less under {a}{b}",
                          lambda: edge_change("entropy/mean", relative=True), +1, _entropy, "clip"),
    "fewer_high_clips": Claim("{a} clipped fewer tokens on the high side{b}",
                              lambda: run_mean("clip/frac_high", later_updates=True), -1, _fewer_high, "clip",
                              than=" than {b}"),
    "more_clips": Claim("{a} clipped a larger share of tokens{b}",
                        lambda: run_mean("clip/frac_high", "clip/frac_low", later_updates=True), +1, _more_clips,
                        "ratio", than=" than {b}"),
    "length_bias": Claim("wrong answers drifted longer, relative to right ones, under {a}{b}",
                         lambda: gap_change("length/incorrect", "length/correct"), +1, _length_bias, "aggregation"),
    "overlong_finish": Claim("{a}'s answers learned to finish before the cut-off",
                             lambda: edge_change("reward/shaping"), +1, _overlong, pair=False),
    "length_grows": Claim("{a}'s answers grew longer over training",
                          lambda: edge_change("length/mean"), +1, _length_grows, pair=False),
    "all_correct_grows": Claim("the share of all-correct groups grew over {a}'s training",
                               lambda: edge_change("groups/all_correct_frac"), +1, _all_correct, pair=False),
}


def claim_result(site: Site, key: str, first: str, second: str | None = None,
                 labels: Sequence[str] | None = None) -> Result:
    """Measure a claim; ``labels``: the page's own names for the algorithms (e.g. for ablation rungs)."""
    if key not in CLAIMS:
        raise AuthorError(f"effect: unknown claim {key!r} (known: {', '.join(CLAIMS)})")
    claim = CLAIMS[key]
    if claim.pair != (second is not None):
        raise AuthorError(f"effect: {key!r} " + ("compares two algorithms" if claim.pair else "takes one algorithm"))
    name_a, runs_a = runs_named(site, first)
    if labels:
        name_a = labels[0]
    side_a = measure_side(name_a, runs_a, claim.measure())
    if key == "overlong_finish":
        side_a = _needs_overlong(side_a)
    if second is None:
        return Result(side_a, None, direction(side_a, claim.predicted), "")
    name_b, runs_b = runs_named(site, second)
    if labels and len(labels) > 1:
        name_b = labels[1]
    side_b = measure_side(name_b, runs_b, claim.measure())
    verdict = compare(side_a, side_b, claim.predicted)
    note = cause_note(name_a, name_b, runs_a, runs_b, claim.slot) if verdict.status != "unmeasurable" else ""
    return Result(side_a, side_b, verdict, note, tuple(slots_apart(runs_a, runs_b)))


def _needs_overlong(side: Side) -> Side:
    """Runs whose answers never reached the cache zone at the start had nothing to learn to avoid."""
    kept = tuple(v for v in side.values if v.start is not None and v.start < 0)
    if kept or not side.values:
        return Side(side.name, kept, side.reason)
    return Side(side.name, (), f"no {side.name} answer reached the overlong cache zone in the first tenth of "
                               "training, so there was no penalty to learn to avoid")


# ---------------------------------------------------------------------------
# Batch fullness under a refilling filter
# ---------------------------------------------------------------------------

@dataclass(frozen=True)
class BatchFill:
    """What a refilling filter cost over an algorithm's runs: ``reason`` says why nothing could be
    measured (``total`` is then 0)."""

    label: str
    runs: int = 0  # runs with a sampling filter
    cap: float | None = None  # the filter's max_rounds
    rounds: tuple[float, ...] = ()  # rounds used, one per rollout of every run
    generated: tuple[float, ...] = ()  # answers generated per answer trained on, per rollout
    capped: int = 0  # rollouts that used every round
    reason: str = ""

    @property
    def total(self) -> int:
        return len(self.rounds)

    @property
    def measured(self) -> bool:
        return self.total > 0

    @property
    def full(self) -> bool:
        """Every batch was full: no rollout used all its rounds."""
        return self.capped == 0


def batch_fill_measure(site: Site, name: str) -> BatchFill:
    """The rounds a refilling filter used per rollout, the answers generated per answer trained
    on, and how many rollouts used every round (and so may have trained on fewer groups)."""
    label, runs = runs_named(site, name)
    runs = [r for r in runs if r.config is not None and not r.config.component("filter").is_none]
    if not runs:
        return BatchFill(label, reason=f"it has no run of {label} with a sampling filter")
    capped = 0
    rounds_all, generated = [], []
    cap = None
    for run in runs:
        cap = run.config.components["filter"].params.get("max_rounds")
        table = run.reader.table
        rounds = table.column("sampling/rounds")[table.first_in_rollout]
        rounds = rounds[~np.isnan(rounds)]
        per_kept = table.column("sampling/generated_per_kept")[table.first_in_rollout]
        generated += per_kept[~np.isnan(per_kept)].tolist()
        if cap is None or len(rounds) == 0:
            continue
        rounds_all += rounds.tolist()
        capped += int(np.sum(rounds >= cap))
    return BatchFill(label, len(runs), cap, tuple(rounds_all), tuple(generated), capped,
                     "" if rounds_all else "its runs do not log their sampling rounds")


def batch_fill_words(fill: BatchFill) -> str:
    """Whether every batch was full, with what the filter cost."""
    label = fill.label
    if fill.runs == 0:
        return f"Whether {label}'s batches were full cannot be measured in this build: {fill.reason}."
    if not fill.measured:
        return f"Whether {label}'s batches were full cannot be measured: {fill.reason}."
    seeds = f"{count_word(fill.runs)} run" + ("" if fill.runs == 1 else "s")
    cost = (f"On average {label}'s sampler needed {fmt_num(float(np.mean(fill.rounds)), 2)} of its "
            f"{fmt_num(fill.cap)} rounds")
    cost += (f" and generated {fmt_num(float(np.mean(fill.generated)), 2)} answers for every answer it trained on"
             if fill.generated else "") + f" ({seeds}). "
    if fill.full:
        return cost + (f"Every batch was full: in all {fmt_num(fill.total)} rollouts the sampler found enough mixed "
                       "groups before its last round.")
    return cost + (f"Not every batch was full: in {fmt_num(fill.capped)} of {fmt_num(fill.total)} rollouts "
                   f"({fmt_pct(fill.capped / fill.total, 0)}) the sampler used all its rounds, and such a rollout "
                   "trains on the mixed groups it found, which may be fewer than the batch asks for.")


@macro(name="batch_fill")
def batch_fill_text(site: Site, name: str) -> str:
    """What a refilling filter cost (rounds, answers generated per answer trained on) and whether
    every batch was full: a rollout that used every round may train on fewer groups than asked."""
    return batch_fill_words(batch_fill_measure(site, name))


# ---------------------------------------------------------------------------
# Answer lengths of one algorithm: the numbers, and the change with its verdict
# ---------------------------------------------------------------------------

@macro(name="length_verdict")
def length_verdict_text(site: Site, name: str) -> str:
    """A sentence: wrong vs right answer lengths at the start and end of training, with the change
    and whether it is clear of the noise."""
    label, runs = runs_named(site, name)
    if not runs:
        return f"There is no {name} run in this build, so its answer lengths cannot be described."
    side = measure_side(label, runs, gap_change("length/incorrect", "length/correct"))
    if side.n == 0:
        return f"The {label} logs do not have lengths of both correct and wrong answers, so their gap cannot be described."
    verdict = direction(side, +1)

    def gap_words(gap: float) -> str:
        return "as long as" if abs(gap) < 0.05 else f"{fmt_num(abs(gap), 2)} tokens {'longer' if gap > 0 else 'shorter'} than"

    start = float(np.mean([v.start for v in side.values]))
    end = float(np.mean([v.end for v in side.values]))
    over = "" if side.n == 1 else f", on average over {count_word(side.n)} seeds"
    text = (f"In the first tenth of training wrong {label} answers were {gap_words(start)} right ones{over}; in the "
            f"last tenth they were {gap_words(end)} right ones. The gap changed by {values_text(side, _gap_words)}")
    if verdict.status == "shown":
        return text + f": wrong answers drifted longer, beyond the noise ({verdict.basis})."
    if verdict.status == "contradicted":
        return text + f": wrong answers drifted shorter relative to right ones, beyond the noise ({verdict.basis})."
    return text + f"; {verdict.reason} ({verdict.basis}), so no drift is shown."


# ---------------------------------------------------------------------------
# How many seeds the comparisons rest on
# ---------------------------------------------------------------------------

@macro(name="seeds_note")
def seeds_note_text(site: Site) -> str:
    """Whether each algorithm of the build was trained once or with several seeds, and what that
    means for reading a gap between two lines of the charts (which show one run per algorithm)."""
    found, _ = course_runs(site)
    if not found:
        return "No runs are part of this build, so there is nothing to compare."
    counts = [(site.run_label(r), len(site.catalog.of_algorithm(r.variant))) for r in found]
    several = [(name, n) for name, n in counts if n > 1]
    if not several:
        return ("Each algorithm of this build was trained once, with one seed. A gap between two lines that is no "
                "wider than the wiggles within each line is not evidence that one algorithm is better.")
    listed = and_names([f"{name} ({count_word(n)} seeds)" for name, n in several])
    text = f"Some algorithms of this build were trained with several seeds: {listed}"
    text += "; every other algorithm once." if len(several) < len(counts) else "."
    return text + (" The charts show one run of each; the sentences that say what the runs show use every seed and "
                   "say how many. A gap between two lines that is no wider than the wiggles within each line, or "
                   "than the spread between seeds, is not evidence that one algorithm is better.")


# ---------------------------------------------------------------------------
# Macros
# ---------------------------------------------------------------------------

@macro
def effect(site: Site, claim: str, first: str, second: str | None = None, labels: Sequence[str] | None = None) -> str:
    """A sentence on a claim about the runs (CLAIMS), worded by what the runs measure (``labels``:
    how the sentence names the algorithms, when their specs' names would not read well)."""
    r = claim_result(site, claim, str(first), None if second is None else str(second), labels)
    if r.verdict.status == "unmeasurable":
        return unmeasurable_text(CLAIMS[claim], r)
    return capitalised(CLAIMS[claim].words(r))
