"""How the algorithms weigh tokens, and which component each puts in each slot.

    {{ weight_shares((10, 1000)) }}     each response's share of the weight, per aggregation
    {{ slot_matrix() }}                 every algorithm's component per slot

Both read the registry (``unipo_build.core.registry``) and the specs: a new aggregation kind shows
in the weight table with its registered weight, a new spec in the matrix.
"""

from __future__ import annotations

from typing import Sequence

from unipo_build.core import objective as O
from unipo_build.core.components import length_mask
from unipo_build.core.numbers import fmt_num, fmt_pct, fraction_text
from unipo_build.core.registry import REGISTRY, SLOTS
from unipo_build.core.specs import AlgorithmSpec, lineage
from unipo_build.site.facts.diff import SLOT_LABELS
from unipo_build.site.views.explainer.explainer import components_of, kind_label
from unipo_build.site.fmt import escape_text, math_inline, table
from unipo_build.site.context import AuthorError, Site, macro

#: Parameters the slot matrix leaves out (they do not tell the algorithms apart).
#: Parameters the slot matrix leaves out (eps only outside the clip slot: the advantage's epsilon).
MINOR_PARAMS = ("max_rounds", "value_clip", "cache_fraction", "cache_length", "eps")


def users_of_aggregation(specs: dict[str, AlgorithmSpec]) -> dict[str, list[str]]:
    users: dict[str, list[str]] = {}
    for spec in lineage(specs):
        users.setdefault(spec.components["aggregation"].kind, []).append(spec.name)
    return users


def weight_share_rows(lengths: Sequence[int], normalizer: int | None = None) -> list[dict]:
    """Per registered aggregation: each response's share of the weight, one token's weight per
    response, and the sum of all weights (the constant L: ``normalizer``, else the longest)."""
    lengths = [int(n) for n in lengths]
    if len(lengths) < 1 or min(lengths) < 1:
        raise AuthorError(f"weight_shares: lengths must be positive integers, got {lengths!r}")
    L = int(normalizer) if normalizer else max(lengths)
    out = []
    mask = length_mask(lengths)
    for kind in REGISTRY["aggregation"]:
        shares = O.response_weight_shares(kind, lengths, L)
        weights = O.aggregation_weights(kind, mask, L)
        per_token = [float(weights[i, 0]) for i in range(len(lengths))]
        total = float(weights.sum())
        out.append({"kind": kind, "shares": [float(s) for s in shares], "per_token": per_token, "total": total,
                    "normalizer": L})
    return out


@macro(name="weight_shares", html=True)
def weight_shares_html(site: Site, lengths: Sequence[int] = (10, 1000), normalizer: int | None = None) -> str:
    """Each response's share of the total weight under every aggregation (constant L = max length
    unless ``normalizer`` is given)."""
    rows = weight_share_rows(lengths, normalizer)
    users = users_of_aggregation(site.specs())
    lengths = [int(n) for n in lengths]
    labels = [f"{fmt_num(n)} tokens" for n in lengths]
    body = []
    for r in rows:
        kind = r["kind"]
        used = ", ".join(users.get(kind, [])) or "no algorithm here"
        weight = REGISTRY["aggregation"][kind].weight_tex.split("=", 1)[1].replace(r"\frac", r"\tfrac")
        name = (f"<code>{escape_text(kind).replace('_', '_<wbr>')}</code> {math_inline(weight)}"
                f"<br><small>{escape_text(used)}</small>")
        decimals = 1 if min(r["shares"]) >= 0.01 else 2
        shares = "<br>".join(f"{escape_text(label)}: {escape_text(fmt_pct(x, decimals))}"
                             for label, x in zip(labels, r["shares"]))
        per_token = "<br>".join(f"{escape_text(label)}: {escape_text(fraction_text(w))}"
                                for label, w in zip(labels, r["per_token"]))
        body.append([name, shares, per_token, escape_text(fraction_text(r["total"]))])
    caption = (f"Answers of {' and '.join(fmt_num(x) for x in lengths)} tokens in one batch (N = {len(lengths)}); "
               f"the constant normaliser uses L = {fmt_num(rows[0]['normalizer'])}.")
    return table(["Aggregation and weight of a token", "Share of the total weight", "Weight of one token",
                   "Sum of all weights"], body, caption=caption, numeric=(3,))


# ---------------------------------------------------------------------------
# slot_matrix and eval_compare
# ---------------------------------------------------------------------------

def _kind_text(spec: AlgorithmSpec, slot: str) -> str:
    """The slot's kind in words, with the parameters that set it apart (the explainer's label)."""
    hide = MINOR_PARAMS if slot != "clip" else tuple(p for p in MINOR_PARAMS if p != "eps")
    return kind_label(components_of(spec)[slot], hide)


@macro(name="slot_matrix", html=True)
def slot_matrix_html(site: Site) -> str:
    """Every algorithm's component in each slot, as a table."""
    specs = lineage(site.specs())
    head = ["Slot"] + [escape_text(s.name) for s in specs]
    rows = []
    for slot in SLOTS:
        cells = [f"<strong>{escape_text(SLOT_LABELS.get(slot, slot))}</strong>"]
        for s in specs:
            text = _kind_text(s, slot)
            cell = escape_text(text)
            cells.append(f'<span class="unipo-empty-slot">{cell}</span>' if s.component(slot).is_none else cell)
        rows.append(cells)
    # Seven algorithm columns: on a narrow page the table scrolls, its first column staying in view.
    return ('<div class="unipo-matrix">'
            + table(head, rows, caption="Each algorithm's component in each slot (in italics: the slot is empty)")
            + "</div>")
