"""Reference pages generated from the contracts: algorithm specs, run-log schema, metrics, components.

Macros (registered with ``site.macro``):

- ``spec_reference(algorithm_id)``: one algorithm: name, year, paper, predecessor, what it
  changed, the whole objective composed from its components (``formula.objective_latex``) and
  a table of its slots with kind, parameters, LaTeX definition, explanation and the
  tooltips of the formula's terms;
- ``schema_reference()``: every file of a run directory, a table of fields per model (type,
  required, description) and the raw JSON Schema, from ``runlog.json_schema()`` at build time;
- ``metric_catalogue()``: ``schema.METRICS`` as a table;
- ``bound(name)``: a bound of ``unipo_build.core.limits`` (the text length caps, the number range) as
  the schema page's prose writes it;
- ``component_catalogue()``: the registry: every slot, its kinds as content tabs (one shown at a
  time), each kind's parameters with defaults and descriptions, its formula and terms, the function
  that computes it (a link into the repository, ``source_links``), and the shipped algorithms that
  use it;
- ``trainer_settings_table()``: one content tab per trainer of ``registry.TRAINERS``, each a table
  of the kinds it ships with their settings in it (``Kind.trainers``), one line naming the kinds it
  does not ship, and where its settings were read.

The builders are pure functions returning Markdown in which every piece of HTML stands alone as
a paragraph; the macros hand each piece to ``macros.protect_html`` so Markdown never rewrites
it. All text from specs and models is escaped (``render.escape_text``); TeX goes into
``<span class="arithmatex">\\(..\\)</span>`` / ``<div class="arithmatex">\\[..\\]</div>``,
escaped as text, for unipo.js to typeset with KaTeX. Macro output is not run through Jinja
again, so ``{{``, ``{%`` and ``{#`` in TeX or prose are safe.
"""

from __future__ import annotations

import json
import re
from typing import Any, Callable

from unipo_build.core.numbers import plain_num
from unipo_build.core import formula, limits, registry
from unipo_build.site.render import escape_text
from unipo_build.core.runlog import json_schema
from unipo_build.core.schema import METRICS
from unipo_build.core.specs import REGISTRY, SLOTS, AlgorithmSpec, Kind, Reference, lineage
from unipo_build.site.fmt import code, math_display, math_inline
from unipo_build.site.context import Site, macro
from unipo_build.site.page_links import Link, no_link, page_linker
from unipo_build.site.source_links import Repo, source_html

#: Where the generated pages live (relative to docs/): one page per spec, and the catalogues.
ALGORITHM_PAGES = "reference/algorithms"
COMPONENTS_PAGE = "reference/components.md"

SLOT_DESCRIPTIONS = {
    "advantage": "How much better than expected each response (or token) did.",
    "ratio": "How far the policy has moved on a token since it was sampled.",
    "clip": ("The surrogate's form: where a token stops contributing gradient, or how its gradient is capped "
             "(CISPO) or gated (SAPO); it does not bound the ratio itself."),
    "kl": "What ties the policy to the frozen reference model.",
    "aggregation": "How token objectives are averaged into one number: the weight of every token.",
    "filter": "Which sampled groups are trained on.",
    "shaping": "What is added to the reward before advantages are computed.",
    "correction": ("Rollout correction: the weight on each token's surrogate that corrects for the sampler not being "
                   "the policy being trained (truncated or masked importance sampling against the sampler's log-probs)."),
}

Protect = Callable[[str], str]


def _same(html: str) -> str:
    return html


# ---------------------------------------------------------------------------
# Small HTML helpers
# ---------------------------------------------------------------------------

def table(head: list[str], rows: list[list[str]], *, row_attrs: list[str] | None = None) -> str:
    """An HTML table (cells are trusted HTML), wrapped as Material wraps Markdown tables."""
    th = "".join(f"<th>{escape_text(h)}</th>" for h in head)
    body = []
    for n, row in enumerate(rows):
        attrs = f" {row_attrs[n]}" if row_attrs else ""
        body.append(f"<tr{attrs}>" + "".join(f"<td>{cell}</td>" for cell in row) + "</tr>")
    return ('<div class="md-typeset__scrollwrap"><div class="md-typeset__table"><table>'
            f"<thead><tr>{th}</tr></thead><tbody>{''.join(body)}</tbody></table></div></div>")


