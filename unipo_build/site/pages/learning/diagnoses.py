"""The diagnosis cards (``unipo_build.core.diagnose``: one per question practitioners ask of a run), drawn once
for every page that shows them: ``unipo explain``'s run pages and the course's run cards.

A card gives the question, the verdict (fine / look here / not measurable), the figure it rests on or what
the log lacks, the steps that show it (links into the page's Step Inspector where the page has one under a
known id, else their numbers) and the chapter that teaches it (a link where the caller can name it).
"""

from __future__ import annotations

from typing import Callable

from unipo_build.core.diagnose import LOOK, UNMEASURABLE, Chapter, Diagnosis
from unipo_build.site.fmt import escape_text

VERDICT_CLASS = {"fine": "success", LOOK: "warning", UNMEASURABLE: "note"}


def diagnoses_summary(found: list[Diagnosis]) -> str:
    """'2 of 8 questions point somewhere to look', or 'Nothing to look at on the 8 questions'."""
    look = sum(d.verdict == LOOK for d in found)
    return (f"{look} of {len(found)} questions point somewhere to look" if look else
            f"Nothing to look at on the {len(found)} questions")


def diagnoses_html(found: list[Diagnosis], *, step_href: Callable[[int], str] | None = None,
                   chapter_html: Callable[[Chapter], str] | None = None) -> str:
    """The cards of a run's diagnoses. ``step_href``: the link that opens a step in the page's Step
    Inspector (None: the steps are named, not linked); ``chapter_html``: how the teaching chapter is named
    (HTML; default its title)."""
    cards = []
    for d in found:
        body = d.figure if d.verdict != UNMEASURABLE else f"The log lacks it: {d.lacks}." + (
            f" ({d.figure})" if d.figure else "")
        steps = ""
        if d.steps:
            if step_href is not None:
                shown = ", ".join(f'<a class="unipo-diagnosis-step" href="{escape_text(step_href(s))}">step {s}</a>'
                                  for s in d.steps)
                steps = f'<p class="unipo-diagnosis-steps">Where it shows (opens in the Step Inspector): {shown}</p>'
            else:
                steps = (f'<p class="unipo-diagnosis-steps">Where it shows: steps '
                         f"{escape_text(', '.join(str(s) for s in d.steps))}</p>")
        taught = chapter_html(d.chapter) if chapter_html is not None else escape_text(d.chapter.title)
        cards.append(
            f'<div class="admonition {VERDICT_CLASS[d.verdict]} unipo-diagnosis" data-key="{escape_text(d.key)}" '
            f'data-verdict="{escape_text(d.verdict)}"><p class="admonition-title">{escape_text(d.question)} '
            f'<span class="unipo-diagnosis-verdict">{escape_text(d.verdict)}</span></p>'
            f"<p>{escape_text(body)}</p>{steps}"
            f'<p class="unipo-diagnosis-source">Taught in {taught}; asked in {escape_text(d.source)}.</p></div>')
    lead = (f'<p class="unipo-diagnoses-summary">{escape_text(diagnoses_summary(found))}; each answer is computed '
            "from this run's log alone.</p>")
    return f'<div class="unipo-diagnoses">{lead}{"".join(cards)}</div>'
