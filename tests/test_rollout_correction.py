"""Rollout correction, the correction slot: truncated and masked importance sampling against the
sampler's log-probs, with hand-worked numbers.

Each token below is written by its behaviour ratio rho_b = pi_old / pi_sampler: old_logp - sample_logp
= log(rho_b), so the ratio is exact. The learner's ratio is 1 (logp = old_logp) unless a test says
otherwise, so the surrogate is the advantage and the objective is omega x A. The expected values are
worked out by hand in each docstring from the trainers' formulas (TRL's grpo_trainer.py, verl's
rollout_corr_helper.py, OpenRLHF's PolicyLoss), not by calling the code another way.
"""

from __future__ import annotations

import json
import math
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
import torch

from unipo_build.core import objective as O
from unipo_build.core import gzlog, recompute, runlog
from unipo_build.core.formula import objective_latex
from unipo_build.core.project import spec_dir
from unipo_build.core.reader import check_run
from unipo_build.core.registry import OPTIONAL_SLOTS, REGISTRY, SLOTS, check_explainable, explainer_problem
from unipo_build.core.schema import SCHEMA_VERSION, RunHeader, StepDetail, TokenArrays
from unipo_build.core.specs import ResolvedAlgorithm, SpecError, load_spec, load_specs, resolve

ROOT = Path(__file__).resolve().parents[1]
SPEC_DIR = spec_dir()
TOL = 1e-12


def cfg(kind: str = "truncated_is", **params) -> ResolvedAlgorithm:
    """GRPO-TIS as a run resolves it, with the correction slot's kind and parameters replaced."""
    resolved = resolve(load_spec(SPEC_DIR / "grpo_tis.yaml"), max_new_tokens=8).model_dump()
    resolved["components"]["correction"] = {"kind": kind, "params": params}
    return ResolvedAlgorithm.model_validate(resolved)


def weigh(c: ResolvedAlgorithm, rows: list[list[float]], advantage: float = 2.0, learner: list[list[float]] | None = None):
    """(weight, side, objective, d objective / d logp) of responses whose tokens have these behaviour
    ratios (a row shorter than the longest is padded); learner ratio 1, or ``learner``'s."""
    width = max(len(r) for r in rows)
    mask = torch.tensor([[1.0] * len(r) + [0.0] * (width - len(r)) for r in rows], dtype=torch.float64)
    rho_b = torch.tensor([r + [1.0] * (width - len(r)) for r in rows], dtype=torch.float64)
    old = torch.full_like(mask, -1.0)
    sampler = old - torch.log(rho_b)
    rho = torch.ones_like(mask) if learner is None else torch.tensor(learner, dtype=torch.float64)
    logp = (old + torch.log(rho)).requires_grad_(True)
    terms = O.token_terms(c, logp=logp, old_logp=old, advantages=torch.full_like(mask, advantage), mask=mask,
                          ref_logp=logp.detach(), sampler_logp=sampler)
    (terms.objective * mask).sum().backward()
    return (terms.correction.tolist(), terms.correction_side.tolist(), terms.objective.detach().tolist(),
            logp.grad.tolist())


def close(a, b):
    np.testing.assert_allclose(np.asarray(a, dtype=float), np.asarray(b, dtype=float), rtol=0, atol=1e-12)


# ---------------------------------------------------------------------------
# The four forms, by hand
# ---------------------------------------------------------------------------

def test_token_truncate():
    """GRPO-TIS as shipped: token level, cap C = 2, no lower bound; A = 2, learner ratio 1, beta's KL 0
    (ref = logp). omega = min(rho_b, 2):

    - rho_b 0.5: omega 0.5, objective 0.5 x 2 = 1, side 0 (no lower bound: a token the sampler found
      likelier than the learner does is down-weighted, not raised);
    - rho_b 1: omega 1, objective 2;
    - rho_b 3: omega min(3, 2) = 2, objective 4, side 1 (truncated).
    The gradient is omega x A x rho = omega x 2 (omega is a constant; PPO's clip is inactive at rho 1),
    so 1, 2 and 4. With a lower bound 0.8 (TRL's clip_min) the first becomes 0.8, side -1.
    """
    c = cfg("truncated_is", level="token", cap=2.0)
    weight, side, objective, grad = weigh(c, [[0.5, 1.0, 3.0]])
    close(weight, [[0.5, 1.0, 2.0]])
    assert side == [[0, 0, 1]]
    close(objective, [[1.0, 2.0, 4.0]])
    close(grad, [[1.0, 2.0, 4.0]])
    weight, side, _, _ = weigh(cfg("truncated_is", level="token", cap=2.0, lower=0.8), [[0.5, 1.0, 3.0]])
    close(weight, [[0.8, 1.0, 2.0]])
    assert side == [[-1, 0, 1]]


