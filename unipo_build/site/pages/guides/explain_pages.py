"""The pages ``unipo explain`` builds around a practitioner's own runs (``unipo_build.site.explain``).

    {% set r = explain_run("my-run") %}      the run of that exact id (a Run, for the view macros)
    {{ explain_summary("my-run") }}          one sentence: algorithm, size, detail, the spec it is explained by
    {{ explain_spec_name("grpo") }}          a spec's name, as text
    {{ explain_match("my-run") }}            the nearest spec above the run's resolved components, slot by slot
    {{ explain_objective_card("my-run") }}   the Algorithm Explainer with the run's own components
    {{ explain_run_card("my-run") }}         the run card, what the log lacks and what was derived on import
    {{ explain_diagnoses("my-run") }}        one card per question practitioners ask of a run (unipo_build.core.diagnose)
    {{ explain_explorer("my-run") }}         the Training Explorer with its Step Inspector, under the ids the
                                             diagnoses' step links name (one per page)

A run is named by its exact id here, never by an algorithm id: a practitioner's run called ``ppo``
that trained GRPO is still that run. The spec a run is explained by is :func:`matching.nearest_spec`'s, the
rule the importers' notes name theirs by: the one its header names, else the one whose components differ from
the run's in the fewest slots.
"""

from __future__ import annotations

from unipo_build.core.diagnose import diagnose
from unipo_build.core.matching import SpecMatch, header_gaps, nearest_spec
from unipo_build.core.numbers import fmt_num, plain_num
from unipo_build.core.runs import Run
from unipo_build.core.schema import TokenArrays
from unipo_build.site.views.explainer import explainer
from unipo_build.site.views.explorer import explorer
from unipo_build.site.views.inspector import inspector
from unipo_build.site.views.compare.compare import compare_run_html
from unipo_build.site.pages.learning.diagnoses import diagnoses_html
from unipo_build.site.fmt import escape_text
from unipo_build.site.context import AuthorError, Site, macro
from unipo_build.site.pages.learning.verdicts import run_card_html

#: Optional per-token arrays, and what a reader loses without them.
TOKEN_ARRAYS = {
    "ref_logp": "reference log-probs (the KL to the reference cannot be recomputed per token)",
    "entropy": "entropy (the inspector cannot colour tokens by it)",
    "kl": "KL estimate as the trainer computed it",
}
#: Metrics of the catalogue the views draw first, and when each applies.
KEY_METRICS = {
    "reward/mean": None,
    "objective": None,
    "length/mean": None,
    "entropy/mean": None,
    "kl/mean": "kl",
    "clip/frac_high": "clip",
    "clip/frac_low": "clip",
}


#: The run page's Training Explorer (one per page); its Step Inspector is EXPLORER_ID-inspector, and a link to
#: "#<that id without 'unipo-'>:step=N" opens step N in it (UNIPO.state, inspector.js).
EXPLORER_ID = "unipo-explorer-run"
INSPECTOR_VIEW = EXPLORER_ID.removeprefix("unipo-") + "-inspector"


def run_of(site: Site, run_id: str, macro_name: str) -> Run:
    """The loaded run whose id is exactly ``run_id`` (not an algorithm's chosen run)."""
    run = site.catalog.by_id(run_id)
    if run is not None:
        return run
    raise AuthorError(f"{macro_name}: no loaded run with the id {run_id!r} in {site.catalog.source.describe()}")


def match_of(site: Site, run: Run, macro_name: str) -> SpecMatch:
    match = nearest_spec(run.header.algorithm, run.config, site.specs())
    if match is None:
        raise AuthorError(f"{macro_name}: run {run.id!r} has no resolved components (algorithm_config is null): "
                          "no spec matches it")
    return match


def match_sentence(site: Site, run: Run, match: SpecMatch) -> str:
    spec = match.spec
    if match.by_id:
        return f"its header names the {spec.name} spec ({spec.id})"
    return (f"its header names {run.header.algorithm!r}, not one of the course's algorithms; {spec.name} is the "
            f"nearest: the fewest slots of another kind, then of other parameters ({match.how(import_gaps(run.header))})")


def lacks(run: Run) -> list[str]:
    """What the log does not hold that some view would show, each with what it costs the reader."""
    out = []
    table = run.reader.table
    steps = run.token_steps()
    if not steps:
        out.append("token-level detail: the Step Inspector and the Algorithm Explainer's token numbers need a "
                   "trainer's token tap")
    else:
        present = set()
        for step in steps[:3]:
            for prompt in run.reader.detail(step).prompts:
                for response in prompt.responses:
                    if response.tokens is not None:
                        present |= {name for name in TOKEN_ARRAYS if getattr(response.tokens, name) is not None}
        out += [f"per-token {TOKEN_ARRAYS[name]}" for name in TOKEN_ARRAYS
                if name not in present and not (name in ("ref_logp", "kl") and run.config.component("kl").is_none)]
    names = set(table.names())
    metrics = [m for m, slot in KEY_METRICS.items()
               if m not in names and (slot is None or not run.config.component(slot).is_none)]
    if metrics:
        out.append(f"metrics {', '.join(metrics)} (their rings of the Training Explorer are left out)")
    h = run.header
    unrecorded = [label for label, value in (("seed", h.seed), ("hardware", h.hardware), ("software versions",
                  h.software), ("finish time", h.finished_at)) if not value and value != 0]
    if unrecorded:
        out.append(f"not recorded in the header: {', '.join(unrecorded)}")
    return out


