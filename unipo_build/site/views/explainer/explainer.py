"""The Algorithm Explainer: an objective taken apart into the spec's components.

``objective_card(spec, run=...)`` returns the HTML of one explainer:

- the objective as one formula, each slot's part wrapped in ``\\htmlClass{unipo-slot
  unipo-slot-<slot>}`` so the reader can click it (unipo_build/site/views/explainer/explainer.js);
- the decomposition of the paper's Algorithm Explainer: the aggregation; the per-token objective
  as optimisation target (the importance ratio) times strength (the advantage); the constraints
  (clip, KL, sampling filter, reward shaping);
- explanation cards (``<details>``, readable without JavaScript): the token-level objective card
  (ratio, advantage, clip, KL), the aggregation card with the implicit per-token weight of every
  aggregation, and a card for each remaining constraint. Every term of a formula has a tooltip
  (``title`` and an element with ``role="tooltip"``) from the registry, or the spec's override.

When the reader selects a token in a Step Inspector of a run of the same algorithm (the
``token`` event of ``common.EVENTS``), explainer.js fills each card's ``.unipo-live`` block with that token's
numbers, recomputed in the browser from the logged inputs with a port of unipo_build.core.components
(tests/test_views_explainer.py holds it equal to unipo_build.core.recompute.breakdown). What a block
says about the slot's kind (its rows, the sentence on the token's numbers) is the kind's explainer
data in the registry (``registry.explain``), sent with the configuration (``explainer_config``).

The formula is composed by the project's one composer, ``formula.objective_latex``; the
comparison view (compare.py) colours the same formula slot by slot. Each slot names the function
that computes it (``registry.Kind.fn``), linked into the repository (``source_links``).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, replace
from typing import Any, Callable

from unipo_build.core.formula import objective_latex, with_ratio
from unipo_build.core.numbers import fmt_num
from unipo_build.core.objective import browser_config
from unipo_build.core.registry import explainer_data
from unipo_build.site.render import escape_text, json_data
from unipo_build.core.specs import (
    REGISTRY,
    SLOTS,
    AlgorithmSpec,
    Kind,
    ResolvedAlgorithm,
    ResolvedComponent,
    Term,
)
from unipo_build.site.facts.diff import SLOT_LABELS
from unipo_build.site.fmt import math_display, math_inline
from unipo_build.site.source_links import Repo, source_html

# ---------------------------------------------------------------------------
# Components of an algorithm, from a spec or from a run's resolved configuration
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Component:
    slot: str
    kind: Kind
    params: dict[str, Any]
    explanation: str | None  # the spec's own words (None for a run config without its spec)
    tooltips: dict[str, str]  # the spec's overrides of the registry's term tooltips
    ratio_kind: Kind | None = None  # the algorithm's ratio: the clip acts on it (formula.with_ratio)

    @property
    def name(self) -> str:
        return self.kind.name

    def latex(self) -> str:
        tex = self.kind.latex(self.params)
        return with_ratio(tex, self.ratio_kind) if self.ratio_kind is not None and self.slot != "ratio" else tex

    def terms(self) -> list[tuple[Term, str]]:
        """(term, tooltip) with the spec's overrides applied."""
        return [(t, self.tooltips.get(t.key, t.tooltip)) for t in self.kind.terms]


def components_of(spec: AlgorithmSpec | None, config: ResolvedAlgorithm | None = None) -> dict[str, Component]:
    """Each slot's component: the run's resolved parameters when ``config`` is given, the spec's
    (with the registry's defaults) otherwise; explanations and tooltips from the spec."""
    out = {}
    for slot in SLOTS:
        if config is not None:
            kind = REGISTRY[slot][config.kind(slot)]
            params = dict(config.components[slot].params)
            defaults = kind.params.model_validate({k: v for k, v in params.items() if k in kind.params.model_fields})
            params = {**defaults.model_dump(), **params}
        else:
            assert spec is not None
            kind = spec.component(slot)
            params = spec.params(slot)
        same_kind = spec is not None and spec.components[slot].kind == kind.name
        explanation = spec.components[slot].explanation if same_kind else None
        tooltips = dict(spec.components[slot].tooltips) if same_kind else {}
        out[slot] = Component(slot, kind, params, explanation, tooltips)
    return {slot: replace(c, ratio_kind=out["ratio"].kind) for slot, c in out.items()}


