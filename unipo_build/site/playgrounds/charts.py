"""Vega-Lite specs of the three playgrounds, and the data they start with.

Each chart reads named datasets (``datasets`` at the top of the spec), so the browser
script can swap a dataset with ``view.data(name, rows)`` after a simulation, and Vega-Lite
parameters (``focus``, ``eps``, ...) that the page's own controls set with
``view.signal``. The build fills every dataset for the page's default settings, so each
figure is complete before any script runs.

Colours:
- values (objective J, advantages, rewards) use the site's one diverging scale, ColorBrewer
  PiYG (Vega's ``pinkyellowgreen``): negative pink, zero near-white, positive green;
- methods use ``METHOD_COLOURS`` on all three pages (Okabe-Ito and Paul Tol hues that are
  told apart with the common colour-vision deficiencies and read on light and dark pages);
  the exact gradient and pi* are drawn in ``ink``, the page's text colour, which the
  script sets from Material's colour scheme.
"""

from __future__ import annotations

import math

import numpy as np

from unipo_build.site.playgrounds import multi_reward as mr
from unipo_build.site.playgrounds import objective_1d as o1
from unipo_build.site.palette import ALGORITHMS, DIVERGING, role

DIVERGING_SCHEME = "pinkyellowgreen"  # ColorBrewer PiYG, as the Step Inspector's token colours
INK_LIGHT = role("ink")
INK_DARK = role("ink", dark=True)

#: Each method's colour: the site's palette, keyed by algorithm id (the playgrounds' policy
#: gradient is REINFORCE's; the exact gradient is drawn in the page's ink).
METHOD_COLOURS = {"exact": INK_LIGHT, "pg": ALGORITHMS["reinforce"], **ALGORITHMS}
NEUTRAL = role("neutral")  # pi_ref and other references

SCHEMA = "https://vega.github.io/schema/vega-lite/v6.json"


def _r(x: float, digits: int = 5) -> float:
    return float(round(float(x), digits))


#: The page's background behind a chart (Material's light scheme; playgrounds.js sets the current one).
PAPER_LIGHT = "#ffffff"


def _ink_param() -> dict:
    return {"name": "ink", "value": INK_LIGHT}


def _method_scale(methods, labels) -> dict:
    return {
        "domain": [labels[m] for m in methods],
        "range": [METHOD_COLOURS[m] for m in methods],
    }


# ---------------------------------------------------------------------------
# Playground 1: the objective on one axis
# ---------------------------------------------------------------------------

AXIS_RANGE = (-6.0, 6.0, 241)


def axis_data(settings: o1.Settings) -> dict[str, list[dict]]:
    """Reward and densities on the action axis: ``pg_reward``, ``pg_density``.

    Like every dataset here, a row holds arrays (one row per curve) that the spec expands
    with a ``flatten`` transform: a third of the size of one row per point.
    """
    a = np.linspace(*AXIS_RANGE)
    bumps = settings.bumps
    star = o1.pi_star(bumps, settings.beta)
    ref = np.exp(o1.log_normal_pdf(a, 0.0, o1.REF_SIGMA))
    opt = o1.pi_star_density(a, bumps, settings.beta)
    matched = np.exp(o1.log_normal_pdf(a, star.mean, star.std))
    curves = {"π_ref": ref, "π*": opt, "Gaussian with π*'s mean and std": matched}
    xs = [_r(x, 3) for x in a]
    return {
        "pg_reward": [{"a": xs, "r": [_r(y) for y in o1.reward(a, bumps)]}],
        "pg_density": [{"curve": name, "a": xs, "p": [_r(y) for y in ys]} for name, ys in curves.items()],
    }


