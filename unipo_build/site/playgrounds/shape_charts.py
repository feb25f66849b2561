"""Vega-Lite specs of the loss-shapes playground (the clip's shape and the aggregation's weights),
with the data they start with. The conventions (named datasets, parameters, colours) are those of
``playgrounds.charts``.
"""

from __future__ import annotations

from unipo_build.core.registry import REGISTRY
from unipo_build.site.playgrounds import loss_shapes as ls
from unipo_build.site.playgrounds.charts import METHOD_COLOURS, NEUTRAL, SCHEMA, _r


# ---------------------------------------------------------------------------
# Playground 3: loss shapes and aggregation weights
# ---------------------------------------------------------------------------

def shape_dataset() -> list[dict]:
    """Curve rows grouped into arrays (one row per table, eps and sign), zones as is."""
    grouped: dict[tuple, dict] = {}
    zones = []
    for row in ls.shape_rows():
        # 4 decimals are exact for every value drawn here (GSPO's boundaries included)
        if row["k"] == "zone":
            zones.append({"k": "zone", "m": row["m"], "e": row["e"], "s": row["s"], "r": _r(row["r"], 4),
                          "r2": _r(row["r2"], 4), "c": row["c"]})
            continue
        key = (row["m"], row["e"], row["s"])
        entry = grouped.setdefault(key, {"k": "curve", "m": row["m"], "e": row["e"], "s": row["s"],
                                         "r": [], "j": []})
        entry["r"].append(_r(row["r"], 4))
        entry["j"].append(_r(row["j"], 4))
    return list(grouped.values()) + zones


# which rows each method's panel reads: an expression over the eps parameters
SHAPE_FILTERS = {
    "reinforce": "datum.m === 'none'",
    "grpo": "datum.m === 'clip' && datum.e === eps",
    "dapo": "datum.m === 'clip' && ((datum.s > 0 && datum.e === eps_high) || (datum.s < 0 && datum.e === eps_low))",
    "dr_grpo": "datum.m === 'clip' && datum.e === eps",
    "gspo": "datum.m === 'gspo'",
}


def shapes_spec() -> dict:
    x_scale = {"domain": [0, 2], "nice": False}
    y_scale = {"domain": [-2.2, 2.2], "nice": False}

    def panel(method: ls.ShapeMethod) -> dict:
        colour = METHOD_COLOURS[method.key]
        title = "sequence ratio s" if method.clip == "sequence" else "ratio ρ"
        # five labelled ticks: a panel is ~220 px wide on a page and narrower on a phone, and
        # eleven labels (0.0, 0.2, ...) ran into each other
        x = {"field": "r", "type": "quantitative", "title": title, "scale": x_scale,
             "axis": {"values": [0, 0.5, 1, 1.5, 2], "format": ".1f", "labelOverlap": True}}
        flt = SHAPE_FILTERS[method.key]
        return {
            "title": {"text": method.label, "subtitle": method.note, "anchor": "start", "fontSize": 13},
            "data": {"name": "ls_shapes"},
            "transform": [{"filter": flt}, {"calculate": "datum.s > 0 ? 'A = +1' : 'A = −1'", "as": "sign"}],
            "facet": {"column": {"field": "sign", "type": "nominal", "title": None,
                                 "sort": ["A = +1", "A = −1"]}},
            "spec": {
                "width": 220,
                "height": 120,
                "layer": [
                    {"transform": [{"filter": "datum.k === 'zone'"}],
                     "mark": {"type": "rect", "opacity": 0.22, "color": NEUTRAL},
                     "encoding": {"x": {"field": "r", "type": "quantitative", "scale": x_scale},
                                  "x2": {"field": "r2"},
                                  "tooltip": [{"field": "r", "title": "flat from", "format": ".4f"},
                                              {"field": "r2", "title": "to", "format": ".4f"}]}},
                    {"transform": [{"filter": "datum.k === 'curve'"}, {"flatten": ["r", "j"]}],
                     "mark": {"type": "line", "strokeWidth": 2.4, "color": colour},
                     "encoding": {"x": x,
                                  "y": {"field": "j", "type": "quantitative", "title": "objective",
                                        "scale": y_scale},
                                  "tooltip": [{"field": "r", "title": "ratio", "format": ".3f"},
                                              {"field": "j", "title": "objective", "format": ".3f"}]}},
                    {"mark": {"type": "rule", "strokeDash": [3, 3], "color": NEUTRAL},
                     "encoding": {"x": {"datum": 1}}},
                ],
            },
        }

    return {
        "$schema": SCHEMA,
        "params": [
            {"name": "eps", "value": ls.DEFAULT_EPS},
            {"name": "eps_low", "value": ls.DAPO_DEFAULT[0]},
            {"name": "eps_high", "value": ls.DAPO_DEFAULT[1]},
        ],
        "datasets": {"ls_shapes": shape_dataset()},
        "vconcat": [panel(m) for m in ls.SHAPE_METHODS],
        "spacing": 14,
        "usermeta": {"pgLayout": {"columns": 2, "fixed": 70, "perColumn": 16, "min": 100, "max": 280}},
    }