def test_token_mask_two_sided():
    """Masked IS with the band [0.5, 5] (OpenRLHF's default, IcePop's two-sided mask), A = 2:

    - rho_b 0.4: below 0.5, omega 0, side -1;   - rho_b 0.5: on the bound, kept, omega 0.5;
    - rho_b 2: kept, omega 2;                     - rho_b 4.9: kept, omega 4.9;
    - rho_b 6: above 5, omega 0, side 1.
    Objectives 0, 1, 4, 9.8, 0 and gradients the same (a masked token has none). With kept 'one'
    (verl's rejection sampling) the kept tokens weigh 1: 0, 1, 1, 1, 0.
    """
    c = cfg("masked_is", level="token", lower=0.5, cap=5.0)
    weight, side, objective, grad = weigh(c, [[0.4, 0.5, 2.0, 4.9, 6.0]])
    close(weight, [[0.0, 0.5, 2.0, 4.9, 0.0]])
    assert side == [[-1, 0, 0, 0, 1]]
    close(objective, [[0.0, 1.0, 4.0, 9.8, 0.0]])
    close(grad, [[0.0, 1.0, 4.0, 9.8, 0.0]])
    weight, _, _, _ = weigh(cfg("masked_is", level="token", lower=0.5, cap=5.0, kept="one"), [[0.4, 0.5, 2.0, 4.9, 6.0]])
    close(weight, [[0.0, 1.0, 1.0, 1.0, 0.0]])


def test_sequence_truncate():
    """Sequence level, cap 2. Response 1 has token ratios 2, 1.5, 1: their product (TRL's and verl's
    sequence ratio) is 3, truncated to 2 on every token (side 1). Response 2, ratios 0.5 and 0.8 and
    a padding token: product 0.4, every real token 0.4, the padding 0. With the geometric mean
    (OpenRLHF's seq level) response 1's ratio is 3^(1/3) = 1.44225, below the cap, side 0."""
    rows = [[2.0, 1.5, 1.0], [0.5, 0.8]]
    weight, side, objective, _ = weigh(cfg("truncated_is", level="sequence", cap=2.0), rows)
    close(weight, [[2.0, 2.0, 2.0], [0.4, 0.4, 0.0]])
    assert side == [[1, 1, 1], [0, 0, 0]]
    close(objective, [[4.0, 4.0, 4.0], [0.8, 0.8, 0.0]])
    weight, side, _, _ = weigh(cfg("truncated_is", level="sequence", cap=2.0, sequence="geometric_mean"), rows)
    cube_root = 3.0 ** (1.0 / 3.0)
    close(weight, [[cube_root] * 3, [math.sqrt(0.4)] * 2 + [0.0]])
    assert side == [[0, 0, 0], [0, 0, 0]]


def test_sequence_mask():
    """Sequence level, band [0.5, 5] (TRL's sequence_mask keeps the sequence ratio). Response 1, ratios
    2, 1.5, 1: product 3, inside, every token weighs 3. Response 2, ratios 0.5 and 0.5: product 0.25,
    below 0.5, the whole response weighs 0 (side -1). With OpenRLHF's seq-mask-tis (gated on the
    geometric mean, a kept token keeping its own ratio): response 2's mean is 0.5, on the bound, kept,
    so its tokens weigh 0.5 and 0.5; response 1's tokens weigh 2, 1.5 and 1."""
    rows = [[2.0, 1.5, 1.0], [0.5, 0.5]]
    weight, side, objective, grad = weigh(cfg("masked_is", level="sequence", lower=0.5, cap=5.0), rows)
    close(weight, [[3.0, 3.0, 3.0], [0.0, 0.0, 0.0]])
    assert side == [[0, 0, 0], [-1, -1, 0]]
    close(objective, [[6.0, 6.0, 6.0], [0.0, 0.0, 0.0]])
    close(grad, [[6.0, 6.0, 6.0], [0.0, 0.0, 0.0]])
    weight, side, _, _ = weigh(cfg("masked_is", level="sequence", lower=0.5, cap=5.0, sequence="geometric_mean",
                                   kept="token_ratio"), rows)
    close(weight, [[2.0, 1.5, 1.0], [0.5, 0.5, 0.0]])
    assert side == [[0, 0, 0], [0, 0, 0]]


