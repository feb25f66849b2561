"""The mkdocs-macros entry point (``plugins: macros: modules: [unipo_build.site.macros]``).

:func:`define_env` imports the modules of ``unipo_build.site`` that register macros (:func:`macro_modules`
finds them by walking the package), whose macros are registered beside their code with
``@site.context.macro``, and binds each to the build's
:class:`site.context.Site` (project root, runs, specs, page). A macro that needs a view script
asks for it (``scripts=``); ``page_state.use_scripts`` records it for the page, and the hook adds the
script to that page only, and links that view's style sheets (``VIEW_STYLES``) in the page's head.
What a page's macros leave for the hook, and the views' scripts and sheets, are ``site.page_state``'s
(below both this module and ``site.context``).

Macros that return HTML pass it through ``page_state.protect_html``. Python-Markdown leaves a raw
HTML line alone only at the top level of a page; inside an admonition, a content tab or a
list item it would run the line through its inline processors, which rewrites JSON and
attribute text (``_x_`` becomes emphasis, ``$..$`` becomes math, ``&`` becomes ``&amp;``).
So a protected macro puts an inert placeholder (letters and digits only) into the Markdown,
and the MkDocs hook (``unipo_build/site/hooks.py``, ``on_page_content``) swaps the HTML in after
Markdown has run. Call such a macro as a paragraph of its own (blank lines around it), at
any indentation: the paragraph ``<p>PLACEHOLDER</p>`` is replaced whole. The placeholders carry
a random nonce drawn once per build, so no input string can collide with them.
"""

from __future__ import annotations

import importlib
import importlib.util
import pkgutil
import re
from pathlib import Path
from typing import Any

from unipo_build.site import render
from unipo_build.site.page_state import (  # noqa: F401  (re-exported: where the tests and README's table look)
    PAGE_STYLES,
    STYLE_SHEETS,
    TOKEN_PREFIX,
    VIEW_SCRIPTS,
    VIEW_STYLES,
    _PROTECTED,
    chart_id,
    page_scripts,
    protect_html,
    reset_page,
    restore_protected,
    style_sheets,
    use_scripts,
)


def as_spec(spec: Any) -> dict:
    """A Vega-Lite spec as a dict: a dict as is, an Altair chart through ``to_dict()``."""
    if isinstance(spec, dict):
        return spec
    if callable(getattr(spec, "to_dict", None)):
        return render.chart_spec(spec)
    raise TypeError(f"expected a Vega-Lite spec (dict or Altair chart), got {type(spec).__name__}")


#: A module registers a macro when a line of its own starts with ``@macro`` or ``macro(`` (the decorator,
#: or registering a function defined elsewhere under a page's name).
REGISTERS = re.compile(r"^(?:@macro\b|macro\()", re.M)


def macro_modules() -> list[str]:
    """Every module of ``unipo_build.site`` that registers a page macro, in the package's order: found by
    walking the package (``pkgutil``) and reading each module's source, so a new page module is
    picked up without a list to keep. Modules that register nothing (the hooks, the builder) are not
    imported."""
    from unipo_build import site as package

    found = []
    for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
        spec = importlib.util.find_spec(info.name)
        origin = spec.origin if spec else None
        if origin and origin.endswith(".py") and REGISTERS.search(Path(origin).read_text(encoding="utf-8")):
            found.append(info.name)
    return found


def import_macro_modules() -> None:
    """Import every module that registers a macro (:func:`macro_modules`), filling ``context.MACROS``."""
    for name in macro_modules():
        importlib.import_module(name)


def define_env(env: Any) -> None:
    import altair

    from unipo_build.site import context as site_layer

    # Charts are the project's own code: a build does not check each part against the Vega-Lite schema
    # as Altair makes it (its debug mode); the tests check every chart of the built site (render.chart_spec).
    altair.utils.schemapi.disable_debug_mode()

    @env.macro
    def vega(spec_dict: Any, caption: str | None = None, css_class: str = "") -> str:
        """Embed a Vega-Lite chart (a dict or an Altair chart) on a line of its own."""
        spec = as_spec(spec_dict)
        html = render.vega_embed(
            spec, chart_id=chart_id(env, spec), caption=caption, css_class=css_class
        )
        return protect_html(env, html)

    import_macro_modules()
    site = site_layer.Site(env)
    for definition in site_layer.MACROS.values():
        env.macro(site_layer.bind(site, definition))


def on_pre_page_macros(env: Any) -> None:
    """mkdocs-macros calls this before rendering each page: start the page's ids afresh."""
    reset_page(env)