def value_text(value: Any) -> str:
    """A parameter value as a reader types it in a spec (YAML/JSON literal)."""
    if isinstance(value, float):
        return plain_num(value)
    return json.dumps(value)


def arxiv_link(arxiv: str) -> str:
    url = f"https://arxiv.org/abs/{arxiv}"
    return f'<a href="{escape_text(url)}">arXiv:{escape_text(arxiv)}</a>'


def reference_html(ref: Reference) -> str:
    parts = [f"{escape_text(ref.authors)}, \u201c{escape_text(ref.title)}\u201d ({escape_text(ref.year)})"]
    if ref.arxiv:
        parts.append(arxiv_link(ref.arxiv))
    if ref.note:
        parts.append(escape_text(ref.note))
    return ", ".join(parts)


def _anchor(*parts: str) -> str:
    return "-".join(re.sub(r"[^a-z0-9_]+", "-", p.lower()).strip("-") for p in parts)


def kind_anchor(slot: str, kind: str) -> str:
    """Id of a kind's section on the components page."""
    return _anchor("component", slot, kind)


# ---------------------------------------------------------------------------
# spec_reference
# ---------------------------------------------------------------------------

def _params_html(spec: AlgorithmSpec, slot: str) -> str:
    kind = spec.component(slot)
    params = spec.params(slot)
    if not params:
        return "\u2014"
    given = spec.components[slot].params
    items = []
    for name, value in params.items():
        info = kind.params.model_fields[name]
        if value is None and name in kind.run_resolved:
            shown = "set by the run"
        else:
            shown = code(value_text(value))
        default = "" if name in given else ' <span class="unipo-param-default">(default)</span>'
        desc = f" \u2013 {escape_text(info.description)}" if info.description else ""
        items.append(f"<li>{code(name)} = {shown}{default}{desc}</li>")
    return f'<ul class="unipo-params">{"".join(items)}</ul>'


def terms_html(kind: Kind, tooltip: Callable[[Any], str]) -> str:
    """Each term of a kind's formula with its tooltip (``title`` on hover, the text below)."""
    if not kind.terms:
        return "\u2014"
    items = []
    for term in kind.terms:
        tip = tooltip(term)
        items.append(f'<li><span class="unipo-term" data-term="{escape_text(term.key)}" title="{escape_text(tip)}">'
                     f"{math_inline(term.symbol)}</span>: {escape_text(tip)}</li>")
    return f'<ul class="unipo-terms">{"".join(items)}</ul>'


def slots_table(spec: AlgorithmSpec, link: Link = no_link, repo: Repo | None = None) -> str:
    """One row per slot: component (kind and summary), parameters, definition with the tooltips
    of its terms, and the spec's explanation of the choice."""
    rows, attrs = [], []
    components_href = link(COMPONENTS_PAGE)
    for slot in SLOTS:
        kind = spec.component(slot)
        comp = spec.components[slot]
        name = code(kind.name)
        if components_href:
            name = f'<a href="{escape_text(components_href + "#" + kind_anchor(slot, kind.name))}">{name}</a>'
        tex = kind.latex(spec.params(slot))
        if slot != "ratio":
            tex = formula.with_ratio(tex, spec.component("ratio"))
        definition = math_display(tex) if tex else '<p class="unipo-no-term">No term in the objective.</p>'
        if kind.terms:
            definition += terms_html(kind, lambda term, slot=slot: spec.tooltip(slot, term))
        params = _params_html(spec, slot)
        source = source_html(kind.fn, repo)
        rows.append([
            f'<strong>{escape_text(slot)}</strong>: {name}<br>'
            f'<span class="unipo-kind-summary">{escape_text(kind.summary)}</span>'
            + (params if params != "\u2014" else "")
            + (f'<br><span class="unipo-kind-source">code: {source}</span>' if source else ""),
            definition,
            escape_text(comp.explanation),
        ])
        attrs.append(f'data-slot="{escape_text(slot)}" class="unipo-slot-row"')
    return table(["Slot, component and parameters", "Definition and terms", "In this algorithm"], rows,
                 row_attrs=attrs)


