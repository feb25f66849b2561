"""The Algorithm Explainer: an objective taken apart into the spec's components.

``objective_card(spec, run=...)`` returns the HTML of one explainer:

- the objective as one formula, each slot's part wrapped in ``\\htmlClass{unipo-slot
  unipo-slot-<slot>}`` so the reader can click it (overrides/assets/explainer.js);
- the decomposition of the paper's Algorithm Explainer: the aggregation; the per-token objective
  as optimisation target (the importance ratio) times strength (the advantage); the constraints
  (clip, KL, sampling filter, reward shaping);
- explanation cards (``<details>``, readable without JavaScript): the token-level objective card
  (ratio, advantage, clip, KL), the aggregation card with the implicit per-token weight of every
  aggregation, and a card for each remaining constraint. Every term of a formula has a tooltip
  (``title`` and an element with ``role="tooltip"``) from the registry, or the spec's override.

When the reader selects a token in a Step Inspector of a run of the same algorithm (the
``unipo:token`` event), explainer.js fills each card's ``.unipo-live`` block with that token's
numbers, recomputed in the browser from the logged inputs with a port of unipo_build.components
(tests/test_views_explainer.py holds it equal to unipo_build.recompute.breakdown).

The formula composition here is also what the comparison view (compare.py) colours slot by slot.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Any, Callable

from ..render import escape_text, json_data
from ..specs import REGISTRY, SLOTS, AlgorithmSpec, Kind, ResolvedAlgorithm, Term
from .diff import SLOT_LABELS

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

    @property
    def name(self) -> str:
        return self.kind.name

    def latex(self) -> str:
        return self.kind.latex(self.params)

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
    return out


# ---------------------------------------------------------------------------
# The composed objective in LaTeX
# ---------------------------------------------------------------------------

RATIO_TEX = r"\rho_{i,t}"
ADVANTAGE_TEX = r"\hat{A}_{i,t}"
#: Placeholder for a slot's diff class in compare data: ``UNIPODIFF-<slot>`` becomes
#: ``unipo-diff-<status>`` (compare.py in Python, explainer.js in the browser).
DIFF_PLACEHOLDER = "UNIPODIFF-{slot}"


def _rhs(tex: str) -> str:
    """The right-hand side of a definition ``lhs = rhs`` (the whole string if it has no '=')."""
    depth = 0
    for i, ch in enumerate(tex):
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        elif ch == "=" and depth == 0:
            return tex[i + 1:]
    return tex


def _lhs(tex: str) -> str:
    rhs = _rhs(tex)
    return tex[: len(tex) - len(rhs) - 1] if rhs != tex else tex


def _first_clause(tex: str) -> str:
    """A registry formula up to its first ``,\\quad`` (the use, without the definitions after it)."""
    return tex.split(r",\quad")[0]


def slot_class(slot: str, extra: str = "") -> str:
    return f"unipo-slot unipo-slot-{slot}" + (f" {extra}" if extra else "")


def wrap(slot: str, tex: str, extra: str = "") -> str:
    return r"\htmlClass{%s}{%s}" % (slot_class(slot, extra), tex)


def objective_tex(components: dict[str, Component], diff_class: Callable[[str], str] | None = None) -> str:
    """The whole objective, one slot per ``\\htmlClass`` part.

    Line 1: J = E[ aggregation ( per-token objective  - beta KL ) ]. The per-token objective is
    the clip component's formula with the ratio and the advantage wrapped as their own slots.
    Line 2 (when any): the sampling filter, a KL in the reward, reward shaping.
    ``diff_class(slot)`` adds a class to each slot's part (the comparison's status).
    """
    extra = diff_class or (lambda slot: "")

    def w(slot: str, tex: str) -> str:
        return wrap(slot, tex, extra(slot))

    ratio_terms = [t for t in components["ratio"].kind.terms if t.key == "ratio"]
    ratio_symbol = ratio_terms[0].symbol if ratio_terms else RATIO_TEX
    per_token = _rhs(components["clip"].latex())
    per_token = per_token.replace(RATIO_TEX, w("ratio", ratio_symbol))
    per_token = per_token.replace(ADVANTAGE_TEX, w("advantage", ADVANTAGE_TEX))
    kl = components["kl"]
    kl_in_loss = kl.name == "in_loss"
    inner = w("clip", per_token)
    if kl_in_loss:
        inner += w("kl", _first_clause(kl.latex()))
    line1 = (r"\mathcal{J}(\theta)=\mathbb{E}_{q,\,\{o_i\}_{i=1}^{G}\sim\pi_{\theta_{\text{old}}}}\Big["
             + w("aggregation", _first_clause(components["aggregation"].latex())) + r"\Big(" + inner + r"\Big)\Big]")
    line2 = []
    if components["filter"].name != "none":
        line2.append(w("filter", components["filter"].latex()))
    if kl.name not in ("none", "in_loss"):
        line2.append(w("kl", _first_clause(kl.latex())))
    if components["shaping"].name != "none":
        line2.append(w("shaping", r"r_i\leftarrow r_i+" + _lhs(components["shaping"].latex()).replace("(y)", "(o_i)")))
    if not line2:
        return line1
    return r"\begin{gathered}" + line1 + r"\\" + r",\qquad ".join(line2) + r"\end{gathered}"


# ---------------------------------------------------------------------------
# Small HTML helpers
# ---------------------------------------------------------------------------

def math_inline(tex: str) -> str:
    """An inline formula for unipo.js (KaTeX); the TeX is HTML-escaped as text."""
    return f'<span class="arithmatex">{escape_text(chr(92) + "(" + tex + chr(92) + ")")}</span>'


def math_display(tex: str, css_class: str = "") -> str:
    cls = "arithmatex" + (f" {css_class}" if css_class else "")
    return f'<div class="{escape_text(cls)}">{escape_text(chr(92) + "[" + tex + chr(92) + "]")}</div>'


def _param_value(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:g}"
    if value is None:
        return "from the run"
    return str(value)


PARAM_SYMBOLS = {"eps": "\u03b5", "eps_low": "\u03b5_low", "eps_high": "\u03b5_high", "beta": "\u03b2",
                 "gamma": "\u03b3", "lam": "\u03bb", "std_ddof": "std ddof", "normalizer": "L",
                 "max_length": "L_max", "cache_length": "L_cache"}


def params_text(params: dict[str, Any]) -> str:
    return ", ".join(f"{PARAM_SYMBOLS.get(k, k)} {_param_value(v)}" for k, v in params.items())


def kind_label(component: Component) -> str:
    """e.g. 'symmetric (ε 0.2)', 'none'."""
    name = component.name.replace("_", " ")
    shown = {k: v for k, v in component.params.items() if k not in ("max_rounds", "value_clip", "cache_fraction")}
    return f"{name} ({params_text(shown)})" if shown else name


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


def _slot_section(uid: str, component: Component, live: bool = True) -> str:
    slot = component.slot
    parts = [f'<div class="unipo-slot-section" data-slot="{slot}" id="{escape_text(uid)}-s-{slot}">',
             f'<p class="unipo-slot-head"><span class="unipo-slot-name">{escape_text(SLOT_LABELS[slot])}</span> '
             f'<span class="unipo-kind">{escape_text(kind_label(component))}</span></p>']
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


#: The implicit per-token weight of each aggregation (the aggregation card's comparison).
AGGREGATION_WEIGHTS = {
    "seq_mean_token_mean": (r"w_{i,t}=\frac{1}{G\,|o_i|}",
                            "A token of a short response weighs more than a token of a long one; every response "
                            "carries the same total weight."),
    "token_mean": (r"w_{i,t}=\frac{1}{\sum_{j}|o_j|}",
                   "Every token weighs the same; a long response carries more of the total than a short one."),
    "constant_normalizer": (r"w_{i,t}=\frac{1}{G\,L}",
                            "A constant: no length enters the weight, for the token or for the batch."),
    "seq_mean_token_sum": (r"w_{i,t}=\frac{1}{G}",
                           "Token objectives are summed per response: a long response carries more in proportion "
                           "to its length."),
}

DISPLAYSTYLE = "\\displaystyle "

CARD_OF_SLOT = {"ratio": "token", "advantage": "token", "clip": "token", "kl": "token",
                "aggregation": "aggregation", "filter": "filter", "shaping": "shaping"}
CARD_TITLES = {"token": "Token-level objective card", "aggregation": "Aggregation card",
               "filter": "Sampling filter card", "shaping": "Reward shaping card"}


def _aggregation_table(current: str) -> str:
    rows = []
    for kind, (tex, meaning) in AGGREGATION_WEIGHTS.items():
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


def _part_button(uid: str, component: Component, role_label: str) -> str:
    card = CARD_OF_SLOT[component.slot]
    return (f'<button type="button" class="unipo-part unipo-part-{component.slot}" data-slot="{component.slot}" '
            f'aria-controls="{escape_text(uid)}-c-{card}" title="{escape_text(component.kind.summary)}">'
            f'<span class="unipo-part-role">{escape_text(role_label)}</span>'
            f'<span class="unipo-part-kind">{escape_text(kind_label(component))}</span></button>')


def _uid(*parts: Any) -> str:
    return "unipo-expl-" + hashlib.sha256(repr(parts).encode("utf-8")).hexdigest()[:8]


SAFE_ID = re.compile(r"^[A-Za-z][A-Za-z0-9_-]*$")


def objective_card(spec: AlgorithmSpec, *, config: ResolvedAlgorithm | None = None, run_id: str | None = None,
                   uid: str | None = None, note: str | None = None) -> str:
    """HTML of the Algorithm Explainer of ``spec`` (with a run's resolved parameters when given)."""
    uid = uid or _uid(spec.id, run_id)
    if not SAFE_ID.match(uid):
        raise ValueError(f"objective_card: bad element id {uid!r}")
    comps = components_of(spec, config)
    name = escape_text(spec.name)
    hint = (f"Select a token in a Step Inspector of a {spec.name} run on this page (click it, or Tab to it and "
            "press Enter) to see its numbers here.")
    where = (f'<div class="unipo-live unipo-live--where" data-live="where" aria-live="polite">'
             f'<p class="unipo-live-hint">{escape_text(hint)}</p></div>')
    token_body = (
        where + '<p class="unipo-card-intro">The per-token objective: the <strong>optimisation target</strong>, the '
        'importance ratio, times the <strong>strength</strong>, the advantage; the clip and the KL term are the '
        'constraints that act on every token.</p>'
        + "".join(_slot_section(uid, comps[s]) for s in ("ratio", "advantage", "clip", "kl"))
        + '<div class="unipo-live unipo-live--total" data-live="objective"></div>')
    agg = comps["aggregation"]
    agg_body = (where + _slot_section(uid, agg)
                + '<p class="unipo-card-intro">Written as a weight on each token, the step objective is '
                + math_inline(r"\mathcal{J}=\sum_{i,t} w_{i,t}\,\ell_{i,t}")
                + '. The aggregations differ only in that weight (G is the number of responses averaged over; in this '
                'course\'s trainer, every response of the update\'s minibatch):</p>'
                + _aggregation_table(agg.name))
    cards = [_card(uid, "token", token_body), _card(uid, "aggregation", agg_body),
             _card(uid, "filter", where + _slot_section(uid, comps["filter"])),
             _card(uid, "shaping", where + _slot_section(uid, comps["shaping"]))]
    parts = (
        '<div class="unipo-parts">'
        f'<div class="unipo-parts-group"><span class="unipo-parts-title">Aggregation</span>'
        f'{_part_button(uid, comps["aggregation"], "Aggregation")}</div>'
        f'<div class="unipo-parts-group"><span class="unipo-parts-title">Per-token objective</span>'
        f'{_part_button(uid, comps["ratio"], "Optimisation target: importance ratio")}'
        f'<span class="unipo-times" aria-hidden="true">\u00d7</span>'
        f'{_part_button(uid, comps["advantage"], "Strength: advantage")}</div>'
        f'<div class="unipo-parts-group"><span class="unipo-parts-title">Constraints</span>'
        + "".join(_part_button(uid, comps[s], SLOT_LABELS[s]) for s in ("clip", "kl", "filter", "shaping"))
        + "</div></div>")
    data = {"algorithm": spec.id, "name": spec.name, "run": run_id,
            "config": config.model_dump(mode="json") if config is not None else {
                "id": spec.id, "name": spec.name,
                "components": {s: {"kind": c.name, "params": c.params} for s, c in comps.items()}},
            "card_of_slot": CARD_OF_SLOT}
    paper = spec.paper
    ref = escape_text(f"{paper.authors} ({paper.year})")
    if paper.arxiv:
        ref = f'<a href="https://arxiv.org/abs/{escape_text(paper.arxiv)}">{ref}, arXiv:{escape_text(paper.arxiv)}</a>'
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
            f'{math_display(objective_tex(comps))}</div>'
            f'{parts}<div class="unipo-cards">{"".join(cards)}</div></div>')
