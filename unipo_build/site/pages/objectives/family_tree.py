"""The family tree of the algorithm specs: who builds on whom, when, and what changed.

    {{ family_tree() }}     the lineage as a figure (x = year) and the same as a table

Read from the specs alone (their ``predecessor`` links, years, papers and slot diffs), so a
contributed algorithm joins the tree without an edit here.
"""

from __future__ import annotations

import re
import textwrap

from unipo_build.site.render import chart_spec, vega_embed
from unipo_build.core.specs import AlgorithmSpec, lineage
from unipo_build.site.facts.diff import SLOT_LABELS, diff_algorithms
from unipo_build.site.fmt import escape_text, table
from unipo_build.site.palette import algorithm_colour, role
from unipo_build.site.context import Site, macro


def change_phrase(spec: AlgorithmSpec, parent: AlgorithmSpec | None = None) -> str:
    """The one change, in a few words: the spec summary's head (before its colon) when it says
    something (three words or more), else what the slot diff against the predecessor adds,
    changes or drops, else the summary's first sentence."""
    # a YAML summary's line breaks and indents become one space; other characters Python counts as
    # whitespace (vertical tab, form feed, separators) are the author's text and stay
    summary = re.sub(r"[ \t\r\n]+", " ", spec.summary).strip()
    head = summary.split(":", 1)[0].strip()
    if ":" in summary and len(head.split()) >= 3 and len(head) <= 80:
        return head
    if parent is not None:
        verbs = {"added": "+", "removed": "−", "modified": "~"}
        parts = [f"{verbs[d.status]} {SLOT_LABELS.get(d.slot, d.slot).lower()}"
                 for d in diff_algorithms(parent, spec) if d.status != "unchanged"]
        if parts:
            return f"{parent.name} " + ", ".join(parts)
    sentence = summary.split(". ", 1)[0].rstrip(".")
    return sentence if len(sentence) <= 90 else sentence[:87].rsplit(" ", 1)[0] + "…"


def tree_rows(specs: dict[str, AlgorithmSpec]) -> list[dict]:
    """One row per spec, in lineage order, with its place in the figure.

    ``column``: one per year, and a further one for each generation inside a year (a hybrid of
    two algorithms of the same year sits right of its parent). ``lane``: leaves get lanes in
    lineage order, a parent sits at the mean lane of its children.
    """
    ordered = lineage(specs)
    parent_of = {s.id: (s.predecessor if s.predecessor in specs else None) for s in ordered}
    children: dict[str | None, list[str]] = {}
    for spec in ordered:
        children.setdefault(parent_of[spec.id], []).append(spec.id)
    lanes: dict[str, float] = {}
    next_leaf = [0]

    def place(node: str) -> float:
        kids = children.get(node, [])
        if not kids:
            lanes[node] = float(next_leaf[0])
            next_leaf[0] += 1
        else:
            positions = [place(k) for k in kids]
            lanes[node] = sum(positions) / len(positions)
        return lanes[node]

    for root in children.get(None, []):
        place(root)
    # generation inside the year: 0, or one more than a parent of the same year
    within: dict[str, int] = {}
    for spec in ordered:
        parent = parent_of[spec.id]
        within[spec.id] = within[parent] + 1 if parent and specs[parent].year == spec.year else 0
    columns = sorted({(s.year, within[s.id]) for s in ordered})
    column_of = {key: i for i, key in enumerate(columns)}
    rows = []
    for spec in ordered:
        parent = specs.get(parent_of[spec.id]) if parent_of[spec.id] else None
        changed = []
        if parent is not None:
            changed = [f"{SLOT_LABELS.get(d.slot, d.slot).lower()} ({d.status})"
                       for d in diff_algorithms(parent, spec) if d.status != "unchanged"]
        rows.append({
            "id": spec.id,
            "name": spec.name,
            "full_name": spec.full_name,
            "year": spec.year,
            "arxiv": spec.paper.arxiv if spec.paper else None,
            "paper": spec.paper.title if spec.paper else None,
            "authors": spec.paper.authors if spec.paper else None,
            "predecessor": parent.id if parent is not None else None,
            "predecessor_name": parent.name if parent is not None else None,
            "change": change_phrase(spec, parent),
            "slots_changed": changed,
            "lane": lanes.get(spec.id, 0.0),
            "column": column_of[(spec.year, within[spec.id])],
        })
    return rows