def facts_html(spec: AlgorithmSpec, specs: dict[str, AlgorithmSpec], link: Link = no_link) -> str:
    rows = [
        ["Name", f"{escape_text(spec.name)} \u2013 {escape_text(spec.full_name)}"],
        ["Year", escape_text(spec.year)],
        ["Paper", reference_html(spec.paper) if spec.paper else "none of its own: its sources are under further reading"],
    ]
    if spec.predecessor:
        pred = specs.get(spec.predecessor)
        label = escape_text(pred.name if pred else spec.predecessor)
        href = link(f"{ALGORITHM_PAGES}/{spec.predecessor}.md")
        rows.append(["Predecessor", f'<a href="{escape_text(href)}">{label}</a>' if href else label])
    else:
        rows.append(["Predecessor", "none: the family starts here"])
    successors = [s for s in lineage(specs) if s.predecessor == spec.id]
    if successors:
        cells = []
        for s in successors:
            href = link(f"{ALGORITHM_PAGES}/{s.id}.md")
            cells.append(f'<a href="{escape_text(href)}">{escape_text(s.name)}</a>' if href else escape_text(s.name))
        rows.append(["Successors", ", ".join(cells)])
    defaults = {k: v for k, v in spec.defaults.model_dump().items() if v is not None}
    if defaults:
        rows.append(["Training defaults", ", ".join(f"{code(k)} = {code(value_text(v))}" for k, v in defaults.items())])
    if spec.references:
        rows.append(["Further reading", "<ul>" + "".join(f"<li>{reference_html(r)}</li>" for r in spec.references)
                     + "</ul>"])
    body = "".join(f"<tr><th>{escape_text(k)}</th><td>{v}</td></tr>" for k, v in rows)
    return (f'<div class="unipo-spec-facts" data-algorithm="{escape_text(spec.id)}">'
            f'<p class="unipo-spec-summary">{escape_text(spec.summary)}</p>'
            f'<div class="md-typeset__scrollwrap"><div class="md-typeset__table"><table>'
            f"<tbody>{body}</tbody></table></div></div></div>")


def spec_reference_markdown(spec: AlgorithmSpec, specs: dict[str, AlgorithmSpec], *, protect: Protect = _same,
                            link: Link = no_link, repo: Repo | None = None) -> str:
    """The reference of one algorithm as Markdown (headings) around protected HTML."""
    objective = (f'<div class="unipo-objective" data-algorithm="{escape_text(spec.id)}">'
                 + math_display(formula.objective_latex(spec))
                 + '<p class="unipo-formula-note">Each part of the formula belongs to one slot of the table '
                   "below; the rows after \u201cwhere\u201d define its symbols.</p></div>")
    return "\n\n".join([
        protect(facts_html(spec, specs, link)),
        "## What it changed" if spec.predecessor else "## Where it starts",
        protect(f'<p class="unipo-spec-changed">{escape_text(spec.changed)}</p>'),
        "## Objective",
        protect(objective),
        "## Components",
        protect(slots_table(spec, link, repo)),
    ]) + "\n"


# ---------------------------------------------------------------------------
# schema_reference
# ---------------------------------------------------------------------------

def _constraint_html(prop: dict) -> str:
    """A field's bounds as HTML: ' within ±10<sup>15</sup>', ' ≥ 0, ≤ 1', ' of at most 4,096 characters'."""
    bits = []
    low, high = prop.get("minimum"), prop.get("maximum")
    if low is not None and high is not None and low == -high and low < 0:
        text = limits.format_bound(high)
        bits.append(f"within \u00b1{f'({text})' if ' ' in text else text}")
    else:
        for key, sym in (("minimum", "\u2265"), ("maximum", "\u2264")):
            if key in prop:
                bits.append(f"{sym} {limits.format_bound(prop[key])}")
    for key, sym in (("exclusiveMinimum", "&gt;"), ("exclusiveMaximum", "&lt;")):
        if key in prop:
            bits.append(f"{sym} {limits.format_bound(prop[key])}")
    lengths = [f"at {word} {limits.format_bound(prop[key])}" for key, word in (("minLength", "least"), ("maxLength", "most"))
               if key in prop]
    if lengths:
        bits.append("of " + " and ".join(lengths) + " characters")
    return " " + ", ".join(bits) if bits else ""


