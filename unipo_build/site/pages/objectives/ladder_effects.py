"""What the ablation ladder says about one slot's effect: entropy rung by rung, and the clip alone.

    {{ ladder_entropy_verdict("dapo") }}   sentences: entropy's fall on every rung, what the rung that
                                           changes the clip alone did to it, how many tokens its upper
                                           bound bound, and which rung's step is the largest
    {{ clip_higher_evidence("dapo") }}     a short clause for a table cell: what the clip-only rung showed

DAPO against GRPO differs in five slots, so a difference in entropy between them cannot be laid at
clip-higher's door. The ladder (``data/suite.yaml``, ``ladder.ladder_rungs``) changes one slot per
rung; the rung whose only change is the clip is the one comparison that isolates it. Each rung's
entropy change is ``claims``' ``entropy_kept`` measure (the relative change from the first tenth of
training to the last), each step is judged against the rung it was changed from with
``effects.compare`` (the procedure of ``core.judge``) and worded by ``effects.judged``, and the share of tokens the upper bound bound is ``fewer_high_clips``' measure
(clipped on the high side, on the updates after the first of each rollout, whose ratios are all 1).
"""

from __future__ import annotations

from dataclasses import dataclass

from unipo_build.core.numbers import fmt_fixed, fmt_pct
from unipo_build.core.judge import p_text
from unipo_build.site.pages.learning.claims import CLAIMS, POINTS, Result, claim_result, points
from unipo_build.site.pages.learning.effects import Side, Verdict, compare, finding, measure_side
from unipo_build.site.facts.diff import SLOT_LABELS
from unipo_build.site.pages.objectives.ladder import SUITE_FILE, Rung, ladder_rungs, suite_ladders
from unipo_build.site.context import Site, macro
from unipo_build.site.facts.spec_facts import and_names, count_word

#: The slot whose effect on entropy the ladder is asked about, and the claim measures it uses.
SLOT = "clip"
ENTROPY = "entropy_kept"
HIGH_CLIPS = "fewer_high_clips"


@dataclass(frozen=True)
class RungStep:
    """One rung against the rung it was changed from: entropy's relative change on each and the verdict
    on whether it fell less on this rung."""

    rung: Rung
    base: Rung
    slots: tuple[str, ...]
    side: Side
    base_side: Side
    verdict: Verdict

    @property
    def step(self) -> float:
        """This rung's relative change minus its base's (positive: entropy fell less here)."""
        return self.side.mean - self.base_side.mean


@dataclass(frozen=True)
class EntropyLadder:
    """Entropy along a ladder, and the clip-only rung read on its own (``reason``: why it cannot be)."""

    ladder: str
    label: str  # the ladder as the page names it: its last rung's algorithm name ("DAPO")
    sides: tuple[tuple[Rung, Side], ...]  # every rung with a run, in ladder order
    steps: tuple[RungStep, ...]  # every rung measured against a measured base
    clip: Result | None  # entropy_kept of the clip-only rung against its base
    high: Result | None  # fewer_high_clips of the same two
    reason: str = ""
    listed: bool = True  # the project's suite file lists the ladder

    @property
    def measured(self) -> bool:
        return self.clip is not None and self.clip.verdict.status != "unmeasurable"

    @property
    def clear_steps(self) -> tuple[RungStep, ...]:
        """The steps clear of the noise, in ladder order."""
        return tuple(s for s in self.steps if s.verdict.status in ("shown", "contradicted"))


def _entropy_measure():
    return CLAIMS[ENTROPY].measure()


def clip_rung(rungs: list[Rung]) -> tuple[Rung, Rung] | None:
    """(the rung that changes the clip alone, the rung it was changed from), or None."""
    by_id = {r.spec_id: r for r in rungs}
    for rung in rungs:
        slots = [d.slot for d in rung.changed]
        if slots == [SLOT] and rung.base in by_id:
            return rung, by_id[rung.base]
    return None


def entropy_ladder(site: Site, ladder: str = "dapo") -> EntropyLadder:
    label = site.algorithm_name(ladder)
    if ladder not in suite_ladders(site):
        return EntropyLadder(ladder, label, (), (), None, None,
                             f"the project's {'/'.join(SUITE_FILE)} lists no {ladder} ladder", listed=False)
    rungs = ladder_rungs(site, ladder)
    measure = _entropy_measure()
    sides = {r.spec_id: measure_side(r.name, r.runs, measure) for r in rungs}
    by_id = {r.spec_id: r for r in rungs}
    steps = []
    for rung in rungs:
        base = by_id.get(rung.base) if rung.base else None
        if base is None or sides[rung.spec_id].n == 0 or sides[base.spec_id].n == 0:
            continue
        steps.append(RungStep(rung, base, tuple(d.slot for d in rung.changed), sides[rung.spec_id],
                              sides[base.spec_id], compare(sides[rung.spec_id], sides[base.spec_id], +1)))
    measured = tuple((r, sides[r.spec_id]) for r in rungs if sides[r.spec_id].n)
    pair = clip_rung(rungs)
    if pair is None:
        return EntropyLadder(ladder, label, measured, tuple(steps), None, None,
                             f"the {ladder} ladder has no rung that changes the {SLOT} alone")
    rung, base = pair
    labels = [f"the {rung.name} rung", f"the {base.name} rung"]
    clip = claim_result(site, ENTROPY, rung.spec_id, base.spec_id, labels)
    high = claim_result(site, HIGH_CLIPS, rung.spec_id, base.spec_id, labels)
    reason = "" if clip.verdict.status != "unmeasurable" else clip.verdict.reason
    return EntropyLadder(ladder, label, measured, tuple(steps), clip, high, reason)


