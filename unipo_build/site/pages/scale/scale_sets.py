"""Does it hold at scale? The run sets of the build, named from their runs' headers.

    {{ scale_sets() }}          each run set: label, preset, model size, rollouts (and runs a time limit
                                stopped early), seeds, device; a declared set that holds no run yet:
                                where it is read from and the command that makes it (HTML)
    {{ scale_gist() }}          a sentence: each set's model, rollouts and batch, against the papers'
    {{ scale_differences() }}   what the sets differ in besides scale (``set_differences``) (HTML)

The sets are mkdocs.yml's ``extra.unipo_sets`` (``unipo_build.core.sets``); :func:`set_views` gives each a
Site bound to its runs, which ``scale`` reads every claim through. :func:`set_lacks_text` names what no card
compares: the variants one set's catalogue holds runs of and the other's holds none of.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

import yaml

from unipo_build.core import project, runs, yamlfile
from unipo_build.core.paths import project_relative
from unipo_build.core.runs import split_variant
from unipo_build.core.sets import ENV_RUNS, RunSet, SetsError, available_sets, declared_sets, env_name
from unipo_build.core.numbers import fmt_num, plain_num
from unipo_build.site.fmt import escape_text, join_words, note_html
from unipo_build.site.facts.run_facts import COURSE_ALGORITHMS
from unipo_build.site.pages.learning.set_differences import rollouts_of, set_differences_html
from unipo_build.site.context import AuthorError, Site, macro
from unipo_build.site.facts.spec_facts import and_names, count_word

#: The command that trains a set, by the suite file the project keeps for it (data/suite-<id>.yaml;
#: the default set's is data/suite.yaml).
SUITE_COMMAND = "unipo suite --suite {suite} --out {out}"


@dataclass(frozen=True)
class SetView:
    run_set: RunSet
    site: Site | None  # None: the set holds no run in this build
    where: str  # its runs directory, relative to the project


def _resolver_paths(site: Site) -> tuple[Path, ...]:
    try:
        return runs.runs_source(site.root, site.extra).paths
    except runs.RunsError:
        return ()


def set_views(site: Site) -> list[SetView]:
    """Every declared set, with a Site reading its runs (None for one that holds none yet).

    The default set is read through the runs resolver (``UNIPO_RUNS``, ``extra.unipo_runs``), as
    the course is; where the resolver points at another declared set's directory (a copy of the
    course built on that set), the default set is read from its own declared directory instead."""
    try:
        declared = declared_sets(site.extra, site.root)
    except SetsError as err:
        raise AuthorError(str(err)) from err
    resolved = _resolver_paths(site)
    shown_ids = {s.id for s in available_sets(site.extra, site.root)}  # a UNIPO_RUNS build shows its runs alone
    others = {s.runs for s in declared if not s.default and s.runs is not None}
    out = []
    for s in declared:
        if s.default:
            use_declared = s.runs is not None and len(resolved) == 1 and resolved[0] in others
            where = s.runs if use_declared else None
            view_site = site.with_runs(runs.catalog_of(where)) if use_declared else site.with_runs(
                runs.catalog(runs.runs_source(site.root, site.extra)))
            shown = ", ".join(project_relative(p, site.root) for p in ((where,) if use_declared else resolved))
            out.append(SetView(s, view_site, shown))
            continue
        present = s.id in shown_ids
        out.append(SetView(s, site.with_runs(runs.catalog_of(s.runs)) if present else None,
                           project_relative(s.runs, site.root)))
    return out


def _distinct(values: Sequence) -> list:
    return sorted({v for v in values if v is not None}, key=str)


def _range_text(values: Sequence[int | float], fmt: Callable = fmt_num) -> str:
    values = _distinct(values)
    if not values:
        return "not recorded"
    if len(values) == 1:
        return fmt(values[0])
    return f"{fmt(min(values))} to {fmt(max(values))}"


def _device(hardware) -> str | None:
    """'NVIDIA H100 80GB HBM3', or 'CPU (x86_64, 2 cores)'."""
    if hardware is None:
        return None
    if hardware.device_name:
        return hardware.device_name
    detail = ", ".join(x for x in (hardware.cpu, f"{hardware.cores} cores" if hardware.cores else "") if x)
    return hardware.device.upper() + (f" ({detail})" if detail else "")


def _cut_short_text(loaded) -> str:
    """'none', or '3 of 19 runs (ppo, ppo-s1, ppo-s2), after 15 to 16 of 24 rollouts (a time limit)'."""
    cut = [(r, *rollouts_of(r)) for r in loaded]
    cut = [(r, done, asked) for r, done, asked in cut if done < asked]
    if not cut:
        return "none: every run trained the rollouts it asked for"
    return (f"{fmt_num(len(cut))} of {fmt_num(len(loaded))} runs ({', '.join(r.id for r, _, _ in cut)}), after "
            f"{_range_text([done for _, done, _ in cut])} of {_range_text([asked for _, _, asked in cut])} rollouts, "
            "by a time limit")


def set_facts(view: SetView) -> list[tuple[str, str]]:
    """(label, value) rows naming a set from its runs' headers."""
    cat = view.site.catalog
    loaded = cat.loaded()
    headers = [r.header for r in loaded]
    rollouts = [int(r.reader.table.rollouts[-1]) + 1 for r in loaded if r.reader.table.n]
    prompts = [h.hyperparameters.get("prompts_per_step") for h in headers]
    group = [h.hyperparameters.get("group_size") for h in headers]
    seeds = {a: len(view.site.catalog.seeds_of(a)) for a in COURSE_ALGORITHMS}
    counts = _distinct([n for n in seeds.values() if n])
    seed_text = ("none of the course's five algorithms" if not counts else
                 f"{_range_text(counts)} per core algorithm" + (
                     "" if all(seeds.values()) else
                     f" (no run of {and_names([view.site.algorithm_name(a) for a, n in seeds.items() if not n])})"))
    devices = _distinct([_device(h.hardware) for h in headers])
    return [
        ("Runs", f"{fmt_num(len(loaded))} in {view.where}"),
        ("Preset", ", ".join(str(p) for p in _distinct([h.preset for h in headers])) or "not recorded"),
        ("Model", _range_text([h.model.parameters for h in headers]) + " parameters"),
        ("Rollouts per run", _range_text(rollouts)),
        ("Stopped early", _cut_short_text(loaded)),
        ("Batch", f"{_range_text(prompts)} prompts \u00d7 {_range_text(group)} answers"),
        ("Seeds", seed_text),
        ("Trained on", ", ".join(str(d) for d in devices) or "not recorded"),
    ]


