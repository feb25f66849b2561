"""The mkdocs-macros entry point (``plugins: macros: modules: [unipo_build.site.macros]``).

:func:`define_env` imports the site's view modules (``site.context.SITE_MODULES``), whose macros
are registered beside their code with ``@site.context.macro``, and binds each to the build's
:class:`site.context.Site` (project root, runs, specs, page). A macro that needs a view script
asks for it (``scripts=``); :func:`use_scripts` records it for the page, and the hook adds the
script to that page only, and links that view's style sheets (``VIEW_STYLES``) in the page's head.

Macros that return HTML pass it through :func:`protect_html`. Python-Markdown leaves a raw
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

import hashlib
import importlib
import json
import secrets
from typing import Any

from mkdocs.exceptions import PluginError

from unipo_build.site import render

#: Placeholders are ``UNIPOHTML`` + a random nonce drawn once per build + digits + ``X`` + hex:
#: nothing Markdown, Jinja or KaTeX would touch, and nothing an input file can forge (a prompt
#: that holds a placeholder it has seen in another build's source is plain text in this one).
TOKEN_PREFIX = "UNIPOHTML" + secrets.token_hex(8)

# page src_uri -> {placeholder: html}; filled while macros run on a page, emptied by the hook.
_PROTECTED: dict[str, dict[str, str]] = {}
# page src_uri -> number of chart ids handed out on that page.
_CHART_COUNTS: dict[str, int] = {}
# page src_uri -> view scripts the page's macros need, in order of first use.
_SCRIPTS: dict[str, list[str]] = {}

#: The view scripts by name, each the files it runs, in order (paths under unipo_build/site/: a
#: view's scripts live in its folder beside its Python). The hook writes each as one file,
#: ``assets/views/<name>.js``, so its parts run in order however the page was reached (Material's
#: instant navigation loads a new page's scripts in parallel); a part that a page gets twice (the
#: math, in two views) sets itself up once.
VIEW_SCRIPTS: dict[str, tuple[str, ...]] = {
    "explainer": ("views/explainer/unipo-math.js", "views/views-common.js", "views/explainer/explainer.js"),
    "inspector": ("views/explainer/unipo-math.js", "views/views-common.js", "views/explainer/explainer.js",
                  "views/inspector/token-scale.js", "views/inspector/inspector-tokens.js", "views/inspector/inspector.js"),
    "explorer": ("views/views-common.js", "views/explorer/explorer.js"),
    "playgrounds": ("views/explainer/unipo-math.js", "views/inspector/token-scale.js",
                    "playgrounds/playgrounds-sim.js", "playgrounds/playgrounds.js"),
}

#: The views' style sheets by view name (paths under unipo_build/site/, each beside its view's
#: code). A page links the sheets of the views its macros asked for, each sheet once, in the order
#: of :data:`STYLE_SHEETS`; the hook writes each as ``assets/views/<file name>``. The comparisons
#: (``compare``, ``compare_selector``, ``explain_match``) are drawn by the explainer's script and
#: use its sheets. What the pages' own figures use is site-wide: ``PAGE_STYLES``, listed in
#: mkdocs.yml's extra_css.
VIEW_STYLES: dict[str, tuple[str, ...]] = {
    "explorer": ("views/explorer/explorer.css",),
    "playgrounds": ("playgrounds/playgrounds.css",),
    "inspector": ("views/views-common.css", "views/inspector/inspector.css", "views/explainer/explainer.css"),
    "explainer": ("views/views-common.css", "views/explainer/explainer.css", "views/compare/compare.css"),
}
#: Every view sheet, in the order a page links them (later sheets win ties of specificity).
STYLE_SHEETS: tuple[str, ...] = tuple(dict.fromkeys(sheet for sheets in VIEW_STYLES.values() for sheet in sheets))
#: The site-wide sheet of the pages' figures, written as ``assets/pages.css``.
PAGE_STYLES = "pages/pages.css"


def _page_key(env: Any) -> str | None:
    page = getattr(env, "page", None)
    file = getattr(page, "file", None)
    return getattr(file, "src_uri", None)


def protect_html(env: Any, html: str) -> str:
    """Return a placeholder for ``html``; the hook puts ``html`` back after Markdown.

    Outside a page (no ``env.page``) the HTML is returned unchanged.
    """
    key = _page_key(env)
    if key is None:
        return html
    store = _PROTECTED.setdefault(key, {})
    digest = hashlib.sha256(html.encode("utf-8")).hexdigest()[:8]
    token = f"{TOKEN_PREFIX}{len(store) + 1:04d}X{digest}"
    store[token] = html
    return token


def restore_protected(page_key: str, html: str) -> str:
    """Swap the protected HTML of one page back in; called from the hook's on_page_content."""
    store = _PROTECTED.pop(page_key, {})
    for token, fragment in store.items():
        wrapped = f"<p>{token}</p>"
        if wrapped in html:
            html = html.replace(wrapped, fragment)
        elif token in html:
            html = html.replace(token, fragment)
        else:
            raise PluginError(
                f"{page_key}: the HTML of a macro was lost during Markdown processing "
                f"(placeholder {token}); call the macro on a line of its own, outside code blocks."
            )
    if TOKEN_PREFIX in html:
        leftover = html[html.index(TOKEN_PREFIX):][:40]
        raise PluginError(f"{page_key}: unknown macro placeholder left in the page: {leftover!r}")
    return html


