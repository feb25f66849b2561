"""What the logs teach about the ratio and the clip, found by code in the runs of the build.

    {{ ratio_extremes() }}            every run's clip range and its smallest and largest logged ratio (HTML)
    {{ clip_bound_verdict() }}        a sentence: did the ratios stay inside the clip ranges?
    {{ kl_spike("grpo") }}            a sentence: the update with the largest KL, its ratios, k3 and gradient
    {{ kl_spike_figure("grpo") }}     KL and gradient norm at every update, unsmoothed, log scale (HTML)
    {{ up_clipped("dapo") }}          the sampling probability of up-clipped tokens vs all pushed-up tokens (HTML)
    {{ up_clipped_verdict("dapo") }}  a sentence: are the up-clipped tokens the improbable ones?
    {{ surrogate_figure("grpo") }}    the clipped surrogate against the ratio, with its slope at 1 (HTML)
    {{ first_update_ratios("grpo") }} a sentence: the ratios of every rollout's first update
    {{ sampling_mismatch() }}         a sentence: which runs sample and train in different precisions, and how far apart

The clip does not bound the ratio (it zeroes a token's gradient once the ratio has left the range
in the advantage's direction), so the logged extremes can lie far outside it; DAPO fig. 3a
reports that the tokens clipped on the high side are improbable ones.
"""

from __future__ import annotations

import math

import numpy as np

from unipo_build.core.reader import token_digest
from unipo_build.site.render import chart_spec, vega_embed
from unipo_build.core.runs import Run
from unipo_build.core.schema import StepDetail
from unipo_build.core.numbers import fmt_fixed, fmt_num, fmt_pct, plain_num, round_sig
from unipo_build.site.fmt import escape_text, note_html, panel_grid, table
from unipo_build.site.palette import algorithm_colour
from unipo_build.site.facts.run_facts import course_runs, mean_mismatch, missing_run_text
from unipo_build.site.pages.learning.claims import runs_named
from unipo_build.site.context import Site, macro
from unipo_build.site.facts.spec_facts import count_word

#: A first update's ratios this close to 1 differ from it by float rounding alone.
ROUNDING = 1e-3

#: Fewer up-clipped tokens than this in the logged steps cannot say where they sit.
MIN_UP_CLIPPED = 5


def clip_range(run: Run) -> tuple[float | None, float | None]:
    """(1 - eps_low, 1 + eps_high) of the run's clip, (None, None) without one."""
    cfg = run.config
    if cfg is None:
        return None, None
    low, high = cfg.component("clip").bounds(cfg.components["clip"].params)
    return (None, None) if low is None else (1.0 - low, 1.0 + high)


def logged_extremes(run: Run) -> dict | None:
    """The smallest and largest logged ratio (ratio/min, ratio/max over every update), where, and
    the share of the later updates (not the first of a rollout) with a ratio outside the clip range."""
    table = run.reader.table
    lo, hi = table.column("ratio/min"), table.column("ratio/max")
    if np.all(np.isnan(lo)) or np.all(np.isnan(hi)):
        return None
    i, j = int(np.nanargmin(lo)), int(np.nanargmax(hi))
    low, high = clip_range(run)
    outside = None
    later = ~table.first_in_rollout & ~np.isnan(lo) & ~np.isnan(hi)
    if low is not None and later.any():
        outside = float(np.mean((lo[later] < low) | (hi[later] > high)))
    return {"min": float(lo[i]), "min_step": int(table.steps[i]), "max": float(hi[j]), "max_step": int(table.steps[j]),
            "low": low, "high": high, "outside": outside}


def bound_text(value: float) -> str:
    """A clip bound with the digits its eps needs: 0.8, 1.28, 0.9997, 1.0004."""
    return plain_num(value)


