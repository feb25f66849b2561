"""The objective composed per resolved spec (unipo_build.core.objective), with hand-worked numbers.

The five shipped specs are resolved as a run would resolve them; the expected values are
written out from the papers' formulas in the comments.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from unipo_build.core import components as C
from unipo_build.core import objective as O
from unipo_build.core.specs import load_spec, resolve
from unipo_build.core.project import spec_dir

SPEC_DIR = spec_dir()

TOL = 1e-12
ALGORITHMS = ("reinforce", "ppo", "grpo", "dapo", "dr_grpo")


def cfg(algorithm: str, max_new_tokens: int = 8):
    return resolve(load_spec(SPEC_DIR / f"{algorithm}.yaml"), max_new_tokens=max_new_tokens)


def mask_of(lengths, T):
    return (np.arange(T)[None, :] < np.asarray(lengths)[:, None]).astype(np.float64)


def run_pipeline(c, batch, group_size):
    """The trainer's order: shaping, advantages, token terms, aggregation. Any array namespace."""
    rewards, _ = O.shape_rewards(c, batch["rewards"], batch["lengths"])
    rkl = O.rollout_kl(c, batch["old_logp"], batch["ref_logp"], batch["mask"]) if O.kl_in_reward(c) else None
    adv, returns = O.compute_advantages(c, rewards=rewards, group_size=group_size, mask=batch["mask"],
                                        rollout_kl=rkl, values=batch["values"] if O.uses_critic(c) else None)
    terms = O.token_terms(c, logp=batch["logp"], old_logp=batch["old_logp"], advantages=adv, mask=batch["mask"],
                          ref_logp=batch["ref_logp"] if O.uses_reference(c) else None, rollout_kl=rkl)
    J, w = O.step_objective(c, terms.objective, batch["mask"])
    return {"rewards": rewards, "adv": adv, "returns": returns, "ratio": terms.ratio, "surrogate": terms.surrogate,
            "clip_side": terms.clip_side, "kl": terms.kl, "objective": terms.objective, "weights": w, "J": J}


# ---------------------------------------------------------------------------
# Zero-advantage groups
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("algorithm", ["grpo", "dapo", "dr_grpo"])
def test_all_correct_group_contributes_nothing(algorithm):
    c = cfg(algorithm, max_new_tokens=8)
    # group 0: all correct; group 1: [1, 1, 1, 0]. Lengths well under the overlong ramp (6 of 8 tokens).
    lengths = np.array([3, 5, 2, 4, 4, 1, 3, 2])
    T = 5
    mask = mask_of(lengths, T)
    rng = np.random.default_rng(3)
    logp = -rng.exponential(size=(8, T))
    batch = {"rewards": np.array([1.0, 1, 1, 1, 1, 1, 1, 0]), "lengths": lengths, "mask": mask,
             "logp": logp, "old_logp": logp + rng.normal(0, 0.3, size=(8, T)),  # ratios far from 1
             "ref_logp": logp, "values": None}
    out = run_pipeline(c, batch, group_size=4)
    assert np.all(out["rewards"][:4] == 1.0)  # no shaping penalty at these lengths
    assert np.all(out["adv"][:4] == 0.0)
    assert np.all(out["surrogate"][:4] == 0.0)
    contribution = float(np.sum(out["weights"][:4] * out["objective"][:4]))
    assert contribution == 0.0
    # the other group does contribute
    assert abs(float(np.sum(out["weights"][4:] * out["objective"][4:]))) > 1e-3


def test_all_correct_group_under_grpo_keeps_only_its_kl_term():
    # With a KL in the loss the surrogate part of an all-correct group is still exactly 0; what
    # is left is -beta * sum(w * k3).
    c = cfg("grpo")
    lengths = np.array([2, 2, 1, 1])
    mask = mask_of(lengths, 2)
    logp = np.array([[-1.0, -0.5], [-0.2, -0.3], [-0.4, -9.0], [-0.6, -9.0]])
    ref = logp.copy()
    ref[0, 0] = -1.5  # log r = -0.5 -> k3 = e^-0.5 - 0.5 = 0.10653065971263342
    batch = {"rewards": np.array([1.0, 1.0, 1.0, 1.0]), "lengths": lengths, "mask": mask, "logp": logp,
             "old_logp": logp - 0.1, "ref_logp": ref, "values": None}
    out = run_pipeline(c, batch, group_size=4)
    assert np.all(out["adv"] == 0.0) and np.all(out["surrogate"] == 0.0)
    # weight of token (0, 0): 1 / (4 responses * 2 tokens) = 1/8 ; beta 0.04
    assert abs(float(out["J"]) - (-0.04 * 0.125 * 0.10653065971263342)) < TOL


