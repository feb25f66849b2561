"""CISPO beside DAPO, and dual-clip beside GRPO: what the clip family's variants did in the runs of the build.

    {{ clip_family_gains("cispo", "dapo") }}         sentences: held-out gains of the two, seed by seed, the verdict,
                                                     and each seed's end-of-training gap paired problem by problem
                                                     (baseline=true: the second is the first's baseline)
    {{ clip_family_entropy("cispo", "dapo") }}       sentences: mean token entropy over the last tenth, the verdict and
                                                     how large the gap is against the level
    {{ kept_gradient_tokens("cispo", "dapo") }}      sentences: how many tokens the first kept a gradient for that
                                                     the second's clip would have silenced (every update, and the
                                                     logged token steps for the low side)
    {{ clipped_token_table("cispo", "dapo") }}       the token the first run pushed furthest past its bound: its value
                                                     and gradient under both objectives (HTML)
    {{ clipped_token_text("cispo", "dapo") }}        the same token in words
    {{ run_divergence("dual_clip", "grpo") }}        sentences: do the same seed's runs of the two log the same metrics
                                                     at every update, and if not, where they part
    {{ dual_clip_reach("dual_clip", "grpo") }}       sentences: how far ratios rose, on which tokens, against the floor c

The two comparisons are one slot apart in their specs (``claims.slots_apart``): CISPO is DAPO with
the clip alone changed, dual-clip is GRPO with a floor added to the clip. A token's value and
gradient under an objective come from the registry's kind (``Kind.apply``, differentiated by
torch's autograd with respect to the token's log-probability), never from a second copy of the
formula. Counts of clipped tokens come from the step metrics clip/frac_high and clip/frac_low, each
a share of the update's trained tokens (``training/records.update_metrics``), and that token count
from the rollout metrics: kept answers (sampled tokens / sampled length / generated per kept) times
their mean length.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from unipo_build.core.heldout import run_change
from unipo_build.core.moments import find_moment
from unipo_build.core.objective import term_and_gradient
from unipo_build.core.numbers import fmt_num, fmt_pct, fmt_signed_points
from unipo_build.core.runs import Run
from unipo_build.site.context import Site, macro
from unipo_build.site.facts.seeds import finished_runs, seeds_list
from unipo_build.site.facts.spec_facts import and_names, count_word
from unipo_build.site.fmt import escape_text, note_html, table
from unipo_build.site.pages.learning.claims import runs_named, slots_apart
from unipo_build.site.pages.learning.effects import EDGE, RunValue, Side, Verdict, compare, finding
from unipo_build.site.pages.learning.judging import end_gaps, paired_words, seed_pairs  # noqa: F401  (end_gaps: the chapters' tests)

#: Metrics left out when two runs' logs are compared value by value: wall-clock timings differ
#: between any two runs, whatever they computed.
TIMING_PREFIX = "time/"
#: A gap in entropy smaller than this share of the lower side's level is worded as a sliver.
SLIVER = 0.10


def _runs(site: Site, name: str) -> tuple[str, list[Run]]:
    """(label, finished runs) of an algorithm id (its seeds) or of one run id."""
    label, runs = runs_named(site, name)
    return label, finished_runs(runs)[0]


def missing_text(site: Site, names: Sequence[str], what: str) -> str | None:
    """One line naming each algorithm or run the build lacks, or None when every one has a finished run."""
    lacking = [n for n in names if not _runs(site, n)[1]]
    if not lacking:
        return None
    return (f"There is no finished {and_names([repr(n) for n in lacking])} run in this build, so {what} cannot be "
            "measured here.")


def _seeds_phrase(side: Side, fmt, unit: str = "") -> str:
    """'+22.1 points on average (seeds: +22.9, +22.3 and +21.1)', or one run's value."""
    unit = f" {unit}" if unit else ""
    if side.n == 1:
        return fmt(side.values[0].value) + unit
    return f"{fmt(side.mean)}{unit} on average (seeds: {and_names([fmt(v.value) for v in side.values])})"


# ---------------------------------------------------------------------------
# Held-out gains
# ---------------------------------------------------------------------------