@macro(name="ratio_extremes", html=True)
def ratio_extremes_html(site: Site) -> str:
    """Every run's clip range and its smallest and largest logged ratio (a table)."""
    found, missing = course_runs(site)
    rows = []
    for run in found:
        e = logged_extremes(run)
        cfg = run.config
        label = site.run_label(run)
        if cfg is not None and cfg.component("ratio").name == "sequence":
            label += " (one ratio per answer)"
        if e is None:
            rows.append([escape_text(label), "—", "not logged", "not logged", "—"])
            continue
        span = "no clip" if e["low"] is None else f"[{bound_text(e['low'])}, {bound_text(e['high'])}]"
        rows.append([escape_text(label), escape_text(span),
                     escape_text(f"{fmt_num(e['min'], 3)} (update {fmt_num(e['min_step'])})"),
                     escape_text(f"{fmt_num(e['max'], 3)} (update {fmt_num(e['max_step'])})"),
                     escape_text("—" if e["outside"] is None else fmt_pct(e["outside"], 0))])
    if not rows:
        return note_html("No runs are in this build, so no ratios can be shown.", "warning")
    out = table(["Run", "Clip range", "Smallest ratio", "Largest ratio", "Later updates outside the range"], rows,
                caption="Logged ratios against each run's clip range", numeric=(2, 3, 4))
    if missing:
        out += note_html("Not in this build: " + ", ".join(site.algorithm_name(m) for m in missing) + ".", "warning")
    return out


def _ratio_runs(site: Site) -> list[tuple[Run, dict]]:
    out = []
    for run in course_runs(site)[0]:
        e = logged_extremes(run)
        if e is not None and e["low"] is not None:
            out.append((run, e))
    return out


@macro(name="clip_bound_verdict")
def clip_bound_verdict_text(site: Site) -> str:
    """A sentence: whether (and how far) the logged ratios left the clip ranges."""
    runs = _ratio_runs(site)
    if not runs:
        return ("No run of this build both clips and logs its ratios, so whether the ratios stayed inside the clip "
                "ranges cannot be measured here.")
    left = [(r, e) for r, e in runs if e["max"] > e["high"] or e["min"] < e["low"]]
    if not left:
        return (f"In this build no logged ratio left its clip range ({len(runs)} runs with a clip), so these runs "
                "do not show the ratio escaping; the argument above still holds, but the logs cannot illustrate it.")
    run_hi, e_hi = max(runs, key=lambda x: x[1]["max"] / x[1]["high"])
    run_lo, e_lo = min(runs, key=lambda x: x[1]["min"] / x[1]["low"])
    return (f"In {len(left)} of the {len(runs)} runs of this build that clip, logged ratios went beyond the clip range. "
            f"The largest, {fmt_num(e_hi['max'], 3)} ({site.run_label(run_hi)}, update {fmt_num(e_hi['max_step'])}), "
            f"is {fmt_num(e_hi['max'] / e_hi['high'], 3)} times its upper bound {bound_text(e_hi['high'])}; the "
            f"smallest, {fmt_num(e_lo['min'], 3)} ({site.run_label(run_lo)}, update {fmt_num(e_lo['min_step'])}), "
            f"is {fmt_num(e_lo['low'] / max(e_lo['min'], 1e-300), 3)} times smaller than its lower bound "
            f"{bound_text(e_lo['low'])}.")


def mismatch_summary(run: Run) -> dict | None:
    """The run's logged gap between sampling and training log-probs (the mismatch/ metrics; the mean
    gap is ``run_facts.mean_mismatch``), or None."""
    gap = mean_mismatch(run)
    if gap is None:
        return None
    table = run.reader.table
    tis, tis_min = table.column("mismatch/tis_mean"), table.column("mismatch/tis_min")
    return {"gap": gap[0], "gap_max": float(np.nanmax(table.column("mismatch/logp_abs_max"))),
            "tis": float(np.nanmean(tis)) if not np.all(np.isnan(tis)) else None,
            "tis_min": float(np.nanmin(tis_min)) if not np.all(np.isnan(tis_min)) else None,
            "dtype": run.header.hardware.dtype if run.header.hardware else None}


def _runs(n: int) -> str:
    return f"{count_word(n)} run" + ("" if n == 1 else "s")


#: A truncated importance weight that scales terms down by less than this share (half a percent)
#: on average is worded as a correction that would change little.
NEGLIGIBLE_TIS_SHIFT = 0.005