def test_dapo_filter_drops_uniform_groups():
    correct = np.array([[1, 1, 1, 1], [1, 1, 1, 0], [0, 0, 0, 0], [0, 1, 0, 0]])
    assert O.keep_groups(cfg("dapo"), correct).tolist() == [False, True, False, True]
    for algorithm in ("reinforce", "ppo", "grpo", "dr_grpo"):
        assert O.keep_groups(cfg(algorithm), correct).tolist() == [True] * 4


# ---------------------------------------------------------------------------
# Clipping per spec
# ---------------------------------------------------------------------------

def test_clip_bounds_from_specs():
    assert O.clip_bounds(cfg("dapo")) == (0.2, 0.28)
    assert O.clip_bounds(cfg("grpo")) == (0.2, 0.2)
    assert O.clip_bounds(cfg("ppo")) == (0.2, 0.2)
    assert O.clip_bounds(cfg("dr_grpo")) == (0.2, 0.2)
    assert O.clip_bounds(cfg("reinforce")) == (None, None)


@pytest.mark.parametrize("algorithm, ratio, adv, surrogate, side", [
    ("dapo", 1.35, 1.0, 1.28, 1),
    ("grpo", 1.35, 1.0, 1.2, 1),
    ("dr_grpo", 1.35, 1.0, 1.2, 1),
    ("dapo", 0.7, -1.0, -0.8, -1),
    ("grpo", 0.7, -1.0, -0.8, -1),
    ("dapo", 1.35, -1.0, -1.35, 0),
    ("grpo", 0.7, 1.0, 0.7, 0),
    ("dapo", 1.25, 1.0, 1.25, 0),
    ("grpo", 1.25, 1.0, 1.2, 1),
    ("reinforce", 1.0, 2.5, 2.5, 0),
])
def test_token_terms_clip(algorithm, ratio, adv, surrogate, side):
    c = cfg(algorithm)
    old = np.array([[-1.0, -1.0]])
    logp = old + np.log([[ratio, 1.0]]) if algorithm != "reinforce" else old
    mask = np.array([[1.0, 0.0]])  # the second token is padding
    terms = O.token_terms(c, logp=logp, old_logp=old, advantages=np.array([[adv, 0.0]]), mask=mask,
                          ref_logp=logp)
    assert abs(float(terms.surrogate[0, 0]) - surrogate) < TOL
    assert int(terms.clip_side[0, 0]) == side
    assert terms.surrogate[0, 1] == 0 and terms.clip_side[0, 1] == 0 and terms.ratio[0, 1] == 0


# ---------------------------------------------------------------------------
# Hand-worked step objectives
# ---------------------------------------------------------------------------

def test_grpo_step_objective_by_hand():
    c = cfg("grpo")
    # One group of 2, rewards [1, 0]: mean 0.5, sample std sqrt(0.5); eps 1e-6
    a = 0.5 / (math.sqrt(0.5) + 1e-6)
    # response 0: 2 tokens with ratios e^0.1 (inside) and e^0.3 = 1.35 (clipped at 1.2, A > 0)
    # response 1: 1 token with ratio e^-0.1 = 0.905 (inside), A < 0
    old = np.array([[-1.0, -2.0], [-0.5, 0.0]])
    logp = old + np.array([[0.1, 0.3], [-0.1, 0.0]])
    ref = logp.copy()
    ref[0, 0] = logp[0, 0] - 0.5  # k3 = e^-0.5 - 1 + 0.5 on that token only
    mask = mask_of([2, 1], 2)
    batch = {"rewards": np.array([1.0, 0.0]), "lengths": np.array([2, 1]), "mask": mask, "logp": logp,
             "old_logp": old, "ref_logp": ref, "values": None}
    out = run_pipeline(c, batch, group_size=2)
    np.testing.assert_allclose(out["adv"], [[a, a], [-a, 0.0]], rtol=0, atol=TOL)
    k3 = math.exp(-0.5) - 1 + 0.5
    # seq_mean_token_mean weights: 1/(2*2) for response 0's tokens, 1/2 for response 1's token
    np.testing.assert_allclose(out["weights"], [[0.25, 0.25], [0.5, 0.0]], rtol=0, atol=TOL)
    expected = 0.25 * (math.exp(0.1) * a - 0.04 * k3) + 0.25 * (1.2 * a) + 0.5 * (-math.exp(-0.1) * a)
    assert abs(float(out["J"]) - expected) < TOL
    assert out["clip_side"].tolist() == [[0, 1], [0, 0]]
    np.testing.assert_allclose(out["kl"], [[k3, 0.0], [0.0, 0.0]], rtol=0, atol=TOL)

    # Gradient with respect to logp (torch): unclipped token: w * (rho * A - beta * (1 - e^(ref - logp)));
    # the clipped token: only its KL gradient, which is 0 there (ref == logp); padding: 0.
    tb = {k: (torch.as_tensor(v) if isinstance(v, np.ndarray) else v) for k, v in batch.items()}
    tb["logp"] = tb["logp"].clone().requires_grad_(True)
    run_pipeline(c, tb, group_size=2)["J"].backward()
    grad = tb["logp"].grad.numpy()
    expected_grad = [[0.25 * (math.exp(0.1) * a - 0.04 * (1 - math.exp(-0.5))), 0.0],
                     [0.5 * (-math.exp(-0.1) * a), 0.0]]
    np.testing.assert_allclose(grad, expected_grad, rtol=0, atol=TOL)


