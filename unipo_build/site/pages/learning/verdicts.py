"""Held-out verdicts and the run card: did a run learn, measured on problems it never trained on.

    {{ learning_verdict("grpo") }}     sentences: the paired start -> end change with its 95% interval,
                                       greedy and sampled, and every seed's change
    {{ run_card("grpo") }}             hyperparameters, provenance and the held-out evaluations (HTML)
    {{ eval_compare() }}               the paired held-out change of every algorithm and seed (HTML)

The change is paired: the start and end evaluations score the same held-out problems, and
``unipo_build.core.heldout`` compares them problem by problem (gained, lost, a 95% interval, McNemar's
exact test). A change counts as learning only when its interval excludes zero; it is written with
its sign, so a drop reads as a drop. When an algorithm has several runs (seeds), each seed's change
is given and their spread; a claim that rests on one run says so.
"""

from __future__ import annotations

from typing import Any, Sequence

from unipo_build.core.diagnose import diagnose
from unipo_build.core.heldout import MIN_PROBLEMS, TOO_FEW, HeldOutChange, accuracy_curve, problem_count, run_change
from unipo_build.core.numbers import fmt_fixed, fmt_num, fmt_pct, fmt_signed_points, plain_num
from unipo_build.core.runs import Run
from unipo_build.site.browser import site_root
from unipo_build.site.pages.learning.diagnoses import diagnoses_html, diagnoses_summary
from unipo_build.site.fmt import escape_text, note_html, table, two_lines
from unipo_build.site.facts.run_facts import course_runs, run_summary
from unipo_build.site.facts.seeds import seed_text, spread, still_training, training_text, with_seed
from unipo_build.site.facts.spec_facts import and_names
from unipo_build.site.context import Site, macro

MODES = ("greedy", "sampled")
MODE_WORDS = {"greedy": "greedy", "sampled": "sampled (one answer per problem at the training temperature)"}
DIRECTION_WORDS = {"up": "gain", "down": "drop", "flat": "no clear change"}


# ---------------------------------------------------------------------------
# The paired change, in words
# ---------------------------------------------------------------------------

def changes_of(run: Run) -> dict[str, HeldOutChange | None]:
    """The run's held-out change from its start to its end evaluation, per decoding mode."""
    return {mode: run_change(run.evals, mode) for mode in MODES}


def p_text(p: float | None) -> str:
    if p is None:
        return "–"
    return "p < 0.001" if p < 0.001 else "p = " + fmt_fixed(p, 3 if p < 0.1 else 2)


def interval_text(c: HeldOutChange) -> str:
    """'+20.8 to +25.6' (percentage points, signed)."""
    return f"{fmt_signed_points(c.low)} to {fmt_signed_points(c.high)}"


def change_cell(c: HeldOutChange | None) -> str:
    """'+23.2 [+20.8, +25.6]' for a table (points)."""
    if c is None:
        return "–"
    return f"{fmt_signed_points(c.change)} [{fmt_signed_points(c.low)}, {fmt_signed_points(c.high)}]"


def change_details(c: HeldOutChange) -> str:
    """'95% interval +20.8 to +25.6; 402 problems gained, 54 lost; McNemar p < 0.001' (or unpaired)."""
    text = f"95% interval {interval_text(c)}"
    if c.paired:
        return text + (f"; {fmt_num(c.gained)} problems gained, {fmt_num(c.lost)} lost; McNemar's exact test "
                       f"{p_text(c.p_value)}")
    return text + ("; unpaired: the log has no per-problem results, so the two accuracies are compared as "
                   "independent samples and the interval is wider")


def verdict_sentence(c: HeldOutChange) -> str:
    if c.direction == "up":
        return "The interval lies above zero: the gain carries over to problems the run never trained on."
    if c.direction == "down":
        return "The interval lies below zero: the run got worse on problems it never trained on."
    return "The interval includes zero, so this run shows no clear held-out change."