def stale_sampler_text(site: Site) -> str:
    """A sentence on the build's asynchronous runs (a variant ``grpo@lag8``): how far their sampler's
    log-probs are from the learner's, by lag; "" when the build has none."""
    from unipo_build.core.runs import split_variant

    by_lag: dict[int, list[float]] = {}
    for run in site.catalog.loaded():
        lag = split_variant(run.variant)[1]
        summary = mismatch_summary(run) if lag else None
        if summary is not None:
            by_lag.setdefault(lag, []).append(summary["gap"])
    if not by_lag:
        return ""
    n = sum(len(v) for v in by_lag.values())
    parts = [f"{fmt_num(min(g), 3)}" + (f" to {fmt_num(max(g), 3)}" if len(g) > 1 and fmt_num(min(g), 3) != fmt_num(max(g), 3)
                                         else "") + f" nats at a lag of {fmt_num(lag)}"
             for lag, g in sorted(by_lag.items())]
    return (f" The build's {_runs(n)} sampled by a stale copy of the policy (the asynchronous mode) do log it: their "
            f"mean gap |log π_train − log π_sample| is {', '.join(parts[:-1]) + ' and ' + parts[-1] if len(parts) > 1 else parts[0]}.")


@macro(name="sampling_mismatch")
def sampling_mismatch_text(site: Site) -> str:
    """A sentence: which runs sample and train in different precisions, and how far their log-probs are."""
    runs = course_runs(site)[0]
    logged = [(r, m) for r in runs if (m := mismatch_summary(r)) is not None]
    if not logged:
        dtypes = sorted({r.header.hardware.dtype for r in runs if r.header.hardware and r.header.hardware.dtype})
        where = f" (they ran in {', '.join(dtypes)})" if dtypes else ""
        head = ("The one synchronous run these pages compare logs no" if len(runs) == 1 else
                f"None of the {count_word(len(runs))} synchronous runs these pages compare logs a")
        return (f"{head} sampling log-prob{where}: "
                "in float32 the sampling and the training pass agree to rounding, so the probability a token was sampled "
                "with is the one the update's ratio divides by, and the second ratio would be one throughout."
                + stale_sampler_text(site))
    worst = max(logged, key=lambda x: x[1]["gap"])
    parts = [f"{site.run_label(r)} {fmt_num(m['gap'], 3)}" for r, m in logged]
    tis = [m["tis"] for _, m in logged if m["tis"] is not None]
    tis_min = [m["tis_min"] for _, m in logged if m["tis_min"] is not None]
    one = len(logged) == 1
    text = (f"{_runs(len(logged)).capitalize()} of this build {'samples and trains' if one else 'sample and train'} "
            f"in {worst[1]['dtype'] or 'mixed precision'} and {'logs' if one else 'log'} both log-probs. The mean gap |log π_train − "
            f"log π_sample| over their updates: {', '.join(parts)}; the largest single gap, "
            f"{fmt_num(max(m['gap_max'] for _, m in logged), 3)}.")
    if tis:
        spread = (fmt_num(tis[0], 4) if len(tis) == 1
                  else f"{fmt_num(min(tis), 4)} to {fmt_num(max(tis), 4)} across these runs")
        text += (f" The truncated importance weight min(1, π_train/π_sample) averages {spread}"
                 + (f", and its smallest value on a token is {fmt_num(min(tis_min), 3)}." if tis_min else "."))
        shift = 1.0 - min(tis)
        text += (f" Applied, it would scale the average token's term down by at most {fmt_pct(shift, 2)}"
                 + (", so in these runs the correction would change little." if shift < NEGLIGIBLE_TIS_SHIFT else
                    ", enough to change what the update does."))
    return text + stale_sampler_text(site)


