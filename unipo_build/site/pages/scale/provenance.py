"""How the shipped run sets were made, read from what the runs and the warm starts recorded
(docs/reference/run_sets.md). Nothing here is typed by hand: a set made again reads differently.

    {{ run_sittings() }}   per run set, its sittings: the runs started together on one machine with one
                           software stack (a gap of more than SITTING_GAP between them starts another),
                           each with its machine, software, first start and last finish (UTC), span,
                           runs, rollouts, each run's wall time and the run time in all (HTML)
    {{ warm_starts() }}    per run set, the warm start its runs began from: the shipped one's stop rule,
                           step, time and held-out accuracy (data/warm-start/<preset>/sft_meta.json), and
                           how many runs' first evaluation is that warm start's last one, problem by
                           problem; for a preset that ships none, whether the runs began alike (HTML)
    {{ run_gains() }}      per run set, each algorithm's held-out greedy change from start to end on every
                           seed (paired per problem), how many intervals exclude zero, and the
                           memorisation gap of its headers (HTML)

The sets are mkdocs.yml's ``extra.unipo_sets``, read through ``scale_sets.set_views`` as the scale page
reads them. Times come from each header's ``created_at``, ``finished_at`` and ``wall_time_s`` (the run's
time from its first evaluation to its last, pauses between a kill and ``--resume`` left out).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Sequence

import yaml

from unipo_build.core import yamlfile
from unipo_build.core.file_names import SFT_META
from unipo_build.core.numbers import fmt_num, fmt_pct, fmt_signed_points
from unipo_build.core.paths import project_relative
from unipo_build.core.runs import Run, seed_order
from unipo_build.core.schema import MEMORISATION_TOLERANCE
from unipo_build.site.context import Site, macro
from unipo_build.site.facts.run_facts import COURSE_ALGORITHMS
from unipo_build.site.fmt import escape_text, note_html, table, two_lines
from unipo_build.site.pages.learning.set_differences import rollouts_of
from unipo_build.site.pages.learning.verdicts import changes_of
from unipo_build.site.pages.scale.scale_sets import SetView, set_views, suite_file

#: Runs of one machine and software that start more than this after the last one finished are another sitting.
SITTING_GAP = timedelta(minutes=30)
#: Where the project ships a preset's warm start (training/sft.py SHIPPED_WARM_STARTS; the site does
#: not import training).
WARM_STARTS = Path("data") / "warm-start"
#: How a warm start's recorded versions are named in the page.
PACKAGE_NAMES = {"python": "Python"}


# ---------------------------------------------------------------------------
# Sittings
# ---------------------------------------------------------------------------

def machine_of(run: Run) -> str:
    """'NVIDIA H200 (16 CPU cores)', 'CPU, x86_64, 2 cores', or 'not recorded'."""
    hw = run.header.hardware
    if hw is None:
        return "not recorded"
    cores = f"{fmt_num(hw.cores)} CPU cores" if hw.cores else ""
    if hw.device_name:
        return hw.device_name + (f" ({cores})" if cores else "")
    return ", ".join(x for x in (hw.device.upper(), hw.cpu, cores.replace("CPU ", "")) if x)


def software_of(run: Run) -> str:
    """'Python 3.11.7, torch 2.13.0+cpu' from the header's software."""
    sw = run.header.software
    parts = [f"{label} {sw[key]}" for key, label in (("python", "Python"), ("torch", "torch")) if sw.get(key)]
    return ", ".join(parts) or "not recorded"


def utc(moment: datetime) -> datetime:
    """A header's time in UTC (one without a zone taken as UTC, as the trainer writes them), so that the
    runs of a set compare whatever wrote them."""
    return moment.replace(tzinfo=timezone.utc) if moment.tzinfo is None else moment.astimezone(timezone.utc)


def started(run: Run) -> datetime:
    return utc(run.header.created_at)


def ended(run: Run) -> datetime:
    return utc(run.header.finished_at)


@dataclass(frozen=True)
class Sitting:
    """Runs started together on one machine with one software stack."""

    machine: str
    software: str
    runs: tuple[Run, ...]

    @property
    def start(self) -> datetime:
        return min(started(r) for r in self.runs)

    @property
    def finish(self) -> datetime:
        return max(ended(r) for r in self.runs)

    @property
    def wall_times(self) -> list[float]:
        return [r.header.wall_time_s for r in self.runs if r.header.wall_time_s is not None]