def import_gaps(header) -> dict[str, list[str]]:
    """Slot -> what the trainer ran there that no kind expresses, as the import recorded it (the importers'
    ``imported_from.gaps``, :class:`matching.Gap`; OpenRLHF's approximations of a spec, ``openrlhf.gaps``): the
    run's components hold the nearest kind, so the slot panel shows these slots as modified with these lines."""
    out: dict[str, list[str]] = {}
    for gap in header_gaps(header):
        out.setdefault(gap.slot, []).append(
            f"ran {gap.setting} = {gap.value}; the run's components hold --algorithm's {gap.nearest}"
            if gap.cause == "algorithm" else
            f"ran {gap.setting} = {gap.value}: no kind expresses it; nearest: {gap.nearest}")
    for gap in ((header.model_extra or {}).get("openrlhf") or {}).get("gaps") or []:
        if gap.get("slot"):
            out.setdefault(str(gap["slot"]), []).append(f"ran on OpenRLHF, which cannot do {gap.get('spec_says')}: "
                                                        f"{gap.get('nearest')}")
    return out


def _items(lines: list[str]) -> str:
    return "<ul>" + "".join(f"<li>{escape_text(line)}</li>" for line in lines) + "</ul>"


@macro
def explain_run(site: Site, run_id: str) -> Run:
    """The run of exactly this id, for ``{% set %}`` and the view macros that take a run."""
    return run_of(site, run_id, "explain_run")


@macro
def explain_summary(site: Site, run_id: str) -> str:
    """'GRPO run of 3 updates (2 rollouts), token-level detail on 2 of them; explained by ...'."""
    run = run_of(site, run_id, "explain_summary")
    match = match_of(site, run, "explain_summary")
    table = run.reader.table
    detail = len(run.token_steps())
    return (f"a {site.algorithm_name(run.header.algorithm)} run of {fmt_num(table.n)} update"
            f"{'' if table.n == 1 else 's'} ({fmt_num(table.n_rollouts)} rollout{'' if table.n_rollouts == 1 else 's'}), "
            + (f"token-level detail on {fmt_num(detail)} of them" if detail else "no token-level detail")
            + f"; explained by {match.spec.name}: {match_sentence(site, run, match)}")


@macro
def explain_spec_name(site: Site, spec_id: str) -> str:
    """A spec's name as text (a link's text in the generated pages: never Markdown of its own)."""
    return site.spec(spec_id, "explain_spec_name").name


@macro(html=True, scripts=("explainer",))
def explain_match(site: Site, run_id: str) -> str:
    """The nearest spec (first) above the run's resolved components (second), slot by slot."""
    run = run_of(site, run_id, "explain_match")
    match = match_of(site, run, "explain_match")
    gaps = import_gaps(run.header)
    changed = len(match.differing(gaps))  # the import's note counts by the same rule (SpecMatch.how)
    option = ((run.header.model_extra or {}).get("imported_from") or {}).get("algorithm_option") or {}
    unchecked = option.get("settings") == "not recorded"
    verdict = (f"The log does not record the trainer's settings: the run is shown with the {match.spec.name} "
               "spec's components (imported with --algorithm), which it may not have trained." if unchecked and not changed
               else f"The run trained exactly the {match.spec.name} spec's components." if not changed else
               f"The run trained {changed} slot{'' if changed == 1 else 's'} differently from the {match.spec.name} "
               "spec: the chapter's words describe the spec, the views show what the run did.")
    causes = {g.cause for g in header_gaps(run.header)}
    if "kind" in causes or ((run.header.model_extra or {}).get("openrlhf") or {}).get("gaps"):
        verdict += (" Slots marked for a trainer setting without a kind hold the nearest kind in the run's "
                    "components; their rows say what the trainer ran.")
    if "algorithm" in causes:
        verdict += (" Slots marked where the trainer ran other settings than the spec named with --algorithm hold "
                    "the spec's kind in the run's components; their rows say what the trainer ran.")
    head = (f'<p class="unipo-explain-match">Explained by <strong>{escape_text(match.spec.name)}</strong>: '
            f"{escape_text(match_sentence(site, run, match))}. {escape_text(verdict)}</p>")
    uid = site.chart_id({"view": "unipo-cmpr", "args": [run.id]}, prefix="unipo-cmpr")
    return head + compare_run_html(match.spec, run.config, f"run {run.id}", run.id, gaps=gaps, uid=uid)