def explainer_config(cfg: ResolvedAlgorithm) -> dict:
    """The configuration the browser explains a token with: ``objective.browser_config`` (each
    slot's kind, parameters, function and properties, which unipo-math.js dispatches on) with each
    slot's explainer data (``registry.explainer_data``: the rows and sentences explainer.js shows
    for that kind), so the browser never asks for a kind by name."""
    out = browser_config(cfg)
    for slot, comp in out["components"].items():
        comp["explain"] = explainer_data(cfg.component(slot))
    return out


#: Placeholder for a slot's diff class in compare data: ``UNIPODIFF-<slot>`` becomes
#: ``unipo-diff-<status>`` (compare.py in Python, compare.js in the browser).
DIFF_PLACEHOLDER = "UNIPODIFF-{slot}"


def objective_formula(algorithm: AlgorithmSpec | ResolvedAlgorithm, diff_class: Callable[[str], str] | None = None) -> str:
    """The whole objective as the cards and the comparison show it: the one composer,
    ``formula.objective_latex``, without the "where" rows (each card defines its own slot)."""
    return objective_latex(algorithm, definitions=False, slot_class=diff_class)


# ---------------------------------------------------------------------------
# Small HTML helpers
# ---------------------------------------------------------------------------

def _param_value(value: Any) -> str:
    if isinstance(value, float):
        return fmt_num(value, 4)
    if value is None:
        return "from the run"
    return str(value)


#: Parameters as a reader reads them (a symbol of the formula, or words), never the spec's keys.
PARAM_WORDS = {"eps": "\u03b5", "eps_low": "lower \u03b5", "eps_high": "upper \u03b5", "beta": "\u03b2",
               "gamma": "\u03b3", "lam": "\u03bb", "normalizer": "normaliser L", "max_length": "length budget",
               "cache_length": "penalty ramp", "penalty": "penalty", "max_rounds": "sampling rounds",
               "estimator": "estimator", "std_ddof": "standard deviation", "baseline": "baseline", "kind": "component"}


def param_words(name: str) -> str:
    """A parameter's name for a reader ('eps_low' -> 'lower ε')."""
    return PARAM_WORDS.get(name, name.replace("_", " "))


def param_phrase(name: str, value: Any) -> str:
    """One parameter and its value in words: 'ε 0.2', 'sample std (n − 1)', 'k3 estimator'."""
    if name == "std_ddof":
        return {0: "population std (n)", 1: "sample std (n \u2212 1)"}.get(value, f"std with n \u2212 {value}")
    if name == "estimator":
        return f"{value} estimator"
    if name in ("max_length", "cache_length", "normalizer") and isinstance(value, int):
        return f"{param_words(name)} {value} tokens"
    if isinstance(value, str):
        return f"{param_words(name)} {value.replace('_', ' ')}"
    return f"{param_words(name)} {_param_value(value)}"


def params_text(params: dict[str, Any]) -> str:
    return ", ".join(param_phrase(k, v) for k, v in params.items())


#: Parameters a kind's label leaves out (details of the kind, not what sets it apart).
MINOR_PARAMS = ("max_rounds", "value_clip", "cache_fraction")


def kind_label(component: Component, hide: tuple[str, ...] = MINOR_PARAMS, inline: bool = False) -> str:
    """The registry's name for the kind, with its parameters in words: 'symmetric clip: ε 0.2';
    ``inline``, for a sentence that already uses a colon: 'symmetric clip (ε 0.2)'."""
    name = component.kind.label or component.name.replace("_", " ")
    shown = {k: v for k, v in component.params.items() if k not in hide and v is not None}
    if not shown:
        return name
    return f"{name} ({params_text(shown)})" if inline else f"{name}: {params_text(shown)}"


