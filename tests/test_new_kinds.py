"""Issue 29's kinds beyond the clip surrogates: batch-std advantages (TRL scale_rewards='batch') and
GMPO's geometric mean (verl policy_loss 'geo_mean'), with hand-worked numbers.

Every expected number is worked out by hand in the test's docstring from the sources' formulas
(TRL 1.16 GRPOTrainer._generate_and_score_completions; verl core_algos.compute_policy_loss_geo_mean),
not by calling the code another way. Ratios are written as log-probabilities, logp - old_logp =
log(rho), so they are exact; gradients are d(sum of the response's terms) / d logp by torch's autograd
through the objective the trainer calls.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from unipo_build.core import components as C
from unipo_build.core import objective as O
from unipo_build.core import recompute
from unipo_build.core.formula import objective_latex
from unipo_build.core.project import spec_dir
from unipo_build.core.registry import REGISTRY, explainer_problem
from unipo_build.core.schema import TokenArrays
from unipo_build.core.specs import SpecError, ResolvedAlgorithm, load_spec, resolve
from test_views_explainer import NODE, _assert_breakdown_equal, _tokens_json, run_engine, run_js

needs_node = pytest.mark.skipif(NODE is None, reason="node is not installed")
TOL = 1e-12


def config(base: str = "grpo", **changes) -> ResolvedAlgorithm:
    """A shipped spec resolved as a run resolves it, with whole slots replaced: slot=(kind, params)."""
    cfg = resolve(load_spec(spec_dir() / f"{base}.yaml"), max_new_tokens=8).model_dump()
    for slot, (kind, params) in changes.items():
        cfg["components"][slot] = {"kind": kind, "params": params}
    return ResolvedAlgorithm.model_validate(cfg)


def spec_file(tmp_path, **changes):
    """The grpo spec with slots replaced, written as a spec file (what `unipo validate` reads)."""
    import yaml

    data = yaml.safe_load((spec_dir() / "grpo.yaml").read_text())
    data["id"] = "grpo_changed"
    for slot, (kind, params) in changes.items():
        data["components"][slot] = {"kind": kind, "params": params, "explanation": f"The {kind} {slot} (a test spec)."}
    path = tmp_path / "grpo_changed.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


# ---------------------------------------------------------------------------
# Batch-std advantages
# ---------------------------------------------------------------------------

BATCH = [[1.0, 0.0, 0.0, 0.0], [1.0, 1.0, 0.0, 0.0], [1.0, 1.0, 1.0, 1.0]]


def test_batch_std_divides_every_group_by_the_batchs_sample_std():
    """TRL scale_rewards='batch': (r - group mean) / (nanstd(all rewards) + 1e-4), nanstd Bessel-corrected.

    The 12 rewards hold 7 ones: mean 7/12; sum of squared deviations 12 (7/12)(5/12) = 35/12; sample variance
    35/12 / 11 = 35/132; std sqrt(35/132) = 0.514929. Group 0 (mean 1/4): r=1 -> 0.75 / (0.514929 + 1e-4),
    r=0 -> -0.25 / (...). Group 1 (mean 1/2): +-0.5 / (...). Group 2: all equal, exactly 0.
    The group z-score would divide group 0 by its own std sqrt(0.75/3) = 0.5 instead: 1.5 for r=1."""
    s = math.sqrt(35 / 132) + 1e-4
    expected = [[0.75 / s, -0.25 / s, -0.25 / s, -0.25 / s], [0.5 / s, 0.5 / s, -0.5 / s, -0.5 / s], [0.0] * 4]
    for xp_rewards in (np.asarray(BATCH), torch.tensor(BATCH, dtype=torch.float64)):
        got = np.asarray(C.group_mean_batch_std_advantage(xp_rewards))
        np.testing.assert_allclose(got, expected, rtol=0, atol=TOL)
        assert (got[2] == 0).all()
    # population std (ddof 0): 35/12 / 12 = 35/144, std sqrt(35)/12 = 0.493007
    pop = C.group_mean_batch_std_advantage(np.asarray(BATCH), std_ddof=0, eps=0.0)
    assert pop[0, 0] == pytest.approx(0.75 / (math.sqrt(35) / 12), abs=TOL)
    assert C.group_zscore_advantage(np.asarray(BATCH))[0, 0] == pytest.approx(1.5 / (1 + 2e-6), rel=1e-5)


def test_batch_std_of_an_all_equal_batch_or_one_reward_is_zero():
    """Every group all equal: every advantage exactly 0 (TRL: 0 / (0 + 1e-4) = 0); one reward: std 0 and A 0."""
    assert (C.group_mean_batch_std_advantage(np.asarray([[0.3, 0.3], [0.3, 0.3]])) == 0).all()
    assert (C.group_mean_batch_std_advantage(np.asarray([[1.0]])) == 0).all()
    assert float(C.batch_reward_std(np.asarray([[1.0]]))) == 0.0


def test_batch_std_through_the_objective_reaches_every_token():
    """objective.compute_advantages hands the kind every group of the batch at once, and broadcasts each
    response's advantage over its real tokens (0 on padding): the trainer's path, unchanged."""
    cfg = config(advantage=("group_mean_batch_std", {"std_ddof": 1, "eps": 1e-4}))
    rewards = torch.tensor([r for g in BATCH for r in g], dtype=torch.float64)
    mask = torch.ones(12, 3)
    mask[1, 2] = 0
    adv, returns = O.compute_advantages(cfg, rewards=rewards, group_size=4, mask=mask)
    s = math.sqrt(35 / 132) + 1e-4
    assert returns is None and adv.shape == (12, 3)
    assert adv[0].tolist() == pytest.approx([0.75 / s] * 3, abs=TOL)
    assert adv[1].tolist() == pytest.approx([-0.25 / s, -0.25 / s, 0.0], abs=TOL)
    assert O.group_baseline(cfg) and explainer_problem(cfg.component("advantage")) is None


def test_batch_std_is_a_valid_spec_and_its_formula_names_the_batch(tmp_path):
    spec = load_spec(spec_file(tmp_path, advantage=("group_mean_batch_std", {})))
    cfg = resolve(spec, max_new_tokens=8)
    assert cfg.param("advantage", "eps") == 1e-4 and cfg.param("advantage", "std_ddof") == 1
    assert r"\{r_k\}_{k=1}^{BG}" in objective_latex(cfg)


@needs_node
def test_batch_std_port_equals_numpy_given_the_batch_std():
    """unipo-math.js cannot see the batch from one group: given the batch's std, it equals components."""
    rng = np.random.default_rng(3)
    batch = rng.integers(0, 2, (6, 8)).astype(float)
    batch[2] = 1.0
    spread = float(C.batch_reward_std(batch))
    got = run_js([["groupMeanBatchStdAdvantage", g.tolist(), spread, 1e-4] for g in batch])
    np.testing.assert_allclose(got, C.group_mean_batch_std_advantage(batch), rtol=0, atol=1e-9)


