"""The Algorithm Explainer: its HTML, and its browser math against the site's numpy math.

unipo_build/site/views/explainer/unipo-math.js (the explainer's math) recomputes a selected token's ratio, clipped surrogate, clip side,
KL and objective (and the group advantage, the aggregation weight, the overlong penalty) from
the logged inputs. node runs it here on every token file of the shipped runs (data/runs, or
UNIPO_RUNS) and on generated inputs that reach every component kind, and each number must
equal unipo_build.core.recompute.breakdown / unipo_build.core.components to 1e-9.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from unipo_build.core import components as C
from unipo_build.core import objective as O
from unipo_build.core.objective import browser_config
from unipo_build.core import runlog
from unipo_build.core.recompute import breakdown
from unipo_build.core.runs import discover, runs_source
from unipo_build.core.schema import TokenArrays
from unipo_build.core.registry import OPTIONAL_SLOTS
from unipo_build.core.specs import REGISTRY, ResolvedAlgorithm, load_specs, resolve
from unipo_build.site.views.explainer.explainer import objective_card, objective_formula
from unipo_build.core.numbers import fmt_num, fmt_objective, fmt_signed
from unipo_build.site.browser import EVENTS

ROOT = Path(__file__).resolve().parents[1]
#: The browser's one math port (explainer, inspector helpers and playgrounds use it).
MATH_JS = ROOT / "unipo_build" / "site" / "views" / "explainer" / "unipo-math.js"
#: The views' shared helpers; in node, their number format.
COMMON_JS = ROOT / "unipo_build" / "site" / "views" / "views-common.js"
NODE = shutil.which("node")
TOL = 1e-9

needs_node = pytest.mark.skipif(NODE is None, reason="node is not installed")

# Reads {"calls": [[function, args...], ...]} on stdin and prints the results as JSON.
RUNNER = r"""
const m = require(process.argv[1]);
let input = "";
process.stdin.on("data", (d) => (input += d));
process.stdin.on("end", () => {
  const { calls } = JSON.parse(input);
  const out = calls.map(([fn, ...args]) => m[fn](...args));
  process.stdout.write(JSON.stringify(out));
});
"""


def run_js(calls: list, script: Path = MATH_JS) -> list:
    proc = subprocess.run([NODE, "-e", RUNNER, str(script)], input=json.dumps(calls and {"calls": calls}),
                          capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def _tokens_json(tokens: TokenArrays) -> dict:
    return tokens.model_dump(mode="json", by_alias=True)


def _assert_breakdown_equal(js: dict, py, where: str) -> None:
    for name in ("ratio", "surrogate", "objective"):
        np.testing.assert_allclose(np.asarray(js[name], dtype=float), np.asarray(getattr(py, name), dtype=float),
                                   rtol=0, atol=TOL, err_msg=f"{where}: {name}")
    assert [int(x) for x in js["clip_side"]] == [int(x) for x in py.clip_side], f"{where}: clip side"
    if py.kl is None:
        assert js["kl"] is None, where
    else:
        np.testing.assert_allclose(np.asarray(js["kl"], dtype=float), np.asarray(py.kl, dtype=float), rtol=0, atol=TOL,
                                   err_msg=f"{where}: kl")
    assert js["eps_low"] == py.eps_low and js["eps_high"] == py.eps_high, where


# ---------------------------------------------------------------------------
# Real token files
# ---------------------------------------------------------------------------

def _real_cases(limit_per_run: int = 6):
    """(where, config, tokens) for the responses of up to ``limit_per_run`` token files per run."""
    cases = []
    for run in discover():
        if not run.ok or run.config is None:
            continue
        steps = run.token_steps()
        # first, last and evenly spaced steps: early (ratio 1) and late (clipping) updates
        picked = sorted(set(steps[:: max(1, len(steps) // limit_per_run)][:limit_per_run] + steps[-2:]))
        for step in picked:
            detail = runlog.read_step_detail(run.path, step)
            for group in detail.prompts:
                for response in group.responses:
                    if response.tokens is not None:
                        where = f"{run.id} step {step} group {group.index} response {response.index}"
                        cases.append((where, run.config, response.tokens))
    return cases


@pytest.mark.specs
@needs_node
def test_js_breakdown_equals_numpy_on_real_token_files():
    cases = _real_cases()
    if not cases:
        pytest.skip(f"no run with token files in {runs_source().describe()} (train one or set UNIPO_RUNS)")
    results = run_js([["breakdown", browser_config(cfg), _tokens_json(tokens)] for _, cfg, tokens in cases])
    for (where, cfg, tokens), js in zip(cases, results):
        _assert_breakdown_equal(js, breakdown(cfg, tokens), where)
        # and both equal the log (to the log's float32 precision)
        np.testing.assert_allclose(js["objective"], tokens.objective, rtol=1e-4, atol=1e-6, err_msg=where)


@pytest.mark.specs
@needs_node
def test_js_group_advantage_equals_numpy_on_real_groups():
    """The explainer derives a response's advantage from its group's logged rewards."""
    calls, expected = [], []
    for run in discover():
        if not run.ok or run.config is None or run.config.kind("advantage") not in ("group_zscore", "group_mean"):
            continue
        for step in run.token_steps()[:4]:
            for group in runlog.read_step_detail(run.path, step).prompts:
                if group.filtered or any(r.tokens is None for r in group.responses):
                    continue
                rewards = [r.reward for r in group.responses]
                if run.config.kind("advantage") == "group_zscore":
                    ddof, eps = run.config.param("advantage", "std_ddof"), run.config.param("advantage", "eps")
                    calls.append(["groupZscoreAdvantage", rewards, ddof, eps])
                    expected.append(C.group_zscore_advantage(np.asarray([rewards]), std_ddof=ddof, eps=eps)[0])
                else:
                    calls.append(["groupMeanAdvantage", rewards])
                    expected.append(C.group_mean_advantage(np.asarray([rewards]))[0])
                # the logged advantages were computed in float32 by the trainer
                np.testing.assert_allclose(expected[-1], [r.advantage for r in group.responses], rtol=1e-5, atol=1e-6)
    if not calls:
        pytest.skip(f"no group-advantage run with token files in {runs_source().describe()}")
    for js, py in zip(run_js(calls), expected):
        np.testing.assert_allclose(js, py, rtol=0, atol=TOL)


# ---------------------------------------------------------------------------
# Generated inputs that reach every kind
# ---------------------------------------------------------------------------

def _config(base: str, **changes) -> ResolvedAlgorithm:
    cfg = resolve(load_spec_by_id(base), max_new_tokens=32).model_dump()
    for slot, (kind, params) in changes.items():
        cfg["components"][slot] = {"kind": kind, "params": params}
    return ResolvedAlgorithm.model_validate(cfg)


def load_spec_by_id(spec_id: str):
    return load_specs()[spec_id]


def _random_tokens(rng: np.random.Generator, n: int, *, with_ref: bool, with_kl: bool, padded: int = 0) -> TokenArrays:
    old = rng.uniform(-6, -0.01, n)
    logp = np.minimum(old + rng.normal(0, 0.4, n), -1e-4)
    adv = np.full(n, rng.choice([-1.3, -0.4, 0.0, 0.7, 2.1])) if rng.random() < 0.7 else rng.normal(0, 1, n)
    mask = np.ones(n, dtype=int)
    if padded:
        mask[-padded:] = 0
    return TokenArrays(
        ids=list(range(n)), text=[f"t{i}" for i in range(n)], logp=logp.tolist(), old_logp=old.tolist(),
        ref_logp=np.minimum(old + rng.normal(0, 0.3, n), -1e-4).tolist() if with_ref else None,
        advantage=adv.tolist(), kl=rng.uniform(-0.2, 0.4, n).tolist() if with_kl else None,
        ratio=[1.0] * n, clip=[0] * n, weight=[0.01] * n, objective=[0.0] * n, mask=mask.tolist())


CONFIGS = {
    "reinforce": lambda: _config("reinforce"),
    "ppo": lambda: _config("ppo"),
    "grpo": lambda: _config("grpo"),
    "dapo": lambda: _config("dapo"),
    "dr_grpo": lambda: _config("dr_grpo"),
    "grpo_k1": lambda: _config("grpo", kl=("in_loss", {"estimator": "k1", "beta": 0.1})),
    "grpo_k2": lambda: _config("grpo", kl=("in_loss", {"estimator": "k2", "beta": 0.05})),
    "gspo": lambda: _config("grpo", ratio=("sequence", {}), clip=("asymmetric", {"eps_low": 0.0003, "eps_high": 0.0004})),
    "ppo_no_clip": lambda: _config("ppo", clip=("none", {})),
    # DPPO's mask reads each token's old log-prob (the breakdown passes it to the clip's port)
    "grpo_dppo": lambda: _config("grpo", clip=("dppo_mask", {"delta_low": 0.1, "delta_high": 0.1})),
}


@needs_node
@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_js_breakdown_equals_numpy_on_every_kind(name):
    cfg = CONFIGS[name]()
    rng = np.random.default_rng(sum(map(ord, name)))
    with_ref = cfg.kind("kl") != "none"
    cases = [_random_tokens(rng, int(rng.integers(1, 40)), with_ref=with_ref, with_kl=cfg.kind("kl") == "in_reward",
                            padded=int(rng.integers(0, 3)) if i % 3 == 0 else 0) for i in range(40)]
    results = run_js([["breakdown", browser_config(cfg), _tokens_json(t)] for t in cases])
    clip_sides = set()
    for i, (tokens, js) in enumerate(zip(cases, results)):
        py = breakdown(cfg, tokens)
        _assert_breakdown_equal(js, py, f"{name} case {i}")
        clip_sides.update(int(x) for x in py.clip_side)
    if cfg.kind("clip") != "none":
        assert clip_sides == {-1, 0, 1}, f"{name}: the generated cases should reach both clip sides"


@needs_node
def test_js_advantages_penalty_and_weights_equal_components():
    rng = np.random.default_rng(7)
    groups = [rng.integers(0, 2, 8).astype(float).tolist() for _ in range(20)]
    groups += [[1.0] * 8, [0.0] * 8, [0.3, 0.3, 0.3], [0.1, 0.2], rng.normal(0, 1, 5).tolist()]
    calls, expected = [], []
    for g in groups:
        arr = np.asarray([g])
        for ddof in (0, 1):
            for eps in (1e-6, 0.0):
                calls.append(["groupZscoreAdvantage", g, ddof, eps])
                expected.append(C.group_zscore_advantage(arr, std_ddof=ddof, eps=eps)[0])
        calls.append(["groupMeanAdvantage", g])
        expected.append(C.group_mean_advantage(arr)[0])
        calls.append(["leaveOneOutAdvantage", g])
        expected.append(C.leave_one_out_advantage(arr)[0])
    for length in (1, 10, 23, 24, 25, 31, 32, 33, 40):
        calls.append(["overlongPenalty", length, 32, 8])
        expected.append(C.overlong_penalty(np.asarray([length]), 32, 8)[0])
    # aggregation weights for a minibatch of responses of these lengths
    lengths = [3, 7, 12, 32]
    mask = (np.arange(32)[None, :] < np.asarray(lengths)[:, None]).astype(float)
    for kind in tuple(REGISTRY["aggregation"]):
        w = O.aggregation_weights(kind, mask, normalizer=32)
        cfg = browser_config(_config("dr_grpo", aggregation=(kind, {"normalizer": 32} if kind == "constant_normalizer" else {})))
        for i, n in enumerate(lengths):
            calls.append(["tokenWeight", cfg, {"responses": len(lengths), "length": n, "tokens": int(mask.sum())}])
            expected.append(w[i, 0])
    for js, py in zip(run_js(calls), expected):
        np.testing.assert_allclose(js, py, rtol=0, atol=TOL)


@needs_node
def test_every_registered_function_has_its_port():
    """The browser dispatches on the core/components.py function a kind names: each has a port. (A
    token-level advantage, GAE or a return, is shown from the log: it needs the critic and the
    whole response, so the browser does not recompute it.)"""
    names = {k.fn.__name__ for kinds in REGISTRY.values() for k in kinds.values()
             if k.fn is not None and (k.slot != "advantage" or k.group_baseline)}
    proc = subprocess.run([NODE, "-e", "process.stdout.write(JSON.stringify(Object.keys(require(process.argv[1]).FUNCTIONS)))",
                           str(MATH_JS)], capture_output=True, text=True, timeout=60, check=True)
    ported = set(json.loads(proc.stdout))
    assert names <= ported, f"no JS port of: {sorted(names - ported)}"


@needs_node
def test_js_number_format_matches_python():
    values = [0.0, 1.0, -1.0, 0.5, 1e-6, -1.5e-4, 0.0012345, 0.7246, -0.7246, 12.5, 1234.0, 12345.6, 1.0e-9,
              3.14159, -2.5e7, 0.001, 1 / 3]
    js = run_js([["fmt", v] for v in values], COMMON_JS)
    assert js == [fmt_num(v, 4) for v in values]
    # the signed and objective forms the inspector prints are ports of numbers.fmt_signed / fmt_objective
    js = run_js([["fmtSigned", v, 4] for v in values] + [["fmtObjective", v, True] for v in values], COMMON_JS)
    assert js == [fmt_signed(v, 4) for v in values] + [fmt_objective(v, 4, signed=True) for v in values]


# ---------------------------------------------------------------------------
# The card's HTML
# ---------------------------------------------------------------------------

def test_objective_formula_wraps_every_present_slot():
    specs = load_specs()
    for sid, spec in specs.items():
        tex = objective_formula(spec)
        for slot, comp in spec.components.items():
            present = comp.kind != "none" or slot in ("ratio", "clip", "aggregation", "advantage")
            if slot == "ratio" and spec.components["clip"].kind == "geo_mean":
                # GMPO's objective line holds the ratio only inside c_{i,u}, the clip card's clipped log-ratio
                present = False
            assert (f"unipo-slot-{slot}" in tex) == present, (sid, slot)
        assert tex.count("{") == tex.count("}"), sid


def test_objective_card_has_tooltips_cards_and_parts():
    spec = load_specs()["grpo"]
    html = objective_card(spec, uid="card-test")
    for slot, comp in spec.components.items():
        if comp.kind == OPTIONAL_SLOTS.get(slot):  # an optional slot at its default (no correction) is not shown
            continue
        assert f'data-slot="{slot}"' in html
        for term in REGISTRY[slot][comp.kind].terms:
            tip = comp.tooltips.get(term.key, term.tooltip)
            escaped = tip.replace("&", "&amp;").replace('"', "&quot;").replace("'", "&#x27;").replace("<", "&lt;").replace(">", "&gt;")
            assert f'title="{escaped}"' in html, (slot, term.key)
            assert f'role="tooltip" class="unipo-tooltip" id="card-test-{slot}-t' in html
    for card in ("token", "aggregation", "filter", "shaping"):
        assert f'data-card="{card}"' in html
    # the decomposition: optimisation target (ratio) times strength (advantage), then constraints
    assert "Optimisation target: importance ratio" in html and "Strength: advantage" in html
    # the implicit weights of the aggregations, this algorithm's marked
    for kind in ("seq_mean_token_mean", "token_mean", "constant_normalizer", "seq_mean_token_sum"):
        assert f"<code>{kind.replace('_', '_<wbr>')}</code>" in html
    assert html.count('class="unipo-current"') == 1
    data = json.loads(re.search(r'<template class="unipo-data" id="[^"]+-data" data-search-exclude>(.*?)</template>', html).group(1))
    assert data["algorithm"] == "grpo" and data["config"]["components"]["kl"]["params"]["beta"] == 0.04


def test_objective_card_shows_the_runs_resolved_parameters():
    spec = load_specs()["dr_grpo"]
    html = objective_card(spec, config=resolve(spec, max_new_tokens=48), run_id="some-run")
    assert "L=48" in html and 'data-run="some-run"' in html
    assert "max new tokens" not in html.split("unipo-explainer-formula")[1].split("</div>")[0]
    plain = objective_card(spec)
    assert r"L=\text{max new tokens}" in plain


def test_objective_card_escapes_spec_text(monkeypatch):
    spec = load_specs()["grpo"].model_copy(deep=True)
    spec.components["clip"].explanation = "<script>alert(1)</script>"
    spec.summary = '"><img src=x onerror=alert(1)>'
    html = objective_card(spec)
    assert "<script>alert(1)" not in html and "<img src=x" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html


# ---------------------------------------------------------------------------
# The template engine of a kind's explainer data (registry.explain) in node
# ---------------------------------------------------------------------------

from unipo_build.core.registry import expression_problem  # noqa: E402

EXPLAINER_JS = ROOT / "unipo_build" / "site" / "views" / "explainer" / "explainer.js"
# explainer.js with the page's globals stubbed: its template engine, V.explainTemplates.
ENGINE = r"""
const common = require(process.argv[1]);
globalThis.UNIPO_MATH = require(process.argv[2]);
const events = JSON.parse(process.argv[4]); // the page's browser data (site/browser.py EVENTS)
globalThis.UNIPOViews = Object.assign({ el: () => ({}), readData: () => null, findToken: () => null, events }, common);
globalThis.UNIPO = { register: () => {}, events };
globalThis.document = { addEventListener: () => {} };
require(process.argv[3]);
const T = globalThis.UNIPOViews.explainTemplates;
let input = "";
process.stdin.on("data", (d) => (input += d));
process.stdin.on("end", () => {
  const out = JSON.parse(input).map(([sort, src, names]) => {
    const scope = (name) => { if (!(name in names)) throw new Error("unknown name " + name); return names[name]; };
    try {
      return { ok: sort === "fill" ? T.fill(src, scope) : T.evaluate(src, scope) };
    } catch (err) {
      return { error: err.message };
    }
  });
  process.stdout.write(JSON.stringify(out));
});
"""


def run_engine(cases: list) -> list:
    proc = subprocess.run([NODE, "-e", ENGINE, str(COMMON_JS), str(MATH_JS), str(EXPLAINER_JS), json.dumps(EVENTS)],
                          input=json.dumps(cases),
                          capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


NAMES = {"token.advantage": -0.5, "token.value": None, "calc.ratio": 1.25, "params.beta": 0.04, "params.std_ddof": 1,
         "params.estimator": "k3", "group.rewards": [1, 0, 0, 1], "group.size": 4, "response.reward": 1,
         "step.filtered_groups": [{"index": 3, "n_correct": 0, "size": 4}, {"index": 7, "n_correct": 4, "size": 4}]}


@needs_node
@pytest.mark.parametrize("expr, value", [
    ("-params.beta * calc.ratio", -0.05),  # unary minus binds to its operand: (-0.04) x 1.25
    ("1 + 2 * 3 - 4 / 2", 5),
    ("token.value * 2", None),  # arithmetic on a value the log lacks is null
    ("has(token.value) ? 1 : token.advantage", -0.5),
    ("!(has(token.value) && has(token.advantage))", True),
    ("params.estimator == 'k3' && group.size > 3", True),
    ("token.value < 1", False),  # an ordering with a missing value is false
    ("max(group.rewards) == min(group.rewards)", False),
    ("mean(group.rewards)", 0.5),
    ("std(group.rewards, params.std_ddof)", (1 / 3) ** 0.5),  # sample std of 1, 0, 0, 1: sqrt(1/3)
    ("round(1 / 0.0625)", 16),
    ("count(step.filtered_groups)", 2),
])
def test_the_engine_evaluates_what_the_registry_accepts(expr, value):
    assert expression_problem(expr) is None
    (got,) = run_engine([["evaluate", expr, NAMES]])
    assert "ok" in got, got
    assert got["ok"] == (pytest.approx(value) if isinstance(value, float) else value)


@needs_node
@pytest.mark.parametrize("expr", ["group.size >", "(calc.ratio", "has(token.value", "calc.ratio calc.ratio",
                                  "1 < 2 < 3", "token.advantage ? 1", "calc.ratio # 2", "* 2"])
def test_the_engine_refuses_what_the_registry_refuses(expr):
    """registry.expression_problem reads the grammar explainer.js evaluates: what one refuses, the other does."""
    assert expression_problem(expr) is not None
    (got,) = run_engine([["evaluate", expr, NAMES]])
    assert "error" in got, got


@needs_node
def test_the_engine_fills_templates_as_the_site_writes_numbers():
    cases = [["fill", "Rewards: {nums(group.rewards)} (this response: {response.reward}); n \u2212 1 = {raw(group.size - 1)}", NAMES],
             ["fill", "dropped {raw(count(step.filtered_groups))}: {join(step.filtered_groups, 'group {raw(index)} "
                      "({raw(n_correct)}/{raw(size)} correct)', ', ')}.", NAMES],
             ["fill", "\u03b2 {params.beta}, ratio {calc.ratio}, std {std(group.rewards, params.std_ddof)}, {fmtq(1e-9)}", NAMES],
             ["fill", "{raw(token.value)} and {token.value}", NAMES]]
    got = [c.get("ok", c.get("error")) for c in run_engine(cases)]
    assert got == ["Rewards: 1, 0, 0, 1 (this response: 1); n \u2212 1 = 3",
                   "dropped 2: group 3 (0/4 correct), group 7 (4/4 correct).",
                   "\u03b2 0.04, ratio 1.25, std 0.5774, 0*",
                   "\u2013 and \u2013"]


@needs_node
def test_js_breakdown_gives_dppos_probability_change():
    """The DPPO mask's explainer rows read calc.prob_change, pi_old (rho - 1), from the breakdown: by hand,
    probabilities 0.5 -> 0.75 (+0.25, A > 0: masked high) and 0.9 -> 0.63 (-0.27, A < 0: masked low), the padding 0."""
    cfg = CONFIGS["grpo_dppo"]()
    tokens = TokenArrays(ids=[1, 2, 3], text=["a", "b", "c"], logp=np.log([0.75, 0.63, 0.5]).tolist(),
                         old_logp=np.log([0.5, 0.9, 0.5]).tolist(), ref_logp=np.log([0.75, 0.63, 0.5]).tolist(),
                         advantage=[1.0, -1.0, 1.0], ratio=[1.0] * 3,
                         clip=[0] * 3, weight=[0.1] * 3, objective=[0.0] * 3, mask=[1, 1, 0])
    js = run_js([["breakdown", browser_config(cfg), _tokens_json(tokens)]])[0]
    np.testing.assert_allclose(js["prob_change"], [0.25, -0.27, 0.0], rtol=0, atol=1e-12)
    assert js["clip_side"] == [1, -1, 0] and js["surrogate"] == [0, 0, 0]
    # a clip that does not read the probability has none
    assert run_js([["breakdown", browser_config(CONFIGS["grpo"]()), _tokens_json(tokens)]])[0]["prob_change"] is None