def sittings(runs: Sequence[Run]) -> list[Sitting]:
    """The finished runs grouped into sittings, in the order they started: one machine and software, each
    run starting at most SITTING_GAP after the sitting's runs so far had all finished."""
    finished = sorted((r for r in runs if r.header is not None and r.header.finished_at is not None),
                      key=lambda r: (started(r), r.id))
    open_: dict[tuple[str, str], list[Run]] = {}
    done: list[list[Run]] = []
    for run in finished:
        key = (machine_of(run), software_of(run))
        current = open_.get(key)
        if current and started(run) - max(ended(r) for r in current) > SITTING_GAP:
            done.append(current)
            current = None
        if current is None:
            current = open_[key] = []
        current.append(run)
    done.extend(open_.values())
    groups = sorted(done, key=lambda g: min(started(r) for r in g))
    return [Sitting(machine_of(g[0]), software_of(g[0]), tuple(g)) for g in groups]


def duration_text(seconds: float) -> str:
    """'38 s', '7.2 min', '2 h 31 min'."""
    if seconds < 90:
        return f"{fmt_num(round(seconds))} s"
    minutes = seconds / 60
    if minutes < 90:
        return f"{fmt_num(minutes, 2)} min"
    hours, rest = divmod(round(minutes), 60)
    return f"{hours} h {rest} min"


def when_text(start: datetime, finish: datetime) -> str:
    """'2026-11-26 23:57 to 2026-11-27 03:14 UTC' (the second date left out on the same day)."""
    end = finish.strftime("%H:%M" if finish.date() == start.date() else "%Y-%m-%d %H:%M")
    return f"{start:%Y-%m-%d %H:%M} to {end} UTC"


def range_text(values: Sequence[float], fmt=duration_text) -> str:
    if not values:
        return "not recorded"
    low, high = min(values), max(values)
    return fmt(low) if fmt(low) == fmt(high) else f"{fmt(low)} to {fmt(high)}"


def variant_name(site: Site, variant: str) -> str:
    """The algorithm's name; an ablation ladder's rung (whose name reads as a change: "+ token mean")
    marked as one."""
    name = site.algorithm_name(variant)
    return f"ladder rung \u201c{name}\u201d" if variant in site.ablation_ids() else name


def runs_text(site: Site, runs: Sequence[Run]) -> str:
    """'GRPO ×3, DAPO ×3, PPO': each algorithm (or variant) once, with its number of runs."""
    counts: dict[str, int] = {}
    for run in sorted(runs, key=lambda r: (r.variant not in COURSE_ALGORITHMS, r.variant, seed_order(r))):
        counts[run.variant] = counts.get(run.variant, 0) + 1
    return ", ".join(variant_name(site, v) + (f" \u00d7{n}" if n > 1 else "") for v, n in counts.items())


def rollouts_text(runs: Sequence[Run]) -> str:
    """'100', or '15 to 24 of 24 (3 runs stopped by a time limit)'."""
    pairs = [rollouts_of(r) for r in runs]
    done = range_text([d for d, _ in pairs], fmt_num)
    cut = [1 for d, a in pairs if d < a]
    if not cut:
        return done
    return (f"{done} of {range_text([a for _, a in pairs], fmt_num)} ({fmt_num(len(cut))} run"
            f"{'s' if len(cut) > 1 else ''} stopped by a time limit)")


def sitting_rows(site: Site, found: Sequence[Sitting]) -> list[list[str]]:
    rows = []
    for s in found:
        span = (s.finish - s.start).total_seconds()
        total = sum(s.wall_times)
        rows.append([
            two_lines(s.machine, s.software),
            two_lines(when_text(s.start, s.finish), f"{duration_text(span)} from first start to last finish"),
            two_lines(f"{fmt_num(len(s.runs))} run{'s' if len(s.runs) > 1 else ''}", runs_text(site, s.runs)),
            escape_text(rollouts_text(s.runs)),
            two_lines(range_text(s.wall_times), f"{duration_text(total)} in all" if len(s.wall_times) > 1 else ""),
        ])
    return rows