@macro(name="kl_spike")
def kl_spike_text(site: Site, name: str) -> str:
    """A sentence: the update with the largest KL, its ratios and gradient, and gradient clipping."""
    run = site.run(name)
    if run is None:
        return f"There is no {name} run in this build, so its largest KL cannot be shown."
    table = run.reader.table
    kl = table.column("kl/mean")
    if np.all(np.isnan(kl)):
        return f"The {run.id} run logs no KL to a reference model, so it has no KL spike to show."
    i = int(np.nanargmax(kl))
    step = int(table.steps[i])
    metrics = table.metrics_at(step)
    median = float(np.nanmedian(kl))
    cfg = run.config
    estimator = cfg.components["kl"].params.get("estimator") if cfg is not None else None
    text = (f"The largest mean KL of the {site.run_label(run)} run is {fmt_num(kl[i], 3)} at update {fmt_num(step)}"
            + (f" (its {estimator} estimate, averaged over the update's tokens)" if estimator else "")
            + f", {fmt_num(kl[i] / median, 3) if median > 0 else 'far'} times the run's median of {fmt_num(median, 3)}.")
    if "ratio/min" in metrics and "ratio/max" in metrics:
        if metrics["ratio/min"] == metrics["ratio/max"]:
            text += f" Its token ratios were all {fmt_num(metrics['ratio/min'], 3)}."
        else:
            text += f" Its token ratios ran from {fmt_num(metrics['ratio/min'], 3)} to {fmt_num(metrics['ratio/max'], 3)}."
    grad = metrics.get("grad_norm")
    clip = run.header.hyperparameters.get("grad_clip")
    if grad is not None:
        median_norm = float(np.nanmedian(table.column("grad_norm")))
        text += (f" The gradient norm was {fmt_num(grad, 3)}, against a median of {fmt_num(median_norm, 3)} over the "
                 "run")
        if clip:
            if grad > clip:
                text += (f"; gradient clipping scaled it down to the clipping norm, {fmt_num(clip, 3)}, "
                         f"{fmt_pct(clip / grad, 1 if clip / grad >= 0.01 else 2)} of its raw size, so the optimiser "
                         f"received a gradient {fmt_num(clip / median_norm, 3)} times the median instead of "
                         f"{fmt_num(grad / median_norm, 3)} times.")
            else:
                text += f", below the gradient clipping norm of {fmt_num(clip, 3)}, so clipping did not act on it."
        else:
            text += "."
    return text


#: Points per line of the KL-spike figure (LTTB keeps the spike itself).
SPIKE_POINTS = 200


@macro(name="kl_spike_figure", html=True)
def kl_spike_html(site: Site, name: str) -> str:
    """Mean KL and gradient norm at every update, unsmoothed, with the largest KL marked (a figure)."""
    import altair as alt

    from unipo_build.core.downsample import lttb_indices

    run = site.run(name)
    if run is None:
        return note_html(f"{missing_run_text(name)}: no KL to show.", "warning")
    table = run.reader.table
    kl = table.column("kl/mean")
    if np.all(np.isnan(kl)):
        return note_html(f"The {run.id} run logs no KL to a reference model.", "warning")
    spike = int(table.steps[int(np.nanargmax(kl))])
    colour = algorithm_colour(run.header.algorithm)
    charts = []
    for metric, label in (("kl/mean", "mean KL to the reference"), ("grad_norm", "gradient norm (before clipping)")):
        values = table.column(metric)
        keep = ~np.isnan(values) & (values > 0)
        x, y = table.steps[keep].astype(np.float64), values[keep]
        if len(x) == 0:
            continue
        if len(x) > SPIKE_POINTS:
            idx = lttb_indices(x, y, SPIKE_POINTS)
            x, y = x[idx], y[idx]
        rows = [{"step": int(a), "y": round_sig(b, 4)} for a, b in zip(x, y)]
        line = alt.Chart(alt.Data(values=rows)).mark_line(strokeWidth=1.4, color=colour).encode(
            x=alt.X("step:Q", title="update (step)"),
            y=alt.Y("y:Q", title=label, scale=alt.Scale(type="log")),
            tooltip=[alt.Tooltip("step:Q", title="Update"), alt.Tooltip("y:Q", title=label, format=".3~g")])
        rule = alt.Chart(alt.Data(values=[{"step": spike}])).mark_rule(strokeDash=[4, 3], opacity=0.7).encode(
            x="step:Q")
        chart = alt.layer(line, rule).properties(width="container", height=150,
                                                 autosize=alt.AutoSizeParams(type="fit-x", contains="padding"))
        spec = chart_spec(chart)
        spec["description"] = f"The run's {label} at every update, log scale, the largest KL marked."
        charts.append(vega_embed(spec, chart_id=site.chart_id(spec)))
    caption = (f"The {site.run_label(run)} run's mean KL to the reference (first panel) and gradient norm (second) "
               f"at every update, unsmoothed, on a log scale (at most {SPIKE_POINTS} points per line, chosen by LTTB, "
               f"which keeps the peaks). The dashed line marks update {spike}, the largest KL.")
    # Side by side on a desktop, stacked on a phone: half the height the chapter spent on them.
    return f'<figure class="unipo-figure">{panel_grid(charts)}<figcaption>{escape_text(caption)}</figcaption></figure>'


