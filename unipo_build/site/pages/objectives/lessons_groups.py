"""What the logs teach about groups: the push on a group's shared opening tokens, GRPO as a rescaled
RLOO, and the closing gap between greedy and sampled held-out accuracy.

    {{ prefix_push() }}                 every group-baseline run: the net push on shared opening tokens (HTML)
    {{ prefix_push_verdict() }}         a sentence: zero under length-free weights, not under 1/|o_i|?
    {{ prefix_push_example("grpo") }}   the group of a run with the largest net push, worked out (HTML)
    {{ rloo_identity("grpo") }}         one logged mixed group: the advantage against the leave-one-out one (HTML)
    {{ sharpening() }}                  greedy minus sampled held-out accuracy over training, every run (HTML)
    {{ sharpening_verdict() }}          a sentence: in how many runs the gap closed, clear of the noise
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from unipo_build.core.heldout import Z95, problem_count, start_and_end
from unipo_build.core.moments import PUSH_FLOOR, find_moments, shared_prefix_push
from unipo_build.core.reader import token_digest
from unipo_build.core.registry import kind as registry_kind
from unipo_build.site.render import chart_spec, vega_embed
from unipo_build.core.runs import Run
from unipo_build.core.schema import EvalRecord, StepDetail
from unipo_build.core.numbers import MINUS, fmt_num, fmt_pct
from unipo_build.site.fmt import escape_text, note_html, table
from unipo_build.site.palette import ALGORITHMS, algorithm_colour, role
from unipo_build.site.facts.run_facts import course_runs, missing_run_text
from unipo_build.site.context import Site, macro
from unipo_build.site.facts.spec_facts import and_names, count_word

#: A net push below this share of the pushes it sums is float32 rounding (weights and advantages
#: are logged in float32), not a push.
ROUNDING_SHARE = 1e-5


# ---------------------------------------------------------------------------
# The net push on a group's shared opening tokens
# ---------------------------------------------------------------------------

@token_digest("prefix_push")
def prefix_pushes(detail: StepDetail) -> list[tuple[int, float, float]]:
    """(prefix length, net push, total push) of every trained group with a shared prefix."""
    out = []
    for group in detail.prompts:
        push = shared_prefix_push(group)
        if push is not None and push.total > PUSH_FLOOR:
            out.append((push.length, push.net, push.total))
    return out


def length_free(run: Run) -> bool:
    """Whether the run's aggregation weighs a token without regard to its own response's length:
    asked of the aggregation's own function, on two responses of different lengths."""
    cfg = run.config
    kind = cfg.component("aggregation")
    weights = np.asarray(kind.apply(np.array([[1.0, 1.0, 1.0, 1.0], [1.0, 0.0, 0.0, 0.0]]),
                                    {**cfg.components["aggregation"].params, "normalizer": 4}))
    return bool(np.isclose(weights[0, 0], weights[1, 0]))


def group_runs(site: Site) -> list[Run]:
    """The runs of the build whose advantage is centred within each group (group baselines)."""
    return [r for r in course_runs(site)[0] if r.config is not None and r.config.component("advantage").group_baseline]


def run_pushes(run: Run) -> np.ndarray:
    """(length, net, total) rows of every logged group of a run."""
    rows = [row for step in run.reader.digest("prefix_push").values() for row in step]
    return np.asarray(rows, dtype=np.float64).reshape(-1, 3)


