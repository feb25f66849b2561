"""The clip slot's three surrogates beyond PPO's: CISPO, dual-clip and SAPO, with hand-worked numbers.

Each token below is one (ratio, advantage) pair written as log-probabilities, logp - old_logp =
log(rho), so the ratio is exact. The expected values are worked out by hand in each test's
docstring from the papers' formulas (not by calling the code another way); the gradient is the
derivative of the token's term with respect to its log-probability, d ell / d logp, taken by
torch's autograd through the same composed objective the trainer calls.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from unipo_build.core import objective as O
from unipo_build.core import recompute
from unipo_build.core.formula import objective_latex
from unipo_build.core.project import spec_dir
from unipo_build.core.registry import REGISTRY, check_explainable, explainer_problem
from unipo_build.core.schema import TokenArrays
from unipo_build.core.specs import SpecError, load_spec, resolve

SPEC_DIR = spec_dir()
TOL = 1e-12


def cfg(spec_id: str, **clip_params):
    """The shipped spec resolved as a run resolves it, with the clip's parameters changed."""
    resolved = resolve(load_spec(SPEC_DIR / f"{spec_id}.yaml"), max_new_tokens=8).model_dump()
    resolved["components"]["clip"]["params"].update(clip_params)
    return type(resolve(load_spec(SPEC_DIR / f"{spec_id}.yaml"), max_new_tokens=8)).model_validate(resolved)


def terms_and_grad(c, ratios, advantages):
    """(surrogate, clip side, d surrogate / d logp) of one response whose tokens have these ratios."""
    old = torch.full((1, len(ratios)), -1.0, dtype=torch.float64)
    logp = (old + torch.log(torch.tensor([ratios], dtype=torch.float64))).requires_grad_(True)
    adv = torch.tensor([advantages], dtype=torch.float64)
    mask = torch.ones_like(adv)
    terms = O.token_terms(c, logp=logp, old_logp=old, advantages=adv, mask=mask,
                          ref_logp=old if O.uses_reference(c) else None)
    terms.surrogate.sum().backward()
    return terms.surrogate.detach()[0].tolist(), terms.clip_side[0].tolist(), logp.grad[0].tolist()


# ---------------------------------------------------------------------------
# CISPO
# ---------------------------------------------------------------------------

def test_cispo_clips_the_weight_and_keeps_every_gradient():
    """CISPO as shipped (no lower bound, eps_high 0.28), w = sg[min(rho, 1.28)], ell = w A,
    d ell / d logp = w A:

    - rho 1.5, A 2 (clipped): w = min(1.5, 1.28) = 1.28; ell = 1.28 x 2 = 2.56; side +1; gradient
      1.28 x 2 = 2.56. PPO's clip (DAPO's bounds) gives the same value, min(3.0, 2.56) = 2.56, but
      gradient 0: the clipped branch is constant.
    - rho 0.9, A -1 (unclipped): w = 0.9; ell = -0.9; side 0; gradient 0.9 x -1 = -0.9.
    - rho 0.5, A -1 (no lower bound): w = 0.5; ell = -0.5; side 0; gradient -0.5. (PPO at
      eps_low 0.2: min(-0.5, 0.8 x -1) = -0.8, clipped low, gradient 0.)
    """
    value, side, grad = terms_and_grad(cfg("cispo"), [1.5, 0.9, 0.5], [2.0, -1.0, -1.0])
    np.testing.assert_allclose(value, [2.56, -0.9, -0.5], rtol=0, atol=TOL)
    assert side == [1, 0, 0]
    np.testing.assert_allclose(grad, [2.56, -0.9, -0.5], rtol=0, atol=TOL)
    _, ppo_side, ppo_grad = terms_and_grad(cfg("dapo"), [1.5, 0.9, 0.5], [2.0, -1.0, -1.0])
    assert ppo_side == [1, 0, -1] and ppo_grad[0] == 0.0 and ppo_grad[2] == 0.0


