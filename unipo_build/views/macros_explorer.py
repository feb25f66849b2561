"""Macros of the Training Explorer (registered through ``unipo_build.macros.MACRO_MODULES``).

``{{ training_explorer(run, metrics=None, inspector=True) }}``, on a line of its own:

- ``run``: a run id, a run directory name, or an algorithm id (its first loaded run), looked up
  in the runs directory (``UNIPO_RUNS``, else ``extra.unipo_runs``, else data/runs).
- ``metrics``: 1 to 4 metric names for the rings, outermost first (default: reward, response
  length, KL or clipping, entropy, as far as the run logs them). The reader can change them.
- ``inspector``: place the Step Inspector of the run under the chart; clicking a step opens
  the nearest logged step in it.

A run that is missing or failed to load is shown as an admonition naming it and its error;
the build goes on.
"""

from __future__ import annotations

import logging
from typing import Any, Sequence

from unipo_build import macros as unipo_macros
from unipo_build import runs as unipo_runs
from unipo_build.views import explorer

log = logging.getLogger("mkdocs.plugins.unipo.explorer")


def _runs_directory(env: Any):
    extra = getattr(env, "conf", {}).get("extra", {}) if getattr(env, "conf", None) is not None else {}
    return unipo_runs.runs_dir((extra or {}).get("unipo_runs"))


def explorer_for(env: Any, run: Any, metrics: Sequence[str] | None = None, inspector: bool = True) -> str:
    """The explorer's HTML for ``run`` (a name or a :class:`unipo_build.runs.Run`)."""
    if isinstance(run, unipo_runs.Run):
        found = run
        name = run.id
    else:
        name = str(run)
        directory = _runs_directory(env)
        found = unipo_runs.get_run(name, directory)
        if found is None:
            log.info("training_explorer: no run %r in %s", name, directory)
            available = [r.id for r in unipo_runs.discover(directory)]
            return explorer.missing_run_html(name, directory, available)
    if not found.ok:
        log.info("training_explorer: run %r failed to load: %s", found.id, found.error)
    element_id = unipo_macros.chart_id(env, {"explorer": found.id, "metrics": list(metrics or [])},
                                       prefix="unipo-explorer")
    page = getattr(env, "page", None)
    return explorer.explorer_html(found, metrics, inspector=inspector, element_id=element_id,
                                  page_url=getattr(page, "url", None))


def register(env: Any) -> None:
    @env.macro
    def training_explorer(run: Any, metrics: Sequence[str] | None = None, inspector: bool = True) -> str:
        """The Training Explorer of a run: one ring per metric, angle = step."""
        return unipo_macros.protect_html(env, explorer_for(env, run, metrics, inspector))