def test_dr_grpo_constant_normalizer_and_group_mean():
    c = cfg("dr_grpo", max_new_tokens=8)
    assert c.param("aggregation", "normalizer") == 8
    # rewards [1, 0, 0, 0]: A = 0.75, -0.25, -0.25, -0.25 (no std division); lengths 2, 4, 1, 3
    lengths = np.array([2, 4, 1, 3])
    mask = mask_of(lengths, 4)
    logp = np.full((4, 4), -1.0)
    batch = {"rewards": np.array([1.0, 0.0, 0.0, 0.0]), "lengths": lengths, "mask": mask, "logp": logp,
             "old_logp": logp, "ref_logp": None, "values": None}
    out = run_pipeline(c, batch, group_size=4)
    np.testing.assert_allclose(out["adv"][:, 0], [0.75, -0.25, -0.25, -0.25], rtol=0, atol=TOL)
    np.testing.assert_allclose(out["weights"], mask / 32, rtol=0, atol=TOL)  # 1 / (G L) = 1 / (4 * 8)
    # J = (2 * 0.75 - 0.25 * (4 + 1 + 3)) / 32 = (1.5 - 2) / 32 = -0.015625 : long wrong answers weigh more
    assert abs(float(out["J"]) + 0.015625) < TOL
    assert out["kl"] is None


def test_dapo_shaping_and_token_mean():
    c = cfg("dapo", max_new_tokens=20)
    # the paper's cache is a fifth of the budget: 0.2 * 20 = 4; the floor is 0.5 against a 1/0 reward
    assert c.param("shaping", "max_length") == 20 and c.param("shaping", "cache_length") == 4
    assert c.param("shaping", "penalty") == 0.5
    # ramp starts after 20 - 4 = 16 tokens: 0.5 * (16 - |y|) / 4, and -0.5 beyond 20
    lengths = np.array([14, 16, 17, 18, 20, 21])
    shaped, term = O.shape_rewards(c, np.ones(6), lengths)
    np.testing.assert_allclose(term, [0.0, 0.0, -0.125, -0.25, -0.5, -0.5], rtol=0, atol=TOL)
    np.testing.assert_allclose(shaped, [1.0, 1.0, 0.875, 0.75, 0.5, 0.5], rtol=0, atol=TOL)
    # the paper's own floor of -1 (penalty 1, its +1/-1 reward)
    np.testing.assert_allclose(C.overlong_penalty(lengths, 20, 4, 1.0), [0.0, 0.0, -0.25, -0.5, -1.0, -1.0],
                               rtol=0, atol=TOL)
    shaped, term = O.shape_rewards(cfg("grpo"), np.ones(6), lengths)
    assert np.all(term == 0) and np.all(shaped == 1)
    # token_mean: every real token weighs 1 / (total tokens) = 1 / (3 + 1)
    w = O.weights(c, mask_of([3, 1], 3))
    np.testing.assert_allclose(w, [[0.25, 0.25, 0.25], [0.25, 0.0, 0.0]], rtol=0, atol=TOL)


