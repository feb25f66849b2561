"""What practitioners ask of a run, answered from its log: one diagnosis per question.

The questions are the recurring threads of the trainers' trackers (shared/ALGORITHMS.md, "What practitioners
ask of a run"): is it training although the loss is 0 (trl#2703, trl#3452); why is clip_ratio 0 (trl#3120); why
is the gradient 0 although reward std is not (trl#3857); why does reward not rise (open-r1#474); is entropy
collapsing or exploding (verl#2738); do the sampler's and the learner's log-probs disagree (verl#2996,
prime-rl#2671); why does length move, often from truncation (EasyR1#40); which side clipped (trl#3144).

:func:`diagnose` reads a run (``unipo_build.core.reader``) and returns one :class:`Diagnosis` per question, each
computed from the run alone: the figure it rests on, a verdict (``fine``, ``look here``, or ``not measurable``
with what the log lacks), the steps that show it (the Step Inspector opens them) and the course chapter that
teaches it. Every function is pure over the reader: tests build logs by hand to trigger each one, on every clip
and filter kind, and the shipped runs are checked for false alarms (tests/test_diagnose.py).

The questions are asked in the terms of the run's own objective, read from its kinds, never from their names: the
clipping questions in the clip kind's (``objective.clip_rule``: PPO's range, CISPO's cap on the weight, GMPO's
log-space range, the dual clip's floor; SAPO's gate and no clip clip nothing; a cap on the weight at or below 1 that
the trainer ran and no kind expresses, ``imported_from.weight_cap``, in its own numbers), the length question in
the filter's (a masked truncation weighs 0) and the shaping's, with the reward the token files show a truncated answer
got or, without them, the header's description of the reward. The sampler question reads the sampler's own log-probs
or a trainer's mismatch metrics, mean and tail; a log with neither cannot answer it.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import numpy as np

from unipo_build.core.matching import header_gaps
from unipo_build.core.heldout import MIN_PROBLEMS, TOO_FEW, compare, start_and_end
from unipo_build.core.numbers import fmt_fixed, fmt_num, fmt_share, fmt_signed_points, plain_num
from unipo_build.core import log_reads as R
from unipo_build.core.reader import RunReader, reader_for
from unipo_build.core.objective import clip_rule, masks_responses
from unipo_build.core.registry import ClipRule

FINE, LOOK, UNMEASURABLE = "fine", "look here", "not measurable"

#: A gradient norm at or below this is a zero gradient (float noise of a sum of zeros).
ZERO_GRAD = 1e-10
#: |loss| below this is "about 0".
ZERO_LOSS = 1e-3
#: Entropy at the end over the start (means of the first and last tenth of updates): below COLLAPSE it collapsed,
#: above EXPLODE it exploded. The shipped runs end between 0.36 and 0.91 of their start: sharpening, not collapse.
COLLAPSE, EXPLODE = 0.2, 2.0
#: The share of responses cut at the budget (last tenth of updates) from which length is the budget's doing.
TRUNCATED = 0.05
#: A clip fraction (mean over the last tenth of updates) from which a side clips too much to be a guard rail.
HEAVY_CLIP = 0.2
#: The mean |sampler - learner| log-prob gap over tokens (nats) beyond which they disagree.
MISMATCH_MEAN = 1e-2
#: The tail of the mismatch: a token whose probability differs by more than this factor between the sampler and the
#: learner (the band outside which IcePop and verl's token-level rejection mask a token) ...
TAIL_FACTOR = 2.0
#: ... in more than this share of the tokens read (the shipped gpu runs, bf16 sampling: none of 12,358 tokens; a
#: sampler 8 updates stale: 0.45%).
TAIL_SHARE = 1e-3
#: A log that keeps only each update's largest gap: its worst token beyond this factor in at least half the updates
#: (the gpu runs' median worst token: about 0.2 nats, a factor 1.2; 8 updates stale: about 3.4 nats, a factor 30).
MAX_FACTOR = 10.0
#: KL(sampler || learner) per token (nats), estimated on the sampled tokens (k3), beyond which they disagree (the gpu
#: runs: 1.1e-5; 8 updates stale: 3.9e-3).
MISMATCH_KL = 1e-3
#: The sampler/learner gap's per-update metrics as each writer names them: mean and largest |learner - sampler|
#: log-prob over the update's tokens (this project's trainer; TRL with vLLM's importance-sampling correction), and the
#: sampler KL (prime-rl's mismatch_kl, verl's rollout correction k3_kl).
GAP_MEAN = ("mismatch/logp_abs_mean", "sampling/sampling_logp_difference/mean")
GAP_MAX = ("mismatch/logp_abs_max", "sampling/sampling_logp_difference/max")
SAMPLER_KL = ("mismatch_kl/all/mean", "rollout_corr/k3_kl")
#: A clip's bound within this factor of 1 is met in ordinary training (PPO's 0.8 and 1.2); a farther one (a CISPO cap
#: of 5) only by rare tokens, so that none reaching it says nothing.
NEAR_BOUND = 2.0
#: Training rewards needed to judge a rise without a held-out evaluation (two tenths of at least two each).
MIN_UPDATES = 20
#: How many steps a diagnosis points at.
SHOWN = 5


#: The course's pages (docs/ of the checkout this package belongs to): a chapter is named by its page's title.
DOCS = Path(__file__).resolve().parents[2] / "docs"


def page_title(path: str, docs: Path = DOCS) -> str:
    """The title a reader sees on the page ``docs/<path>``: its first level-one heading. Where the page is not
    there (a package installed without the course), its path under docs/."""
    try:
        text = (docs / path).read_text(encoding="utf-8")
    except OSError:
        return f"docs/{path}"
    for line in text.splitlines():
        if line.startswith("# "):
            return line[2:].strip()
    return f"docs/{path}"


@dataclass(frozen=True)
class Chapter:
    title: str  # the page's own title (:func:`page_title`), so a link to it reads as the page it opens
    path: str  # under docs/, e.g. "course/algorithms/ppo.md"
    spec: str | None = None  # the spec whose chapter it is (``unipo explain`` copies that one)


def _chapter(path: str, spec: str | None = None) -> Chapter:
    return Chapter(page_title(path), path, spec)


CHAPTERS = {
    "derivation": _chapter("course/derivation.md"),
    "ppo": _chapter("course/algorithms/ppo.md", "ppo"),
    "dapo": _chapter("course/algorithms/dapo.md", "dapo"),
    "dynamics": _chapter("course/compare/dynamics.md"),
    "anatomy": _chapter("course/anatomy.md"),
    "dr_grpo": _chapter("course/algorithms/dr_grpo.md", "dr_grpo"),
}


@dataclass
class Diagnosis:
    key: str
    question: str
    verdict: str  # FINE, LOOK or UNMEASURABLE
    figure: str  # what it rests on, with its numbers
    chapter: Chapter
    source: str  # the tracker thread the question comes from
    lacks: str | None = None  # UNMEASURABLE: what the log lacks
    steps: list[int] = field(default_factory=list)  # the steps that show it

    @property
    def verdict_text(self) -> str:
        return f"{UNMEASURABLE}: {self.lacks}" if self.verdict == UNMEASURABLE else self.verdict

    def as_dict(self) -> dict:
        out = asdict(self)
        out["verdict_text"] = self.verdict_text
        return out


def _values(reader: RunReader, name: str) -> tuple[np.ndarray, np.ndarray]:
    """(steps, values) where ``name`` is logged."""
    return reader.table.series(name)


def _edges(values: np.ndarray) -> tuple[float, float]:
    """Means of the first and the last tenth (at least one value each)."""
    k = max(1, len(values) // 10)
    return float(np.mean(values[:k])), float(np.mean(values[-k:]))


def _g(x: float) -> str:
    """A figure to three significant digits as the site writes numbers (true minus, 2.5 × 10⁻⁵)."""
    return fmt_num(x, 3)


def _share(x: float) -> str:
    """A share to one decimal; one that is not 0 never reads as 0% (0.03%, under 0.01%)."""
    return fmt_share(x, 1)


def _points(x: float) -> str:
    """A change of a share in percentage points, signed (+23.2, \u22124.1)."""
    return fmt_signed_points(x, 1)


def _first(steps, mask, n: int = SHOWN) -> list[int]:
    return [int(s) for s in np.asarray(steps)[np.asarray(mask, dtype=bool)][:n]]


def _rule(reader: RunReader) -> tuple[bool, ClipRule | None]:
    """(whether the log names its objective, the clip's bound in words: objective.clip_rule; None where the
    objective clips no token)."""
    config = reader.header.algorithm_config
    return (config is not None, clip_rule(config) if config is not None else None)


def _clip_gap(reader: RunReader, found: Diagnosis) -> Diagnosis:
    """A clipping answer of a run whose trainer clipped otherwise than any kind expresses (an import's gap in the clip
    slot: TRL's CISPO capped at 0.2, below 1): its words are the nearest kind's, and it says so."""
    gaps = [g for g in header_gaps(reader.header) if g.slot == "clip"]
    if not gaps:
        return found
    ran = "; ".join(f"{g.setting} = {g.value}" for g in gaps)
    said = f" (the trainer ran {ran}, which no kind expresses: these words are the run's components', {gaps[0].nearest})"
    if found.verdict == UNMEASURABLE:
        return replace(found, lacks=(found.lacks or "") + said)
    return replace(found, figure=found.figure + said)


def clip_zero(reader: RunReader) -> Diagnosis:
    return _clip_gap(reader, _clip_zero(reader))


def which_side(reader: RunReader) -> Diagnosis:
    cap = _weight_cap(reader)
    return _capped(reader, cap) if cap else _clip_gap(reader, _which_side(reader))


def _weight_cap(reader: RunReader) -> dict | None:
    """The cap at or below 1 on the importance weight an import recorded (``imported_from.weight_cap``: setting, cap,
    advice; TRL's CISPO with epsilon_high unset caps at 0.2), which no clip kind expresses; None for other runs."""
    imported = (reader.header.model_extra or {}).get("imported_from")
    cap = imported.get("weight_cap") if isinstance(imported, dict) else None
    ok = isinstance(cap, dict) and type(cap.get("cap")) in (int, float) and 0 < cap["cap"] <= 1
    return cap if ok else None


def _capped(reader: RunReader, cap: dict) -> Diagnosis:
    """Which side clipped, where the trainer capped every token's weight at or below 1: the share of the token files'
    tokens whose ratio passed the cap (their weight held below their ratio), and what the trainer's documentation
    recommends."""
    at = fmt_num(float(cap["cap"]))
    figure = (f"above the cap, whatever the advantage's sign: the trainer capped the importance weight at {at} "
              f"({cap.get('setting') or 'its cap'} = {at}, a cap no clip kind expresses), so a token's weight "
              f"min(ratio, {at}) is below its ratio wherever the ratio is above {at}; ")
    counted = R.ratios_above(reader, float(cap["cap"]))
    steps: list[int] = []
    if counted is None:
        figure += "at a rollout's first update every token's ratio is 1, above it (no token file to count the others)"
    else:
        above, total, steps = counted
        figure += (f"every one of the {fmt_num(total)} tokens in the token files had a ratio above it" if above == total
                   else f"{_share(above / total)} of the {fmt_num(total)} tokens in the token files ({fmt_num(above)}) "
                        "had a ratio above it")
    figure += (f": their gradient is {at} \u00d7 A \u00d7 \u2207log \u03c0 whatever their ratio, the policy gradient "
               "scaled down rather than guarded against large ratios")
    figure += f"; {cap['advice']}" if cap.get("advice") else ""
    return Diagnosis("which_side", "Which side clipped?", LOOK, figure, CHAPTERS["ppo"], "trl#3144",
                     steps=steps[:SHOWN])


def _no_clip(reader: RunReader, lead: str) -> str:
    """``lead``, then why an objective whose clip clips no token has nothing to count, in its clip kind's words."""
    kind = reader.header.algorithm_config.component("clip")
    return f"this objective clips no token, {lead} (clip slot: {kind.label or kind.name}). {kind.summary}"


def _near(rule: ClipRule | None) -> bool:
    """Whether a side of the clip sits near enough to 1 to be met in ordinary training (:data:`NEAR_BOUND`)."""
    if rule is None:
        return True
    return any(x is not None and x > 0 and abs(np.log(x)) <= np.log(NEAR_BOUND) for x in (rule.low, rule.high))


# ---------------------------------------------------------------------------
# The eight questions
# ---------------------------------------------------------------------------

def loss_zero(reader: RunReader) -> Diagnosis:
    q = "The loss is (about) 0: is it training?"
    ch, src = CHAPTERS["derivation"], "trl#2703, trl#3452"
    steps, loss = _values(reader, "loss/policy")
    if not len(loss):
        steps, objective = _values(reader, "objective")
        loss = -objective
    gsteps, grad = _values(reader, "grad_norm")
    if not len(loss) and not len(grad):
        return Diagnosis("loss_zero", q, UNMEASURABLE, "", ch, src, lacks="no loss/policy, objective or grad_norm")
    if not len(grad):
        return Diagnosis("loss_zero", q, UNMEASURABLE, f"median |loss| {_g(float(np.median(np.abs(loss))))}", ch, src,
                         lacks="no grad_norm: whether the weights move cannot be told from the loss")
    zero = grad <= ZERO_GRAD
    about_zero = len(loss) and float(np.median(np.abs(loss))) < ZERO_LOSS
    loss_text = f"median |loss| {_g(float(np.median(np.abs(loss))))}" if len(loss) else "no loss logged"
    figure = (f"{loss_text}; gradient norm 0 on {int(zero.sum())} of {len(grad)} updates, median "
              f"{_g(float(np.median(grad)))}")
    if zero.mean() > 0.5:
        return Diagnosis("loss_zero", q, LOOK, figure + ": most updates move nothing", ch, src,
                         steps=_first(gsteps, zero))
    why = (": the loss is about 0 because at ratio 1 with centred advantages its value cancels, while its "
           "gradient does not; the gradient norm says it trains" if about_zero else
           ": the gradient is not 0, so it trains (the loss's value is not what moves the weights)")
    return Diagnosis("loss_zero", q, FINE, figure + why, ch, src)


def _clip_zero(reader: RunReader) -> Diagnosis:
    q = "clip_ratio is always 0: why?"
    ch, src = CHAPTERS["ppo"], "trl#3120"
    named, rule = _rule(reader)
    if named and rule is None:
        return Diagnosis("clip_zero", q, FINE, _no_clip(reader, "so its clip fraction is 0 by construction"), ch, src)
    bound = f"{rule.name}, {rule.bound}" if rule is not None else "the clip's bounds 1 \u00b1 \u03b5"
    steps, low = _values(reader, "clip/frac_low")
    _, high = _values(reader, "clip/frac_high")
    if not len(low) and not len(high):
        return Diagnosis("clip_zero", q, UNMEASURABLE, "", ch, src, lacks="no clip/frac_low or clip/frac_high")
    total = (low if len(low) else 0) + (high if len(high) else 0)
    clipped = np.asarray(total) > 0
    table = reader.table
    per_rollout = (table.n / table.n_rollouts) if table.n_rollouts else 1.0
    if clipped.any():
        what = ("tokens were clipped" if rule is None or rule.silences else
                f"tokens reached {rule.name} (their weight held there, their gradient still flowing)")
        return Diagnosis("clip_zero", q, FINE, f"{what} on {int(clipped.sum())} of {len(clipped)} updates "
                         f"(mean clip fraction {_share(float(np.mean(total)))})", ch, src)
    if per_rollout <= 1.0:
        return Diagnosis("clip_zero", q, FINE, "no token clipped, as expected: one update per rollout, so every "
                         "update is on-policy and the ratio is exactly 1 (nothing to clip)", ch, src)
    later = [int(s) for s in table.steps[~table.first_in_rollout][:SHOWN]]
    intro = (f"no token clipped in {len(clipped)} updates although a rollout is trained by "
             f"{plain_num(per_rollout, 3)} updates on average")
    seen = R.later_ratio(reader)
    if seen is not None:
        lo, hi, where = seen
        if abs(lo - 1) < 1e-6 and abs(hi - 1) < 1e-6:
            return Diagnosis("clip_zero", q, LOOK, f"{intro}, and at the later updates the ratio is exactly 1 too "
                             f"({where}): the old log-probs are the current policy's (a ratio taken against the current "
                             "policy), or the weights do not move", ch, src, steps=later)
        span = f"at the later updates the ratio stayed between {_g(lo)} and {_g(hi)} ({where})"
        if rule is None or ((rule.low is None or lo >= rule.low) and (rule.high is None or hi <= rule.high)):
            return Diagnosis("clip_zero", q, FINE, f"{intro}; {span}, inside {bound}: no token reached a bound, so "
                             "none could be clipped", ch, src)
        sides = "; ".join(x for x in (rule.low_side, rule.high_side) if x)
        return Diagnosis("clip_zero", q, FINE, f"{intro}; {span}, past {bound} only on tokens it does not count: a "
                         f"token is counted where its advantage pushes it out ({sides}), and none was", ch, src)
    if not _near(rule):
        return Diagnosis("clip_zero", q, UNMEASURABLE, intro, ch, src,
                         lacks=f"no ratio/min, ratio/max or token ratios at the later updates: whether any token came "
                               f"near {bound}, cannot be told, and a bound that far from 1 is reached by rare tokens only")
    return Diagnosis("clip_zero", q, LOOK, f"{intro}: the later updates should move the ratio off 1 (a learning rate "
                     f"too small to move it past {bound}, or a ratio taken against the current policy)",
                     ch, src, steps=later)


def zero_grad_with_std(reader: RunReader) -> Diagnosis:
    q = "Reward std > 0, yet the gradient is 0: why?"
    ch, src = CHAPTERS["dapo"], "trl#3857"
    table = reader.table
    std, grad = table.column("reward/std"), table.column("grad_norm")
    if np.all(np.isnan(std)) or np.all(np.isnan(grad)):
        missing = " and ".join(n for n, v in (("reward/std", std), ("grad_norm", grad)) if np.all(np.isnan(v)))
        return Diagnosis("zero_grad_with_std", q, UNMEASURABLE, "", ch, src, lacks=f"no {missing}")
    hit = (std > 0) & (grad <= ZERO_GRAD)
    if not hit.any():
        return Diagnosis("zero_grad_with_std", q, FINE, f"no update has reward std > 0 with a zero gradient "
                         f"({int(np.sum(~np.isnan(grad)))} updates with both logged)", ch, src)
    zv = table.column("groups/zero_variance_frac")[hit]
    if np.all(np.isnan(zv)):
        why = "; groups/zero_variance_frac is not logged to tell whether every group had zero variance"
    elif float(np.nanmin(zv)) >= 1.0 - 1e-9:
        why = ("; on them every group has zero reward variance (every answer of a prompt scored alike): the batch's "
               "std is not 0, each group's is, so every advantage is 0")
    else:
        config = reader.header.algorithm_config
        if config is None:
            dropped = "masked truncations, a filter or a mask dropping them"
        elif masks_responses(config):
            kind = config.component("filter")
            dropped = (f"this run's filter, {kind.label or kind.name}, takes truncated answers out of the loss: were "
                       "the others' answers all cut at the budget?")
        else:
            kind = config.component("filter")
            dropped = (f"a mask dropping them: this run's filter, {kind.label or kind.name}, takes no single answer "
                       "out of the loss")
        why = (f"; on them only {_share(float(np.nanmean(zv)))} of the groups have zero reward variance, so the "
               f"advantages are not all 0: the loss kept no token of the others ({dropped})")
    return Diagnosis("zero_grad_with_std", q, LOOK, f"{int(hit.sum())} of {table.n} updates have reward std > 0 and "
                     f"gradient norm 0{why}", ch, src, steps=_first(table.steps, hit))


def reward_not_rising(reader: RunReader) -> Diagnosis:
    q = "Reward does not rise: is it learning?"
    ch, src = CHAPTERS["dynamics"], "open-r1#474"
    start, end = start_and_end(reader.evals)
    change = compare(start, end, "greedy") if start and end else None
    if change is None and start and end:
        change = compare(start, end, "sampled")
    if change is not None:
        low, high = change.low, change.high
        figure = (f"held-out {change.mode} accuracy {_share(change.start)} \u2192 {_share(change.end)} "
                  f"({_points(change.change)} points, 95% CI {_points(low)} to {_points(high)}, n {fmt_num(change.n)})")
        if change.too_few:
            return Diagnosis("reward_not_rising", q, UNMEASURABLE, figure, ch, src,
                             lacks=f"{TOO_FEW}: the held-out evaluation has {change.n} problems, under {MIN_PROBLEMS}")
        if low > 0:
            return Diagnosis("reward_not_rising", q, FINE, figure, ch, src)
        return Diagnosis("reward_not_rising", q, LOOK, figure + ": no rise the held-out set can tell from noise", ch,
                         src, steps=[int(reader.table.steps[-1])] if reader.table.n else [])
    steps, reward = _values(reader, "reward/mean")
    if len(reward) < MIN_UPDATES:
        return Diagnosis("reward_not_rising", q, UNMEASURABLE,
                         f"{len(reward)} logged training reward{'' if len(reward) == 1 else 's'}", ch, src,
                         lacks=f"no held-out evaluation at the start and the end, and under {MIN_UPDATES} logged training "
                               "rewards to tell a rise from the noise of the prompts' draw")
    k = max(1, len(reward) // 10)
    first, last = reward[:k], reward[-k:]
    se = float(np.sqrt(np.var(first) / len(first) + np.var(last) / len(last))) if k > 1 else 0.0
    rise = float(np.mean(last) - np.mean(first))
    figure = (f"training reward {_g(float(np.mean(first)))} \u2192 {_g(float(np.mean(last)))} (first and last tenth of "
              f"updates; no held-out evaluation logged, so the prompts' draw is part of it)")
    if rise > 2 * se and rise > 0:
        return Diagnosis("reward_not_rising", q, FINE, figure, ch, src)
    return Diagnosis("reward_not_rising", q, LOOK, figure + f": a change of {_g(rise)} against a noise of {_g(se)}",
                     ch, src, steps=[int(s) for s in steps[-k:][:SHOWN]])


def entropy_trend(reader: RunReader) -> Diagnosis:
    q = "Is entropy collapsing (or exploding)?"
    ch, src = CHAPTERS["dapo"], "verl#2738, verl PR #781"
    steps, entropy = _values(reader, "entropy/mean")
    if len(entropy) < 2:
        return Diagnosis("entropy_trend", q, UNMEASURABLE, "", ch, src, lacks="no entropy/mean over two updates")
    first, last = _edges(entropy)
    ratio = last / first if first > 0 else float("inf")
    figure = (f"mean token entropy {_g(first)} \u2192 {_g(last)} nats (first and last tenth), "
              f"{fmt_fixed(ratio, 2, minus='-')} of the start")
    if ratio < COLLAPSE:
        below = entropy < COLLAPSE * first
        return Diagnosis("entropy_trend", q, LOOK, figure + f": collapsed below {plain_num(COLLAPSE)} of the start, "
                         "the policy samples near-deterministically and explores no more", ch, src,
                         steps=_first(steps, below))
    if ratio > EXPLODE:
        above = entropy > EXPLODE * first
        named, rule = _rule(reader)
        why = ("too large a step, or a high bound that lets unlikely tokens rise: "
               f"{rule.name}, {rule.bound}?" if rule is not None and rule.high is not None else
               "too large a step? this objective clips no token" if named and rule is None else
               "too large a step or clip-higher bound?")
        return Diagnosis("entropy_trend", q, LOOK, figure + f": more than {plain_num(EXPLODE)}\u00d7 the start, "
                         f"the policy is spreading out ({why})", ch, src, steps=_first(steps, above))
    return Diagnosis("entropy_trend", q, FINE,
                     figure + f": within {plain_num(COLLAPSE)}\u00d7 to {plain_num(EXPLODE)}\u00d7 the start", ch, src)


def sampler_learner(reader: RunReader) -> Diagnosis:
    q = "Do the sampler's and the learner's log-probs disagree?"
    ch, src = CHAPTERS["anatomy"], "verl#2996, prime-rl#2671"
    # What the log holds of the two: each update's mean and largest |learner - sampler| log-prob gap and the sampler
    # KL where the trainer logged them (every update), and the sampler's own log-probs in the token files (a sample of
    # steps, every token: the tail). The mean says whether they disagree on the whole; the tail, whether some tokens
    # are far off, which a mean hides and which practitioners watch.
    said: list[str] = []
    alarms: list[str] = []
    flagged: list[int] = []
    mean = R.series_of(reader, GAP_MEAN)
    if mean is not None:
        name, msteps, values = mean
        high = values > MISMATCH_MEAN
        said.append(f"mean |sampler \u2212 learner| log-prob gap ({name}) {_g(float(np.mean(values)))} nats over "
                    f"{len(values)} updates, at most {_g(float(np.max(values)))}")
        if high.any():
            alarms.append(f"the mean gap is above {plain_num(MISMATCH_MEAN)} on {int(high.sum())} updates")
            flagged += _first(msteps, high)
    worst = R.series_of(reader, GAP_MAX)
    if worst is not None:
        name, wsteps, values = worst
        median = float(np.median(values))
        said.append(f"each update's largest token gap ({name}) {_g(median)} nats in the median update (a probability "
                    f"ratio of {_g(float(np.exp(median)))}), {_g(float(np.max(values)))} at most")
        beyond = values > np.log(MAX_FACTOR)
        if median > np.log(MAX_FACTOR):
            alarms.append(f"in most updates some token is over {plain_num(MAX_FACTOR)} times as likely to one as to "
                          "the other")
            flagged += _first(wsteps, beyond)
    kl = R.series_of(reader, SAMPLER_KL)
    if kl is not None:
        name, ksteps, values = kl
        said.append(f"sampler KL ({name}) {_g(float(np.mean(values)))} nats per token on average, "
                    f"{_g(float(np.max(values)))} at most")
        if float(np.mean(values)) > MISMATCH_KL:
            alarms.append(f"the sampler KL is above {plain_num(MISMATCH_KL)} on average")
            flagged += _first(ksteps, values > MISMATCH_KL)
    # Token files with the sampler's own log-probs (vLLM, a stale sampler): every token's gap, its tail and the KL.
    gaps = R.sampler_gaps(reader)
    if gaps:
        d = np.concatenate(list(gaps.values()))
        a = np.abs(d)
        tail = float(np.mean(a > np.log(TAIL_FACTOR)))
        k3 = float(np.mean(np.expm1(d) - d))  # KL(sampler || learner) on tokens the sampler drew: r - 1 - log r
        said.append(f"over {fmt_num(len(d))} tokens of {len(gaps)} steps' token files, mean gap {_g(float(a.mean()))} "
                    f"nats, 99.9% of tokens within {_g(float(np.quantile(a, 0.999)))} (largest {_g(float(a.max()))}), "
                    + (f"{_share(tail)} of tokens" if tail else "no token")
                    + f" beyond a factor {plain_num(TAIL_FACTOR)} in probability, sampler KL {_g(k3)} nats per token")
        if mean is None and float(a.mean()) > MISMATCH_MEAN:
            alarms.append(f"the mean gap is above {plain_num(MISMATCH_MEAN)}")
            flagged += [s for s, g in gaps.items() if np.mean(np.abs(g)) > MISMATCH_MEAN][:SHOWN]
        if tail > TAIL_SHARE:
            alarms.append(f"over {_share(TAIL_SHARE)} of tokens are beyond a factor {plain_num(TAIL_FACTOR)}")
            flagged += [s for s, g in gaps.items() if np.mean(np.abs(g) > np.log(TAIL_FACTOR)) > TAIL_SHARE][:SHOWN]
        if kl is None and k3 > MISMATCH_KL:
            alarms.append(f"the sampler KL is above {plain_num(MISMATCH_KL)}")
    if not said:
        return Diagnosis("sampler_learner", q, UNMEASURABLE, "", ch, src, lacks=(
            "the log holds no log-prob of the sampler's (no sample_logp in the token files, no mismatch metric such as "
            "mismatch/logp_abs_mean): the ratio at a rollout's first update compares the learner with itself, its old "
            "log-probs being its own, so it is 1 whatever the sampler did and cannot show a disagreement"))
    figure = "; ".join(said)
    checks = [f"mean gap under {plain_num(MISMATCH_MEAN)} nats" if mean is not None or gaps else "",
              f"the median update's largest gap within a factor {plain_num(MAX_FACTOR)}" if worst is not None else "",
              f"no more than {_share(TAIL_SHARE)} of tokens beyond a factor {plain_num(TAIL_FACTOR)}" if gaps else "",
              f"sampler KL under {plain_num(MISMATCH_KL)}" if kl is not None or gaps else ""]
    if alarms:
        return Diagnosis("sampler_learner", q, LOOK, figure + ": " + ", and ".join(alarms) + "; the policy trained on "
                         "is not the one that sampled: correct it (importance sampling) or find the cause", ch, src,
                         steps=sorted(set(flagged))[:SHOWN])
    return Diagnosis("sampler_learner", q, FINE, figure + ": numerical noise (" + ", ".join(c for c in checks if c)
                     + ")", ch, src)


def _truncation_words(reader: RunReader) -> str:
    """How the budget reaches this run's objective: what its reward gave a truncated answer (read from its token
    files, else the header's description of the reward), how its filter weighs a truncated answer's tokens and
    whether its shaping adds a length term."""
    scored = R.truncated_rewards(reader)
    if scored is not None:
        cut, n_cut, done, n_done = scored
        reward = (f"its {fmt_num(n_cut)} truncated answers in the token files scored {_g(cut)} on average"
                  + (f", its {fmt_num(n_done)} finished ones {_g(done)}" if n_done else ""))
    else:
        reward = (f"a truncated answer is scored without its end by this run's reward "
                  f"(\u201c{reader.header.reward.description}\u201d)")
    config = reader.header.algorithm_config
    if config is None:
        return reward + "; the log names no objective to say how its tokens weigh"
    if masks_responses(config):
        kind = config.component("filter")
        counted = config.param("filter", "count_masked")
        weigh = (f"its filter ({kind.label or kind.name}) takes a truncated answer's tokens out of the loss (weight 0"
                 + ("; the normaliser still counts them" if counted else ", and out of the normaliser")
                 + "), while its reward still enters its group's mean and std, so the budget moves the other answers' "
                   "advantages")
    else:
        kind = config.component("aggregation")
        weigh = f"its tokens weigh in the loss as any answer's do ({kind.label or kind.name})"
    shaping = config.component("shaping")
    shaped = "" if shaping.is_none else f"; the reward's shaping adds a length term ({shaping.label or shaping.name})"
    return f"{reward}; {weigh}{shaped}"


def length_moving(reader: RunReader) -> Diagnosis:
    q = "Why does length shrink or grow (truncation)?"
    ch, src = CHAPTERS["dr_grpo"], "EasyR1#40"
    steps, length = _values(reader, "length/mean")
    if len(length) < 2:
        return Diagnosis("length_moving", q, UNMEASURABLE, "", ch, src, lacks="no length/mean over two updates")
    first, last = _edges(length)
    tsteps, truncated = _values(reader, "length/truncated_frac")
    figure = f"mean response length {_g(first)} \u2192 {_g(last)} tokens (first and last tenth)"
    if not len(truncated):
        return Diagnosis("length_moving", q, UNMEASURABLE, figure, ch, src,
                         lacks="no length/truncated_frac: whether the budget cuts the responses cannot be told")
    t_first, t_last = _edges(truncated)
    figure += f"; responses cut at the budget {_share(t_first)} \u2192 {_share(t_last)}"
    if t_last > TRUNCATED:
        return Diagnosis("length_moving", q, LOOK, figure + f": the budget shapes length ({_truncation_words(reader)})",
                         ch, src, steps=_first(tsteps, truncated > TRUNCATED))
    return Diagnosis("length_moving", q, FINE, figure + f": under {fmt_share(TRUNCATED)} cut, so the change is the "
                     "policy's, not the budget's", ch, src)


def _which_side(reader: RunReader) -> Diagnosis:
    q = "Which side clipped?"
    ch, src = CHAPTERS["ppo"], "trl#3144"
    named, rule = _rule(reader)
    if named and rule is None:
        return Diagnosis("which_side", q, FINE, _no_clip(reader, "so there is no side to count"), ch, src)
    if rule is None:  # a log that names no objective: PPO's words
        rule = ClipRule("the clip", "1 \u00b1 \u03b5", 0.0, 2.0, "A < 0, ratio below 1 \u2212 \u03b5",
                        "A > 0, ratio above 1 + \u03b5")
    table = reader.table
    sides = [(side, words, table.column(f"clip/frac_{side}")) for side, words, at in
             (("low", rule.low_side, rule.low), ("high", rule.high_side, rule.high)) if at is not None]
    logged = [(side, words, v) for side, words, v in sides if not np.all(np.isnan(v))]
    if len(logged) < len(sides):
        if logged:
            lacks = (f"only clip/frac_{logged[0][0]} is logged of {rule.name}'s two sides (a single clip fraction "
                     "does not say which side)")
        else:
            lacks = "no " + " or ".join(f"clip/frac_{side}" for side, _, _ in sides)
        return Diagnosis("which_side", q, UNMEASURABLE, "", ch, src, lacks=lacks)
    rows = [(side, words, v, ~np.isnan(v)) for side, words, v in logged]
    parts, lasts = [], []
    for side, words, v, ok in rows:
        parts.append(f"{side} side ({words}) {_share(float(np.mean(v[ok])))} of tokens")
        lasts.append((side, _edges(v[ok])[1]))
    figure = (", ".join(parts) + " over the run; last tenth " + " and ".join(_share(x) for _, x in lasts))
    absent = [side for side, at in (("low", rule.low), ("high", rule.high)) if at is None]
    if absent:
        figure += f"; {rule.name} has no {absent[0]} side: {rule.bound}"
    both = np.nansum(np.vstack([v for _, _, v, _ in rows]), axis=0)
    some = np.any(np.vstack([ok for *_, ok in rows]), axis=0)
    order = [i for i in np.argsort(-both, kind="stable") if some[i]]
    side, heavy = max(lasts, key=lambda x: x[1])
    if heavy > HEAVY_CLIP:
        most = sorted(int(table.steps[i]) for i in order[:SHOWN])
        why = ("a wall rather than a guard rail (too many epochs or too large a step?)" if rule.silences else
               "its tokens keep their gradient, only scaled down to the bound; a bound the ratios meet this often acts "
               "on most updates, not on rare tokens" + (" (below 1 it holds the weight of every token whose ratio is "
                                                        "above it)" if rule.high is not None and rule.high < 1 else ""))
        return Diagnosis("which_side", q, LOOK, figure + f": the {side} side counts over {fmt_share(HEAVY_CLIP)} of "
                         f"tokens, {why}", ch, src, steps=most)
    return Diagnosis("which_side", q, FINE, figure, ch, src,
                     steps=sorted(int(table.steps[i]) for i in order[:SHOWN] if both[i] > 0))


DIAGNOSES = (loss_zero, clip_zero, zero_grad_with_std, reward_not_rising, entropy_trend, sampler_learner,
             length_moving, which_side)


def diagnose(run: str | Path | RunReader) -> list[Diagnosis]:
    """One diagnosis per practitioner question, in :data:`DIAGNOSES` order."""
    reader = run if isinstance(run, RunReader) else reader_for(run)
    return [fn(reader) for fn in DIAGNOSES]
