"""Macros of the course chapters (a ``MACRO_MODULES`` entry): facts, verdicts and figures from runs.

Every number a chapter quotes comes from one of these macros, so a chapter stays true when the
site is rebuilt from other logs. Inline macros return plain text; the others return HTML through
``macros.protect_html`` and are called on a line of their own.

Inline (text):

    {{ run_fact("grpo", "eval_end_greedy") }}          a number from the run's summary or header
                                                        (RUN_FACT_KEYS; ``digits`` significant digits,
                                                        accuracies as percentages)
    {{ learning_verdict("grpo") }}                      held-out accuracy, start to end, against 2 SE
    {{ moment_fact("grpo", "all_correct_group") }}      where a teaching moment is (``field``: step,
                                                        group, response, token or value)
    {{ metric_fact("grpo", "groups/zero_variance_frac", "last", percent=True) }}
                                                        a metric's mean over the first/last tenth
    {{ length_verdict("grpo") }}                        wrong vs correct answer lengths, start to end
    {{ runs_setup() }}                                  what the runs of the build share, where they differ
    {{ clip_ceiling(0.01, "dapo") }}                    how far one rollout's clip lets a token rise
    {{ anatomy_fact("grpo", "step") }}                  a fact of the anatomy page's update (ANATOMY_FACTS)
    {{ hybrid_status() }}                               whether the build has a DAPO + Dr. GRPO hybrid run

Blocks (HTML, a paragraph of their own):

    {{ run_card("grpo") }}                              hyperparameters, provenance, held-out evaluation
    {{ family_tree() }}                                 the lineage of the specs, as a figure and a table
    {{ dynamics_compare(["reward/mean", "length/mean"]) }}   small multiples of the runs' metrics
    {{ length_by_correctness(["grpo", "dr_grpo"]) }}    mean length of wrong and correct answers
    {{ weight_shares((10, 1000)) }}                     each response's share of the weight, per aggregation
    {{ slot_matrix() }}                                 every algorithm's component per slot
    {{ eval_compare() }}                                held-out accuracy of every run, start and end
    {{ anatomy("grpo", beat="advantages") }}            one beat of the anatomy of one update (ANATOMY_BEATS)

A run is named by its id, its directory name or its algorithm id (``runs.get_run``). A run that
is not in the build gives a note ("no ... run in this build"), never a failed build; an unknown
fact key, moment, metric or beat is an author's error (:class:`CourseError`) and stops the build.
Colours: one per algorithm (:data:`ALGORITHM_COLOURS`), the same as the playgrounds'.
"""

from __future__ import annotations

import math
import textwrap
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterable, Sequence

import numpy as np

from . import components, runlog
from .downsample import lttb_indices
from .moments import MOMENT_NAMES, Moment
from .render import escape_text
from .runs import Run, discover, get_run, runs_dir
from .schema import METRICS, PromptGroup, Response, StepDetail, metric_info
from .specs import SLOTS, AlgorithmSpec, lineage, load_specs
from .summary import summarize

# ---------------------------------------------------------------------------
# Colours: one per algorithm, the same on every page (the playgrounds use the same hues)
# ---------------------------------------------------------------------------

#: Okabe-Ito and Paul Tol hues, told apart with the common colour-vision deficiencies and
#: readable on Material's light and slate schemes. The playgrounds' METHOD_COLOURS use the same.
ALGORITHM_COLOURS: dict[str, str] = {
    "reinforce": "#E69F00",  # orange
    "ppo": "#56B4E9",  # sky blue
    "grpo": "#009E73",  # bluish green
    "dapo": "#AA3377",  # Tol purple
    "dr_grpo": "#999933",  # Tol olive
}
#: Runs of algorithms without a colour above (a reader's own) take these, in order.
EXTRA_COLOURS = ("#0072B2", "#D55E00", "#CC79A7", "#EE6677", "#44AA99", "#332288")
#: Line dashes for a second categorical channel (e.g. correct vs wrong answers).
DASHES = {"correct": [1, 0], "wrong": [6, 3]}

DEFAULT_DYNAMICS = ("reward/mean", "length/mean", "entropy/mean", "kl/mean", "clip/frac_high", "clip/frac_low")


class CourseError(ValueError):
    """An author's error in a chapter (unknown key, moment, metric, beat): stops the build."""


# ---------------------------------------------------------------------------
# Formatting
# ---------------------------------------------------------------------------

_SUPERSCRIPT = str.maketrans("-0123456789", "\u207b\u2070\u00b9\u00b2\u00b3\u2074\u2075\u2076\u2077\u2078\u2079")
MINUS = "\u2212"


def fmt_num(value: float | int | None, digits: int = 3, minus: str = MINUS) -> str:
    """A number for prose: integers with thousands separators, floats to ``digits`` significant
    digits (0.0123, 1.5, 12.4), tiny ones as 2.49 × 10⁻⁵; negative numbers with a true minus sign
    (``minus="-"`` for ASCII)."""
    if value is None:
        return "–"
    if isinstance(value, (bool, np.bool_)):
        return str(bool(value)).lower()
    if isinstance(value, (int, np.integer)):
        return f"{int(value):,}".replace("-", minus)
    x = float(value)
    if not math.isfinite(x):
        return str(x)
    if x == 0:
        return "0"
    if x.is_integer() and abs(x) < 1e15:
        return f"{int(x):,}".replace("-", minus)
    if abs(x) < 1e-3:
        mantissa, exponent = f"{x:.{max(1, digits) - 1}e}".split("e")
        mantissa = mantissa.rstrip("0").rstrip(".") if "." in mantissa else mantissa
        return f"{mantissa} × 10{str(int(exponent)).translate(_SUPERSCRIPT)}".replace("-", minus)
    text = np.format_float_positional(x, precision=max(1, digits), unique=False, fractional=False, trim="-")
    if text in ("-0", "0"):
        return "0"
    whole, _, frac = text.partition(".")
    if len(whole.lstrip("-")) > 3:
        sign = "-" if whole.startswith("-") else ""
        whole = sign + f"{int(whole.lstrip('-')):,}"
    return (whole + ("." + frac if frac else "")).replace("-", minus)


#: Below this, a logged objective or contribution is float32 rounding noise around zero.
NOISE = 1e-7


def fmt_objective(value: float | None, digits: int = 4) -> str:
    """An objective or a contribution: '≈ 0' when it is rounding noise (sums of float32 values
    that cancel exactly in exact arithmetic), else :func:`fmt_num`."""
    if value is None:
        return "–"
    return "\u2248 0" if abs(value) < NOISE else fmt_num(value, digits)


def fmt_signed(value: float, digits: int = 3) -> str:
    text = fmt_num(value, digits)
    return text if text.startswith(MINUS) or text == "0" else "+" + text


def fmt_pct(value: float | None, decimals: int = 1) -> str:
    """A fraction as a percentage: 0.4313 -> '43.1%'."""
    if value is None:
        return "–"
    return f"{100 * float(value):.{decimals}f}%"


def fmt_points(value: float, decimals: int = 1) -> str:
    """A difference of two fractions in percentage points."""
    return f"{100 * abs(float(value)):.{decimals}f}"


def fraction_text(value: float, max_denominator: int = 100_000, rel_tol: float = 1e-6) -> str:
    """A weight as a fraction ('1/2000') when it is one (to ``rel_tol``: logged weights are
    float32), else a number."""
    frac = Fraction(float(value)).limit_denominator(max_denominator)
    if frac.numerator != 0 and abs(float(frac) - value) <= rel_tol * abs(value):
        return f"{frac.numerator}/{frac.denominator}" if frac.denominator != 1 else str(frac.numerator)
    return fmt_num(value, 4)


def _table(head: Sequence[str], rows: Iterable[Sequence[str]], caption: str | None = None,
           numeric: Sequence[int] = ()) -> str:
    """A Material-styled table (no class on <table>, so Material styles and wraps it).

    ``head`` and ``rows`` hold HTML (callers escape what comes from a log or a spec).
    ``numeric``: column indices aligned right.
    """
    def cell(tag: str, i: int, html: str) -> str:
        align = ' style="text-align:right"' if i in numeric else ""
        return f"<{tag}{align}>{html}</{tag}>"

    cap = f'<caption style="text-align:left">{escape_text(caption)}</caption>' if caption else ""
    thead = "<tr>" + "".join(cell("th", i, h) for i, h in enumerate(head)) + "</tr>"
    body = "".join("<tr>" + "".join(cell("td", i, c) for i, c in enumerate(r)) + "</tr>" for r in rows)
    # A bare <table>: Material's script wraps it in its own horizontally scrolling container.
    return f"<table>{cap}<thead>{thead}</thead><tbody>{body}</tbody></table>"


def note_html(text: str, kind: str = "note", title: str | None = None) -> str:
    """A Material admonition with escaped text."""
    title = title or {"note": "Note", "warning": "Not in this build", "info": "About this figure"}.get(kind, "Note")
    return (f'<div class="admonition {escape_text(kind)} unipo-course-note"><p class="admonition-title">'
            f"{escape_text(title)}</p><p>{escape_text(text)}</p></div>")


def _math_inline(tex: str) -> str:
    return f'<span class="arithmatex">{escape_text(chr(92) + "(" + tex + chr(92) + ")")}</span>'


def _math_display(tex: str) -> str:
    return f'<div class="arithmatex">{escape_text(chr(92) + "[" + tex + chr(92) + "]")}</div>'


def _tex_num(value: float, digits: int = 4) -> str:
    """A number inside a formula: ASCII minus, no thousands separators, tiny ones as a x 10^{-k}."""
    x = float(value)
    if x != 0 and abs(x) < 1e-3:
        mantissa, exponent = f"{x:.{max(1, digits) - 1}e}".split("e")
        mantissa = mantissa.rstrip("0").rstrip(".") if "." in mantissa else mantissa
        head = "" if mantissa in ("1", "-1") else mantissa + r"\times "
        if mantissa == "-1":
            head = "-"
        return head + "10^{" + str(int(exponent)) + "}"
    return fmt_num(x, digits, minus="-").replace(",", "")


# ---------------------------------------------------------------------------
# Runs
# ---------------------------------------------------------------------------

def runs_directory(env: Any = None) -> Path:
    conf = getattr(env, "conf", None) or {}
    extra = conf.get("extra", {}) if hasattr(conf, "get") else {}
    return runs_dir((extra or {}).get("unipo_runs"))


def find_run(env: Any, run: str | Run) -> Run | None:
    """The loaded run, or None (missing, or failed to load)."""
    if isinstance(run, Run):
        return run if run.ok else None
    found = get_run(str(run), runs_directory(env))
    return found if found is not None and found.ok else None


def missing_run_text(run: str | Run) -> str:
    name = run.id if isinstance(run, Run) else str(run)
    return f"(no {name} run in this build)"


def _run_key(run: Run) -> tuple[str, int, int]:
    steps = run.path / "steps.jsonl"
    stat = steps.stat() if steps.exists() else None
    return str(run.path), (stat.st_mtime_ns if stat else 0), (stat.st_size if stat else 0)


@lru_cache(maxsize=32)
def _summary_cached(path: str, mtime: int, size: int) -> dict:
    return summarize(path, with_moments=False)


def run_summary(run: Run) -> dict:
    return _summary_cached(*_run_key(run))


def algorithm_name(algorithm_id: str, specs: dict[str, AlgorithmSpec] | None = None) -> str:
    specs = specs if specs is not None else _specs()
    spec = specs.get(algorithm_id)
    return spec.name if spec else algorithm_id


def run_label(run: Run, specs: dict[str, AlgorithmSpec] | None = None) -> str:
    """How a run is named in legends: its algorithm's name (and its id when that differs)."""
    name = algorithm_name(run.header.algorithm, specs)
    return name if run.id in (run.header.algorithm, name) else f"{name} ({run.id})"


def _specs() -> dict[str, AlgorithmSpec]:
    return load_specs()


def colour_for(algorithm_id: str, used: dict[str, str] | None = None) -> str:
    if algorithm_id in ALGORITHM_COLOURS:
        return ALGORITHM_COLOURS[algorithm_id]
    used = used if used is not None else {}
    if algorithm_id not in used:
        used[algorithm_id] = EXTRA_COLOURS[len(used) % len(EXTRA_COLOURS)]
    return used[algorithm_id]