@needs_node
def test_batch_std_explainer_reads_the_batch_std_back_from_the_logged_advantage():
    """The explainer's rows for a response of group 0 above (r = 1, logged A = 0.75 / 0.515029): r - mean
    0.75, batch std + eps = 0.75 / A = 0.515029, and the group z-score's 1.5 for contrast."""
    kind = REGISTRY["advantage"]["group_mean_batch_std"]
    items = {i["key"]: i for i in kind.explain["items"] if "key" in i}
    s = math.sqrt(35 / 132) + 1e-4
    names = {"token.advantage": 0.75 / s, "response.reward": 1.0, "group.rewards": BATCH[0], "params.eps": 1e-4,
             "params.std_ddof": 1}
    got = run_engine([["evaluate", items[k]["value"], names] for k in ("centred", "batch_scale", "advantage")]
                     + [["evaluate", "(response.reward - mean(group.rewards)) / (std(group.rewards, params.std_ddof) "
                                     "+ params.eps)", names]])
    assert [g["ok"] for g in got] == pytest.approx([0.75, s, 0.75 / s, 0.75 / (0.5 + 1e-4)], abs=1e-9)


# ---------------------------------------------------------------------------
# GMPO: the geometric mean of the token ratios, clipped in log space
# ---------------------------------------------------------------------------

