"""When the sampler and the learner disagree: the asynchronous runs' mismatch and what it cost.

    {{ sampler_mismatch_figure() }}       the mean (and largest) |sampler - learner| log-prob gap of
                                          each lag's runs over training (bands over seeds)
    {{ sampler_mismatch_words() }}        how large that gap is at each lag, and whether it grows
    {{ sampler_gains_figure() }}          held-out gains of the synchronous, the stale and the
                                          corrected runs, every seed a dot (greedy and sampled)
    {{ sampler_cost_words("sampled") }}   did the stale sampler cost held-out accuracy?
    {{ sampler_correction_words("grpo_tis@lag8", "greedy") }}
                                          does a correction recover that cost?
    {{ sampler_level_words("greedy") }}   masking by the whole response against masking token by token
    {{ sampler_lag_words("sampled") }}    the cost at each lag against the synchronous runs
    {% set s = sampler_detail_step("async8_mis") %}
    {{ sampler_token_words("async8_mis", s) }}
                                          what the run's correction did to the tokens of one update
    {{ sampler_response_words("async8_mis_seq", s) }}
                                          what a correction tested on whole responses did to the answers

The runs are named by variant (``runs.variant_of``): ``grpo`` is synchronous GRPO, ``grpo@lag8``
GRPO sampled by the policy of 8 rollouts before, ``grpo_tis@lag8`` the same with truncated
importance sampling. Every number is read from the runs of the build, and every sentence is
chosen by what they show:

- the mismatch is ``mismatch/logp_abs_mean`` (mean |old_logp - sample_logp| over an update's
  tokens), averaged over the run (``run_facts.mean_mismatch``, with its standard error);
- a held-out gain is the paired start-to-end change of the run (``heldout.run_change``), one
  value per seed; two sets of seeds are compared by ``effects.compare``, the one procedure of
  ``core.judge`` (an exact two-sided permutation test across seeds: the reference page "How a
  difference is judged"), and worded by ``effects.finding``;
- per seed, the runs of two sets that share a seed are also compared problem by problem at the end
  of training (``judging.paired_words``): each seed's paired difference with its 95% interval, the
  procedure's per-seed part, reported beside the verdict across seeds.

A variant the build has no run of gives one line naming it, instead of a number.
"""

from __future__ import annotations

from typing import Sequence

from unipo_build.core.heldout import Z95, HeldOutChange, run_change
from unipo_build.core.numbers import fmt_num, fmt_pct, fmt_signed_points, round_sig
from unipo_build.core.runs import Run, split_variant
from unipo_build.core.schema import metric_info
from unipo_build.site.context import Site, macro
from unipo_build.site.facts.run_facts import MISMATCH, mean_mismatch
from unipo_build.site.facts.seeds import finished_runs
from unipo_build.site.facts.spec_facts import and_names, count_word
from unipo_build.site.fmt import escape_text, legend_html, note_html, table, template_fold, two_lines
from unipo_build.site.palette import SEQUENTIAL, algorithm_colour
from unipo_build.site.render import chart_spec, vega_embed
from unipo_build.site.pages.dynamics.sampler_facts import (correction_bounds_text, detail_step, response_words_text,
                                                            token_words_text)
from unipo_build.site.pages.learning.bands import band_of, band_panel_spec, metric_words, run_curve
from unipo_build.site.pages.learning.effects import RunValue, Side, compare, finding, judged, seeds_words
from unipo_build.site.pages.learning.judging import paired_words

#: The chapter's runs: synchronous GRPO, GRPO sampled 8 rollouts stale with no correction, with
#: truncated IS and with masked IS, and the uncorrected runs at other lags.
SYNC = "grpo"
STALE = "grpo@lag8"
CORRECTIONS = ("grpo_tis@lag8", "grpo_mis@lag8", "grpo_mis_seq@lag8")
#: The level contrast: masking tested on the whole response's ratio against each token's, the same band.
LEVELS = ("grpo_mis_seq@lag8", "grpo_mis@lag8")
LAGS = ("grpo@lag2", "grpo@lag8", "grpo@lag32")
MODES = ("greedy", "sampled")
#: A mean gap (nats) below this is the agreement of one float32 engine's two passes over the same
#: weights (about 1e-6 in the token schema's words): no mismatch.
AGREE = 1e-5
#: The lags' colours, lightest first: a staler sampler is drawn darker (the palette's Blues ramp,
#: leaving out its near-white and its near-black ends).
LAG_COLOURS = (SEQUENTIAL[3], SEQUENTIAL[5], SEQUENTIAL[7])


