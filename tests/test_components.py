"""The component math (unipo_build.core.components) against hand-worked numbers, on numpy and torch.

Every expected number below is worked out by hand in the comment next to it, not by
calling the function under test another way.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from unipo_build.core import components as C
from unipo_build.core import objective as O
from unipo_build.core.registry import REGISTRY

TOL = 1e-12


def t64(x):
    return torch.as_tensor(np.asarray(x, dtype=np.float64))


def as_np(x):
    return x.detach().numpy() if isinstance(x, torch.Tensor) else np.asarray(x)


# ---------------------------------------------------------------------------
# Advantages
# ---------------------------------------------------------------------------

class TestGroupZScore:
    def test_sample_std_convention(self):
        # mean 0.75; sample variance (3 * 0.0625 + 0.5625) / 3 = 0.25 -> std 0.5
        # (1 - 0.75) / 0.5 = 0.5 ; (0 - 0.75) / 0.5 = -1.5
        adv = C.group_zscore_advantage(np.array([[1.0, 1.0, 1.0, 0.0]]), std_ddof=1, eps=0.0)
        np.testing.assert_allclose(adv, [[0.5, 0.5, 0.5, -1.5]], rtol=0, atol=TOL)

    def test_population_std_convention(self):
        # population variance 0.75 / 4 = 0.1875 -> std sqrt(3)/4 = 0.4330127
        # 0.25 / 0.4330127 = 1/sqrt(3) = 0.57735 ; -0.75 / 0.4330127 = -sqrt(3) = -1.73205
        adv = C.group_zscore_advantage(np.array([[1.0, 1.0, 1.0, 0.0]]), std_ddof=0, eps=0.0)
        np.testing.assert_allclose(adv[0, :3], 1 / math.sqrt(3), rtol=0, atol=TOL)
        np.testing.assert_allclose(adv[0, 3], -math.sqrt(3), rtol=0, atol=TOL)
        assert round(float(adv[0, 0]), 3) == 0.577 and round(float(adv[0, 3]), 3) == -1.732

    def test_eps_is_added_to_the_std(self):
        # std 0.5 + eps 0.5 = 1 -> advantages are just r - mean
        adv = C.group_zscore_advantage(np.array([[1.0, 1.0, 1.0, 0.0]]), std_ddof=1, eps=0.5)
        np.testing.assert_allclose(adv, [[0.25, 0.25, 0.25, -0.75]], rtol=0, atol=TOL)

    def test_groups_are_independent(self):
        adv = C.group_zscore_advantage(np.array([[1.0, 1.0, 1.0, 0.0], [1.0, 0.0, 1.0, 0.0]]), std_ddof=1, eps=0.0)
        # second group: mean 0.5, sample std sqrt(4 * 0.25 / 3) = 0.57735 -> +-0.866025
        np.testing.assert_allclose(adv[1], [math.sqrt(3) / 2, -math.sqrt(3) / 2] * 2, rtol=0, atol=TOL)
        np.testing.assert_allclose(adv[0], [0.5, 0.5, 0.5, -1.5], rtol=0, atol=TOL)

    @pytest.mark.parametrize("eps", [1e-6, 0.0])
    @pytest.mark.parametrize("value", [1.0, 0.0, 0.3, -0.25, 1 / 3, 0.1])
    @pytest.mark.parametrize("G", [2, 3, 5, 7, 8, 16])
    def test_equal_rewards_give_exactly_zero(self, value, G, eps):
        # Every response equal: every advantage is 0, with eps 0 as well (no 0/0), and for
        # fractional rewards whose mean and std carry rounding error.
        for rewards in (np.full((2, G), value), t64(np.full((2, G), value))):
            adv = as_np(C.group_zscore_advantage(rewards, std_ddof=1, eps=eps))
            assert np.all(adv == 0.0), adv


def test_group_mean():
    # mean 0.75 -> 0.25, 0.25, 0.25, -0.75 ; second group mean 0.5
    adv = C.group_mean_advantage(np.array([[1.0, 1.0, 1.0, 0.0], [0.0, 1.0, 0.5, 0.5]]))
    np.testing.assert_allclose(adv, [[0.25, 0.25, 0.25, -0.75], [-0.5, 0.5, 0.0, 0.0]], rtol=0, atol=TOL)


def test_leave_one_out_hand_values():
    # r_0 = 1, others mean (1 + 1 + 0) / 3 = 2/3 -> 1/3 ; r_3 = 0, others mean 1 -> -1
    adv = C.leave_one_out_advantage(np.array([[1.0, 1.0, 1.0, 0.0]]))
    np.testing.assert_allclose(adv, [[1 / 3, 1 / 3, 1 / 3, -1.0]], rtol=0, atol=TOL)


@given(arrays(np.float64, st.tuples(st.integers(1, 4), st.integers(2, 9)),
              elements=st.floats(-10, 10, allow_nan=False, allow_infinity=False)))
@settings(max_examples=60, deadline=None)
def test_leave_one_out_equals_scaled_group_mean(rewards):
    G = rewards.shape[-1]
    expected = G / (G - 1) * (rewards - rewards.mean(axis=-1, keepdims=True))
    np.testing.assert_allclose(C.leave_one_out_advantage(rewards), expected, rtol=0, atol=1e-9)


def test_leave_one_out_needs_two():
    with pytest.raises(ValueError, match="at least 2"):
        C.leave_one_out_advantage(np.array([[1.0]]))


def test_batch_whiten_hand_values():
    # values 1, 2, 3 (4 is padding): mean 2, population std sqrt(2/3)
    values = np.array([[1.0, 2.0], [3.0, 4.0]])
    mask = np.array([[1.0, 1.0], [1.0, 0.0]])
    s = math.sqrt(2 / 3)
    out = C.batch_whiten(values, mask, eps=0.0)
    np.testing.assert_allclose(out, [[-1 / s, 0.0], [1 / s, 0.0]], rtol=0, atol=TOL)
    # without a mask: mean 2.5, std sqrt(1.25)
    out = C.batch_whiten(values, eps=0.0)
    np.testing.assert_allclose(out, (values - 2.5) / math.sqrt(1.25), rtol=0, atol=TOL)


def test_reward_to_go_hand_values():
    # gamma 0.9: G_2 = 1 ; G_1 = 0 + 0.9 * 1 = 0.9 ; G_0 = 0.1 + 0.9 * 0.9 = 0.91 ; padding 0
    rewards = np.array([[0.1, 0.0, 1.0, 5.0]])
    mask = np.array([[1.0, 1.0, 1.0, 0.0]])
    np.testing.assert_allclose(C.reward_to_go(rewards, mask, gamma=0.9), [[0.91, 0.9, 1.0, 0.0]], rtol=0, atol=TOL)


def test_gae_hand_values():
    # 3 tokens, gamma 1, lambda 0.95, reward 1 on the last token, V = 0.5, 0.6, 0.7, padding after.
    # delta_2 = 1 + 0 - 0.7 = 0.3          A_2 = 0.3
    # delta_1 = 0 + 0.7 - 0.6 = 0.1        A_1 = 0.1 + 0.95 * 0.3 = 0.385
    # delta_0 = 0 + 0.6 - 0.5 = 0.1        A_0 = 0.1 + 0.95 * 0.385 = 0.46575
    # returns = A + V = 0.96575, 0.985, 1.0 ; the padding token's value (9) is ignored.
    rewards = np.array([[0.0, 0.0, 1.0, 0.0]])
    values = np.array([[0.5, 0.6, 0.7, 9.0]])
    mask = np.array([[1.0, 1.0, 1.0, 0.0]])
    adv, ret = C.gae_advantage(rewards, values, mask, gamma=1.0, lam=0.95)
    np.testing.assert_allclose(adv, [[0.46575, 0.385, 0.3, 0.0]], rtol=0, atol=TOL)
    np.testing.assert_allclose(ret, [[0.96575, 0.985, 1.0, 0.0]], rtol=0, atol=TOL)


def test_gae_with_discount():
    # gamma 0.5, lambda 1: A_t = discounted return - V_t (Monte Carlo advantage)
    # token rewards 0, 0, 1 -> returns 0.25, 0.5, 1 ; V = 0.1, 0.2, 0.3 -> A = 0.15, 0.3, 0.7
    adv, ret = C.gae_advantage(np.array([[0.0, 0.0, 1.0]]), np.array([[0.1, 0.2, 0.3]]), np.ones((1, 3)),
                               gamma=0.5, lam=1.0)
    np.testing.assert_allclose(adv, [[0.15, 0.3, 0.7]], rtol=0, atol=TOL)
    np.testing.assert_allclose(ret, [[0.25, 0.5, 1.0]], rtol=0, atol=TOL)


def test_terminal_token_rewards():
    # lengths 3 and 1 in a width-4 batch: the reward sits on token 2 and token 0
    mask = np.array([[1.0, 1.0, 1.0, 0.0], [1.0, 0.0, 0.0, 0.0]])
    out = C.terminal_token_rewards(np.array([1.0, 0.5]), mask)
    np.testing.assert_array_equal(out, [[0.0, 0.0, 1.0, 0.0], [0.5, 0.0, 0.0, 0.0]])


# ---------------------------------------------------------------------------
# Ratios
# ---------------------------------------------------------------------------

def test_token_ratio_in_log_space():
    # exp(-1 - (-1.5)) = e^0.5 ; probabilities of 1e-300 would underflow as a quotient, logs do not
    out = C.token_ratio(np.array([-1.0, -700.0]), np.array([-1.5, -700.0 - math.log(2)]))
    np.testing.assert_allclose(out, [math.exp(0.5), 2.0], rtol=1e-12)


def test_sequence_ratio_is_geometric_mean():
    # response 0: token ratios 2 and 8 -> geometric mean 4, on both tokens, 0 on padding (whose
    # garbage log-probs are ignored) ; response 1: one token with ratio 0.5
    logp = np.array([[math.log(2), math.log(8), 123.0], [math.log(0.5), 0.0, 0.0]])
    mask = np.array([[1.0, 1.0, 0.0], [1.0, 0.0, 0.0]])
    out = C.sequence_ratio(logp, np.zeros_like(logp), mask)
    np.testing.assert_allclose(out, [[4.0, 4.0, 0.0], [0.5, 0.0, 0.0]], rtol=1e-14, atol=TOL)


def test_sequence_ratio_empty_response_is_finite():
    out = C.sequence_ratio(np.zeros((1, 3)), np.zeros((1, 3)), np.zeros((1, 3)))
    np.testing.assert_array_equal(out, np.zeros((1, 3)))


def test_self_ratio_value_and_gradient():
    logp = torch.tensor([-0.3, -2.0, -5.0], dtype=torch.float64, requires_grad=True)
    ratio = C.self_ratio(logp)
    assert torch.equal(ratio.detach(), torch.ones(3, dtype=torch.float64))
    adv = torch.tensor([1.5, -0.5, 2.0], dtype=torch.float64)
    (ratio * adv).sum().backward()
    grad_ratio = logp.grad.clone()

    logp2 = logp.detach().clone().requires_grad_(True)
    (logp2 * adv).sum().backward()  # REINFORCE: A * grad log p
    assert torch.allclose(grad_ratio, logp2.grad, rtol=0, atol=TOL)
    assert torch.allclose(grad_ratio, adv, rtol=0, atol=TOL)  # d/dlogp of A * logp is A
    assert np.all(C.self_ratio(np.array([-0.3, -2.0])) == 1.0)


# ---------------------------------------------------------------------------
# Clipping
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("ratio, adv, eps_low, eps_high, value, side", [
    (1.35, 1.0, 0.2, 0.28, 1.28, C.CLIP_HIGH),      # DAPO: min(1.35, 1.28)
    (1.35, 1.0, 0.2, 0.2, 1.2, C.CLIP_HIGH),        # GRPO: min(1.35, 1.2)
    (1.35, 2.0, 0.2, 0.2, 2.4, C.CLIP_HIGH),        # min(2.7, 2.4)
    (0.7, -1.0, 0.2, 0.28, -0.8, C.CLIP_LOW),       # min(-0.7, -0.8)
    (0.5, -2.0, 0.2, 0.2, -1.6, C.CLIP_LOW),        # min(-1.0, -1.6)
    (1.35, -1.0, 0.2, 0.28, -1.35, C.CLIP_NONE),    # min(-1.35, -1.28): unclipped wins, keeps pushing down
    (0.7, 1.0, 0.2, 0.2, 0.7, C.CLIP_NONE),         # min(0.7, 0.8): unclipped wins, keeps pushing up
    (1.1, 1.0, 0.2, 0.2, 1.1, C.CLIP_NONE),         # inside the trust region
    (1.25, 1.0, 0.2, 0.28, 1.25, C.CLIP_NONE),      # inside DAPO's wider one, outside GRPO's
    (1.25, 1.0, 0.2, 0.2, 1.2, C.CLIP_HIGH),
    (1.35, 0.0, 0.2, 0.2, 0.0, C.CLIP_NONE),        # zero advantage: nothing to clip
    (1.0 + 0.2, 1.0, 0.2, 0.2, 1.0 + 0.2, C.CLIP_NONE),    # tie at the upper bound: not clipped
    (1.0 - 0.2, -1.0, 0.2, 0.2, -(1.0 - 0.2), C.CLIP_NONE),  # tie at the lower bound: not clipped
    (1.0 + 0.28, 1.0, 0.2, 0.28, 1.0 + 0.28, C.CLIP_NONE),
])
def test_clipped_surrogate(ratio, adv, eps_low, eps_high, value, side):
    for lib in (np.asarray, t64):
        surrogate, clip_side = C.clipped_surrogate(lib([ratio]), lib([adv]), eps_low, eps_high)
        assert abs(float(surrogate[0]) - value) < TOL
        assert int(clip_side[0]) == side


def test_no_clipping_and_side_dtype():
    surrogate, side = C.clipped_surrogate(np.array([3.0, 0.1]), np.array([1.0, -1.0]), None, None)
    np.testing.assert_allclose(surrogate, [3.0, -0.1], rtol=0, atol=TOL)
    assert side.dtype == np.int8 and np.all(side == 0)


def test_clipped_tokens_have_zero_gradient():
    # d surrogate / d ratio: A where not clipped, 0 where the clipped branch won
    ratio = torch.tensor([1.35, 0.7, 1.35, 0.7, 1.1], dtype=torch.float64, requires_grad=True)
    adv = torch.tensor([1.0, -1.0, -1.0, 1.0, 2.0], dtype=torch.float64)
    surrogate, side = C.clipped_surrogate(ratio, adv, 0.2, 0.2)
    surrogate.sum().backward()
    assert side.tolist() == [1, -1, 0, 0, 0]
    assert ratio.grad.tolist() == [0.0, 0.0, -1.0, 1.0, 2.0]


# ---------------------------------------------------------------------------
# KL estimators
# ---------------------------------------------------------------------------

def test_kl_hand_values():
    # log r = log pi_ref - log pi_theta = -1.5 - (-1) = -0.5
    # k1 = 0.5 ; k2 = 0.125 ; k3 = e^-0.5 - 1 + 0.5 = 0.10653065971263342
    logp, ref = np.array([-1.0]), np.array([-1.5])
    assert abs(C.kl_estimate(logp, ref, "k1")[0] - 0.5) < TOL
    assert abs(C.kl_estimate(logp, ref, "k2")[0] - 0.125) < TOL
    assert abs(C.kl_estimate(logp, ref, "k3")[0] - 0.10653065971263342) < TOL
    # k1 is negative when the reference is more likely: log r = +0.5 -> k1 = -0.5
    assert abs(C.kl_estimate(ref, logp, "k1")[0] + 0.5) < TOL
    # k3 at log r = +0.5: e^0.5 - 1 - 0.5 = 0.14872127070012814
    assert abs(C.kl_estimate(ref, logp, "k3")[0] - 0.14872127070012814) < TOL


def test_kl_zero_when_equal_and_unknown_estimator():
    x = np.array([-0.1, -3.0])
    for k in C.KL_ESTIMATORS:
        assert np.all(C.kl_estimate(x, x, k) == 0.0)
    with pytest.raises(ValueError, match="unknown KL estimator 'k4'"):
        C.kl_estimate(x, x, "k4")


@pytest.mark.parametrize("d", [1e-3, 1e-5, -1e-5, 1e-8, -1e-8, 1e-9])
def test_k3_exact_for_tiny_differences(d):
    # k3 = e^d - 1 - d = d^2/2 + d^3/6 + ... ; the naive (r - 1) - log r loses every digit here
    # (at d = 1e-8 it even comes out negative: exp(1e-8) - 1 - 1e-8 = -6e-17).
    k3 = float(C.kl_estimate(np.array([0.0]), np.array([d]), "k3")[0])
    series = d * d / 2 + d**3 / 6 + d**4 / 24
    assert k3 > 0
    assert abs(k3 - series) <= 1e-6 * series


@given(arrays(np.float64, st.integers(1, 30), elements=st.floats(-30, 0, allow_nan=False)),
       arrays(np.float64, st.integers(1, 30), elements=st.floats(-30, 0, allow_nan=False)))
@settings(max_examples=200, deadline=None)
def test_k3_never_negative(logp, ref):
    n = min(len(logp), len(ref))
    logp, ref = logp[:n], ref[:n]
    assert np.all(C.kl_estimate(logp, ref, "k3") >= 0)
    assert torch.all(C.kl_estimate(t64(logp), t64(ref), "k3") >= 0)
    assert np.all(C.kl_estimate(logp, ref, "k2") >= 0)


# ---------------------------------------------------------------------------
# Aggregation
# ---------------------------------------------------------------------------

def test_token_mean_vs_seq_mean_shares():
    # 10 and 1000 tokens: token_mean gives 10/1010 = 0.0099 and 1000/1010 = 0.9901
    token_mean = O.response_weight_shares("token_mean", [10, 1000])
    np.testing.assert_allclose(token_mean, [10 / 1010, 1000 / 1010], rtol=0, atol=TOL)
    assert round(float(token_mean[0]), 2) == 0.01 and round(float(token_mean[1]), 2) == 0.99
    np.testing.assert_allclose(O.response_weight_shares("seq_mean_token_mean", [10, 1000]), [0.5, 0.5], atol=TOL)
    np.testing.assert_allclose(O.response_weight_shares("seq_mean_token_sum", [10, 1000]),
                               [10 / 1010, 1000 / 1010], atol=TOL)
    np.testing.assert_allclose(O.response_weight_shares("constant_normalizer", [10, 1000], 1024),
                               [10 / 1010, 1000 / 1010], atol=TOL)


def test_aggregation_weights_per_token():
    mask = (np.arange(1000)[None, :] < np.array([[10], [1000]])).astype(np.float64)
    w = O.aggregation_weights("token_mean", mask)
    assert w[0, 0] == w[1, 999] == 1 / 1010 and w[0, 10] == 0
    w = O.aggregation_weights("seq_mean_token_mean", mask)
    # 1 / (N |o_i|): 1/20 for the short response's tokens, 1/2000 for the long one's
    assert abs(w[0, 0] - 1 / 20) < TOL and abs(w[1, 0] - 1 / 2000) < TOL and w[0, 10] == 0
    np.testing.assert_allclose(w.sum(axis=1), [0.5, 0.5], atol=TOL)
    w = O.aggregation_weights("constant_normalizer", mask, normalizer=1024)
    assert abs(w[0, 0] - 1 / (2 * 1024)) < TOL and abs(w[1, 999] - 1 / (2 * 1024)) < TOL and w[0, 10] == 0
    w = O.aggregation_weights("seq_mean_token_sum", mask)
    assert w[0, 0] == w[1, 500] == 0.5


def test_aggregation_ignores_empty_responses():
    # N counts responses with at least one token: 2 here, not 3
    mask = np.array([[1.0, 1.0], [0.0, 0.0], [1.0, 0.0]])
    w = O.aggregation_weights("seq_mean_token_mean", mask)
    np.testing.assert_allclose(w, [[0.25, 0.25], [0.0, 0.0], [0.5, 0.0]], atol=TOL)
    w = O.aggregation_weights("constant_normalizer", mask, normalizer=4)
    np.testing.assert_allclose(w, [[0.125, 0.125], [0.0, 0.0], [0.125, 0.0]], atol=TOL)


def test_aggregation_errors():
    mask = np.ones((2, 3))
    with pytest.raises(ValueError, match="positive normalizer"):
        O.aggregation_weights("constant_normalizer", mask)
    with pytest.raises(ValueError, match="positive normalizer"):
        O.aggregation_weights("constant_normalizer", mask, normalizer=0)
    with pytest.raises(ValueError, match="unknown aggregation component 'sum'"):
        O.aggregation_weights("sum", mask)


# ---------------------------------------------------------------------------
# Filter and shaping
# ---------------------------------------------------------------------------

def test_dynamic_sampling_keep():
    correct = np.array([[1, 1, 1, 1], [0, 0, 0, 0], [1, 0, 1, 0], [0, 0, 0, 1], [1, 1, 1, 0]])
    assert C.dynamic_sampling_keep(correct).tolist() == [False, False, True, True, True]
    assert C.dynamic_sampling_keep(torch.as_tensor(correct).bool()).tolist() == [False, False, True, True, True]


@pytest.mark.parametrize("length, expected", [
    (100, 0.0),
    (12288, 0.0),               # L_max - L_cache = 16384 - 4096: last length with no penalty
    (12289, -1 / 4096),         # (12288 - 12289) / 4096
    (14336, -0.5),              # halfway through the cache
    (16383, -4095 / 4096),
    (16384, -1.0),              # at L_max: (12288 - 16384) / 4096
    (16385, -1.0),              # beyond L_max
    (40000, -1.0),
])
def test_overlong_penalty_dapo_eq13(length, expected):
    for lib in (np.asarray, torch.as_tensor):
        out = C.overlong_penalty(lib([length]), 16384, 4096)
        assert abs(float(out[0]) - expected) < TOL


# ---------------------------------------------------------------------------
# Critic
# ---------------------------------------------------------------------------

def test_clipped_value_loss_hand_values():
    # token 0: V 1.0, V_old 0.5, R 0 ; clipped V = 0.5 + 0.2 = 0.7 -> max(1.0, 0.49) = 1.0
    # token 1: V 0.0, V_old 0.5, R 1 ; clipped V = 0.3 -> max(1.0, 0.49) = 1.0
    # token 2: V 0.6, V_old 0.5, R 0 ; clipped V = 0.6 -> 0.36 ; token 3 is padding
    # 0.5 * (1.0 + 1.0 + 0.36) / 3 = 0.39333...
    values = np.array([[1.0, 0.0, 0.6, 9.0]])
    old = np.array([[0.5, 0.5, 0.5, 0.0]])
    returns = np.array([[0.0, 1.0, 0.0, 0.0]])
    mask = np.array([[1.0, 1.0, 1.0, 0.0]])
    assert abs(C.clipped_value_loss(values, old, returns, mask, 0.2) - 2.36 / 6) < TOL
    # clip where the clipped value is further away: V 0.1, V_old 1.0, R 0.95 -> clipped 0.8
    # max(0.7225, 0.0225) = 0.7225 -> loss 0.36125 ; unclipped 0.5 * 0.7225 too
    assert abs(C.clipped_value_loss(np.array([0.1]), np.array([1.0]), np.array([0.95]), np.array([1.0]), 0.2)
               - 0.36125) < TOL
    # where clipping raises the loss: V 1.0, V_old 0.0, R 1.0 -> unclipped 0, clipped V 0.2 -> 0.64
    assert abs(C.clipped_value_loss(np.array([1.0]), np.array([0.0]), np.array([1.0]), np.array([1.0]), 0.2)
               - 0.32) < TOL
    assert C.clipped_value_loss(np.array([1.0]), np.array([0.0]), np.array([1.0]), np.array([1.0]), None) == 0.0


def test_explained_variance():
    returns = np.array([[1.0, 2.0, 3.0, 7.0]])
    mask = np.array([[1.0, 1.0, 1.0, 0.0]])
    assert abs(C.explained_variance(returns, returns, mask) - 1.0) < TOL
    # V = mean(R) everywhere -> residual variance = Var(R) -> 0
    assert abs(C.explained_variance(np.full((1, 4), 2.0), returns, mask)) < TOL
    assert np.isnan(C.explained_variance(np.zeros((1, 2)), np.ones((1, 2)), np.ones((1, 2))))


# ---------------------------------------------------------------------------
# numpy / torch parity and gradients
# ---------------------------------------------------------------------------

def _random_batch(seed, B=6, T=7):
    rng = np.random.default_rng(seed)
    lengths = rng.integers(1, T + 1, size=B)
    lengths[0] = T
    mask = (np.arange(T)[None, :] < lengths[:, None]).astype(np.float64)
    return {
        "rewards_grouped": rng.integers(0, 2, size=(B // 3, 3)).astype(np.float64) + rng.normal(0, 0.1, (B // 3, 3)),
        "rewards": rng.integers(0, 2, size=B).astype(np.float64),
        "token_rewards": rng.normal(size=(B, T)) * mask,
        "values": rng.normal(size=(B, T)),
        "old_values": rng.normal(size=(B, T)),
        "logp": -rng.exponential(size=(B, T)),
        "old_logp": -rng.exponential(size=(B, T)),
        "ref_logp": -rng.exponential(size=(B, T)),
        "adv": rng.normal(size=(B, T)),
        "mask": mask,
        "lengths": lengths,
        "correct": rng.integers(0, 2, size=(B // 3, 3)),
    }


def _cases(b):
    """(name, function of one namespace-converted batch) for every public function."""
    return [
        ("zscore1", lambda d: C.group_zscore_advantage(d["rewards_grouped"], std_ddof=1)),
        ("zscore0", lambda d: C.group_zscore_advantage(d["rewards_grouped"], std_ddof=0, eps=0.0)),
        ("group_mean", lambda d: C.group_mean_advantage(d["rewards_grouped"])),
        ("loo", lambda d: C.leave_one_out_advantage(d["rewards_grouped"])),
        ("whiten", lambda d: C.batch_whiten(d["values"])),
        ("whiten_mask", lambda d: C.batch_whiten(d["values"], d["mask"])),
        ("rtg", lambda d: C.reward_to_go(d["token_rewards"], d["mask"], gamma=0.9)),
        ("gae_adv", lambda d: C.gae_advantage(d["token_rewards"], d["values"], d["mask"], 0.99, 0.9)[0]),
        ("gae_ret", lambda d: C.gae_advantage(d["token_rewards"], d["values"], d["mask"], 0.99, 0.9)[1]),
        ("terminal", lambda d: C.terminal_token_rewards(d["rewards"], d["mask"])),
        ("token_ratio", lambda d: C.token_ratio(d["logp"], d["old_logp"])),
        ("seq_ratio", lambda d: C.sequence_ratio(d["logp"], d["old_logp"], d["mask"])),
        ("self_ratio", lambda d: C.self_ratio(d["logp"])),
        ("surr_sym", lambda d: C.clipped_surrogate(C.token_ratio(d["logp"], d["old_logp"]), d["adv"], 0.2, 0.2)[0]),
        ("side_sym", lambda d: C.clipped_surrogate(C.token_ratio(d["logp"], d["old_logp"]), d["adv"], 0.2, 0.2)[1]),
        ("surr_asym", lambda d: C.clipped_surrogate(C.token_ratio(d["logp"], d["old_logp"]), d["adv"], 0.2, 0.28)[0]),
        ("side_asym", lambda d: C.clipped_surrogate(C.token_ratio(d["logp"], d["old_logp"]), d["adv"], 0.2, 0.28)[1]),
        ("surr_none", lambda d: C.clipped_surrogate(C.token_ratio(d["logp"], d["old_logp"]), d["adv"], None, None)[0]),
        ("k1", lambda d: C.kl_estimate(d["logp"], d["ref_logp"], "k1")),
        ("k2", lambda d: C.kl_estimate(d["logp"], d["ref_logp"], "k2")),
        ("k3", lambda d: C.kl_estimate(d["logp"], d["ref_logp"], "k3")),
        *[(f"agg_{k}", (lambda k: lambda d: O.aggregation_weights(k, d["mask"], 16))(k)) for k in tuple(REGISTRY["aggregation"])],
        ("keep", lambda d: C.dynamic_sampling_keep(d["correct"])),
        ("overlong", lambda d: C.overlong_penalty(d["lengths"], 6, 3)),
        ("value_loss", lambda d: C.clipped_value_loss(d["values"], d["old_values"], d["token_rewards"], d["mask"], 0.2)),
        ("value_loss_noclip", lambda d: C.clipped_value_loss(d["values"], d["old_values"], d["token_rewards"], d["mask"], None)),
        ("expl_var", lambda d: C.explained_variance(d["values"], d["token_rewards"], d["mask"])),
    ]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_numpy_torch_parity(seed):
    batch = _random_batch(seed)
    torch_batch = {k: torch.as_tensor(v) for k, v in batch.items()}
    assert torch_batch["logp"].dtype == torch.float64
    for name, fn in _cases(batch):
        out_np = fn(batch)
        out_t = fn(torch_batch)
        assert isinstance(out_t, torch.Tensor), name
        assert not isinstance(out_np, torch.Tensor), name
        a, b = np.asarray(out_np, dtype=np.float64), out_t.detach().numpy().astype(np.float64)
        assert a.shape == b.shape, name
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-12, err_msg=name)


def test_gradients_flow_on_torch():
    batch = _random_batch(5)
    logp = torch.as_tensor(batch["logp"]).requires_grad_(True)
    old = torch.as_tensor(batch["old_logp"])
    ref = torch.as_tensor(batch["ref_logp"])
    mask = torch.as_tensor(batch["mask"])
    adv = torch.as_tensor(batch["adv"])
    for ratio_fn in (lambda: C.token_ratio(logp, old), lambda: C.sequence_ratio(logp, old, mask),
                     lambda: C.self_ratio(logp)):
        logp.grad = None
        surrogate, _ = C.clipped_surrogate(ratio_fn(), adv, 0.2, 0.28)
        kl = C.kl_estimate(logp, ref, "k3")
        w = O.aggregation_weights("token_mean", mask)
        (w * (surrogate - 0.04 * kl)).sum().backward()
        g = logp.grad
        assert g is not None and torch.all(torch.isfinite(g))
        assert torch.all(g[mask == 0] == 0)
        assert torch.count_nonzero(g[mask == 1]) > 0


def test_k3_gradient_matches_hand_derivative():
    # d k3 / d logp = d/dlogp [e^(ref - logp) - 1 - (ref - logp)] = 1 - e^(ref - logp)
    logp = torch.tensor([-1.0, -0.2], dtype=torch.float64, requires_grad=True)
    ref = torch.tensor([-1.5, -0.9], dtype=torch.float64)
    C.kl_estimate(logp, ref, "k3").sum().backward()
    expected = 1 - torch.exp(ref - logp.detach())
    assert torch.allclose(logp.grad, expected, rtol=0, atol=TOL)


# ---------------------------------------------------------------------------
# DPPO's mask on the change of a token's probability (prime-rl's default loss)
# ---------------------------------------------------------------------------

def test_dppo_mask_by_hand_on_numpy_and_torch():
    # delta_low = delta_high = 0.2; (pi_old, rho, A) -> change pi_old (rho - 1), term, side:
    #   (0.5, 1.5, +1): +0.25 > 0.2 with A > 0: masked high, term 0, side 1
    #   (0.5, 1.3, +1): +0.15, kept: 1.3 x 1 = 1.3 (PPO's clip at 1.2 would have clipped it)
    #   (0.1, 2.5, +2): +0.15: kept, 2.5 x 2 = 5 (an improbable token's ratio may go far past PPO's clip)
    #   (0.9, 0.7, -1): -0.27 < -0.2 with A < 0: masked low, term 0, side -1
    #   (0.9, 1.5, -1): +0.45, but A < 0 pushes down: kept, 1.5 x -1 = -1.5
    #   (0.15, 0.1, -1): -0.135: a token of probability 0.15 cannot fall by 0.2, kept, 0.1 x -1 = -0.1
    #   (0.5, 2.0, 0): A = 0: term 0, side 0 (prime-rl's is_masked_high counts only A > 0)
    old = np.log([0.5, 0.5, 0.1, 0.9, 0.9, 0.15, 0.5])
    rho = np.array([1.5, 1.3, 2.5, 0.7, 1.5, 0.1, 2.0])
    adv = np.array([1.0, 1.0, 2.0, -1.0, -1.0, -1.0, 0.0])
    for lib in (np.asarray, t64):
        surrogate, side = C.dppo_mask_surrogate(lib(rho), lib(adv), lib(old), 0.2, 0.2)
        np.testing.assert_allclose(as_np(surrogate), [0.0, 1.3, 5.0, 0.0, -1.5, -0.1, 0.0], rtol=0, atol=1e-9)
        assert as_np(side).tolist() == [1, 0, 0, -1, 0, 0, 0]


def test_dppo_mask_gradient_is_rho_a_where_kept_and_zero_where_masked():
    # d term / d log pi: rho A on a kept token (1.3 x 1 = 1.3; 1.5 x -1 = -1.5), 0 on a masked one
    logp = torch.log(torch.tensor([0.75, 0.65, 0.63, 1.35], dtype=torch.float64)).requires_grad_()
    old = torch.log(torch.tensor([0.5, 0.5, 0.9, 0.9], dtype=torch.float64))
    adv = torch.tensor([1.0, 1.0, -1.0, -1.0], dtype=torch.float64)
    ratio = C.token_ratio(logp, old)  # 1.5, 1.3, 0.7, 1.5
    surrogate, side = C.dppo_mask_surrogate(ratio, adv, old, 0.2, 0.2)
    surrogate.sum().backward()
    assert side.tolist() == [1, 0, -1, 0]
    np.testing.assert_allclose(logp.grad.numpy(), [0.0, 1.3, 0.0, -1.5], rtol=0, atol=1e-12)
    # the registry's closed form (numpy, what a site build uses) gives the same
    grad = REGISTRY["clip"]["dppo_mask"].grad(np.array([1.5, 1.3, 0.7, 1.5]), adv.numpy(),
                                              {"delta_low": 0.2, "delta_high": 0.2}, old_logp=old.numpy())
    np.testing.assert_allclose(grad, [0.0, 1.3, 0.0, -1.5], rtol=0, atol=1e-12)