def suite_file(root: Path, run_set: RunSet) -> Path | None:
    """The suite file that trains a set: data/suite-<id>.yaml, or data/suite.yaml for the default set."""
    for name in (f"suite-{run_set.id}.yaml",) + (("suite.yaml",) if run_set.default else ()):
        path = root / project.RUNS.parent / name
        if path.is_file():
            return path
    return None


def _suite_summary(path: Path) -> str:
    """'17 runs of the gpu preset, 200 rollouts each' from a suite file ("" if it does not read)."""
    try:
        data = yamlfile.load(path) or {}
    except (OSError, yaml.YAMLError):
        return ""
    if not isinstance(data, dict) or not isinstance(data.get("runs"), list):
        return ""
    bits = [f"{fmt_num(len(data['runs']))} runs"]
    if data.get("preset"):
        bits.append(f"of the {data['preset']} preset")
    text = " ".join(bits)
    if isinstance(data.get("rollouts"), int):
        text += f", {fmt_num(data['rollouts'])} rollouts each"
    return text


def missing_set_html(site: Site, view: SetView) -> str:
    s = view.run_set
    suite = suite_file(site.root, s)
    where = escape_text(view.where)
    if s.runs is not None and s.runs.is_dir() and any(p.is_dir() for p in s.runs.iterdir()):
        text = (f"<p><strong>{escape_text(s.label)}</strong> is not in this build: it was built on the runs "
                f"<code>{ENV_RUNS}</code> names, alone. <code>{escape_text(env_name(s.id))}={where}</code> brings "
                "this set back beside them.</p>")
        return (f'<div class="admonition info unipo-scale-missing"><p class="admonition-title">'
                f"{escape_text(s.label)}: not in this build</p>{text}</div>")
    text = (f"<p><strong>{escape_text(s.label)}</strong> is not in this build: mkdocs.yml "
            f"(<code>extra.unipo_sets</code>, id <code>{escape_text(s.id)}</code>) reads it from "
            f"<code>{where}</code>, which holds no run yet.</p>")
    if suite is not None:
        command = SUITE_COMMAND.format(suite=project_relative(suite, site.root), out=view.where)
        summary = _suite_summary(suite)
        text += (f"<p>It is made by <code>{escape_text(command)}</code>"
                 + (f" ({escape_text(summary)})" if summary else "")
                 + ", then the site is built again: this page then sets each claim of that set beside the "
                 "column shown here.</p>")
    else:
        text += (f"<p>Train runs into <code>{where}</code> (<code>unipo train ALGO --out {where}/ALGO</code>; the "
                 "README's Training section) and build the site again.</p>")
    return (f'<div class="admonition warning unipo-scale-missing"><p class="admonition-title">'
            f"{escape_text(s.label)}: not trained yet</p>{text}</div>")