# ---------------------------------------------------------------------------
# Up-clipped tokens are the improbable ones (DAPO fig. 3a)
# ---------------------------------------------------------------------------

@token_digest("pushed_up")
def pushed_up(detail: StepDetail) -> tuple[list[float], list[int]]:
    """Sampling probability of every trained token with a positive advantage, and its clip side."""
    probs, sides = [], []
    for group in detail.prompts:
        for response in group.responses:
            tk = response.tokens
            if tk is None or group.filtered:
                continue
            for p, a, side, m in zip(tk.old_logp, tk.advantage, tk.clip, tk.mask):
                if m and a > 0:
                    probs.append(math.exp(p))
                    sides.append(side)
    return probs, sides


def up_clipped_samples(runs: list[Run]) -> tuple[np.ndarray, np.ndarray]:
    """(probabilities of the up-clipped tokens, of every pushed-up token) in the logged steps of
    ``runs`` (an algorithm's seeds, pooled)."""
    probs, sides = [], []
    for run in runs:
        for p, s in run.reader.digest("pushed_up").values():
            probs += p
            sides += s
    probs, sides = np.asarray(probs), np.asarray(sides)
    return probs[sides == 1], probs


def token_logged_runs(site: Site, name: str) -> tuple[str, list[Run]]:
    """(words for them, runs): every run of an algorithm id that has token-level logs (its seeds),
    or the one run of a run id; the words read 'the DAPO run' or 'DAPO's three runs'."""
    label, runs = runs_named(site, name)
    runs = [r for r in runs if r.token_steps()]
    if len(runs) == 1:
        return f"the {site.run_label(runs[0])} run", runs
    return f"{label}'s {count_word(len(runs))} runs", runs


def rank_sum_z(x: np.ndarray, y: np.ndarray) -> float:
    """Mann-Whitney's z for x against y (normal approximation, ties ranked by their mean): below -2,
    x is clearly stochastically smaller."""
    both = np.concatenate([x, y])
    order = np.argsort(both, kind="mergesort")
    ranks = np.empty(len(both))
    ranks[order] = np.arange(1, len(both) + 1)
    _, inverse, counts = np.unique(both, return_inverse=True, return_counts=True)
    sums = np.bincount(inverse, weights=ranks)
    ranks = (sums / counts)[inverse]
    n1, n2 = len(x), len(y)
    u = ranks[:n1].sum() - n1 * (n1 + 1) / 2
    ties = float(np.sum(counts ** 3 - counts))
    var = n1 * n2 / 12 * ((n1 + n2 + 1) - ties / ((n1 + n2) * (n1 + n2 - 1)))
    return float((u - n1 * n2 / 2) / math.sqrt(var)) if var > 0 else 0.0


def probability_text(p: float) -> str:
    """A probability for prose: two digits, 'over 0.99' near certainty."""
    return "over 0.99" if p > 0.99 else fmt_num(p, 2)