@macro(name="prefix_push", html=True)
def prefix_push_html(site: Site) -> str:
    """Every group-baseline run: the net push on the tokens a group's answers all begin with (a table)."""
    rows = []
    for run in group_runs(site):
        pushes = run_pushes(run)
        agg = run.config.component("aggregation")
        weights = "length-free" if length_free(run) else "depend on the answer's length"
        if len(pushes) == 0:
            rows.append([escape_text(site.run_label(run)), escape_text(f"{agg.label} ({weights})"), "0", "—", "—"])
            continue
        shares = np.abs(pushes[:, 1]) / pushes[:, 2]
        rows.append([escape_text(site.run_label(run)), escape_text(f"{agg.label} ({weights})"),
                     escape_text(fmt_num(len(pushes))), escape_text(fmt_num(float(np.mean(pushes[:, 0])), 2)),
                     escape_text(_share_text(float(np.median(shares)))), escape_text(_share_text(float(shares.max())))])
    if not rows:
        return note_html("No run of this build has a group baseline with token-level logs.", "warning")
    return table(["Run", "Aggregation (token weights)", "Groups with a shared opening", "Shared tokens (mean)",
                  "Net push, median group", "Net push, largest"], rows,
                 caption="The net push on the tokens every answer of a group begins with, as a share of the pushes it sums",
                 numeric=(2, 3, 4, 5))


def _share_text(share: float) -> str:
    return "0 (rounding)" if share < ROUNDING_SHARE else fmt_pct(share, 1)


@macro(name="prefix_push_verdict")
def prefix_push_verdict_text(site: Site) -> str:
    """A sentence: is the net push on shared opening tokens zero under length-free weights only?"""
    free, weighted = [], []
    for run in group_runs(site):
        pushes = run_pushes(run)
        if len(pushes) == 0:
            continue
        share = float(np.max(np.abs(pushes[:, 1]) / pushes[:, 2]))
        (free if length_free(run) else weighted).append((site.run_label(run), share, len(pushes)))
    if not free and not weighted:
        return ("No logged group of this build's runs has a shared opening with a push on it, so the net push cannot "
                "be measured here.")
    parts = []
    if free:
        zero = [name for name, share, _ in free if share < ROUNDING_SHARE]
        nonzero = [(name, share) for name, share, _ in free if share >= ROUNDING_SHARE]
        if zero:
            parts.append(f"Under {and_names(zero)}, whose weights are length-free, the net push on the shared opening "
                         "tokens is zero in every logged group, to float rounding")
        if nonzero:
            parts.append("under " + and_names([n for n, _ in nonzero]) + ", length-free too, it is not zero (largest "
                         + and_names([f"{fmt_pct(s, 1)} ({n})" for n, s in nonzero])
                         + "): a reason other than the weights is at work there")
    if weighted:
        nonzero = [(name, share) for name, share, _ in weighted if share >= ROUNDING_SHARE]
        if nonzero:
            parts.append("under " + and_names([n for n, _ in nonzero]) + ", whose weights divide by each answer's "
                         "length, it is not: in the group where it is largest it is "
                         + and_names([f"{fmt_pct(s, 1)} ({n})" for n, s in nonzero]) + " of the pushes it sums")
        zero = [name for name, share, _ in weighted if share < ROUNDING_SHARE]
        if zero:
            parts.append(f"under {and_names(zero)} it is zero in every logged group although the weights depend on "
                         "length (their groups' answers happened to be equally long)")
    text = "; ".join(parts)
    return text[0].upper() + text[1:] + "."


@macro(name="prefix_push_example", html=True)
def prefix_push_example_html(site: Site, name: str = "grpo") -> str:
    """The logged group with the largest net push on its shared opening, worked out (a table)."""
    run = site.run(name)
    if run is None:
        return note_html(f"{missing_run_text(name)}: no group to work through.", "warning")
    moment = find_moments(run.path).get("shared_prefix_group")
    if moment is None:
        return note_html(f"The {run.id} run has no logged group with a shared opening.", "warning")
    group = next(g for g in run.reader.detail(moment.step).prompts if g.index == moment.group and not g.filtered)
    push = shared_prefix_push(group)
    first = group.responses[0].tokens
    shared = "".join(first.text[:push.length])
    rows = []
    for r in group.responses:
        w, a = r.tokens.weight[0], r.tokens.advantage[0]
        rows.append([escape_text(fmt_num(r.index)), "right" if r.correct else "wrong", escape_text(fmt_num(r.length)),
                     escape_text(fmt_num(a, 3)), escape_text(fmt_num(w, 3)), escape_text(fmt_num(w * a, 3))])
    net_first = sum(r.tokens.weight[0] * r.tokens.advantage[0] for r in group.responses)
    total = sum(r.tokens.advantage[0] for r in group.responses)
    rows.append(["<strong>sum</strong>", "", "", escape_text("\u2248 0" if abs(total) < 1e-5 else fmt_num(total, 3)),
                 "", f"<strong>{escape_text(fmt_num(net_first, 3))}</strong>"])
    tokens = f"{count_word(push.length)} token" + ("" if push.length == 1 else "s")
    caption = (f"Update {moment.step}, group {moment.group} of the {site.run_label(run)} run: every answer begins with "
               f"the same {tokens}, \u201c{shared}\u201d. The push each answer gives the first "
               "shared token at ratio 1 is its weight times its advantage; the token gets their sum.")
    return table(["Answer", "Verdict", "Length", "Advantage", "Weight of a token", "Push on the shared token"], rows,
                 caption=caption, numeric=(2, 3, 4, 5))


