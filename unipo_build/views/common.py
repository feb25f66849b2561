"""What the views share: where the built site keeps run data, and the browser events.

Browser contract (events are dispatched on ``document``):
- ``unipo:open-step``  detail {run, step, inspector?}: the Training Explorer (or a moment link) asks
  the Step Inspector of that run to open a step; with ``inspector`` (an element id) only that one
  (the explorer addresses its own, so a chapter's teaching-moment inspectors stay put).
- ``unipo:token``      detail {run, algorithm, step, group, response, token}: the Step Inspector
  reports the selected token; Algorithm Explainer cards of that algorithm fill in its numbers.

Site layout: per-step token files are copied at build time to
``<site>/assets/runs/<run_id>/steps/step_NNNNNN.json`` (see ``step_url``) and fetched only when a
step is opened; the page itself carries only downsampled metrics.
"""

from __future__ import annotations

import posixpath

RUN_ASSETS = "assets/runs"
EVENT_OPEN_STEP = "unipo:open-step"
EVENT_TOKEN = "unipo:token"


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
    return f"{RUN_ASSETS}/{run_id}/steps/step_{step:06d}.json"
