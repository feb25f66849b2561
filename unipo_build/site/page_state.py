"""What a page's macros leave for the hook, and the views they may ask for: the one per-page state of a build.

A macro that returns HTML hands it to :func:`protect_html` and gets an inert placeholder back; the hook
(``unipo_build/site/hooks.py``, ``on_page_content``) swaps the HTML in after Markdown has run
(:func:`restore_protected`; ``unipo_build.site.macros`` says why). A macro that needs a view asks for its
scripts and style sheets (:func:`use_scripts`, checked against :data:`VIEW_SCRIPTS` and :data:`VIEW_STYLES`); the
hook adds them to that page only. Charts get ids unique on their page (:func:`chart_id`).

Below both the macros' context (``site.context.Site``, which every page module uses) and the mkdocs-macros entry
point (``site.macros``), so that neither imports the other.
"""

from __future__ import annotations

import hashlib
import json
import secrets
from typing import Any

from mkdocs.exceptions import PluginError

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
    "explainer": ("views/explainer/unipo-math.js", "views/views-common.js", "views/explainer/explainer.js",
                  "views/compare/compare.js"),
    "inspector": ("views/explainer/unipo-math.js", "views/views-common.js", "views/explainer/explainer.js",
                  "views/compare/compare.js", "views/inspector/token-scale.js", "views/inspector/inspector-tokens.js",
                  "views/inspector/inspector.js"),
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