@macro(name="up_clipped_verdict")
def up_clipped_verdict_text(site: Site, name: str) -> str:
    """A sentence: are the tokens clipped on the high side the improbable ones (DAPO fig. 3a)?"""
    if not site.catalog.named(name):
        return f"There is no {name} run in this build, so its up-clipped tokens cannot be examined."
    words, runs = token_logged_runs(site, name)
    if not runs:
        return f"The {name} runs have no token-level logs, so their up-clipped tokens cannot be examined."
    clipped, pushed = up_clipped_samples(runs)
    if len(clipped) < MIN_UP_CLIPPED:
        return (f"The logged steps of {words} hold {len(clipped)} token(s) clipped on the high side, too few to "
                "say where they sit, so whether the up-clipped tokens are the improbable ones is not measurable here.")
    z = rank_sum_z(clipped, pushed)
    numbers = (f"the {fmt_num(len(clipped))} up-clipped tokens in the logged steps of {words} had a median "
               f"sampling probability of {probability_text(float(np.median(clipped)))}, against "
               f"{probability_text(float(np.median(pushed)))} for all {fmt_num(len(pushed))} tokens with a positive "
               f"advantage (rank-sum z = {fmt_num(z, 2)})")
    if z < -2:
        return f"As DAPO's fig. 3a reports, the tokens that reach the upper bound are the improbable ones: {numbers}."
    if z > 2:
        return f"Unlike DAPO's fig. 3a, the up-clipped tokens here are the likelier ones: {numbers}."
    return f"Here the up-clipped tokens are not clearly less probable than the others: {numbers}."


@macro(name="up_clipped", html=True)
def up_clipped_html(site: Site, name: str) -> str:
    """The sampling probability of up-clipped tokens against every pushed-up token (a figure)."""
    import altair as alt

    words, runs = token_logged_runs(site, name)
    if not runs:
        missing = not site.catalog.named(name)
        return note_html(f"{missing_run_text(name) if missing else 'The runs have no token-level logs'}: the "
                         "figure of up-clipped tokens needs token-level logs.", "warning")
    run = runs[0]
    clipped, pushed = up_clipped_samples(runs)
    edges = np.linspace(0.0, 1.0, 11)
    rows = []
    for label, values in (("clipped on the high side", clipped), ("every token pushed up", pushed)):
        if len(values) == 0:
            continue
        counts, _ = np.histogram(values, bins=edges)
        for k, c in enumerate(counts):
            rows.append({"set": label, "bin": f"{fmt_fixed(edges[k], 1, minus='-')}\u2013{fmt_fixed(edges[k + 1], 1, minus='-')}", "x": float(edges[k] + 0.05),
                         "share": round(float(c / len(values)), 4), "n": int(c)})
    colour = algorithm_colour(run.header.algorithm)
    chart = alt.Chart(alt.Data(values=rows)).mark_bar(opacity=0.85).encode(
        x=alt.X("bin:O", title="probability of the token when it was sampled", sort=None),
        xOffset=alt.XOffset("set:N", sort=["clipped on the high side", "every token pushed up"]),
        y=alt.Y("share:Q", title="share of the set", axis=alt.Axis(format="%")),
        color=alt.Color("set:N", scale=alt.Scale(domain=["clipped on the high side", "every token pushed up"],
                                                 range=[colour, "#999999"]), legend=alt.Legend(orient="top", title=None)),
        tooltip=[alt.Tooltip("set:N", title="Tokens"), alt.Tooltip("bin:O", title="Probability"),
                 alt.Tooltip("share:Q", title="Share", format=".1%"), alt.Tooltip("n:Q", title="Tokens")],
    ).properties(width="container", height=220, autosize=alt.AutoSizeParams(type="fit-x", contains="padding"))
    spec = chart_spec(chart)
    spec["description"] = "Sampling probability of up-clipped tokens against every token with a positive advantage."
    caption = (f"The tokens with a positive advantage in the logged steps of {words}, by the "
               f"probability the policy gave them when it sampled them: the {fmt_num(len(clipped))} clipped on the "
               f"high side and all {fmt_num(len(pushed))}. Each set's bars add up to 100%.")
    return vega_embed(spec, chart_id=site.chart_id(spec), caption=caption)