def type_html(prop: dict, ref_href: Callable[[str], str]) -> str:
    """A JSON Schema type as a reader would say it: 'array of number', 'integer ≥ 0', ..."""
    if "$ref" in prop:
        name = prop["$ref"].rsplit("/", 1)[-1]
        return f'<a href="{escape_text(ref_href(name))}">{escape_text(name)}</a>'
    if "anyOf" in prop:
        options = [o for o in prop["anyOf"] if o.get("type") != "null"]
        nullable = len(options) < len(prop["anyOf"])
        text = " or ".join(type_html(o, ref_href) for o in options)
        return text + (" or null" if nullable else "")
    if "enum" in prop:
        return "one of " + ", ".join(code(json.dumps(v)) for v in prop["enum"])
    if "const" in prop:
        return "exactly " + code(json.dumps(prop["const"]))
    kind = prop.get("type")
    if kind == "array":
        return "array of " + type_html(prop.get("items", {}), ref_href)
    if kind == "object":
        extra = prop.get("additionalProperties")
        if isinstance(extra, dict):
            return "object of " + type_html(extra, ref_href)
        return "object"
    if kind == "string":
        text = "string"
        if "format" in prop:
            text += f" ({escape_text(prop['format'])})"
        if "pattern" in prop:
            text += f" matching {code(prop['pattern'])}"
        return text + _constraint_html(prop)
    if kind:
        return escape_text(kind) + _constraint_html(prop)
    return "any"


def _model_order(schema: dict) -> list[str]:
    """The root model, then the models it refers to, in order of first reference."""
    defs = schema.get("$defs", {})
    order: list[str] = []

    def visit(node: Any) -> None:
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str):
                name = ref.rsplit("/", 1)[-1]
                if name not in order and name in defs:
                    order.append(name)
                    visit(defs[name])
            for key, value in node.items():
                if key != "$defs":
                    visit(value)
        elif isinstance(node, list):
            for item in node:
                visit(item)

    visit({k: v for k, v in schema.items() if k != "$defs"})
    order += [name for name in defs if name not in order]
    return [schema.get("title", "Root")] + order


def file_slug(file_key: str) -> str:
    """'tokens/step_NNNNNN.json' -> 'tokens'; 'steps.jsonl (one ...)' -> 'steps'."""
    return re.split(r"[./ ]", file_key, 1)[0]


def fields_table(model: dict, ref_href: Callable[[str], str]) -> str:
    required = set(model.get("required", []))
    rows = []
    for name, prop in model.get("properties", {}).items():
        desc = escape_text(prop.get("description", ""))
        if "default" in prop:
            default = f'<span class="unipo-field-default">Default: {code(json.dumps(prop["default"]))}.</span>'
            desc = f"{desc} {default}" if desc else default
        rows.append([code(name), type_html(prop, ref_href), "yes" if name in required else "no", desc])
    html = table(["Field", "Type", "Required", "Description"], rows)
    notes = []
    if model.get("description"):
        notes.append(escape_text(model["description"]))
    if model.get("additionalProperties") is True:
        notes.append("Unknown fields are kept: a reader passes them through unchanged.")
    elif model.get("additionalProperties") is False:
        notes.append("No other fields are allowed.")
    note = f'<p class="unipo-model-note">{" ".join(notes)}</p>' if notes else ""
    return note + html