def seeds_sentence(site: Site, run: Run, runs: Sequence[Run]) -> str:
    """Each seed's greedy change and their spread, or that the claim rests on one seed."""
    label = site.algorithm_name(run.header.algorithm)
    measured = [(r, changes_of(r)["greedy"]) for r in runs]
    measured = [(r, c) for r, c in measured if c is not None]
    training = [r for r in runs if r is not run and still_training(r) is not None]
    pending = ("" if not training else " Still training, so not counted yet: "
               + and_names([f"{with_seed(r)}, {training_text(r).removeprefix('still training: ')}" for r in training])
               + ".")
    if len(measured) <= 1:
        return (f"This rests on one seed: the build has no other {label} run with a held-out evaluation at start "
                "and end, so how much of the change the seed decides cannot be told from it." + pending)
    each = and_names([f"{fmt_signed_points(c.change)} ({seed_text(r)})" for r, c in measured])
    s = spread([c.change for _, c in measured])
    counts = {d: sum(1 for _, c in measured if c.direction == d) for d in ("up", "down", "flat")}
    k = len(measured)
    if counts["up"] == k:
        agree = "every seed's interval lies above zero"
    elif counts["down"] == k:
        agree = "every seed's interval lies below zero"
    elif counts["flat"] == k:
        agree = "no seed's interval excludes zero"
    else:
        parts = [f"{counts['up']} of {k} seeds gained clearly" if counts["up"] else "",
                 f"{counts['down']} dropped clearly" if counts["down"] else "",
                 f"{counts['flat']} showed no clear change" if counts["flat"] else ""]
        agree = and_names([p for p in parts if p]) + ", so the direction depends on the seed"
    return (f"Across the {k} {'finished ' if training else ''}{label} runs of this build, the greedy change was {each} points: from "
            f"{fmt_signed_points(s.low)} to {fmt_signed_points(s.high)} points, and {agree}.{pending}")


def learning_verdict_text(site: Site, run: Run | None, name: str, runs: Sequence[Run] = ()) -> str:
    if run is None:
        return f"There is no {name} run in this build, so nothing can be said about what it learned."
    changes = changes_of(run)
    greedy = changes["greedy"]
    if greedy is None and still_training(run) is not None:
        logged, planned = still_training(run)
        return (f"The run {with_seed(run)} is still training ({fmt_num(logged)} of its {fmt_num(planned)} rollouts "
                "logged), so it has no end-of-training evaluation yet: whether it learned can be judged once it "
                "finishes and the site is rebuilt.")
    if greedy is None:
        return (f"The {run.id} log has no held-out evaluation at both start and end, so whether the run learned "
                "cannot be judged from it (training reward alone can rise without the model getting better).")
    steps = run.reader.table.n
    on = (f"the same {fmt_num(greedy.n)} held-out problems at the start and the end" if greedy.paired else
          f"{fmt_num(greedy.n)} held-out problems")
    text = (f"Held-out greedy accuracy of the run {with_seed(run)} went from {fmt_pct(greedy.start)} to "
            f"{fmt_pct(greedy.end)} over {fmt_num(steps)} updates, on {on}: a change of "
            f"{fmt_signed_points(greedy.change)} points ({change_details(greedy)}). {verdict_sentence(greedy)}")
    sampled = changes["sampled"]
    if sampled is not None:
        text += (f" Sampled accuracy (one answer per problem at the training temperature) went from "
                 f"{fmt_pct(sampled.start)} to {fmt_pct(sampled.end)}: {fmt_signed_points(sampled.change)} points "
                 f"(95% interval {interval_text(sampled)}), {_clear(sampled)}.")
    return text + " " + seeds_sentence(site, run, runs or [run])


def _clear(c: HeldOutChange) -> str:
    return {"up": "a clear gain", "down": "a clear drop", "flat": "no clear change"}[c.direction]


def _judged(c: HeldOutChange) -> str:
    """The run card's verdict on a change: ``_clear``'s words, or under ``MIN_PROBLEMS`` problems ``TOO_FEW``."""
    return f"{TOO_FEW} (under {MIN_PROBLEMS} problems)" if c.too_few else _clear(c)


# ---------------------------------------------------------------------------
# run_card
# ---------------------------------------------------------------------------