def test_cispo_with_a_lower_bound():
    """eps_low 0.2, w = sg[clip(rho, 0.8, 1.28)]:

    - rho 0.5, A -1: w = max(0.5, 0.8) = 0.8; ell = 0.8 x -1 = -0.8; side -1 (where PPO's clip would
      silence it: A < 0 below 0.8); gradient -0.8, a capped weight, not a silenced token.
    - rho 0.5, A 1: the same w = 0.8; ell = 0.8; side 0 (PPO would not clip a positive advantage
      here either); gradient 0.8.
    - rho 2, A -1: w = 1.28; ell = -1.28; side 0 (PPO's min keeps rho A here); gradient -1.28.
    - rho 1.1, A 1: w = 1.1; ell = 1.1; side 0; gradient 1.1.
    """
    value, side, grad = terms_and_grad(cfg("cispo", eps_low=0.2), [0.5, 0.5, 2.0, 1.1], [-1.0, 1.0, -1.0, 1.0])
    np.testing.assert_allclose(value, [-0.8, 0.8, -1.28, 1.1], rtol=0, atol=TOL)
    assert side == [-1, 0, 0, 0]
    np.testing.assert_allclose(grad, [-0.8, 0.8, -1.28, 1.1], rtol=0, atol=TOL)


# ---------------------------------------------------------------------------
# Dual-clip
# ---------------------------------------------------------------------------

def test_dual_clip_floors_a_negative_advantage_token():
    """Dual clip as shipped: eps 0.2 both sides, c = 3.

    - rho 4, A -2 (the floor wins): PPO's term min(4 x -2, 1.2 x -2) = min(-8, -2.4) = -8; the floor
      3 x -2 = -6; max(-8, -6) = -6; side +1; gradient 0 (a constant).
    - rho 2, A -1 (negative, not floored): min(-2, 1.2 x -1) = -2; floor -3; max(-2, -3) = -2; side 0;
      gradient d(rho A)/d logp = rho A = -2.
    - rho 1.5, A 1 (clipped high, as PPO): min(1.5, 1.2) = 1.2; side +1; gradient 0.
    - rho 1.1, A 1 (unclipped): 1.1; side 0; gradient 1.1.
    """
    value, side, grad = terms_and_grad(cfg("dual_clip"), [4.0, 2.0, 1.5, 1.1], [-2.0, -1.0, 1.0, 1.0])
    np.testing.assert_allclose(value, [-6.0, -2.0, 1.2, 1.1], rtol=0, atol=TOL)
    assert side == [1, 0, 1, 0]
    np.testing.assert_allclose(grad, [0.0, -2.0, 0.0, 1.1], rtol=0, atol=TOL)


def test_dual_clip_is_grpo_below_c():
    """Below rho = c every token's term is GRPO's: the same values on ratios in [0.5, 2.5]."""
    rng = np.random.default_rng(0)
    ratios, advs = rng.uniform(0.5, 2.5, 40).tolist(), rng.normal(0, 1, 40).tolist()
    dual, dual_side, _ = terms_and_grad(cfg("dual_clip"), ratios, advs)
    grpo, grpo_side, _ = terms_and_grad(cfg("grpo"), ratios, advs)
    np.testing.assert_allclose(dual, grpo, rtol=0, atol=TOL)
    assert dual_side == grpo_side


# ---------------------------------------------------------------------------
# SAPO
# ---------------------------------------------------------------------------