def gain_side(name: str, runs: list[Run], mode: str) -> Side:
    """Each run's held-out change in ``mode`` (the error of one run: its paired interval's half-width / 1.96)."""
    values, reasons = [], []
    for run in runs:
        c = run_change(run.evals, mode)
        if c is None:
            reasons.append(f"the {run.id} run has no {mode} held-out evaluation at start and end")
            continue
        values.append(RunValue(run, c.change, (c.high - c.low) / (2 * 1.959963984540054), c.start, c.end))
    return Side(name, tuple(values), "; ".join(reasons))


def gain_verdict_words(verdict: Verdict, a: str, b: str, baseline: bool = False) -> str:
    """The verdict on two gains (``effects.finding``); ``baseline``: b is a's baseline (SAPO against the spec one
    slot away), no direction predicted."""
    return finding(verdict, fmt_signed_points, f"{a} gained more than {b}",
                   f"{a} gained less than {b}{'' if baseline else ', not more'}",
                   f"{a}'s gain is not clearly apart from {b}'s" if baseline else "the two gains are not clearly apart",
                   "the two gains cannot be compared", unit=" points")


@macro(name="clip_family_gains")
def clip_family_gains_text(site: Site, first: str = "cispo", second: str = "dapo", baseline: bool = False) -> str:
    """Sentences: held-out gains over seeds, the verdict, the paired end gaps (``baseline``: second is first's)."""
    missing = missing_text(site, (first, second), "their held-out gains")
    if missing:
        return missing
    (na, a), (nb, b) = _runs(site, first), _runs(site, second)
    fmt = lambda v: fmt_signed_points(v)  # noqa: E731
    parts = []
    for mode in ("greedy", "sampled"):
        sa, sb = gain_side(na, a, mode), gain_side(nb, b, mode)
        verdict = compare(sa, sb, +1)
        if verdict.status == "unmeasurable":
            parts.append(f"Their {mode} gains cannot be compared: {verdict.reason}.")
            continue
        start = sa.values[0].start
        same_start = all(abs(v.start - start) < 1e-12 for v in sa.values + sb.values)
        opening = (f"From the same start of {fmt_pct(start)}, held-out {mode} accuracy" if same_start else
                   f"Held-out {mode} accuracy")
        parts.append(f"{opening} rose by {_seeds_phrase(sa, fmt, 'points')} under {na} and by {_seeds_phrase(sb, fmt)} "
                     f"under {nb}; {gain_verdict_words(verdict, na, nb, baseline)}.")
    paired = paired_words(a, b, "greedy", na, nb)
    if paired:
        parts.append(paired)
    return " ".join(parts)


# ---------------------------------------------------------------------------
# Entropy at the end of training
# ---------------------------------------------------------------------------

def last_tenth(run: Run, metric: str) -> RunValue | None:
    """The mean of a per-update metric over the last tenth of the run's updates, with its SE, and the
    first tenth's mean as ``start``."""
    values = run.reader.table.column(metric)
    values = values[~np.isnan(values)]
    if len(values) < 2:
        return None
    k = max(1, int(round(len(values) * EDGE)))
    first, last = values[:k], values[-k:]
    se = float(np.std(last, ddof=1) / math.sqrt(len(last))) if len(last) >= 2 else 0.0
    return RunValue(run, float(np.mean(last)), se, float(np.mean(first)), float(np.mean(last)))


def entropy_side(name: str, runs: list[Run]) -> Side:
    values = [v for v in (last_tenth(r, "entropy/mean") for r in runs) if v is not None]
    reason = "" if values else f"no {name} run logs its entropy (entropy/mean)"
    return Side(name, tuple(values), reason)


def nats(value: float) -> str:
    return fmt_num(value, 3)