PHASE_WORDS = {"start": "before training", "periodic": "during training", "end": "after training"}


def _when(value: Any) -> str:
    if value is None:
        return "–"
    try:
        return value.strftime("%Y-%m-%d %H:%M UTC")
    except AttributeError:
        return str(value)


def updates_text(per_rollout, epochs, minibatches) -> str:
    """'2 (2 epochs × 1 minibatch)'."""
    if per_rollout is None:
        return "–"
    if not (epochs and minibatches):
        return str(per_rollout)
    return (f"{per_rollout} ({epochs} epoch{'s' if epochs != 1 else ''} × {minibatches} "
            f"minibatch{'es' if minibatches != 1 else ''})")


@macro(name="run_card", html=True, run=True)
def run_card_html(site: Site, run: Run | None, name: str, *, with_diagnoses: bool = True) -> str:
    """The run's settings (folded), its held-out evaluations and (``with_diagnoses``) its diagnosis cards."""
    if run is None:
        return note_html(f"There is no {name} run in this build, so its settings and evaluation cannot be shown. "
                         "Train it (see the README) or point UNIPO_RUNS at a directory of runs, then rebuild.",
                         "warning")
    h = run.header
    hp = h.hyperparameters
    summary = run_summary(run)

    def hv(key: str, fmt=fmt_num) -> str:
        value = hp.get(key)
        return "–" if value is None else escape_text(fmt(value))

    epochs, minibatches = hp.get("epochs"), hp.get("minibatches")
    per_rollout = (h.steps_per_rollout if h.steps_per_rollout else
                   (epochs * minibatches if epochs and minibatches else None))
    model = h.model
    hardware = h.hardware
    hw = "–"
    if hardware is not None:
        bits = [hardware.device_name or hardware.device]
        if hardware.cores:
            bits.append(f"{hardware.cores} cores")
        if hardware.dtype:
            bits.append(hardware.dtype)
        hw = escape_text(", ".join(str(b) for b in bits if b))
    software = ", ".join(f"{k} {v}" for k, v in sorted(h.software.items())) or "–"
    wall = summary["wall_time_s"]
    rows = [
        ("Algorithm", escape_text(f"{site.algorithm_name(h.algorithm)} (spec {h.algorithm})")),
        ("Run", escape_text(h.run_id) + (f" — {escape_text(h.title)}" if h.title else "")),
        ("Task", escape_text(h.task.name)),
        ("Preset", escape_text(h.preset or "–")),
        ("Seed", escape_text("–" if h.seed is None else h.seed)),
        ("Updates (steps)", escape_text(fmt_num(summary["steps"]))),
        ("Rollouts", escape_text(fmt_num(summary["rollouts"]))),
        ("Updates per rollout", escape_text(updates_text(per_rollout, epochs, minibatches))),
        ("Learning rate", hv("lr", lambda v: plain_num(float(v)))),
        ("Responses per prompt (G)", hv("group_size")),
        ("Prompts per rollout", hv("prompts_per_step")),
        ("Max new tokens", hv("max_new_tokens")),
        ("Sampling temperature", hv("temperature", lambda v: plain_num(float(v)))),
        ("Model", escape_text(f"{model.architecture or model.name}"
                              + (f", {fmt_num(model.parameters)} parameters" if model.parameters else ""))),
        ("Hardware", hw),
        ("Software", escape_text(software)),
        ("Engine", escape_text(h.engine)),
        ("Commit", f"<code>{escape_text(h.commit)}</code>" if h.commit else "–"),
        ("Created", escape_text(_when(h.created_at))),
        ("Finished", escape_text(_when(h.finished_at) if h.finished_at else "not finished")),
        ("Wall time", escape_text("–" if wall is None else f"{fmt_num(wall / 60.0, 3)} min")),
    ]
    # A grid of setting / value pairs (three columns on a wide page): a two-column table of 21
    # rows is taller than a screen and mostly empty.
    items = "".join(f'<div class="unipo-run-fact"><dt>{label}</dt><dd>{value}</dd></div>' for label, value in rows)
    # Folded to one line that names the run and its size: the settings are reference material.
    gist = ", ".join(x for x in (site.algorithm_name(h.algorithm), f"{fmt_num(summary['steps'])} updates",
                                 f"{fmt_num(summary['rollouts'])} rollouts" if summary["rollouts"] else "",
                                 f"seed {h.seed}" if h.seed is not None else "") if x)
    card = (f'<details class="unipo-run-card-details"><summary><span class="unipo-label">Run card</span> '
            f'{escape_text(h.run_id)}: {escape_text(gist)} <span class="unipo-run-card-hint">(open for every '
            f'setting)</span></summary><dl class="unipo-run-facts">{items}</dl></details>')
    diagnoses = run_diagnoses_html(site, run) if with_diagnoses else ""
    return f'<div class="unipo-run-card">{card}{evals_html(run)}{diagnoses}</div>'