# ---------------------------------------------------------------------------
# The runs of a variant
# ---------------------------------------------------------------------------

def lag_of(variant: str) -> int:
    return split_variant(variant)[1]


def variant_runs(site: Site, variant: str) -> list[Run]:
    """The finished runs of a variant, in seed order (a run still training has no end evaluation)."""
    return finished_runs(site.catalog.seeds_of(variant))[0]


def missing_line(site: Site, variant: str, what: str) -> str:
    """The one line a macro writes for a variant the build has no finished run of."""
    return (f"This build has no finished run of {site.algorithm_name(variant)} (variant {variant}), "
            f"so {what} cannot be measured.")


def lag_colour(variant: str, lags: Sequence[str]) -> str:
    """A lag's colour: the darker, the staler, among the lags drawn."""
    ordered = sorted({lag_of(v) for v in lags})
    i = ordered.index(lag_of(variant))
    return LAG_COLOURS[min(len(LAG_COLOURS) - 1, round(i * (len(LAG_COLOURS) - 1) / max(1, len(ordered) - 1)))]


def variant_colour(variant: str, lags: Sequence[str] = LAGS) -> str:
    """A synchronous or corrected variant takes its algorithm's colour; an uncorrected stale one
    its lag's blue (the mismatch figure's)."""
    base, lag = split_variant(variant)
    if lag and base == SYNC:
        return lag_colour(variant, sorted(set(lags) | {variant}, key=lag_of))
    return algorithm_colour(base)


@macro(name="sampler_runs_setup")
def runs_setup_text(site: Site, sync: str = SYNC, stale: str = STALE, corrections: Sequence[str] = CORRECTIONS,
                    lags: Sequence[str] = LAGS) -> str:
    """The chapter's runs, read from their headers: seeds, lag, rollouts, updates and evaluations."""
    others = [v for v in sorted(lags, key=lag_of) if v != stale]
    groups = [(sync, short_name(site, sync)), (stale, short_name(site, stale)),
              *[(c, f"{short_name(site, c)} sampled {lag_of(c)} rollouts stale") for c in corrections],
              *[(v, short_name(site, v)) for v in others]]
    found = [(v, name, variant_runs(site, v)) for v, name in groups]
    missing = [v for v, _, rs in found if not rs]
    found = [(v, name, rs) for v, name, rs in found if rs]
    if not found:
        return " ".join(missing_line(site, v, "it") for v in missing)
    parts = [f"{name} ({seeds_words(len(rs))})" for _, name, rs in found]
    text = f"The runs of this chapter: {and_names(parts)}."
    first = found[0][2][0]
    per = first.header.steps_per_rollout
    rollouts = first.header.hyperparameters.get("steps")
    lag = lag_of(stale)
    if per and lag:
        text = text.replace(f"{short_name(site, stale)} (", f"{short_name(site, stale)} ({fmt_num(lag * per)} updates "
                            "stale; ", 1)
    shapes = {(r.header.hyperparameters.get("steps"), r.header.steps_per_rollout) for _, _, rs in found for r in rs}
    model = first.header.model
    if len(shapes) == 1 and rollouts and per:
        text += f" Every run trains {fmt_num(rollouts)} rollouts of {fmt_num(per)} updates"
    else:
        text += " The runs differ in length"
    if model is not None and model.parameters:
        text += f" of a {fmt_num(model.parameters / 1e6, 2)}-million-parameter model"
    phases = [e.phase for e in first.evals]
    text += (f", and is evaluated on the same held-out problems {count_word(len(phases))} times, at the start, "
             "during training and at the end." if len(phases) > 2 else ", evaluated at the start and at the end.")
    if missing:
        text += " " + " ".join(missing_line(site, v, "it") for v in missing)
    return text


# ---------------------------------------------------------------------------
# The mismatch
# ---------------------------------------------------------------------------