def axis_spec(settings: o1.Settings) -> dict:
    curves = ["π_ref", "π*", "Gaussian with π*'s mean and std"]
    x = {"field": "a", "type": "quantitative", "title": "action a",
         "scale": {"domain": list(AXIS_RANGE[:2]), "nice": False}}
    reward_panel = {
        "height": 110,
        "width": 600,
        "data": {"name": "pg_reward"},
        "transform": [{"flatten": ["a", "r"]}],
        "layer": [
            {"mark": {"type": "area", "opacity": 0.85, "line": False},
             "encoding": {
                 "x": {**x, "title": None, "axis": {"labels": False, "ticks": False}},
                 "y": {"field": "r", "type": "quantitative", "title": "reward r(a)"},
                 "fill": {"value": "#7fbc41"},
             }},
            {"mark": {"type": "line", "strokeWidth": 2, "color": {"expr": "ink"}},
             "encoding": {"x": {**x, "title": None}, "y": {"field": "r", "type": "quantitative"}}},
            {"mark": {"type": "rule", "strokeDash": [2, 2], "color": NEUTRAL},
             "encoding": {"y": {"datum": 0}}},
        ],
    }
    density_panel = {
        "height": 190,
        "width": 600,
        "data": {"name": "pg_density"},
        "transform": [{"flatten": ["a", "p"]}],
        "layer": [
            {"transform": [{"filter": "datum.curve === 'π*'"}],
             "mark": {"type": "area", "opacity": 0.18, "color": {"expr": "ink"}},
             "encoding": {"x": x, "y": {"field": "p", "type": "quantitative"}}},
            {"mark": {"type": "line", "strokeWidth": 2},
             "encoding": {
                 "x": x,
                 "y": {"field": "p", "type": "quantitative", "title": "density"},
                 "stroke": {"field": "curve", "type": "nominal", "title": None,
                            "scale": {"domain": curves, "range": [NEUTRAL, INK_LIGHT, INK_LIGHT]},
                            "legend": {"orient": "top", "direction": "horizontal", "labelLimit": 320}},
                 "strokeDash": {"field": "curve", "type": "nominal",
                                "scale": {"domain": curves, "range": [[6, 3], [1, 0], [2, 2]]},
                                "title": None,
                                "legend": {"orient": "top", "direction": "horizontal", "labelLimit": 320}},
             }},
        ],
    }
    # A scale's colours cannot come from a parameter, so the script rewrites INK_LIGHT
    # wherever it occurs in the spec (scale ranges included) when the scheme is dark.
    return {
        "$schema": SCHEMA,
        "params": [_ink_param()],
        "datasets": axis_data(settings),
        "vconcat": [reward_panel, density_panel],
        "spacing": 6,
        "resolve": {"scale": {"x": "shared"}},
        # vconcat cannot use width "container": the script sizes the panels (one column)
        "usermeta": {"pgLayout": {"columns": 1, "fixed": 70, "perColumn": 0, "min": 220, "max": 900}},
    }


def surface_rows(bumps, beta: float) -> list[dict]:
    """``pg_surface``: one row per sigma with the mu grid and J as arrays (flattened in Vega)."""
    mu_grid, sigma_grid, values = o1.surface(bumps, beta)
    return [
        {"sigma": _r(sigma_grid[j, 0], 4), "mu": [_r(m, 4) for m in mu_grid[j]],
         "J": [_r(v, 4) for v in values[j]]}
        for j in range(values.shape[0])
    ]


def trajectory_rows(runs: dict[str, o1.Trajectory]) -> list[dict]:
    """``pg_traj``: one row per method with arrays step, mu, sigma, J."""
    return [
        {"method": o1.METHOD_LABELS[m], "step": list(range(len(t.mu))),
         "mu": [_r(x, 4) for x in t.mu], "sigma": [_r(math.exp(x), 4) for x in t.log_sigma],
         "J": [_r(x, 4) for x in t.objective]}
        for m, t in sorted(runs.items(), key=lambda item: item[0] == "exact")  # exact drawn last, on top
    ]


def marker_rows(settings: o1.Settings) -> list[dict]:
    star = o1.pi_star(settings.bumps, settings.beta)
    return [
        {"kind": "start", "label": "start (π_ref)", "mu": settings.start_mu, "sigma": settings.start_sigma},
        {"kind": "pistar", "label": "π* (mean, std)", "mu": _r(star.mean, 4), "sigma": _r(star.std, 4)},
    ]