def test_the_weight_multiplies_the_surrogate_not_the_kl():
    """As TRL (per_token_loss * importance_sampling_ratio, then + beta * KL), verl and OpenRLHF weigh the
    policy loss: a token with rho_b 3 (omega 2), A 1, learner ratio 1 and a KL term of beta x D has
    objective 2 x 1 - beta x D, not 2 x (1 - beta x D)."""
    c = cfg("truncated_is", level="token", cap=2.0)
    old = np.array([[-1.0]])
    ref = np.array([[-1.5]])  # k3 of log r = -0.5: e^-0.5 - 1 + 0.5
    terms = O.token_terms(c, logp=old, old_logp=old, advantages=np.ones((1, 1)), mask=np.ones((1, 1)), ref_logp=ref,
                          sampler_logp=old - math.log(3.0))
    d = math.exp(-0.5) - 1 + 0.5
    close(terms.objective, [[2.0 - 0.04 * d]])


def test_a_correction_without_the_sampler_log_probs_is_an_error():
    with pytest.raises(ValueError, match=r"sample_logp"):
        O.token_terms(cfg(), logp=np.zeros((1, 2)) - 1, old_logp=np.zeros((1, 2)) - 1, advantages=np.ones((1, 2)),
                      mask=np.ones((1, 2)), ref_logp=np.zeros((1, 2)) - 1)


# ---------------------------------------------------------------------------
# The registry entry, the spec, the formula
# ---------------------------------------------------------------------------

def test_registry_entries_and_worked_tokens():
    assert "correction" in SLOTS and OPTIONAL_SLOTS == {"correction": "none"}
    check_explainable()
    for name in ("none", "truncated_is", "masked_is"):
        assert explainer_problem(REGISTRY["correction"][name]) is None
    tis, mis = REGISTRY["correction"]["truncated_is"], REGISTRY["correction"]["masked_is"]
    line, value = tis.worked(3.0, {"level": "token", "cap": 2.0, "lower": None, "sequence": "product"})
    assert value == 2.0 and line == r"\omega=\min(3,2)=2"
    p = {"level": "token", "cap": 5.0, "lower": 0.5, "sequence": "product", "kept": "ratio"}
    assert mis.worked(0.4, p)[1] == 0.0 and mis.worked(1.5, p)[1] == 1.5
    assert mis.worked(1.5, {**p, "kept": "one"})[1] == 1.0
    # the trainers' names are in the entries a reader sees (terms and parameter descriptions)
    described = " ".join([t.tooltip for t in tis.terms + mis.terms]
                         + [f.description for k in (tis, mis) for f in k.params.model_fields.values()])
    for name in ("vllm_importance_sampling_clip_max", "rollout_is_threshold", "rollout_rs", "is_correction_threshold",
                 "is_correction_mode mask"):
        assert name in described, name
    # prime-rl (559b447) has no correction of its own: no setting of its is named as one
    assert "token_mask" not in described


def test_grpo_tis_differs_from_grpo_in_the_correction_alone():
    specs = load_specs()
    tis, grpo = specs["grpo_tis"], specs["grpo"]
    assert tis.predecessor == "grpo"
    differ = [s for s in SLOTS if (tis.components[s].kind, tis.params(s)) != (grpo.components[s].kind, grpo.params(s))]
    assert differ == ["correction"]
    assert tis.params("correction") == {"level": "token", "sequence": "product", "lower": None, "cap": 2.0}
    assert grpo.components["correction"].kind == "none"  # a spec that leaves the slot out
    tex = objective_latex(tis)
    assert r"\htmlClass{unipo-slot unipo-slot-correction}{\operatorname{sg}[\omega_{i,t}]}" in tex
    assert r"\omega_{i,t}=\min(\varrho_{i,t},\,C)" in tex and "C=2" in tex and tex.count("{") == tex.count("}")
    assert "unipo-slot-correction" not in objective_latex(grpo)


def test_a_bad_correction_is_refused_in_one_line(tmp_path):
    bad = tmp_path / "grpo_tis.yaml"
    bad.write_text((SPEC_DIR / "grpo_tis.yaml").read_text().replace("cap: 2.0, lower: null", "cap: 2.0, lower: 3.0"))
    with pytest.raises(SpecError) as err:
        load_spec(bad)
    assert str(err.value).count("\n") == 0
    assert str(err.value).startswith(f"{bad}: components.correction.params.cap: the lower bound 3.0 must be below")
    bad.write_text((SPEC_DIR / "grpo_tis.yaml").read_text().replace("level: token", "level: word"))
    with pytest.raises(SpecError, match=r"components\.correction\.params\.level: "):
        load_spec(bad)


# ---------------------------------------------------------------------------
# Logs: the schema's version, old logs, a run without the sampler's log-probs
# ---------------------------------------------------------------------------