#: The five algorithms the course is about; comparisons show them by default (and say when one
#: has no run in the build), then any other run in the build.
COURSE_ALGORITHMS = ("reinforce", "ppo", "grpo", "dapo", "dr_grpo")


def course_runs(env: Any, runs: Sequence[str] | None = None) -> tuple[list[Run], list[str]]:
    """The runs a comparison shows, and the names asked for that are not in the build.

    ``runs=None``: the run of each of :data:`COURSE_ALGORITHMS`, then every other loaded run
    (a hybrid, a reader's own algorithm), in directory order.
    """
    directory = runs_directory(env)
    names = list(COURSE_ALGORITHMS) if runs is None else [str(r) for r in runs]
    found: list[Run] = []
    missing: list[str] = []
    for name in names:
        run = find_run(env, name)
        if run is None:
            missing.append(name)
        elif all(run.path != r.path for r in found):
            found.append(run)
    if runs is None:
        for run in discover(directory):
            if run.ok and all(run.path != r.path for r in found):
                found.append(run)
    return found, missing


# ---------------------------------------------------------------------------
# run_fact
# ---------------------------------------------------------------------------

RUN_FACT_KEYS = {
    "steps": "gradient updates logged",
    "rollouts": "rollouts (sampling phases)",
    "reward_first": "mean training reward over the first 10% of updates",
    "reward_last": "mean training reward over the last 10% of updates",
    "eval_start_greedy": "held-out greedy accuracy before training (%)",
    "eval_end_greedy": "held-out greedy accuracy after training (%)",
    "eval_start_sampled": "held-out sampled accuracy before training (%)",
    "eval_end_sampled": "held-out sampled accuracy after training (%)",
    "eval_n": "number of held-out problems in the final evaluation",
    "wall_minutes": "wall-clock minutes of training",
    "parameters": "parameters of the policy",
    "seed": "random seed",
    "preset": "size preset",
    "lr": "policy learning rate",
    "group_size": "responses per prompt (G)",
    "prompts_per_step": "prompts per rollout",
    "epochs": "passes over each rollout",
    "minibatches": "minibatches (updates) per pass",
    "max_new_tokens": "generation budget in tokens",
    "temperature": "sampling temperature",
}
_PERCENT_KEYS = {"eval_start_greedy", "eval_end_greedy", "eval_start_sampled", "eval_end_sampled"}
_HYPER_KEYS = {"lr", "group_size", "prompts_per_step", "epochs", "minibatches", "max_new_tokens", "temperature"}


def run_fact_value(run: Run, key: str) -> Any:
    """The raw value of a fact (None when the log does not have it)."""
    if key not in RUN_FACT_KEYS:
        raise CourseError(f"run_fact: unknown key {key!r} (known: {', '.join(RUN_FACT_KEYS)})")
    header = run.header
    if key in _HYPER_KEYS:
        return header.hyperparameters.get(key)
    if key == "parameters":
        return header.model.parameters
    if key == "seed":
        return header.seed
    if key == "preset":
        return header.preset
    summary = run_summary(run)
    if key in ("steps", "rollouts"):
        return summary[key]
    if key == "reward_first":
        return summary["reward_mean_first_10pct"]
    if key == "reward_last":
        return summary["reward_mean_last_10pct"]
    if key == "wall_minutes":
        wall = summary["wall_time_s"]
        return None if wall is None else wall / 60.0
    if key == "eval_n":
        end = summary["eval_end"]
        return None if end is None else end["n"]
    phase, mode = key.split("_")[1:3]
    record = summary["eval_start" if phase == "start" else "eval_end"]
    return None if record is None else record.get(f"accuracy_{mode}")


def run_fact_text(run: Run | None, name: str, key: str, digits: int = 3) -> str:
    if key not in RUN_FACT_KEYS:
        raise CourseError(f"run_fact: unknown key {key!r} (known: {', '.join(RUN_FACT_KEYS)})")
    if run is None:
        return missing_run_text(name)
    value = run_fact_value(run, key)
    if value is None:
        return f"(not in the {run.id} log)"
    if key in _PERCENT_KEYS:
        return fmt_pct(value, max(0, digits - 2))
    if key in ("preset",):
        return str(value)
    if key == "seed":
        return str(value)
    if key == "lr":
        return f"{float(value):g}"
    return fmt_num(value, digits)


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


def run_card_html(run: Run | None, name: str) -> str:
    if run is None:
        return note_html(f"There is no {name} run in this build, so its settings and evaluation cannot be shown. "
                         "Train it (see the README) or point UNIPO_RUNS at a directory of runs, then rebuild.",
                         "warning")
    h = run.header
    hp = h.hyperparameters
    summary = run_summary(run)
    specs = _specs()

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
        ("Algorithm", escape_text(f"{algorithm_name(h.algorithm, specs)} (spec {h.algorithm})")),
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
    card = _table(["Setting", "Value"], rows, caption=f"Run card: {h.run_id}")
    evals = list(run.evals)
    if evals:
        eval_rows = [(escape_text(fmt_num(e.step)), escape_text(PHASE_WORDS.get(e.phase, e.phase)),
                      escape_text(fmt_num(e.n)), escape_text(fmt_pct(e.accuracy_greedy)),
                      escape_text(fmt_pct(e.accuracy_sampled)),
                      escape_text("–" if e.mean_length is None else fmt_num(e.mean_length, 3)))
                     for e in evals]
        n = evals[-1].n
        se = binomial_se(evals[-1].accuracy_greedy or 0.0, n)
        table = _table(["After update", "When", "Problems", "Greedy", "Sampled", "Mean length"], eval_rows,
                       caption="Held-out evaluation", numeric=(0, 2, 3, 4, 5))
        eval_html = table + (f"<p>Each accuracy is measured on problems the run never trained on; with "
                             f"{escape_text(fmt_num(n))} problems, one standard error of the final greedy "
                             f"accuracy is about {escape_text(fmt_points(se))} percentage points.</p>")
    else:
        eval_html = note_html("This log has no held-out evaluation: its training metrics alone cannot show whether "
                              "the model got better on unseen problems.")
    return f'<div class="unipo-run-card">{card}{eval_html}</div>'


# ---------------------------------------------------------------------------
# moment_fact
# ---------------------------------------------------------------------------

MOMENT_WORDS = {
    "all_correct_group": "all-correct group",
    "all_wrong_group": "all-wrong group",
    "clipped_high": "token clipped on the high side",
    "clipped_low": "token clipped on the low side",
    "longest_wrong": "longest wrong answer",
    "max_kl_step": "step of largest KL",
    "filtered_group": "group dropped by the sampling filter",
}
MOMENT_FIELDS = ("step", "group", "response", "token", "value")


def run_moment(run: Run, name: str) -> Moment | None:
    from .views.inspector import run_moments  # cached per run and token-file mtime

    return run_moments(run).get(name)


def moment_fact_text(run: Run | None, name: str, moment: str, field_name: str = "step") -> str:
    if moment not in MOMENT_NAMES:
        raise CourseError(f"moment_fact: unknown moment {moment!r} (known: {', '.join(MOMENT_NAMES)})")
    if field_name not in MOMENT_FIELDS:
        raise CourseError(f"moment_fact: unknown field {field_name!r} (known: {', '.join(MOMENT_FIELDS)})")
    if run is None:
        return missing_run_text(name)
    found = run_moment(run, moment)
    if found is None:
        return f"(the {run.id} run has no {MOMENT_WORDS.get(moment, moment)} in its logs)"
    value = getattr(found, field_name)
    if value is None:
        return f"(the {MOMENT_WORDS.get(moment, moment)} has no {field_name})"
    return fmt_num(value, 3) if field_name == "value" else str(value)


# ---------------------------------------------------------------------------
# family_tree
# ---------------------------------------------------------------------------

def change_phrase(spec: AlgorithmSpec, parent: AlgorithmSpec | None = None) -> str:
    """The one change, in a few words: the spec summary's head (before its colon) when it says
    something (three words or more), else what the slot diff against the predecessor adds,
    changes or drops, else the summary's first sentence."""
    from .views.diff import SLOT_LABELS, diff_algorithms

    summary = " ".join(spec.summary.split())
    head = summary.split(":", 1)[0].strip()
    if ":" in summary and len(head.split()) >= 3 and len(head) <= 80:
        return head
    if parent is not None:
        verbs = {"added": "+", "removed": "−", "modified": "~"}
        parts = [f"{verbs[d.status]} {SLOT_LABELS.get(d.slot, d.slot).lower()}"
                 for d in diff_algorithms(parent, spec) if d.status != "unchanged"]
        if parts:
            return f"{parent.name} " + ", ".join(parts)
    sentence = summary.split(". ", 1)[0].rstrip(".")
    return sentence if len(sentence) <= 90 else sentence[:87].rsplit(" ", 1)[0] + "…"


def tree_rows(specs: dict[str, AlgorithmSpec]) -> list[dict]:
    """One row per spec, in lineage order, with its place in the figure.

    ``column``: one per year, and a further one for each generation inside a year (a hybrid of
    two algorithms of the same year sits right of its parent). ``lane``: leaves get lanes in
    lineage order, a parent sits at the mean lane of its children.
    """
    from .views.diff import SLOT_LABELS, diff_algorithms

    ordered = lineage(specs)
    parent_of = {s.id: (s.predecessor if s.predecessor in specs else None) for s in ordered}
    children: dict[str | None, list[str]] = {}
    for spec in ordered:
        children.setdefault(parent_of[spec.id], []).append(spec.id)
    lanes: dict[str, float] = {}
    next_leaf = [0]

    def place(node: str) -> float:
        kids = children.get(node, [])
        if not kids:
            lanes[node] = float(next_leaf[0])
            next_leaf[0] += 1
        else:
            positions = [place(k) for k in kids]
            lanes[node] = sum(positions) / len(positions)
        return lanes[node]

    for root in children.get(None, []):
        place(root)
    # generation inside the year: 0, or one more than a parent of the same year
    within: dict[str, int] = {}
    for spec in ordered:
        parent = parent_of[spec.id]
        within[spec.id] = within[parent] + 1 if parent and specs[parent].year == spec.year else 0
    columns = sorted({(s.year, within[s.id]) for s in ordered})
    column_of = {key: i for i, key in enumerate(columns)}
    rows = []
    for spec in ordered:
        parent = specs.get(parent_of[spec.id]) if parent_of[spec.id] else None
        changed = []
        if parent is not None:
            changed = [f"{SLOT_LABELS.get(d.slot, d.slot).lower()} ({d.status})"
                       for d in diff_algorithms(parent, spec) if d.status != "unchanged"]
        rows.append({
            "id": spec.id,
            "name": spec.name,
            "full_name": spec.full_name,
            "year": spec.year,
            "arxiv": spec.paper.arxiv,
            "paper": spec.paper.title,
            "authors": spec.paper.authors,
            "predecessor": parent.id if parent is not None else None,
            "predecessor_name": parent.name if parent is not None else None,
            "change": change_phrase(spec, parent),
            "slots_changed": changed,
            "lane": lanes.get(spec.id, 0.0),
            "column": column_of[(spec.year, within[spec.id])],
        })
    return rows