GMPO = {"eps_low": 0.4, "eps_high": 0.4}


def gmpo_terms(log_ratios, advantages, mask=None):
    """(surrogate, clip side, d(sum of terms) / d logp) of one response with these log-ratios."""
    c = config(clip=("geo_mean", GMPO))
    old = torch.full((1, len(log_ratios)), -1.0, dtype=torch.float64)
    logp = (old + torch.tensor([log_ratios], dtype=torch.float64)).requires_grad_(True)
    adv = torch.tensor([advantages], dtype=torch.float64)
    m = torch.ones_like(adv) if mask is None else torch.tensor([mask], dtype=torch.float64)
    terms = O.token_terms(c, logp=logp, old_logp=old, advantages=adv, mask=m,
                          ref_logp=old if O.uses_reference(c) else None)
    terms.surrogate.sum().backward()
    return terms.surrogate.detach()[0].tolist(), terms.clip_side[0].tolist(), logp.grad[0].tolist()


def test_gmpo_positive_advantage_clips_only_the_high_side():
    """A = 1 on three tokens with log rho 0.1, 0.6, -0.8, bounds 0.4: c = min(log rho, 0.4) = 0.1, 0.4
    (clipped), -0.8 (below the range but A > 0: not clipped, as PPO). mean c = -0.3 / 3 = -0.1; every
    token's term is 1 x exp(-0.1) = 0.904837. Sum of terms 3 exp(mean c): d/d logp_u = exp(-0.1) dc_u/d logp_u
    = 0.904837, 0 (clipped), 0.904837."""
    g = math.exp(-0.1)
    surrogate, side, grad = gmpo_terms([0.1, 0.6, -0.8], [1.0, 1.0, 1.0])
    assert surrogate == pytest.approx([g, g, g], abs=TOL)
    assert side == [0, 1, 0]
    assert grad == pytest.approx([g, 0.0, g], abs=TOL)


def test_gmpo_negative_advantage_clips_only_the_low_side():
    """A = -1, same log-ratios: c = max(log rho, -0.4) = 0.1, 0.6, -0.4 (clipped). mean c = 0.3 / 3 = 0.1;
    term -exp(0.1) = -1.105171 on every token; gradient -exp(0.1) x (1, 1, 0)."""
    g = math.exp(0.1)
    surrogate, side, grad = gmpo_terms([0.1, 0.6, -0.8], [-1.0, -1.0, -1.0])
    assert surrogate == pytest.approx([-g, -g, -g], abs=TOL)
    assert side == [0, 0, -1]
    assert grad == pytest.approx([-g, -g, 0.0], abs=TOL)


def test_gmpo_per_token_advantages_and_padding():
    """Token advantages 2, 0, -1 with log rho 0.5, 0.3, -0.5 and a padded fourth token (log rho 5, mask 0):
    c = min(0.5, 0.4) = 0.4 (clipped), 0 (A = 0: c is 0, the token still counts), max(-0.5, -0.4) = -0.4
    (clipped); mean over the 3 real tokens = 0; exp(0) = 1; terms 2, 0, -1, and 0 on padding."""
    surrogate, side, grad = gmpo_terms([0.5, 0.3, -0.5, 5.0], [2.0, 0.0, -1.0, 0.0], mask=[1, 1, 1, 0])
    assert surrogate == pytest.approx([2.0, 0.0, -1.0, 0.0], abs=TOL)
    assert side == [1, 0, -1, 0]
    assert grad == pytest.approx([0.0, 0.0, 0.0, 0.0], abs=TOL)


