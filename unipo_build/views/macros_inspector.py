"""Macros of the Step Inspector, the Algorithm Explainer and the comparison (MACRO_MODULES entry).

In a page, each on a paragraph of its own:

    {{ step_inspector("grpo") }}                       run id or algorithm id
    {{ step_inspector("grpo", step=12) }}
    {{ step_inspector("grpo", moment="all_correct_group") }}
    {{ objective_card("grpo") }}                        optionally run="<run id>" for its parameters
    {{ compare("grpo", "dapo") }}
    {{ compare_selector("grpo", "dapo") }}

A missing run, step or moment gives a note in the page, not a failed build (a reader may rebuild
with other logs). An unknown algorithm id or moment name is an author's error and stops the build.
"""

from __future__ import annotations

from typing import Any

from ..runs import get_run, runs_dir
from ..specs import AlgorithmSpec, load_specs
from . import compare as compare_view
from . import explainer, inspector


def _specs() -> dict[str, AlgorithmSpec]:
    """Read on every call (five small files): `mkdocs serve` picks up edited specs."""
    return load_specs()


def spec_or_error(algorithm: str, macro: str) -> AlgorithmSpec:
    specs = _specs()
    if algorithm not in specs:
        raise ValueError(f"{macro}: no algorithm {algorithm!r} (known: {', '.join(sorted(specs))})")
    return specs[algorithm]


def _directory(env: Any):
    conf = getattr(env, "conf", None) or {}
    extra = conf.get("extra", {}) if hasattr(conf, "get") else {}
    return runs_dir((extra or {}).get("unipo_runs"))


def _page_url(env: Any) -> str | None:
    page = getattr(env, "page", None)
    return getattr(page, "url", None)


def register(env: Any) -> None:
    from .. import macros as unipo_macros  # imported here: macros imports this module by name

    def uid(prefix: str, *parts: Any) -> str:
        return unipo_macros.chart_id(env, {"view": prefix, "args": [str(p) for p in parts]}, prefix=prefix)

    @env.macro
    def step_inspector(run: str, step: int | None = None, moment: str | None = None) -> str:
        """A Step Inspector of ``run`` (run id or algorithm id) at ``step`` or at a teaching ``moment``."""
        html = inspector.step_inspector(run, step=step, moment=moment, page_url=_page_url(env),
                                        directory=_directory(env), uid=uid("unipo-insp", run, step, moment))
        return unipo_macros.protect_html(env, html)

    @env.macro
    def objective_card(algorithm: str, run: str | None = None) -> str:
        """The Algorithm Explainer of ``algorithm``; with ``run``, that run's resolved parameters."""
        spec = spec_or_error(algorithm, "objective_card")
        config, run_id, note = None, None, None
        if run is not None:
            found = get_run(run, _directory(env))
            if found is None or not found.ok:
                note = (f"The run '{run}' is not available, so the parameters shown are the spec's defaults "
                        "(a parameter filled from the run, such as the constant L, shows as 'from the run').")
            elif found.header.algorithm != algorithm:
                raise ValueError(f"objective_card: run {run!r} trained {found.header.algorithm!r}, not {algorithm!r}")
            else:
                config, run_id = found.config, found.id
        html = explainer.objective_card(spec, config=config, run_id=run_id, uid=uid("unipo-expl", algorithm, run),
                                        note=note)
        return unipo_macros.protect_html(env, html)

    @env.macro
    def compare(a: str, b: str) -> str:
        """Algorithm ``a``'s objective above ``b``'s, slot by slot."""
        html = compare_view.compare_html(spec_or_error(a, "compare"), spec_or_error(b, "compare"))
        return unipo_macros.protect_html(env, html)

    @env.macro
    def compare_selector(default_a: str = "grpo", default_b: str = "dapo") -> str:
        """Two selects of every algorithm; the comparison re-renders in the browser."""
        spec_or_error(default_a, "compare_selector")
        spec_or_error(default_b, "compare_selector")
        html = compare_view.compare_selector_html(_specs(), default_a, default_b,
                                                  uid=uid("unipo-cmp", default_a, default_b))
        return unipo_macros.protect_html(env, html)