def family_tree_spec(rows: list[dict]) -> dict:
    import altair as alt

    colour_map: dict[str, str] = {}
    columns: dict[int, str] = {}
    for r in rows:
        columns.setdefault(r["column"], str(r["year"]))
    n_columns = max(columns) + 1 if columns else 1
    nodes = []
    by_row = {r["id"]: r for r in rows}
    for r in rows:
        parent = by_row.get(r["predecessor"]) if r["predecessor"] else None
        if parent is not None and r["arxiv"] and r["arxiv"] == parent["arxiv"]:
            source = "no paper of its own"  # a hybrid citing its parent's paper
        else:
            source = f"arXiv {r['arxiv']}" if r["arxiv"] else r["authors"]
        nodes.append({
            "id": r["id"], "name": r["name"], "column": r["column"], "lane": r["lane"],
            "meta": f"{r['year']} · {source}",
            "change": textwrap.fill(r["change"], 20),
            "colour": colour_for(r["id"], colour_map),
            "tip_change": r["change"],
        })
    by_id = {n["id"]: n for n in nodes}
    # Elbow connectors (right, down or up between the columns, right), so no line crosses a label.
    edges = []
    for r in rows:
        if r["predecessor"] not in by_id:
            continue
        a, b = by_id[r["predecessor"]], by_id[r["id"]]
        mid = (a["column"] + b["column"]) / 2 if b["column"] > a["column"] else a["column"]
        for (c1, l1), (c2, l2) in (((a["column"], a["lane"]), (mid, a["lane"])), ((mid, a["lane"]), (mid, b["lane"])),
                                   ((mid, b["lane"]), (b["column"], b["lane"]))):
            if (c1, l1) != (c2, l2):
                edges.append({"column": c1, "lane": l1, "column2": c2, "lane2": l2})
    max_lane = max((n["lane"] for n in nodes), default=0.0)
    label_expr = " : ".join(f"datum.value == {c} ? '{y}'" for c, y in sorted(columns.items())) + " : ''"
    x = alt.X("column:Q", scale=alt.Scale(domain=[-0.5, n_columns - 0.5], nice=False, zero=False),
              axis=alt.Axis(title=None, orient="top", values=sorted(columns), labelExpr=label_expr, grid=False,
                            domain=False, ticks=False, labelFontSize=13, labelFontWeight="bold", labelPadding=6))
    # lane 0 at the top; the room below the last lane is for its labels
    y = alt.Y("lane:Q", scale=alt.Scale(domain=[-0.25, max_lane + 0.95], nice=False, zero=False, reverse=True),
              axis=None)
    base_nodes = alt.Chart(alt.Data(values=nodes))
    edge_layer = alt.Chart(alt.Data(values=edges)).mark_rule(strokeWidth=2, opacity=0.5, color="#8c8c8c",
                                                             strokeCap="round").encode(
        x=x, y=y, x2="column2:Q", y2="lane2:Q")
    tooltip = [alt.Tooltip("name:N", title="Algorithm"), alt.Tooltip("meta:N", title="Year and paper"),
               alt.Tooltip("tip_change:N", title="What it changed")]
    dots = base_nodes.mark_circle(size=240, opacity=1, stroke="white", strokeWidth=1.5).encode(
        x=x, y=y, color=alt.Color("colour:N", scale=None), tooltip=tooltip)
    names = base_nodes.mark_text(dy=14, fontWeight="bold", fontSize=13, baseline="top").encode(
        x=x, y=y, text="name:N", tooltip=tooltip)
    meta = base_nodes.mark_text(dy=31, fontSize=10.5, baseline="top", opacity=0.8).encode(x=x, y=y, text="meta:N")
    change = base_nodes.mark_text(dy=46, fontSize=11, baseline="top", lineBreak="\n", lineHeight=13.5).encode(
        x=x, y=y, text="change:N")
    chart = alt.layer(edge_layer, dots, names, meta, change).properties(
        width=min(660, 132 * n_columns), height=int(118 * (max_lane + 1.2)),
    ).configure_view(stroke=None)
    spec = chart.to_dict()
    spec["description"] = "The lineage of the algorithms: each node is an algorithm, linked to its predecessor."
    return spec


def family_tree_table(rows: list[dict]) -> str:
    out = []
    for r in rows:
        paper = escape_text(r["paper"])
        if r["arxiv"]:
            paper = (f'<a href="https://arxiv.org/abs/{escape_text(r["arxiv"])}">{paper}</a> '
                     f"(arXiv {escape_text(r['arxiv'])})")
        parent = escape_text(r["predecessor_name"] or "—")
        changed = escape_text(", ".join(r["slots_changed"]) or "— (the starting point)")
        out.append((f"<strong>{escape_text(r['name'])}</strong><br>{escape_text(r['full_name'])}",
                    escape_text(r["year"]), paper, parent, escape_text(r["change"]), changed))
    return _table(["Algorithm", "Year", "Paper", "Builds on", "The change, in a phrase", "Slots that differ from "
                   "its predecessor"], out, caption="The family tree as a table", numeric=(1,))


# ---------------------------------------------------------------------------
# Metric series of runs (smoothed, downsampled)
# ---------------------------------------------------------------------------

#: Points kept per run and metric after LTTB.
POINTS_PER_LINE = 150
#: Moving-average window as a fraction of the run's points.
SMOOTH_FRACTION = 0.05


def moving_average(values: np.ndarray, window: int) -> np.ndarray:
    """Centred moving average; near the ends the window shrinks to the points there are."""
    values = np.asarray(values, dtype=np.float64)
    if window <= 1 or len(values) < 3:
        return values.copy()
    half = window // 2
    csum = np.concatenate([[0.0], np.cumsum(values)])
    idx = np.arange(len(values))
    lo = np.clip(idx - half, 0, len(values))
    hi = np.clip(idx + half + 1, 0, len(values))
    return (csum[hi] - csum[lo]) / (hi - lo)


@dataclass
class Series:
    steps: np.ndarray  # the update of each point (a rollout-level point: its rollout's first update)
    values: np.ndarray
    fraction: np.ndarray  # position in the run, 0 to 1: updates done, or rollouts done for rollout-level metrics
    window: int  # points averaged (rollouts for rollout metrics, updates otherwise)
    outlier: tuple[int, float] | None = None  # (update, value) of a raw point far outside the clipped range


@lru_cache(maxsize=16)
def _raw_series(path: str, mtime: int, size: int, names: tuple[str, ...]) -> tuple[dict, int]:
    """(metric -> (steps, values, fractions), last step). Rollout-level metrics keep one point per
    rollout, placed at rollout / last rollout; the others at step / last step."""
    steps: dict[str, list[int]] = {n: [] for n in names}
    values: dict[str, list[float]] = {n: [] for n in names}
    positions: dict[str, list[int]] = {n: [] for n in names}
    last_step = last_rollout = 0
    for record in runlog.iter_steps(Path(path)):
        last_step, last_rollout = record.step, record.rollout
        for n in names:
            v = record.metrics.get(n)
            if v is None:
                continue
            rollout_level = metric_info(n).scope == "rollout"
            if rollout_level and not record.first_in_rollout:
                continue
            steps[n].append(record.step)
            values[n].append(v)
            positions[n].append(record.rollout if rollout_level else record.step)
    out = {}
    for n in names:
        span = max(1, last_rollout if metric_info(n).scope == "rollout" else last_step)
        out[n] = (np.asarray(steps[n], dtype=np.int64), np.asarray(values[n], dtype=np.float64),
                  np.asarray(positions[n], dtype=np.float64) / span)
    return out, last_step


def run_series(run: Run, names: Sequence[str], points: int = POINTS_PER_LINE,
               smooth: float = SMOOTH_FRACTION) -> dict[str, Series | None]:
    """Each metric smoothed (centred moving average over ``smooth`` of its points) and reduced to
    at most ``points`` points with LTTB; None for a metric the run does not log."""
    raw, _ = _raw_series(*_run_key(run), tuple(names))
    out: dict[str, Series | None] = {}
    for n in names:
        x, y, frac = raw[n]
        if len(x) == 0:
            out[n] = None
            continue
        window = max(1, int(round(len(y) * smooth)))
        # Average values clipped to their 0.5th-99.5th percentiles, so one extreme update shows as
        # itself (reported as an outlier) rather than as a plateau as wide as the window.
        lo, hi = np.quantile(y, [0.005, 0.995]) if len(y) >= 50 else (y.min(), y.max())
        outlier = None
        span = hi - lo
        far = np.abs(y - np.clip(y, lo, hi)) > max(span, 1e-12)
        if far.any():
            i = int(np.argmax(np.abs(y - np.clip(y, lo, hi))))
            outlier = (int(x[i]), float(y[i]))
        ys = moving_average(np.clip(y, lo, hi), window)
        if len(x) > points:
            keep = lttb_indices(x, ys, points)
            x, ys, frac = x[keep], ys[keep], frac[keep]
        out[n] = Series(np.asarray(x), np.asarray(ys), np.asarray(frac), window, outlier)
    return out


def _round(value: float, digits: int = 4) -> float:
    if value == 0 or not math.isfinite(value):
        return 0.0
    return float(f"{value:.{digits}g}")


# ---------------------------------------------------------------------------
# dynamics_compare
# ---------------------------------------------------------------------------

def legend_html(entries: Sequence[tuple[str, str]], dashed: Sequence[tuple[str, list[int]]] = ()) -> str:
    """An HTML legend (swatch + name) shared by several small charts."""
    items = []
    for label, colour in entries:
        items.append(f'<span style="display:inline-flex;align-items:center;gap:.35em;margin-right:1.1em;white-space:nowrap">'
                     f'<span aria-hidden="true" style="display:inline-block;width:1.6em;height:.3em;border-radius:.15em;'
                     f'background:{escape_text(colour)}"></span>{escape_text(label)}</span>')
    for label, dash in dashed:
        style = "solid" if dash[1] == 0 else "dashed"
        items.append(f'<span style="display:inline-flex;align-items:center;gap:.35em;margin-right:1.1em;white-space:nowrap">'
                     f'<span aria-hidden="true" style="display:inline-block;width:1.6em;height:0;border-top:.2em '
                     f'{style} currentColor"></span>{escape_text(label)}</span>')
    return f'<p class="unipo-course-legend" style="margin:.4em 0">{"".join(items)}</p>'


def _x_encoding(x: str, title: str | None = None):
    import altair as alt

    if x == "fraction":
        return alt.X("x:Q", title=title or "fraction of training", scale=alt.Scale(domain=[0, 1], nice=False),
                     axis=alt.Axis(format="%", tickCount=5))
    return alt.X("x:Q", title=title or "update (step)", axis=alt.Axis(tickCount=5, format="~s"))


def robust_domain(values: Sequence[float]) -> tuple[float, float] | None:
    """A y range that a lone spike does not flatten: the 1st to 99th percentile, padded, when the
    extremes lie far outside it; None (the scale's own range) otherwise."""
    from .downsample import quantile_bounds

    y = np.asarray(values, dtype=np.float64)
    if len(y) < 20:
        return None
    lo, hi = quantile_bounds(y, 0.01, 0.99)
    span = hi - lo
    if span <= 0 or (y.max() <= hi + 0.5 * span and y.min() >= lo - 0.5 * span):
        return None
    pad = 0.08 * span
    return float(lo - pad), float(hi + pad)


def metric_panel_spec(metric: str, rows: list[dict], domain: list[str], colours: list[str], x: str,
                      y_domain: tuple[float, float] | None = None) -> dict:
    import altair as alt

    info = metric_info(metric)
    y_title = info.label
    scale = alt.Scale(zero=False) if y_domain is None else alt.Scale(zero=False, domain=list(y_domain), nice=False)
    chart = alt.Chart(alt.Data(values=rows)).mark_line(strokeWidth=2, interpolate="linear", clip=True).encode(
        x=_x_encoding(x),
        y=alt.Y("y:Q", title=y_title, scale=scale, axis=alt.Axis(tickCount=4)),
        color=alt.Color("algorithm:N", scale=alt.Scale(domain=domain, range=colours), legend=None),
        detail="run:N",
        tooltip=[alt.Tooltip("algorithm:N", title="Run"), alt.Tooltip("step:Q", title="Update"),
                 alt.Tooltip("y:Q", title=y_title, format=".4~g")],
    ).properties(width="container", height=170, autosize=alt.AutoSizeParams(type="fit-x", contains="padding"))
    spec = chart.to_dict()
    spec["description"] = f"{info.label} over training, one line per run."
    return spec