def schema_reference_markdown(*, protect: Protect = _same) -> str:
    out = []
    for file_key, schema in json_schema().items():
        slug = file_slug(file_key)
        path, _, rest = file_key.partition(" ")
        out.append(f"## `{path}`{(' ' + rest) if rest else ''} {{ #schema-{slug} }}")
        defs = schema.get("$defs", {})

        def ref_href(name: str, slug=slug) -> str:
            return f"#{_anchor('schema', slug, name)}"

        for name in _model_order(schema):
            model = schema if name == schema.get("title", "Root") else defs[name]
            out.append(f"### {name} {{ #{_anchor('schema', slug, name)} }}")
            out.append(protect(fields_table(model, ref_href)))
        raw = json.dumps(schema, indent=2, ensure_ascii=False)
        out.append(protect(f'<details class="unipo-json-schema"><summary>JSON Schema of {code(path)}</summary>'
                           f'<pre><code class="language-json">{escape_text(raw)}</code></pre></details>'))
    return "\n\n".join(out) + "\n"


# ---------------------------------------------------------------------------
# metric_catalogue
# ---------------------------------------------------------------------------

@macro(name="metric_catalogue", html=True, with_site=False)
def metric_catalogue_html() -> str:
    """The documented metrics (schema.METRICS)."""
    rows = [[code(name), escape_text(info.label), escape_text(info.group), escape_text(info.scope),
             escape_text(info.higher_is), escape_text(info.description)] for name, info in METRICS.items()]
    attrs = [f'id="{escape_text(_anchor("metric", name))}"' for name in METRICS]
    return table(["Metric", "Label", "Group", "Scope", "Higher is", "Description"], rows, row_attrs=attrs)


# ---------------------------------------------------------------------------
# component_catalogue
# ---------------------------------------------------------------------------

def example_params(kind: Kind, specs: dict[str, AlgorithmSpec]) -> tuple[dict | None, str]:
    """Parameters to show a kind's formula with, and where they come from."""
    fields = kind.params.model_fields
    if all(not f.is_required() for f in fields.values()):
        params = kind.params.model_validate({}).model_dump()
        return params, ("with the default parameters" if params else "")
    for spec in lineage(specs):
        if spec.components[kind.slot].kind == kind.name:
            return spec.params(kind.slot), f"with the parameters of {spec.name}"
    return None, ""


def params_table(kind: Kind) -> str:
    schema = kind.params.model_json_schema()
    props = schema.get("properties", {})
    if not props:
        return '<p class="unipo-no-params">No parameters.</p>'
    required = set(schema.get("required", []))
    rows = []
    for name, prop in props.items():
        if name in required:
            default = "required"
        else:
            default = code(value_text(prop.get("default")))
        note = " Filled in from the run when null." if name in kind.run_resolved else ""
        rows.append([code(name), type_html(prop, lambda n: "#"), default,
                     escape_text(prop.get("description", "")) + escape_text(note)])
    return table(["Parameter", "Type", "Default", "Description"], rows)


def kind_html(kind: Kind, specs: dict[str, AlgorithmSpec], link: Link = no_link, repo: Repo | None = None) -> str:
    source = source_html(kind.fn, repo)
    parts = [f'<div class="unipo-component-kind" data-slot="{escape_text(kind.slot)}" '
             f'data-kind="{escape_text(kind.name)}"><p>{escape_text(kind.summary)}</p>'
             + (f'<p class="unipo-kind-source">Computed by <code>{escape_text(kind.fn.__name__)}</code>: {source}</p>'
                if source else "")]
    params, source = example_params(kind, specs)
    tex = kind.latex(params) if params is not None else ""
    if tex:
        parts.append(math_display(tex))
        if source:
            parts.append(f'<p class="unipo-formula-note">Shown {escape_text(source)}.</p>')
    elif params is not None:
        parts.append('<p class="unipo-formula-note">It adds no term to the objective.</p>')
    parts.append(params_table(kind))
    if kind.terms:
        # folded: 32 kinds' term lists open would make the page twice the reference budget's height
        parts.append(f'<details class="unipo-kind-terms"><summary>Terms of the formula ({len(kind.terms)})</summary>'
                     + terms_html(kind, lambda term: term.tooltip) + '</details>')
    users = [s for s in lineage(specs) if s.components[kind.slot].kind == kind.name]
    if users:
        names = []
        for s in users:
            href = link(f"{ALGORITHM_PAGES}/{s.id}.md")
            names.append(f'<a href="{escape_text(href)}">{escape_text(s.name)}</a>' if href else escape_text(s.name))
        parts.append(f'<p class="unipo-used-by">Used by: {", ".join(names)}.</p>')
    else:
        parts.append('<p class="unipo-used-by">Not used by a shipped algorithm.</p>')
    parts.append("</div>")
    return "".join(parts)


