"""Macros of the interactive views: Training Explorer, Step Inspector, Algorithm Explainer, comparison.

In a page, each on a paragraph of its own:

    {{ training_explorer("grpo", metrics=None, inspector=True) }}
    {{ step_inspector("grpo") }}                       run id or algorithm id
    {{ step_inspector("grpo", step=12) }}
    {{ step_inspector("grpo", moment="all_correct_group") }}
    {{ objective_card("grpo") }}                        optionally run="<run id>" for its parameters,
                                                        fold="<summary>" to fold it (put in the page when opened)
    {{ objective_formula("grpo") }}                     the whole objective, composed from the spec
    {{ compare("grpo", "dapo") }}
    {{ compare_selector("grpo", "dapo") }}

A run is a run id, a run directory name, or an algorithm id (the run the runs resolver chooses
for it: ``runs.RunCatalog.chosen``). A missing run, step or moment gives a note in the page, not a
failed build (a reader may rebuild with other logs). An unknown algorithm id or moment name is an
author's error and stops the build. Each macro asks for its view's script on its page only.
"""

from __future__ import annotations

import logging
from typing import Any, Sequence

from unipo_build.core.formula import objective_latex
from unipo_build.core.objective import browser_config
from unipo_build.site.views.compare import compare as compare_view
from unipo_build.site.views.explainer import explainer
from unipo_build.site.views.explorer import explorer
from unipo_build.site.views.inspector import inspector
from unipo_build.site.fmt import math_display, template_fold
from unipo_build.site.context import AuthorError, Site, macro

log = logging.getLogger("mkdocs.plugins.unipo.views")


def _uid(site: Site, prefix: str, *parts: Any) -> str:
    return site.chart_id({"view": prefix, "args": [str(p) for p in parts]}, prefix=prefix)


def explorer_inspector(site: Site, run: Any):
    """The Step Inspector a Training Explorer puts under its chart, as ``explorer_html`` takes it (a function of
    the inspector's element id); it fetches step files relative to the page's URL."""
    return lambda uid: inspector.step_inspector(run, page_url=site.page_url, uid=uid)


@macro(html=True, scripts=("explorer", "inspector"))
def training_explorer(site: Site, run: Any, metrics: Sequence[str] | None = None, inspector: bool = True) -> str:
    """The Training Explorer of a run: one ring per metric, angle = step."""
    name = getattr(run, "id", None) or str(run)
    found = run if not isinstance(run, str) else site.catalog.get(name)
    if found is None:
        cat = site.catalog
        log.info("training_explorer: no run %r in %s", name, cat.source.describe())
        return explorer.missing_run_html(name, cat.source.describe(), [r.id for r in cat.runs])
    if not found.ok:
        log.info("training_explorer: run %r failed to load: %s", found.id, found.error)
    # Named by what the page asks for (an algorithm's id, usually), not by the run it resolves to:
    # the same page built on another run set (unipo_build.core.sets) gives its explorer the same id, so
    # the state a reader's link carries in the hash (step, group, token) opens there too.
    element_id = site.chart_id({"explorer": name, "metrics": list(metrics or [])}, prefix="unipo-explorer")
    return explorer.explorer_html(found, metrics, inspector=inspector and explorer_inspector(site, found),
                                  element_id=element_id)


@macro(name="step_inspector", html=True, scripts=("inspector",))
def step_inspector_macro(site: Site, run: str, step: int | None = None, moment: str | None = None) -> str:
    """A Step Inspector of ``run`` (run id or algorithm id) at ``step`` or at a teaching ``moment``."""
    return inspector.step_inspector(run, step=step, moment=moment, page_url=site.page_url, catalog=site.catalog,
                                    uid=_uid(site, "unipo-insp", run, step, moment))


@macro(name="objective_card", html=True, scripts=("explainer",))
def objective_card_macro(site: Site, algorithm: str, run: str | None = None, fold: str | None = None) -> str:
    """The Algorithm Explainer of ``algorithm``; with ``run``, that run's resolved parameters; with ``fold``,
    folded under that summary and put in the page when the reader opens it (``fmt.template_fold``: a
    chapter's second card, secondary to its own)."""
    card = _objective_card(site, algorithm, run)
    return template_fold(fold, card) if fold else card


def _objective_card(site: Site, algorithm: str, run: str | None) -> str:
    spec = site.spec(algorithm, "objective_card")
    config, run_id, note = None, None, None
    if run is not None:
        found = site.run(run)
        if found is None:
            note = (f"The run '{run}' is not available, so the parameters shown are the spec's defaults "
                    "(a parameter filled from the run, such as the constant L, shows as 'from the run').")
        elif found.header.algorithm != algorithm:
            raise AuthorError(f"objective_card: run {run!r} trained {found.header.algorithm!r}, not {algorithm!r}")
        else:
            config, run_id = found.config, found.id
    return explainer.objective_card(spec, config=config, run_id=run_id, uid=_uid(site, "unipo-expl", algorithm, run),
                                    note=note, repo=site.repo,
                                    reward=found.header.reward.description if run_id is not None else None)


@macro(html=True, scripts=("explainer",))
def compare(site: Site, a: str, b: str) -> str:
    """Algorithm ``a``'s objective above ``b``'s, slot by slot: the data, drawn by explainer.js
    (renderCompare, the one renderer of comparisons)."""
    return compare_view.compare_html(site.spec(a, "compare"), site.spec(b, "compare"),
                                     uid=_uid(site, "unipo-cmpv", a, b))


@macro(html=True, scripts=("explainer",))
def compare_selector(site: Site, default_a: str = "grpo", default_b: str = "dapo") -> str:
    """Two selects of every algorithm; the comparison is drawn in the browser, its pair in the URL."""
    site.spec(default_a, "compare_selector")
    site.spec(default_b, "compare_selector")
    aggregation = {}
    for sid in site.specs():
        run = site.catalog.chosen(sid)
        if run is not None:
            aggregation[sid] = browser_config(run.config)["components"]["aggregation"]
    return compare_view.compare_selector_html(site.specs(), default_a, default_b,
                                              uid=_uid(site, "unipo-cmp", default_a, default_b), aggregation=aggregation)


@macro(html=True)
def objective_formula(site: Site, algorithm: str, definitions: bool = False) -> str:
    """The algorithm's whole objective, composed from its spec by the one composer
    (``formula.objective_latex``), so a chapter never types it by hand; ``definitions``: add the
    "where" rows (ratio, advantage and the other symbols)."""
    spec = site.spec(algorithm, "objective_formula")
    return math_display(objective_latex(spec, definitions=definitions), "unipo-objective-formula")