def dynamics_compare_html(env: Any, metrics: Sequence[str] | str | None, runs: Sequence[str] | None,
                          x: str = "fraction") -> str:
    from . import macros as unipo_macros
    from .render import vega_embed

    if metrics is None:
        metrics = DEFAULT_DYNAMICS
    if isinstance(metrics, str):
        metrics = [metrics]
    for m in metrics:
        if m not in METRICS:
            raise CourseError(f"dynamics_compare: unknown metric {m!r} (known: {', '.join(METRICS)})")
    if x not in ("fraction", "step"):
        raise CourseError(f"dynamics_compare: x must be 'fraction' or 'step', not {x!r}")
    found, missing = course_runs(env, runs)
    if not found:
        return note_html("No runs are in this build, so there is nothing to compare. Train the runs (see the README) "
                         "or point UNIPO_RUNS at a directory of runs, then rebuild.", "warning")
    specs = _specs()
    extra_colours: dict[str, str] = {}
    labels = [run_label(r, specs) for r in found]
    colours = [colour_for(r.header.algorithm, extra_colours) for r in found]
    series = {r.id: run_series(r, list(metrics)) for r in found}
    panels = []
    for m in metrics:
        rows, absent, outliers = [], [], []
        for run, label in zip(found, labels):
            s = series[run.id][m]
            if s is None:
                reason = ""
                cfg = run.config
                if m == "kl/mean" and cfg is not None and cfg.kind("kl") == "none":
                    reason = " (no KL term, no reference model)"
                elif m == "clip/frac_high" or m == "clip/frac_low":
                    if cfg is not None and cfg.kind("clip") == "none":
                        reason = " (no clipping)"
                absent.append(label + reason)
                continue
            if s.outlier is not None:
                outliers.append((label, *s.outlier))
            for step, value, frac in zip(s.steps.tolist(), s.values.tolist(), s.fraction.tolist()):
                xv = frac if x == "fraction" else step
                rows.append({"run": run.id, "algorithm": label, "step": int(step), "x": _round(xv, 5),
                             "y": _round(value)})
        info = metric_info(m)
        title = (f'<p style="margin:0 0 .2em;font-weight:600">{escape_text(info.label)} '
                 f'<code style="font-weight:400">{escape_text(m)}</code></p>')
        clipped_note = ""
        if rows:
            y_domain = robust_domain([r["y"] for r in rows])
            spec = metric_panel_spec(m, rows, labels, colours, x, y_domain)
            chart = vega_embed(spec, chart_id=unipo_macros.chart_id(env, spec))
            if y_domain is not None:
                peak = max(rows, key=lambda r: abs(r["y"]))
                clipped_note = (f'<p style="margin:.2em 0 0;font-size:.85em;opacity:.85">The axis spans the 1st to '
                                f"99th percentile; a peak of {escape_text(fmt_num(peak['y'], 3))} "
                                f"({escape_text(peak['algorithm'])}, update {escape_text(fmt_num(peak['step']))}) "
                                "runs off the chart.</p>")
            if outliers:
                label, step, value = max(outliers, key=lambda o: abs(o[2]))
                clipped_note += (f'<p style="margin:.2em 0 0;font-size:.85em;opacity:.85">Single updates reach '
                                 f"beyond the lines, which average values clipped to their 0.5th to 99.5th "
                                 f"percentile: the most extreme is {escape_text(label)}'s "
                                 f"{escape_text(fmt_num(value, 3))} at update {escape_text(fmt_num(step))}.</p>")
        else:
            chart = '<p style="margin:.5em 0;opacity:.8">No run in this build logs this metric.</p>'
        note = ""
        if absent and rows:
            note = (f'<p style="margin:.2em 0 0;font-size:.85em;opacity:.85">Not logged by: '
                    f"{escape_text(', '.join(absent))}.</p>")
        elif absent:
            note = (f'<p style="margin:.2em 0 0;font-size:.85em;opacity:.85">Runs: '
                    f"{escape_text(', '.join(absent))}.</p>")
        desc = escape_text(info.description)
        panels.append(f'<div class="unipo-course-panel" style="min-width:0">{title}{chart}{clipped_note}{note}'
                      f'<p style="margin:.2em 0 0;font-size:.8em;opacity:.75">{desc}</p></div>')
    legend = legend_html(list(zip(labels, colours)))
    smooth = (f"Each line is a moving average over {fmt_pct(SMOOTH_FRACTION, 0)} of its run's points (rollout-level "
              "metrics: one point per rollout; values clipped to their 0.5th to 99.5th percentile first), "
              f"downsampled to at most {POINTS_PER_LINE} points with LTTB; hover a line for its values.")
    x_note = ("The horizontal axis is the fraction of each run's updates, so runs of different lengths line up."
              if x == "fraction" else "The horizontal axis is the update (gradient step).")
    missing_note = ""
    if missing:
        missing_note = note_html("Not in this build: " + ", ".join(
            algorithm_name(m, specs) if isinstance(m, str) else str(m) for m in missing)
            + ". Their lines are missing from every panel.", "warning")
    grid = ('<div class="unipo-course-grid" style="display:grid;grid-template-columns:repeat(auto-fit,minmax(15rem,1fr));'
            'gap:1.2rem 1.6rem">' + "".join(panels) + "</div>")
    return (f'<figure class="unipo-figure unipo-course-dynamics">{legend}{grid}'
            f"<figcaption>{escape_text(smooth + ' ' + x_note)}</figcaption></figure>{missing_note}")


# ---------------------------------------------------------------------------
# length_by_correctness and length_verdict
# ---------------------------------------------------------------------------

LENGTH_METRICS = ("length/correct", "length/incorrect")


def length_by_correctness_html(env: Any, runs: Sequence[str] | None) -> str:
    import altair as alt

    from . import macros as unipo_macros
    from .render import vega_embed

    runs = list(runs) if runs is not None else ["grpo", "dr_grpo"]
    found, missing = course_runs(env, runs)
    if not found:
        return note_html("None of the runs " + ", ".join(runs) + " is in this build, so the lengths of right and "
                         "wrong answers cannot be shown.", "warning")
    specs = _specs()
    extra_colours: dict[str, str] = {}
    rows, labels, colours, absent = [], [], [], []
    for run in found:
        label = run_label(run, specs)
        labels.append(label)
        colours.append(colour_for(run.header.algorithm, extra_colours))
        series = run_series(run, list(LENGTH_METRICS))
        for metric, kind in zip(LENGTH_METRICS, ("correct", "wrong")):
            s = series[metric]
            if s is None:
                absent.append(f"{label} ({kind} answers)")
                continue
            for step, value, frac in zip(s.steps.tolist(), s.values.tolist(), s.fraction.tolist()):
                rows.append({"run": run.id, "algorithm": label, "answers": f"{kind} answers",
                             "line": f"{label}: {kind}", "step": int(step),
                             "x": _round(frac, 5), "y": _round(value)})
    if not rows:
        return note_html("The runs in this build do not log the lengths of correct and wrong answers "
                         "(length/correct, length/incorrect).", "warning")
    chart = alt.Chart(alt.Data(values=rows)).mark_line(strokeWidth=2.2).encode(
        x=_x_encoding("fraction"),
        y=alt.Y("y:Q", title="mean length (tokens)", scale=alt.Scale(zero=False)),
        color=alt.Color("algorithm:N", scale=alt.Scale(domain=labels, range=colours), legend=None),
        strokeDash=alt.StrokeDash("answers:N", scale=alt.Scale(domain=["correct answers", "wrong answers"],
                                                               range=[DASHES["correct"], DASHES["wrong"]]),
                                  legend=None),
        detail="line:N",
        tooltip=[alt.Tooltip("line:N", title="Line"), alt.Tooltip("step:Q", title="Update"),
                 alt.Tooltip("y:Q", title="Mean length", format=".1f")],
    ).properties(width="container", height=260, autosize=alt.AutoSizeParams(type="fit-x", contains="padding"))
    spec = chart.to_dict()
    spec["description"] = "Mean length of correct and of wrong answers over training, one colour per run."
    caption = ("Mean length in tokens of the correct (solid) and the wrong (dashed) answers of each rollout, as a "
               f"moving average over {fmt_pct(SMOOTH_FRACTION, 0)} of the rollouts; the horizontal axis is the fraction "
               "of each run's updates.")
    legend = legend_html(list(zip(labels, colours)), [("correct answers", DASHES["correct"]),
                                                       ("wrong answers", DASHES["wrong"])])
    html = legend + vega_embed(spec, chart_id=unipo_macros.chart_id(env, spec), caption=caption)
    notes = []
    if missing:
        notes.append(note_html("Not in this build: " + ", ".join(algorithm_name(m, specs) for m in missing if isinstance(m, str))
                               + ".", "warning"))
    if absent:
        notes.append(note_html("No data (no such answers were sampled): " + ", ".join(absent) + "."))
    return html + "".join(notes)


def length_verdict_text(run: Run | None, name: str) -> str:
    """Mean lengths of wrong and correct answers at the start and end of a run (first and last
    10% of rollouts, unsmoothed), with the direction of the gap."""
    if run is None:
        return f"There is no {name} run in this build, so its answer lengths cannot be described."
    raw, _ = _raw_series(*_run_key(run), LENGTH_METRICS)
    raw = {k: (v[0], v[1]) for k, v in raw.items()}
    label = algorithm_name(run.header.algorithm)

    def edges(metric: str):
        _, y = raw[metric]
        if len(y) == 0:
            return None
        k = max(1, int(round(len(y) * 0.1)))
        return float(np.mean(y[:k])), float(np.mean(y[-k:]))

    right, wrong = edges("length/correct"), edges("length/incorrect")
    if right is None or wrong is None:
        return (f"The {run.id} log does not have lengths of both correct and wrong answers, so their gap cannot "
                "be described.")
    gap_start, gap_end = wrong[0] - right[0], wrong[1] - right[1]

    def gap_words(gap: float) -> str:
        if abs(gap) < 0.05:
            return "about as long as"
        return f"{fmt_num(abs(gap), 2)} tokens {'longer' if gap > 0 else 'shorter'} than"

    trend = "widened" if abs(gap_end) > abs(gap_start) + 0.05 else (
        "narrowed" if abs(gap_end) < abs(gap_start) - 0.05 else "stayed about the same")
    return (f"In the first tenth of the {label} run, wrong answers were on average {gap_words(gap_start)} correct "
            f"ones ({fmt_num(wrong[0], 3)} vs {fmt_num(right[0], 3)} tokens); in the last tenth they were "
            f"{gap_words(gap_end)} correct ones ({fmt_num(wrong[1], 3)} vs {fmt_num(right[1], 3)} tokens): the gap "
            f"{trend}.")


# ---------------------------------------------------------------------------
# weight_shares
# ---------------------------------------------------------------------------

AGGREGATION_LABELS = {
    "seq_mean_token_mean": "mean per response, then over responses",
    "token_mean": "mean over every token of the batch",
    "constant_normalizer": "sum divided by a constant",
    "seq_mean_token_sum": "sum per response, then mean over responses",
}
AGGREGATION_TOKEN_WEIGHT = {
    "seq_mean_token_mean": r"\tfrac{1}{N\,|o_i|}",
    "token_mean": r"\tfrac{1}{\sum_j |o_j|}",
    "constant_normalizer": r"\tfrac{1}{N\,L}",
    "seq_mean_token_sum": r"\tfrac{1}{N}",
}


def users_of_aggregation(specs: dict[str, AlgorithmSpec]) -> dict[str, list[str]]:
    users: dict[str, list[str]] = {}
    for spec in lineage(specs):
        users.setdefault(spec.components["aggregation"].kind, []).append(spec.name)
    return users


def weight_share_rows(lengths: Sequence[int], normalizer: int | None = None) -> list[dict]:
    lengths = [int(n) for n in lengths]
    if len(lengths) < 1 or min(lengths) < 1:
        raise CourseError(f"weight_shares: lengths must be positive integers, got {lengths!r}")
    L = int(normalizer) if normalizer else max(lengths)
    out = []
    mask = (np.arange(max(lengths))[None, :] < np.asarray(lengths)[:, None]).astype(np.float64)
    for kind in components.AGGREGATIONS:
        norm = L if kind == "constant_normalizer" else None
        shares = components.response_weight_shares(kind, lengths, norm)
        weights = components.aggregation_weights(kind, mask, norm)
        per_token = [float(weights[i, 0]) for i in range(len(lengths))]
        total = float(weights.sum())
        out.append({"kind": kind, "shares": [float(s) for s in shares], "per_token": per_token, "total": total,
                    "normalizer": L})
    return out