def suite_length_text(site: Site, view: SetView, loaded: Sequence[Run]) -> str:
    """' Its suite file (data/suite-gpu.yaml) now asks for 96 rollouts a run, where these runs asked for 24.'
    when the suite file that makes the set asks for another length than its runs did; else ''."""
    path = suite_file(site.root, view.run_set)
    if path is None:
        return ""
    try:
        wanted = (yamlfile.load(path) or {}).get("rollouts")
    except (OSError, ValueError, AttributeError, yaml.YAMLError):
        return ""
    asked = sorted({rollouts_of(r)[1] for r in loaded})
    if not isinstance(wanted, int) or isinstance(wanted, bool) or not asked or asked == [wanted]:
        return ""
    return (f" Its suite file ({project_relative(path, site.root)}) now asks for {fmt_num(wanted)} rollouts a run, where "
            f"these runs asked for {range_text(asked, fmt_num)}: the set has not been made again at that length.")


def set_sittings_html(site: Site, view: SetView) -> str:
    label = view.run_set.label
    if view.site is None:
        return note_html(f"{label} holds no run in this build ({view.where}), so there is nothing to date.", "warning",
                         f"{label}: not in this build")
    loaded = view.site.catalog.loaded()
    found = sittings(loaded)
    unfinished = [r.id for r in loaded if r.header.finished_at is None]
    caption = (f"{label}: {fmt_num(len(loaded))} runs in {view.where}, in {fmt_num(len(found))} sitting"
               f"{'s' if len(found) != 1 else ''}, from their headers.")
    if unfinished:
        caption += f" Not finished, so left out: {', '.join(unfinished)}."
    caption += suite_length_text(site, view, loaded)
    return table(["Machine and software", "When", "Runs", "Rollouts per run", "Each run's wall time"],
                 sitting_rows(site, found), caption=caption)


@macro(html=True)
def run_sittings(site: Site) -> str:
    """Each run set's sittings: machine, software, dates, runs, rollouts and wall times, from the headers (HTML)."""
    return "".join(set_sittings_html(site, view) for view in set_views(site))


# ---------------------------------------------------------------------------
# Warm starts
# ---------------------------------------------------------------------------

def warm_start_meta(root: Path, preset: str) -> dict | None:
    """The shipped warm start's sft_meta.json for a preset, or None where the project ships none."""
    path = root / WARM_STARTS / preset / SFT_META
    try:
        meta = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return meta if isinstance(meta, dict) else None


def _start_bits(run: Run) -> str | None:
    start = next((e for e in run.evals if e.phase == "start"), None)
    return start.correct_greedy if start is not None else None


def warm_start_rows(meta: dict) -> list[tuple[str, str]]:
    """(label, value) rows of a shipped warm start, from its sft_meta.json."""
    rule = meta.get("stop_rule") or {}
    final = meta.get("final_eval") or {}
    versions = meta.get("versions") or {}
    rows = [
        ("Stop rule", str(rule.get("rule", "not recorded")) + (f", scored on {rule['eval_on']}" if rule.get("eval_on") else "")),
        ("Stopped", f"at step {fmt_num(meta.get('stopped_at_step'))} of {fmt_num(meta.get('max_steps'))}: "
                    f"{meta.get('stop_reason', 'not recorded')}"),
        ("SFT data", f"{fmt_num(meta.get('train_rows'))} problems of {(meta.get('sft_data') or {}).get('file', 'not recorded')}"),
        ("Held-out accuracy at the end", f"{fmt_pct(final.get('accuracy_greedy'))} greedy, "
                                         f"{fmt_pct(final.get('accuracy_sampled'))} sampled, of {fmt_num(final.get('n'))} problems"),
        ("Time", duration_text(float(meta["wall_seconds"])) if isinstance(meta.get("wall_seconds"), (int, float))
         else "not recorded"),
        ("Made on", ", ".join(x for x in (str(meta.get("device", "")).upper(),
                                         ", ".join(f"{PACKAGE_NAMES.get(k, k)} {v}" for k, v in versions.items())) if x) or "not recorded"),
    ]
    return rows