def test_sapo_gate_by_hand():
    """SAPO as shipped: f(rho) = (4/tau) sigma(tau (rho - 1)), tau 1 for A > 0, 1.05 otherwise;
    ell = f(rho) A; d ell / d logp = 4 sigma (1 - sigma) rho A.

    - rho 1, A 1: sigma(0) = 1/2, f = 4 x 1/2 = 2; ell = 2; gradient 4 x 1/2 x 1/2 x 1 = 1 (what
      rho A has at rho = 1).
    - rho 1 + ln 3, A 1 (far outside PPO's range): sigma(ln 3) = 3/(3+1) = 3/4, f = 4 x 3/4 = 3;
      ell = 3; gradient 4 x 3/4 x 1/4 x (1 + ln 3) = 0.75 x 2.0986123 = 1.5739592. PPO's clip
      (eps 0.2) would give this token gradient 0.
    - rho 1, A -1 (tau 1.05): f = (4/1.05) x 1/2 = 1.9047619; ell = -1.9047619; gradient
      4 x 1/4 x 1 x -1 = -1 (the slope at rho = 1 is 1 whatever tau).
    Nothing is clipped: every side is 0.
    """
    rho_far = 1 + math.log(3)
    value, side, grad = terms_and_grad(cfg("sapo"), [1.0, rho_far, 1.0], [1.0, 1.0, -1.0])
    np.testing.assert_allclose(value, [2.0, 3.0, -4 / 1.05 / 2], rtol=0, atol=TOL)
    assert side == [0, 0, 0]
    np.testing.assert_allclose(grad, [1.0, 0.75 * rho_far, -1.0], rtol=0, atol=TOL)
    assert abs(0.75 * rho_far - 1.5739592) < 1e-7


# ---------------------------------------------------------------------------
# The rest of the path: numpy recomputation, specs, formula, explainer, the browser's port
# ---------------------------------------------------------------------------

def _tokens(c, ratios, advantages) -> TokenArrays:
    """A logged response as the trainer writes it: its outputs from the torch objective."""
    n = len(ratios)
    old = [-2.0] * n  # log-probabilities stay below 0 for ratios up to e^2
    logp = [o + math.log(r) for o, r in zip(old, ratios)]
    t = O.token_terms(c, logp=torch.tensor([logp], dtype=torch.float64), old_logp=torch.tensor([old], dtype=torch.float64),
                      advantages=torch.tensor([advantages], dtype=torch.float64), mask=torch.ones(1, n, dtype=torch.float64),
                      ref_logp=torch.tensor([old], dtype=torch.float64) if O.uses_reference(c) else None)
    return TokenArrays(ids=list(range(n)), text=[f"t{i}" for i in range(n)], logp=logp, old_logp=old,
                       ref_logp=old if O.uses_reference(c) else None, advantage=list(advantages), kl=None,
                       ratio=t.ratio[0].tolist(), clip=[int(x) for x in t.clip_side[0]], weight=[0.1] * n,
                       objective=t.objective[0].tolist(), mask=[1] * n)


@pytest.mark.parametrize("spec_id", ["cispo", "sapo", "dual_clip"])
def test_numpy_recomputation_equals_the_torch_objective(spec_id):
    c = cfg(spec_id)
    rng = np.random.default_rng(7)
    ratios, advs = rng.uniform(0.3, 4.0, 30).tolist(), rng.choice([-1.5, -0.5, 0.5, 1.5], 30).tolist()
    tokens = _tokens(c, ratios, advs)
    b = recompute.breakdown(c, tokens)
    np.testing.assert_allclose(b.objective, tokens.objective, rtol=1e-12, atol=1e-12)
    assert [int(x) for x in b.clip_side] == tokens.clip


def test_specs_whose_kinds_contradict_are_refused(tmp_path):
    """CISPO weights each token's own log-probability: on a sequence ratio it is refused in one line
    naming the file and the field, and a parameter of another clip kind is refused the same way."""
    text = (SPEC_DIR / "cispo.yaml").read_text()
    bad = tmp_path / "cispo.yaml"
    bad.write_text(text.replace("    kind: token\n", "    kind: sequence\n"))
    with pytest.raises(SpecError) as err:
        load_spec(bad)
    assert str(err.value).count("\n") == 0
    assert str(err.value).startswith(f"{bad}: components.clip.kind: cispo") and "sequence" in str(err.value)
    bad.write_text(text.replace("params: {eps_low: null, eps_high: 0.28}", "params: {eps: 0.2}"))
    with pytest.raises(SpecError, match=r"components\.clip\.params\.eps: unknown parameter of cispo"):
        load_spec(bad)
    bad.write_text((SPEC_DIR / "dual_clip.yaml").read_text().replace("c: 3.0", "c: 0.5").replace("id: dual_clip", "id: cispo"))
    with pytest.raises(SpecError, match=r"components\.clip\.params\.c: "):
        load_spec(bad)