def _verl_geo_mean_objective(log_prob, old_log_prob, advantages, response_mask, low, high):
    """verl core_algos.compute_policy_loss_geo_mean's objective (minus its pg_loss), transcribed line by line."""
    negative_approx_kl = log_prob - old_log_prob
    sgn_advantage = np.sign(advantages)
    clamp = np.clip(negative_approx_kl, -low, high)
    kl_min = sgn_advantage * np.minimum(sgn_advantage * negative_approx_kl, sgn_advantage * clamp)
    mask_sum = response_mask.sum(-1)
    ratio = np.exp((kl_min * response_mask).sum(-1) / (mask_sum + 1e-8))
    advantage = (advantages * response_mask).sum(-1) / (mask_sum + 1e-8)
    return float(np.mean(advantage * ratio))


def test_gmpo_step_objective_is_verls_with_seq_mean_token_mean():
    """With the aggregation 1/(N |o_i|), sum_t w ell = (1/N) sum_i mean_t(A) exp(mean c): verl's mean over
    sequences of advantage x ratio (to verl's 1e-8 in the divisor), on a padded batch with mixed advantages."""
    rng = np.random.default_rng(11)
    old = rng.uniform(-4, -0.1, (5, 7))
    logp = old + rng.normal(0, 0.5, (5, 7))
    adv = np.repeat(rng.choice([-1.2, 0.0, 0.8], 5)[:, None], 7, axis=1) + rng.normal(0, 0.3, (5, 7))
    mask = (np.arange(7)[None, :] < np.asarray([7, 3, 5, 1, 6])[:, None]).astype(float)
    adv = adv * mask
    cfg = config(clip=("geo_mean", GMPO), kl=("none", {}))
    terms = O.token_terms(cfg, logp=logp, old_logp=old, advantages=adv, mask=mask)
    J, _ = O.step_objective(cfg, terms.objective, mask)
    assert float(J) == pytest.approx(_verl_geo_mean_objective(logp, old, adv, mask, 0.4, 0.4), rel=1e-7)


def test_gmpo_refuses_other_ratios_and_aggregations(tmp_path):
    """The geometric mean is one term per response over token log-ratios: another aggregation would
    reweight it and the sequence ratio has no token log-ratios to clip; both are refused, naming the field."""
    load_spec(spec_file(tmp_path, clip=("geo_mean", GMPO)))  # grpo's seq_mean_token_mean: accepted
    with pytest.raises(SpecError, match=r"components\.aggregation\.kind: geo_mean \(clip\).*seq_mean_token_mean"):
        load_spec(spec_file(tmp_path, clip=("geo_mean", GMPO), aggregation=("token_mean", {})))
    with pytest.raises(SpecError, match=r"components\.clip\.kind: geo_mean .* not sequence"):
        load_spec(spec_file(tmp_path, clip=("geo_mean", GMPO), ratio=("sequence", {})))


def test_gmpo_bounds_worked_line_and_formula():
    """The ratio's range is [exp(-0.4), exp(0.4)] = [0.670320, 1.491825]; the worked token (rho e^0.6, A 1)
    is its clipped log-ratio 0.4."""
    kind = REGISTRY["clip"]["geo_mean"]
    low, high = kind.bounds(GMPO)
    assert 1 - low == pytest.approx(math.exp(-0.4), abs=TOL) and 1 + high == pytest.approx(math.exp(0.4), abs=TOL)
    line, value = kind.worked(math.exp(0.6), 1.0, (low, high), GMPO)
    assert value == pytest.approx(0.4, abs=TOL) and "=0.4" in line
    assert kind.worked(math.exp(-0.6), -1.0, (low, high), GMPO)[1] == pytest.approx(-0.4, abs=TOL)
    assert explainer_problem(kind) is None
    assert r"\operatorname{clip}(\log\rho_{i,u},-0.4,0.4)" in objective_latex(config(clip=("geo_mean", GMPO)))


def _tokens(log_ratios, advantages, mask) -> TokenArrays:
    n = len(log_ratios)
    old = [-3.0] * n
    return TokenArrays(ids=list(range(n)), text=[f"t{i}" for i in range(n)], logp=[-3.0 + d for d in log_ratios],
                       old_logp=old, advantage=list(advantages), ratio=[1.0] * n, clip=[0] * n, weight=[0.1] * n,
                       objective=[0.0] * n, mask=list(mask))