def _rung_list(m: EntropyLadder) -> str:
    """'−53% under GRPO (mean of three seeds), −61% under GRPO − KL, ...'."""
    parts = []
    for rung, side in m.sides:
        seeds = "" if side.n == 1 else f" (mean of {count_word(side.n)} seeds)"
        parts.append(f"{fmt_pct(side.mean, 0, signed=True)} under {rung.name}{seeds}")
    return and_names(parts)


def _step_words(step: RungStep) -> str:
    """'+ token mean (its aggregation, 9 points, p = 0.008)'."""
    slots = and_names([SLOT_LABELS.get(slot, slot).lower() for slot in step.slots])
    return f"{step.rung.name} (its {slots}, {fmt_fixed(abs(step.step) * 100, 0)} points, p = {p_text(step.verdict.judgement.p)})"


def _steps_words(m: EntropyLadder) -> str:
    """Which rungs carry entropy's fall: the steps clear of the noise, each way, and whether the clip is one."""
    clear = m.clear_steps
    if not clear:
        words = {s.verdict.judgement.short() for s in m.steps if s.verdict.judgement is not None}
        if len(words) == 1 and next(iter(words)).startswith("not separable"):
            return f" No rung's step from the rung before it is clear; every step is {next(iter(words))}."
        return " No rung's step from the rung before it is clear."
    more = [s for s in clear if s.step < 0]
    less = [s for s in clear if s.step > 0]
    parts = []
    if more:
        parts.append("entropy fell more than on the rung before it at " + and_names([_step_words(s) for s in more]))
    if less:
        parts.append("it fell less at " + and_names([_step_words(s) for s in less]))
    text = " Judged clear, " + "; ".join(parts) + "."
    if not any(s.slots == (SLOT,) for s in clear):
        text += f" The {SLOT}'s own step is not among them."
    return text


def _binding_words(high: Result | None) -> str:
    """How many tokens the clip-only rung's upper bound clipped, after the first update of each rollout."""
    if high is None or high.verdict.status == "unmeasurable" or high.a.n == 0:
        return ""
    share = high.a.mean
    text = (f" After the first update of each rollout, the upper bound clipped {fmt_pct(share, 1, small=2)} of {high.a.name}'s "
            f"tokens ({high.b.name}: {fmt_pct(high.b.mean, 1, small=2)})")
    if share < 0.01:
        text += ", so the wider bound had few tokens to act on"
    return text + "."


def entropy_ladder_words(m: EntropyLadder) -> str:
    """Entropy's change on every rung, what the clip-only rung did, how many tokens its bound clipped,
    and which rungs' steps are clear of the noise."""
    if not m.sides:
        why = m.reason if not m.listed else "no rung has a finished run that logs entropy (entropy/mean)"
        return f"Entropy along the {m.label} ladder cannot be measured in this build: {why}."
    text = (f"Along the {m.label} ladder, entropy changed {_rung_list(m)}, from the first tenth of "
            "training to the last.")
    if not m.measured:
        text += f" What the {SLOT} alone does to it cannot be measured here: {m.reason}."
    else:
        r = m.clip
        where = f"on {r.a.name}, which differs from {r.b.name} in the clip only"
        move = f"{fmt_pct(r.a.mean, 0, signed=True)} against {fmt_pct(r.b.mean, 0, signed=True)}"
        text += " " + finding(r.verdict, points, f"The clip alone kept entropy up: {where}, entropy fell less, {move}",
                              f"The clip alone did not keep entropy up: {where}, entropy fell more, {move}",
                              f"What the clip alone does to entropy's fall is not clear here: {where}, entropy changed "
                              f"{move}", sep="; ", unit=POINTS) + "."
        text += _binding_words(m.high)
    text += _steps_words(m)
    return text


def clip_higher_evidence_words(m: EntropyLadder) -> str:
    """A clause for a table cell: what the clip-only rung showed about entropy in this build."""
    if not m.measured:
        return f"not measurable in this build: {m.reason}"
    r = m.clip
    status = r.verdict.status
    nums = f"{fmt_pct(r.a.mean, 0, signed=True)} against {fmt_pct(r.b.mean, 0, signed=True)}, {r.verdict.judgement.short()}"
    if status == "shown":
        return f"in this build's ladder the clip alone kept entropy up ({nums})"
    if status == "contradicted":
        return f"in this build's ladder the clip alone did not keep entropy up ({nums})"
    return f"in this build's ladder what the clip alone does to entropy is not clear ({nums})"


@macro
def ladder_entropy_verdict(site: Site, ladder: str = "dapo") -> str:
    """Sentences: entropy's fall on every rung of a ladder, what the clip-only rung did, and which rung's
    step is largest."""
    return entropy_ladder_words(entropy_ladder(site, str(ladder)))


@macro
def clip_higher_evidence(site: Site, ladder: str = "dapo") -> str:
    """A clause: what the clip-only rung of a ladder showed about entropy (for a table cell)."""
    return clip_higher_evidence_words(entropy_ladder(site, str(ladder)))