def mismatch_side(site: Site, variant: str) -> Side:
    """Each run's mean |sampler - learner| log-prob gap over training (with its standard error)."""
    runs = variant_runs(site, variant)
    name = site.algorithm_name(variant)
    if not runs:
        return Side(name, (), missing_line(site, variant, "its mismatch"))
    values, reasons = [], []
    for run in runs:
        mean = mean_mismatch(run)
        if mean is None:
            reasons.append(f"the {run.id} run does not log {metric_info(MISMATCH).label.lower()} ({MISMATCH})")
        else:
            values.append(RunValue(run, *mean))
    return Side(name, tuple(values), "; ".join(reasons))


def lags_words(lags: Sequence[str], short: bool = False) -> str:
    """'a lag of 8 rollouts', 'lags of 8 and 32 rollouts' (short: 'lag 8', 'lags 2 and 32')."""
    many = len(lags) > 1
    if short:
        return f"lag{'s' if many else ''} {and_names(list(lags))}"
    return f"{'lags of' if many else 'a lag of'} {and_names(list(lags))} rollout{'s' if many or lags[0] != '1' else ''}"


def nats(value: float) -> str:
    return f"{fmt_num(value, 2)} nats"


def side_values(side: Side, fmt) -> str:
    """'0.026 nats (three seeds: 0.025 to 0.027)' or '0.057 nats (one seed)'."""
    if side.n == 1:
        return f"{fmt(side.values[0].value)} (one seed)"
    return f"{fmt(side.mean)} ({seeds_words(side.n)}: {fmt_num(side.low, 2)} to {fmt_num(side.high, 2)})"


def mismatch_present(side: Side) -> bool:
    """Every run's mean gap is above the float32 agreement and two of its standard errors."""
    return side.n > 0 and all(v.value > AGREE and v.value > 2 * (v.se or 0.0) for v in side.values)


@macro(name="sampler_mismatch_words")
def mismatch_words_text(site: Site, lags: Sequence[str] = LAGS) -> str:
    """How large the mismatch is at each lag, whether there is one, and whether it grows."""
    lags = sorted(lags, key=lag_of)
    sides = [(v, mismatch_side(site, v)) for v in lags]
    absent = [(v, s) for v, s in sides if s.n == 0]
    if absent:
        return " ".join(s.reason if s.reason.startswith("This build") else
                        f"The mismatch of {site.algorithm_name(v)} cannot be measured: {s.reason}." for v, s in absent)
    parts = [f"{side_values(s, nats)} at a lag of {lag_of(v)} rollout{'s' if lag_of(v) != 1 else ''}"
             for v, s in sides]
    text = ("Averaged over each update's tokens and over training, the sampler's log-prob of a sampled token "
            f"differed from the learner's by {and_names(parts)}.")
    quiet = [v for v, s in sides if not mismatch_present(s)]
    if quiet:
        text += (" At " + lags_words([str(lag_of(v)) for v in quiet]) + " no mismatch is visible: "
                 "the gap is within its noise or below the agreement of one float32 engine's two passes.")
    present = [(v, s) for v, s in sides if mismatch_present(s)]
    if len(present) >= 2:
        steps = [(a, b, compare(sb, sa, +1)) for (a, sa), (b, sb) in zip(present, present[1:])]
        gap = lambda x: ("+" if x > 0 else "") + fmt_num(x, 2)  # noqa: E731
        if all(st.status == "shown" for _, _, st in steps):
            (first, s_first), (last, s_last) = present[0], present[-1]
            each = "; ".join(f"from {lag_of(a)} to {lag_of(b)} rollouts, {judged(st, gap, unit=' nats')}" for a, b, st in steps)
            text += (f" The gap grows with the lag, every step clear: at {lag_of(last)} rollouts it is "
                     f"{fmt_num(s_last.mean / s_first.mean, 2)} times what it is at {lag_of(first)} ({each}).")
        elif any(st.status == "contradicted" for _, _, st in steps):
            pairs = [f"from {lag_of(a)} to {lag_of(b)} rollouts it shrinks: {judged(st, gap, unit=' nats')}"
                     for a, b, st in steps if st.status == "contradicted"]
            text += " The gap does not grow steadily with the lag here: " + "; ".join(pairs) + "."
        else:
            pairs = [f"from {lag_of(a)} to {lag_of(b)} rollouts, {judged(st, gap, unit=' nats')}"
                     for a, b, st in steps if st.status != "shown"]
            text += " Whether the gap grows with the lag is not clear from these runs: " + "; ".join(pairs) + "."
    return text