def test_gmpo_recomputes_a_logged_response():
    """recompute.breakdown of one logged response gives the hand-worked terms of the first test."""
    b = recompute.breakdown(config(clip=("geo_mean", GMPO), kl=("none", {})), _tokens([0.1, 0.6, -0.8], [1.0] * 3, [1, 1, 1]))
    assert b.surrogate.tolist() == pytest.approx([math.exp(-0.1)] * 3, abs=TOL)
    assert b.clip_side.tolist() == [0, 1, 0]
    assert b.ratio.tolist() == pytest.approx([math.exp(0.1), math.exp(0.6), math.exp(-0.8)], abs=TOL)


@needs_node
def test_gmpo_browser_breakdown_equals_numpy():
    """unipo-math.js's breakdown (the clip gets the mask) equals recompute.breakdown on generated responses."""
    cfg = config(clip=("geo_mean", GMPO), kl=("none", {}))
    rng = np.random.default_rng(5)
    cases = []
    for i in range(30):
        n = int(rng.integers(1, 20))
        mask = [1] * n
        if i % 3 == 0 and n > 2:
            mask[-2:] = [0, 0]
        adv = rng.normal(0, 1, n) if i % 2 else np.full(n, rng.choice([-1.0, 0.0, 0.7]))
        cases.append(_tokens(np.clip(rng.normal(0, 0.5, n), -2.5, 2.5).tolist(), adv.tolist(), mask))
    results = run_js([["breakdown", O.browser_config(cfg), _tokens_json(t)] for t in cases])
    sides = set()
    for i, (tokens, js) in enumerate(zip(cases, results)):
        py = recompute.breakdown(cfg, tokens)
        _assert_breakdown_equal(js, py, f"geo_mean case {i}")
        sides.update(int(x) for x in py.clip_side)
    assert sides == {-1, 0, 1}


@needs_node
def test_gmpo_explainer_rows_for_a_clipped_token():
    """Token 2 of the first test (log rho 0.6, A 1): c = 0.4, geometric mean exp(-0.1) = 0.904837."""
    kind = REGISTRY["clip"]["geo_mean"]
    items = {i["key"]: i for i in kind.explain["items"] if "key" in i}
    g = math.exp(-0.1)
    names = {"token.logp": -0.4, "token.old_logp": -1.0, "token.advantage": 1.0, "params.eps_low": 0.4,
             "params.eps_high": 0.4, "calc.surrogate": g}
    got = run_engine([["evaluate", items[k]["value"], names] for k in ("log_ratio", "clipped_log_ratio", "geo_ratio")])
    assert [x["ok"] for x in got] == pytest.approx([0.6, 0.4, g], abs=1e-9)


# ---------------------------------------------------------------------------
# Masking truncated responses (filter mask_truncated)
# ---------------------------------------------------------------------------

LENGTHS = [2, 3, 4]  # three responses; the second hit the budget
TRUNCATED = [False, True, False]


def _mask() -> np.ndarray:
    return (np.arange(4)[None, :] < np.asarray(LENGTHS)[:, None]).astype(float)


def masked_config(aggregation: str = "seq_mean_token_mean", count_masked: bool = True, **params):
    return config(filter=("mask_truncated", {"count_masked": count_masked}), aggregation=(aggregation, params),
                  kl=("none", {}))