@pytest.mark.parametrize("spec_id,needle", [("cispo", r"\operatorname{sg}"), ("sapo", r"f_{\tau_{i,t}}"),
                                            ("dual_clip", r"\max\!\big(")])
def test_formula_and_explainer_data(spec_id, needle):
    spec = load_spec(SPEC_DIR / f"{spec_id}.yaml")
    tex = objective_latex(spec)
    assert needle in tex and tex.count("{") == tex.count("}")
    kind = REGISTRY["clip"][spec.components["clip"].kind]
    assert explainer_problem(kind) is None
    check_explainable()
    line, value = kind.worked(1.5, -2.0, kind.bounds(spec.params("clip")), spec.params("clip"))
    assert line and isinstance(value, float)


def test_the_browser_port_equals_numpy():
    """unipo-math.js evaluates each kind's surrogate by its function's name (FUNCTIONS, the
    registry's fn): its breakdown equals recompute.breakdown to 1e-9 on random tokens, clipped and
    not, with positive and negative advantages."""
    from test_views_explainer import NODE, _random_tokens, _tokens_json, run_js  # the explainer tests' harness
    from unipo_build.core.objective import browser_config

    if NODE is None:
        pytest.skip("node is not installed")
    for spec_id, params in (("cispo", {}), ("cispo", {"eps_low": 0.2}), ("sapo", {}), ("dual_clip", {"c": 1.5})):
        c = cfg(spec_id, **params)
        rng = np.random.default_rng(len(spec_id))
        cases = [_random_tokens(rng, 12, with_ref=O.uses_reference(c), with_kl=False, padded=2) for _ in range(12)]
        results = run_js([["breakdown", browser_config(c), _tokens_json(t)] for t in cases])
        sides = set()
        for tokens, js in zip(cases, results):
            py = recompute.breakdown(c, tokens)
            for name in ("ratio", "surrogate", "objective"):
                np.testing.assert_allclose(np.asarray(js[name], dtype=float), getattr(py, name), rtol=0, atol=1e-9,
                                           err_msg=f"{spec_id} {params}: {name}")
            assert [int(x) for x in js["clip_side"]] == [int(x) for x in py.clip_side], spec_id
            sides.update(int(x) for x in py.clip_side)
        assert sides == ({0} if spec_id == "sapo" else {-1, 0, 1} if params.get("eps_low") or spec_id == "dual_clip"
                         else {0, 1}), (spec_id, params, sides)


def test_openrlhf_runs_dual_clip_exactly_and_names_the_other_two_as_gaps():
    """OpenRLHF 0.11.2 has dual_clip (--actor.dual_clip c) but no CISPO or SAPO loss: those two are
    gaps whose nearest run is PPO's clip (CISPO's cap) or no clip (SAPO), recorded as trained."""
    from unipo_build.trainers.openrlhf.command import translation_for
    from unipo_build.core.specs import load_specs

    specs = load_specs()
    dual = translation_for(specs["dual_clip"], 256)
    i = dual.flags.index("--actor.dual_clip")
    assert float(dual.flags[i + 1]) == 3.0 and not [g for g in dual.gaps if g.slot == "clip"]
    assert [float(x) for x in dual.flags[dual.flags.index("--actor.eps_clip_low_high") + 1:][:2]] == [0.2, 0.2]
    for spec_id, high in (("cispo", 0.28), ("sapo", 999999.0)):
        t = translation_for(specs[spec_id], 256)
        assert [g.slot for g in t.gaps] == ["clip"]
        assert t.effective.kind("clip") == "asymmetric" and t.effective.param("clip", "eps_high") == high