def weight_shares_html(lengths: Sequence[int], normalizer: int | None = None) -> str:
    rows = weight_share_rows(lengths, normalizer)
    users = users_of_aggregation(_specs())
    lengths = [int(n) for n in lengths]
    labels = [f"{fmt_num(n)} tokens" for n in lengths]
    body = []
    for r in rows:
        kind = r["kind"]
        used = ", ".join(users.get(kind, [])) or "no algorithm here"
        name = (f"<code>{escape_text(kind).replace('_', '_<wbr>')}</code> {_math_inline(AGGREGATION_TOKEN_WEIGHT[kind])}"
                f"<br><small>{escape_text(used)}</small>")
        decimals = 1 if min(r["shares"]) >= 0.01 else 2
        shares = "<br>".join(f"{escape_text(label)}: {escape_text(fmt_pct(x, decimals))}"
                             for label, x in zip(labels, r["shares"]))
        per_token = "<br>".join(f"{escape_text(label)}: {escape_text(fraction_text(w))}"
                                for label, w in zip(labels, r["per_token"]))
        body.append([name, shares, per_token, escape_text(fraction_text(r["total"]))])
    caption = (f"Answers of {' and '.join(fmt_num(x) for x in lengths)} tokens in one batch (N = {len(lengths)}); "
               f"the constant normaliser uses L = {fmt_num(rows[0]['normalizer'])}.")
    return _table(["Aggregation and weight of a token", "Share of the total weight", "Weight of one token",
                   "Sum of all weights"], body, caption=caption, numeric=(3,))


# ---------------------------------------------------------------------------
# slot_matrix and eval_compare
# ---------------------------------------------------------------------------

def _kind_text(spec: AlgorithmSpec, slot: str) -> str:
    kind = spec.components[slot].kind
    params = {k: v for k, v in spec.params(slot).items()
              if k not in ("max_rounds", "value_clip", "cache_fraction", "cache_length", "eps") or slot == "clip"}
    shown = []
    for k, v in params.items():
        if v is None:
            continue
        shown.append(f"{k} {v:g}" if isinstance(v, float) else f"{k} {v}")
    return kind.replace("_", " ") + (f" ({', '.join(shown)})" if shown else "")


def slot_matrix_html() -> str:
    from .views.diff import SLOT_LABELS

    specs = lineage(_specs())
    head = ["Slot"] + [escape_text(s.name) for s in specs]
    rows = []
    for slot in SLOTS:
        cells = [f"<strong>{escape_text(SLOT_LABELS.get(slot, slot))}</strong>"]
        for s in specs:
            text = _kind_text(s, slot)
            cell = escape_text(text)
            cells.append(f'<span style="opacity:.6">{cell}</span>' if s.components[slot].kind == "none" else cell)
        rows.append(cells)
    return _table(head, rows, caption="Each algorithm's component in each slot (dimmed: the slot is empty)")


def eval_compare_html(env: Any, runs: Sequence[str] | None = None) -> str:
    found, missing = course_runs(env, runs)
    specs = _specs()
    rows = []
    for run in found:
        g, s = eval_change(run, "greedy"), eval_change(run, "sampled")
        summary = run_summary(run)
        change = "–"
        if g:
            change = ("+" if g.change >= 0 else MINUS) + fmt_points(g.change) + " ± " + fmt_points(2 * g.se)
        rows.append([
            escape_text(run_label(run, specs)),
            escape_text(fmt_num(summary["steps"])),
            escape_text(f"{fmt_pct(g.start)} → {fmt_pct(g.end)}" if g else "–"),
            escape_text(change),
            escape_text({"up": "rose", "down": "fell", "flat": "no clear change"}[g.direction] if g else "not evaluated"),
            escape_text(f"{fmt_pct(s.start)} → {fmt_pct(s.end)}" if s else "–"),
        ])
    for name in missing:
        rows.append([escape_text(algorithm_name(name, specs)), "–", "–", "–", "not in this build", "–"])
    if not rows:
        return note_html("No runs are in this build.", "warning")
    return _table(["Run", "Updates", "Greedy accuracy", "Change ± 2 SE (points)", "Verdict", "Sampled accuracy"],
                  rows, caption="Held-out accuracy of every run, before → after training", numeric=(1, 2, 3, 5))


def hybrid_runs(env: Any) -> list[Run]:
    """Runs that combine DAPO's dynamic sampling with Dr. GRPO's constant normaliser."""
    out = []
    for run in discover(runs_directory(env)):
        cfg = run.config if run.ok else None
        if cfg is None:
            continue
        if cfg.kind("filter") == "dynamic_sampling" and cfg.kind("aggregation") == "constant_normalizer":
            out.append(run)
    return out


def hybrid_status_text(env: Any) -> str:
    found = hybrid_runs(env)
    if not found:
        return ("No run of this hybrid is part of this build: no run in it pairs the dynamic-sampling filter "
                "with the constant normaliser, so the case made for it here is an argument from the objectives, "
                "not a measured result.")
    names = ", ".join(f"{r.id} ({algorithm_name(r.header.algorithm)})" for r in found)
    return (f"This build has {'a run' if len(found) == 1 else 'runs'} of such a hybrid: {names}. Its figures are "
            "on the pages that show every run, such as the training-dynamics chapter.")


# ---------------------------------------------------------------------------
# The anatomy of one update
# ---------------------------------------------------------------------------

ANATOMY_BEATS = ("summary", "prompts", "responses", "rewards", "advantages", "tokens", "token_objective",
                 "aggregation", "update")


def _group_kind(n_correct: int | None, size: int) -> str:
    if n_correct is None:
        return "unknown"
    if n_correct == size:
        return "all correct"
    if n_correct == 0:
        return "all wrong"
    return "mixed"


@dataclass
class AnatomyPick:
    run: Run
    step: int
    detail: StepDetail
    metrics: dict
    first_in_rollout: bool
    mixed: PromptGroup | None
    all_correct: PromptGroup | None
    later_step: int | None = None
    later_group: PromptGroup | None = None
    updates_between: int | None = None
    reason: str = ""
    requested: int | None = None


def _raw_groups(raw: dict) -> tuple[list[int], list[int]]:
    """(mixed group indices, all-correct group indices) of a raw token file, trained groups only."""
    mixed, all_correct = [], []
    for p in raw.get("prompts", []):
        if p.get("filtered"):
            continue
        responses = p.get("responses", [])
        if not responses or any(r.get("tokens") is None for r in responses):
            continue
        flags = [bool(r.get("correct")) for r in responses]
        if all(flags):
            all_correct.append(p["index"])
        elif any(flags):
            mixed.append(p["index"])
    return mixed, all_correct


def _detailed_later(run_dir: Path, steps_info: dict[int, tuple[int, bool]], token_steps: list[int], step: int,
                    group_index: int) -> int | None:
    """The group's next update in the same rollout, if the log details its tokens there.

    None when the rollout ends first, or when the group's next update is logged without its
    tokens (then a later detailed appearance would mix the effect of two of its own updates).
    """
    import json

    rollout = steps_info.get(step, (None, False))[0]
    for later in token_steps:
        if later <= step:
            continue
        if steps_info.get(later, (None, False))[0] != rollout:
            return None
        raw = json.loads((run_dir / "tokens" / runlog.token_file_name(later)).read_text(encoding="utf-8"))
        if not any(g.get("index") == group_index for g in raw.get("groups", [])):
            continue  # an update on other groups
        for p in raw.get("prompts", []):
            if p.get("index") == group_index and not p.get("filtered") and all(
                    r.get("tokens") is not None for r in p.get("responses", [])):
                return later
        return None
    return None


@lru_cache(maxsize=8)
def _choose_step(path: str, tokens_mtime: float, steps_mtime: int, requested: int | None) -> tuple[int | None, int | None, int | None, int | None, str]:
    """(step, mixed group, all-correct group, later step, reason) for the anatomy page.

    Preference: the first token-logged update that opens a rollout (so the ratios are still 1)
    with a mixed group and an all-correct group, where the mixed group's tokens are logged again
    later in the same rollout; then the first update with a mixed and an all-correct group;
    then the first with a mixed group; then the first logged update.
    """
    import json

    run_dir = Path(path)
    token_steps = runlog.token_steps(run_dir)
    if not token_steps:
        return None, None, None, None, "no token-level detail"
    steps_info = {r.step: (r.rollout, r.first_in_rollout) for r in runlog.iter_steps(run_dir)}
    if requested is not None:
        candidates = [requested] if requested in token_steps else []
        if not candidates:
            return None, None, None, None, f"step {requested} has no token-level detail"
    else:
        candidates = token_steps
    fallback_both = fallback_mixed = None
    for step in candidates:
        raw = json.loads((run_dir / "tokens" / runlog.token_file_name(step)).read_text(encoding="utf-8"))
        mixed, all_correct = _raw_groups(raw)
        if mixed and all_correct and steps_info.get(step, (0, False))[1]:
            for g in mixed:
                later = _detailed_later(run_dir, steps_info, token_steps, step, g)
                if later is not None:
                    return step, g, all_correct[0], later, "opens a rollout; mixed and all-correct groups; followed later"
            if fallback_both is None:
                fallback_both = (step, mixed[0], all_correct[0], None, "opens a rollout; mixed and all-correct groups")
        elif mixed and all_correct and fallback_both is None:
            later = _detailed_later(run_dir, steps_info, token_steps, step, mixed[0])
            fallback_both = (step, mixed[0], all_correct[0], later, "mixed and all-correct groups")
        elif mixed and fallback_mixed is None:
            later = _detailed_later(run_dir, steps_info, token_steps, step, mixed[0])
            fallback_mixed = (step, mixed[0], None, later, "a mixed group only")
        if requested is not None:
            break
    if fallback_both:
        return fallback_both
    if fallback_mixed:
        return fallback_mixed
    return candidates[0], None, None, None, "no mixed group in any logged update"


def anatomy_pick(run: Run, step: int | None = None) -> AnatomyPick | None:
    """The update the anatomy page walks through (see :func:`_choose_step`), read in full."""
    chosen, mixed_i, correct_i, later, reason = _choose_step(str(run.path), runlog.tokens_mtime(run.path), _run_key(run)[1], step)
    if chosen is None:
        return None
    detail = runlog.read_step_detail(run.path, chosen)
    record = next((r for r in runlog.iter_steps(run.path) if r.step == chosen), None)
    by_index = {p.index: p for p in detail.prompts if not p.filtered}
    pick = AnatomyPick(run=run, step=chosen, detail=detail, metrics=dict(record.metrics) if record else {},
                       first_in_rollout=bool(record.first_in_rollout) if record else False,
                       mixed=by_index.get(mixed_i) if mixed_i is not None else None,
                       all_correct=by_index.get(correct_i) if correct_i is not None else None,
                       reason=reason, requested=step)
    if later is not None and pick.mixed is not None:
        later_detail = runlog.read_step_detail(run.path, later)
        pick.later_step = later
        pick.later_group = next((p for p in later_detail.prompts if p.index == pick.mixed.index and not p.filtered),
                                None)
        pick.updates_between = later - chosen
    return pick


# (run path, steps mtime, tokens mtime, step) -> pick; a page asks for the same pick many times.
_PICKS: dict[tuple, AnatomyPick | None] = {}


def get_pick(run: Run, step: int | None) -> AnatomyPick | None:
    key = (*_run_key(run), runlog.tokens_mtime(run.path), step)
    if key not in _PICKS:
        if len(_PICKS) > 16:
            _PICKS.clear()
        _PICKS[key] = anatomy_pick(run, step)
    return _PICKS[key]


# -- the arithmetic of the group advantage ------------------------------------

@dataclass(frozen=True)
class GroupArithmetic:
    kind: str
    rewards: list[float]
    mean: float
    spread: float | None  # the std (z-score) or None
    ddof: int | None
    eps: float | None
    advantages: list[float]  # recomputed
    logged: list[float | None]

    @property
    def matches(self) -> bool:
        return all(l is None or abs(a - l) <= 1e-4 * max(1.0, abs(l)) for a, l in zip(self.advantages, self.logged))