@macro(name="sampler_mismatch_figure", html=True)
def mismatch_figure_html(site: Site, lags: Sequence[str] = LAGS,
                         metrics: Sequence[str] = (MISMATCH, "mismatch/logp_abs_max")) -> str:
    """The sampler/learner log-prob gap over training, one band per lag (GRPO, no correction)."""
    lags = sorted(lags, key=lag_of)
    shown = [(v, variant_runs(site, v)) for v in lags]
    missing = [v for v, rs in shown if not rs]
    shown = [(v, rs) for v, rs in shown if rs]
    if not shown:
        return note_html(" ".join(missing_line(site, v, "its mismatch") for v in missing), "warning")
    labels = [f"{lag_of(v)} rollouts stale ({len(rs)} run{'s' if len(rs) != 1 else ''})" for v, rs in shown]
    colours = [lag_colour(v, lags) for v, _ in shown]
    panels = []
    for metric in metrics:
        label, description = metric_words(metric)
        rows = []
        for (variant, runs), name in zip(shown, labels):
            band = band_of([c for c in (run_curve(r, metric, "fraction") for r in runs) if c is not None])
            if band is None:
                continue
            rows += [{"a": name, "x": round(float(band.x[i]), 4), "m": round_sig(band.median[i], 4),
                      "lo": round_sig(band.low[i], 4), "hi": round_sig(band.high[i], 4), "n": band.runs}
                     for i in range(len(band.x))]
        title = (f'<p class="unipo-band-title" style="margin:0 0 .2em;font-weight:600">{escape_text(label)} '
                 f'<code style="font-weight:400">{escape_text(metric)}</code></p>')
        if rows:
            spec = band_panel_spec(f"{label} (nats)", rows, labels, colours, "fraction", False, False)
            chart = vega_embed(spec, chart_id=site.chart_id(spec))
        else:
            chart = '<p style="margin:.5em 0;opacity:.8">No run in this build logs this.</p>'
        panels.append(f'<div class="unipo-course-panel" style="min-width:0">{title}{chart}'
                      f'<p style="margin:.2em 0 0;font-size:.8em;opacity:.75">{escape_text(description)}</p></div>')
    legend = legend_html([(label, colour, None) for label, colour in zip(labels, colours)])
    caption = ("GRPO with no correction, sampled by a copy of the policy some rollouts stale: the darker the blue, "
               "the staler the sampler. Each line is the median of a lag's runs (a band from the lowest to the "
               "highest where it has several seeds), each run's metric smoothed by a moving average. The first "
               "rollouts are sampled by the starting policy while the lag fills, so the gap starts near zero.")
    grid = ('<div class="unipo-course-grid" style="display:grid;grid-template-columns:repeat(auto-fit,minmax(15rem,1fr));'
            'gap:1.2rem 1.6rem">' + "".join(panels) + "</div>")
    note = note_html(" ".join(missing_line(site, v, "its mismatch") for v in missing), "warning") if missing else ""
    return (f'<figure class="unipo-figure unipo-sampler-mismatch">{legend}{grid}'
            f"<figcaption>{escape_text(caption)}</figcaption></figure>{note}")


# ---------------------------------------------------------------------------
# Held-out gains
# ---------------------------------------------------------------------------

def short_name(site: Site, variant: str) -> str:
    """'synchronous GRPO', 'GRPO sampled 8 rollouts stale' (no correction), 'GRPO-TIS' (a correction
    is named by its spec; the sentence says how stale its sampler was)."""
    base, lag = split_variant(variant)
    name = site.algorithm_name(base)
    if not lag:
        return f"synchronous {name}"
    return name if site.algorithm_name(base) != site.algorithm_name(SYNC) else f"{name} sampled {lag} rollouts stale"