def reset_page(env: Any) -> None:
    key = _page_key(env)
    if key is not None:
        _PROTECTED.pop(key, None)
        _CHART_COUNTS.pop(key, None)
        _SCRIPTS.pop(key, None)


def use_scripts(env: Any, names: tuple[str, ...] | list[str]) -> None:
    """Record that the current page needs these views: their scripts (``VIEW_SCRIPTS``) and their
    style sheets (``VIEW_STYLES``)."""
    key = _page_key(env)
    if key is None:
        return
    wanted = _SCRIPTS.setdefault(key, [])
    for name in names:
        if name not in VIEW_SCRIPTS and name not in VIEW_STYLES:
            known = ", ".join(dict.fromkeys([*VIEW_SCRIPTS, *VIEW_STYLES]))
            raise ValueError(f"unknown view {name!r} (known: {known})")
        if name not in wanted:
            wanted.append(name)


def page_scripts(page_key: str) -> list[str]:
    """The views (names) the page's macros asked for (emptied: the hook calls it once per page)."""
    return _SCRIPTS.pop(page_key, [])


def style_sheets(views: list[str] | tuple[str, ...]) -> list[str]:
    """The style sheets (``STYLE_SHEETS`` entries) of these views, each once, in cascade order."""
    wanted = {sheet for name in views for sheet in VIEW_STYLES.get(name, ())}
    return [sheet for sheet in STYLE_SHEETS if sheet in wanted]


def chart_id(env: Any, spec: dict, prefix: str = "unipo-vega") -> str:
    """A deterministic id for a chart: per-page counter + a hash of the spec."""
    key = _page_key(env) or ""
    n = _CHART_COUNTS.get(key, 0) + 1
    _CHART_COUNTS[key] = n
    digest = hashlib.sha256(
        json.dumps(spec, sort_keys=True, default=str).encode("utf-8")
    ).hexdigest()[:8]
    return f"{prefix}-{n}-{digest}"


def as_spec(spec: Any) -> dict:
    """A Vega-Lite spec as a dict: a dict as is, an Altair chart through ``to_dict()``."""
    if isinstance(spec, dict):
        return spec
    if callable(getattr(spec, "to_dict", None)):
        return render.chart_spec(spec)
    raise TypeError(f"expected a Vega-Lite spec (dict or Altair chart), got {type(spec).__name__}")


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

    for name in site_layer.SITE_MODULES:
        importlib.import_module(name)
    site = site_layer.Site(env)
    for definition in site_layer.MACROS.values():
        env.macro(site_layer.bind(site, definition))


def on_pre_page_macros(env: Any) -> None:
    """mkdocs-macros calls this before rendering each page: start the page's ids afresh."""
    reset_page(env)
