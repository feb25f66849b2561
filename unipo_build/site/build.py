"""The one programmatic MkDocs build: the project's mkdocs.yml loaded with some settings changed,
values added to its ``extra`` (and plugins), then built. Used by the run-set builds (hooks.build_set:
the course again for each further set) and by ``unipo explain`` (explain.build: pages around a
practitioner's runs)."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def build(config_file: str | Path, *, extra: dict[str, Any] | None = None, plugins: dict[str, Any] | None = None,
          **settings: Any):
    """Load ``config_file`` with ``settings`` (docs_dir, site_dir, nav, strict, ...), add ``extra``
    and ``plugins``, build; returns the loaded config. MkDocs' own errors propagate."""
    from mkdocs.commands.build import build as mkdocs_build
    from mkdocs.config import load_config

    config = load_config(str(config_file), **settings)
    config.extra.update(extra or {})
    for name, plugin in (plugins or {}).items():
        config.plugins[name] = plugin
    mkdocs_build(config)
    return config