def gain_side(site: Site, variant: str, mode: str) -> Side:
    """Each run's paired start-to-end held-out change in ``mode``, its standard error from the
    change's 95% interval."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {', '.join(MODES)}, not {mode!r}")
    runs = variant_runs(site, variant)
    name = short_name(site, variant)
    if not runs:
        return Side(name, (), missing_line(site, variant, f"its {mode} held-out gain"))
    values = []
    for run in runs:
        c = run_change(run.evals, mode)
        if c is not None:
            values.append(RunValue(run, c.change, (c.high - c.low) / (2 * Z95), c.start, c.end))
    reason = "" if values else f"no run of {name} ({variant}) has a {mode} held-out evaluation at start and end"
    return Side(name, tuple(values), reason)


def points(side: Side) -> str:
    """'+17.3 points (one seed)' or '+17.2 to +20.3 points over three seeds'."""
    if side.n == 1:
        return f"{fmt_signed_points(side.values[0].value)} points (one seed)"
    return f"{fmt_signed_points(side.low)} to {fmt_signed_points(side.high)} points over {seeds_words(side.n)}"


POINTS = " points"


def paired_text(site: Site, a: str, b: str, mode: str, a_name: str, b_name: str) -> str:
    """Each seed's two runs compared problem by problem at the end (the procedure's per-seed part), as a sentence
    after a space, or ''."""
    text = paired_words(variant_runs(site, a), variant_runs(site, b), mode, a_name, b_name)
    return f" {text}" if text else ""


@macro(name="sampler_cost_words")
def cost_words_text(site: Site, mode: str = "sampled", sync: str = SYNC, stale: str = STALE) -> str:
    """Did sampling from a stale policy cost held-out accuracy?"""
    s, u = gain_side(site, sync, mode), gain_side(site, stale, mode)
    for side in (s, u):
        if side.n == 0:
            return side.reason if side.reason.startswith("This build") else f"The cost cannot be measured: {side.reason}."
    v = compare(u, s, -1)
    lag = lag_of(stale)
    nums = f"{s.name[:1].upper() + s.name[1:]} gained {points(s)} of {mode} held-out accuracy, {u.name} {points(u)}"
    diff = paired_text(site, stale, sync, mode, "stale", "synchronous")
    return finding(v, fmt_signed_points, f"Sampling from a policy {lag} rollouts stale cost {mode} accuracy: {nums}",
                   f"Sampling from a policy {lag} rollouts stale did not cost {mode} accuracy here; the stale runs "
                   f"gained more: {nums}",
                   f"A cost of the stale sampler in {mode} accuracy is not clear here: {nums}", sep="; ",
                   unit=POINTS) + f".{diff}"


def mode_gap_side(site: Site, variant: str) -> Side:
    """Each run's greedy gain minus its sampled gain: how much more the run gained in greedy accuracy."""
    greedy, sampled = gain_side(site, variant, "greedy"), gain_side(site, variant, "sampled")
    by_run = {v.run.id: v.value for v in sampled.values}
    values = tuple(RunValue(v.run, v.value - by_run[v.run.id]) for v in greedy.values if v.run.id in by_run)
    return Side(greedy.name, values, greedy.reason or sampled.reason)


@macro(name="sampler_cost_modes")
def cost_modes_text(site: Site, sync: str = SYNC, stale: str = STALE) -> str:
    """Is the stale sampler's cost larger in sampled accuracy than in greedy accuracy? The sampled cost minus the
    greedy cost is the stale runs' (greedy gain - sampled gain) minus the synchronous runs', judged across seeds."""
    costs = {}
    for mode in MODES:
        s, u = gain_side(site, sync, mode), gain_side(site, stale, mode)
        for side in (s, u):
            if side.n == 0:
                return side.reason if side.reason.startswith("This build") else f"The cost cannot be compared: {side.reason}."
        costs[mode] = s.mean - u.mean
    def behind(cost: float) -> str:
        size = fmt_signed_points(abs(cost)).lstrip("+")
        return "the same" if size == "0.0" else f"{size} points {'smaller' if cost > 0 else 'larger'}"
    each = (f"On average over the seeds, the stale runs' gain was {behind(costs['sampled'])} than the synchronous "
            f"runs' in sampled accuracy and {behind(costs['greedy'])} in greedy accuracy.")
    v = compare(mode_gap_side(site, stale), mode_gap_side(site, sync), +1)
    why = ("the learner's updates are computed on answers the current policy would no longer give, so they sharpen "
           "the distribution less where the policy has moved since, and sampled accuracy measures the whole "
           "distribution while greedy accuracy measures only its mode")
    return each + " " + finding(
        v, fmt_signed_points, "The cost is larger in sampled accuracy",
        "The cost is smaller in sampled accuracy here, not larger",
        "Whether the cost is larger in sampled accuracy is not clear from these runs",
        "Whether the cost is larger in sampled accuracy cannot be measured",
        what="the sampled cost minus the greedy cost", unit=POINTS) + (
        f". That is what one predicts: {why}." if v.status == "shown" else
        f". One would predict it larger there: {why}.")