def run_diagnoses_html(site: Site, run: Run) -> str:
    """The run's diagnosis cards (``unipo_build.core.diagnose``), folded under one line that says how many
    questions point somewhere to look; each chapter links into this course."""
    found = diagnose(run.reader)
    root = site_root(site.page_url)

    def taught(chapter) -> str:
        return f'<a href="{escape_text(root + chapter.path.removesuffix(".md"))}/">{escape_text(chapter.title)}</a>'
    return (f'<details class="unipo-fold unipo-run-diagnoses"><summary><span class="unipo-label">Diagnosis</span> '
            f"{escape_text(diagnoses_summary(found))} (the questions practitioners ask of a run; open for the "
            "answers)</summary>"
            f"{diagnoses_html(found, chapter_html=taught)}</details>")


def problems_text(record, total: int | None) -> str:
    """Which held-out problems an evaluation scored: 'all 1,500' or 'the first 500'."""
    n = problem_count(record)
    if n is None:
        return fmt_num(record.n)
    if total is not None and n >= total:
        return f"all {fmt_num(n)}"
    return f"the first {fmt_num(n)}"


def evals_html(run: Run) -> str:
    """The run's evaluations, each labelled with the problems it scored, then the paired change."""
    evals = list(run.evals)
    if not evals:
        return note_html("This log has no held-out evaluation: its training metrics alone cannot show whether "
                         "the model got better on unseen problems.")
    total = run.header.task.n_eval
    counts = {problem_count(e) for e in evals}
    curve = {mode: accuracy_curve(evals, mode) for mode in MODES}
    shared = len(counts) > 1 and all(p.common for p in curve["greedy"]) and len(curve["greedy"]) == len(evals)
    head = ["After update", "When", "Problems", "Greedy", "Sampled", "Mean length"]
    if shared:
        head.append(f"Greedy on the {fmt_num(curve['greedy'][0].n)} shared")
    rows = []
    for i, e in enumerate(evals):
        row = [escape_text(fmt_num(e.step)), escape_text(PHASE_WORDS.get(e.phase, e.phase)),
               escape_text(problems_text(e, total)), escape_text(fmt_pct(e.accuracy_greedy)),
               escape_text(fmt_pct(e.accuracy_sampled)),
               escape_text("–" if e.mean_length is None else fmt_num(e.mean_length, 3))]
        if shared:
            row.append(escape_text(fmt_pct(curve["greedy"][i].accuracy)))
        rows.append(row)
    note = ""
    if shared:
        n_shared = fmt_num(curve["greedy"][0].n)
        note = (f"<p>Start and end score every held-out problem, the evaluations during training the first "
                f"{escape_text(n_shared)}. The last column scores each evaluation on those {escape_text(n_shared)} "
                "problems only, so it can be read from top to bottom.</p>")
    elif len(counts) > 1:
        note = ("<p>The evaluations scored different numbers of problems and the log has no per-problem results "
                "for all of them, so only evaluations of the same problems compare with each other.</p>")
    evals_table = table(head, rows, caption="Held-out evaluations", numeric=(0, 3, 4, 5, 6))
    changes = changes_of(run)
    lines = []
    for mode in MODES:
        c = changes[mode]
        if c is not None:
            lines.append(f"{MODE_WORDS[mode]}: {fmt_pct(c.start)} → {fmt_pct(c.end)}, "
                         f"{fmt_signed_points(c.change)} points ({change_details(c)}), {_judged(c)}")
    summary = ""
    if lines:
        paired = changes["greedy"] is not None and changes["greedy"].paired
        summary = (f"<p>Start to end{', on the same problems' if paired else ''}: "
                   + escape_text("; ".join(lines)) + ".</p>")
    first, last = evals[0], evals[-1]
    headline = (f"greedy accuracy {fmt_pct(first.accuracy_greedy)} \u2192 {fmt_pct(last.accuracy_greedy)}"
                if last is not first else f"greedy accuracy {fmt_pct(last.accuracy_greedy)}")
    if changes["greedy"] is not None:
        c = changes["greedy"]
        headline = f"greedy accuracy {fmt_pct(c.start)} \u2192 {fmt_pct(c.end)}"
    # Folded: a row per evaluation; the sentence under it gives the change that matters.
    folded = (f'<details class="unipo-run-evals"><summary>Held-out evaluation: {escape_text(headline)}, '
              f'{len(evals)} evaluation{"s" if len(evals) != 1 else ""}</summary>{evals_table}{note}</details>')
    return folded + summary