# ---------------------------------------------------------------------------
# GRPO as a rescaled RLOO
# ---------------------------------------------------------------------------

@macro(name="rloo_identity", html=True)
def rloo_identity_html(site: Site, name: str = "grpo") -> str:
    """A logged mixed group: its advantages against the leave-one-out ones, one constant ratio (a table)."""
    run = site.run(name)
    if run is None:
        return note_html(f"{missing_run_text(name)}: no group to compare with the leave-one-out baseline.", "warning")
    cfg = run.config
    if cfg is None or not cfg.component("advantage").group_baseline:
        return note_html(f"The {run.id} run has no group advantage to compare with the leave-one-out one.", "warning")
    moment = find_moments(run.path).get("mixed_group")
    if moment is None:
        return note_html(f"The {run.id} run has no logged group with both right and wrong answers.", "warning")
    group = next(g for g in run.reader.detail(moment.step).prompts if g.index == moment.group and not g.filtered)
    rewards = np.array([[r.reward for r in group.responses]], dtype=np.float64)
    loo = np.asarray(registry_kind("advantage", "leave_one_out").apply(rewards, {}))[0]
    G = rewards.shape[1]
    params = cfg.components["advantage"].params
    spread = float(np.std(rewards[0], ddof=int(params.get("std_ddof", 1)))) if "std_ddof" in params else None
    rows = []
    for r, l in zip(group.responses, loo):
        ratio = "—" if abs(l) < 1e-12 else fmt_num(r.advantage / l, 4)
        rows.append([escape_text(fmt_num(r.index)), escape_text(fmt_num(r.reward, 3)), escape_text(fmt_num(r.advantage, 4)),
                     escape_text(fmt_num(float(l), 4)), escape_text(ratio)])
    factor = (G - 1) / G
    if spread is not None:
        factor /= spread + float(params.get("eps", 0.0))
        how = (f"(G \u2212 1) / (G \u00b7 std) = {G - 1} / ({G} \u00d7 {fmt_num(spread, 4)}) = {fmt_num(factor, 4)}")
    else:
        how = f"(G \u2212 1) / G = {G - 1} / {G} = {fmt_num(factor, 4)}"
    caption = (f"Update {moment.step}, group {moment.group} of the {site.run_label(run)} run: each answer's logged "
               f"advantage against its leave-one-out advantage (its reward minus the mean of the other {G - 1}). Every "
               f"ratio is the same number, {how}.")
    return table(["Answer", "Reward", "Logged advantage", "Leave-one-out advantage", "Ratio"], rows, caption=caption,
                 numeric=(1, 2, 3, 4))


# ---------------------------------------------------------------------------
# Sharpening: greedy and sampled held-out accuracy
# ---------------------------------------------------------------------------

def gap(record: EvalRecord) -> float | None:
    if record.accuracy_greedy is None or record.accuracy_sampled is None:
        return None
    return record.accuracy_greedy - record.accuracy_sampled