@macro(name="sampler_correction_words")
def correction_words_text(site: Site, correction: str, mode: str = "greedy", sync: str = SYNC,
                          stale: str = STALE) -> str:
    """Does a correction recover what the stale sampler cost?"""
    c, u, s = (gain_side(site, x, mode) for x in (correction, stale, sync))
    for side in (c, u, s):
        if side.n == 0:
            return side.reason if side.reason.startswith("This build") else f"The recovery cannot be measured: {side.reason}."
    vs_u, vs_s, cost = compare(c, u, +1), compare(c, s, -1), compare(u, s, -1)
    lag = lag_of(correction)
    nums = (f"{{}} gained {points(c)} of {mode} accuracy, against {points(u)} with no correction and {points(s)} "
            "synchronous").format
    first = f"With the sampler {lag} rollouts stale, {c.name}"
    diff = paired_text(site, correction, stale, mode, c.name, "uncorrected")
    against_u = judged(vs_u, fmt_signed_points, "against no correction the difference", POINTS)
    against_s = judged(vs_s, fmt_signed_points, "against the synchronous runs the difference", POINTS)
    if vs_u.status == "contradicted":
        return f"{first} did worse than no correction in {mode} accuracy: {nums('its runs')}; {against_u}.{diff}"
    if vs_u.status == "shown":
        if vs_s.status == "shown":
            return (f"{first} recovers part of the stale sampler's cost in {mode} accuracy, above the uncorrected runs "
                    f"but still below the synchronous ones: {nums('its runs')}; {against_u}; {against_s}.{diff}")
        beyond = "more than recovers" if vs_s.status == "contradicted" else "recovers"
        return (f"{first} {beyond} the stale sampler's cost in {mode} accuracy: {nums('its runs')}; {against_u}; "
                f"{against_s}.{diff}")
    if vs_s.status == "shown":  # not clear of the uncorrected runs, clearly below the synchronous ones
        return (f"{first} does not clearly recover the stale sampler's cost in {mode} accuracy: {nums('its runs')}. It "
                f"stays below {s.name}: {against_s}; {against_u}.{diff}")
    stale_words = judged(cost, fmt_signed_points, "the stale runs' difference from the synchronous ones", POINTS)
    own = f"{c.name}'s runs"
    if cost.status != "shown":
        return (f"With the sampler {lag} rollouts stale, neither a change that {c.name} makes nor a cost of the stale "
                f"sampler for it to recover is clear in {mode} accuracy: {nums(own)}; "
                f"{against_u}; {stale_words}.{diff}")
    return (f"With the sampler {lag} rollouts stale, whether {c.name} recovers any of the stale sampler's cost in {mode} "
            f"accuracy is not clear: {nums(own)}; {against_u}; {against_s}.{diff}")


@macro(name="sampler_level_words")
def level_words_text(site: Site, mode: str = "greedy", sequence: str = LEVELS[0], token: str = LEVELS[1]) -> str:
    """Did testing the whole response's ratio, rather than each token's, change the held-out gain?"""
    q, t = gain_side(site, sequence, mode), gain_side(site, token, mode)
    for side in (q, t):
        if side.n == 0:
            return side.reason if side.reason.startswith("This build") else f"The two levels cannot be compared: {side.reason}."
    nums = f"{q.name} gained {points(q)} of {mode} accuracy, {t.name} {points(t)}"
    text = finding(compare(q, t, +1), fmt_signed_points,
                   f"Testing the whole response did better than testing each token: {nums}",
                   f"Testing the whole response did worse than testing each token: {nums}",
                   f"Whether testing the whole response rather than each token changes the {mode} gain is not "
                   f"clear: {nums}", sep="; ", unit=POINTS)
    return f"{text}.{paired_text(site, sequence, token, mode, q.name, t.name)}"


