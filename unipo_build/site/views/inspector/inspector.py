"""The Step Inspector: one gradient update, its groups' contributions and one group token by token.

``step_inspector(run, step=None, moment=None, page_url=...)`` returns the HTML of one inspector:

- a container ``<div class="unipo-inspector">`` with ``data-run``, ``data-algorithm``,
  ``data-site-root`` (relative path to the site root, from ``common.site_root(page.url)``),
  ``data-step`` (the step it opens on) and ``data-moment``;
- ``<template class="unipo-data" id="<id>-data">`` (``render.json_data``): the steps that have
  token files, the run's teaching moments, the resolved algorithm, the step to open, the token
  quantities, the palette's ramps and how many answers a group shows folded, as JSON escaped by
  ``render.json_for_script``;
- a caption (the run, its algorithm, how many steps have token detail), the build's notes (a
  step or a moment the run lacks) and an empty body.

Where it is rendered (issue 31, "one view, one rendering"): the step itself (the group bars,
the open group and its responses) is drawn by one side only, the browser.
``unipo_build/site/views/inspector/inspector.js`` renders it once the inspector comes near the
viewport (fetching ``<site>/assets/runs/<run>/steps/step_NNNNNN.json``), and again for every
step, group, colour and display the reader picks: that is interactive state, and the step file
is the data. The build used to render the opening step a second time as text (its own copies
of the bars, the group, the response facts, the zero-advantage notes and the choice of the
group to open), which the script replaced as soon as it ran; the course never promised the
inspector without JavaScript, so that copy is gone and this module only sends data. The build
still reads the step it opens on, so a step file it cannot read is a note on the page when the
site is built, not only an error in the reader's browser.

One group is shown at a time: a step of 16 groups of 8 answers of up to ~90 tokens is thousands
of tokens, and a chapter has three inspectors. The group bars are the way to the others.

In the browser, inspector.js colours tokens by a quantity the reader picks (token-scale.js,
with the quantities and ramps sent from ``token_scale``), shows a selected token's numbers
under its response, keeps step, group, token and quantity in the URL hash (``UNIPO.state``) and
reports the selected token (the ``token`` event of ``common.EVENTS``) to the Algorithm Explainer.

Everything from a log reaches the HTML through ``render.escape_text`` (the caption and notes)
or ``render.json_data`` (the data); the script writes log text with ``textContent`` only.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from unipo_build.core import runlog
from unipo_build.core.moments import MOMENT_NAMES, Moment, find_moments
from unipo_build.core.reader import token_digest
from unipo_build.site.render import escape_text, json_data
from unipo_build.core.runs import Run, RunCatalog, catalog_of
from unipo_build.core.schema import StepDetail
from unipo_build.site import fmt as F
from unipo_build.site.browser import site_root, step_path
from unipo_build.site.views.explainer.explainer import explainer_config
from unipo_build.site.palette import (
    TOKEN_DIVERGING,
    TOKEN_DIVERGING_DARK,
    TOKEN_SEQUENTIAL,
    TOKEN_SEQUENTIAL_DARK,
)
from unipo_build.site.views.inspector.token_scale import MIN_TINT, QUANTITIES


def group_name(detail: StepDetail, index: int, filtered: bool) -> str:
    """How a group is named to the reader: 'Group 3' for a trained one (its index in the update),
    'Filtered group 2' for the second group the sampling filter dropped at this step (a dropped
    group's logged index, 1000 and up in this project's trainer, means nothing to a reader).
    The browser gets the dropped groups' names from :func:`filtered_names` (inspector.js
    ``groupName``), so the Step Inspector and the anatomy figure name a group the same way."""
    if not filtered:
        return f"Group {index}"
    dropped = sorted({g.index for g in detail.filtered_groups} | {g.index for g in detail.prompts if g.filtered})
    return f"Filtered group {dropped.index(index) + 1}" if index in dropped else "Filtered group"


@token_digest("filtered_names")
def filtered_names(detail: StepDetail) -> dict[str, str]:
    """The step's dropped groups by logged index, each with its :func:`group_name` ({} when the
    sampling filter dropped none): what the inspector's data hands inspector.js."""
    dropped = {g.index for g in detail.filtered_groups} | {g.index for g in detail.prompts if g.filtered}
    return {str(i): group_name(detail, i, True) for i in sorted(dropped)}


# ---------------------------------------------------------------------------
# Moments, cached per run (finding them streams every token file of the run)
# ---------------------------------------------------------------------------