def aggregation_dataset() -> list[dict]:
    grouped: dict[tuple, dict] = {}
    for row in ls.aggregation_rows():
        entry = grouped.setdefault((row["a"], row["o"]), {"a": ls.AGGREGATION_LABELS[row["a"]],
                                                          "o": row["o"], "l": [], "w": [], "sh": []})
        entry["l"].append(row["l"])
        entry["w"].append(row["w"])
        entry["sh"].append(row["sh"])
    return list(grouped.values())


def _drawn_as(name: str) -> str:
    """The colour of the algorithm an aggregation kind is drawn as (its playground words), else neutral grey."""
    algorithm = REGISTRY["aggregation"][name].words["drawn_as"]()
    return NEUTRAL if algorithm is None else METHOD_COLOURS[algorithm]


AGGREGATION_COLOURS = {name: _drawn_as(name) for name in ls.AGGREGATION_LABELS}


def aggregation_spec() -> dict:
    labels = [ls.AGGREGATION_LABELS[k] for k in AGGREGATION_COLOURS]
    colour = {"field": "a", "type": "nominal", "title": None,
              "scale": {"domain": labels, "range": list(AGGREGATION_COLOURS.values())},
              "legend": {"orient": "top", "direction": "horizontal", "columns": 2, "labelLimit": 260}}
    dash = {"field": "a", "type": "nominal", "title": None,
            "scale": {"domain": labels, "range": [[1, 0], [6, 3], [2, 2], [8, 3, 2, 3]]}}
    x = {"field": "l", "type": "quantitative", "title": "length of response 1 (tokens)",
         "scale": {"type": "log", "domain": [8, ls.MAX_LENGTH], "nice": False},
         "axis": {"values": [16, 64, 256, 1024], "labelOverlap": "greedy"}}
    common = [{"filter": "datum.o === other_len"}, {"flatten": ["l", "w", "sh"]}]
    return {
        "$schema": SCHEMA,
        "params": [{"name": "other_len", "value": ls.DEFAULT_OTHER_LENGTH}],
        "datasets": {"ls_agg": aggregation_dataset()},
        "data": {"name": "ls_agg"},
        "transform": common,
        "columns": 2,
        "concat": [
            {"width": 240, "height": 220,
             "layer": [
                 {"mark": {"type": "line", "strokeWidth": 2.2},
                  "encoding": {"x": x,
                               "y": {"field": "w", "type": "quantitative", "title": "weight of one token",
                                     "scale": {"type": "log", "nice": False, "padding": 8},
                                     "axis": {"values": [3e-4, 1e-3, 3e-3, 1e-2, 3e-2, 1e-1, 3e-1],
                                              "format": "~g"}},
                               "stroke": colour, "strokeDash": dash,
                               "tooltip": [{"field": "a", "title": "aggregation"},
                                           {"field": "l", "title": "length"},
                                           {"field": "w", "title": "weight per token", "format": ".2e"}]}},
                 {"mark": {"type": "rule", "strokeDash": [2, 2], "color": NEUTRAL},
                  "encoding": {"x": {"datum": {"expr": "other_len"}, "type": "quantitative"}}},
             ]},
            {"width": 240, "height": 220,
             "layer": [
                 {"mark": {"type": "line", "strokeWidth": 2.2},
                  "encoding": {"x": x,
                               "y": {"field": "sh", "type": "quantitative",
                                     "title": "response 1's share of the step",
                                     "axis": {"format": "%"}, "scale": {"domain": [0, 1]}},
                               "stroke": colour, "strokeDash": dash,
                               "tooltip": [{"field": "a", "title": "aggregation"},
                                           {"field": "l", "title": "length"},
                                           {"field": "sh", "title": "share", "format": ".1%"}]}},
                 {"mark": {"type": "rule", "strokeDash": [2, 2], "color": NEUTRAL},
                  "encoding": {"x": {"datum": {"expr": "other_len"}, "type": "quantitative"}}},
             ]},
        ],
        "usermeta": {"pgLayout": {"columns": 2, "fixed": 10, "perColumn": 95, "min": 170, "max": 300,
                                  "wrap": True}},
    }