def test_ppo_kl_in_reward_and_gae_by_hand():
    c = cfg("ppo")
    assert O.uses_critic(c) and O.uses_reference(c) and O.kl_in_reward(c)
    # k1 of the sampling policy against the reference: old_logp - ref_logp = 0.1, 0.2, 0.3
    old = np.array([[-1.0, -1.0, -1.0, 0.0]])
    ref = old - np.array([[0.1, 0.2, 0.3, 0.0]])
    mask = mask_of([3], 4)
    rkl = O.rollout_kl(c, old, ref, mask)
    np.testing.assert_allclose(rkl, [[0.1, 0.2, 0.3, 0.0]], rtol=0, atol=TOL)
    values = np.array([[0.5, 0.6, 0.7, 5.0]])
    adv, returns = O.compute_advantages(c, rewards=np.array([1.0]), group_size=1, mask=mask, rollout_kl=rkl,
                                        values=values)
    # token rewards with beta 0.02: -0.002, -0.004, 1 - 0.006 = 0.994
    # delta_2 = 0.994 - 0.7 = 0.294                 A_2 = 0.294
    # delta_1 = -0.004 + 0.7 - 0.6 = 0.096          A_1 = 0.096 + 0.95 * 0.294 = 0.3753
    # delta_0 = -0.002 + 0.6 - 0.5 = 0.098          A_0 = 0.098 + 0.95 * 0.3753 = 0.454535
    np.testing.assert_allclose(adv, [[0.454535, 0.3753, 0.294, 0.0]], rtol=0, atol=TOL)
    np.testing.assert_allclose(returns, [[0.954535, 0.9753, 0.994, 0.0]], rtol=0, atol=TOL)
    # the objective has no KL term of its own; the token's reported KL is the rollout's
    terms = O.token_terms(c, logp=old, old_logp=old, advantages=adv, mask=mask, rollout_kl=rkl)
    np.testing.assert_allclose(terms.objective, adv, rtol=0, atol=TOL)
    assert terms.kl is rkl
    with pytest.raises(ValueError, match="rollout_kl is required"):
        O.compute_advantages(c, rewards=np.array([1.0]), group_size=1, mask=mask, values=values)
    with pytest.raises(ValueError, match="GAE needs the critic's values"):
        O.compute_advantages(c, rewards=np.array([1.0]), group_size=1, mask=mask, rollout_kl=rkl)


def test_reinforce_batch_baseline_and_score_function_gradient():
    c = cfg("reinforce")
    assert not O.uses_critic(c) and not O.uses_reference(c)
    # rewards 1, 0, 1, 1: batch mean 0.75 -> A = 0.25, -0.75, 0.25, 0.25 on every token
    lengths = np.array([2, 1, 3, 1])
    mask = mask_of(lengths, 3)
    adv, _ = O.compute_advantages(c, rewards=np.array([1.0, 0.0, 1.0, 1.0]), group_size=4, mask=mask)
    np.testing.assert_allclose(adv, np.array([[0.25], [-0.75], [0.25], [0.25]]) * mask, rtol=0, atol=TOL)
    # ratio 'none': value 1, so J = sum w A = mean over responses of A = 0 ; the gradient is w * A
    logp = torch.tensor(-np.ones((4, 3)), dtype=torch.float64, requires_grad=True)
    terms = O.token_terms(c, logp=logp, old_logp=logp.detach() - 5.0, advantages=torch.as_tensor(adv),
                          mask=torch.as_tensor(mask))
    assert torch.equal(terms.ratio, torch.as_tensor(mask))  # never an importance weight, whatever old_logp is
    J, w = O.step_objective(c, terms.objective, torch.as_tensor(mask))
    assert abs(float(J.detach())) < TOL
    J.backward()
    expected = (w * torch.as_tensor(adv)).numpy()
    np.testing.assert_allclose(logp.grad.numpy(), expected, rtol=0, atol=TOL)
    assert logp.grad[1, 0] == -0.75 / 4  # 1 / (N |o_1|) * A = 1/4 * -0.75


def test_kl_in_loss_needs_reference():
    c = cfg("grpo")
    x = np.zeros((1, 2))
    with pytest.raises(ValueError, match="ref_logp is required"):
        O.token_terms(c, logp=x, old_logp=x, advantages=x, mask=np.ones((1, 2)))


def test_capabilities_per_spec():
    table = {a: (O.uses_critic(cfg(a)), O.uses_reference(cfg(a)), O.kl_in_reward(cfg(a))) for a in ALGORITHMS}
    assert table == {"reinforce": (False, False, False), "ppo": (True, True, True), "grpo": (False, True, False),
                     "dapo": (False, False, False), "dr_grpo": (False, False, False)}


# ---------------------------------------------------------------------------
# numpy / torch parity for every spec, with padding
# ---------------------------------------------------------------------------

