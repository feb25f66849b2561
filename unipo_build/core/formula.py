"""An algorithm's whole objective in LaTeX, composed from its components' registry formulas.

``objective_latex(spec)`` writes

    J(theta) = E[ aggregation ( sg[omega] per-token surrogate  - beta D ) ] (line 1; a long one
                                                                             breaks after the E)
               s.t. filter,  per-token reward with KL,  shaped reward      (line 2, when any)
    where      ratio = ...,  advantage = ...,  the definitions of the rest (one row each)

from the pieces ``Kind.latex(params)`` of the registry (``unipo_build.core.specs``): nothing here
knows an algorithm by name. Every slot's part is wrapped in
``\\htmlClass{unipo-slot unipo-slot-<slot>}{...}`` so a view can highlight or colour one slot
(the site's KaTeX trusts ``\\htmlClass``); ``slot_class`` adds classes of the caller's own.

A registry formula is read as clauses separated by ``,\\quad``: the first clause is the part
the objective uses (``-\\beta\\,\\mathbb{D}_{i,t}``, the aggregation operator), the others
define its symbols (``\\mathbb{D}_{i,t}=...``, ``\\beta=0.04``) and go to the "where" rows.
Whether the KL sits in the loss or in the reward is the KL kind's registered property
(``Kind.kl_place``). This is the project's one composer: the reference pages, the Algorithm
Explainer's cards and the comparison view all call :func:`objective_latex`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from unipo_build.core.registry import RATIO_TEX
from unipo_build.core.specs import REGISTRY, SLOTS, AlgorithmSpec, Kind, ResolvedAlgorithm

ADVANTAGE_TEX = r"\hat{A}_{i,t}"
CLAUSE_SEPARATOR = r",\quad"
#: Per-token objectives longer than this (characters of TeX) continue on a second row.
SPLIT_AFTER = 40
EXPECTATION = r"\mathbb{E}_{q\sim\mathcal{D},\ \{o_i\}_{i=1}^{G}\sim\pi_{\theta_{\text{old}}}(\cdot\mid q)}"


@dataclass(frozen=True)
class SlotPart:
    """One slot of an algorithm: its registered kind and concrete parameters."""

    slot: str
    kind: Kind
    params: dict[str, Any]

    def latex(self) -> str:
        return self.kind.latex(self.params)

    def symbol(self, key: str, default: str) -> str:
        """The symbol of one of the kind's terms (e.g. the ratio's), or ``default``."""
        for term in self.kind.terms:
            if term.key == key:
                return term.symbol
        return default


def ratio_symbol(ratio_kind: Kind) -> str:
    """The symbol of a ratio kind (its term ``ratio``): rho_{i,t} for a token's, s_i for GSPO's."""
    for term in ratio_kind.terms:
        if term.key == "ratio":
            return term.symbol
    return RATIO_TEX


def with_ratio(tex: str, ratio_kind: Kind) -> str:
    """A slot's registry formula written with the algorithm's own ratio. The clip kinds are
    written on the token ratio; GSPO clips its sequence ratio s_i (arXiv 2507.18071), and a
    card that wrote clip(rho_{i,t}, ...) with GSPO's bounds would describe another algorithm."""
    return tex.replace(RATIO_TEX, ratio_symbol(ratio_kind))


def slot_parts(algorithm: AlgorithmSpec | ResolvedAlgorithm) -> dict[str, SlotPart]:
    """Each slot's kind and parameters: a spec's (registry defaults filled in, run-resolved
    parameters still null) or a run's resolved configuration."""
    parts = {}
    for slot in SLOTS:
        if isinstance(algorithm, AlgorithmSpec):
            parts[slot] = SlotPart(slot, algorithm.component(slot), algorithm.params(slot))
        else:
            kind = REGISTRY[slot][algorithm.kind(slot)]
            known = {k: v for k, v in algorithm.components[slot].params.items() if k in kind.params.model_fields}
            params = {**kind.params.model_validate(known).model_dump(), **algorithm.components[slot].params}
            parts[slot] = SlotPart(slot, kind, params)
    return parts


def clauses(tex: str) -> list[str]:
    """A registry formula split at its top-level ``,\\quad`` separators."""
    out, depth, start, i = [], 0, 0, 0
    while i < len(tex):
        ch = tex[i]
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        elif depth == 0 and tex.startswith(CLAUSE_SEPARATOR, i):
            out.append(tex[start:i].strip())
            i += len(CLAUSE_SEPARATOR)
            start = i
            continue
        i += 1
    out.append(tex[start:].strip())
    return [c for c in out if c]


