"""Macros of the playground pages (registered beside their code with ``unipo_build.site.context.macro``).

The pages are prose; these macros supply everything else:

- ``pg_data(page)``: the page's constants and defaults as JSON (``<template id="pg-data-<page>">``)
  for unipo_build/site/playgrounds/playgrounds.js;
- ``pg_controls(page, names)``: a row of the reader's controls; a control may appear in
  several rows on a page (next to each figure it drives) and the script keeps them in step;
- ``pg_figure(name, caption)``: one chart, drawn with the page's default settings;
- ``pg_grid()``: the GDPO page's toggle grid;
- ``objective_facts()``, ``gdpo_facts()``, ``shape_facts()``: every number the prose quotes,
  computed by the playground modules; ``num(x, decimals)`` (``numbers.fmt_fixed``) and
  ``pct(x, decimals)`` (``numbers.fmt_pct``) format one.
"""

from __future__ import annotations

import functools
import math
import re
from dataclasses import dataclass
from typing import Any

import numpy as np

from unipo_build.site import render
from unipo_build.core.numbers import fmt_fixed, fmt_pct, param_text
from unipo_build.core.objective import response_weight_shares
from unipo_build.site.palette import (
    ALGORITHMS,
    DIVERGING,
    DIVERGING_DARK,
    SEQUENTIAL,
    SEQUENTIAL_DARK,
    colour_name,
)
from unipo_build.site.context import Site, macro
from unipo_build.site.playgrounds import charts, shape_charts
from unipo_build.site.playgrounds import loss_shapes as ls
from unipo_build.site.playgrounds import multi_reward as mr
from unipo_build.site.playgrounds import objective_1d as o1

PAGES = ("objective", "gdpo", "shapes")


# ---------------------------------------------------------------------------
# Controls
# ---------------------------------------------------------------------------

@dataclass(frozen=True)
class Control:
    """One control: a select (``options``) or a slider over ``choices`` (by index)."""

    name: str
    label: str
    default: Any
    choices: tuple = ()
    options: tuple = ()  # (value, text) pairs for a select
    number: tuple = ()  # (min, max) for a number box
    help: str = ""


def _objective_controls() -> dict[str, Control]:
    d = o1.Settings()
    return {c.name: c for c in (
        Control("preset", "Reward", d.preset,
                options=tuple((k, p.label) for k, p in o1.PRESETS.items()),
                help="the reward function r(a)"),
        Control("beta", "β", d.beta, choices=o1.BETA_CHOICES, help="strength of the KL penalty"),
        Control("nSamples", "N", d.n_samples, choices=(2, 4, 8, 16, 32, 64, 128),
                help="samples per step for PG and PPO, pairs for DPO, draws for DRO"),
        Control("groupSize", "G", d.group_size, choices=(2, 4, 8, 16, 32, 64),
                help="GRPO's group size"),
        Control("eps", "ε", d.eps, choices=tuple(round(0.05 * k, 2) for k in range(1, 11)),
                help="clip range of PPO and GRPO"),
        Control("steps", "steps", d.steps, choices=tuple(range(20, 401, 10)),
                help="optimisation steps"),
        Control("seed", "seed", d.seed, number=(1, 9999), help="random seed of the sampled methods"),
    )}


WEIGHT_PRESETS = {
    "equal": ("equal weights (1, 1, 1)", (1.0, 1.0, 1.0)),
    "correct": ("correct counts double (2, 1, 1)", (2.0, 1.0, 1.0)),
    "lopsided": ("concise barely counts (1, 1, 0.25)", (1.0, 1.0, 0.25)),
}


def _gdpo_controls() -> dict[str, Control]:
    d = mr.ToySettings()
    return {c.name: c for c in (
        Control("toyGroup", "G", d.group_size, choices=(2, 3, 4, 6, 8, 12, 16), help="rollouts per group"),
        Control("toyWeights", "Weights", "equal",
                options=tuple((k, v[0]) for k, v in WEIGHT_PRESETS.items()),
                help="weights of correct, format and concise"),
        Control("toySeed", "seed", d.seed, number=(1, 9999), help="first of the seeds"),
    )}