def test_the_browser_fills_cispo_s_sentence_for_a_clipped_token():
    """explainer.js's template engine on CISPO's sentence for the clipped token of the first test
    (rho 1.5, A 2, cap 1.28): the weight 1.28, the gradient 1.28 x 2 = 2.56, and the note that PPO
    would have silenced it (A > 0); for A -2 the same cap and no such note."""
    from test_views_explainer import NODE, run_engine

    if NODE is None:
        pytest.skip("node is not installed")
    say = next(item["say"] for item in REGISTRY["clip"]["cispo"].explain["items"] if "say" in item)
    capped = say[0]["text"]
    names = {"calc.ratio": 1.5, "params.eps_high": 0.28, "params.eps_low": None, "token.advantage": 2.0,
             "calc.clip_side": 1, "ratio_symbol": "ρ"}
    out = run_engine([["fill", capped, names], ["fill", capped, {**names, "token.advantage": -2.0, "calc.clip_side": 0}],
                      ["evaluate", say[0]["when"], names]])
    assert out[2] == {"ok": True}
    assert "clipped at 1.28" in out[0]["ok"] and "2.56 times" in out[0]["ok"]
    assert out[0]["ok"].endswith("(with Â > 0, PPO would have set it to 0).")
    assert "-2.56 times" in out[1]["ok"].replace("−", "-") and out[1]["ok"].endswith("capped.")


def test_the_anatomy_page_works_a_token_of_each_kind():
    """The anatomy page's token lines (site.pages.objectives.anatomy_pick.token_objective_tex) pass the clip's
    parameters to its worked example: dual-clip's floor for rho 4, A -2 is max(-8, 3 x -2) = -6."""
    from types import SimpleNamespace

    from unipo_build.site.pages.objectives.anatomy_pick import token_objective_tex

    for spec_id, (rho, adv), expected in (("dual_clip", (4.0, -2.0), -6.0), ("cispo", (1.5, 2.0), 2.56),
                                          ("sapo", (1.0, 1.0), 2.0)):
        c = cfg(spec_id)
        response = SimpleNamespace(tokens=_tokens(c, [rho], [adv]))
        lines = token_objective_tex(c, response, 0)
        assert lines[1].endswith("=" + ("-6" if expected == -6.0 else "2.56" if expected == 2.56 else "2")), lines


def test_the_browser_evaluates_sapo_s_and_dual_clip_s_rows():
    """SAPO's gradient-weight row for rho 1 + ln 3, A 1 (ell = 3, tau 1, sigma 3/4):
    4 x 3/4 x 1/4 x (1 + ln 3) = 1.5739592, as in test_sapo_gate_by_hand. Dual-clip's sentence for
    rho 4, A -2: the floor won (c = 3) and PPO's term alone would be min(-8, 1.2 x -2) = -8."""
    from test_views_explainer import NODE, run_engine

    if NODE is None:
        pytest.skip("node is not installed")
    sapo = {item.get("key"): item for item in REGISTRY["clip"]["sapo"].explain["items"]}
    rho = 1 + math.log(3)
    names = {"calc.surrogate": 3.0, "token.advantage": 1.0, "params.tau_pos": 1.0, "params.tau_neg": 1.05,
             "calc.ratio": rho}
    dual_say = next(item["say"] for item in REGISTRY["clip"]["dual_clip"].explain["items"] if "say" in item)
    dual = {"calc.ratio": 4.0, "token.advantage": -2.0, "calc.eps_low": 0.2, "calc.eps_high": 0.2, "params.c": 3.0,
            "params.eps_low": 0.2, "params.eps_high": 0.2, "calc.clip_side": 1, "ratio_symbol": "ρ"}
    out = run_engine([["evaluate", sapo["grad_weight"]["value"], names], ["evaluate", sapo["gate"]["value"], names],
                      ["evaluate", dual_say[0]["when"], dual], ["fill", dual_say[0]["text"], dual]])
    assert out[0]["ok"] == pytest.approx(0.75 * rho, abs=1e-12) and out[1]["ok"] == pytest.approx(3.0)
    assert out[2] == {"ok": True}
    text = out[3]["ok"].replace("−", "-")
    assert "above c = 3" in text and "its term, -8, would" in text
