"""MkDocs hook: the per-step token files of every loaded run, as static JSON in the site.

Registered in mkdocs.yml as a second entry under ``hooks:``. After the build it copies
``<run>/tokens/step_NNNNNN.json`` of each run that loaded to
``<site>/assets/runs/<run_id>/steps/step_NNNNNN.json`` (``site.browser.step_path``), where the
Step Inspector fetches a step when the reader opens it; pages themselves carry only
downsampled metrics. A run that failed to load gets nothing (its pages show its error), and
the build goes on. Unchanged files are not copied again, so ``mkdocs serve`` stays quick.

MkDocs loads this file by path, so it imports the package absolutely.
"""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

from unipo_build.core import gzlog, runlog, runs
from unipo_build.site.browser import RUN_ASSETS, step_path

log = logging.getLogger("mkdocs.plugins.unipo.site_data")


def _catalog(config) -> runs.RunCatalog:
    root = Path(config.config_file_path).resolve().parent
    return runs.catalog(runs.runs_source(root, config.get("extra") or {}))


def _copy_if_changed(source: Path, target: Path) -> bool:
    try:
        src, dst = source.stat(), target.stat()
        if src.st_size == dst.st_size and int(src.st_mtime) == int(dst.st_mtime):
            return False
    except FileNotFoundError:
        pass
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(source, target)
    return True


def copy_run_steps(run: runs.Run, site_dir: Path) -> tuple[int, int]:
    """Copy one run's token files into the site; returns (files, bytes) now in place."""
    files = total = 0
    for step in run.token_steps():
        source = runlog.token_file(run.path, step)
        target = site_dir / step_path(run.id, step)
        if runlog.is_packed(source):  # a published run's file: the browser reads it plain
            gzlog.copy_plain(source, target)
        else:
            _copy_if_changed(source, target)
        files += 1
        total += target.stat().st_size
    return files, total


def publish_runs(run_list: list[runs.Run], site_dir: Path) -> dict[str, tuple[int, int]]:
    """Copy the token files of every loaded run; the first run of an id wins."""
    done: dict[str, tuple[int, int]] = {}
    for run in run_list:
        if not run.ok:
            log.info("unipo: run %s failed to load; its steps are not published (%s)", run.path.name, run.error)
            continue
        if run.id in done:
            log.info("unipo: two runs have the id %r; %s is not published", run.id, run.path)
            continue
        done[run.id] = copy_run_steps(run, site_dir)
    return done


def on_post_build(config, **kwargs):
    site_dir = Path(config.site_dir)
    published = publish_runs(_catalog(config).runs, site_dir)
    for run_id, (files, size) in published.items():
        log.info("unipo: %s: %d step files (%.1f MB) in %s/%s/", run_id, files, size / 1e6, RUN_ASSETS, run_id)


def on_serve(server, config, builder, **kwargs):
    """Rebuild when a run changes under ``mkdocs serve``."""
    for directory in _catalog(config).source.paths:
        server.watch(str(directory))
    return server
