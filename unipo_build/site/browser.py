"""What the views share: where the built site keeps run data, and what the browser is told.

Browser contract: :func:`browser_data` is on every page (overrides/main.html writes it, as
``<template class="unipo-data" id="unipo-browser">``, before unipo.js, which reads it into
``UNIPO.events`` and ``UNIPO.stepFile``). The scripts take every event name and the step-file name
from there; none writes one itself. Events (dispatched on ``document`` unless said otherwise), by
the key the scripts read them under:

- ``open_step``     detail {run, step, inspector?}: the Training Explorer (or a moment link) asks
  the Step Inspector of that run to open a step; with ``inspector`` (an element id) only that one
  (the explorer addresses its own, so a chapter's teaching-moment inspectors stay put).
- ``token``         detail {run, algorithm, step, group, response, token, ...}: the Step Inspector
  reports the selected token; Algorithm Explainer cards of that algorithm fill in its numbers.
- ``token_cleared`` detail {run, algorithm, inspector}: that token is no longer selected; the cards
  return to their hint.
- ``compare``       detail {a, b, selector}: the page's comparison selector changed its pair.
- ``typeset``       (on the element, bubbling) unipo.js typeset the formulas in it.
- ``rendered``      detail {root}: unipo.js rendered the views under ``root``.
- ``scheme_change`` detail {scheme}: the reader switched the colour scheme.

Site layout: per-step token files are copied at build time to
``<site>/assets/runs/<run_id>/steps/<runlog.token_file_name(step)>`` (see ``step_path``) and
fetched only when a step is opened; the page itself carries only downsampled metrics.
"""

from __future__ import annotations

import posixpath

from unipo_build.site.render import json_data
from unipo_build.core.runlog import TOKEN_FILE_DIGITS, TOKEN_FILE_PREFIX, TOKEN_FILE_SUFFIX, token_file_name

RUN_ASSETS = "assets/runs"
#: The browser events, by the key scripts read them under (``UNIPO.events.open_step``).
EVENTS = {
    "open_step": "unipo:open-step",
    "token": "unipo:token",
    "token_cleared": "unipo:token-cleared",
    "compare": "unipo:compare",
    "typeset": "unipo:typeset",
    "rendered": "unipo:rendered",
    "scheme_change": "unipo:schemechange",
}
#: The id of the page's browser data (unipo.js reads it).
BROWSER_DATA_ID = "unipo-browser"


def browser_data() -> dict:
    """What every page tells its scripts: the event names and how a step's token file is named."""
    return {"events": dict(EVENTS),
            "step_file": {"prefix": TOKEN_FILE_PREFIX, "digits": TOKEN_FILE_DIGITS, "suffix": TOKEN_FILE_SUFFIX}}


def browser_data_html() -> str:
    """:func:`browser_data` as the page carries it (``render.json_data``)."""
    return json_data(browser_data(), data_id=BROWSER_DATA_ID)


def token_label(text: str) -> str:
    """A token named in a sentence, a heading or a table, as every view writes it: between quotes,
    a space as ·, a line break as ↵, a tab as →, no text as ∅ (the Step Inspector's Tokens display),
    inside Unicode isolates (render.isolate). Not escaped: escape it as any text.
    views-common.js ``tokenLabel`` writes the same."""
    shown = text.replace(" ", "\u00b7").replace("\n", "\u21b5").replace("\t", "\u2192") or "\u2205"
    return "\u201c\u2068" + shown + "\u2069\u201d"


def site_root(page_url: str | None) -> str:
    """Relative path from a page to the site root: '' for the home page, '../../' for 'a/b/'.

    Relative, so the site works from any sub-path (GitHub Pages) and from file-less servers.
    """
    if not page_url:
        return ""
    directory = page_url if page_url.endswith("/") else posixpath.dirname(page_url) + "/"
    depth = len([part for part in directory.split("/") if part])
    return "../" * depth


def step_path(run_id: str, step: int) -> str:
    """Path of a step's token file, relative to the site root."""
    return f"{RUN_ASSETS}/{run_id}/steps/{token_file_name(step)}"