def test_mask_truncated_weights_count_the_masked_response_in_n():
    """count_masked true, seq_mean_token_mean: w = 1/(N |o_i|) with N = 3 (the masked response counts):
    1/(3 x 2) = 1/6 on response 0, 0 on the truncated response 1, 1/(3 x 4) = 1/12 on response 2. TRL's grpo
    loss, ((loss x mask).sum(-1) / mask.sum(-1).clamp(1)).mean() over 3 rows, weighs them so."""
    w = O.weights(masked_config(), _mask(), truncated=np.asarray(TRUNCATED))
    assert w[0, :2].tolist() == pytest.approx([1 / 6] * 2, abs=TOL) and w[0, 2:].tolist() == [0, 0]
    assert w[1].tolist() == [0, 0, 0, 0]
    assert w[2].tolist() == pytest.approx([1 / 12] * 4, abs=TOL)
    # Dr. GRPO's constant normaliser L = 8: 1/(3 x 8) on every kept token (TRL dr_grpo: B x max length)
    w = O.weights(masked_config("constant_normalizer", normalizer=8), torch.tensor(_mask()),
                  truncated=torch.tensor(TRUNCATED))
    assert float(w[0, 0]) == pytest.approx(1 / 24, abs=TOL) and float(w[1].sum()) == 0


def test_mask_truncated_token_mean_with_and_without_the_masked_tokens():
    """token_mean: count_masked false divides by the kept tokens, 2 + 4 = 6 (TRL dapo and bnpo take
    num_items_in_batch after masking): 1/6; count_masked true divides by all 9 sampled tokens: 1/9."""
    kept = O.weights(masked_config("token_mean", count_masked=False), _mask(), truncated=np.asarray(TRUNCATED))
    every = O.weights(masked_config("token_mean", count_masked=True), _mask(), truncated=np.asarray(TRUNCATED))
    assert kept[0, 0] == pytest.approx(1 / 6, abs=TOL) and kept[2, 3] == pytest.approx(1 / 6, abs=TOL)
    assert every[0, 0] == pytest.approx(1 / 9, abs=TOL) and kept[1].sum() == every[1].sum() == 0
    assert kept.sum() == pytest.approx(1.0, abs=TOL) and every.sum() == pytest.approx(6 / 9, abs=TOL)


def test_mask_truncated_refuses_weights_without_truncated_flags():
    """A caller that gives objective.weights no truncated flags is refused in one line naming the field."""
    with pytest.raises(ValueError, match=r"components\.filter\.kind: mask_truncated masks truncated responses .*none were given"):
        O.weights(masked_config(), _mask())
    # every group is kept; no other filter masks single responses
    assert O.keep_groups(masked_config(), np.asarray([[1, 0], [1, 1]])).tolist() == [True, True]
    assert O.response_keep(masked_config(), np.asarray(TRUNCATED)).tolist() == [True, False, True]
    assert O.response_keep(config(), np.asarray(TRUNCATED)) is None and not O.masks_responses(config())


def test_mask_truncated_refuses_a_shrinking_n(tmp_path):
    """count_masked false with an aggregation whose weight is 1/(N |o_i|): N would shrink with truncation,
    which no trainer does; refused naming the field. With token_mean it is accepted."""
    load_spec(spec_file(tmp_path, filter=("mask_truncated", {"count_masked": False}), aggregation=("token_mean", {})))
    load_spec(spec_file(tmp_path, filter=("mask_truncated", {})))
    with pytest.raises(SpecError, match=r"components\.filter\.params\.count_masked: false .*seq_mean_token_mean"):
        load_spec(spec_file(tmp_path, filter=("mask_truncated", {"count_masked": False})))