@macro(html=True, scripts=("explainer",))
def explain_objective_card(site: Site, run_id: str) -> str:
    """The Algorithm Explainer with the run's resolved components and the nearest spec's words."""
    run = run_of(site, run_id, "explain_objective_card")
    match = match_of(site, run, "explain_objective_card")
    uid = site.chart_id({"view": "explain-card", "run": run.id}, prefix="unipo-expl")
    # a run that trained the spec it names is headed by it; any other by its own components, the spec beside them
    own = None if match.by_id and not match.differing(import_gaps(run.header)) else f"run {run.id}"
    html = explainer.objective_card(match.spec, config=run.config, run_id=run.id, uid=uid, repo=site.repo,
                                    reward=run.header.reward.description, own=own)
    # The Step Inspector announces a token with the run's algorithm id; a card answers its own id,
    # so a run explained by a spec of another id (a variant of GRPO) gets a card under its id.
    spec_attr = f'data-algorithm="{escape_text(match.spec.id)}"'
    return html.replace(spec_attr, f'data-algorithm="{escape_text(run.header.algorithm)}"', 1)


@macro(html=True)
def explain_run_card(site: Site, run_id: str) -> str:
    """The run card, then what the log lacks and what the importer (or trainer) noted it derived."""
    run = run_of(site, run_id, "explain_run_card")
    missing = lacks(run)
    notes = run.header.notes
    # the run card above shows the held-out evaluations, or says the log has none
    lacking = (f'<div class="admonition warning unipo-explain-missing"><p class="admonition-title">Not in this log'
               + (" (the held-out evaluations are above)" if list(run.evals) else "")
               + f"</p>{_items(missing)}</div>" if missing else
               '<p class="unipo-explain-missing">Nothing the views use is missing from this log.</p>')
    derived = (f'<div class="admonition info unipo-explain-derived"><p class="admonition-title">Derived or noted '
               f"when the log was written or imported (the run header's notes)</p><p>{escape_text(notes)}</p></div>"
               if notes else '<p class="unipo-explain-derived">The run header has no notes: nothing was derived on '
                             "import.</p>")
    # the diagnoses have a section of their own on this page, with links into its Step Inspector
    return run_card_html(site, run, run.id, with_diagnoses=False) + lacking + objectives_html(run) + derived


@macro(html=True, scripts=("explorer", "inspector"))
def explain_explorer(site: Site, run_id: str) -> str:
    """The run's Training Explorer and Step Inspector, under the fixed ids the diagnoses link to."""
    run = run_of(site, run_id, "explain_explorer")
    return explorer.explorer_html(run, None, element_id=EXPLORER_ID,
                                  inspector=lambda uid: inspector.step_inspector(run, page_url=site.page_url, uid=uid))


@macro(html=True)
def explain_diagnoses(site: Site, run_id: str) -> str:
    """One card per question practitioners ask of a run: the question, the verdict, the figure it rests on (or
    what the log lacks), the steps that show it (links that open them in the Step Inspector below) and the
    chapter that teaches it (a link where this site has the chapter)."""
    run = run_of(site, run_id, "explain_diagnoses")
    match = match_of(site, run, "explain_diagnoses")

    def taught(chapter) -> str:
        title = escape_text(chapter.title)
        return (f'<a href="../../{chapter.path.removesuffix(".md")}/">{title}</a>' if chapter.spec == match.spec.id
                else f"{title} (the course's <code>docs/{escape_text(chapter.path)}</code>)")
    return diagnoses_html(diagnose(run.reader), step_href=lambda s: f"#{INSPECTOR_VIEW}:step={s}", chapter_html=taught)


def objectives_html(run: Run) -> str:
    """Where an import found the token file's step objective and the trainer's own (steps.jsonl) apart: both
    named, how far apart and why (``trl.objectives`` of the header); nothing where they agree."""
    facts = ((run.header.model_extra or {}).get("trl") or {}).get("objectives") or {}
    if not facts.get("differ"):
        return ""
    step = facts.get("at_step")
    detail = run.reader.detail(step) if step is not None and step in run.token_steps() else None
    extra = (detail.model_extra or {}) if detail is not None else {}
    pair = (f" At step {step}: {plain_num(detail.objective)} in the token file, {plain_num(extra['trl_objective'])} "
            "in steps.jsonl." if detail is not None and "trl_objective" in extra else "")
    said = (f"On {fmt_num(facts['differ'])} of the {fmt_num(facts['steps'])} steps with token detail, the step "
            "objective of the token file (the one the Step Inspector adds up) is not the Training Explorer's (minus "
            f"TRL's loss): up to {fmt_num(facts['max_difference'])} apart." + pair)
    reason = facts.get("reason") or "two different things"
    # a reason is a predicate ('two different things: ...') or a sentence of its own ('TRL writes CISPO's ...')
    why = f"They are {reason}." if reason.startswith("two different things") else reason[0].upper() + reason[1:] + "."
    return ('<div class="admonition note unipo-explain-objectives"><p class="admonition-title">Two objectives per '
            f"step</p><p>{escape_text(said)}</p><p>{escape_text(why)}</p></div>")


assert set(TOKEN_ARRAYS) <= set(TokenArrays.model_fields)