def set_warm_start_html(site: Site, view: SetView) -> str:
    label = view.run_set.label
    if view.site is None:
        return ""
    loaded = view.site.catalog.loaded()
    parts = []
    for preset in sorted({r.header.preset for r in loaded if r.header.preset}):
        runs = [r for r in loaded if r.header.preset == preset]
        where = f"{WARM_STARTS.as_posix()}/{preset}"
        meta = warm_start_meta(site.root, preset)
        starts = [b for b in (_start_bits(r) for r in runs) if b]
        if meta is None:
            alike = len(set(starts)) == 1 and len(starts) == len(runs)
            text = (f"The project ships no warm start for the {preset} preset ({where} is absent): the runs name "
                    f"{', '.join(sorted({str(r.header.model.checkpoint) for r in runs}))} as their checkpoint. ")
            text += (f"All {fmt_num(len(runs))} runs began from the same greedy answers on the held-out problems, problem "
                     "by problem." if alike else
                     f"Their first evaluations differ ({fmt_num(len(set(starts)))} distinct among "
                     f"{fmt_num(len(starts))} runs that recorded one).")
            parts.append(note_html(text, "info", f"{label}: the {preset} warm start"))
            continue
        final = (meta.get("final_eval") or {}).get("correct_greedy")
        same = sum(1 for b in starts if final and b == final)
        rows = [[escape_text(k), escape_text(v)] for k, v in warm_start_rows(meta)]
        rows.append([escape_text("Runs that began from it"),
                     escape_text(f"{fmt_num(same)} of {fmt_num(len(runs))}: their first held-out evaluation is this warm "
                                 "start's last one, problem by problem")])
        parts.append(table(["", where], rows, caption=f"{label}: the warm start of the {preset} preset, from its "
                                                      f"{SFT_META}."))
    return "".join(parts)


@macro(html=True)
def warm_starts(site: Site) -> str:
    """Each run set's warm start: the shipped one's stop, time and accuracy, and the runs that began from it (HTML)."""
    return "".join(set_warm_start_html(site, view) for view in set_views(site))


# ---------------------------------------------------------------------------
# Held-out gains and the memorisation check
# ---------------------------------------------------------------------------

def memorisation_gap(run: Run) -> float | None:
    """The header's memorisation gap (schema.MemorisationCheck.gap: the RL pool's sampled accuracy, else
    rollout 0's training reward, minus the held-out sampled accuracy at the start; a fraction), or None."""
    check = run.header.memorisation_check
    return None if check is None else check.gap


def above_zero_text(up: int, n: int) -> str:
    """'3 of 3 intervals above zero'; for one run, whether its interval is."""
    if n == 0:
        return ""
    if n == 1:
        return "its interval above zero" if up else "its interval not above zero"
    return f"{fmt_num(up)} of {fmt_num(n)} intervals above zero"


def within_text(agree: int, n: int) -> str:
    """'3 of 3 within 5 points' (the memorisation check's tolerance); for one run, whether it is."""
    tolerance = f"within {fmt_num(round(100 * MEMORISATION_TOLERANCE))} points"
    if n == 0:
        return ""
    if n == 1:
        return tolerance if agree else f"not {tolerance}"
    return f"{fmt_num(agree)} of {fmt_num(n)} {tolerance}"


def gain_rows(site: Site, loaded: Sequence[Run]) -> list[list[str]]:
    variants: dict[str, list[Run]] = {}
    for run in sorted(loaded, key=lambda r: (r.variant not in COURSE_ALGORITHMS, r.variant, seed_order(r))):
        variants.setdefault(run.variant, []).append(run)
    rows = []
    for variant, runs in variants.items():
        gains = [g for g in (changes_of(r)["greedy"] for r in runs) if g is not None]
        gaps = [g for g in (memorisation_gap(r) for r in runs) if g is not None]
        checks = [r.header.memorisation_check for r in runs if r.header.memorisation_check is not None]
        agree = sum(1 for c in checks if c.agrees())
        up = sum(1 for g in gains if g.direction == "up")
        rows.append([
            two_lines(variant_name(site, variant), ", ".join(r.id for r in runs)),
            two_lines(", ".join(fmt_signed_points(g.change) for g in gains) or "–", above_zero_text(up, len(gains))),
            two_lines(range_text(gaps, fmt_signed_points), within_text(agree, len(checks))),
        ])
    return rows


def set_gains_html(site: Site, view: SetView) -> str:
    if view.site is None:
        return ""
    label = view.run_set.label
    return table(["Algorithm and runs", "Held-out greedy change (points), start to end", "Memorisation gap (points)"],
                 gain_rows(view.site, view.site.catalog.loaded()), numeric=(1, 2),
                 caption=f"{label}: each run's held-out greedy accuracy from its start evaluation to its end one, paired "
                         "problem by problem (an interval above zero: its 95% interval excludes zero); the memorisation "
                         "gap: at the start, the RL pool's sampled accuracy (rollout 0's training reward in a run that "
                         "did not log it) minus the held-out one, and how many headers hold it within the check's "
                         "tolerance.")


@macro(html=True)
def run_gains(site: Site) -> str:
    """Each run set's held-out greedy changes by algorithm and seed, and the memorisation gaps (HTML)."""
    return "".join(set_gains_html(site, view) for view in set_views(site))