@macro(name="clip_family_entropy")
def clip_family_entropy_text(site: Site, first: str = "cispo", second: str = "dapo") -> str:
    """Sentences: mean token entropy over the last tenth of each, the verdict and the gap's size."""
    missing = missing_text(site, (first, second), "their entropy")
    if missing:
        return missing
    (na, a), (nb, b) = _runs(site, first), _runs(site, second)
    sa, sb = entropy_side(na, a), entropy_side(nb, b)
    verdict = compare(sa, sb, +1)
    if verdict.status == "unmeasurable":
        return f"Whether entropy ended higher under {na} than under {nb} cannot be measured here: {verdict.reason}."
    both = (f"the mean token entropy over the last tenth of the updates was {_seeds_phrase(sa, nats, 'nats')} under {na} "
            f"and {_seeds_phrase(sb, nats)} under {nb}")
    gap = sa.mean - sb.mean
    low = min(sa.mean, sb.mean)
    size = abs(gap) / low if low > 0 else math.inf
    start = float(np.mean([v.start for v in sa.values + sb.values]))
    scale = (f"; both started near {nats(start)} nats in the first tenth" if start > 0 else "")
    higher, lower = (na, nb) if gap > 0 else (nb, na)
    signed_nats = lambda v: f"{'+' if v > 0 else ''}{nats(v)}"  # noqa: E731
    text = finding(verdict, signed_nats, f"Entropy ended higher under {higher} than under {lower}: {both}",
                   f"Entropy ended higher under {higher} than under {lower}: {both}",
                   f"These runs do not tell the two apart in entropy: {both}", sep="; ", unit=" nats")
    if verdict.status in ("shown", "contradicted"):
        how = ("a sliver" if size < SLIVER else "a clear margin")
        return f"{text}. The gap is {fmt_pct(size, 0)} of {lower}'s level, {how}{scale}."
    return f"{text}. The gap between the means is {fmt_pct(size, 0)} of the lower one{scale}."


# ---------------------------------------------------------------------------
# Tokens that kept a gradient
# ---------------------------------------------------------------------------

def trained_tokens(metrics: dict) -> int | None:
    """Tokens an update trained on, from its rollout's metrics: kept answers times their mean length."""
    needed = ("sampled/tokens", "sampled/length", "length/mean")
    if any(metrics.get(k) is None for k in needed) or not metrics["sampled/length"]:
        return None
    kept = metrics["sampled/tokens"] / metrics["sampled/length"] / (metrics.get("sampling/generated_per_kept") or 1.0)
    return int(round(kept * metrics["length/mean"]))


@dataclass(frozen=True)
class ClipCount:
    """Tokens a run's clip marked on each side over every update, and the tokens trained on."""

    run: Run
    high: int
    low: int
    tokens: int
    updates: int
    updates_with_high: int


def clip_counts(run: Run) -> ClipCount | None:
    """The run's clipped tokens, counted from its shares (None when its logs lack what the count needs)."""
    table = run.reader.table
    high = low = tokens = with_high = 0
    for step in table.steps:
        m = table.metrics_at(int(step))
        n = trained_tokens(m)
        if n is None or m.get("clip/frac_high") is None or m.get("clip/frac_low") is None:
            return None
        h, lo = int(round(m["clip/frac_high"] * n)), int(round(m["clip/frac_low"] * n))
        high, low, tokens, with_high = high + h, low + lo, tokens + n, with_high + (h > 0)
    return ClipCount(run, high, low, tokens, table.n, with_high)


def bounds_of(run: Run) -> tuple[float | None, float | None]:
    """(1 - eps_low, 1 + eps_high) of the run's clip; None for a side without a bound."""
    cfg = run.config
    low, high = cfg.component("clip").bounds(cfg.components["clip"].params)
    return (None if low is None else 1.0 - low), (None if high is None else 1.0 + high)


def logged_tokens(runs: list[Run]):
    """(run, step, advantage, ratio) of every trained token in the runs' logged token steps."""
    for run in runs:
        for step in run.token_steps():
            for group in run.reader.detail(step).prompts:
                for response in ([] if group.filtered else group.responses):
                    tk = response.tokens
                    for a, rho, m in zip(tk.advantage, tk.ratio, tk.mask) if tk is not None else ():
                        if m:
                            yield run, step, a, rho