@dataclass(frozen=True)
class GapReading:
    """Greedy minus sampled accuracy of one run at its start and end evaluations, read for its size.

    ``half`` is the 95% half-width of the signed change (end - start); ``size_half`` that of the
    change of the gap's size, |end| - |start|, taken problem by problem with each gap's sign held
    at its estimate (the per-problem term is sign(end) * d_end - sign(start) * d_start); ``end_half``
    that of the end gap itself, to tell a gap that crossed zero from one that merely reached it."""

    start: float
    end: float
    half: float
    size_half: float
    end_half: float
    paired: bool

    @property
    def size_change(self) -> float:
        return abs(self.end) - abs(self.start)

    @property
    def closed(self) -> bool:
        """The gap's size shrank, clear of the noise."""
        return self.size_change < -self.size_half

    @property
    def widened(self) -> bool:
        return self.size_change > self.size_half

    @property
    def crossed(self) -> bool:
        """The gap changed sign: the other decoding leads at the end, clear of zero."""
        return self.start * self.end < 0 and abs(self.end) > self.end_half

    @property
    def sampled_led(self) -> bool:
        """Sampled accuracy was above greedy accuracy at the start."""
        return self.start < 0


def _sign(value: float) -> float:
    return 1.0 if value > 0 else -1.0 if value < 0 else 0.0


def gap_reading(start: EvalRecord, end: EvalRecord) -> GapReading | None:
    """The gap at a run's start and end, with the intervals of its change, of its size's change
    and of the end gap (paired when both evaluations logged per-problem results)."""
    g0, g1 = gap(start), gap(end)
    if g0 is None or g1 is None:
        return None
    bits = [start.correct_greedy, start.correct_sampled, end.correct_greedy, end.correct_sampled]
    counts = [problem_count(start), problem_count(end)]
    if all(bits) and all(c is not None for c in counts):
        n = min(counts)
        d = np.array([[int(c) for c in b[:n]] for b in bits], dtype=np.float64)
        d0, d1 = d[0] - d[1], d[2] - d[3]
        g0, g1 = float(np.mean(d0)), float(np.mean(d1))

        def half_of(per_problem: np.ndarray) -> float:
            return Z95 * float(np.std(per_problem, ddof=1)) / math.sqrt(n) if n > 1 else float("inf")
        return GapReading(g0, g1, half_of(d1 - d0), half_of(_sign(g1) * d1 - _sign(g0) * d0), half_of(d1), True)
    var_start = sum(p * (1 - p) / start.n for p in (start.accuracy_greedy, start.accuracy_sampled))
    var_end = sum(p * (1 - p) / end.n for p in (end.accuracy_greedy, end.accuracy_sampled))
    half = Z95 * math.sqrt(var_start + var_end)
    return GapReading(g0, g1, half, half, Z95 * math.sqrt(var_end), False)


def sharpening_rows(site: Site) -> list[tuple[Run, GapReading | None]]:
    out = []
    for run in site.catalog.loaded():
        start, end = start_and_end(run.evals)
        out.append((run, gap_reading(start, end) if start is not None and end is not None else None))
    return out


@dataclass(frozen=True)
class Sharpening:
    """The size of the gap between greedy and sampled held-out accuracy, over every run with both
    at its start and end. Sharpening predicts that the gap closes: the policy samples its greedy
    answer more often. The measure reads the gap's size, so a gap that starts with sampled ahead
    and shrinks towards zero is a closing gap, and one that changes sign is named as such."""

    n: int  # runs measured
    closed: tuple[str, ...] = ()  # labels of the runs whose gap's size shrank clearly
    opened: tuple[str, ...] = ()  # ... and grew clearly
    crossed: tuple[str, ...] = ()  # ... whose gap changed sign, clear of zero at the end
    start: float = 0.0  # the mean signed gap (greedy minus sampled) before training (a share)
    end: float = 0.0  # ... and after it
    start_size: float = 0.0  # the mean size of the gap before training
    end_size: float = 0.0  # ... and after it
    sampled_led: int = 0  # runs in which sampled accuracy led greedy at the start
    paired: bool = True

    @property
    def within_noise(self) -> int:
        return self.n - len(self.closed) - len(self.opened)