def terms_html(uid: str, component: Component) -> str:
    """Each term of a component's formula with its tooltip: a focusable button (``title`` and
    ``aria-describedby``) and a ``role="tooltip"`` element shown on hover and focus."""
    items = []
    for n, (term, tip) in enumerate(component.terms()):
        tid = f"{uid}-{component.slot}-t{n}"
        items.append(
            f'<li class="unipo-term-item"><button type="button" class="unipo-term" title="{escape_text(tip)}" '
            f'aria-describedby="{escape_text(tid)}" data-term="{escape_text(term.key)}">{math_inline(term.symbol)}</button>'
            f'<span role="tooltip" class="unipo-tooltip" id="{escape_text(tid)}">{escape_text(tip)}</span></li>')
    if not items:
        return ""
    return f'<ul class="unipo-terms" aria-label="Terms of the formula">{"".join(items)}</ul>'


def _slot_section(uid: str, component: Component, live: bool = True, repo: Repo | None = None) -> str:
    slot = component.slot
    source = source_html(component.kind.fn, repo)
    parts = [f'<div class="unipo-slot-section" data-slot="{slot}" id="{escape_text(uid)}-s-{slot}">',
             f'<p class="unipo-slot-head"><span class="unipo-slot-name">{escape_text(SLOT_LABELS[slot])}</span> '
             f'<span class="unipo-kind">{escape_text(kind_label(component))}</span>'
             + (f' <span class="unipo-slot-source">code: {source}</span>' if source else "") + "</p>"]
    tex = component.latex()
    if tex:
        parts.append(math_display(tex))
    parts.append(f'<p class="unipo-slot-summary">{escape_text(component.kind.summary)}</p>')
    if component.explanation:
        parts.append(f'<p class="unipo-slot-explanation">{escape_text(component.explanation)}</p>')
    parts.append(terms_html(uid, component))
    if live:
        parts.append(f'<div class="unipo-live" data-live="{slot}"></div>')
    parts.append("</div>")
    return "".join(parts)


DISPLAYSTYLE = "\\displaystyle "

CARD_OF_SLOT = {"ratio": "token", "advantage": "token", "clip": "token", "kl": "token", "correction": "token",
                "aggregation": "aggregation", "filter": "filter", "shaping": "shaping"}
CARD_TITLES = {"token": "Token-level objective card", "aggregation": "Aggregation card",
               "filter": "Sampling filter card", "shaping": "Reward shaping card"}


def _aggregation_table(current: str) -> str:
    rows = []
    for kind, entry in REGISTRY["aggregation"].items():
        tex, meaning = entry.weight_tex, entry.weight_meaning
        mark = ' class="unipo-current"' if kind == current else ""
        here = ' <span class="unipo-mark unipo-mark--current">this algorithm</span>' if kind == current else ""
        name = escape_text(kind).replace("_", "_<wbr>")  # break long names only at underscores
        rows.append(f"<tr{mark}><td><code>{name}</code>{here}</td><td>{math_inline(DISPLAYSTYLE + tex)}</td>"
                    f"<td>{escape_text(meaning)}</td></tr>")
    return ('<div class="unipo-table-wrap"><table class="unipo-agg-table"><thead><tr><th>Aggregation</th>'
            '<th>Weight of token t of response i</th><th>What it means</th></tr></thead><tbody>'
            + "".join(rows) + "</tbody></table></div>")


def _card(uid: str, card: str, body: str, open_: bool = False) -> str:
    return (f'<details class="unipo-card" data-card="{card}" id="{escape_text(uid)}-c-{card}"{" open" if open_ else ""}>'
            f'<summary>{escape_text(CARD_TITLES[card])}</summary><div class="unipo-card-body">{body}</div></details>')