def _masked_step(cfg, weights_of_truncated=None):
    """A step logged as the trainer would with the flags: two groups of [2, 3] and [4, 1] tokens, response 1 of
    group 0 truncated; objective and weights from objective.token_terms and objective.weights."""
    from unipo_build.core.schema import GroupSummary, PromptGroup, Response, StepDetail

    lengths, truncated = [2, 3, 4, 1], [False, True, False, False]
    T = max(lengths)
    mask = (np.arange(T)[None, :] < np.asarray(lengths)[:, None]).astype(float)
    old = np.full((4, T), -2.0)
    logp = old + 0.05 * np.arange(T)[None, :] * mask
    adv = np.asarray([1.0, -1.0, 0.5, -0.5])[:, None] * mask
    terms = O.token_terms(cfg, logp=logp, old_logp=old, advantages=adv, mask=mask)
    w = O.weights(cfg, mask, truncated=np.asarray(truncated))
    if weights_of_truncated is not None:
        w[1, :3] = weights_of_truncated
    prompts, groups, total = [], [], 0.0
    for g in range(2):
        responses, group_total = [], 0.0
        for i in range(2):
            r = 2 * g + i
            n = lengths[r]
            tok = TokenArrays(ids=list(range(n)), text=[f"t{t}" for t in range(n)], logp=logp[r, :n].tolist(),
                              old_logp=old[r, :n].tolist(), advantage=adv[r, :n].tolist(),
                              ratio=terms.ratio[r, :n].tolist(), clip=terms.clip_side[r, :n].tolist(),
                              weight=w[r, :n].tolist(), objective=terms.objective[r, :n].tolist(), mask=[1] * n)
            contribution = float((w[r, :n] * terms.objective[r, :n]).sum())
            group_total += contribution
            responses.append(Response(index=i, text="x", reward=float(adv[r, 0] > 0), advantage=float(adv[r, 0]),
                                      length=n, truncated=truncated[r], contribution=contribution, tokens=tok))
        prompts.append(PromptGroup(index=g, prompt="q", contribution=group_total, responses=responses))
        groups.append(GroupSummary(index=g, size=2, contribution=group_total, detailed=True))
        total += group_total
    return StepDetail(step=0, rollout=0, objective=total, groups=groups, prompts=prompts)


def test_mask_truncated_recomputes_and_catches_a_weighted_truncated_response():
    """A step whose truncated response weighs 0 recomputes clean (the others keep 1/(N |o_i|) with N = 4);
    one where it kept its weight 1/(4 x 3) is reported, naming the field."""
    cfg = masked_config()
    assert recompute.check_step(cfg, _masked_step(cfg)) == []
    problems = recompute.check_step(cfg, _masked_step(cfg, weights_of_truncated=1 / 12))
    assert any("response 1: tokens.weight: the response was truncated" in p for p in problems), problems
    token_mean = masked_config("token_mean", count_masked=False)
    assert recompute.check_step(token_mean, _masked_step(token_mean)) == []


@needs_node
def test_mask_truncated_browser_weight_and_sentence():
    """The browser's weight is 0 for a truncated response under the filter and the aggregation's otherwise;
    the filter's sentence says which."""
    bc = O.browser_config(masked_config())
    got = run_js([["tokenWeight", bc, {"responses": 3, "length": 3, "truncated": True}],
                  ["tokenWeight", bc, {"responses": 3, "length": 2, "truncated": False}],
                  ["tokenWeight", O.browser_config(config()), {"responses": 3, "length": 2, "truncated": True}]])
    assert got == pytest.approx([0.0, 1 / 6, 1 / 6], abs=1e-12)
    say = REGISTRY["filter"]["mask_truncated"].explain["items"][0]["say"]
    names = {"response.truncated": True, "response.length": 8, "response.reward": 0, "params.count_masked": True}
    (cut,) = run_engine([["evaluate", say[0]["when"], names]])
    assert cut["ok"] is True
    (text,) = run_engine([["fill", say[0]["text"], names]])
    assert text["ok"].startswith("This response hit the generation budget (8 tokens)")


# ---------------------------------------------------------------------------
# Our trainer trains all three (mask_truncated: training/rl.py passes each response's truncated flag)
# ---------------------------------------------------------------------------

def _smoke_train(tmp_path, monkeypatch, checkpoint, **slots):
    """Two rollouts of the tiny random policy (tests/test_training_smoke.py's settings) with grpo's spec, these
    slots replaced; the run directory."""
    pytest.importorskip("torch")
    import training.rl as rl
    from training_fixtures import coin_flip_score

    data = load_spec(spec_dir() / "grpo.yaml").model_dump()
    for slot, (kind, params) in slots.items():
        data["components"][slot] = {**data["components"][slot], "kind": kind, "params": params}
    spec = type(load_spec(spec_dir() / "grpo.yaml")).model_validate(data)
    monkeypatch.setattr(rl, "load_algorithm", lambda name: spec)
    monkeypatch.setattr(rl, "score_response", coin_flip_score)
    opts = rl.TrainOptions(algorithm="grpo", steps=2, model=str(checkpoint), out=str(tmp_path / "run"), progress=False,
                           eval_n=8, detail_every=1,
                           rl_overrides={"prompts_per_step": 4, "group_size": 4, "max_new_tokens": 12})
    return rl.train(opts)