@macro(name="kept_gradient_tokens")
def kept_gradient_tokens_text(site: Site, first: str = "cispo", second: str = "dapo") -> str:
    """Sentences: how many tokens the first kept a gradient for that the second's clip would have silenced."""
    missing = missing_text(site, (first, second), "the tokens that kept a gradient")
    if missing:
        return missing
    (na, a), (nb, b) = _runs(site, first), _runs(site, second)
    counts = [c for c in (clip_counts(r) for r in a) if c is not None]
    if not counts:
        return (f"{na}'s logs do not give the share of clipped tokens and the tokens trained on at every update, so "
                "the tokens it kept a gradient for cannot be counted.")
    _, cap = bounds_of(a[0])
    b_low, b_high = bounds_of(b[0])
    total_high, total_tokens = sum(c.high for c in counts), sum(c.tokens for c in counts)
    updates = sum(c.updates for c in counts)
    per_run = (f"{fmt_num(counts[0].high)} tokens" if len(counts) == 1 else
               f"its {count_word(len(counts))} runs had " + and_names([fmt_num(c.high) for c in counts]) + " tokens")
    same_bound = b_high is not None and cap is not None and abs(b_high - cap) < 1e-12
    silenced = (f"{nb}'s clip, whose upper bound is the same {fmt_num(cap, 3)}, would have given each a zero gradient"
                if same_bound else
                f"PPO's clip at {na}'s bound would have given each a zero gradient ({nb}'s upper bound is "
                f"{fmt_num(b_high, 3) if b_high is not None else 'absent'})")
    if total_high == 0:
        text = (f"Over the {fmt_num(updates)} updates of {na}'s runs, no token with a positive advantage rose above "
                f"{fmt_num(cap, 3)}: no token kept a gradient that {nb}'s clip would have taken on the high side.")
    else:
        text = (f"Over the {fmt_num(updates)} updates of {na}'s runs, {per_run} with a positive advantage and a ratio "
                f"above {fmt_num(cap, 3)}: {fmt_num(total_high)} of the {fmt_num(total_tokens)} tokens trained on, "
                f"{fmt_pct(total_high / total_tokens, 3)}, in {fmt_num(sum(c.updates_with_high for c in counts))} of "
                f"the updates. {silenced}; {na} kept a gradient for each, its weight held at {fmt_num(cap, 3)} times "
                "the advantage.")
    text = "On the high side, counted at every update: " + text[0].lower() + text[1:]
    a_low, _ = bounds_of(a[0])
    low_larger = []  # one flag per count that has both sides: is the low side the larger?
    if a_low is None and b_low is not None:
        tokens = [(adv, rho) for _, _, adv, rho in logged_tokens(a)]
        below = sum(1 for adv, rho in tokens if adv < 0 and rho < b_low)
        high = sum(1 for adv, rho in tokens if adv > 0 and rho > cap)
        above = sum(1 for adv, rho in tokens if adv < 0 and rho > cap)
        if tokens:
            n = len(tokens)
            text += (f" On the low side {na} has no bound, so its logs count nothing there at every update; its logged "
                     f"token steps show both sides: of {fmt_num(n)} tokens, {_tokens_share(below, n)} had a negative "
                     f"advantage and a ratio below {fmt_num(b_low, 3)}, which {nb}'s clip would have silenced and {na} "
                     f"kept pushing down, against {_tokens_share(high, n)} past the cap on the high side; "
                     f"{fmt_num(above) if above else 'none'} had a negative advantage and a ratio above "
                     f"{fmt_num(cap, 3)}, whose push down {na} caps where {nb} does not.")
            if below or high:
                low_larger.append(below > high)
    b_counts = [c for c in (clip_counts(r) for r in b) if c is not None]
    if b_counts:
        b_high, b_lo = sum(c.high for c in b_counts), sum(c.low for c in b_counts)
        text += (f" For scale, {nb}'s own {'run' if len(b_counts) == 1 else count_word(len(b_counts)) + ' runs'} "
                 f"silenced {fmt_num(b_high)} tokens on the high side and {fmt_num(b_lo)} on the low side, of "
                 f"{fmt_num(sum(c.tokens for c in b_counts))}.")
        if a_low is None and b_low is not None and (b_high or b_lo):
            low_larger.append(b_lo > b_high)
    if low_larger and all(low_larger):
        text += (f" On {'both counts' if len(low_larger) > 1 else 'that count'} the low side is the larger: most of "
                 f"what {na} changes is on tokens of wrong answers whose probability had already fallen, which it keeps "
                 f"pushing down where {nb} stops, not on the rising tokens the high-side count holds.")
    return text


def _tokens_share(k: int, n: int) -> str:
    """'14 (0.194%)', or 'none'."""
    return f"{fmt_num(k)} ({fmt_pct(k / n, 3)})" if k else "none"