def _part_button(uid: str, component: Component, role_label: str | None) -> str:
    """A part's button; ``role_label`` None when the group's title already names the part."""
    card = CARD_OF_SLOT[component.slot]
    role = f'<span class="unipo-part-role">{escape_text(role_label)}</span>' if role_label else ""
    return (f'<button type="button" class="unipo-part unipo-part-{component.slot}" data-slot="{component.slot}" '
            f'aria-controls="{escape_text(uid)}-c-{card}" title="{escape_text(component.kind.summary)}">'
            f'{role}'
            f'<span class="unipo-part-kind">{escape_text(kind_label(component))}</span></button>')


def _uid(*parts: Any) -> str:
    return "unipo-expl-" + hashlib.sha256(repr(parts).encode("utf-8")).hexdigest()[:8]


SAFE_ID = re.compile(r"^[A-Za-z][A-Za-z0-9_-]*$")


def _run_reward(comps: dict[str, Component], reward: str) -> dict[str, Component]:
    """Each component whose formula has the reward rᵢ, with the run's own reward in its tooltip."""
    tip = f"The reward of response i, as this run's log describes it: {reward.rstrip('.')}."
    return {slot: replace(c, tooltips={**c.tooltips, "reward": tip}) if any(t.key == "reward" for t in c.kind.terms)
            else c for slot, c in comps.items()}