#: The heat map's colour-scale params as the build writes them (valid, not fitted): the browser
#: fits jdomain, jrange and jticks to the surface it draws, in the page's colour scheme.
UNFITTED_SCALE = ({"name": "jdomain", "value": [-1.0, 0.0, 1.0]},
                  {"name": "jrange", "value": [DIVERGING[0], DIVERGING[len(DIVERGING) // 2], DIVERGING[-1]]},
                  {"name": "jticks", "value": [-1.0, 0.0, 1.0]})


def surface_spec(settings: o1.Settings) -> dict:
    mu_lo, mu_hi, n_mu = o1.SURFACE_MU
    sg_lo, sg_hi, n_sg = o1.SURFACE_SIGMA
    d_mu = (mu_hi - mu_lo) / (n_mu - 1)
    d_sg = (sg_hi - sg_lo) / (n_sg - 1)
    x_scale = {"domain": [mu_lo - d_mu / 2, mu_hi + d_mu / 2], "nice": False, "zero": False}
    y_scale = {"domain": [0, sg_hi + d_sg / 2], "nice": False, "zero": True}
    labels = [o1.METHOD_LABELS[m] for m in o1.METHODS]
    runs = o1.run_all(settings)
    surface = surface_rows(settings.bumps, settings.beta)
    opacity = {"condition": {"test": "focus === 'all' || datum.method === focus", "value": 1}, "value": 0.12}
    return {
        "$schema": SCHEMA,
        "width": "container",
        "height": 340,
        "params": [_ink_param(), {"name": "paper", "value": PAPER_LIGHT}, {"name": "focus", "value": "all"},
                   # the heat map's colour scale: playgrounds.js fits it to the surface (token-scale.js
                   # chartScale) before the chart is drawn and whenever the surface or the scheme
                   # changes; the spec carries the unfitted ramp, its ends and neutral on [-1, 1]
                   *[dict(param) for param in UNFITTED_SCALE]],
        # SVG would be one element per cell; the chart's range comes from the jrange signal
        "usermeta": {"renderer": "canvas", "rangeSignals": {"jdomain": "jrange"}},
        "datasets": {
            "pg_surface": surface,
            "pg_traj": trajectory_rows(runs),
            "pg_marks": marker_rows(settings),
        },
        "layer": [
            {
                "data": {"name": "pg_surface"},
                "transform": [
                    {"flatten": ["mu", "J"]},
                    # cells overlap by 4% so no background shows through between them
                    {"calculate": f"datum.mu - {0.52 * d_mu}", "as": "mu0"},
                    {"calculate": f"datum.mu + {0.52 * d_mu}", "as": "mu1"},
                    {"calculate": f"datum.sigma - {0.52 * d_sg}", "as": "s0"},
                    {"calculate": f"datum.sigma + {0.52 * d_sg}", "as": "s1"},
                ],
                "mark": {"type": "rect", "stroke": None, "clip": True},
                "encoding": {
                    "x": {"field": "mu0", "type": "quantitative", "scale": x_scale, "title": "mean μ"},
                    "x2": {"field": "mu1"},
                    "y": {"field": "s0", "type": "quantitative", "scale": y_scale, "title": "std σ"},
                    "y2": {"field": "s1"},
                    # Fitted to the surface in the browser (token-scale.js chartScale): the legend spans
                    # J's real range and is neutral exactly at 0; unipo.js puts the jrange signal in as
                    # the scale's range (Vega-Lite cannot).
                    "fill": {"field": "J", "type": "quantitative", "title": "J(μ, σ)",
                             "scale": {"domain": {"expr": "jdomain"}, "scheme": DIVERGING_SCHEME,
                                       "interpolate": "rgb", "clamp": True},
                             "legend": {"orient": "bottom", "direction": "horizontal", "gradientLength": 300,
                                        "titleOrient": "left", "titleBaseline": "middle",
                                        "values": {"expr": "jticks"}, "format": ".2f"}},
                    "tooltip": [{"field": "mu", "title": "μ", "format": ".2f"},
                                {"field": "sigma", "title": "σ", "format": ".2f"},
                                {"field": "J", "title": "J", "format": ".3f"}],
                },
            },
            {
                # A casing in the page's colour under the exact gradient's path: drawn in the ink,
                # it stays visible on the dark and the bright cells of the map in either scheme.
                "data": {"name": "pg_traj"},
                "transform": [{"filter": f"datum.method === '{o1.METHOD_LABELS['exact']}'"},
                              {"flatten": ["step", "mu", "sigma", "J"]}],
                "mark": {"type": "line", "clip": True, "strokeWidth": 5, "interpolate": "linear",
                         "color": {"expr": "paper"}, "opacity": 0.85},
                "encoding": {
                    "x": {"field": "mu", "type": "quantitative", "scale": x_scale},
                    "y": {"field": "sigma", "type": "quantitative", "scale": y_scale},
                    "order": {"field": "step", "type": "quantitative"},
                },
            },
            {
                "data": {"name": "pg_traj"},
                "transform": [{"flatten": ["step", "mu", "sigma", "J"]}],
                "mark": {"type": "line", "clip": True, "strokeWidth": 2.2, "interpolate": "linear"},
                "encoding": {
                    "x": {"field": "mu", "type": "quantitative", "scale": x_scale},
                    "y": {"field": "sigma", "type": "quantitative", "scale": y_scale},
                    "order": {"field": "step", "type": "quantitative"},
                    "stroke": {"field": "method", "type": "nominal", "title": None,
                               "scale": _method_scale(o1.METHODS, o1.METHOD_LABELS),
                               "legend": {"orient": "top", "direction": "horizontal", "columns": 3,
                                          "symbolType": "stroke", "labelLimit": 140}},
                    "strokeOpacity": opacity,
                    "detail": {"field": "method", "type": "nominal"},
                },
            },
            {
                "data": {"name": "pg_traj"},
                "transform": [
                    {"flatten": ["step", "mu", "sigma", "J"]},
                    {"joinaggregate": [{"op": "max", "field": "step", "as": "last"}], "groupby": ["method"]},
                    {"filter": "datum.step === datum.last"},
                ],
                "mark": {"type": "point", "filled": True, "size": 60, "clip": True, "stroke": {"expr": "ink"},
                         "strokeWidth": 1},
                "encoding": {
                    "x": {"field": "mu", "type": "quantitative", "scale": x_scale},
                    "y": {"field": "sigma", "type": "quantitative", "scale": y_scale},
                    "fill": {"field": "method", "type": "nominal",
                             "scale": _method_scale(o1.METHODS, o1.METHOD_LABELS), "legend": None},
                    "opacity": opacity,
                    "tooltip": [{"field": "method"}, {"field": "step", "title": "step"},
                                {"field": "mu", "title": "μ", "format": ".3f"},
                                {"field": "sigma", "title": "σ", "format": ".3f"},
                                {"field": "J", "title": "J", "format": ".3f"}],
                },
            },
            {
                "data": {"name": "pg_marks"},
                "mark": {"type": "point", "size": 190, "strokeWidth": 2.2, "filled": False,
                         "color": {"expr": "ink"}, "clip": True},
                "encoding": {
                    "x": {"field": "mu", "type": "quantitative", "scale": x_scale},
                    "y": {"field": "sigma", "type": "quantitative", "scale": y_scale},
                    # the caption names the two markers (a legend would not fit on a phone)
                    "shape": {"field": "label", "type": "nominal",
                              "scale": {"domain": ["start (π_ref)", "π* (mean, std)"],
                                        "range": ["circle", "cross"]},
                              "legend": None},
                    "tooltip": [{"field": "label"}, {"field": "mu", "title": "μ", "format": ".3f"},
                                {"field": "sigma", "title": "σ", "format": ".3f"}],
                },
            },
        ],
        "resolve": {"scale": {"stroke": "independent", "fill": "independent"}},
    }


def band_rows(settings: o1.Settings) -> list[dict]:
    """``pg_band``: one row per method with arrays step, median, low, high."""
    rows = []
    for method in sorted(o1.METHODS, key=lambda m: m == "exact"):  # exact drawn last, on top
        band = o1.objective_band(method, settings)
        rows.append({"method": o1.METHOD_LABELS[method], "step": list(range(len(band.median))),
                     "median": [_r(x, 4) for x in band.median], "low": [_r(x, 4) for x in band.low],
                     "high": [_r(x, 4) for x in band.high]})
    return rows


def band_domain(rows: list[dict], optimum: float) -> tuple[float, float]:
    """y range of the band chart: the medians and J(pi*), padded; bands may run off it.

    A single seed whose run collapses would otherwise stretch the axis until every median
    is a flat line. (The browser script computes the same range.)
    """
    lo = min(min(row["median"]) for row in rows)
    hi = max(optimum, max(max(row["median"]) for row in rows))
    pad = max(0.08 * (hi - lo), 0.02)
    return lo - pad, hi + pad


def band_spec(settings: o1.Settings) -> dict:
    star = o1.pi_star(settings.bumps, settings.beta)
    scale = _method_scale(o1.METHODS, o1.METHOD_LABELS)
    x = {"field": "step", "type": "quantitative", "title": "step t", "scale": {"nice": False}}
    legend = {"orient": "top", "direction": "horizontal", "columns": 3, "labelLimit": 140,
              "symbolType": "stroke"}
    rows = band_rows(settings)
    optimum = _r(settings.beta * star.log_z)
    y_lo, y_hi = band_domain(rows, optimum)
    y_scale = {"domain": {"expr": "[ylo, yhi]"}, "nice": False, "zero": False}
    return {
        "$schema": SCHEMA,
        "width": "container",
        "height": 280,
        "params": [_ink_param(), {"name": "paper", "value": PAPER_LIGHT}, {"name": "focus", "value": "all"},
                   {"name": "ylo", "value": _r(y_lo, 4)}, {"name": "yhi", "value": _r(y_hi, 4)}],
        "datasets": {
            "pg_band": rows,
            "pg_optimum": [{"J": optimum, "label": "J(π*) = β log Z"}],
        },
        "layer": [
            {"data": {"name": "pg_band"},
             "transform": [{"flatten": ["step", "median", "low", "high"]}],
             "mark": {"type": "area", "opacity": 0.16, "clip": True},
             "encoding": {"x": x, "y": {"field": "low", "type": "quantitative", "scale": y_scale},
                          "y2": {"field": "high"},
                          "fill": {"field": "method", "type": "nominal", "scale": scale, "legend": None},
                          "detail": {"field": "method"}}},
            {"data": {"name": "pg_band"},
             "transform": [{"flatten": ["step", "median", "low", "high"]}],
             "mark": {"type": "line", "strokeWidth": 2, "clip": True},
             "encoding": {"x": x,
                          "y": {"field": "median", "type": "quantitative", "title": "J(θ_t)",
                                "scale": y_scale},
                          "stroke": {"field": "method", "type": "nominal", "scale": scale, "title": None,
                                     "legend": legend},
                          "tooltip": [{"field": "method"}, {"field": "step"},
                                      {"field": "median", "format": ".3f"},
                                      {"field": "low", "title": "min", "format": ".3f"},
                                      {"field": "high", "title": "max", "format": ".3f"}]}},
            {"data": {"name": "pg_optimum"},
             "mark": {"type": "rule", "strokeDash": [6, 4], "strokeWidth": 1.5, "color": {"expr": "ink"}},
             "encoding": {"y": {"field": "J", "type": "quantitative"}}},
            {"data": {"name": "pg_optimum"},
             "mark": {"type": "text", "align": "right", "baseline": "bottom", "dy": -3, "x": "width",
                      "color": {"expr": "ink"}},
             "encoding": {"y": {"field": "J", "type": "quantitative"}, "text": {"field": "label"}}},
        ],
        "resolve": {"scale": {"fill": "shared", "stroke": "shared"}, "legend": {"fill": "independent"}},
    }


# ---------------------------------------------------------------------------
# Playground 2: several rewards, GRPO against GDPO
# ---------------------------------------------------------------------------

GDPO_LABELS = {"grpo": "GRPO", "gdpo": "GDPO"}


def advantage_rows(grid) -> list[dict]:
    """``gd_adv``: per rollout and method, sorted by GDPO (rank 1 = largest GDPO advantage)."""
    grid = np.asarray(grid, dtype=np.float64)
    grpo = mr.grpo_advantages(grid[None])[0]
    gdpo = mr.gdpo_advantages(grid[None])[0]
    order = sorted(range(len(grid)), key=lambda i: (-gdpo[i], i))
    rank = {i: k + 1 for k, i in enumerate(order)}
    tags = {}
    for n, members in enumerate(mr.collapsed_groups(grid, grpo)):
        for i in members:
            tags[i] = chr(ord("A") + n)
    rows = []
    for i, vec in enumerate(grid):
        # the collapse tag is part of the label, so the one shared y axis carries it
        label = f"{tags.get(i, ' ')} #{str(i + 1).ljust(2)} " + " ".join(str(int(v)) for v in vec)
        for method, adv in (("GRPO", grpo[i]), ("GDPO", gdpo[i])):
            rows.append({"rollout": label, "method": method, "adv": _r(adv, 4), "rank": rank[i],
                         "tag": tags.get(i, "")})
    return rows


def advantage_spec() -> dict:
    y = {"field": "rollout", "type": "ordinal", "title": "tag, rollout: correct format concise",
         "sort": {"field": "rank", "order": "ascending"},
         "axis": {"labelFont": "monospace", "labelFontSize": 12}}
    return {
        "$schema": SCHEMA,
        "params": [_ink_param()],
        "datasets": {"gd_adv": advantage_rows(mr.DEFAULT_GRID)},
        "data": {"name": "gd_adv"},
        "facet": {"column": {"field": "method", "type": "nominal", "title": None,
                             "sort": ["GRPO", "GDPO"],
                             "header": {"labelFontSize": 13, "labelFontWeight": "bold"}}},
        "spec": {
            "width": 220,
            "height": {"step": 20},
            "layer": [
                {"mark": {"type": "bar", "stroke": {"expr": "ink"}},
                 "encoding": {
                     "y": y,
                     "x": {"field": "adv", "type": "quantitative", "title": "advantage",
                           "scale": {"domain": [-2.6, 2.6]}},
                     "fill": {"field": "adv", "type": "quantitative", "title": "advantage",
                              "scale": {"scheme": DIVERGING_SCHEME, "domainMid": 0, "domain": [-2.2, 2.2]},
                              "legend": None},
                     "strokeWidth": {"condition": {"test": "datum.tag !== '' && datum.method === 'GRPO'",
                                                   "value": 1.6}, "value": 0},
                     "tooltip": [{"field": "rollout", "title": "tag, rollout, correct format concise"},
                                 {"field": "method"}, {"field": "adv", "title": "advantage", "format": ".4f"}],
                 }},
                {"mark": {"type": "rule", "color": NEUTRAL}, "encoding": {"x": {"datum": 0}}},
            ],
        },
        "usermeta": {"pgLayout": {"columns": 2, "fixed": 150, "perColumn": 14, "min": 80, "max": 260}},
    }


def toy_rows(toy: mr.ToySettings, n_seeds: int = 8) -> list[dict]:
    """``gd_toy``: per method and reward, arrays epoch, p (median over seeds), lo, hi."""
    rows = []
    for method in mr.TOY_METHODS:
        runs = np.array([mr.train_bernoulli(method, toy, seed=toy.seed + k) for k in range(n_seeds)])
        med, lo, hi = np.median(runs, axis=0), runs.min(axis=0), runs.max(axis=0)
        for k, name in enumerate(mr.REWARD_NAMES):
            rows.append({"method": GDPO_LABELS[method], "reward": name, "epoch": list(range(runs.shape[1])),
                         "p": [_r(x, 4) for x in med[:, k]], "lo": [_r(x, 4) for x in lo[:, k]],
                         "hi": [_r(x, 4) for x in hi[:, k]]})
    return rows


TOY_SEEDS = 8


def toy_spec(toy: mr.ToySettings) -> dict:
    scale = _method_scale(mr.TOY_METHODS, GDPO_LABELS)
    x = {"field": "epoch", "type": "quantitative", "title": "epoch", "scale": {"nice": False}}
    return {
        "$schema": SCHEMA,
        "datasets": {"gd_toy": toy_rows(toy, TOY_SEEDS)},
        "data": {"name": "gd_toy"},
        "transform": [{"flatten": ["epoch", "p", "lo", "hi"]}],
        "facet": {"field": "reward", "type": "nominal", "title": None, "sort": list(mr.REWARD_NAMES),
                  "header": {"labelFontSize": 13}},
        "columns": 3,
        "spec": {
            "width": 200,
            "height": 200,
            "layer": [
                {"mark": {"type": "area", "opacity": 0.2},
                 "encoding": {"x": x, "y": {"field": "lo", "type": "quantitative"}, "y2": {"field": "hi"},
                              "fill": {"field": "method", "type": "nominal", "scale": scale, "legend": None}}},
                {"mark": {"type": "line", "strokeWidth": 2},
                 "encoding": {"x": x,
                              "y": {"field": "p", "type": "quantitative", "title": "P(reward = 1)",
                                    "scale": {"domain": [0, 1]}},
                              "stroke": {"field": "method", "type": "nominal", "scale": scale, "title": None,
                                         "legend": {"orient": "top", "symbolType": "stroke",
                                                    "symbolStrokeWidth": 3}},
                              "tooltip": [{"field": "method"}, {"field": "reward"}, {"field": "epoch"},
                                          {"field": "p", "title": "median", "format": ".3f"},
                                          {"field": "lo", "title": "min", "format": ".3f"},
                                          {"field": "hi", "title": "max", "format": ".3f"}]}},
            ],
        },
        "resolve": {"legend": {"fill": "independent"}},
        "usermeta": {"pgLayout": {"columns": 3, "fixed": 70, "perColumn": 22, "min": 120, "max": 220,
                                  "wrap": True}},
    }
