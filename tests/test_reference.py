"""Reference pages generated from the contracts (unipo_build.core.formula, unipo_build.reference)."""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
import textwrap
from pathlib import Path

import pytest
import yaml

from site_build import without_search, write_mkdocs_config
from unipo_build.core import formula as F
from unipo_build.site.pages.guides import reference as R
from unipo_build.core import specs as S
from unipo_build.core.runlog import json_schema
from unipo_build.core.schema import METRICS
from unipo_build.core.specs import SLOTS, load_spec, load_specs, resolve
from unipo_build.core.project import spec_dir

SPEC_DIR = spec_dir()

ROOT = Path(__file__).resolve().parents[1]
SPECS = load_specs()
ALGORITHMS = ("reinforce", "ppo", "grpo", "dapo", "dr_grpo")


def rows_of(tex: str) -> list[str]:
    """Top-level rows of the aligned environment."""
    body = tex.removeprefix(r"\begin{aligned}").removesuffix(r"\end{aligned}")
    rows, depth, start = [], 0, 0
    i = 0
    while i < len(body):
        ch = body[i]
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        elif body.startswith("\\\\", i) and depth == 0:
            rows.append(body[start:i])
            i += 2
            start = i
            continue
        elif ch == "\\":
            i += 2
            continue
        i += 1
    rows.append(body[start:])
    return rows


def slots_in(tex: str) -> set[str]:
    return set(re.findall(r"\\htmlClass\{unipo-slot unipo-slot-([a-z_]+)[^}]*\}", tex))


def unwrap(tex: str) -> str:
    """The formula without its \\htmlClass wrappers (contents kept)."""
    out, stack, i = [], [], 0
    while i < len(tex):
        if tex.startswith("\\htmlClass{", i):
            i = tex.index("}", i) + 1  # the class argument holds no braces
            assert tex[i] == "{"
            stack.append(True)
            i += 1
            continue
        ch = tex[i]
        if ch == "\\":
            out.append(tex[i:i + 2])
            i += 2
            continue
        if ch == "{":
            stack.append(False)
        elif ch == "}":
            if stack.pop():
                i += 1
                continue
        out.append(ch)
        i += 1
    return "".join(out)


def balanced(tex: str) -> bool:
    depth = 0
    i = 0
    while i < len(tex):
        if tex[i] == "\\":
            i += 2
            continue
        depth += {"{": 1, "}": -1}.get(tex[i], 0)
        if depth < 0:
            return False
        i += 1
    return depth == 0


# ---------------------------------------------------------------------------
# objective_latex
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_objective_wraps_every_slot_that_has_a_formula(algorithm):
    spec = SPECS[algorithm]
    tex = F.objective_latex(spec)
    assert balanced(tex) and tex.startswith(r"\begin{aligned}\mathcal{J}(\theta)&=")
    expected = {slot for slot in SLOTS if spec.component(slot).latex(spec.params(slot))}
    assert slots_in(tex) == expected
    # the per-token objective sits inside the aggregation's bracket in line 1
    line1 = rows_of(F.objective_latex(spec, split=False))[0]
    assert {"aggregation", "clip", "ratio", "advantage"} <= slots_in(line1)
    # every registry piece of the spec is in the formula (the clip's as its right-hand side)
    plain = unwrap(tex)
    assert "htmlClass" not in plain and balanced(plain)
    for slot in SLOTS:
        piece = spec.component(slot).latex(spec.params(slot))
        for clause in F.clauses(piece):
            lhs, rhs = F.split_definition(clause)
            assert (rhs if slot == "clip" else clause) in plain, (slot, clause)