MOMENT_LABELS = {
    "all_correct_group": "A group where every answer is right (zero advantage)",
    "all_wrong_group": "A group where every answer is wrong (zero advantage)",
    "clipped_high": "The token clipped furthest above 1 + \u03b5",
    "clipped_low": "The token clipped furthest below 1 \u2212 \u03b5",
    "longest_wrong": "The longest wrong answer",
    "max_kl_step": "The step with the largest KL to the reference",
    "filtered_group": "A group dropped by the sampling filter",
    "ratio_max": "The token whose ratio rose furthest (clipped or not)",
    "ratio_min": "The token whose ratio fell furthest (clipped or not)",
    "mixed_group": "A group with both right and wrong answers",
    "shared_prefix_group": "The group whose shared opening tokens got the largest net push",
}


def run_moments(run: Run) -> dict[str, Moment | None]:
    """Every teaching moment of a run (None where the run lacks it), from its one reader."""
    return find_moments(run.path)


def nearest_step(steps: list[int], step: int) -> int | None:
    """The step with token data closest to ``step`` (the earlier one on a tie)."""
    if not steps:
        return None
    return min(steps, key=lambda s: (abs(s - step), s))


def moment_entries(moments: dict[str, Moment | None], token_steps: list[int]) -> list[dict[str, Any]]:
    """The moments as the browser gets them; a moment at a step without token data points at the nearest."""
    entries = []
    for name in MOMENT_NAMES:
        moment = moments.get(name)
        if moment is None:
            continue
        entry = moment.as_dict()
        entry["label"] = MOMENT_LABELS.get(name, name)
        if moment.step not in token_steps:
            entry["open_step"] = nearest_step(token_steps, moment.step)
        else:
            entry["open_step"] = moment.step
        entries.append(entry)
    return entries


# ---------------------------------------------------------------------------
# HTML
# ---------------------------------------------------------------------------

def _attrs(**attrs: Any) -> str:
    out = []
    for name, value in attrs.items():
        if value is None or value is False:
            continue
        name = name.rstrip("_").replace("_", "-")
        out.append(name if value is True else f'{name}="{escape_text(value)}"')
    return (" " + " ".join(out)) if out else ""


def note_html(text: str, kind: str = "note") -> str:
    """A short note in the views' style (the site's one admonition, ``fmt.note_html``)."""
    return F.note_html(text, kind, title="Note" if kind == "note" else "Warning", css_class="unipo-view-note")


#: A group of up to RESPONSES_ALL responses (the tiny set's group size) shows every one; a larger
#: group (the gpu set's 16) its first RESPONSES_SHOWN and its first right and first wrong one, the
#: rest one click away. inspector.js gets both numbers in the inspector's data; the objectives
#: chapter's anatomy figure folds its groups the same way (``responses_shown``).
RESPONSES_ALL = 8
RESPONSES_SHOWN = 4


def responses_shown(n: int) -> int:
    """How many of a group's ``n`` responses show before the reader asks for the rest."""
    return n if n <= RESPONSES_ALL else RESPONSES_SHOWN


def kl_in_loss_beta(config) -> float | None:
    """β of a KL term in the loss (the guided path's note), None without one."""
    if config is not None and config.component("kl").kl_place == "loss":
        return float(config.param("kl", "beta"))
    return None


def last_step(run: Run, token_steps: list[int]) -> int:
    """The run's last logged step (its metrics), else its last step with token detail."""
    table = run.reader.table
    return int(table.steps[-1]) if table.n else int(token_steps[-1])


def _uid(*parts: Any) -> str:
    digest = hashlib.sha256(json.dumps(parts, default=str).encode("utf-8")).hexdigest()[:8]
    return f"unipo-insp-{digest}"