def objective_card(spec: AlgorithmSpec, *, config: ResolvedAlgorithm | None = None, run_id: str | None = None,
                   uid: str | None = None, note: str | None = None, repo: Repo | None = None,
                   reward: str | None = None, own: str | None = None) -> str:
    """HTML of the Algorithm Explainer of ``spec`` (with a run's resolved parameters when given). ``reward``: the
    run's reward as its header describes it, for the reward's tooltip (the registry's says a 0/1 correctness).
    ``own``: the name of a run whose components are not the spec's (an imported run): the Explainer is headed by
    the run's own components, the spec named beside them as the nearest, and a slot the run sets otherwise than
    the spec shows no spec words."""
    uid = uid or _uid(spec.id, run_id)
    if not SAFE_ID.match(uid):
        raise ValueError(f"objective_card: bad element id {uid!r}")
    comps = components_of(spec, config)
    if own is not None:  # the spec's words describe its own parameters: none where the run's differ
        spec_comps = components_of(spec)
        comps = {slot: c if c.kind.name == spec_comps[slot].kind.name and c.params == spec_comps[slot].params
                 else replace(c, explanation=None, tooltips={}) for slot, c in comps.items()}
    if reward:
        comps = _run_reward(comps, reward)
    name = escape_text(spec.name)
    hint = (f"Select a token in this page's Step Inspector of run {run_id} (click it, or Tab to it and press Enter) to "
            "see its numbers here." if own is not None else
            f"Select a token in a Step Inspector of a {spec.name} run on this page (click it, or Tab to it and "
            "press Enter) to see its numbers here.")
    where = (f'<div class="unipo-live unipo-live--where" data-live="where" aria-live="polite">'
             f'<p class="unipo-live-hint">{escape_text(hint)}</p></div>')
    token_body = (
        where + '<p class="unipo-card-intro">The per-token objective: the <strong>optimisation target</strong>, the '
        'importance ratio, times the <strong>strength</strong>, the advantage; the clip and the KL term are the '
        'constraints that act on every token.</p>'
        + "".join(_slot_section(uid, comps[s], repo=repo) for s in ("ratio", "advantage", "clip", "kl", "correction")
                  if s != "correction" or not comps[s].kind.is_none)  # a rollout correction, where there is one
        + '<div class="unipo-live unipo-live--total" data-live="objective"></div>')
    agg = comps["aggregation"]
    agg_body = (where + _slot_section(uid, agg, repo=repo)
                + '<p class="unipo-card-intro">Written as a weight on each token, the step objective is '
                + math_inline(r"\mathcal{J}=\sum_{i,t} w_{i,t}\,\ell_{i,t}")
                + '. The aggregations differ only in that weight (N is the number of responses averaged over; in this '
                'course\'s trainer, every response of the update\'s minibatch):</p>'
                + _aggregation_table(agg.name))
    cards = [_card(uid, "token", token_body), _card(uid, "aggregation", agg_body),
             _card(uid, "filter", where + _slot_section(uid, comps["filter"], repo=repo)),
             _card(uid, "shaping", where + _slot_section(uid, comps["shaping"], repo=repo))]
    parts = (
        '<div class="unipo-parts">'
        f'<div class="unipo-parts-group"><span class="unipo-parts-title">Aggregation</span>'
        f'{_part_button(uid, comps["aggregation"], None)}</div>'
        f'<div class="unipo-parts-group"><span class="unipo-parts-title">Per-token objective</span>'
        f'{_part_button(uid, comps["ratio"], "Optimisation target: importance ratio")}'
        f'<span class="unipo-times" aria-hidden="true">\u00d7</span>'
        f'{_part_button(uid, comps["advantage"], "Strength: advantage")}</div>'
        f'<div class="unipo-parts-group"><span class="unipo-parts-title">Constraints</span>'
        + "".join(_part_button(uid, comps[s], SLOT_LABELS[s]) for s in ("clip", "kl", "filter", "shaping", "correction")
                  if s != "correction" or not comps[s].kind.is_none)
        + "</div></div>")
    shown = config if config is not None else ResolvedAlgorithm(id=spec.id, name=spec.name, components={
        s: ResolvedComponent(kind=c.name, params=c.params) for s, c in comps.items()})
    data = {"algorithm": spec.id, "name": spec.name, "run": run_id, "config": explainer_config(shown),
            "card_of_slot": CARD_OF_SLOT}
    paper = spec.paper
    if paper is None:
        ref = "no paper of its own"
    else:
        ref = escape_text(f"{paper.authors} ({paper.year})")
        if paper.arxiv:
            ref = f'<a href="https://arxiv.org/abs/{escape_text(paper.arxiv)}">{ref}, arXiv:{escape_text(paper.arxiv)}</a>'
    if own is not None:
        parts_text = ", ".join(kind_label(comps[s], inline=True) for s in SLOTS if not comps[s].kind.is_none)
        header = (f'<p class="unipo-explainer-title"><span class="unipo-label">Algorithm Explainer</span> '
                  f'<strong>{escape_text(own)}</strong> <span class="unipo-fact">the run\'s own components</span> '
                  f'<span class="unipo-explainer-ref">nearest spec: {name} ({escape_text(spec.full_name)}, {ref})'
                  f'</span></p>'
                  f'<p class="unipo-explainer-summary">The formula and the cards below are what this run trained: '
                  f'{escape_text(parts_text)}. The nearest spec, {name}: {escape_text(spec.summary)}</p>')
    else:
        header = (f'<p class="unipo-explainer-title"><span class="unipo-label">Algorithm Explainer</span> '
                  f'<strong>{name}</strong> <span class="unipo-fact">{escape_text(spec.full_name)}</span> '
                  f'<span class="unipo-explainer-ref">{ref}</span></p>'
                  f'<p class="unipo-explainer-summary">{escape_text(spec.summary)}</p>')
    note_html = f'<p class="unipo-explainer-note">{escape_text(note)}</p>' if note else ""
    return (f'<div class="unipo-explainer" id="{uid}" data-algorithm="{escape_text(spec.id)}"'
            f'{f" data-run={chr(34)}{escape_text(run_id)}{chr(34)}" if run_id else ""}>'
            f'{json_data(data, data_id=uid + "-data")}'
            f'{header}{note_html}'
            f'<div class="unipo-explainer-formula" title="Click a part of the formula to open its card">'
            f'{math_display(objective_formula(config if config is not None else spec))}</div>'
            f'{parts}<div class="unipo-cards">{"".join(cards)}</div></div>')