def sharpening_measure(site: Site) -> Sharpening:
    rows = [(site.run_label(run), g) for run, g in sharpening_rows(site) if g is not None]
    if not rows:
        return Sharpening(0)
    gaps = [g for _, g in rows]
    return Sharpening(
        len(rows),
        closed=tuple(label for label, g in rows if g.closed),
        opened=tuple(label for label, g in rows if g.widened),
        crossed=tuple(label for label, g in rows if g.crossed),
        start=float(np.mean([g.start for g in gaps])), end=float(np.mean([g.end for g in gaps])),
        start_size=float(np.mean([abs(g.start) for g in gaps])), end_size=float(np.mean([abs(g.end) for g in gaps])),
        sampled_led=sum(1 for g in gaps if g.sampled_led), paired=all(g.paired for g in gaps))


#: Runs a sentence names one by one; more are counted ('77 of the 94'), not listed.
NAMED_AT_MOST = 6


def _named(count: int, labels: tuple[str, ...], total: int) -> str:
    """'2 (GRPO, DAPO)'; 'all 3'; 'none'; '77 of the 94' when more than NAMED_AT_MOST."""
    if not labels:
        return "none"
    if len(labels) == total and total > 1:
        return f"all {fmt_num(total)}"
    if len(labels) > NAMED_AT_MOST:
        return f"{fmt_num(count)} of the {fmt_num(total)}"
    return f"{fmt_num(count)} (" + ", ".join(labels) + ")"


def _lead_words(m: Sharpening) -> str:
    """Which decoding led at the start, in every run or in how many."""
    if m.sampled_led == 0:
        return "greedy accuracy led sampled accuracy in every run"
    if m.sampled_led == m.n:
        return "sampled accuracy led greedy accuracy in every run"
    return (f"greedy accuracy led sampled accuracy in {fmt_num(m.n - m.sampled_led)} runs and sampled led greedy in "
            f"{fmt_num(m.sampled_led)}")


def sharpening_words(m: Sharpening) -> str:
    if m.n == 0:
        return ("No run of this build evaluated both greedy and sampled answers at its start and end, so whether the "
                "gap between them closed cannot be measured here.")
    head = (f"Across the {fmt_num(m.n)} runs of this build, {_lead_words(m)} before training; the gap between them "
            f"(greedy minus sampled) averaged {share_points(m.start)} points before training and "
            f"{share_points(m.end)} after it, {share_points(m.start_size)} and {share_points(m.end_size)} points "
            "in size")
    basis = ("each run's change of the gap's size is judged against its 95% interval, "
             + ("problem by problem" if m.paired else "from the accuracies alone where problems were not logged"))
    if m.sampled_led == m.n:
        caveat = (" Here sampling beat the greedy answer at the start, so a closing gap means greedy decoding caught up "
                  "with the samples, not only that the samples concentrated on the greedy answer.")
    elif m.sampled_led:
        caveat = (" Where sampling beat the greedy answer at the start, a closing gap means greedy decoding caught up "
                  "with the samples.")
    else:
        caveat = ""
    crossed = ""
    if m.crossed:
        crossed = (f" The gap changed sign, clear of zero at the end, in {_named(len(m.crossed), m.crossed, m.n)}: "
                   "the decoding that trailed at the start led at the end.")
    if len(m.closed) == m.n:
        return (f"{head}: its size shrank in every run, clear of the noise ({basis}). That is the mark of "
                f"sharpening: the policy samples its greedy answer more often.{crossed}{caveat}")
    text = f"{head}. Its size shrank clearly in {_named(len(m.closed), m.closed, m.n)}"
    if m.opened:
        text += f" and grew clearly in {_named(len(m.opened), m.opened, m.n)}"
    if m.within_noise:
        text += f"; in {fmt_num(m.within_noise)} the change of its size is within the noise"
    text += f"; {basis}.{crossed}"
    if len(m.opened) > len(m.closed):
        return text + (" Where the gap grew, the decoding that led pulled further ahead of the other: those runs do "
                       f"not show sharpening in this measure.{caveat}")
    if len(m.closed) > len(m.opened):
        return text + f" Where it shrank, greedy and sampled answers came to agree more often: sharpening.{caveat}"
    return text + f" So these runs neither show sharpening nor rule it out.{caveat}"