def step_inspector(run: str | Run, step: int | None = None, moment: str | None = None, *,
                   page_url: str | None = None, catalog: RunCatalog | str | Path | None = None,
                   uid: str | None = None) -> str:
    """HTML of a Step Inspector for ``run`` (a run id or an algorithm id) on the page at ``page_url``.

    Opens at ``step``, or at the teaching moment ``moment`` (highlighting its group, response and
    token), or at the first step with token data. A missing run, step or moment gives a note,
    never a failed build. ``uid`` names the instance (element ids); derived from the arguments
    when not given.
    """
    if moment is not None and moment not in MOMENT_NAMES:
        raise ValueError(f"step_inspector: unknown moment {moment!r} (known: {', '.join(MOMENT_NAMES)})")
    runs = catalog_of(catalog) if not isinstance(run, Run) else None
    found = run if isinstance(run, Run) else runs.get(run)
    label = run.id if isinstance(run, Run) else str(run)
    if found is None:
        known = ", ".join(r.id for r in runs.loaded()) or "none"
        return note_html(f"The Step Inspector has no run '{label}' to show: there is no such run or algorithm in "
                         f"{runs.source.describe()} (runs found: {known}). Train one (see the README) or point "
                         "UNIPO_RUNS at your logs, then rebuild.")
    if not found.ok:
        return note_html(f"The run '{label}' could not be read, so the Step Inspector is not shown: {found.error}",
                         "warning")
    steps = found.token_steps()
    if not steps:
        return note_html(f"The run '{found.id}' has no token-level detail (no {runlog.TOKENS_DIR}/{runlog.TOKEN_FILE_GLOB}), so there is "
                         "nothing for the Step Inspector to show.")
    uid = uid or _uid(found.id, step, moment, page_url)
    notes = []
    status = ""  # where the moment is when its step has no tokens (the browser's status line says it too)
    moments = run_moments(found)
    chosen_moment = None
    open_step = steps[0]
    if moment is not None:
        chosen_moment = moments.get(moment)
        if chosen_moment is None:
            notes.append(f"This run has no teaching moment '{moment}' ({MOMENT_LABELS.get(moment, moment)}): "
                         f"a run trained with other settings or seeds may lack it. Showing step {open_step} instead.")
        else:
            if chosen_moment.step in steps:
                open_step = chosen_moment.step
            else:
                open_step = nearest_step(steps, chosen_moment.step)
                status = (f'<p class="unipo-inspector-status unipo-moment-note">{escape_text(MOMENT_LABELS.get(moment, moment))} '
                          f'is at step {chosen_moment.step}, which has no token detail; showing the nearest step with '
                          f'tokens, {open_step}.</p>')
    if step is not None:
        if step in steps:
            open_step = step
        else:
            near = nearest_step(steps, step)
            notes.append(f"Step {step} of run '{found.id}' has no token detail; showing the nearest step that has, "
                         f"{near}.")
            open_step = near
    try:
        # read only to report a broken step file at build time: the browser renders the step
        found.reader.detail(open_step)
    except (runlog.LogError, runlog.LogErrors) as err:
        return note_html(f"Step {open_step} of run '{found.id}' could not be read: {err}", "warning")
    config = found.config
    root = site_root(page_url)
    entries = moment_entries(moments, steps)
    data = {
        "run": found.id,
        "algorithm": found.header.algorithm,
        "title": found.header.title or found.id,
        "steps": steps,
        # the run's last logged step: a link from another run set maps its step to the same
        # fraction of training here (inspector.js mapStep)
        "last_step": last_step(found, steps),
        "step": open_step,
        "moments": entries,
        "moment": next((e for e in entries if e["name"] == chosen_moment.name), None) if chosen_moment else None,
        # a group of more answers than this shows only its first ``responses_shown`` (inspector.js)
        "responses_all": RESPONSES_ALL,
        "responses_shown": RESPONSES_SHOWN,
        # with each kind's explainer data: the card beside a selected token (explainer.js)
        "config": explainer_config(config) if config is not None else None,
        # the token ramps: the page's text colour reads on every token (palette.text_safe)
        "ramps": {"diverging": list(TOKEN_DIVERGING), "diverging_dark": list(TOKEN_DIVERGING_DARK),
                  "sequential": list(TOKEN_SEQUENTIAL), "sequential_dark": list(TOKEN_SEQUENTIAL_DARK),
                  "min_tint": MIN_TINT},
        "quantities": [{"key": q.key, "label": q.label, "kind": q.kind, "source": q.source, "transform": q.transform,
                        "description": q.description} for q in QUANTITIES],
        # the run's step-file folder; the file name comes from the page's browser data (common.browser_data)
        "step_path": step_path(found.id, 0).rsplit("/", 1)[0] + "/",
    }
    # the names of the groups the sampling filter dropped, by step (group_name; inspector.js reads
    # them, it does not name a dropped group itself); a run that drops none carries no table
    dropped = {str(s): names for s, names in found.reader.digest("filtered_names").items() if names}
    if dropped:
        data["filtered_names"] = dropped
    title = found.header.title or found.id
    caption = (f'<p class="unipo-inspector-caption"><span class="unipo-label">Step Inspector</span> '
               f'{escape_text(title)} <span class="unipo-fact">{escape_text(found.header.algorithm)}</span> '
               f'<span class="unipo-fact">{len(steps)} steps with token detail</span></p>')
    notes_html = "".join(note_html(n) for n in notes)
    moment_attr = chosen_moment.name if chosen_moment is not None else None
    return (f'<div class="unipo-inspector"{_attrs(id=uid, data_run=found.id, data_algorithm=found.header.algorithm, data_site_root=root, data_step=open_step, data_last_step=data["last_step"], data_moment=moment_attr)}>'
            f'{json_data(data, data_id=uid + "-data")}'
            f'{caption}{notes_html}<div class="unipo-inspector-controls" hidden></div>{status}'
            '<div class="unipo-inspector-body"></div></div>')