def group_arithmetic(config, group: PromptGroup) -> GroupArithmetic | None:
    if config is None:
        return None
    kind = config.kind("advantage")
    rewards = np.asarray([[r.reward for r in group.responses]], dtype=np.float64)
    logged = [r.advantage for r in group.responses]
    mean = float(rewards.mean())
    if kind == "group_zscore":
        ddof = int(config.param("advantage", "std_ddof", 1))
        eps = float(config.param("advantage", "eps", 1e-6))
        adv = components.group_zscore_advantage(rewards, std_ddof=ddof, eps=eps)[0]
        spread = float(np.std(rewards, ddof=ddof)) if rewards.shape[1] > ddof else 0.0
        return GroupArithmetic(kind, rewards[0].tolist(), mean, spread, ddof, eps, adv.tolist(), logged)
    if kind == "group_mean":
        adv = components.group_mean_advantage(rewards)[0]
        return GroupArithmetic(kind, rewards[0].tolist(), mean, None, None, None, adv.tolist(), logged)
    if kind == "leave_one_out":
        adv = components.leave_one_out_advantage(rewards)[0]
        return GroupArithmetic(kind, rewards[0].tolist(), mean, None, None, None, adv.tolist(), logged)
    return None


def _reward_sum_tex(rewards: list[float]) -> str:
    return "+".join(_tex_num(r) for r in rewards)


def arithmetic_tex(ar: GroupArithmetic) -> list[str]:
    """Display formulas: the mean, the spread and one advantage per distinct reward."""
    G = len(ar.rewards)
    lines = [r"\operatorname{mean}(r)=\frac{" + _reward_sum_tex(ar.rewards) + "}{" + str(G) + "}=" + _tex_num(ar.mean)]
    distinct = []
    for r, a in zip(ar.rewards, ar.advantages):
        if r not in [d[0] for d in distinct]:
            distinct.append((r, a, ar.rewards.count(r)))
    if ar.kind == "group_zscore":
        n_div = G - ar.ddof
        terms = "+".join(f"{c}\\,({_tex_num(r)}-{_tex_num(ar.mean)})^2" for r, _, c in distinct)
        label = "n-1" if ar.ddof == 1 else "n"
        lines.append(r"\operatorname{std}_{" + label + r"}(r)=\sqrt{\frac{" + terms + "}{" + str(n_div) + "}}="
                     + _tex_num(ar.spread))
        for r, a, _ in distinct:
            if ar.spread == 0:
                lines.append(r"\hat{A}=0\quad\text{for every response: all rewards are equal, so there is nothing to compare}")
                break
            lines.append(r"\hat{A}_{r=" + _tex_num(r) + r"}=\frac{" + _tex_num(r) + "-" + _tex_num(ar.mean) + "}{"
                         + _tex_num(ar.spread) + "+" + _tex_num(ar.eps) + "}=" + _tex_num(a))
    elif ar.kind == "group_mean":
        for r, a, _ in distinct:
            lines.append(r"\hat{A}_{r=" + _tex_num(r) + "}=" + _tex_num(r) + "-" + _tex_num(ar.mean) + "=" + _tex_num(a))
    else:
        for r, a, _ in distinct:
            lines.append(r"\hat{A}_{r=" + _tex_num(r) + "}=" + _tex_num(a))
    return lines


# -- the token objective of one token ----------------------------------------

def _chosen_token(group: PromptGroup) -> tuple[Response, int] | None:
    """The token of the group's first right answer with a non-zero advantage (else of its first
    wrong one) that the policy was least sure of when sampling: the most instructive one."""
    for positive in (True, False):
        for r in group.responses:
            if r.tokens is None or not any(r.tokens.mask):
                continue
            adv = r.advantage if r.advantage is not None else r.tokens.advantage[0]
            if adv != 0 and (adv > 0) == positive:
                real = [t for t, m in enumerate(r.tokens.mask) if m]
                return r, min(real, key=lambda t: r.tokens.old_logp[t])
    return None


def token_objective_tex(config, response: Response, t: int) -> list[str]:
    """The token's objective as short display lines (they must fit a phone): the ratio from the
    log-probabilities, the clipped surrogate, the KL term."""
    tok = response.tokens
    rho = tok.ratio[t]
    adv = tok.advantage[t]
    lines = []
    ratio_kind = config.kind("ratio") if config is not None else "token"
    if ratio_kind == "token":
        lines.append(r"\rho=\exp\big(" + _tex_num(tok.logp[t]) + "-(" + _tex_num(tok.old_logp[t]) + r")\big)="
                     + _tex_num(rho, 5))
    elif ratio_kind == "none":
        lines.append(r"\rho=1\ \text{(no importance ratio)}")
    else:
        lines.append(r"\rho=" + _tex_num(rho, 5))
    clip_kind = config.kind("clip") if config is not None else "none"
    surrogate = rho * adv
    if clip_kind in ("symmetric", "asymmetric"):
        lo = config.param("clip", "eps_low", config.param("clip", "eps"))
        hi = config.param("clip", "eps_high", config.param("clip", "eps"))
        clipped = min(max(rho, 1 - lo), 1 + hi) * adv
        surrogate = min(rho * adv, clipped)
        lines.append(r"\min\big(\rho\hat{A},\,\operatorname{clip}(\rho," + _tex_num(1 - lo) + "," + _tex_num(1 + hi)
                     + r")\hat{A}\big)=" + _tex_num(surrogate, 5))
    else:
        lines.append(r"\rho\hat{A}=" + _tex_num(rho, 5) + r"\times" + _tex_num(adv, 5) + "=" + _tex_num(surrogate, 5))
    if config is not None and config.kind("kl") == "in_loss" and tok.kl is not None:
        beta = config.param("kl", "beta")
        lines.append(r"\ell=" + _tex_num(surrogate, 5) + "-" + _tex_num(beta) + r"\times(" + _tex_num(tok.kl[t], 3)
                     + ")=" + _tex_num(tok.objective[t], 5))
    else:
        lines.append(r"\ell=" + _tex_num(tok.objective[t], 5))
    return lines


def _tex_fraction(w: float) -> str:
    text = fraction_text(w)
    if "/" in text:
        a, b = text.split("/")
        return r"\frac{" + a + "}{" + b + "}"
    return _tex_num(w)


def weight_tex(config, detail: StepDetail, response: Response, t: int) -> str:
    kind = config.kind("aggregation") if config is not None else None
    n = sum(g.size for g in detail.groups)
    w = response.tokens.weight[t]
    length = response.length
    if kind == "seq_mean_token_mean":
        return (r"w=\frac{1}{N\,|o_i|}=\frac{1}{" + str(n) + r"\times" + str(length) + "}=" + _tex_fraction(w))
    if kind == "token_mean":
        total = round(1.0 / w) if w > 0 else 0
        return (r"w=\frac{1}{\sum_j|o_j|}=\frac{1}{" + str(total) + "}")
    if kind == "constant_normalizer":
        L = config.param("aggregation", "normalizer")
        return (r"w=\frac{1}{N\,L}=\frac{1}{" + str(n) + r"\times" + str(L) + "}=" + _tex_fraction(w))
    if kind == "seq_mean_token_sum":
        return r"w=\frac{1}{N}=\frac{1}{" + str(n) + "}=" + _tex_fraction(w)
    return "w=" + _tex_num(w)


# -- log-probability movement between two updates of the same rollout ---------

@dataclass(frozen=True)
class Movement:
    index: int
    correct: bool | None
    advantage: float
    mean_delta: float  # mean over tokens of logp(later) - logp(now)
    frac_up: float  # fraction of tokens whose log-prob rose


def movements(now: PromptGroup, later: PromptGroup) -> list[Movement]:
    out = []
    later_by_index = {r.index: r for r in later.responses}
    for r in now.responses:
        other = later_by_index.get(r.index)
        if r.tokens is None or other is None or other.tokens is None or len(other.tokens.logp) != len(r.tokens.logp):
            continue
        mask = np.asarray(r.tokens.mask, dtype=bool)
        delta = (np.asarray(other.tokens.logp) - np.asarray(r.tokens.logp))[mask]
        if len(delta) == 0:
            continue
        adv = r.advantage if r.advantage is not None else float(np.mean(np.asarray(r.tokens.advantage)[mask]))
        out.append(Movement(r.index, r.correct, float(adv), float(delta.mean()), float((delta > 0).mean())))
    return out


def movement_sentence(moves: list[Movement], pick: AnatomyPick) -> str:
    pos = [m for m in moves if m.advantage > 0]
    neg = [m for m in moves if m.advantage < 0]
    pos_up = sum(1 for m in pos if m.mean_delta > 0)
    neg_down = sum(1 for m in neg if m.mean_delta < 0)
    total = len(pos) + len(neg)
    if total == 0:
        return "Every response of this group had advantage 0, so the update had no direction to push it."
    parts = []
    if pos:
        mean = fmt_signed(float(np.mean([m.mean_delta for m in pos])), 3)
        head = (f"The one response with a positive advantage {'became' if pos_up else 'did not become'} more likely"
                if len(pos) == 1 else
                f"{pos_up} of the {len(pos)} responses with a positive advantage became more likely")
        parts.append(f"{head} (mean change of log-probability per token {mean})")
    if neg:
        mean = fmt_signed(float(np.mean([m.mean_delta for m in neg])), 3)
        head = (f"the one with a negative advantage {'became' if neg_down else 'did not become'} less likely"
                if len(neg) == 1 else
                f"{neg_down} of the {len(neg)} with a negative advantage became less likely")
        parts.append(f"{head} (mean change {mean})")
    agree = pos_up + neg_down
    verdict = ("every one moved the way the sign of its advantage asked" if agree == total else
               "most moved the way the sign of its advantage asked" if agree > total / 2 else
               "fewer than half moved the way the sign of its advantage asked: the other updates in between "
               "(on other groups) and the small learning rate can outweigh one group's push")
    text = "; ".join(parts) + f": {verdict}."
    return text[0].upper() + text[1:]


# -- the beats ----------------------------------------------------------------

def _correct_text(r: Response) -> str:
    if r.correct is None:
        return "–"
    return "✓ right" if r.correct else "✗ wrong"


def _group_label(pick: AnatomyPick, index: int) -> str:
    if pick.mixed is not None and index == pick.mixed.index:
        return " (the mixed group we follow)"
    if pick.all_correct is not None and index == pick.all_correct.index:
        return " (the all-correct group we follow)"
    return ""


def beat_summary(pick: AnatomyPick) -> str:
    h = pick.run.header
    G = h.hyperparameters.get("group_size")
    rows = [
        ("Run", escape_text(f"{h.run_id} ({algorithm_name(h.algorithm)})")),
        ("Update (step)", escape_text(str(pick.step))),
        ("Rollout", escape_text(f"{pick.detail.rollout}" + (" — the first update on it, so every ratio is 1"
                                                             if pick.first_in_rollout else ""))),
        ("Groups in this update", escape_text(f"{len(pick.detail.groups)} groups of G = {G} answers")),
        ("Groups with token detail", escape_text(str(sum(1 for p in pick.detail.prompts if not p.filtered)))),
        ("Why this update", escape_text(f"chosen by code: the first logged update that {pick.reason}")),
    ]
    return _table(["", "This update"], rows)


def beat_prompts(pick: AnatomyPick) -> str:
    """The update's groups as a list (readable at any width): counts, kind, and the prompt text
    for the groups whose tokens were logged."""
    prompts = {p.index: p for p in pick.detail.prompts if not p.filtered}
    items = []
    for g in pick.detail.groups:
        p = prompts.get(g.index)
        counts = f"{g.n_correct} of {g.size} right" if g.n_correct is not None else f"{g.size} answers"
        head = (f"<strong>Group {escape_text(g.index)}</strong> · {escape_text(counts)} · "
                f"{escape_text(_group_kind(g.n_correct, g.size))}")
        follow = _group_label(pick, g.index).strip(" ()")
        if follow:
            head += f" · <em>{escape_text(follow)}</em>"
        if p is not None:
            answer = f" <span style=\"opacity:.8\">(answer: {escape_text(p.answer)})</span>" if p.answer is not None else ""
            body = f"<br>{escape_text(p.prompt)}{answer}"
        else:
            body = '<br><span style="opacity:.75">Tokens not logged for this group.</span>'
        items.append(f"<li>{head}{body}</li>")
    for g in pick.detail.filtered_groups:
        p = next((q for q in pick.detail.prompts if q.index == g.index and q.filtered), None)
        text = f"<br>{escape_text(p.prompt)}" if p else ""
        items.append(f"<li><strong>Group {escape_text(g.index)}</strong> · {escape_text(f'{g.n_correct} of {g.size} right')} · "
                     f"dropped by the sampling filter{text}</li>")
    return (f'<p><strong>The {len(pick.detail.groups)} groups of update {escape_text(pick.step)}</strong></p>'
            f'<ul>{"".join(items)}</ul>')