def split_definition(tex: str) -> tuple[str, str]:
    """``lhs = rhs`` at the first top-level '=': (lhs, rhs); ("", tex) without one."""
    depth = 0
    for i, ch in enumerate(tex):
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        elif ch == "=" and depth == 0:
            return tex[:i], tex[i + 1:]
    return "", tex


def slot_classes(slot: str, extra: str = "") -> str:
    return f"unipo-slot unipo-slot-{slot}" + (f" {extra}" if extra else "")


def wrap(slot: str, tex: str, extra: str = "") -> str:
    r"""``\htmlClass{unipo-slot unipo-slot-<slot> [extra]}{tex}``."""
    return r"\htmlClass{%s}{%s}" % (slot_classes(slot, extra), tex)


def objective_latex(algorithm: AlgorithmSpec | ResolvedAlgorithm, *, definitions: bool = True,
                    slot_class: Callable[[str], str] | None = None, split: bool | None = None) -> str:
    """The whole objective of a spec (or of a run's resolved configuration) as display LaTeX.

    ``definitions``: add the "where" rows defining the ratio, the advantage and the other
    symbols. ``slot_class(slot)``: extra classes for a slot's parts (e.g. a diff status).
    ``split``: continue the per-token objective on a second row (by default when it is long,
    as a clipped surrogate is), so the formula fits a page column.
    """
    extra = slot_class or (lambda slot: "")

    def w(slot: str, tex: str) -> str:
        return wrap(slot, tex, extra(slot))

    parts = slot_parts(algorithm)
    kl_place = parts["kl"].kind.kl_place
    ratio_tex = ratio_symbol(parts["ratio"].kind)
    advantage_symbol = parts["advantage"].symbol("advantage", ADVANTAGE_TEX)

    # Line 1: J = E[ aggregation ( surrogate - KL in the loss ) ]
    surrogate = split_definition(clauses(parts["clip"].latex())[0])[1]
    surrogate_plain = surrogate
    surrogate = surrogate.replace(RATIO_TEX, w("ratio", ratio_tex))
    surrogate = surrogate.replace(ADVANTAGE_TEX, w("advantage", advantage_symbol))
    inner = w("clip", surrogate)
    correction_clauses = clauses(parts["correction"].latex())
    if correction_clauses:  # the behaviour policy's weight on the surrogate (rollout correction)
        inner = w("correction", correction_clauses[0]) + r"\," + inner
    kl_clauses = clauses(parts["kl"].latex())
    if kl_place == "loss" and kl_clauses:
        inner += w("kl", kl_clauses[0])
    aggregation = clauses(parts["aggregation"].latex())
    if split is None:
        split = len(surrogate_plain) > SPLIT_AFTER
    # A long objective continues on a second row after the expectation, as in the GRPO paper
    # (eq. 3): a row never ends on an opening bracket, and the brackets open and close on one row.
    # (the expectation's subscript hangs low: a little room before the bracket's row)
    line1 = (r"\mathcal{J}(\theta)&=" + EXPECTATION + (r"\\[0.4em]&\qquad" if split else "") + r"\Bigg["
             + w("aggregation", aggregation[0]) + r"\Big(" + inner + r"\Big)\Bigg]")

    # Line 2: what acts on the samples and rewards before the loss
    line2 = []
    filter_clauses = clauses(parts["filter"].latex())
    if filter_clauses:
        line2.append(w("filter", filter_clauses[0]))
    if kl_place == "reward" and kl_clauses:
        line2.append(w("kl", kl_clauses[0]))
    shaping_clauses = clauses(parts["shaping"].latex())
    shaping_function = ""
    if shaping_clauses:
        lhs, _ = split_definition(shaping_clauses[0])
        shaping_function = lhs.replace("(y)", "(o_i)") if lhs else shaping_clauses[0]
        line2.append(w("shaping", r"r_i\leftarrow r_i+" + shaping_function))

    rows = [line1]
    if line2:
        rows.append(r"&\qquad " + r",\qquad ".join(line2))
    if definitions:
        where = [w("ratio", parts["ratio"].latex()), w("advantage", r",\quad ".join(clauses(parts["advantage"].latex())))]
        for slot, rest in (("kl", kl_clauses[1:]), ("aggregation", aggregation[1:]),
                           ("clip", clauses(with_ratio(parts["clip"].latex(), parts["ratio"].kind))[1:]),
                           ("correction", correction_clauses[1:]), ("filter", filter_clauses[1:])):
            if rest:
                where.append(w(slot, r",\quad ".join(rest)))
        if shaping_clauses:
            where.append(w("shaping", r",\quad ".join(shaping_clauses)))
        rows.append(r"\text{where}\quad&" + where[0])
        rows.extend("&" + row for row in where[1:])
    return r"\begin{aligned}" + r"\\".join(rows) + r"\end{aligned}"