def _random_batch(seed, n_groups=3, G=4, T=9):
    rng = np.random.default_rng(seed)
    B = n_groups * G
    lengths = rng.integers(1, T + 1, size=B)
    lengths[0] = T
    mask = mask_of(lengths, T)
    logp = -rng.exponential(size=(B, T))
    old = logp + rng.normal(0, 0.25, size=(B, T))  # some ratios beyond the clip range
    rewards = rng.integers(0, 2, size=B).astype(np.float64)
    rewards[:G] = 1.0  # one all-correct group
    return {"rewards": rewards, "lengths": lengths, "mask": mask, "logp": logp, "old_logp": old,
            "ref_logp": logp + rng.normal(0, 0.2, size=(B, T)), "values": rng.normal(0.5, 0.3, size=(B, T))}, G


@pytest.mark.parametrize("algorithm", ALGORITHMS)
@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_numpy_torch_parity_and_gradients(algorithm, seed):
    c = cfg(algorithm, max_new_tokens=10)
    batch, G = _random_batch(seed)
    out_np = run_pipeline(c, batch, G)
    tb = {k: torch.as_tensor(v) for k, v in batch.items()}
    tb["logp"] = tb["logp"].clone().requires_grad_(True)
    out_t = run_pipeline(c, tb, G)
    for key, value in out_np.items():
        if value is None:
            assert out_t[key] is None, key
            continue
        assert isinstance(out_t[key], torch.Tensor), key
        np.testing.assert_allclose(np.asarray(value, dtype=np.float64),
                                   out_t[key].detach().numpy().astype(np.float64), rtol=0, atol=1e-12, err_msg=key)
    assert np.all(out_np["weights"][batch["mask"] == 0] == 0)
    assert np.all(out_np["objective"][batch["mask"] == 0] == 0)
    out_t["J"].backward()
    grad = tb["logp"].grad
    assert grad is not None and torch.all(torch.isfinite(grad))
    assert torch.all(grad[tb["mask"] == 0] == 0)
    assert torch.count_nonzero(grad[tb["mask"] == 1]) > 0
    if algorithm == "ppo":
        # the clip acts somewhere in these batches: the clipped tokens get no gradient at all
        clipped = out_t["clip_side"] != 0
        assert torch.any(clipped)
        assert torch.all(grad[clipped] == 0)


def test_dppo_mask_composed_with_grpo_by_hand():
    """GRPO with prime-rl's DPPO mask in its clip slot (delta 0.2 each side), one group of 2, rewards [1, 0]:
    A = +-0.5 / (sqrt(0.5) + 1e-6) = +-a. Response 0: probabilities 0.5 -> 0.75 (up 0.25 > 0.2: masked, term 0)
    and 0.2 -> 0.3 (up 0.1: kept, ratio 1.5, term 1.5 a); response 1: 0.9 -> 0.6 (down 0.3 < -0.2 with A < 0:
    masked). Weights 1/4, 1/4, 1/2 (seq_mean_token_mean); no KL difference (ref = logp): J = 0.25 x 1.5 a.
    The gradient: 0.25 x 1.5 a on the kept token, 0 on the masked ones."""
    base = cfg("grpo")
    comps = dict(base.components)
    comps["clip"] = comps["clip"].model_copy(update={"kind": "dppo_mask", "params": {"delta_low": 0.2, "delta_high": 0.2}})
    c = base.model_copy(update={"components": comps})
    a = 0.5 / (math.sqrt(0.5) + 1e-6)
    old = np.log(np.array([[0.5, 0.2], [0.9, 1.0]]))
    logp = np.log(np.array([[0.75, 0.3], [0.6, 1.0]]))
    mask = mask_of([2, 1], 2)
    batch = {"rewards": np.array([1.0, 0.0]), "lengths": np.array([2, 1]), "mask": mask, "logp": logp,
             "old_logp": old, "ref_logp": logp.copy(), "values": None}
    out = run_pipeline(c, batch, group_size=2)
    assert out["clip_side"].tolist() == [[1, 0], [-1, 0]]
    np.testing.assert_allclose(out["surrogate"], [[0.0, 1.5 * a], [0.0, 0.0]], rtol=0, atol=1e-9)
    assert abs(float(out["J"]) - 0.25 * 1.5 * a) < 1e-9
    tb = {k: (torch.as_tensor(v) if isinstance(v, np.ndarray) else v) for k, v in batch.items()}
    tb["logp"] = tb["logp"].clone().requires_grad_(True)
    run_pipeline(c, tb, group_size=2)["J"].backward()
    np.testing.assert_allclose(tb["logp"].grad.numpy(), [[0.0, 0.25 * 1.5 * a], [0.0, 0.0]], rtol=0, atol=1e-9)