def _shape_controls() -> dict[str, Control]:
    return {c.name: c for c in (
        Control("eps", "ε (PPO, GRPO, Dr. GRPO)", ls.DEFAULT_EPS, choices=ls.EPS_CHOICES,
                help="symmetric clip range"),
        Control("eps_low", "DAPO ε_low", ls.DAPO_DEFAULT[0], choices=ls.EPS_CHOICES, help="lower clip range"),
        Control("eps_high", "DAPO ε_high", ls.DAPO_DEFAULT[1], choices=ls.EPS_CHOICES, help="upper clip range"),
        Control("other_len", "length of responses 2-4", ls.DEFAULT_OTHER_LENGTH, choices=ls.OTHER_LENGTHS,
                help="tokens"),
    )}


CONTROLS = {"objective": _objective_controls, "gdpo": _gdpo_controls, "shapes": _shape_controls}


def control_html(page: str, control: Control) -> str:
    e = render.escape_text
    attrs = f'data-pg-control="{e(control.name)}" data-pg-page="{e(page)}"'
    title = f' title="{e(control.help)}"' if control.help else ""
    if control.options:
        opts = "".join(
            f'<option value="{e(v)}"{" selected" if v == control.default else ""}>{e(t)}</option>'
            for v, t in control.options)
        field = f'<select {attrs} aria-label="{e(control.label)}: {e(control.help)}">{opts}</select>'
        return (f'<label class="pg-control pg-select"{title}><span class="pg-label">{e(control.label)}</span>'
                f'{field}</label>')
    if control.number:
        lo, hi = control.number
        field = (f'<input type="number" min="{lo}" max="{hi}" step="1" value="{e(control.default)}" {attrs} '
                 f'aria-label="{e(control.label)}: {e(control.help)}">')
        return (f'<label class="pg-control pg-number"{title}><span class="pg-label">{e(control.label)}</span>'
                f'{field}</label>')
    index = control.choices.index(control.default)
    choices = render.json_for_script(list(control.choices)).replace('"', "&quot;")
    field = (f'<input type="range" min="0" max="{len(control.choices) - 1}" step="1" value="{index}" {attrs} '
             f'data-pg-choices="{choices}" aria-label="{e(control.label)}: {e(control.help)}" '
             f'aria-valuetext="{e(param_text(control.default))}">')
    return (f'<label class="pg-control pg-range"{title}><span class="pg-label">{e(control.label)}</span>'
            f'{field}<output>{e(param_text(control.default))}</output></label>')


@macro(name="pg_controls", html=True, with_site=False)
def controls_html(page: str, *names: str) -> str:
    table = CONTROLS[page]()
    unknown = [n for n in names if n not in table]
    if unknown:
        raise KeyError(f"unknown controls {unknown} for page {page!r}: {sorted(table)}")
    body = "".join(control_html(page, table[n]) for n in names)
    return f'<div class="pg-controls" role="group" aria-label="Controls">{body}</div>'


# ---------------------------------------------------------------------------
# Page data and figures
# ---------------------------------------------------------------------------

def page_data(page: str) -> dict:
    """What the page's script needs: the simulation's settings, and the ink colours of the palette."""
    ink = {"ink": {"light": charts.INK_LIGHT, "dark": charts.INK_DARK},
           "ramps": {"diverging": list(DIVERGING), "diverging_dark": list(DIVERGING_DARK),
                     "sequential": list(SEQUENTIAL), "sequential_dark": list(SEQUENTIAL_DARK)}}
    if page == "objective":
        return {"sim": o1.js_config(), "defaults": o1.settings_as_js(o1.Settings()), **ink}
    if page == "gdpo":
        return {"sim": mr.js_config(), "defaults": mr.toy_settings_as_js(mr.ToySettings()),
                "toySeeds": charts.TOY_SEEDS,
                "weights": {k: list(v[1]) for k, v in WEIGHT_PRESETS.items()},
                "grid": [list(r) for r in mr.DEFAULT_GRID],
                "collideGrid": [list(r) for r in mr.COLLIDE_GRID], **ink}
    if page == "shapes":
        return dict(ink)
    raise KeyError(page)