@macro(name="sampler_lag_words")
def lag_words_text(site: Site, mode: str = "sampled", sync: str = SYNC, lags: Sequence[str] = LAGS) -> str:
    """The held-out gain at each lag, against synchronous GRPO."""
    s = gain_side(site, sync, mode)
    if s.n == 0:
        return s.reason if s.reason.startswith("This build") else f"The cost cannot be measured: {s.reason}."
    lags = sorted(lags, key=lag_of)
    sides = [(v, gain_side(site, v, mode)) for v in lags]
    absent = [side.reason for _, side in sides if side.n == 0]
    sides = [(v, side) for v, side in sides if side.n > 0]
    if not sides:
        return " ".join(absent)
    each = and_names([f"{points(side)} at a lag of {lag_of(v)}" for v, side in sides])
    text = f"With no correction, the {mode} held-out gain was {each}, against {points(s)} for {s.name}."
    verdicts = [(v, compare(side, s, -1)) for v, side in sides]
    against = and_names([f"{fmt_signed_points(vd.judgement.effect)} points at {lag_of(v)} ({vd.judgement.short()})"
                         for v, vd in verdicts])
    clear = [str(lag_of(v)) for v, vd in verdicts if vd.status == "shown"]
    above = [str(lag_of(v)) for v, vd in verdicts if vd.status == "contradicted"]
    text += f" Against {s.name}, the difference was {against}"
    if clear:
        text += f": the cost is clear at {lags_words(clear)}"
    text += "." if clear or above else ": at no lag is the difference clear."
    if above:
        text += f" At {lags_words(above)} the stale runs gained clearly more than the synchronous ones."
    if len(sides) >= 3:
        means = [side.mean for _, side in sides]
        steps = [compare(b, a, -1) for (_, a), (_, b) in zip(sides, sides[1:])]
        if all(st.status == "shown" for st in steps):
            text += " The gain falls at every step of the lag, each step clear."
        elif all(x > y for x, y in zip(means, means[1:])):
            unclear = sum(1 for st in steps if st.status != "shown")
            which = ("no step is clear" if unclear == len(steps) else
                     f"{count_word(unclear)} of the {count_word(len(steps))} steps {'is' if unclear == 1 else 'are'} "
                     "not clear")
            text += f" The mean gain falls at every step of the lag, but {which}, so the order is a hint, not a finding."
        else:
            text += " The mean gain does not fall steadily with the lag."
    if absent:
        text += " " + " ".join(absent)
    return text


def gain_points(name: str, measured: list[tuple[Run, HeldOutChange]]) -> tuple[list[dict], list[dict]]:
    """One variant's dots (a run's held-out gain in points, with its interval) and its seeds' range,
    the rows :func:`gains_panel_spec` draws."""
    rows = [{"v": name, "r": r.id, "g": round(100 * c.change, 2),
             "ci": f"{fmt_signed_points(c.low)} to {fmt_signed_points(c.high)}"} for r, c in measured]
    gains = [100 * c.change for _, c in measured]
    ranges = [{"v": name, "lo": round(min(gains), 2), "hi": round(max(gains), 2)}] if gains else []
    return rows, ranges


def gains_panel_spec(label: str, rows: list[dict], ranges: list[dict], domain: list[str], colours: list[str]) -> dict:
    """One panel: a row per variant, each seed's gain a dot, a rule from its lowest to its highest seed."""
    import altair as alt

    # the rows' order as the band scale's domain (data), not a custom sort, which Vega-Lite compiles into an
    # expression holding the names (tests/browser/test_hostile_site.py: no input inside an expression)
    y = alt.Y("v:N", scale=alt.Scale(domain=domain), sort=None, title=None, axis=alt.Axis(labelLimit=170))
    colour = alt.Color("v:N", scale=alt.Scale(domain=domain, range=colours), legend=None)
    x_scale = alt.Scale(zero=False, nice=True, padding=8)
    rule = alt.Chart(alt.Data(values=ranges)).mark_rule(strokeWidth=3, opacity=0.55).encode(
        x=alt.X("lo:Q", title=label, scale=x_scale), x2="hi:Q", y=y, color=colour)
    dots = alt.Chart(alt.Data(values=rows)).mark_point(filled=True, size=70, opacity=0.95).encode(
        x=alt.X("g:Q", title=label, scale=x_scale), y=y, color=colour,
        tooltip=[alt.Tooltip("v:N", title="Runs"), alt.Tooltip("r:N", title="Run"),
                 alt.Tooltip("g:Q", title="Gain (points)", format="+.1f"),
                 alt.Tooltip("ci:N", title="95% interval")])
    chart = alt.layer(rule, dots).properties(width="container", height=30 * len(domain) + 20,
                                             autosize=alt.AutoSizeParams(type="fit-x", contains="padding"))
    spec = chart_spec(chart)
    spec["description"] = f"{label}: each run's held-out gain as a dot, one row per set of runs."
    return spec