@macro(name="scale_sets", html=True)
def scale_sets_html(site: Site) -> str:
    """Each run set of the build named from its runs' headers, or how to make one that is missing (HTML)."""
    views = set_views(site)
    cards = []
    for view in views:
        if view.site is None:
            cards.append(missing_set_html(site, view))
            continue
        rows = "".join(f"<div><dt>{escape_text(k)}</dt><dd>{escape_text(v)}</dd></div>" for k, v in set_facts(view))
        default = " (the course's default)" if view.run_set.default and len(views) > 1 else ""
        cards.append(f'<div class="unipo-scale-set"><p class="unipo-scale-set-title">'
                     f"{escape_text(view.run_set.label)}{escape_text(default)}</p><dl>{rows}</dl></div>")
    if len(views) == 1:
        cards.append(note_html("mkdocs.yml declares no second run set (extra.unipo_sets), so there is nothing to set "
                               "beside this one.", "warning", "One set only"))
    return f'<div class="unipo-scale-sets">{"".join(cards)}</div>'


def set_gist(view: SetView) -> str:
    """'tiny preset, 1,060,480 parameters, 100 rollouts, seeds: 3 per core algorithm': the set in one line."""
    facts = dict(set_facts(view))
    return (f"{facts['Preset']} preset, {facts['Model']}, {facts['Rollouts per run']} rollouts, "
            f"seeds: {facts['Seeds']}")


@dataclass(frozen=True)
class Lacking:
    """A variant (an algorithm, or one sampled at a lag: ``grpo@lag8``) one set holds runs of and another none of."""

    variant: str
    name: str  # as the course names it: the spec's name (an ablation rung's in quotes)
    runs: int  # the holding set's runs of it (its seeds)
    rung: bool = False  # a rung of the ablation ladder, not a chapter's algorithm


def variants_lacking(having: Site, lacking: Site) -> list[Lacking]:
    """The variants ``having``'s catalogue holds runs of and ``lacking``'s holds none of: algorithms first, then
    those sampled at a lag, then the ablation ladder's rungs, each group by id."""
    theirs = {r.variant for r in lacking.catalog.loaded()}
    counts: dict[str, int] = {}
    for run in having.catalog.loaded():
        if run.variant not in theirs:
            counts[run.variant] = counts.get(run.variant, 0) + 1
    rungs = having.ablation_ids()

    def order(variant: str) -> tuple[int, str, int]:
        base, lag = split_variant(variant)
        return (2 if base in rungs else 1 if lag else 0, base, lag)

    out = []
    for variant in sorted(counts, key=order):
        rung = split_variant(variant)[0] in rungs
        name = having.algorithm_name(variant)
        out.append(Lacking(variant, f"\u201c{name}\u201d" if rung else name, counts[variant], rung))
    return out