@functools.lru_cache(maxsize=None)
def figure_spec(name: str) -> dict:
    """The spec of figure ``name``, with the page's default settings (cached per build)."""
    builders = {
        "axis": lambda: charts.axis_spec(o1.Settings()),
        "surface": lambda: charts.surface_spec(o1.Settings()),
        "band": lambda: charts.band_spec(o1.Settings()),
        "advantages": charts.advantage_spec,
        "toy": lambda: charts.toy_spec(mr.ToySettings()),
        "shapes": shape_charts.shapes_spec,
        "aggregation": shape_charts.aggregation_spec,
    }
    return builders[name]()


@macro(name="pg_grid", html=True, with_site=False)
def grid_html(grid=mr.DEFAULT_GRID) -> str:
    e = render.escape_text
    head = "".join(f'<th scope="col">{e(n)}</th>' for n in mr.REWARD_NAMES)
    rows = []
    for i, vec in enumerate(grid):
        cells = "".join(
            f'<td><button type="button" class="pg-toggle" data-pg-cell="{i},{k}" '
            f'aria-pressed="{"true" if v else "false"}" '
            f'aria-label="rollout {i + 1}, {e(mr.REWARD_NAMES[k])}">{int(v)}</button></td>'
            for k, v in enumerate(vec))
        rows.append(f'<tr><th scope="row">#{i + 1}</th>{cells}</tr>')
    actions = ('<div class="pg-grid-actions">'
               '<button type="button" class="md-button" data-pg-grid-action="reset">Reset</button>'
               '<button type="button" class="md-button" data-pg-grid-action="collide">Same totals</button>'
               '<button type="button" class="md-button" data-pg-grid-action="random">Random</button></div>')
    return (f'<div class="pg-grid" data-pg-page="gdpo"><table class="pg-grid-table">'
            f'<caption>12 rollouts of one prompt: 1 = that reward was earned (click to toggle)</caption>'
            f'<thead><tr><th scope="col">rollout</th>{head}</tr></thead>'
            f'<tbody>{"".join(rows)}</tbody></table>{actions}'
            f'<p class="pg-status" data-pg-status="gdpo" aria-live="polite"></p></div>')


@functools.lru_cache(maxsize=None)
def objective_facts() -> dict:
    d = o1.Settings()
    runs = o1.run_all(d)
    star = o1.pi_star(d.bumps, d.beta)
    end = {m: (t.mu[-1], t.sigma[-1], t.objective[-1]) for m, t in runs.items()}
    # beta = 1: the Gaussian family can almost represent pi*, so DPO and DRO land on its moments.
    wide = o1.Settings(beta=1.0, steps=400, n_samples=64)
    star_wide = o1.pi_star(wide.bumps, wide.beta)
    dpo_wide = o1.run_method("dpo", wide)
    dro_wide = o1.run_method("dro", wide)
    bump = d.bumps[0]
    trap = o1.Settings(preset="trap")
    trap_runs = {m: o1.run_method(m, trap) for m in ("exact", "pg", "dpo", "dro")}
    trap_best = o1.best_gaussian(trap.bumps, trap.beta)
    return {
        "ref_sigma": o1.REF_SIGMA,
        "start_mu": d.start_mu,
        "start_sigma": d.start_sigma,
        "beta": d.beta,
        "beta_min": min(o1.BETA_CHOICES),
        "beta_max": max(o1.BETA_CHOICES),
        "n": d.n_samples,
        "g": d.group_size,
        "eps": d.eps,
        "epochs": d.epochs,
        "steps": d.steps,
        "band_seeds": o1.BAND_SEEDS,
        "lr": dict(o1.LEARNING_RATES),
        "value_lr": o1.VALUE_LEARNING_RATE,
        "sigma_min": math.exp(o1.LOG_SIGMA_MIN),
        "sigma_max": math.exp(o1.LOG_SIGMA_MAX),
        "bump_height": bump.height,
        "bump_center": bump.center,
        "bump_width": bump.width,
        "star_mean": star.mean,
        "star_std": star.std,
        "star_j": d.beta * star.log_z,
        "end": end,
        "grpo_clip": float(np.mean(runs["grpo"].clip_fraction)),
        "ppo_clip": float(np.mean(runs["ppo"].clip_fraction)),
        "wide_beta": wide.beta,
        "wide_steps": wide.steps,
        "wide_n": wide.n_samples,
        "wide_star_mean": star_wide.mean,
        "wide_star_std": star_wide.std,
        "wide_dpo": (dpo_wide.mu[-1], dpo_wide.sigma[-1]),
        "wide_dro": (dro_wide.mu[-1], dro_wide.sigma[-1]),
        "wide_dro_value": dro_wide.value[-1],
        "wide_log_z_beta": wide.beta * star_wide.log_z,
        "trap_hill": trap.bumps[0].center,
        "trap_peak": trap.bumps[1].center,
        "trap_end": {m: (t.mu[-1], t.sigma[-1], t.objective[-1]) for m, t in trap_runs.items()},
        "trap_best": trap_best,
    }