# ---------------------------------------------------------------------------
# One clipped token under both objectives
# ---------------------------------------------------------------------------

def clip_of(site: Site, name: str):
    """(clip kind, its parameters) of an algorithm or run: its chosen run's config, else its spec; else None."""
    run = site.run(name)
    if run is not None and run.config is not None:
        return run.config.component("clip"), run.config.components["clip"].params
    spec = site.any_spec(name)
    if spec is None:
        return None
    return spec.component("clip"), spec.params("clip")


@dataclass(frozen=True)
class TokenUnderBoth:
    run: Run
    step: int
    text: str
    before: str  # the answer's text up to the token
    ratio: float
    advantage: float
    weight: float
    p_old: float
    p_now: float
    rows: tuple[tuple[str, float, float, int], ...]  # (algorithm name, term, d term / d log pi, clip side)


def clipped_token(site: Site, first: str, second: str) -> TokenUnderBoth | None:
    """The first algorithm's chosen run's token clipped furthest on the high side, under both clips."""
    run = site.run(first)
    if run is None or not run.token_steps():
        return None
    moment = find_moment(run.path, "clipped_high")
    if moment is None:
        return None
    detail = run.reader.detail(moment.step)
    group = next(g for g in detail.prompts if g.index == moment.group)
    tk = next(r for r in group.responses if r.index == moment.response).tokens
    t = moment.token
    rows = []
    for name in (first, second):
        clip = clip_of(site, name)
        if clip is None:
            return None
        kind, params = clip
        value, grad, side = term_and_gradient(kind, params, tk.ratio[t], tk.advantage[t])
        rows.append((site.algorithm_name(name), value, grad, side))
    return TokenUnderBoth(run, moment.step, tk.text[t], "".join(tk.text[:t]), tk.ratio[t], tk.advantage[t], tk.weight[t],
                          math.exp(tk.old_logp[t]), math.exp(tk.logp[t]),
                          tuple(rows))


def _no_token_text(site: Site, first: str) -> str:
    run = site.run(first)
    if run is None:
        return f"There is no {first!r} run in this build, so no clipped token of it can be shown."
    if not run.token_steps():
        return f"The {run.id} run logs no token steps, so no clipped token of it can be shown."
    return (f"No token in the logged steps of the {run.id} run rose past its bound with a positive advantage, so no "
            "clipped token of it can be shown.")


@macro(name="clipped_token_text")
def clipped_token_text_of(site: Site, first: str = "cispo", second: str = "dapo") -> str:
    """The same token in words: its numbers and what each objective does with it."""
    tok = clipped_token(site, first, second)
    if tok is None:
        return _no_token_text(site, first)
    (na, va, ga, _), (nb, vb, gb, side_b) = tok.rows
    head = (f"The token the {tok.run.id} run pushed furthest past its bound in its logged steps is "
            f"\u201c{tok.text}\u201d, after \u201c{tok.before}\u201d, at update {fmt_num(tok.step)}, in an answer with advantage "
            f"{fmt_num(tok.advantage, 3)}: its probability had gone from {fmt_num(tok.p_old, 3)} when it was sampled to "
            f"{fmt_num(tok.p_now, 3)}, a ratio of {fmt_num(tok.ratio, 3)}.")
    values = (f"Under {na} its term is {fmt_num(va, 4)} and its derivative with respect to its log-probability "
              f"{fmt_num(ga, 4)}; under {nb}'s clip the same ratio and advantage give {fmt_num(vb, 4)} and "
              f"{fmt_num(gb, 4)}.")
    if abs(ga - gb) <= 1e-9 * max(1.0, abs(ga)):
        verdict = "The two objectives give this token the same gradient."
    elif gb == 0 and ga != 0:
        same_value = abs(va - vb) <= 1e-9 * max(1.0, abs(va))
        verdict = (("The objectives agree on the value and part on the gradient: " if same_value else "")
                   + f"{nb} silences the token, {na} still pushes it, by {fmt_num(ga, 4)} times its weight in the "
                   f"step ({fmt_num(tok.weight, 3)}), {fmt_num(ga * tok.weight, 3)} in all.")
    elif ga == 0 and gb != 0:
        verdict = f"{na} silences the token and {nb} still pushes it, by {fmt_num(gb, 4)}."
    else:
        verdict = f"Both push the token, {na} by {fmt_num(ga, 4)} and {nb} by {fmt_num(gb, 4)}."
    return f"{head} {values} {verdict}"