@macro(name="eval_compare", html=True)
def eval_compare_html(site: Site, runs: Sequence[str] | None = None) -> str:
    """One row per algorithm: the shown run's paired change, and every seed's greedy change."""
    found, missing = course_runs(site, runs)
    rows = []
    for run in found:
        _, seeds = site.catalog.with_seeds(run.id)
        seeds = seeds or [run]
        changes = changes_of(run)
        g, sm = changes["greedy"], changes["sampled"]
        gained = "–" if g is None or not g.paired else f"{fmt_num(g.gained)} / {fmt_num(g.lost)}"
        others = [(r, changes_of(r)["greedy"]) for r in seeds]
        measured = [(r, c) for r, c in others if c is not None]
        if len(measured) > 1:
            sp = spread([c.change for _, c in measured])
            ups = sum(1 for _, c in measured if c.direction == "up")
            downs = sum(1 for _, c in measured if c.direction == "down")
            tally = and_names([t for t in (f"{ups} up" if ups else "", f"{downs} down" if downs else "",
                                          f"{len(measured) - ups - downs} unclear" if len(measured) > ups + downs
                                          else "") if t])
            seeds_cell = two_lines(" · ".join(fmt_signed_points(c.change) for _, c in measured),
                                   f"range {fmt_signed_points(sp.low)} to {fmt_signed_points(sp.high)}; {tally}")
        else:
            seeds_cell = escape_text("one seed only")
        rows.append([
            escape_text(site.algorithm_name(run.header.algorithm)),
            two_lines(run.id, seed_text(run)),
            escape_text(f"{fmt_pct(g.start)} → {fmt_pct(g.end)}" if g else "–"),
            escape_text(change_cell(g)),
            escape_text(gained),
            escape_text(DIRECTION_WORDS[g.direction] if g else training_text(run) or "not evaluated"),
            seeds_cell,
            escape_text(change_cell(sm)),
        ])
    for name in missing:
        rows.append([escape_text(site.algorithm_name(name)), "not in this build"] + ["–"] * 6)
    if not rows:
        return note_html("No runs are in this build.", "warning")
    caption = "Held-out accuracy from the start to the end of training, on the same problems (percentage points)"
    return table(["Algorithm", "Run shown", "Greedy accuracy", "Greedy change [95% interval]", "Gained / lost",
                  "Verdict", "Greedy change, each seed", "Sampled change [95% interval]"],
                 rows, caption=caption, numeric=(2, 3, 4, 7))


@macro
def learning_verdict(site: Site, run: str) -> str:
    """Sentences: the paired held-out change (greedy and sampled) with its interval, and each seed's."""
    found, seeds = site.catalog.with_seeds(str(run))
    return learning_verdict_text(site, found, str(run), seeds)