@functools.lru_cache(maxsize=None)
def gdpo_facts() -> dict:
    rows = {r.totals: r for r in mr.two_rollout_example()}
    grid = np.array(mr.DEFAULT_GRID, dtype=np.float64)
    grpo = mr.grpo_advantages(grid[None])[0]
    collapsed = mr.collapsed_groups(grid, grpo)
    toy = mr.ToySettings()
    runs = {m: np.array([mr.train_bernoulli(m, toy, seed=toy.seed + k) for k in range(charts.TOY_SEEDS)])
            for m in mr.TOY_METHODS}
    early = 75
    medians = {m: np.median(r, axis=0) for m, r in runs.items()}
    return {
        "rows": rows,
        "n_rollouts": len(grid),
        "n_rewards": grid.shape[1],
        "collapsed_sets": len(collapsed),
        "collapsed_rollouts": sum(len(c) for c in collapsed),
        "batch_eps": mr.BATCH_EPS,
        "toy": toy,
        "toy_seeds": charts.TOY_SEEDS,
        "early": early,
        "early_correct": {m: float(medians[m][early, 0]) for m in mr.TOY_METHODS},
        "final": {m: [float(x) for x in medians[m][-1]] for m in mr.TOY_METHODS},
        "init": toy.init_probs,
    }


def two_rollout_table() -> str:
    """The GDPO paper's two-rollout example as a Markdown table, computed by multi_reward."""
    lines = [
        "| totals | reward vectors (rollout 1; rollout 2) | GRPO | GDPO before the batch step | GDPO |",
        "| --- | --- | --- | --- | --- |",
    ]
    for row in mr.two_rollout_example():
        vectors = "; ".join("(" + ", ".join(str(v) for v in vec) + ")" for vec in row.vectors)
        cells = [", ".join(fmt_fixed(x, 4, signed=True) for x in pair) for pair in (row.grpo, row.gdpo_sum, row.gdpo)]
        lines.append(f"| {row.totals} | {vectors} | {cells[0]} | {cells[1]} | {cells[2]} |")
    return "\n".join(lines)


@macro(name="playground_palette", html=True, with_site=False)
def palette_html() -> str:
    """A swatch list of the method colours shared by the playground pages."""
    e = render.escape_text
    names = {"pg": "REINFORCE / policy gradient", "ppo": "PPO", "grpo": "GRPO", "dpo": "DPO",
             "dro": "DRO", "gdpo": "GDPO", "dapo": "DAPO", "dr_grpo": "Dr. GRPO", "gspo": "GSPO"}
    items = "".join(
        f'<li><span class="pg-swatch" style="background:{e(charts.METHOD_COLOURS[k])}"></span>{e(v)}</li>'
        for k, v in names.items())
    items += ('<li><span class="pg-swatch pg-swatch-ink"></span>exact gradient and π* '
              "(the page's text colour)</li>")
    return f'<ul class="pg-palette">{items}</ul>'