def test_grpo_formula():
    tex = F.objective_latex(SPECS["grpo"])
    rows = rows_of(tex)
    # J = E on the first row (as eq. 3 of the GRPO paper), the bracket on the second: no row ends
    # on an opening bracket, and every bracket closes on the row it opens
    assert rows[0].endswith(r"(\cdot\mid q)}")
    assert rows[1].startswith(r"[0.4em]&\qquad\Bigg[") and rows[1].endswith(r"\Big)\Bigg]")
    assert r"\frac{1}{G}\sum_{i=1}^{G}\frac{1}{|o_i|}\sum_{t=1}^{|o_i|}" in rows[1]
    assert r"\htmlClass{unipo-slot unipo-slot-kl}{-\beta\,\mathbb{D}_{i,t}}" in rows[1]  # KL in the loss
    assert r"1-0.2,1+0.2" in rows[1]
    assert rows[2].startswith(r"\text{where}\quad&") and "unipo-slot-ratio" in rows[2]
    assert any(r"\beta=0.04" in row and "unipo-slot-kl" in row for row in rows[2:])
    assert any(r"\operatorname{std}_{n-1}" in row for row in rows[2:])
    assert len(rows) == 5  # two rows of objective and three definitions: ratio, advantage, KL
    assert len(rows_of(F.objective_latex(SPECS["grpo"], split=False))) == 4


def test_ppo_formula_puts_the_kl_in_the_reward():
    rows = rows_of(F.objective_latex(SPECS["ppo"]))
    assert "unipo-slot-kl" not in rows[0] + rows[1]
    assert rows[2].startswith(r"&\qquad ") and r"r_{i,t}=-\beta\,\mathbb{D}_{i,t}" in rows[2]
    assert any(r"\gamma=1,\ \lambda=0.95" in row for row in rows)
    assert any(r"\beta=0.02" in row for row in rows)


def test_dapo_formula():
    rows = rows_of(F.objective_latex(SPECS["dapo"]))
    assert "1-0.2,1+0.28" in rows[1] and "unipo-slot-kl" not in "".join(rows)
    assert r"\frac{B}{\sum_{j=1}^{BG}|o_j|}" in rows[1]
    assert slots_in(rows[2]) == {"filter", "shaping"}
    assert r"r_i\leftarrow r_i+R_{\text{length}}(o_i)" in rows[2]
    assert any(r"\begin{cases}" in row and "unipo-slot-shaping" in row for row in rows[3:])


def test_dr_grpo_formula_and_the_resolved_normaliser():
    tex = F.objective_latex(SPECS["dr_grpo"])
    assert r"\frac{1}{G\,L}" in rows_of(tex)[1] and r"L=\text{max new tokens}" in tex
    assert any(row == r"&\htmlClass{unipo-slot unipo-slot-aggregation}{L=\text{max new tokens}}" for row in rows_of(tex))
    resolved = F.objective_latex(resolve(SPECS["dr_grpo"], max_new_tokens=96))
    assert "L=96" in resolved and r"\text{max new tokens}" not in resolved
    assert r"\operatorname{std}" not in tex


def test_reinforce_formula():
    tex = F.objective_latex(SPECS["reinforce"])
    assert r"\min" not in tex and r"\operatorname{clip}" not in tex
    assert rows_of(tex)[0].endswith(r"\Big)\Bigg]")  # short enough for one row
    assert r"\operatorname{sg}" in tex and r"-\operatorname{mean}_{\text{batch}}(r)" in tex


def test_objective_options():
    tex = F.objective_latex(SPECS["grpo"], definitions=False, split=False)
    assert r"\text{where}" not in tex and len(rows_of(tex)) == 1
    tex = F.objective_latex(SPECS["dapo"], slot_class=lambda slot: f"unipo-diff-{slot}-x")
    assert r"\htmlClass{unipo-slot unipo-slot-clip unipo-diff-clip-x}{" in tex


def test_objective_from_a_resolved_config_equals_the_spec_where_nothing_is_run_resolved():
    for algorithm in ("grpo", "ppo", "reinforce"):
        assert F.objective_latex(resolve(SPECS[algorithm], max_new_tokens=64)) == F.objective_latex(SPECS[algorithm])


def test_clauses_and_definitions():
    assert F.clauses(r"a=1,\quad b=\frac{1,\quad 2}{3},\quad c") == ["a=1", r"b=\frac{1,\quad 2}{3}", "c"]
    assert F.clauses("") == []
    assert F.split_definition(r"\ell_{i,t}=\min(a, b)") == (r"\ell_{i,t}", r"\min(a, b)")
    assert F.split_definition(r"x_{a=b}") == ("", r"x_{a=b}")