@macro(name="clipped_token_table", html=True)
def clipped_token_html(site: Site, first: str = "cispo", second: str = "dapo") -> str:
    """The first run's token clipped furthest on the high side: its term and gradient under both clips (a table)."""
    tok = clipped_token(site, first, second)
    if tok is None:
        return note_html(_no_token_text(site, first), "warning")
    side_words = {1: "clipped high", -1: "clipped low", 0: "not clipped"}
    rows = []
    for name, value, grad, side in tok.rows:
        rows.append([escape_text(name), escape_text(fmt_num(value, 4)), escape_text(fmt_num(grad, 4)),
                     escape_text(fmt_num(grad * tok.weight, 3)), escape_text(side_words.get(side, str(side)))])
    caption = (f"\u201c{tok.text}\u201d at update {fmt_num(tok.step)} of the {tok.run.id} run: ratio "
               f"{fmt_num(tok.ratio, 4)}, advantage {fmt_num(tok.advantage, 4)}, weight in the step "
               f"{fmt_num(tok.weight, 3)}; each row evaluates that algorithm's clip on these numbers")
    return table(["Objective", "Term \u2113", "d\u2113 / d log \u03c0", "Push on log \u03c0 in the step", "Clip"],
                 rows, caption=caption, numeric=(1, 2, 3))


# ---------------------------------------------------------------------------
# Two runs of one seed, one slot apart: where do their logs part?
# ---------------------------------------------------------------------------

@dataclass(frozen=True)
class Divergence:
    a: Run
    b: Run
    updates: int  # updates both logged
    metrics: tuple[str, ...]  # metrics both log, timings left out
    differing: int  # updates at which any of them differs
    first: int | None  # the first such update
    first_metrics: tuple[str, ...]  # the metrics that differ there
    high_excess: tuple[int, ...]  # updates at which a's clip/frac_high exceeds b's


def divergence(a: Run, b: Run) -> Divergence:
    ta, tb = a.reader.table, b.reader.table
    steps = sorted(set(int(s) for s in ta.steps) & set(int(s) for s in tb.steps))
    names = sorted(n for n in set(ta.names()) & set(tb.names()) if not n.startswith(TIMING_PREFIX))
    differing, first, first_metrics, excess = 0, None, (), []
    for step in steps:
        ma, mb = ta.metrics_at(step), tb.metrics_at(step)
        diff = tuple(n for n in names if not _same(ma.get(n), mb.get(n)))
        if diff:
            differing += 1
            if first is None:
                first, first_metrics = step, diff
        ha, hb = ma.get("clip/frac_high"), mb.get("clip/frac_high")
        if ha is not None and hb is not None and ha > hb:
            excess.append(step)
    return Divergence(a, b, len(steps), tuple(names), differing, first, first_metrics, tuple(excess))


def _same(x: float | None, y: float | None) -> bool:
    if x is None or y is None:
        return x is None and y is None
    return x == y or (isinstance(x, float) and isinstance(y, float) and math.isnan(x) and math.isnan(y))