def _shipped_run_with_tokens() -> Path:
    """A shipped synchronous GRPO run with token files written as unipo-run/1 (no sampler log-probs):
    not an asynchronous one (async8_grpo), whose tokens carry the sampler's."""
    for header in sorted((ROOT / "data" / "runs").glob("*/header.json")):
        raw = json.loads(header.read_text())
        if (runlog.token_steps(header.parent) and raw["algorithm"] == "grpo"
                and raw["schema_version"] == "unipo-run/1"):
            return header.parent
    pytest.skip("no shipped unipo-run/1 GRPO run with token files")


def test_an_older_log_reads_as_no_correction_and_still_recomputes():
    """The shipped runs were written as unipo-run/1, before the slot existed: their configuration reads
    as correction none and their token files recompute unchanged."""
    run = _shipped_run_with_tokens()
    raw = json.loads((run / runlog.HEADER).read_text())
    assert raw["schema_version"] == "unipo-run/1" and "correction" not in raw["algorithm_config"]["components"]
    header = runlog.read_header(run)
    assert header.algorithm_config.kind("correction") == "none"
    detail = runlog.read_step_detail(run, runlog.token_steps(run)[0])
    assert recompute.check_step(header.algorithm_config, detail) == []
    assert SCHEMA_VERSION == "unipo-run/2" and RunHeader.model_fields["schema_version"].default == "unipo-run/2"
    assert StepDetail.model_validate({**detail.model_dump(by_alias=True), "schema_version": "unipo-run/1"})


def _as_grpo_tis(src: Path, dst: Path, sampler_logp: bool) -> Path:
    """A copy of a shipped GRPO run relabelled as trained with GRPO-TIS; with ``sampler_logp`` its token
    files get sample_logp = old_logp (the sampler is the learner: every weight 1, the objective unchanged)."""
    shutil.copytree(src, dst)
    gzlog.unpack_run(dst)  # a shipped run's logs are gzipped: plain, to edit them
    header = json.loads((dst / runlog.HEADER).read_text())
    header["schema_version"] = SCHEMA_VERSION
    header["algorithm"] = "grpo_tis"
    header["algorithm_config"]["id"] = "grpo_tis"
    header["algorithm_config"]["components"]["correction"] = {"kind": "truncated_is", "params": {"level": "token", "cap": 2.0}}
    (dst / runlog.HEADER).write_text(json.dumps(header))
    if sampler_logp:
        for path in (dst / runlog.TOKENS_DIR).glob(runlog.TOKEN_FILE_GLOB):
            detail = json.loads(path.read_text())
            for group in detail["prompts"]:
                for response in group["responses"]:
                    if response.get("tokens"):
                        response["tokens"]["sample_logp"] = response["tokens"]["old_logp"]
            path.write_text(json.dumps(detail))
    return dst


def test_a_run_with_a_correction_and_no_sampler_log_probs_is_refused_in_one_line(tmp_path):
    src = _shipped_run_with_tokens()
    bad = _as_grpo_tis(src, tmp_path / "bad", sampler_logp=False)
    errors = check_run(bad, known_algorithms=set(load_specs())).errors
    assert len(errors) == 1, [str(e) for e in errors]
    text = str(errors[0])
    first = runlog.token_steps(bad)[0]
    assert text.startswith(str(bad / runlog.TOKENS_DIR / runlog.token_file_name(first)))
    assert " tokens.sample_logp: missing: the run's rollout correction (truncated_is)" in text and "\n" not in text
    good = _as_grpo_tis(src, tmp_path / "good", sampler_logp=True)
    assert check_run(good, known_algorithms=set(load_specs())).errors == []
    header = runlog.read_header(good)
    detail = runlog.read_step_detail(good, first)
    assert recompute.check_step(header.algorithm_config, detail) == []
    # the site build's loader skips it with the same line (the build fails on it under UNIPO_STRICT_RUNS=1)
    from unipo_build.core.runs import load_run

    skipped = load_run(bad, load_specs(), root=tmp_path)
    assert skipped.error is not None and skipped.error.count("\n") == 0 and "tokens.sample_logp: missing" in skipped.error
    assert load_run(good, load_specs(), root=tmp_path).error is None
    # and the CLI says it the same way, in one line
    out = subprocess.run([str(ROOT / ".venv" / "bin" / "unipo"), "validate", str(bad)], capture_output=True, text=True,
                         cwd=ROOT, check=False)
    assert out.returncode != 0
    lines = [line for line in (out.stdout + out.stderr).splitlines() if "tokens.sample_logp" in line]
    assert len(lines) == 1, out.stdout + out.stderr