def family_tree_spec(rows: list[dict]) -> dict:
    import altair as alt

    colour_map: dict[str, str] = {}
    columns: dict[int, str] = {}
    for r in rows:
        columns.setdefault(r["column"], str(r["year"]))
    n_columns = max(columns) + 1 if columns else 1
    nodes = []
    for r in rows:
        if r["paper"] is None:
            source = "no paper of its own"
        else:
            source = f"arXiv {r['arxiv']}" if r["arxiv"] else r["authors"]
        nodes.append({
            "id": r["id"], "name": r["name"], "column": r["column"], "lane": r["lane"],
            "meta": f"{r['year']} · {source}",
            "change": textwrap.fill(r["change"], 20),
            "colour": algorithm_colour(r["id"], colour_map),
            "tip_change": r["change"],
        })
    by_id = {n["id"]: n for n in nodes}
    # Elbow connectors (right, down or up between the columns, right), so no line crosses a label.
    edges = []
    for r in rows:
        if r["predecessor"] not in by_id:
            continue
        a, b = by_id[r["predecessor"]], by_id[r["id"]]
        mid = (a["column"] + b["column"]) / 2 if b["column"] > a["column"] else a["column"]
        for (c1, l1), (c2, l2) in (((a["column"], a["lane"]), (mid, a["lane"])), ((mid, a["lane"]), (mid, b["lane"])),
                                   ((mid, b["lane"]), (b["column"], b["lane"]))):
            if (c1, l1) != (c2, l2):
                edges.append({"column": c1, "lane": l1, "column2": c2, "lane2": l2})
    max_lane = max((n["lane"] for n in nodes), default=0.0)
    label_expr = " : ".join(f"datum.value == {c} ? '{y}'" for c, y in sorted(columns.items())) + " : ''"
    x = alt.X("column:Q", scale=alt.Scale(domain=[-0.5, n_columns - 0.5], nice=False, zero=False),
              axis=alt.Axis(title=None, orient="top", values=sorted(columns), labelExpr=label_expr, grid=False,
                            domain=False, ticks=False, labelFontSize=13, labelFontWeight="bold", labelPadding=6))
    # lane 0 at the top; the room below the last lane is for its labels
    y = alt.Y("lane:Q", scale=alt.Scale(domain=[-0.25, max_lane + 0.95], nice=False, zero=False, reverse=True),
              axis=None)
    base_nodes = alt.Chart(alt.Data(values=nodes))
    edge_layer = alt.Chart(alt.Data(values=edges)).mark_rule(strokeWidth=2, opacity=0.5, color=role("neutral"),
                                                             strokeCap="round").encode(
        x=x, y=y, x2="column2:Q", y2="lane2:Q")
    tooltip = [alt.Tooltip("name:N", title="Algorithm"), alt.Tooltip("meta:N", title="Year and paper"),
               alt.Tooltip("tip_change:N", title="What it changed")]
    dots = base_nodes.mark_circle(size=240, opacity=1, stroke="white", strokeWidth=1.5).encode(
        x=x, y=y, color=alt.Color("colour:N", scale=None), tooltip=tooltip)
    names = base_nodes.mark_text(dy=14, fontWeight="bold", fontSize=13, baseline="top").encode(
        x=x, y=y, text="name:N", tooltip=tooltip)
    meta = base_nodes.mark_text(dy=31, fontSize=10.5, baseline="top", opacity=0.8).encode(x=x, y=y, text="meta:N")
    change = base_nodes.mark_text(dy=46, fontSize=11, baseline="top", lineBreak="\n", lineHeight=13.5).encode(
        x=x, y=y, text="change:N")
    chart = alt.layer(edge_layer, dots, names, meta, change).properties(
        width=min(660, 132 * n_columns), height=int(118 * (max_lane + 1.2)),
    ).configure_view(stroke=None)
    spec = chart_spec(chart)
    spec["description"] = "The lineage of the algorithms: each node is an algorithm, linked to its predecessor."
    return spec


def family_tree_table(rows: list[dict]) -> str:
    out = []
    for r in rows:
        paper = escape_text(r["paper"] or "none: no paper of its own")
        if r["paper"] and r["arxiv"]:
            paper = (f'<a href="https://arxiv.org/abs/{escape_text(r["arxiv"])}">{paper}</a> '
                     f"(arXiv {escape_text(r['arxiv'])})")
        parent = escape_text(r["predecessor_name"] or "—")
        changed = escape_text(", ".join(r["slots_changed"]) or "— (the starting point)")
        out.append((f"<strong>{escape_text(r['name'])}</strong><br>{escape_text(r['full_name'])}",
                    escape_text(r["year"]), paper, parent, escape_text(r["change"]), changed))
    return table(["Algorithm", "Year", "Paper", "Builds on", "The change, in a phrase", "Slots that differ from "
                   "its predecessor"], out, caption="The family tree as a table", numeric=(1,))


# ---------------------------------------------------------------------------
# Metric series of runs (smoothed, downsampled)
# ---------------------------------------------------------------------------


@macro(html=True)
def family_tree(site: Site) -> str:
    """The lineage of the algorithm specs: a figure (x = year) and the same as a table."""
    rows = tree_rows(site.specs())
    spec = family_tree_spec(rows)
    caption = ("The family tree of the algorithms in this course: each links to the one it builds on, with the "
               "year, the paper and the change it made in a phrase. Hover a node for the whole phrase; on a narrow "
               "screen, scroll the figure sideways. The table below holds the same information.")
    figure = vega_embed(spec, chart_id=site.chart_id(spec), caption=caption, css_class="unipo-family-tree")
    return figure + ('<details class="note"><summary>The family tree as a table</summary>'
                     + family_tree_table(rows) + "</details>")