@macro(name="sharpening_verdict")
def sharpening_verdict_text(site: Site) -> str:
    """A sentence: in how many runs the gap between greedy and sampled accuracy closed."""
    return sharpening_words(sharpening_measure(site))


def share_points(value: float) -> str:
    """A share as percentage points, to two significant digits, signed only when negative: '3.8', '−1.2'."""
    text = fmt_num(100 * abs(value), 2)
    return (MINUS if value < 0 else "") + text


#: The sharpening figure's label for runs of specs without a colour of their own (ablation rungs).
OTHER_RUNS = "other specs (ablation rungs)"


@macro(name="sharpening", html=True)
def sharpening_html(site: Site) -> str:
    """Greedy minus sampled held-out accuracy over training, one line per run (a figure)."""
    import altair as alt

    rows, labels, colours = [], [], []
    used: dict[str, str] = {}
    for run in site.catalog.loaded():
        last = run.reader.table.steps[-1] if run.reader.table.n else 0
        # the course's algorithms in their own colours; every other spec (the ablation ladder's
        # rungs) in one neutral grey, so no rung takes a hue near an algorithm's
        own = run.header.algorithm in ALGORITHMS
        label = site.algorithm_name(run.header.algorithm) if own else OTHER_RUNS
        for e in run.evals:
            g = gap(e)
            if g is None:
                continue
            rows.append({"run": run.id, "algorithm": label, "x": round(e.step / max(1, last), 4),
                         "gap": round(100 * g, 2), "step": e.step, "n": e.n})
        if label not in labels and any(r["run"] == run.id for r in rows):
            labels.append(label)
            colours.append(algorithm_colour(run.header.algorithm, used) if own else role("neutral"))
    if not rows:
        return note_html("No run of this build logs greedy and sampled held-out accuracy.", "warning")
    chart = alt.Chart(alt.Data(values=rows)).mark_line(point=True, strokeWidth=1.8).encode(
        x=alt.X("x:Q", title="fraction of training", scale=alt.Scale(domain=[0, 1], nice=False),
                axis=alt.Axis(format="%", tickCount=5)),
        y=alt.Y("gap:Q", title="greedy minus sampled (points)"),
        color=alt.Color("algorithm:N", scale=alt.Scale(domain=labels, range=colours),
                        legend=alt.Legend(orient="top", title=None, columns=4)),
        detail="run:N",
        tooltip=[alt.Tooltip("run:N", title="Run"), alt.Tooltip("step:Q", title="After update"),
                 alt.Tooltip("gap:Q", title="Gap (points)", format=".1f"), alt.Tooltip("n:Q", title="Problems")],
    ).properties(width="container", height=240, autosize=alt.AutoSizeParams(type="fit-x", contains="padding"))
    spec = chart_spec(chart)
    spec["description"] = "Greedy minus sampled held-out accuracy at every evaluation, one line per run."
    # One line and a point per evaluation of every run of the build (130 runs and more): drawn on a canvas, so the
    # page's DOM does not grow with the number of runs (an SVG mark per point did).
    spec["usermeta"] = {"renderer": "canvas"}
    caption = ("Held-out accuracy of the greedy answer minus that of one answer sampled at the training temperature, "
               "in percentage points, at every evaluation of every run (one line per run, seeds included). Both are "
               "measured on the same problems at each evaluation.")
    return vega_embed(spec, chart_id=site.chart_id(spec), caption=caption)


# ---------------------------------------------------------------------------
# Macros
# ---------------------------------------------------------------------------
