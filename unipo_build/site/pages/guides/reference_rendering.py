"""Macros for the reference page "How figures and formulas are rendered".

``kl_estimators_chart()`` computes the three per-token KL estimators on a grid of log-ratios
and returns an Altair chart, which the page embeds with the ``vega`` macro.
``browser_libraries()`` returns a Markdown table of the pinned browser libraries, read from
``package.json`` so that the page never disagrees with what is served.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from unipo_build.core import components as C
from unipo_build.site.render import chart_spec, escape_text
from unipo_build.site.palette import role
from unipo_build.site.context import Site, macro

#: The three estimators, each in its palette colour.
ESTIMATOR_COLOURS = {k: role(f"estimator-{k}") for k in C.KL_ESTIMATORS}

BROWSER_LIBRARIES = {
    "katex": "formulas (Markdown math from pymdownx.arithmatex)",
    "vega": "chart runtime",
    "vega-lite": "compiles the Altair / Vega-Lite specs to Vega",
    "vega-embed": "puts a chart into its container",
    "vega-interpreter": "evaluates Vega's expressions without eval (the site's Content-Security-Policy)",
}


def kl_estimators(log_r: np.ndarray) -> dict[str, np.ndarray]:
    """Per-token estimators of KL(pi_theta || pi_ref) for r = pi_ref(y) / pi_theta(y): the
    trainer's own ``components.kl_estimate`` with log pi_theta = 0 and log pi_ref = log r."""
    log_r = np.asarray(log_r, dtype=np.float64)
    return {k: C.kl_estimate(np.zeros_like(log_r), log_r, k) for k in C.KL_ESTIMATORS}


def kl_estimators_chart(lo: float = -2.0, hi: float = 2.0, points: int = 81):
    import altair as alt

    log_r = np.linspace(lo, hi, points)
    values = kl_estimators(log_r)
    rows = [
        {"log_r": round(float(x), 4), "estimator": name, "value": round(float(v), 4)}
        for name, column in values.items()
        for x, v in zip(log_r, column)
    ]
    names = list(ESTIMATOR_COLOURS)
    # One legend shows both channels (colour and dash) of each estimator.
    legend = alt.Legend(orient="top", title=None, symbolStrokeWidth=2.5, symbolSize=300)
    lines = (
        alt.Chart(alt.Data(values=rows))
        .mark_line(strokeWidth=2.5)
        .encode(
            x=alt.X("log_r:Q", title="log r = log π_ref(y) − log π_θ(y)"),
            y=alt.Y("value:Q", title="per-token estimate"),
            color=alt.Color(
                "estimator:N",
                scale=alt.Scale(domain=names, range=[ESTIMATOR_COLOURS[n] for n in names]),
                legend=legend,
            ),
            strokeDash=alt.StrokeDash(
                "estimator:N",
                scale=alt.Scale(domain=names, range=[[1, 0], [6, 3], [2, 2]]),
                legend=legend,
            ),
        )
    )
    zero = alt.Chart(alt.Data(values=[{"y": 0}])).mark_rule(opacity=0.4).encode(y="y:Q")
    return alt.layer(zero, lines).properties(width="container", height=260)


def browser_libraries_table(project_dir: Path) -> str:
    pins = json.loads((project_dir / "package.json").read_text(encoding="utf-8"))["dependencies"]
    lines = ["| Library | Version | Used for |", "| --- | --- | --- |"]
    for name in sorted(pins):
        use = BROWSER_LIBRARIES.get(name, "")
        lines.append(f"| `{escape_text(name)}` | {escape_text(pins[name])} | {escape_text(use)} |")
    return "\n".join(lines)


@macro
def kl_estimators_spec(site: Site) -> dict:
    """The KL-estimator chart as a Vega-Lite spec (dict)."""
    return chart_spec(kl_estimators_chart())


@macro(markdown=True)
def browser_libraries(site: Site) -> str:
    """The pinned browser libraries (package.json of the project), as a Markdown table."""
    return browser_libraries_table(site.root)


@macro
def vega_lite_schema_version(site: Site) -> str:
    import altair as alt

    return alt.SCHEMA_VERSION