def _lacking_list(items: list[Lacking]) -> str:
    """'CISPO (five seeds); GSPO; and the ladder rungs “− length norm” and “− std”' (semicolons: a lagged
    sampler's name has a comma)."""
    def named(item: Lacking) -> str:
        return item.name + (f" ({count_word(item.runs)} seeds)" if item.runs > 1 else "")

    parts = [named(i) for i in items if not i.rung]
    rungs = [named(i) for i in items if i.rung]
    if rungs:
        parts.append(f"the ladder rung{'s' if len(rungs) > 1 else ''} {and_names(rungs)}")
    return join_words(parts)


def set_lacks_text(base: SetView, other: SetView) -> str:
    """What no card of the scale page compares between two present sets, read from their catalogues: the
    variants each holds runs of and the other none of, named, with how many runs stand behind them."""
    b, o = base.run_set.label, other.run_set.label
    missing, extra = variants_lacking(base.site, other.site), variants_lacking(other.site, base.site)
    if not missing and not extra:
        return f"The {b} and the {o} hold runs of the same algorithms."
    out = []
    for items, holder, lacker in ((missing, b, o), (extra, o, b)):
        if items:
            n = sum(i.runs for i in items)
            out.append(f"Not on any card: the {lacker} has no run of {_lacking_list(items)}. The {holder} holds "
                       f"{fmt_num(n)} run{'s' if n != 1 else ''} of {'them' if len(items) > 1 else 'it'}, so what "
                       f"{'their chapters find' if len(items) > 1 else 'its chapter finds'} is measured at its scale "
                       "alone.")
    return " ".join(out)


#: The scale of the papers the course's claims come from, for the sentence that sets the sets beside
#: them: (paper, model parameters, prompts per step, answers per prompt), as each paper reports.
PAPER_SCALES = (
    ("DeepSeekMath's GRPO (arXiv 2402.03300)", 7e9, 1024, 64),
    ("DAPO (arXiv 2503.14476, Qwen2.5-32B)", 32e9, 512, 16),
)

def _orders(ratio: float) -> int:
    """Orders of magnitude in a ratio, to the nearest whole one."""
    return int(round(math.log10(ratio))) if ratio >= 1 else 0


def _orders_words(low: int, high: int) -> str:
    """'two to three orders', 'one order'."""
    if low == high:
        return f"{count_word(low)} order" + ("" if low == 1 else "s")
    return f"{count_word(low)} to {count_word(high)} orders"


@macro(name="scale_gist")
def scale_gist_text(site: Site) -> str:
    """The sets' model size, rollouts and batch, set beside the papers' (how far below them the
    largest set is, in orders of magnitude of parameters)."""
    present = [v for v in set_views(site) if v.site is not None]
    parts, largest = [], 0
    for view in present:
        headers = [r.header for r in view.site.catalog.loaded()]
        params = _distinct([h.model.parameters for h in headers])
        if params:
            largest = max(largest, max(params))
        facts = dict(set_facts(view))
        parts.append(f"{view.run_set.label}: a model of {facts['Model']}, {facts['Rollouts per run']} rollouts of "
                     f"{facts['Batch']}")
    if not parts:
        return "No run set of this build holds runs."
    text = "The runs here are small. " + "; ".join(parts) + "."
    if largest:
        low, high = (_orders(p / largest) for p in (min(x[1] for x in PAPER_SCALES), max(x[1] for x in PAPER_SCALES)))
        span = _orders_words(low, high)
        papers = and_names([f"{name}: {plain_num(p / 1e9)} billion parameters, {fmt_num(prompts)} prompts \u00d7 "
                            f"{fmt_num(g)} answers per step" for name, p, prompts, g in PAPER_SCALES])
        text += (f" The papers trained far larger models on far larger batches ({papers}): the largest model here is "
                 f"{span} of magnitude smaller. A claim that holds in both sets holds at these two small scales, not "
                 "at theirs.")
    return text


@macro(name="scale_differences", html=True)
def scale_differences_html(site: Site) -> str:
    """Each present set's core runs: how they were trained and their gains at matched updates."""
    present = [(v.run_set.label, v.site) for v in set_views(site) if v.site is not None]
    return set_differences_html(site, present)
