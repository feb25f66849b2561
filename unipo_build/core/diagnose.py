"""What practitioners ask of a run, answered from its log: one diagnosis per question.

The questions are the recurring threads of the trainers' trackers (shared/ALGORITHMS.md, "What practitioners
ask of a run"): is it training although the loss is 0 (trl#2703, trl#3452); why is clip_ratio 0 (trl#3120); why
is the gradient 0 although reward std is not (trl#3857); why does reward not rise (open-r1#474); is entropy
collapsing or exploding (verl#2738); do the sampler's and the learner's log-probs disagree (verl#2996,
prime-rl#2671); why does length move, often from truncation (EasyR1#40); which side clipped (trl#3144).

:func:`diagnose` reads a run (``unipo_build.core.reader``) and returns one :class:`Diagnosis` per question, each
computed from the run alone: the figure it rests on, a verdict (``fine``, ``look here``, or ``not measurable``
with what the log lacks), the steps that show it (the Step Inspector opens them) and the course chapter that
teaches it. Every function is pure over the reader: tests build logs by hand to trigger each one, and the
shipped runs are checked for false alarms (tests/test_diagnose.py).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from unipo_build.core.heldout import MIN_PROBLEMS, TOO_FEW, compare, start_and_end
from unipo_build.core.numbers import fmt_num, fmt_share, fmt_signed_points
from unipo_build.core.reader import RunReader, reader_for
from unipo_build.core.objective import clip_bounds

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
#: |log ratio| at the first update of a rollout (where the learner's policy is the sampler's) beyond which the
#: sampler's and the learner's log-probs disagree: a numerical mismatch, not learning.
MISMATCH = 1e-3
#: A clip fraction (mean over the last tenth of updates) from which a side clips too much to be a guard rail.
HEAVY_CLIP = 0.2
#: The mean |sampler - learner| log-prob gap over tokens (nats) beyond which they disagree.
MISMATCH_MEAN = 1e-2
#: Token files a diagnosis reads at most (spread evenly over the run).
TOKEN_STEPS_READ = 16
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


def _kind(reader: RunReader, slot: str) -> str | None:
    config = reader.header.algorithm_config
    return config.kind(slot) if config is not None else None


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


def clip_zero(reader: RunReader) -> Diagnosis:
    q = "clip_ratio is always 0: why?"
    ch, src = CHAPTERS["ppo"], "trl#3120"
    kind = _kind(reader, "clip")
    if kind == "none":
        return Diagnosis("clip_zero", q, FINE, "this algorithm does not clip (clip slot: none)", ch, src)
    config = reader.header.algorithm_config
    if config is not None and clip_bounds(config) == (None, None):
        return Diagnosis("clip_zero", q, FINE, f"this objective has no bound to clip at (clip: "
                         f"{config.component('clip').label or kind}): its clip fraction is 0 by construction", ch, src)
    steps, low = _values(reader, "clip/frac_low")
    _, high = _values(reader, "clip/frac_high")
    if not len(low) and not len(high):
        return Diagnosis("clip_zero", q, UNMEASURABLE, "", ch, src, lacks="no clip/frac_low or clip/frac_high")
    total = (low if len(low) else 0) + (high if len(high) else 0)
    clipped = np.asarray(total) > 0
    table = reader.table
    per_rollout = (table.n / table.n_rollouts) if table.n_rollouts else 1.0
    if clipped.any():
        return Diagnosis("clip_zero", q, FINE, f"tokens were clipped on {int(clipped.sum())} of {len(clipped)} updates "
                         f"(mean clip fraction {_share(float(np.mean(total)))})", ch, src)
    if per_rollout <= 1.0:
        return Diagnosis("clip_zero", q, FINE, "no token clipped, as expected: one update per rollout, so every "
                         "update is on-policy and the ratio is exactly 1 (nothing to clip)", ch, src)
    return Diagnosis("clip_zero", q, LOOK, f"no token clipped in {len(clipped)} updates although a rollout is "
                     f"trained by {per_rollout:.3g} updates on average: the later updates should move the ratio off 1 (a learning "
                     "rate too small to move it past 1 \u00b1 \u03b5, or a ratio taken against the current policy)",
                     ch, src, steps=[int(s) for s in table.steps[~table.first_in_rollout][:SHOWN]])


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
        why = (f"; on them only {_share(float(np.nanmean(zv)))} of the groups have zero reward variance, so the "
               "advantages are not all 0: the loss kept no token of the others (masked truncations, a filter or a "
               "mask dropping them)")
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
    figure = f"mean token entropy {_g(first)} \u2192 {_g(last)} nats (first and last tenth), {ratio:.2f} of the start"
    if ratio < COLLAPSE:
        below = entropy < COLLAPSE * first
        return Diagnosis("entropy_trend", q, LOOK, figure + f": collapsed below {COLLAPSE:g} of the start, the policy "
                         "samples near-deterministically and explores no more", ch, src, steps=_first(steps, below))
    if ratio > EXPLODE:
        above = entropy > EXPLODE * first
        return Diagnosis("entropy_trend", q, LOOK, figure + f": more than {EXPLODE:g}\u00d7 the start, the policy is "
                         "spreading out (too large a step or clip-higher bound?)", ch, src, steps=_first(steps, above))
    return Diagnosis("entropy_trend", q, FINE, figure + f": within {COLLAPSE:g}\u00d7 to {EXPLODE:g}\u00d7 the start", ch, src)


def sampler_learner(reader: RunReader) -> Diagnosis:
    q = "Do the sampler's and the learner's log-probs disagree?"
    ch, src = CHAPTERS["anatomy"], "verl#2996, prime-rl#2671"
    table = reader.table
    # The trainer's own measure (mixed precision: mismatch/logp_abs_mean, the mean |old_logp - sample_logp| of each
    # update's tokens), over every update.
    msteps, mismatch = _values(reader, "mismatch/logp_abs_mean")
    if len(mismatch):
        figure = (f"mean |sampler \u2212 learner| log-prob gap (mismatch/logp_abs_mean) {_g(float(np.mean(mismatch)))} nats "
                  f"over {len(mismatch)} updates, at most {_g(float(np.max(mismatch)))}")
        high = mismatch > MISMATCH_MEAN
        if high.any():
            return Diagnosis("sampler_learner", q, LOOK, figure + f"; above {MISMATCH_MEAN:g} on {int(high.sum())} "
                             "updates: the policy trained on is not the one that sampled", ch, src,
                             steps=_first(msteps, high))
        return Diagnosis("sampler_learner", q, FINE, figure + f": within {MISMATCH_MEAN:g} (numerical noise)", ch, src)
    # Token files with the sampler's own log-probs (vLLM): compare them with the learner's old log-probs, token by
    # token; a sampler in lower precision differs by ~1e-3 nats on average (the shipped gpu set: 5e-4 to 6e-4,
    # single tokens up to 0.12), a mismatch that matters by ten times that on average.
    token_steps = list(reader.token_steps)
    if len(token_steps) > TOKEN_STEPS_READ:  # evenly spread over the run: a long run's token files are many
        token_steps = [token_steps[int(i)] for i in np.linspace(0, len(token_steps) - 1, TOKEN_STEPS_READ)]
    gaps: list[float] = []
    by_step: dict[int, list[float]] = {}
    for step in token_steps:
        for prompt in reader.detail(step).prompts:
            for response in prompt.responses:
                t = response.tokens
                sample = getattr(t, "sample_logp", None) if t is not None else None
                if sample is None:
                    continue
                mask = t.mask or [1] * len(t.ids)
                found = [abs(a - b) for a, b, m in zip(sample, t.old_logp, mask) if m]
                gaps += found
                by_step.setdefault(step, []).extend(found)
    if gaps:
        mean, worst = float(np.mean(gaps)), float(np.max(gaps))
        figure = (f"mean |sampler \u2212 learner| log-prob gap {_g(mean)} nats over {len(gaps)} tokens of "
                  f"{len(by_step)} steps (largest {_g(worst)})")
        if mean > MISMATCH_MEAN:
            return Diagnosis("sampler_learner", q, LOOK, figure + f", above {MISMATCH_MEAN:g} on average: the policy "
                             "trained on is not the one that sampled; correct it (importance sampling) or find the "
                             "numerical cause", ch, src,
                             steps=[s for s, g in by_step.items() if np.mean(g) > MISMATCH_MEAN][:SHOWN])
        return Diagnosis("sampler_learner", q, FINE, figure + f": within {MISMATCH_MEAN:g} on average (numerical noise)",
                         ch, src)
    # Without the sampler's log-probs: at a rollout's first update the learner's policy is the sampler's, so any
    # ratio off 1 there is a disagreement between the two computations.
    first = table.first_in_rollout
    rmax, rmin = table.column("ratio/max")[first], table.column("ratio/min")[first]
    logged = ~np.isnan(rmax) & ~np.isnan(rmin)
    if not logged.any():
        return Diagnosis("sampler_learner", q, UNMEASURABLE, "", ch, src,
                         lacks="no sampler log-probs (sample_logp) in the token files and no ratio/min and ratio/max "
                               "at the first update of a rollout")
    dev = np.maximum(np.abs(np.log(np.clip(rmax[logged], 1e-300, None))),
                     np.abs(np.log(np.clip(rmin[logged], 1e-300, None))))
    steps = table.steps[first][logged]
    worst = float(dev.max())
    figure = (f"at the first update of each of {int(logged.sum())} rollouts (where the learner is the sampler) the "
              + (f"ratio stays within exp(\u00b1{_g(worst)}) of 1" if worst > 0 else "ratio is exactly 1"))
    if dev.max() > MISMATCH:
        return Diagnosis("sampler_learner", q, LOOK, figure + f", beyond {MISMATCH:g}: the learner's log-probs are not "
                         "the sampler's", ch, src, steps=_first(steps, dev > MISMATCH))
    return Diagnosis("sampler_learner", q, FINE, figure, ch, src)


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
        return Diagnosis("length_moving", q, LOOK, figure + ": the budget shapes length (a truncated answer scores as "
                         "wrong and, per token, weighs by the aggregation)", ch, src,
                         steps=_first(tsteps, truncated > TRUNCATED))
    return Diagnosis("length_moving", q, FINE, figure + f": under {fmt_share(TRUNCATED)} cut, so the change is the "
                     "policy's, not the budget's", ch, src)


def which_side(reader: RunReader) -> Diagnosis:
    q = "Which side clipped?"
    ch, src = CHAPTERS["ppo"], "trl#3144"
    if _kind(reader, "clip") == "none":
        return Diagnosis("which_side", q, FINE, "this algorithm does not clip (clip slot: none)", ch, src)
    steps, low = _values(reader, "clip/frac_low")
    _, high = _values(reader, "clip/frac_high")
    if not len(low) or not len(high):
        return Diagnosis("which_side", q, UNMEASURABLE, "", ch, src,
                         lacks="clip/frac_low and clip/frac_high are not both logged (a single clip_ratio does not say "
                               "which side)")
    low_last, high_last = _edges(low)[1], _edges(high)[1]
    figure = (f"low side (A < 0, ratio below 1 \u2212 \u03b5) {_share(float(np.mean(low)))} of tokens, high side (A > 0, "
              f"ratio above 1 + \u03b5) {_share(float(np.mean(high)))} over the run; last tenth {_share(low_last)} and "
              f"{_share(high_last)}")
    heavy = max(low_last, high_last)
    most = steps[np.argsort(-(low + high), kind="stable")[:SHOWN]]
    if heavy > HEAVY_CLIP:
        side = "low" if low_last >= high_last else "high"
        return Diagnosis("which_side", q, LOOK, figure + f": the {side} side clips over {fmt_share(HEAVY_CLIP)} of tokens, "
                         "a wall rather than a guard rail (too many epochs or too large a step?)", ch, src,
                         steps=sorted(int(s) for s in most))
    return Diagnosis("which_side", q, FINE, figure, ch, src, steps=sorted(int(s) for s in most if (low + high)[
        int(np.searchsorted(steps, s))] > 0))


DIAGNOSES = (loss_zero, clip_zero, zero_grad_with_std, reward_not_rising, entropy_trend, sampler_learner,
             length_moving, which_side)


def diagnose(run: str | Path | RunReader) -> list[Diagnosis]:
    """One diagnosis per practitioner question, in :data:`DIAGNOSES` order."""
    reader = run if isinstance(run, RunReader) else reader_for(run)
    return [fn(reader) for fn in DIAGNOSES]