def _which_group(pick: AnatomyPick, group: str) -> PromptGroup | None:
    if group not in ("mixed", "all_correct"):
        raise CourseError(f"anatomy: group must be 'mixed' or 'all_correct', not {group!r}")
    return pick.mixed if group == "mixed" else pick.all_correct


def _missing_group_note(group: str) -> str:
    words = "a group with both right and wrong answers" if group == "mixed" else "a group where every answer is right"
    return note_html(f"The update shown has no {words} with token detail in this build's run, so this part of the "
                     "walkthrough cannot be shown with real numbers.", "warning")


def beat_responses(pick: AnatomyPick, group: str) -> str:
    g = _which_group(pick, group)
    if g is None:
        return _missing_group_note(group)
    rows = []
    for r in g.responses:
        cut = " <em>(cut off at the budget)</em>" if r.truncated else ""
        rows.append([escape_text(r.index), escape_text(r.text) + cut,
                     escape_text(_correct_text(r)) + f"<br><small>{escape_text(fmt_num(r.length))} tokens</small>"])
    head = (f'<p><strong>Prompt (group {escape_text(g.index)}):</strong> {escape_text(g.prompt)} '
            f"<strong>Reference answer:</strong> {escape_text(g.answer if g.answer is not None else '–')}</p>")
    return head + _table(["#", "The answer as sampled", "Verdict"], rows)


def beat_rewards(pick: AnatomyPick, group: str) -> str:
    g = _which_group(pick, group)
    if g is None:
        return _missing_group_note(group)
    comp_names = sorted({k for r in g.responses for k in r.reward_components})
    rows = []
    for r in g.responses:
        comps = [escape_text(fmt_num(r.reward_components.get(k), 3)) for k in comp_names]
        rows.append([escape_text(r.index), escape_text(_correct_text(r))] + comps + [escape_text(fmt_num(r.reward, 4))])
    vector = r"r=(" + ",\\ ".join(_tex_num(r.reward) for r in g.responses) + ")"
    weights = {c.name: c.weight for c in pick.run.header.reward.components}
    wtext = " + ".join(f"{fmt_num(weights[k])} × {k}" for k in comp_names if k in weights)
    caption = f"Rewards of group {g.index}"
    if wtext:
        caption += f"; r = {wtext}" + (" + shaping" if "shaping" in comp_names else "")
    n = len(comp_names)
    return (_math_display(vector) + _table(["#", "Verdict"] + [escape_text(k) for k in comp_names] + ["r"],
                                           rows, caption=caption, numeric=tuple(range(2, 3 + n))))


def beat_advantages(pick: AnatomyPick, group: str) -> str:
    g = _which_group(pick, group)
    if g is None:
        return _missing_group_note(group)
    ar = group_arithmetic(pick.run.config, g)
    if ar is None:
        kind = pick.run.config.kind("advantage") if pick.run.config else "unknown"
        return note_html(f"This run's advantage ({kind}) is not computed from the group alone, so there is no group "
                         "arithmetic to show; the Step Inspector shows each token's advantage.")
    formulas = "".join(_math_display(line) for line in arithmetic_tex(ar))
    rows = [[escape_text(r.index), escape_text(fmt_num(r.reward, 4)), escape_text(fmt_num(a, 4)),
             escape_text(fmt_num(r.advantage, 4) if r.advantage is not None else "–")]
            for r, a in zip(g.responses, ar.advantages)]
    check = ("The advantages recomputed here equal the ones the trainer logged." if ar.matches else
             "The recomputed advantages differ from the logged ones: the log was written with another convention.")
    return formulas + _table(["#", "r", "Â, recomputed", "Â, logged"], rows,
                             numeric=(1, 2, 3)) + f"<p>{escape_text(check)}</p>"


def beat_tokens(pick: AnatomyPick, env: Any) -> str:
    from .views import inspector

    from . import macros as unipo_macros

    page = getattr(env, "page", None)
    uid = unipo_macros.chart_id(env, {"anatomy": pick.run.id, "step": pick.step}, prefix="unipo-insp")
    return inspector.step_inspector(pick.run, step=pick.step, page_url=getattr(page, "url", None),
                                    directory=pick.run.path.parent, uid=uid)


def beat_token_objective(pick: AnatomyPick) -> str:
    g = pick.mixed
    if g is None:
        return _missing_group_note("mixed")
    chosen = _chosen_token(g)
    if chosen is None:
        return note_html("No token of the mixed group has a non-zero advantage.")
    response, t = chosen
    tok = response.tokens
    config = pick.run.config
    lines = token_objective_tex(config, response, t)
    lines.append(weight_tex(config, pick.detail, response, t))
    intro = (f"<p>Token {t} of response {response.index} in group {g.index}, the text "
             f"<code>{escape_text(tok.text[t])}</code>, is the one the policy was least sure of when it wrote "
             f"that answer (probability {escape_text(fmt_pct(math.exp(tok.old_logp[t])))}); the answer is "
             f"{'right' if response.correct else 'wrong'}, so its advantage is "
             f"{escape_text(fmt_num(tok.advantage[t], 4))}:</p>")
    lo, hi = max(0, t - 2), min(len(tok.ids), t + 4)
    rows = []
    for i in range(lo, hi):
        mark = " ◀" if i == t else ""
        rows.append([f"{escape_text(i)}: <code>{escape_text(tok.text[i])}</code>{mark}",
                     escape_text(fmt_num(tok.ratio[i], 5)), escape_text(fmt_num(tok.advantage[i], 4)),
                     escape_text(fmt_num(tok.kl[i], 3) if tok.kl is not None else "–"),
                     escape_text(fmt_num(tok.objective[i], 5)), escape_text(fraction_text(tok.weight[i]))])
    table = _table(["t: token", "ρ", "Â", "D (KL)", "ℓ", "w"], rows,
                   caption=f"Tokens {lo} to {hi - 1} of response {response.index} (of {response.length})",
                   numeric=(1, 2, 3, 4, 5))
    return intro + "".join(_math_display(line) for line in lines) + table


def beat_aggregation(pick: AnatomyPick) -> str:
    rows = []
    total = 0.0
    for g in pick.detail.groups:
        total += g.contribution
        rows.append([escape_text(str(g.index)) + escape_text(_group_label(pick, g.index)),
                     escape_text(_group_kind(g.n_correct, g.size)),
                     escape_text(f"{g.n_correct}/{g.size}" if g.n_correct is not None else "–"),
                     escape_text(fmt_objective(g.contribution))])
    rows.append(["<strong>Sum: the step objective J</strong>", "", "",
                 f"<strong>{escape_text(fmt_objective(total))}</strong>"])
    return _table(["Group", "Kind", "Correct", "Contribution Σ w·ℓ"], rows,
                  caption=f"Each group's share of the objective of update {pick.step}", numeric=(2, 3))


def beat_update(pick: AnatomyPick) -> str:
    J = pick.detail.objective
    grad = pick.metrics.get("grad_norm")
    lr = pick.metrics.get("lr")
    facts = [("Step objective J (logged)", fmt_objective(J)),
             ("Loss minimised, −J", fmt_objective(-J)),
             ("Gradient norm before clipping", fmt_num(grad, 4) if grad is not None else "–"),
             ("Learning rate", f"{lr:g}" if lr is not None else "–")]
    html = _table(["Quantity", "Value"], [[escape_text(a), escape_text(b)] for a, b in facts], numeric=(1,))
    if pick.later_group is None or pick.mixed is None:
        return html + note_html("This run's log does not detail the same group again later in the same rollout, so "
                                "how its tokens' log-probabilities moved cannot be shown here.")
    moves = movements(pick.mixed, pick.later_group)
    rows = [[escape_text(m.index), escape_text("✓ right" if m.correct else "✗ wrong"),
             escape_text(fmt_num(m.advantage, 3)), escape_text(fmt_signed(m.mean_delta, 3)),
             escape_text(fmt_pct(m.frac_up, 0))] for m in moves]
    table = _table(["#", "Verdict", "Â", "Mean Δ log π per token", "Tokens up"], rows,
                   caption=(f"Group {pick.mixed.index}: log-probabilities at update {pick.later_step} minus those at "
                            f"update {pick.step}"), numeric=(2, 3, 4))
    return html + table + f"<p>{escape_text(movement_sentence(moves, pick))}</p>"


def anatomy_html(env: Any, run: Run | None, name: str, step: int | None, beat: str, group: str) -> str:
    if beat not in ANATOMY_BEATS:
        raise CourseError(f"anatomy: unknown beat {beat!r} (known: {', '.join(ANATOMY_BEATS)})")
    if run is None:
        return note_html(f"There is no {name} run in this build, so this part of the walkthrough cannot be shown. "
                         "Train it (see the README) or point UNIPO_RUNS at a directory of runs, then rebuild.",
                         "warning")
    pick = get_pick(run, step)
    if pick is None:
        return note_html(f"The {run.id} run has no token-level detail{'' if step is None else f' at step {step}'}, "
                         "so the walkthrough cannot show one update.", "warning")
    if beat == "summary":
        return beat_summary(pick)
    if beat == "prompts":
        return beat_prompts(pick)
    if beat == "responses":
        return beat_responses(pick, group)
    if beat == "rewards":
        return beat_rewards(pick, group)
    if beat == "advantages":
        return beat_advantages(pick, group)
    if beat == "tokens":
        return beat_tokens(pick, env)
    if beat == "token_objective":
        return beat_token_objective(pick)
    if beat == "aggregation":
        return beat_aggregation(pick)
    return beat_update(pick)


ANATOMY_FACTS = ("step", "rollout", "later_step", "updates_between", "n_groups", "group_size", "responses",
                 "mixed_group", "mixed_correct", "all_correct_group", "objective", "grad_norm",
                 "mixed_adv_right", "mixed_adv_wrong", "all_correct_contribution", "mixed_contribution",
                 "kl_beta", "bigger_advantage", "std_convention", "later_sentence", "all_correct_sentence")


