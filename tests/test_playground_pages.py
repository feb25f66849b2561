"""The playground pages as built: budget, prose numbers, specs that compile, controls that exist."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from unipo_build.site.playgrounds import charts
from unipo_build.core.numbers import fmt_fixed, fmt_pct
from unipo_build.site.playgrounds import macros as pg_macros

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs" / "playgrounds"
PAGES = {"objective-1d": "objective", "gdpo": "gdpo", "loss-shapes": "shapes"}
FIGURES = {"objective-1d": ["axis", "surface", "band"], "gdpo": ["advantages", "toy"],
           "loss-shapes": ["shapes", "aggregation"]}
PAGE_BUDGET = 500_000  # bytes: a page's own HTML with its inline data


def prose_only(markdown: str) -> str:
    """The Markdown with macro calls, Jinja tags, formulas, code and HTML attributes removed."""
    text = re.sub(r"^---\n.*?\n---\n", "", markdown, flags=re.S)
    text = re.sub(r"\{\{.*?\}\}", " ", text, flags=re.S)
    text = re.sub(r"\{%.*?%\}", " ", text, flags=re.S)
    text = re.sub(r"\\\[.*?\\\]", " ", text, flags=re.S)
    text = re.sub(r"\\\(.*?\\\)", " ", text, flags=re.S)
    text = re.sub(r"`[^`]*`", " ", text)
    text = re.sub(r"<[^>]+>", " ", text)
    return text


@pytest.mark.parametrize("page", sorted(PAGES))
def test_every_decimal_in_the_prose_comes_from_a_macro(page):
    prose = prose_only((DOCS / f"{page}.md").read_text(encoding="utf-8"))
    # arXiv ids (2305.18290) are names, not quantities
    prose = re.sub(r"arXiv \d{4}\.\d{4,5}", " ", prose)
    assert re.findall(r"\d+\.\d+", prose) == []


def test_number_formatting():
    assert fmt_fixed(-0.70710678, 4) == "\u22120.7071"
    assert fmt_fixed(0.70710678, 4, signed=True) == "+0.7071"
    assert fmt_fixed(-0.0001, 2) == "0.00"
    assert fmt_pct(0.990099, 0) == "99%"


def test_two_rollout_table_quotes_the_computed_numbers():
    table = pg_macros.two_rollout_table()
    assert table.count("\u22120.7071, +0.7071") == 5  # GRPO three times, GDPO's sums twice
    assert "\u22121.4142, +1.4142" in table


@pytest.mark.parametrize("page, controls", [
    ("objective", ["preset", "beta", "nSamples", "groupSize", "eps", "steps", "seed"]),
    ("gdpo", ["toyGroup", "toyWeights", "toySeed"]),
    ("shapes", ["eps", "eps_low", "eps_high", "other_len"]),
])
def test_controls_render_with_their_defaults(page, controls):
    html = pg_macros.controls_html(page, *controls)
    for name in controls:
        assert f'data-pg-control="{name}"' in html
    with pytest.raises(KeyError):
        pg_macros.controls_html(page, "no-such-control")


def test_objective_defaults_are_slider_stops():
    table = pg_macros.CONTROLS["objective"]()
    for control in table.values():
        if control.choices:
            assert control.default in control.choices, control.name


@pytest.mark.skipif(shutil.which("node") is None or not (ROOT / "node_modules" / "vega-lite").is_dir(),
                    reason="needs node and node_modules/vega-lite (npm ci)")
def test_specs_compile_without_warnings(tmp_path):
    specs = {name: pg_macros.figure_spec(name) for names in FIGURES.values() for name in names}
    (tmp_path / "specs.json").write_text(json.dumps(specs), encoding="utf-8")
    script = f"""
import * as vl from {json.dumps(str(ROOT / "node_modules" / "vega-lite" / "build" / "index.js"))};
import fs from 'fs';
const specs = JSON.parse(fs.readFileSync({json.dumps(str(tmp_path / "specs.json"))}, 'utf8'));
const out = {{}};
for (const [name, spec] of Object.entries(specs)) {{
  const msgs = [];
  const logger = {{ level() {{ return this; }}, info() {{}}, debug() {{}},
    warn: (...a) => msgs.push(a.join(' ')), error: (...a) => msgs.push('error ' + a.join(' ')) }};
  try {{ vl.compile(spec, {{ logger }}); }} catch (e) {{ msgs.push('throws ' + e.message); }}
  out[name] = msgs;
}}
process.stdout.write(JSON.stringify(out));
"""
    (tmp_path / "compile.mjs").write_text(script, encoding="utf-8")
    proc = subprocess.run(["node", str(tmp_path / "compile.mjs")], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == {name: [] for name in specs}


def test_method_colours_are_distinct_where_methods_meet():
    on_objective = [charts.METHOD_COLOURS[m] for m in ("exact", "pg", "ppo", "grpo", "dpo", "dro")]
    on_shapes = [charts.METHOD_COLOURS[m] for m in ("reinforce", "grpo", "dapo", "dr_grpo", "gspo")]
    assert len(set(on_objective)) == 6 and len(set(on_shapes)) == 5
    assert charts.METHOD_COLOURS["grpo"] != charts.METHOD_COLOURS["gdpo"]


@pytest.mark.parametrize("page", sorted(PAGES))
def test_built_page_is_within_budget_and_has_its_figures(built_site, page):
    html_path = built_site / "playgrounds" / page / "index.html"
    html = html_path.read_text(encoding="utf-8")
    assert len(html.encode("utf-8")) < PAGE_BUDGET
    for figure in FIGURES[page]:
        assert f'data-pg-chart="{figure}"' in html
    assert f'id="pg-data-{PAGES[page]}"' in html
    assert "UNIPOHTML" not in html
    # no Markdown leaked into the controls or the data (the macros' HTML is protected)
    assert "<em>" not in html.split('class="pg-controls"', 1)[-1].split("</div>", 1)[0]