@macro(name="run_divergence")
def run_divergence_text(site: Site, first: str, second: str, change: str | None = None) -> str:
    """Whether the same seed's runs log the same values; ``change``: the page's name for what differs
    between the two ("the floor"), by default the slot."""
    missing = missing_text(site, (first, second), "whether their logs agree")
    if missing:
        return missing
    (na, a), (nb, b) = _runs(site, first), _runs(site, second)
    pairs = seed_pairs(a, b)
    if not pairs:
        return (f"No {na} run shares a seed with a {nb} run in this build, so their logs cannot be compared update "
                "by update.")
    apart = slots_apart(a, b)
    slots = f"the {apart[0]}" if len(apart) == 1 else and_names(apart)
    change = change or f"the change in {slots}"
    found = [divergence(ra, rb) for ra, rb in pairs]
    same = [d for d in found if d.differing == 0]
    parts = []
    if same:
        seeds = seeds_list([d.a for d in same])
        n_metrics = len(same[0].metrics)
        parts.append(f"{na} and {nb}, which differ in {slots} alone, log identical values with {seeds}: all "
                     f"{fmt_num(n_metrics)} metrics both record (timings left out), on all "
                     f"{fmt_num(same[0].updates)} updates. {change[:1].upper() + change[1:]} never engaged in "
                     f"{'this run' if len(same) == 1 else 'these runs'}." if len(apart) == 1 else
                     f"{na} and {nb} log identical values with {seeds} on all {fmt_num(same[0].updates)} updates.")
    for first_step in sorted({d.first for d in found if d.differing}):
        group = [d for d in found if d.differing and d.first == first_step]
        shown = and_names(list(group[0].first_metrics[:4])) + (" and others" if len(group[0].first_metrics) > 4 else "")
        seeds = seeds_list([d.a for d in group])
        counts = {(d.differing, d.updates) for d in group}
        parts.append(f"With {seeds}, {na}'s and {nb}'s runs log the same values up to update {fmt_num(first_step - 1)} "
                     f"and part at update {fmt_num(first_step)} ({shown} differ there), the first update on which "
                     f"{change} acted; they differ on "
                     + (f"{fmt_num(group[0].differing)} of their {fmt_num(group[0].updates)} updates"
                        + (" each" if len(group) > 1 else "") if len(counts) == 1 else
                        and_names([f"{fmt_num(d.differing)} of {fmt_num(d.updates)}" for d in group]) + " updates")
                     + ".")
    return " ".join(parts)


@macro(name="dual_clip_reach")
def dual_clip_reach_text(site: Site, first: str = "dual_clip", second: str = "grpo") -> str:
    """How far the ratios went against the floor c, and which tokens could have reached it."""
    missing = missing_text(site, (first, second), "how far their ratios rose")
    if missing:
        return missing
    (na, a), (nb, b) = _runs(site, first), _runs(site, second)
    cfg = a[0].config
    params = cfg.components["clip"].params if cfg is not None else {}
    if cfg is None or "c" not in params:
        return f"The {a[0].id} run's clip has no floor c, so how close its ratios came to one cannot be measured."
    c = float(params["c"])
    pairs = seed_pairs(a, b)
    parts = []
    for ra, rb in pairs or [(a[0], None)]:
        table_b = (rb or ra).reader.table
        hi = table_b.column("ratio/max")
        if np.all(np.isnan(hi)):
            continue
        i = int(np.nanargmax(hi))
        above = int(np.sum(hi > c))
        d = divergence(ra, rb) if rb is not None else None
        src = rb or ra
        text = (f"The largest ratio {src.id} logged was {fmt_num(float(hi[i]), 3)}, at update "
                f"{fmt_num(int(table_b.steps[i]))}; {fmt_num(above)} of its {fmt_num(table_b.n)} updates had a token "
                f"above c = {fmt_num(c, 3)}.")
        if d is not None and d.differing == 0 and above:
            text += (f" {na} counts a token held at the floor as clipped high, and its share of those equals "
                     f"{nb}'s on every update, so every one of those ratios above c belonged to a token with a "
                     "positive (or zero) advantage, where the floor does not apply.")
        elif d is not None and d.first is not None:
            at = f"At update {fmt_num(d.first)}, the first on which the two runs' logs differ, "
            text += (at + f"{na}'s share of tokens clipped high exceeds {nb}'s: the floor held tokens of wrong answers "
                     "there." if d.first in d.high_excess else
                     at + f"{na}'s share of tokens clipped high is {nb}'s, so the floor did not cause the difference.")
        parts.append(text)
    negative = [(rho, step) for _, step, adv, rho in logged_tokens(a) if adv < 0]
    if negative:
        best, step = max(negative)
        parts.append(f"In {na}'s logged token steps, the {fmt_num(len(negative))} tokens with a negative advantage "
                     f"reached a ratio of at most {fmt_num(best, 3)} (update {fmt_num(step)})"
                     + (f", {fmt_num(c / best, 3)} times below c: none came near the floor." if best < c else
                        f", above c = {fmt_num(c, 3)}: the floor held such tokens there."))
    return " ".join(parts) if parts else f"The {nb} runs log no ratios, so how far they rose cannot be shown."


# ---------------------------------------------------------------------------
# Macros
# ---------------------------------------------------------------------------