def kind_heading(slot: str, name: str) -> str:
    """A kind's heading (its anchor, which the algorithm pages and the trainer tables link to), written as
    the toc extension writes a Markdown heading, permalink included."""
    anchor = escape_text(kind_anchor(slot, name))
    return (f'<h3 id="{anchor}">{code(name)}<a class="headerlink" href="#{anchor}" title="Permanent link">'
            '&para;</a></h3>')


def component_catalogue_markdown(specs: dict[str, AlgorithmSpec], *, protect: Protect = _same,
                                 link: Link = no_link, repo: Repo | None = None) -> str:
    """Slot by slot: its heading and description, then its kinds as content tabs, one kind shown at a time
    (32 kinds' formulas typeset are some 7,000 DOM nodes: the reference page budget once read). A link to a
    kind's anchor opens its tab (unipo.js openTabOf)."""
    out = []
    for slot in SLOTS:
        out.append(f"## `{slot}` {{ #{_anchor('component', slot)} }}")
        out.append(protect(f'<p class="unipo-slot-description">{escape_text(SLOT_DESCRIPTIONS.get(slot, ""))}</p>'))
        tabs = [(f'{escape_text(name)}<span class="unipo-sr-only"> ({escape_text(slot)})</span>',
                 kind_heading(slot, name) + kind_html(kind, specs, link, repo), "")
                for name, kind in REGISTRY[slot].items()]
        out.append(protect(tabs_html(_anchor("component", slot), tabs, "unipo-kind-tabs")))
    return "\n\n".join(out) + "\n"


# ---------------------------------------------------------------------------
# trainer_settings_table
# ---------------------------------------------------------------------------

def setting_html(s: registry.Setting) -> str:
    """One setting: as one types it, "(default)" when it is the trainer's default, and its note. A narrow
    column breaks a long key after a dot or before its value (<wbr>), not inside a word."""
    breakable = re.sub(r"(=|\.(?=[A-Za-z_]))", r"\1<wbr>", escape_text(s.text()))
    bits = [f"<code>{breakable}</code>"] if s.key else []
    if s.default:
        bits.append('<span class="unipo-setting-default">(default)</span>')
    if s.note:
        bits.append(f'<span class="unipo-setting-note">{escape_text(s.note)}</span>')
    return " ".join(bits)


def trainer_cell(kind: Kind, trainer: str) -> str:
    """The kind's settings in one trainer, one per line; empty where the trainer does not ship it."""
    return "<br>".join(setting_html(s) for s in registry.settings_of(kind, trainer))


def tabs_html(name: str, tabs: list[tuple[str, str, str]], css_class: str = "") -> str:
    """Material content tabs (pymdownx.tabbed's alternate style, as Markdown's ``===`` writes them) of
    ``tabs`` [(label HTML, block HTML, block attributes)], the first open. ``name`` makes the inputs' ids
    (``__tabbed_<name>_<n>``) unique on the page. A label's innerText is what Material's linked tabs match
    across the page (content.tabs.link), so a label shared by two tab sets ("none") carries its own
    words in a screen-reader-only span."""
    checked = 'checked="checked" '
    inputs = "".join(f'<input {checked if n == 1 else ""}id="__tabbed_{name}_{n}" name="__tabbed_{name}" type="radio" />'
                     for n in range(1, len(tabs) + 1))
    labels = "".join(f'<label for="__tabbed_{name}_{n}">{label}</label>' for n, (label, _, _) in enumerate(tabs, 1))
    blocks = "".join(f'<div class="tabbed-block"{" " + attrs if attrs else ""}>{block}</div>' for _, block, attrs in tabs)
    return (f'<div class="tabbed-set tabbed-alternate{" " + css_class if css_class else ""}" '
            f'data-tabs="{escape_text(name)}:{len(tabs)}">{inputs}<div class="tabbed-labels">{labels}</div>'
            f'<div class="tabbed-content">{blocks}</div></div>')