def anatomy_fact_text(run: Run | None, name: str, key: str, step: int | None = None) -> str:
    if key not in ANATOMY_FACTS:
        raise CourseError(f"anatomy_fact: unknown key {key!r} (known: {', '.join(ANATOMY_FACTS)})")
    if run is None:
        return missing_run_text(name)
    pick = get_pick(run, step)
    if pick is None:
        return f"(the {run.id} run has no token-level detail)"
    none = "(not in this run's log)"
    summaries = {g.index: g for g in pick.detail.groups}
    if key == "step":
        return str(pick.step)
    if key == "rollout":
        return str(pick.detail.rollout)
    if key == "later_step":
        return str(pick.later_step) if pick.later_step is not None else none
    if key == "updates_between":
        return str(pick.updates_between) if pick.updates_between is not None else none
    if key == "n_groups":
        return str(len(pick.detail.groups))
    if key == "group_size":
        return str(run.header.hyperparameters.get("group_size") or (len(pick.mixed.responses) if pick.mixed else none))
    if key == "responses":
        return str(sum(g.size for g in pick.detail.groups))
    if key == "objective":
        return fmt_objective(pick.detail.objective, 3)
    if key == "grad_norm":
        value = pick.metrics.get("grad_norm")
        return fmt_num(value, 3) if value is not None else none
    if key == "std_convention":
        cfg = run.config
        if cfg is None or cfg.kind("advantage") != "group_zscore":
            return "(this run does not divide by a standard deviation)"
        ddof = cfg.param("advantage", "std_ddof", 1)
        return ("the sample standard deviation, dividing by G − 1" if ddof == 1 else
                "the population standard deviation, dividing by G")
    if key == "later_sentence":
        if pick.later_step is None or pick.later_group is None:
            return ("The log does not detail this group again later in the same rollout, so the change cannot be "
                    "followed token by token here.")
        return (f"The same group is logged again at update {pick.later_step}, after {pick.updates_between} "
                f"update{'s' if pick.updates_between != 1 else ''} (this one included"
                f"{', the others on other groups' if pick.updates_between and pick.updates_between > 1 else ''}), "
                "so the log-probabilities of its tokens can be compared before and after.")
    if key == "kl_beta":
        cfg = run.config
        if cfg is None or cfg.kind("kl") == "none":
            return "0"
        return fmt_num(cfg.param("kl", "beta"), 3)
    if key == "all_correct_sentence":
        if pick.all_correct is None:
            return ("This update has no all-correct group with token detail, so the point cannot be checked on "
                    "it here.")
        value = summaries[pick.all_correct.index].contribution
        cfg = run.config
        has_kl = cfg is not None and cfg.kind("kl") == "in_loss"
        if abs(value) < NOISE:
            tail = (" Even the KL term adds nothing here: at this update the policy has not yet moved away from "
                    "the reference model." if has_kl else "")
            return f"The group's whole contribution to this update's objective is zero.{tail}"
        if has_kl:
            return (f"The group's whole contribution to this update's objective is {fmt_objective(value, 3)}, all of "
                    f"it from the KL term (β = {fmt_num(cfg.param('kl', 'beta'), 3)}), which pulls the tokens back "
                    "towards the reference model whether they were right or not.")
        return f"The group's whole contribution to this update's objective is {fmt_objective(value, 3)}."
    if key in ("all_correct_group", "all_correct_contribution"):
        if pick.all_correct is None:
            return "(no all-correct group in this update)"
        if key == "all_correct_group":
            return str(pick.all_correct.index)
        return fmt_objective(summaries[pick.all_correct.index].contribution, 3)
    if pick.mixed is None:
        return "(no mixed group in this update)"
    g = pick.mixed
    if key == "mixed_group":
        return str(g.index)
    if key == "mixed_correct":
        return f"{sum(1 for r in g.responses if r.correct)} of {len(g.responses)}"
    if key == "mixed_contribution":
        return fmt_objective(summaries[g.index].contribution, 3)
    right = [r.advantage for r in g.responses if r.correct and r.advantage is not None]
    wrong = [r.advantage for r in g.responses if r.correct is False and r.advantage is not None]
    if key == "mixed_adv_right":
        return fmt_signed(right[0], 3) if right else none
    if key == "mixed_adv_wrong":
        return fmt_signed(wrong[0], 3) if wrong else none
    # bigger_advantage: a sentence on which side of the group gets the larger push
    n_right, n_wrong = len(right), len(wrong)
    if not right or not wrong:
        return none
    if abs(abs(right[0]) - abs(wrong[0])) < 1e-6:
        return (f"they are equal in size ({fmt_signed(right[0], 3)} and {fmt_signed(wrong[0], 3)}): half the group "
                "is right, so the mean sits exactly between the two rewards")
    bigger = "right" if abs(right[0]) > abs(wrong[0]) else "wrong"
    n_bigger = n_right if bigger == "right" else n_wrong
    subject = f"the {bigger} answer gets" if n_bigger == 1 else f"the {bigger} answers get"
    each_right = "the right answer" if n_right == 1 else "each right answer"
    each_wrong = "the wrong one" if n_wrong == 1 else "each wrong one"
    minority, n_minority = ("right", n_right) if n_right < n_wrong else ("wrong", n_wrong)
    far = f"the lone {minority} answer is" if n_minority == 1 else f"the {minority} minority is"
    return (f"{subject} the larger advantage ({fmt_signed(right[0], 3)} for {each_right}, "
            f"{fmt_signed(wrong[0], 3)} for {each_wrong}): with {n_right} right and {n_wrong} wrong, the mean "
            f"sits closer to the majority, so {far} further from it")


# ---------------------------------------------------------------------------
# Small facts from specs, metrics and probability (so prose types no decimals)
# ---------------------------------------------------------------------------

def clip_ceiling_text(p: float, algorithm: str) -> str:
    """How far one update's clip lets a token of probability p rise: p (1 + eps_high), as a %."""
    specs = _specs()
    if algorithm not in specs:
        raise CourseError(f"clip_ceiling: no algorithm {algorithm!r}")
    spec = specs[algorithm]
    kind = spec.components["clip"].kind
    params = spec.params("clip")
    if kind == "symmetric":
        high = params["eps"]
    elif kind == "asymmetric":
        high = params["eps_high"]
    else:
        return "no ceiling (this algorithm does not clip)"
    ceiling = min(1.0, p * (1 + high))
    return fmt_pct(ceiling, 2 if ceiling < 0.1 else 1)


def metric_fact_text(run: Run | None, name: str, metric: str, when: str = "last", digits: int = 3,
                     percent: bool = False) -> str:
    """The mean of a metric over the first or last tenth of a run's points (rollout-level metrics:
    one point per rollout)."""
    if metric not in METRICS:
        raise CourseError(f"metric_fact: unknown metric {metric!r} (known: {', '.join(METRICS)})")
    if when not in ("first", "last", "all"):
        raise CourseError(f"metric_fact: when must be 'first', 'last' or 'all', not {when!r}")
    if run is None:
        return missing_run_text(name)
    raw, _ = _raw_series(*_run_key(run), (metric,))
    y = raw[metric][1]
    if len(y) == 0:
        return f"(not logged by the {run.id} run)"
    k = max(1, int(round(len(y) * 0.1)))
    value = float(np.mean(y[:k] if when == "first" else y[-k:] if when == "last" else y))
    return fmt_pct(value, max(0, digits - 2)) if percent else fmt_num(value, digits)


def runs_setup_text(env: Any, runs: Sequence[str] | None = None) -> str:
    """A sentence on what the runs of this build share and where they differ."""
    found, missing = course_runs(env, runs)
    if not found:
        return "No runs are part of this build, so the figures below show notes instead of data."
    specs = _specs()
    fields = [("preset", "the preset", lambda r: r.header.preset),
              ("seed", "the seed", lambda r: r.header.seed),
              ("rollouts", "the number of rollouts", lambda r: run_summary(r)["rollouts"]),
              ("group_size", "G, the answers per prompt", lambda r: r.header.hyperparameters.get("group_size")),
              ("prompts_per_step", "the prompts per rollout", lambda r: r.header.hyperparameters.get("prompts_per_step")),
              ("max_new_tokens", "the generation budget", lambda r: r.header.hyperparameters.get("max_new_tokens")),
              ("lr", "the learning rate", lambda r: r.header.hyperparameters.get("lr"))]
    same, differ = [], []
    for _, words, get in fields:
        values = [get(r) for r in found]
        if all(v == values[0] for v in values):
            shown = "–" if values[0] is None else (f"{values[0]:g}" if isinstance(values[0], float) else
                                                   fmt_num(values[0]) if isinstance(values[0], int) else str(values[0]))
            same.append(f"{words} ({shown})")
        else:
            detail = ", ".join(f"{run_label(r, specs)} {fmt_num(v) if isinstance(v, int) else v}"
                               for r, v in zip(found, values))
            differ.append(f"{words} ({detail})")
    n = len(found)
    head = "The run of this build" if n == 1 else f"The {n} runs of this build"
    text = f"{head} share {_join_words(same)}." if same else f"{head} share none of their main settings."
    if differ:
        text += f" They differ in {_join_words(differ)}."
    if missing:
        text += " Not in this build: " + ", ".join(algorithm_name(m, specs) if isinstance(m, str) else str(m)
                                                  for m in missing) + "."
    return text


def _join_words(items: Sequence[str]) -> str:
    items = list(items)
    if len(items) <= 1:
        return "".join(items)
    return "; ".join(items[:-1]) + "; and " + items[-1]


# ---------------------------------------------------------------------------
# Registration
# ---------------------------------------------------------------------------

def register(env: Any) -> None:
    from . import macros as unipo_macros

    def protect(html: str) -> str:
        return unipo_macros.protect_html(env, html)

    @env.macro
    def run_fact(run: str, key: str, digits: int = 3) -> str:
        """A number from a run's summary or header, as text (see RUN_FACT_KEYS)."""
        return run_fact_text(find_run(env, run), str(run), key, digits)

    @env.macro
    def learning_verdict(run: str) -> str:
        """A sentence: held-out greedy (and sampled) accuracy from start to end, against 2 SE."""
        return learning_verdict_text(find_run(env, run), str(run))

    @env.macro
    def run_card(run: str) -> str:
        """Hyperparameters and provenance of a run, and its held-out evaluation table."""
        return protect(run_card_html(find_run(env, run), str(run)))

    @env.macro
    def moment_fact(run: str, moment: str, field: str = "step") -> str:
        """Where a teaching moment is in a run: its step, group, response, token or value."""
        return moment_fact_text(find_run(env, run), str(run), moment, field)

    @env.macro
    def family_tree() -> str:
        """The lineage of the algorithm specs: a figure (x = year) and the same as a table."""
        from .render import vega_embed

        rows = tree_rows(_specs())
        spec = family_tree_spec(rows)
        caption = ("The family tree of the algorithms in this course: each links to the one it builds on, with the "
                   "year, the paper and the change it made in a phrase. Hover a node for the whole phrase; on a narrow "
                   "screen, scroll the figure sideways. The table below holds the same information.")
        figure = vega_embed(spec, chart_id=unipo_macros.chart_id(env, spec), caption=caption,
                            css_class="unipo-family-tree")
        table = ('<details class="note"><summary>The family tree as a table</summary>'
                 + family_tree_table(rows) + "</details>")
        return protect(figure + table)

    @env.macro
    def dynamics_compare(metrics: Sequence[str] | str | None = None, runs: Sequence[str] | None = None,
                         x: str = "fraction") -> str:
        """Small multiples of the runs' metrics on a shared x axis (fraction of training or step)."""
        return protect(dynamics_compare_html(env, metrics, runs, x))

    @env.macro
    def length_by_correctness(runs: Sequence[str] | None = None) -> str:
        """Mean length of wrong and correct answers over training (default: GRPO vs Dr. GRPO)."""
        return protect(length_by_correctness_html(env, runs))

    @env.macro
    def length_verdict(run: str) -> str:
        """A sentence: wrong vs correct answer lengths in the first and last tenth of a run."""
        return length_verdict_text(find_run(env, run), str(run))

    @env.macro
    def weight_shares(lengths: Sequence[int] = (10, 1000), normalizer: int | None = None) -> str:
        """Each response's share of the total weight under every aggregation (constant L = max length
        unless ``normalizer`` is given)."""
        return protect(weight_shares_html(lengths, normalizer))

    @env.macro
    def slot_matrix() -> str:
        """Every algorithm's component in each slot, as a table."""
        return protect(slot_matrix_html())

    @env.macro
    def eval_compare(runs: Sequence[str] | None = None) -> str:
        """Held-out accuracy of every run at start and end, with the 2-SE verdict."""
        return protect(eval_compare_html(env, runs))

    @env.macro
    def hybrid_status() -> str:
        """A sentence: whether this build has a run pairing dynamic sampling with the constant normaliser."""
        return hybrid_status_text(env)

    @env.macro
    def anatomy(run: str, step: int | None = None, beat: str = "summary", group: str = "mixed") -> str:
        """One beat of the anatomy of one update (see ANATOMY_BEATS); the update is chosen by code
        unless ``step`` is given."""
        return protect(anatomy_html(env, find_run(env, run), str(run), step, beat, group))

    @env.macro
    def anatomy_fact(run: str, key: str, step: int | None = None) -> str:
        """A number (or a short clause) about the anatomy page's update (see ANATOMY_FACTS)."""
        return anatomy_fact_text(find_run(env, run), str(run), key, step)

    @env.macro
    def clip_ceiling(p: float, algorithm: str = "grpo") -> str:
        """How high one update's clip lets a token of probability p rise (a percentage)."""
        return clip_ceiling_text(p, algorithm)

    @env.macro
    def metric_fact(run: str, metric: str, when: str = "last", digits: int = 3, percent: bool = False) -> str:
        """The mean of a logged metric over the first or last tenth of a run (or all of it)."""
        return metric_fact_text(find_run(env, run), str(run), metric, when, digits, percent)

    @env.macro
    def runs_setup(runs: Sequence[str] | None = None) -> str:
        """A sentence: the settings the runs of this build share and those where they differ."""
        return runs_setup_text(env, runs)