@macro(name="sampler_gains_figure", html=True)
def gains_figure_html(site: Site, variants: Sequence[str] | None = None) -> str:
    """Held-out gains, every seed a dot, for synchronous, stale and corrected runs; with a table."""
    variants = list(variants or [SYNC, STALE, *CORRECTIONS, *[v for v in LAGS if v != STALE]])
    shown = [(v, variant_runs(site, v)) for v in variants]
    missing = [v for v, rs in shown if not rs]
    shown = [(v, rs) for v, rs in shown if rs]
    if not shown:
        return note_html(" ".join(missing_line(site, v, "its held-out gain") for v in missing), "warning")
    lags = [v for v, _ in shown if lag_of(v) and split_variant(v)[0] == SYNC]
    labels = [f"{site.algorithm_name(split_variant(v)[0])}, " + (f"{lag_of(v)} rollouts stale" if lag_of(v) else "synchronous")
              for v, _ in shown]
    colours = [variant_colour(v, lags or LAGS) for v, _ in shown]
    panels, table_rows = [], []
    changes = {(v, m): [(r, run_change(r.evals, m)) for r in rs] for v, rs in shown for m in MODES}
    for mode in MODES:
        rows, ranges = [], []
        for (variant, _), name in zip(shown, labels):
            dots, span = gain_points(name, [(r, c) for r, c in changes[(variant, mode)] if c is not None])
            rows += dots
            ranges += span
        title = f"Held-out gain, {mode} (points)"
        spec = gains_panel_spec(title, rows, ranges, labels, colours)
        panels.append(f'<div class="unipo-course-panel" style="min-width:0"><p class="unipo-band-title" '
                      f'style="margin:0 0 .2em;font-weight:600">{escape_text(title)}</p>'
                      f"{vega_embed(spec, chart_id=site.chart_id(spec))}</div>")
    for (variant, runs), name in zip(shown, labels):
        cells = [escape_text(name), escape_text(str(len(runs)))]
        for mode in MODES:
            measured = [c for _, c in changes[(variant, mode)] if c is not None]
            if not measured:
                cells.append("–")
                continue
            each = " · ".join(fmt_signed_points(c.change) for c in measured)
            start = and_names(sorted({fmt_pct(c.start) for c in measured}))
            cells.append(two_lines(each, f"from {start}"))
        side = mismatch_side(site, variant)
        cells.append(escape_text(nats(side.mean)) if side.n else "–")
        table_rows.append(cells)
    grid = ('<div class="unipo-course-grid" style="display:grid;grid-template-columns:repeat(auto-fit,minmax(17rem,1fr));'
            'gap:1.2rem 1.6rem">' + "".join(panels) + "</div>")
    caption = ("Each dot is one run's change in held-out accuracy from its start to its end evaluation, on the same "
               "problems (percentage points); a bar spans the lowest to the highest seed of a set. Synchronous GRPO "
               "and the corrected runs take their algorithms' colours, the uncorrected stale runs their lag's blue.")
    tbl = table(["Runs", "Seeds", "Greedy gain (each seed)", "Sampled gain (each seed)", "Mean |gap|"], table_rows,
                numeric=(1, 4))
    note = (note_html(" ".join(missing_line(site, v, "its held-out gain") for v in missing), "warning")
            if missing else "")
    # The figure's numbers, each seed's and each variant's mismatch, for the reader who wants them: folded, with
    # nothing in the page until it opens (the chapter keeps within the course's height budget).
    return (f'<figure class="unipo-figure unipo-sampler-gains">{grid}<figcaption>{escape_text(caption)}</figcaption>'
            f"</figure>{template_fold('Each run set in numbers: every seed’s gain and the mean gap', tbl)}{note}")


# ---------------------------------------------------------------------------
# Macros
# ---------------------------------------------------------------------------

@macro
def sampler_detail_step(site: Site, run: str) -> int | None:
    """The update with a token file at which the run's correction acts on the most tokens."""
    found = site.run(run)
    return detail_step(found) if found is not None else None


# sampler_facts.py's own text functions, registered under the names the chapter calls them by (that module
# does not import the macro machinery).
macro(correction_bounds_text, name="sampler_correction_bounds")
macro(token_words_text, name="sampler_token_words")
macro(response_words_text, name="sampler_response_words")