def _kinds_by_slot(kinds: list[tuple[str, str]]) -> str:
    """'advantage <code>gae</code>, <code>leave_one_out</code>; clip <code>none</code>' (registry order)."""
    slots: dict[str, list[str]] = {}
    for slot, name in kinds:
        slots.setdefault(slot, []).append(f'<a href="#{escape_text(kind_anchor(slot, name))}">{code(name)}</a>')
    return "; ".join(f"{escape_text(slot)} {', '.join(names)}" for slot, names in slots.items())


def trainer_block(trainer: str) -> str:
    """One trainer: a two-column table, each kind it ships with the setting that selects it; one line
    naming the kinds it does not ship; where its settings were read."""
    label = registry.TRAINERS[trainer]
    rows, attrs, lacking = [], [], []
    for slot in SLOTS:
        for name, kind in REGISTRY[slot].items():
            cell = trainer_cell(kind, trainer)
            if not cell:
                lacking.append((slot, name))
                continue
            rows.append([f'<a href="#{escape_text(kind_anchor(slot, name))}">{escape_text(slot)}: {code(name)}</a>', cell])
            attrs.append(f'data-slot="{escape_text(slot)}" data-kind="{escape_text(name)}" class="unipo-trainer-row"')
    total = len(rows) + len(lacking)
    out = [f'<p class="unipo-trainer-count">{escape_text(label)} ships {len(rows)} of the {total} kinds'
           + (":" if rows else ".") + "</p>"]
    if rows:
        out.append(table(["Kind", f"Setting in {label}"], rows, row_attrs=attrs))
    if lacking:
        out.append(f'<p class="unipo-trainer-lacks" data-trainer="{escape_text(trainer)}">'
                   f'Not in {escape_text(label)} ({len(lacking)} of the {total} kinds): {_kinds_by_slot(lacking)}.</p>')
    where = registry.TRAINER_SOURCES.get(trainer)
    if where:
        out.append(f'<p class="unipo-formula-note unipo-trainer-source">Read in {escape_text(where)}.</p>')
    return "".join(out)


@macro(name="trainer_settings_table", html=True, with_site=False)
def trainer_settings_html(link: Link = no_link) -> str:
    """Every registered kind (slot by slot, in the registry's order) with its setting in each trainer: one tab
    per trainer (registry.TRAINERS), each a table of kind and setting, and one line of the kinds it lacks."""
    tabs = [(escape_text(label), trainer_block(trainer), f'data-trainer="{escape_text(trainer)}"')
            for trainer, label in registry.TRAINERS.items()]
    return f'<div class="unipo-trainer-settings">{tabs_html("trainers", tabs, "unipo-trainer-tabs")}</div>'


# ---------------------------------------------------------------------------
# MkDocs glue
# ---------------------------------------------------------------------------

@macro(markdown=True)
def spec_reference(site: Site, algorithm_id: str) -> str:
    """The reference of one algorithm spec (data/algorithms/<id>.yaml)."""
    spec = site.spec(algorithm_id, "spec_reference")
    return spec_reference_markdown(spec, site.specs(), protect=site.protect, link=page_linker(site.env),
                                   repo=site.repo)


@macro(markdown=True)
def schema_reference(site: Site) -> str:
    """Fields and JSON Schema of every file of a run directory."""
    return schema_reference_markdown(protect=site.protect)


# A bound of ``unipo_build.core.limits`` in the docs' prose: ``{{ bound("LINE_MAX") }}`` -> 4,096.
macro(limits.describe, name="bound", html=True, with_site=False)


@macro(markdown=True)
def component_catalogue(site: Site) -> str:
    """Every slot and registered component kind, each linked to the function that computes it."""
    return component_catalogue_markdown(site.specs(), protect=site.protect, link=page_linker(site.env),
                                        repo=site.repo)
