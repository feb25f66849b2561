"""Held-out verdicts and the run card: did a run learn, measured on problems it never trained on.

    {{ learning_verdict("grpo") }}     a sentence: held-out accuracy from start to end, against 2 SE
    {{ run_card("grpo") }}             hyperparameters, provenance and the held-out evaluation (HTML)
    {{ eval_compare() }}               held-out accuracy of every run, start and end (HTML)

A change counts as learning only when it exceeds two standard errors of the difference of two
binomial accuracies; training reward alone can rise without the model getting better.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

from ..runs import Run
from .fmt import MINUS, escape_text, fmt_num, fmt_pct, fmt_points, note_html, table
from .run_facts import course_runs, run_summary
from .site import Site, macro


# ---------------------------------------------------------------------------
# Held-out evaluation: the verdict
# ---------------------------------------------------------------------------

def binomial_se(p: float, n: int) -> float:
    """Standard error of an accuracy measured on n independent problems."""
    return math.sqrt(max(p * (1.0 - p), 0.0) / n) if n > 0 else float("inf")


@dataclass(frozen=True)
class EvalChange:
    start: float
    end: float
    n_start: int
    n_end: int
    steps: int

    @property
    def change(self) -> float:
        return self.end - self.start

    @property
    def se(self) -> float:
        """SE of the difference of two independent binomial estimates."""
        return math.sqrt(binomial_se(self.start, self.n_start) ** 2 + binomial_se(self.end, self.n_end) ** 2)

    @property
    def direction(self) -> str:
        """'up', 'down' or 'flat': the change against two standard errors."""
        if self.se == 0:
            return "flat" if self.change == 0 else ("up" if self.change > 0 else "down")
        if self.change > 2 * self.se:
            return "up"
        if self.change < -2 * self.se:
            return "down"
        return "flat"


def eval_change(run: Run, mode: str = "greedy") -> EvalChange | None:
    summary = run_summary(run)
    start, end = summary["eval_start"], summary["eval_end"]
    if not start or not end:
        return None
    a, b = start.get(f"accuracy_{mode}"), end.get(f"accuracy_{mode}")
    if a is None or b is None:
        return None
    return EvalChange(a, b, start["n"], end["n"], summary["steps"])


def learning_verdict_text(run: Run | None, name: str) -> str:
    if run is None:
        return (f"There is no {name} run in this build, so nothing can be said about what it learned.")
    greedy = eval_change(run, "greedy")
    if greedy is None:
        return (f"The {run.id} log has no held-out evaluation at both start and end, so whether the run learned "
                "cannot be judged from it (training reward alone can rise without the model getting better).")
    se_pts = fmt_points(2 * greedy.se)
    span = f"over {fmt_num(greedy.steps)} updates, measured on {fmt_num(greedy.n_end)} held-out problems"
    head = f"Held-out greedy accuracy went from {fmt_pct(greedy.start)} to {fmt_pct(greedy.end)} {span}"
    if greedy.direction == "up":
        text = (f"{head}: a gain of {fmt_points(greedy.change)} points, more than twice its standard error "
                f"(two standard errors: {se_pts} points), so the improvement carries over to problems the run "
                "never trained on.")
    elif greedy.direction == "down":
        text = (f"{head}: a drop of {fmt_points(greedy.change)} points, more than twice its standard error "
                f"({se_pts} points), so the run got worse on unseen problems.")
    else:
        text = (f"{head}; the change of {fmt_points(greedy.change)} points is within two standard errors "
                f"({se_pts} points) of zero, so this run shows no clear held-out learning.")
    sampled = eval_change(run, "sampled")
    if sampled is not None:
        verb = {"up": "rose clearly", "down": "fell clearly", "flat": "did not change clearly"}[sampled.direction]
        text += (f" Sampled accuracy (temperature as in training) {verb}: {fmt_pct(sampled.start)} to "
                 f"{fmt_pct(sampled.end)}.")
    return text


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


def run_card_html(site: Site, run: Run | None, name: str) -> str:
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
        ("Updates per rollout", escape_text(
            "–" if per_rollout is None else
            f"{per_rollout} ({epochs} epochs × {minibatches} minibatches)" if epochs and minibatches else str(per_rollout))),
        ("Learning rate", hv("lr", lambda v: f"{float(v):g}")),
        ("Responses per prompt (G)", hv("group_size")),
        ("Prompts per rollout", hv("prompts_per_step")),
        ("Max new tokens", hv("max_new_tokens")),
        ("Sampling temperature", hv("temperature", lambda v: f"{float(v):g}")),
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
    evals = list(run.evals)
    if evals:
        eval_rows = [(escape_text(fmt_num(e.step)), escape_text(PHASE_WORDS.get(e.phase, e.phase)),
                      escape_text(fmt_num(e.n)), escape_text(fmt_pct(e.accuracy_greedy)),
                      escape_text(fmt_pct(e.accuracy_sampled)),
                      escape_text("–" if e.mean_length is None else fmt_num(e.mean_length, 3)))
                     for e in evals]
        n = evals[-1].n
        se = binomial_se(evals[-1].accuracy_greedy or 0.0, n)
        evals_table = table(["After update", "When", "Problems", "Greedy", "Sampled", "Mean length"], eval_rows,
                            numeric=(0, 2, 3, 4, 5))
        first, last = evals[0], evals[-1]
        headline = (f"greedy accuracy {fmt_pct(first.accuracy_greedy)} \u2192 {fmt_pct(last.accuracy_greedy)}"
                    if last is not first else f"greedy accuracy {fmt_pct(last.accuracy_greedy)}")
        # Folded: the table has a row per evaluation (the explorer above shows a few of them).
        eval_html = (f'<details class="unipo-run-evals"><summary>Held-out evaluation: {escape_text(headline)}, '
                     f'{len(evals)} evaluation{"s" if len(evals) != 1 else ""}</summary>{evals_table}</details>'
                     f"<p>Each accuracy is measured on problems the run never trained on; with "
                     f"{escape_text(fmt_num(n))} problems, one standard error of the final greedy "
                     f"accuracy is about {escape_text(fmt_points(se))} percentage points.</p>")
    else:
        eval_html = note_html("This log has no held-out evaluation: its training metrics alone cannot show whether "
                              "the model got better on unseen problems.")
    return f'<div class="unipo-run-card">{card}{eval_html}</div>'


def eval_compare_html(site: Site, runs: Sequence[str] | None = None) -> str:
    found, missing = course_runs(site, runs)
    rows = []
    for run in found:
        g, s = eval_change(run, "greedy"), eval_change(run, "sampled")
        summary = run_summary(run)
        change = "–"
        if g:
            change = ("+" if g.change >= 0 else MINUS) + fmt_points(g.change) + " ± " + fmt_points(2 * g.se)
        rows.append([
            escape_text(site.run_label(run)),
            escape_text(fmt_num(summary["steps"])),
            escape_text(f"{fmt_pct(g.start)} → {fmt_pct(g.end)}" if g else "–"),
            escape_text(change),
            escape_text({"up": "rose", "down": "fell", "flat": "no clear change"}[g.direction] if g else "not evaluated"),
            escape_text(f"{fmt_pct(s.start)} → {fmt_pct(s.end)}" if s else "–"),
        ])
    for name in missing:
        rows.append([escape_text(site.algorithm_name(name)), "–", "–", "–", "not in this build", "–"])
    if not rows:
        return note_html("No runs are in this build.", "warning")
    return table(["Run", "Updates", "Greedy accuracy", "Change ± 2 SE (points)", "Verdict", "Sampled accuracy"],
                 rows, caption="Held-out accuracy of every run, before → after training", numeric=(1, 2, 3, 5))


@macro
def learning_verdict(site: Site, run: str) -> str:
    """A sentence: held-out greedy (and sampled) accuracy from start to end, against 2 SE."""
    return learning_verdict_text(site.run(run), str(run))


@macro(html=True)
def run_card(site: Site, run: str) -> str:
    """Hyperparameters and provenance of a run, and its held-out evaluation table."""
    return run_card_html(site, site.run(run), str(run))


@macro(html=True)
def eval_compare(site: Site, runs: Sequence[str] | None = None) -> str:
    """Held-out accuracy of every run at start and end, with the 2-SE verdict."""
    return eval_compare_html(site, runs)