# ---------------------------------------------------------------------------
# The browser
# ---------------------------------------------------------------------------

def _tokens(c: ResolvedAlgorithm, rng: np.random.Generator, n: int, padded: int) -> TokenArrays:
    old = rng.uniform(-6, -0.01, n)
    sample = np.minimum(old - rng.normal(0, 0.9, n), -1e-4)  # behaviour ratios from about 0.1 to 10: both bounds act
    logp = np.minimum(old + rng.normal(0, 0.3, n), -1e-4)
    mask = np.ones(n, dtype=int)
    mask[n - padded:] = 0
    return TokenArrays(ids=list(range(n)), text=[f"t{i}" for i in range(n)], logp=logp.tolist(), old_logp=old.tolist(),
                       sample_logp=sample.tolist(), ref_logp=np.minimum(old + rng.normal(0, 0.3, n), -1e-4).tolist(),
                       advantage=[float(rng.choice([-1.2, 0.7]))] * n, ratio=[1.0] * n, clip=[0] * n,
                       weight=[0.01] * n, objective=[0.0] * n, mask=mask.tolist())


@pytest.mark.parametrize("kind, params", [
    ("truncated_is", {"level": "token", "cap": 2.0}),
    ("truncated_is", {"level": "sequence", "cap": 1.25, "lower": 0.8, "sequence": "geometric_mean"}),
    ("truncated_is", {"level": "sequence", "cap": 2.0}),
    ("masked_is", {"level": "token", "lower": 0.5, "cap": 5.0}),
    ("masked_is", {"level": "sequence", "lower": 0.8, "cap": 1.25, "sequence": "geometric_mean", "kept": "token_ratio"}),
    ("masked_is", {"level": "token", "lower": 0.5, "cap": None, "kept": "one"}),
])
def test_the_browser_port_equals_numpy(kind, params):
    """unipo-math.js computes the correction by its function's name: its breakdown (weight, side,
    objective) equals recompute.breakdown to 1e-9 on random tokens with sampler log-probs."""
    from test_views_explainer import NODE, _tokens_json, run_js

    if NODE is None:
        pytest.skip("node is not installed")
    from unipo_build.core.objective import browser_config

    c = cfg(kind, **params)
    rng = np.random.default_rng(11)
    cases = [_tokens(c, rng, 10, padded=2) for _ in range(30)]
    results = run_js([["breakdown", browser_config(c), _tokens_json(t)] for t in cases])
    sides = set()
    for tokens, js in zip(cases, results):
        py = recompute.breakdown(c, tokens)
        for name in ("ratio", "surrogate", "objective", "correction"):
            np.testing.assert_allclose(np.asarray(js[name], dtype=float), np.asarray(getattr(py, name), dtype=float),
                                       rtol=0, atol=1e-9, err_msg=f"{kind} {params}: {name}")
        assert [int(x) for x in js["correction_side"]] == [int(x) for x in py.correction_side]
        sides.update(int(x) for x in py.correction_side)
    assert 1 in sides or params.get("cap") is None  # each bound acted on some token
    assert -1 in sides or params.get("lower") is None


def test_the_browser_fills_the_truncation_sentence():
    """explainer.js's template engine on truncated IS's sentence for a truncated token (rho_b 3, cap 2)."""
    from test_views_explainer import NODE, run_engine

    if NODE is None:
        pytest.skip("node is not installed")
    say = next(item["say"] for item in REGISTRY["correction"]["truncated_is"].explain["items"]
               if "say" in item and isinstance(item["say"], list))
    names = {"calc.correction_ratio": 3.0, "calc.correction_side": 1, "params.cap": 2.0, "params.lower": None}
    out = run_engine([["fill", say[0]["text"], names], ["evaluate", say[0]["when"], names]])
    assert "ϱ = 3 is above the cap 2, so this token weighs 2" in json.dumps(out[0], ensure_ascii=False)


def test_the_explainer_has_a_correction_section_only_where_there_is_one():
    """The Algorithm Explainer's token card shows the correction slot's section (its live rows come from the
    registry's explainer data) and a part button for GRPO-TIS; GRPO, with none, shows neither."""
    from unipo_build.site.views.explainer.explainer import CARD_OF_SLOT, objective_card

    specs = load_specs()
    tis, grpo = objective_card(specs["grpo_tis"]), objective_card(specs["grpo"])
    assert tis.count('data-live="correction"') == 1 and 'unipo-part unipo-part-correction' in tis
    assert 'data-live="correction"' not in grpo and "unipo-part-correction" not in grpo
    assert CARD_OF_SLOT["correction"] == "token"