def _katex():
    node = shutil.which("node")
    katex = ROOT / "node_modules" / "katex"
    if not node or not katex.is_dir():
        pytest.skip("node and node_modules/katex are needed (npm ci)")
    return node, katex


def test_formulas_render_in_katex_with_only_htmlclass_trusted(tmp_path):
    node, katex = _katex()
    formulas = {a: F.objective_latex(SPECS[a]) for a in ALGORITHMS}
    for slot, kinds in S.REGISTRY.items():
        for name, kind in kinds.items():
            params, _ = R.example_params(kind, SPECS)
            if params is not None and kind.latex(params):
                formulas[f"{slot}.{name}"] = kind.latex(params)
    for name, kind in S.REGISTRY["kl"].items():
        for estimator in ("k1", "k2", "k3"):
            if name != "none":
                formulas[f"kl.{name}.{estimator}"] = kind.latex({"estimator": estimator, "beta": 0.1})
    src = tmp_path / "formulas.json"
    src.write_text(json.dumps(formulas))
    script = textwrap.dedent(f"""
        const katex = require({json.dumps(str(katex))});
        const formulas = JSON.parse(require("fs").readFileSync({json.dumps(str(src))}, "utf8"));
        const out = {{}};
        for (const [name, tex] of Object.entries(formulas)) {{
          try {{
            const html = katex.renderToString(tex, {{displayMode: true, throwOnError: true,
              trust: (ctx) => ctx.command === "\\\\htmlClass",
              strict: (code) => code === "htmlExtension" ? "ignore" : "error"}});
            out[name] = {{ok: true, classes: [...new Set(html.match(/unipo-slot-[a-z_]+/g) || [])].sort()}};
          }} catch (e) {{ out[name] = {{ok: false, error: e.message}}; }}
        }}
        console.log(JSON.stringify(out));
    """)
    result = subprocess.run([node, "-e", script], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    failed = {k: v["error"] for k, v in out.items() if not v["ok"]}
    assert not failed
    for algorithm in ALGORITHMS:
        assert set(out[algorithm]["classes"]) == {f"unipo-slot-{s}" for s in slots_in(formulas[algorithm])}


# ---------------------------------------------------------------------------
# spec_reference
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_spec_reference_content(algorithm):
    spec = SPECS[algorithm]
    md = R.spec_reference_markdown(spec, SPECS)
    esc = html.escape
    assert esc(spec.name) in md and esc(spec.full_name) in md and f"<td>{spec.year}</td>" in md
    assert esc(spec.summary) in md and esc(spec.changed) in md
    if spec.paper is None:
        assert "none of its own" in md and spec.references
        for ref in spec.references:
            assert esc(ref.title) in md
    else:
        if spec.paper.arxiv:
            assert f'<a href="https://arxiv.org/abs/{spec.paper.arxiv}">arXiv:{spec.paper.arxiv}</a>' in md
        assert esc(spec.paper.title) in md
    if spec.predecessor:
        assert f"<th>Predecessor</th><td>{esc(SPECS[spec.predecessor].name)}</td>" in md
        assert "## What it changed" in md
    else:
        assert "the family starts here" in md and "## Where it starts" in md
    # the whole objective as one display block, escaped as text
    displays = re.findall(r'<div class="unipo-objective" data-algorithm="[a-z_]+"><div class="arithmatex">(.*?)</div>',
                          md)
    assert len(displays) == 1
    assert html.unescape(displays[0]) == "\\[" + F.objective_latex(spec) + "\\]"
    # one row per slot, in order, with kind, parameters, definition, explanation and terms
    rows = re.findall(r'<tr data-slot="([a-z]+)" class="unipo-slot-row">(.*?)</tr>', md)
    assert [slot for slot, _ in rows] == list(SLOTS)
    for slot, row in rows:
        kind = spec.component(slot)
        assert f"<code>{kind.name}</code>" in row and esc(kind.summary) in row
        assert esc(spec.components[slot].explanation) in row
        tex = kind.latex(spec.params(slot))
        if tex:
            assert '<div class="arithmatex">' + esc("\\[" + tex + "\\]") + "</div>" in row
        else:
            assert "No term in the objective." in row
        for name, value in spec.params(slot).items():
            assert f"<code>{name}</code> = " in row
        for term in kind.terms:
            assert f'title="{esc(spec.tooltip(slot, term))}"' in row
            assert esc("\\(" + term.symbol + "\\)") in row


def test_spec_reference_parameters():
    md = R.spec_reference_markdown(SPECS["dapo"], SPECS)
    assert "<code>eps_high</code> = <code>0.28</code>" in md
    assert "<code>max_rounds</code> = <code>10</code>" in md
    # run-resolved parameters left null in the spec
    assert "<code>max_length</code> = set by the run" in md
    md = R.spec_reference_markdown(SPECS["dr_grpo"], SPECS)
    assert "<code>normalizer</code> = set by the run" in md
    md = R.spec_reference_markdown(SPECS["grpo"], SPECS)
    assert "<code>std_ddof</code> = <code>1</code>" in md and "<code>beta</code> = <code>0.04</code>" in md


def test_spec_reference_links_and_protection():
    protected = []

    def protect(fragment):
        protected.append(fragment)
        return f"TOKEN{len(protected)}"

    links = {"reference/algorithms/ppo.md": "../ppo/", "reference/algorithms/dapo.md": "../dapo/",
             "reference/components.md": "../../components/"}
    md = R.spec_reference_markdown(SPECS["grpo"], SPECS, protect=protect, link=links.get)
    # Markdown around the HTML is only headings and placeholders, each a paragraph of its own
    assert md.split("\n\n") == ["TOKEN1", "## What it changed", "TOKEN2", "## Objective", "TOKEN3", "## Components",
                                "TOKEN4\n"]
    joined = "".join(protected)
    assert '<th>Predecessor</th><td><a href="../ppo/">PPO</a></td>' in joined
    # a page that does not exist is not linked
    assert '<a href="../dapo/">DAPO</a>, Dr. GRPO' in joined
    assert '<a href="../../components/#component-clip-symmetric"><code>symmetric</code></a>' in joined


def _write_spec(tmp_path, data, name=None):
    path = tmp_path / f"{name or data['id']}.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


def test_spec_reference_escapes_everything(tmp_path):
    data = yaml.safe_load((SPEC_DIR / "grpo.yaml").read_text())
    evil = '<script>alert("x")</script> & <b onmouseover=\'1\'>'
    data.update(name=f"GRPO {evil}", full_name=evil, summary=evil, changed=evil, predecessor=None)
    data["paper"]["title"] = evil
    data["paper"]["note"] = evil
    data["components"]["clip"]["explanation"] = evil
    data["components"]["clip"]["tooltips"] = {"clip": evil + '" onclick="x'}
    spec = load_spec(_write_spec(tmp_path, data))
    md = R.spec_reference_markdown(spec, {"grpo": spec})
    assert "<script>" not in md and "<b onmouseover" not in md and '" onclick="x' not in md
    assert md.count("&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &lt;b onmouseover=&#x27;1&#x27;&gt;") >= 7


# ---------------------------------------------------------------------------
# schema_reference
# ---------------------------------------------------------------------------

def test_schema_reference_lists_every_model_and_field():
    md = R.schema_reference_markdown()
    for file_key, schema in json_schema().items():
        slug = R.file_slug(file_key)
        assert f"{{ #schema-{slug} }}" in md
        models = {schema["title"]: schema, **schema.get("$defs", {})}
        for name, model in models.items():
            anchor = f"schema-{slug}-{name.lower()}"
            assert f"### {name} {{ #{anchor} }}" in md
            for field in model.get("properties", {}):
                assert f"<td><code>{field}</code></td>" in md, (name, field)
    assert "<td><code>return</code></td>" in md and "return_" not in md.split("<details")[0]
    assert "<td><code>run_id</code></td><td>string matching <code>^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$</code></td><td>yes</td>" in md
    assert '<td><code>task</code></td><td><a href="#schema-header-taskinfo">TaskInfo</a></td><td>yes</td>' in md
    # bounds as the prose writes them (unipo_build.core.limits), not as raw floats
    assert "<td><code>metrics</code></td><td>object of number within ±10<sup>15</sup> or null</td><td>no</td>" in md
    assert "<td><code>name</code></td><td>string of at most 4,096 characters</td><td>yes</td>" in md
    assert "<td><code>logp</code></td><td>array of number \u2265 \u2212300, \u2264 0.001</td>" in md
    assert "<td><code>explanation</code></td>" not in md  # specs are not run files
    assert "<td><code>clip</code></td><td>array of one of <code>-1</code>, <code>0</code>, <code>1</code></td>" in md
    assert "<td><code>step</code></td><td>integer \u2265 0, \u2264 2<sup>53</sup> \u2212 1</td><td>yes</td>" in md
    assert "Unknown fields are kept" in md


def test_schema_reference_raw_json_schema_is_complete():
    protected = []
    R.schema_reference_markdown(protect=lambda h: protected.append(h) or "X")
    details = [h for h in protected if h.startswith("<details")]
    assert len(details) == 4
    raw = [json.loads(html.unescape(re.search(r'<code class="language-json">(.*)</code>', d, re.S).group(1)))
           for d in details]
    assert raw == list(json_schema().values())


@pytest.mark.parametrize("prop, expected", [
    ({"type": "number"}, "number"),
    ({"anyOf": [{"type": "number"}, {"type": "null"}]}, "number or null"),
    ({"type": "array", "items": {"type": "string"}}, "array of string"),
    ({"type": "integer", "minimum": 0}, "integer \u2265 0"),
    ({"type": "number", "minimum": 0, "maximum": 1}, "number \u2265 0, \u2264 1"),
    ({"type": "number", "exclusiveMinimum": 0}, "number &gt; 0"),
    ({"type": "number", "minimum": -1e15, "maximum": 1e15}, "number within \u00b110<sup>15</sup>"),
    ({"type": "integer", "minimum": -(2**53 - 1), "maximum": 2**53 - 1},
     "integer within \u00b1(2<sup>53</sup> \u2212 1)"),
    ({"type": "string", "maxLength": 4096}, "string of at most 4,096 characters"),
    ({"type": "string", "minLength": 1, "maxLength": 100000}, "string of at least 1 and at most 100,000 characters"),
    ({"enum": ["start", "end"]}, 'one of <code>&quot;start&quot;</code>, <code>&quot;end&quot;</code>'),
    ({"const": "unipo-run/1"}, 'exactly <code>&quot;unipo-run/1&quot;</code>'),
    ({"type": "string", "format": "date-time"}, "string (date-time)"),
    ({"$ref": "#/$defs/Response"}, '<a href="#x-Response">Response</a>'),
    ({"type": "array", "items": {"$ref": "#/$defs/Response"}}, 'array of <a href="#x-Response">Response</a>'),
    ({"type": "object", "additionalProperties": True}, "object"),
    ({}, "any"),
])
def test_type_html(prop, expected):
    assert R.type_html(prop, lambda name: f"#x-{name}") == expected


# ---------------------------------------------------------------------------
# metric_catalogue and component_catalogue
# ---------------------------------------------------------------------------

def test_metric_catalogue():
    out = R.metric_catalogue_html()
    assert out.count("<tr id=") == len(METRICS)
    for name, info in METRICS.items():
        assert f"<td><code>{html.escape(name)}</code></td><td>{html.escape(info.label)}</td>" in out
        assert html.escape(info.description) in out
    assert "<td>reward</td><td>rollout</td><td>better</td>" in out  # reward/mean


def test_component_catalogue():
    md = R.component_catalogue_markdown(SPECS)
    for slot, kinds in S.REGISTRY.items():
        assert f"## `{slot}` {{ #component-{slot} }}" in md
        for name, kind in kinds.items():
            # one tab per kind in its slot's tabs, its heading the anchor the algorithm pages link to
            assert (f'<h3 id="component-{slot}-{name}"><code>{name}</code><a class="headerlink" '
                    f'href="#component-{slot}-{name}" title="Permanent link">&para;</a></h3>') in md
            assert f'{name}<span class="unipo-sr-only"> ({slot})</span></label>' in md
            assert html.escape(kind.summary) in md
            for field, info in kind.params.model_fields.items():
                assert f"<td><code>{field}</code></td>" in md
                if info.description:
                    assert html.escape(info.description) in md
    # defaults and requirements
    assert "<td><code>std_ddof</code></td><td>one of <code>0</code>, <code>1</code></td><td><code>1</code></td>" in md
    assert "<td><code>eps_high</code></td><td>number &gt; 0</td><td><code>0.28</code></td>" in md
    assert "<td><code>beta</code></td><td>number &gt; 0</td><td>required</td>" in md
    assert "Filled in from the run when null." in md
    # formulas shown with defaults, or with the parameters of the first shipped spec using the kind
    assert "Shown with the parameters of GRPO." in md and "Shown with the parameters of PPO." in md
    assert "Used by: GRPO, Dual-clip GRPO, DAPO, CISPO, GMPO, GRPO-TIS, GRPO-MIS, GRPO-MIS (sequence), GSPO, SAPO." in md  # the group z-score, in lineage order
    assert "Used by: Batch-std GRPO." in md  # the group mean over the batch's std
    assert "Used by: GRPO-TIS." in md  # truncated importance sampling
    assert "Used by: GRPO-MIS, GRPO-MIS (sequence)." in md  # masked importance sampling, by token and by response
    assert "Not used by a shipped algorithm." in md  # e.g. the leave-one-out baseline


def test_component_catalogue_links_to_algorithm_pages():
    md = R.component_catalogue_markdown(SPECS, link=lambda target: "../" + target.rsplit("/", 1)[-1][:-3] + "/")
    assert ('Used by: <a href="../grpo/">GRPO</a>, <a href="../dual_clip/">Dual-clip GRPO</a>, <a href="../dapo/">DAPO</a>, '
            '<a href="../cispo/">CISPO</a>, <a href="../gmpo/">GMPO</a>, <a href="../grpo_tis/">GRPO-TIS</a>, <a href="../grpo_mis/">GRPO-MIS</a>, '
            '<a href="../grpo_mis_seq/">GRPO-MIS (sequence)</a>, <a href="../gspo/">GSPO</a>, '
            '<a href="../sapo/">SAPO</a>.') in md


# ---------------------------------------------------------------------------
# Through MkDocs: Jinja leaves macro output alone, the HTML survives Markdown
# ---------------------------------------------------------------------------

@pytest.fixture
def probe_kind():
    """A registered kind whose TeX holds Jinja's delimiters."""
    tex = r"\hat{A}_{i,t}={{r}_i}-\operatorname{mean}\{x\}_{#1}{%raw%}\text{{%- end -%}}"
    S.register("advantage", "jinja_probe", S.NoParams, "Probe {{ not_a_variable }} {% if x %}", lambda p: tex,
               (S.Term("advantage", r"\hat{A}_{i,t}", "tip {# not a comment #}"),))
    yield tex
    del S.REGISTRY["advantage"]["jinja_probe"]


def test_mkdocs_build_keeps_jinja_delimiters_in_macro_output(tmp_path, probe_kind, monkeypatch):
    from mkdocs.commands.build import build
    from mkdocs.config import load_config

    # the project is tmp_path: its specs are found from the MkDocs config's directory
    specs_dir = tmp_path / "data" / "algorithms"
    specs_dir.mkdir(parents=True)
    data = yaml.safe_load((SPEC_DIR / "grpo.yaml").read_text())
    data.update(id="probe", predecessor=None, changed="Changed {{ nothing }} and {% raw %} and {# kept #}.")
    data["components"]["advantage"] = {"kind": "jinja_probe", "explanation": "Explained {{ x }}."}
    _write_spec(specs_dir, data)

    docs = tmp_path / "docs"
    (docs / "reference" / "algorithms").mkdir(parents=True)
    (docs / "index.md").write_text("# Home\n\nA page formula \\(\\frac{#}{n}\\) with `{#` in it.\n")
    (docs / "reference" / "algorithms" / "probe.md").write_text(
        "# Probe\n\nIntro.\n\n{{ spec_reference(\"probe\") }}\n\n!!! note\n\n    {{ metric_catalogue() }}\n")
    (tmp_path / "hook.py").write_text(
        "from unipo_build.site import macros\n"
        "def on_page_content(html, page, config, files):\n"
        "    return macros.restore_protected(page.file.src_uri, html)\n")
    # the project's macros and Markdown extensions; the plain MkDocs theme and the one hook above
    write_mkdocs_config(tmp_path, site_name="probe", strict=True, site_url=None, repo_url=None, extra=None,
                        extra_css=None, theme={"name": "mkdocs"}, plugins=without_search, hooks=["hook.py"],
                        nav=["index.md", "reference/algorithms/probe.md"])
    config = load_config(str(tmp_path / "mkdocs.yml"))
    build(config)
    page = (tmp_path / "site" / "reference" / "algorithms" / "probe" / "index.html").read_text()
    text = html.unescape(page)
    assert "UNIPOHTML" not in page
    assert probe_kind in text  # the kind's TeX, delimiters and all
    assert "Changed {{ nothing }} and {% raw %} and {# kept #}." in text
    assert "Explained {{ x }}." in text and "Probe {{ not_a_variable }} {% if x %}" in text
    assert 'title="tip {# not a comment #}"' in text
    assert "\\[" + F.objective_latex(load_spec(specs_dir / "probe.yaml")) + "\\]" in text
    # inside an admonition too the HTML comes through whole
    assert re.search(r'<div class="admonition note">\s*<p class="admonition-title">Note</p>\s*'
                     r'<div class="md-typeset__scrollwrap">', page)
    home = html.unescape((tmp_path / "site" / "index.html").read_text())
    assert "\\(\\frac{#}{n}\\)" in home


# ---------------------------------------------------------------------------
# The site
# ---------------------------------------------------------------------------

def test_reference_pages_in_the_built_site(built_site):
    pages = {a: built_site / "reference" / "algorithms" / a / "index.html" for a in ALGORITHMS}
    for algorithm, path in pages.items():
        page = path.read_text(encoding="utf-8")
        assert "UNIPOHTML" not in page
        assert page.count('<div class="unipo-objective"') == 1
        assert page.count('class="unipo-slot-row"') == len(SLOTS)
        for href in re.findall(r'<a href="(\.\./[^"#]*)', page):
            target = (path.parent / href).resolve()
            assert (target / "index.html").is_file() or target.is_file(), (algorithm, href)
    grpo = pages["grpo"].read_text(encoding="utf-8")
    assert '<a href="../ppo/">PPO</a>' in grpo
    assert '<a href="../../components/#component-clip-symmetric">' in grpo
    components = (built_site / "reference" / "components" / "index.html").read_text(encoding="utf-8")
    assert 'id="component-clip-symmetric"' in components and "UNIPOHTML" not in components
    schema = (built_site / "reference" / "schema" / "index.html").read_text(encoding="utf-8")
    assert 'id="schema-tokens-tokenarrays"' in schema and '<details class="unipo-json-schema">' in schema
    metrics = (built_site / "reference" / "metrics" / "index.html").read_text(encoding="utf-8")
    assert metrics.count('<tr id="metric-') == len(METRICS)


def test_pages_that_say_which_variants_have_runs_compute_it():
    """Whether the course has a run of dual-clip, CISPO, SAPO, GMPO or batch-std GRPO changes as runs
    ship (each has shipped since its spec did): the welcome page, the objectives chapter and their reference
    pages say it through seed_counts, never in typed prose that a new run would make false."""
    said = {"dual_clip", "cispo", "sapo", "gmpo", "grpo_batch_std"}
    for page in ("docs/index.md", "docs/course/compare/objectives.md",
                 *(f"docs/reference/algorithms/{spec}.md" for spec in sorted(said))):
        words = " ".join((ROOT / page).read_text(encoding="utf-8").split())
        assert not re.search(r"no training run|has a training run", words), page
        assert "{{ seed_counts([" in words, page