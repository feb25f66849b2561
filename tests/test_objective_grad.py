"""Each clip kind's closed-form gradient (registry ``grad``, numpy only: a site build needs no torch)
against torch's autograd through the kind's own ``apply``, the trainer's path, on a grid of ratios and
advantages that crosses every bound; and hand-worked values of each form."""

from __future__ import annotations

import numpy as np
import pytest

from unipo_build.core import registry
from unipo_build.core.objective import term_and_gradient, terms_and_gradients

RATIOS = [0.05, 0.5, 0.79, 0.8, 0.81, 0.95, 1.0, 1.05, 1.19, 1.2, 1.21, 1.28, 1.3, 2.0, 2.9, 3.0, 3.1, 6.0]
ADVANTAGES = [-2.0, -0.7, 0.0, 0.3, 1.5]

# Parameters of each token-level clip kind, chosen so that the grid crosses every bound.
PARAMS = {
    "none": {},
    "symmetric": {"eps": 0.2},
    "asymmetric": {"eps_low": 0.2, "eps_high": 0.28},
    "dual_clip": {"eps_low": 0.2, "eps_high": 0.2, "c": 3.0},
    "cispo": {"eps_high": 0.28},
    "sapo": {"tau_pos": 1.0, "tau_neg": 1.05},
    "dppo_mask": {"delta_low": 0.2, "delta_high": 0.2},
}
# The probabilities the tokens had when sampled, for a kind that reads them (DPPO's mask on their change): with
# the ratios above they cross both of its thresholds, and a token of probability 0.1 never can on the low side.
OLD_PROBS = [0.1, 0.5, 0.95]


def token_clip_kinds():
    return sorted(name for name, kind in registry.REGISTRY["clip"].items() if not kind.needs_mask)


def test_every_token_level_clip_kind_has_a_grad_and_parameters_here():
    """A new clip kind must bring its closed-form gradient (and this test its parameters)."""
    kinds = token_clip_kinds()
    assert set(kinds) == set(PARAMS), "a clip kind without a case in PARAMS: add one"
    for name in kinds:
        assert registry.REGISTRY["clip"][name].grad is not None, f"clip kind {name} registers no grad"


@pytest.mark.parametrize("name, params", [*sorted(PARAMS.items()),
                                          ("cispo", {"eps_low": 0.2, "eps_high": 0.28})])  # CISPO with a lower bound
def test_grad_equals_torch_autograd_through_apply(name, params):
    torch = pytest.importorskip("torch")
    kind = registry.REGISTRY["clip"][name]
    rho, adv, prob = np.meshgrid(RATIOS, ADVANTAGES, OLD_PROBS)
    rho, adv, old = rho.ravel(), adv.ravel(), np.log(prob.ravel())
    shift = torch.zeros(len(rho), dtype=torch.float64, requires_grad=True)  # d/d log pi at the ratios
    ratio = torch.exp(shift) * torch.tensor(rho, dtype=torch.float64)
    extra = {"old_logp": torch.tensor(old, dtype=torch.float64)} if kind.needs_old_logp else {}
    value, _ = kind.apply(ratio, torch.tensor(adv, dtype=torch.float64), params, **extra)
    value.sum().backward()
    expected = shift.grad.numpy()
    values, grads, _ = terms_and_gradients(kind, params, rho, adv, old if kind.needs_old_logp else None)
    np.testing.assert_allclose(grads, expected, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(values, value.detach().numpy(), rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("name, params, ratio, advantage, grad", [
    ("symmetric", {"eps": 0.2}, 1.1, 2.0, 2.2),        # inside the bounds: rho A
    ("symmetric", {"eps": 0.2}, 1.3, 2.0, 0.0),        # above 1 + eps with A > 0: clipped
    ("symmetric", {"eps": 0.2}, 1.3, -2.0, -2.6),      # above with A < 0: the unclipped branch is smaller
    ("symmetric", {"eps": 0.2}, 0.5, -1.0, 0.0),       # below 1 - eps with A < 0: clipped
    ("dual_clip", {"eps_low": 0.2, "eps_high": 0.2, "c": 3.0}, 4.0, -1.0, 0.0),   # the floor c A won
    ("dual_clip", {"eps_low": 0.2, "eps_high": 0.2, "c": 3.0}, 2.0, -1.0, -2.0),  # below c: PPO's rho A
    ("cispo", {"eps_high": 0.28}, 2.0, 1.0, 1.28),     # the weight capped at 1.28, the gradient kept
    ("cispo", {"eps_high": 0.28}, 0.5, -1.0, -0.5),    # no lower bound: w = rho
    ("sapo", {"tau_pos": 1.0, "tau_neg": 1.05}, 1.0, 1.0, 1.0),  # 4 * 1/2 * 1/2 * 1 * 1
])
def test_hand_worked_gradients(name, params, ratio, advantage, grad):
    _, got, _ = term_and_gradient(registry.REGISTRY["clip"][name], params, ratio, advantage)
    assert got == pytest.approx(grad, abs=1e-12)


@pytest.mark.parametrize("ratio, advantage, prob, grad", [
    (1.5, 1.0, 0.5, 0.0),     # probability 0.5 -> 0.75, up 0.25 > 0.2 with A > 0: masked
    (1.5, 1.0, 0.3, 1.5),     # 0.3 -> 0.45, up 0.15: kept, rho A (PPO's clip at 1.2 would give 0)
    (0.7, -1.0, 0.9, 0.0),    # 0.9 -> 0.63, down 0.27 with A < 0: masked
    (0.5, -2.0, 0.3, -1.0),   # 0.3 -> 0.15, down 0.15: kept, 0.5 x -2
])
def test_dppo_mask_gradient_by_hand(ratio, advantage, prob, grad):
    kind = registry.REGISTRY["clip"]["dppo_mask"]
    _, got, _ = term_and_gradient(kind, PARAMS["dppo_mask"], ratio, advantage, np.log(prob))
    assert got == pytest.approx(grad, abs=1e-12)


def test_a_kind_that_reads_the_tokens_probability_needs_it():
    with pytest.raises(ValueError, match="needs the tokens' old log-probs"):
        term_and_gradient(registry.REGISTRY["clip"]["dppo_mask"], PARAMS["dppo_mask"], 1.0, 1.0)


def test_sapo_gradient_by_hand_away_from_one():
    # rho = 2, A = 1, tau = 1: sigma(1) = 0.7310585786; 4 s (1 - s) rho = 4 * 0.7310585786 * 0.2689414214 * 2
    _, got, _ = term_and_gradient(registry.REGISTRY["clip"]["sapo"], {"tau_pos": 1.0, "tau_neg": 1.05}, 2.0, 1.0)
    assert got == pytest.approx(1.5728954659, rel=1e-9)


def test_a_whole_response_kind_has_no_token_term():
    with pytest.raises(ValueError, match="weighs the whole response"):
        term_and_gradient(registry.REGISTRY["clip"]["geo_mean"], {"eps_low": 0.4, "eps_high": 0.4}, 1.0, 1.0)