def trainer_reward_weights() -> dict:
    """The trainer's reward weights (``unipo_build.core.presets.REWARD_WEIGHTS``, which training/reward.py adds up)."""
    from unipo_build.core.presets import REWARD_WEIGHTS

    return dict(REWARD_WEIGHTS)


@functools.lru_cache(maxsize=None)
def shape_facts() -> dict:
    short, long_ = 10, 1000
    shares = {k: response_weight_shares(k, [short, long_], normalizer=long_) for k in ls.AGGREGATION_LABELS}
    eps = ls.DEFAULT_EPS
    low, high = ls.DAPO_DEFAULT
    # how far a token's probability can rise in one clipped update, from p to p (1 + eps)
    return {
        "eps": eps,
        "eps_low": low,
        "eps_high": high,
        "gspo_low": ls.GSPO_EPS[0],
        "gspo_high": ls.GSPO_EPS[1],
        "ratio_step": ls.RATIO_STEP,
        "eps_min": min(ls.EPS_CHOICES),
        "eps_max": max(ls.EPS_CHOICES),
        "short": short,
        "long": long_,
        "token_mean_long": float(shares["token_mean"][1]),
        "seq_mean_long": float(shares["seq_mean_token_mean"][1]),
        "rare_p": 0.01,
        "rare_reach_grpo": 0.01 * (1 + eps),
        "rare_reach_dapo": 0.01 * (1 + high),
        "group": ls.GROUP_SIZE,
        "max_length": ls.MAX_LENGTH,
        "other_default": ls.DEFAULT_OTHER_LENGTH,
    }


# ---------------------------------------------------------------------------
# Registration
# ---------------------------------------------------------------------------

@macro(html=True, scripts=("playgrounds",))
def pg_data(site: Site, page: str) -> str:
    if page not in PAGES:
        raise KeyError(f"unknown playground page {page!r}")
    # read in the browser with UNIPO.data("pg-data-<page>")
    return render.json_data(page_data(page), data_id=f"pg-data-{page}")


def caption_colours(caption: str) -> str:
    """``{colour:<algorithm id>}`` in a caption becomes the name of the colour the chart draws that
    algorithm in ('bluish green'), so a caption never names a colour the figure does not show."""
    def name(match: re.Match) -> str:
        return colour_of(None, match.group(1))
    return re.sub(r"\{colour:([A-Za-z0-9_]+)\}", name, caption)


@macro(html=True)
def pg_figure(site: Site, name: str, caption: str | None = None) -> str:
    """One chart with the page's default settings; ``{colour:<id>}`` in the caption names a colour."""
    caption = caption_colours(caption) if caption else caption
    spec = figure_spec(name)
    inner = render.vega_embed(spec, chart_id=site.chart_id(spec, prefix=f"pg-{name}"), caption=caption)
    return f'<div class="pg-figure" data-pg-chart="{render.escape_text(name)}">{inner}</div>'


@macro
def colour_of(site: Site, algorithm: str) -> str:
    """The name of the colour an algorithm or method is drawn in ('bluish green' for GRPO), for
    captions: a caption names the colour the chart draws (site/palette.py)."""
    if algorithm not in ALGORITHMS:
        raise KeyError(f"colour_of: {algorithm!r} has no colour of its own in site/palette.py ALGORITHMS")
    return colour_name(ALGORITHMS[algorithm])


for _fn in (objective_facts, gdpo_facts, shape_facts, trainer_reward_weights):
    macro(_fn, with_site=False)
# The numbers the prose quotes, by the pages' names: numbers.fmt_fixed (num(x, 2): fixed decimals, a true
# minus) and numbers.fmt_pct (pct(x, 0)); the pages always give the decimals.
macro(fmt_fixed, name="num", with_site=False)
macro(fmt_pct, name="pct", with_site=False)
# A Markdown table of the project's own numbers (no input strings).
macro(two_rollout_table, with_site=False, markdown=True)
