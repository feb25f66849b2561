"""A run in a few numbers: what ``unipo summary`` prints and the chapters quote.

Computed from the run's one reader (``unipo_build.core.reader``): steps.jsonl is parsed once, into
columns, however many facts a build quotes.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from pydantic import ValidationError

from unipo_build.core.heldout import TOO_FEW, compare, start_and_end
from unipo_build.core.moments import find_moments
from unipo_build.core.reader import reader_for
from unipo_build.core.numbers import fmt_fixed, fmt_pct, plain_num
from unipo_build.core.schema import MemorisationCheck


def memorisation_check(reader, start) -> tuple[MemorisationCheck | None, str | None]:
    """The run's memorisation check and where it comes from: the header's (``"header"``), or for a run
    logged before the header held it, rollout 0's ``sampled/accuracy`` (every response it sampled) and
    the start evaluation (``"logs"``: responses = ``sampled/tokens`` / ``sampled/length``)."""
    if reader.header.memorisation_check is not None:
        return reader.header.memorisation_check, "header"
    table = reader.table
    if not table.n or start is None or start.accuracy_sampled is None or table.rollouts[0] != 0:
        return None, None
    first = table.metrics_at(int(table.steps[0]))
    if first.get("sampled/accuracy") is None or not first.get("sampled/length"):
        return None, None
    responses = round(first["sampled/tokens"] / first["sampled/length"]) if first.get("sampled/tokens") else None
    if not responses or responses < 1:
        return None, None
    try:
        return MemorisationCheck(train_reward=first["sampled/accuracy"], train_responses=responses,
                                 heldout_sampled=start.accuracy_sampled, heldout_n=start.n), "logs"
    except ValidationError:  # figures no check can hold (a log at its bounds): no check, not a failed page
        return None, None


def summarize(run_dir: str | Path, *, with_moments: bool = True, with_diagnoses: bool = False) -> dict:
    """The run in a few numbers (``unipo summary``); ``with_diagnoses``: the answers to the practitioners'
    questions too (``unipo_build.core.diagnose``, a list of their ``as_dict()``)."""
    reader = reader_for(run_dir)
    header, table = reader.header, reader.table
    _, rewards = table.series("reward/mean")
    _, wall = table.series("time/wall_s")
    k = max(1, len(rewards) // 10)
    start, end = start_and_end(reader.evals)
    changes = {mode: compare(start, end, mode) if start and end else None for mode in ("greedy", "sampled")}
    check, source = memorisation_check(reader, start)
    out = {
        "run_id": header.run_id,
        "algorithm": header.algorithm,
        "steps": table.n,
        "rollouts": table.n_rollouts,
        "reward_mean_first_10pct": float(np.mean(rewards[:k])) if len(rewards) else None,
        "reward_mean_last_10pct": float(np.mean(rewards[-k:])) if len(rewards) else None,
        "eval_start": start.model_dump() if start else None,
        "eval_end": end.model_dump() if end else None,
        "heldout_change": {mode: c.as_dict() if c else None for mode, c in changes.items()},
        # The header's, when the run recorded it (the whole run, final evaluation included); else the
        # last update's clock, all an imported or unfinished log has.
        "wall_time_s": header.wall_time_s if header.wall_time_s is not None else (float(wall[-1]) if len(wall) else None),
        "preset": header.preset,
        "seed": header.seed,
        "length_probe": header.length_probe.model_dump() if header.length_probe else None,
        # Rollout 0's training reward beside held-out sampled accuracy, and whether they agree
        # within 5 points (schema.MemorisationCheck), with its source (memorisation_check above).
        "memorisation_check": ({**check.as_dict(), "source": source} if check else None),
    }
    if with_moments:
        out["moments"] = {name: (m.as_dict() if m else None) for name, m in find_moments(run_dir).items()}
    if with_diagnoses:
        from unipo_build.core.diagnose import diagnose

        out["diagnoses"] = [d.as_dict() for d in diagnose(reader)]
    return out


# ---------------------------------------------------------------------------
# As text: what `unipo summary RUN` prints (80 columns, no bit strings)
# ---------------------------------------------------------------------------

WIDTH = 80


def _wrap(text: str, indent: str = "", width: int = WIDTH) -> list[str]:
    import textwrap

    return textwrap.wrap(text, width=width, initial_indent=indent, subsequent_indent=indent + "  ",
                         break_on_hyphens=False) or [indent]


def _num(value, digits: int = 3) -> str:
    """A figure of the summary (numbers.plain_num), 'n/a' when the run lacks it."""
    return "n/a" if value is None else plain_num(float(value), digits)


def _pct(value) -> str:
    """A share of the summary (numbers.fmt_pct), 'n/a' when the run lacks it."""
    return "n/a" if value is None else fmt_pct(value, 1)


def _points(change: float) -> str:
    """A change of a share in percentage points, signed, in ASCII (+2.5, -0.4)."""
    return fmt_fixed(100 * change, 1, signed=True, minus="-")


def summary_lines(result: dict) -> list[str]:
    """``summarize``'s result as lines of at most 80 characters: the figures a reader asks for, in words; the
    per-problem correctness strings of the evaluations are left to ``--json``."""
    lines: list[str] = []
    setup = ", ".join(f"{k} {result[k]}" for k in ("preset", "seed") if result.get(k) is not None)
    lines += _wrap(f"run {result['run_id']}: algorithm {result['algorithm']}" + (f" ({setup})" if setup else ""))
    wall = result.get("wall_time_s")
    lines += _wrap(f"{result['steps']} updates over {result['rollouts']} rollouts"
                   + (f", wall time {fmt_fixed(wall, 0, minus='-')} s" if wall is not None else ""), "  ")
    first, last = result.get("reward_mean_first_10pct"), result.get("reward_mean_last_10pct")
    if first is not None:
        lines += _wrap(f"training reward (mean of the first / last 10% of updates): {_num(first)} -> {_num(last)}")
    start, end = result.get("eval_start"), result.get("eval_end")
    if start or end:
        lines.append("held-out evaluations (start -> end):")
        for mode in ("greedy", "sampled"):
            change = (result.get("heldout_change") or {}).get(mode)
            key = f"accuracy_{mode}"
            text = f"{mode}: {_pct((start or {}).get(key))} -> {_pct((end or {}).get(key))}"
            if change:
                low, high = change.get("ci95") or (None, None)
                text += f" ({_points(change['change'])} points"
                if low is not None:
                    text += f", 95% CI {_points(low)} to {_points(high)}"
                text += f", n {change['n']}{', paired' if change.get('paired') else ''})"
                if change.get("too_few"):
                    text += f": {TOO_FEW}"
            lines += _wrap(text, "  ")
        length = "mean_length" if start and start.get("mean_length") is not None else None
        if length:
            lines += _wrap(f"mean length (greedy): {_num((start or {}).get('mean_length'))} -> "
                           f"{_num((end or {}).get('mean_length'))} tokens", "  ")
    probe = result.get("length_probe")
    if probe:
        lines += _wrap(f"length probe before training: median {_num(probe.get('median_length'))} tokens of a "
                       f"{probe.get('budget')}-token budget, {_pct(probe.get('truncated'))} truncated, accuracy "
                       f"{_pct(probe.get('accuracy'))}")
    check = result.get("memorisation_check")
    if check:
        pool = (f"RL pool sampled {fmt_fixed(check['pool_sampled'], 3, minus='-')} ({check['pool_n']} prompts), "
                if check.get("pool_sampled") is not None else "")
        verdict = "agree" if check["agree"] else "disagree: the RL prompts look memorised"
        lines += _wrap(f"memorisation_check: {pool}training reward at rollout 0 {fmt_fixed(check['train_reward'], 3, minus='-')}, held-out "
                       f"sampled {fmt_fixed(check['heldout_sampled'], 3, minus='-')}, gap {fmt_fixed(check['gap_points'], 1, signed=True, minus='-')} points: {verdict} "
                       f"(within {plain_num(check['tolerance_points'])}; from the {check['source']})")
    moments = result.get("moments")
    if moments:
        lines.append("teaching moments (where the Step Inspector opens):")
        for name, where in moments.items():
            if not where:
                lines.append(f"  {name:<20} not in this run")
                continue
            parts = [f"step {where['step']}"] + [f"{k} {where[k]}" for k in ("group", "response", "token")
                                                 if where.get(k) is not None]
            if where.get("value") is not None:
                parts.append(f"value {_num(where['value'], 4)}")
            lines += _wrap(f"{name:<20} {', '.join(parts)}", "  ")
    if result.get("diagnoses"):
        lines += diagnosis_text(result["diagnoses"])
    return lines


def diagnosis_text(diagnoses: list[dict]) -> list[str]:
    """The diagnoses (``Diagnosis.as_dict()``) as lines of at most 80 characters: question and verdict, the figure
    (or what the log lacks), the steps that show it and the chapter that teaches it."""
    lines = ["diagnoses (what practitioners ask of a run):"]
    for d in diagnoses:
        lines += _wrap(f"[{d['verdict']}] {d['question']}", "  ")
        body = d["figure"] if d["verdict"] != "not measurable" else (
            f"not measurable: {d['lacks']}" + (f" ({d['figure']})" if d["figure"] else ""))
        if body:
            lines += _wrap(body, "      ")
        tail = (f"steps {', '.join(map(str, d['steps']))}; " if d["steps"] else "") + \
            f"taught in docs/{d['chapter']['path']} ({d['source']})"
        lines += _wrap(tail, "      ")
    return lines