# ---------------------------------------------------------------------------
# The surrogate, and the ratios of every rollout's first update
# ---------------------------------------------------------------------------

@macro(name="surrogate_figure", html=True)
def surrogate_html(site: Site, algorithm: str = "grpo") -> str:
    """One token's clipped surrogate against its ratio, with the tangent at 1 (a figure)."""
    import altair as alt

    spec_ = site.spec(algorithm, "surrogate_figure")
    low, high = spec_.component("clip").bounds(spec_.params("clip"))
    rows = []
    for adv, panel in ((1.0, "A = +1"), (-1.0, "A = \u22121")):
        for rho in np.linspace(0.5, 1.5, 41):
            clipped = rho if low is None else min(max(rho, 1 - low), 1 + high)
            rows.append({"A": panel, "rho": round(float(rho), 3),
                         "value": round(float(min(rho * adv, clipped * adv)), 4), "line": "clipped surrogate"})
            rows.append({"A": panel, "rho": round(float(rho), 3),
                         "value": round(float(adv * rho), 4), "line": "tangent at \u03c1 = 1 (slope A)"})
    base = alt.Chart(alt.Data(values=rows)).encode(
        x=alt.X("rho:Q", title="ratio \u03c1", scale=alt.Scale(domain=[0.5, 1.5])),
        y=alt.Y("value:Q", title="token objective"),
        strokeDash=alt.StrokeDash("line:N", scale=alt.Scale(
            domain=["clipped surrogate", "tangent at \u03c1 = 1 (slope A)"], range=[[1, 0], [4, 3]]),
            legend=alt.Legend(orient="top", title=None)),
        color=alt.value(algorithm_colour(algorithm)),
    )
    chart = base.mark_line(strokeWidth=2).properties(width=230, height=170).facet(
        column=alt.Facet("A:N", title=None, sort=["A = +1", "A = \u22121"]))
    spec = chart_spec(chart)
    spec["description"] = "The clipped surrogate of one token against its ratio, and the line through rho = 1 with slope A."
    bounds = "no clip" if low is None else f"{fmt_num(1 - low, 4)} and {fmt_num(1 + high, 4)}"
    caption = (f"One token's objective under {spec_.name}'s clip (bounds {bounds}) as its ratio moves, for a positive "
               "and a negative advantage. At \u03c1 = 1 the curve and the dashed line through it with slope A meet and "
               "have the same slope: there, the surrogate's gradient is the policy gradient. The flat pieces are where "
               "the clip has removed the gradient.")
    return vega_embed(spec, chart_id=site.chart_id(spec), caption=caption)


@macro(name="first_update_ratios")
def first_update_ratios_text(site: Site, name: str) -> str:
    """A sentence: the ratios of every rollout's first update (1, so the surrogate's gradient is the PG)."""
    run = site.run(name)
    if run is None:
        return f"There is no {name} run in this build, so its first updates cannot be checked."
    table = run.reader.table
    first = table.first_in_rollout
    lo, hi = table.column("ratio/min")[first], table.column("ratio/max")[first]
    ok = ~np.isnan(lo) & ~np.isnan(hi)
    if not ok.any():
        return f"The {run.id} run does not log its ratios, so its first updates cannot be checked."
    worst = float(max(np.max(np.abs(lo[ok] - 1)), np.max(np.abs(hi[ok] - 1))))
    label = site.run_label(run)
    head = f"In the {label} run, the first update of each of its {fmt_num(int(ok.sum()))} rollouts"
    if worst == 0:
        return head + " logged every ratio at exactly 1: each took the policy gradient itself."
    if worst <= ROUNDING:
        return head + (f" logged ratios within {fmt_num(worst, 2)} of 1 (the recomputed log-probabilities differ "
                       "from the sampling ones by rounding), so each took the policy gradient to that precision.")
    return head + (f" logged ratios as far as {fmt_num(worst, 2)} from 1: more than rounding, so the policy that "
                   "sampled those answers is not the one the first update started from, and those updates were "
                   "not exact policy-gradient steps.")


# ---------------------------------------------------------------------------
# Macros
# ---------------------------------------------------------------------------