@pytest.mark.slow
@pytest.mark.parametrize("slot, kind, params", [("advantage", "group_mean_batch_std", {"std_ddof": 1, "eps": 1e-4}),
                                                ("clip", "geo_mean", GMPO)])
def test_the_trainer_trains_the_new_kind_and_every_token_recomputes(slot, kind, params, tmp_path, monkeypatch,
                                                                    tiny_policy):
    """training/rl.py needs no change for these two: it calls objective, which dispatches to the kind. Every
    logged token objective and step objective recomputes; the batch-std advantages are the kind's, from the
    logged rewards of the whole rollout (one divisor for every group)."""
    from unipo_build.core import runlog

    run = _smoke_train(tmp_path, monkeypatch, tiny_policy, **{slot: (kind, params)})
    header = runlog.read_header(run)
    assert header.algorithm_config.kind(slot) == kind
    problems, seen = [], 0
    for step in runlog.token_steps(run):
        detail = runlog.read_step_detail(run, step)
        problems += recompute.check_step(header.algorithm_config, detail)
        if slot == "advantage":
            scales = [(r.reward - np.mean([x.reward for x in g.responses])) / r.advantage
                      for g in detail.prompts for r in g.responses if abs(r.advantage) > 1e-6]
            seen += len(scales)
            # one batch std + eps for every group of the rollout (the log holds float32 advantages)
            assert not scales or max(scales) - min(scales) <= 1e-5 * max(scales), scales
    assert problems == []
    assert slot != "advantage" or seen > 0


@pytest.mark.slow
@pytest.mark.parametrize("count_masked, aggregation", [(True, "seq_mean_token_mean"), (False, "token_mean")])
def test_the_trainer_masks_truncated_responses_and_every_token_recomputes(count_masked, aggregation, tmp_path,
                                                                         monkeypatch, tiny_policy):
    """training/rl.py passes each response's truncated flag to objective.weights: a truncated response's tokens
    weigh 0 in the logged token files (12-token budget: the random policy hits it), the others do not, and
    every logged token and step objective recomputes."""
    from unipo_build.core import runlog

    run = _smoke_train(tmp_path, monkeypatch, tiny_policy, filter=("mask_truncated", {"count_masked": count_masked}),
                       aggregation=(aggregation, {}))
    header = runlog.read_header(run)
    problems, cut, kept = [], 0, 0
    for step in runlog.token_steps(run):
        detail = runlog.read_step_detail(run, step)
        problems += recompute.check_step(header.algorithm_config, detail)
        for group in detail.prompts:
            for r in group.responses:
                if r.tokens is None:
                    continue
                if r.truncated:
                    cut += 1
                    assert all(w == 0 for w in r.tokens.weight), r.tokens.weight
                else:
                    kept += 1
                    assert any(w > 0 for w in r.tokens.weight)
    assert problems == [] and cut > 0 and kept > 0


@pytest.mark.parametrize("changes, field", [
    ({"clip": ("geo_mean", GMPO), "aggregation": ("token_mean", {})}, "components.aggregation.kind"),
    ({"filter": ("mask_truncated", {"count_masked": False})}, "components.filter.params.count_masked")])
def test_unipo_validate_refuses_the_contradictions_in_one_line(changes, field, tmp_path):
    import subprocess

    path = spec_file(tmp_path, **changes)
    out = subprocess.run([str(spec_dir().parents[1] / ".venv" / "bin" / "unipo"), "validate", str(path)],
                         capture_output=True, text=True, timeout=120)
    lines = (out.stdout + out.stderr).strip().splitlines()
    assert out.returncode == 1 and len(lines) == 1, lines
    assert lines[0].startswith(f"{path}: {field}: ")
