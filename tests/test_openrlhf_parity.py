"""Parity of the component math with OpenRLHF 0.11.2's own code, on the same random tensors.

For every setting both sides can express, OpenRLHF's functions are called as its trainer
calls them (PolicyLoss, aggregate_loss, compute_approx_kl, compute_reward,
RemoteExperienceMaker.compute_advantages_and_returns on real Experience objects,
apply_overlong_penalty) and compared with unipo_build.core.objective / unipo_build.core.components.
Each family has a tiny example whose numbers are worked out by hand in a comment, checked
on both sides, so that no comparison can pass vacuously.

Tolerances. Where OpenRLHF computes in float64 the comparison is rtol 1e-6 with a tiny
atol (1e-9): the only deliberate difference there is OpenRLHF's ``token_counts + 1e-8`` in
the per-sample mean, a relative change below 1e-8. Where OpenRLHF casts to float32
(compute_approx_kl; the batch mean and variance of its advantage whitening) the
comparison is 1e-6 absolute and relative: float32 rounds at 6e-8 relative, a few
operations deep, and k3 = e^-x - 1 + x loses its low digits to cancellation near x = 0,
which only an absolute tolerance can absorb.

Conventions found (asserted below, not papered over):
- group_norm divides by std (n - 1) + 1e-9: our group_zscore with std_ddof=1, eps=1e-9.
- Whitening (reinforce, gae) uses the population variance over all action tokens of all
  micro-batches, rsqrt(var.clamp(min=1e-8)), no eps added: our batch_whiten(eps=0)
  wherever var > 1e-8. OpenRLHF leaves -mean * rstd on padding; ours leaves 0 (padding
  never reaches a masked loss, so only real tokens are compared there).
- OpenRLHF always whitens (or, with no_std_norm, centres) GAE advantages; our "gae"
  advantage kind does neither, so the parity is gae_advantage followed by batch_whiten.
- reinforce + no_std_norm subtracts the token mean of the returns over the whole batch;
  our reinforce_return's batch_mean baseline is the mean of the per-response rewards:
  different whenever lengths differ (test_reinforce_batch_mean_baseline_is_a_documented_gap).
- A KL in the loss is aggregated by OpenRLHF as a token mean whatever loss_agg_mode is;
  our objective puts it under the policy loss's aggregation weights, so the two agree for
  token_mean only (test_kl_in_loss_under_seq_mean_is_a_documented_gap).
- compute_approx_kl clamps every estimate to [-10, 10] and k3's log-ratio at -10; ours
  does not clamp (test_kl_clamp_is_openrlhf_only).
- clip_ratio: OpenRLHF counts surr2 < surr1; that is exactly our clip side != 0 except at
  floating-point ties, where the ratio is past the bound but rounding makes clip(rho) * A
  == rho * A (test_clip_ratio_tie).
"""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from openrlhf_support import require_openrlhf, stub_dir
from unipo_build.core import components as C
from unipo_build.core import objective as O
from unipo_build.core.specs import ResolvedAlgorithm, ResolvedComponent


#: OpenRLHF's functions under test, filled by the ``openrlhf_code`` fixture before the module's first test.
orl = SimpleNamespace()


@pytest.fixture(scope="module", autouse=True)
def openrlhf_code():
    """OpenRLHF's functions, imported when the module's first test runs, not when pytest collects it:
    importing OpenRLHF (DeepSpeed, Transformers) takes 8 s, which every collection paid, a pytest run of
    other tests too (the contribute guide's `pytest -m specs -k ...`). Skips the module, or fails it under
    UNIPO_REQUIRE_OPENRLHF=1, where it is missing. A module-scoped fixture also keeps the module on one
    pytest-xdist worker (tests/conftest.py xdist_group), so one worker imports it."""
    require_openrlhf()
    from openrlhf.models.loss import PolicyLoss, aggregate_loss
    from openrlhf.models.utils import compute_approx_kl, compute_reward, log_probs_from_logits
    from openrlhf.trainer.ppo_utils.experience import Experience
    from openrlhf.trainer.ppo_utils.experience_maker import RemoteExperienceMaker
    from openrlhf.trainer.ppo_utils.kl_controller import FixedKLController
    from openrlhf.trainer.ppo_utils.length_penalty import apply_overlong_penalty

    names = dict(PolicyLoss=PolicyLoss, aggregate_loss=aggregate_loss, compute_approx_kl=compute_approx_kl,
                 compute_reward=compute_reward, log_probs_from_logits=log_probs_from_logits, Experience=Experience,
                 RemoteExperienceMaker=RemoteExperienceMaker, FixedKLController=FixedKLController,
                 apply_overlong_penalty=apply_overlong_penalty)
    orl.__dict__.update(names)
    return orl


F64 = dict(rtol=1e-6, atol=1e-9)   # float64 on both sides (see the module docstring)
F32 = dict(rtol=1e-6, atol=1e-6)   # OpenRLHF computes in float32 (see the module docstring)
# group_norm on a group of equal fractional rewards: OpenRLHF's (r - mean) / (0 + 1e-9) turns
# the last-bit rounding of the mean into up to ~2.2e-7 |r| (test_group_norm_equal_fractional_group);
# ours is exactly 0. Used where shaped rewards can make such groups.
GROUP_NORM = dict(rtol=1e-6, atol=1e-6)
SEEDS = range(16)


def close(actual, expected, tol, msg=""):
    torch.testing.assert_close(torch.as_tensor(actual, dtype=torch.float64),
                               torch.as_tensor(expected, dtype=torch.float64), **tol, msg=msg or None)


def t64(x):
    return torch.as_tensor(np.asarray(x, dtype=np.float64))


def left_mask(lengths, T):
    """Bool (B, T) left-aligned action mask, as OpenRLHF's Experience.action_mask."""
    return torch.arange(T)[None, :] < torch.as_tensor(lengths)[:, None]


def random_lengths(rng, B, T, allow_empty=False):
    """Varied lengths in 1..T with at least one length-1 response (and one empty row if asked)."""
    lengths = rng.integers(1, T + 1, size=B)
    rows = rng.permutation(B)
    lengths[rows[0]] = T  # some row spans the whole width
    lengths[rows[1]] = 1
    if allow_empty and B > 2:
        lengths[rows[2]] = 0
    return lengths


def algo(*, advantage=("group_zscore", {}), ratio="token", clip=("asymmetric", {"eps_low": 0.2, "eps_high": 0.28}),
         kl=("none", {}), aggregation="token_mean", shaping=("none", {})) -> ResolvedAlgorithm:
    kinds = {"advantage": advantage, "ratio": (ratio, {}), "clip": clip, "kl": kl,
             "aggregation": (aggregation, {}), "filter": ("none", {}), "shaping": shaping}
    return ResolvedAlgorithm(id="parity", name="parity",
                             components={s: ResolvedComponent(kind=k, params=dict(p)) for s, (k, p) in kinds.items()})


def our_policy_loss(cfg, logp, old_logp, advantages, mask, ref_logp=None):
    """-J and the clip side of our objective, J = sum w * objective (objective.step_objective)."""
    terms = O.token_terms(cfg, logp=logp, old_logp=old_logp, advantages=advantages, mask=mask, ref_logp=ref_logp)
    J, _ = O.step_objective(cfg, terms.objective, mask)
    return -J, terms.clip_side


def our_clip_fraction(side, mask):
    mask = mask.to(torch.float64)
    return ((side != 0).to(torch.float64) * mask).sum() / mask.sum()


# ---------------------------------------------------------------------------
# The stubs
# ---------------------------------------------------------------------------

def test_stubs_are_stubs_and_leave_the_cross_entropy_fallback():
    import flash_attn
    import flash_attn.bert_padding
    import vllm

    stubs = str(stub_dir())
    # only the stubs are installed here: a real flash_attn / vllm would come first on sys.path
    if getattr(flash_attn, "STUB", False):
        assert flash_attn.__file__.startswith(stubs)
        with pytest.raises(RuntimeError, match="test stub"):
            flash_attn.bert_padding.pad_input(None)
        with pytest.raises(ImportError):
            import flash_attn.ops.triton.cross_entropy  # noqa: F401
        # log_probs_from_logits falls back to torch: log_softmax gathered at the labels
        logits = torch.randn(2, 3, 5, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
        labels = torch.tensor([[0, 4, 2], [1, 1, 3]])
        expected = torch.log_softmax(logits, -1).gather(-1, labels[..., None])[..., 0]
        close(orl.log_probs_from_logits(logits.clone(), labels), expected, F64)
    if getattr(vllm, "STUB", False):
        with pytest.raises(RuntimeError, match="test stub"):
            vllm.SamplingParams(temperature=1.0)


# ---------------------------------------------------------------------------
# PolicyLoss (ppo / gspo) against -J of our objective
# ---------------------------------------------------------------------------

def test_policy_loss_hand_worked():
    # Two responses, lengths 2 and 1; eps_low 0.2, eps_high 0.28 (clip to [0.8, 1.28]).
    # token (0,0): rho 1.5, A +1 -> min(1.5, 1.28)   =  1.28  clipped (high)
    # token (0,1): rho 0.5, A -1 -> min(-0.5, -0.8)  = -0.8   clipped (low)
    # token (1,0): rho 1.1, A +2 -> min(2.2, 2.2)    =  2.2   not clipped
    # token mean: (1.28 - 0.8 + 2.2) / 3 = 0.893333...   -> loss -0.893333...
    # seq mean:   ((1.28 - 0.8) / 2 + 2.2) / 2 = 1.22    -> loss -1.22
    # clip ratio 2/3. d loss / d logp: clipped tokens 0; token (1,0): -rho A w = -2.2/3 (token), -2.2/2 (seq)
    mask = left_mask([2, 1], 2)
    old = t64([[-1.0, -2.0], [-0.5, -0.7]])
    logp0 = old + torch.log(t64([[1.5, 0.5], [1.1, 1.0]]))
    adv = t64([[1.0, -1.0], [2.0, 5.0]])  # 5.0 sits on padding and must not count
    for token_level, loss_value, grad10 in ((True, -2.68 / 3, -2.2 / 3), (False, -1.22, -1.1)):
        logp = logp0.clone().requires_grad_(True)
        loss, clip_ratio, ppo_kl, vllm_kl, is_filter = orl.PolicyLoss(0.2, 0.28, token_level_loss=token_level)(
            logp, old, adv, action_mask=mask)
        loss.backward()
        close(loss, loss_value, F64)
        close(clip_ratio, 2 / 3, F64)
        assert vllm_kl is None and is_filter is None
        close(logp.grad, [[0.0, 0.0], [grad10, 0.0]], F64)

        cfg = algo(aggregation="token_mean" if token_level else "seq_mean_token_mean")
        ours_logp = logp0.clone().requires_grad_(True)
        ours, side = our_policy_loss(cfg, ours_logp, old, adv, mask)
        ours.backward()
        close(ours, loss_value, F64)
        assert side.tolist() == [[C.CLIP_HIGH, C.CLIP_LOW], [C.CLIP_NONE, C.CLIP_NONE]]
        close(ours_logp.grad, logp.grad, F64)

    # GSPO: s_0 = exp(mean(log 1.5, log 0.5)) = sqrt(0.75) = 0.8660254 (inside [0.8, 1.28]), s_1 = 1.1.
    # With A = +1 on response 0 and +2 on response 1: (0.8660254 + 2.2) / 2 = 1.5330127 -> loss -1.5330127
    adv_seq = t64([[1.0, 1.0], [2.0, 2.0]])
    loss, clip_ratio, *_ = orl.PolicyLoss(0.2, 0.28, policy_loss_type="gspo")(logp0, old, adv_seq, action_mask=mask)
    ours, side = our_policy_loss(algo(ratio="sequence", aggregation="seq_mean_token_mean"), logp0, old, adv_seq, mask)
    close(loss, -(math.sqrt(0.75) + 2.2) / 2, F64)
    close(ours, -(math.sqrt(0.75) + 2.2) / 2, F64)
    assert float(clip_ratio) == 0.0 and not bool((side != 0).any())


def policy_batch(seed, allow_empty=False):
    rng = np.random.default_rng(seed)
    B, T = int(rng.integers(3, 9)), int(rng.integers(2, 9))
    lengths = random_lengths(rng, B, T, allow_empty=allow_empty)
    old = -rng.exponential(1.0, size=(B, T))
    # log-ratios of ~0.3 put a good share of tokens on each side of both clip bounds
    logp = old + rng.normal(0.0, 0.3, size=(B, T))
    adv = rng.normal(0.0, 1.0, size=(B, T))  # nonzero on padding too, as after OpenRLHF's whitening
    # so that no case is vacuous: in a full-length row, one token surely clipped (ratio e^0.5 = 1.65,
    # A > 0) and one surely not (ratio 1)
    full = int(np.argmax(lengths))
    logp[full, :2] = old[full, :2] + np.array([0.5, 0.0])
    adv[full, 0] = abs(adv[full, 0]) + 0.1
    # the reference policy near the sampling one, so that every k1/k2/k3 stays inside OpenRLHF's
    # clamp at +-10 (test_kl_clamp_is_openrlhf_only covers what lies beyond)
    ref = old + rng.normal(0.0, 0.4, size=(B, T))
    return left_mask(lengths, T), t64(logp), t64(old), t64(adv), t64(ref)


@pytest.mark.parametrize("eps_low, eps_high", [(0.2, 0.2), (0.2, 0.28), (0.1, 0.3)])
@pytest.mark.parametrize("loss_type, token_level", [("ppo", True), ("ppo", False), ("gspo", False)])
@pytest.mark.parametrize("seed", SEEDS)
def test_policy_loss_random(seed, loss_type, token_level, eps_low, eps_high):
    mask, logp0, old, adv, _ = policy_batch(seed, allow_empty=seed % 4 == 0)
    if loss_type == "gspo":
        eps_low, eps_high = eps_low / 20, eps_high / 20  # GSPO's sequence ratios sit much closer to 1
    their_logp = logp0.clone().requires_grad_(True)
    loss, clip_ratio, ppo_kl, vllm_kl, is_filter = orl.PolicyLoss(
        eps_low, eps_high, token_level_loss=token_level, policy_loss_type=loss_type)(
        their_logp, old, adv, action_mask=mask)
    loss.backward()

    cfg = algo(ratio="token" if loss_type == "ppo" else "sequence",
               clip=("asymmetric", {"eps_low": eps_low, "eps_high": eps_high}),
               aggregation="token_mean" if token_level else "seq_mean_token_mean")
    our_logp = logp0.clone().requires_grad_(True)
    ours, side = our_policy_loss(cfg, our_logp, old, adv, mask)
    ours.backward()

    close(loss, ours, F64, "loss vs -J")
    close(their_logp.grad, our_logp.grad, F64, "d loss / d logp")
    close(clip_ratio, our_clip_fraction(side, mask), F64, "clip ratio")
    # ppo_kl is the token mean of -(log pi - log pi_old): our k1 of pi_old against pi_theta
    mask_f = mask.to(torch.float64)
    close(ppo_kl, (O.aggregation_weights("token_mean", mask_f) * C.kl_estimate(old, logp0, "k1")).sum(), F64)
    assert vllm_kl is None and is_filter is None
    # not vacuous: some tokens are clipped, some are not (see policy_batch)
    if loss_type == "ppo":
        assert 0 < float(clip_ratio) < 1


def test_policy_loss_dual_clip_hand_worked():
    # --actor.dual_clip 3 (PolicyLoss(dual_clip=3.0)) against the dual_clip kind (eps_low 0.2, eps_high 0.28, c 3).
    # Two responses, lengths 3 and 1; PPO's term min(rho A, clip(rho, 0.8, 1.28) A), and for A < 0 the max with 3 A:
    # token (0,0): rho 4,   A -1 -> min(-4, -1.28) = -4, max(-4, -3) = -3   the floor: gradient 0
    # token (0,1): rho 0.5, A -1 -> min(-0.5, -0.8) = -0.8 (above -3)        PPO's low clip: gradient 0
    # token (0,2): rho 2,   A -1 -> min(-2, -1.28) = -2, above -3            flows: d term / d logp = rho A = -2
    # token (1,0): rho 1.1, A +2 -> min(2.2, 2.2) = 2.2                       flows: 2.2
    # token mean: (-3 - 0.8 - 2 + 2.2) / 4 = -0.9 -> loss 0.9; d loss / d logp = -(rho A) / 4: 0.5 and -0.55
    # OpenRLHF's clip_ratio counts surr2 < surr1 (PPO's clip only): token (0,1), 1/4; the clip sides mark the
    # floor too (CLIP_HIGH: a negative advantage whose ratio is above c), 2/4.
    mask = left_mask([3, 1], 3)
    old = t64([[-1.0, -2.0, -0.3], [-0.5, -0.7, -0.9]])
    logp0 = old + torch.log(t64([[4.0, 0.5, 2.0], [1.1, 1.0, 1.0]]))
    adv = t64([[-1.0, -1.0, -1.0], [2.0, 5.0, 5.0]])  # 5.0 sits on padding and must not count
    logp = logp0.clone().requires_grad_(True)
    loss, clip_ratio, *_ = orl.PolicyLoss(0.2, 0.28, dual_clip=3.0)(logp, old, adv, action_mask=mask)
    loss.backward()
    close(loss, 0.9, F64)
    close(clip_ratio, 0.25, F64)
    close(logp.grad, [[0.0, 0.0, 0.5], [-0.55, 0.0, 0.0]], F64)
    cfg = algo(clip=("dual_clip", {"eps_low": 0.2, "eps_high": 0.28, "c": 3.0}))
    ours_logp = logp0.clone().requires_grad_(True)
    ours, side = our_policy_loss(cfg, ours_logp, old, adv, mask)
    ours.backward()
    close(ours, 0.9, F64)
    close(ours_logp.grad, logp.grad, F64)
    assert side[0].tolist() == [C.CLIP_HIGH, C.CLIP_LOW, C.CLIP_NONE] and side[1, 0] == C.CLIP_NONE


@pytest.mark.parametrize("c", [1.5, 3.0])
@pytest.mark.parametrize("token_level", [True, False])
@pytest.mark.parametrize("seed", SEEDS)
def test_policy_loss_dual_clip_random(seed, token_level, c):
    mask, logp0, old, adv, _ = policy_batch(seed, allow_empty=seed % 4 == 0)
    # not vacuous: in the longest row, one token surely under the floor (ratio e^1.2 = 3.3 > c, A < 0)
    full = int(np.argmax(mask.sum(-1).numpy()))
    logp0 = logp0.clone()
    logp0[full, 1] = old[full, 1] + 1.2
    adv = adv.clone()
    adv[full, 1] = -abs(float(adv[full, 1])) - 0.1
    their_logp = logp0.clone().requires_grad_(True)
    loss, clip_ratio, *_ = orl.PolicyLoss(0.2, 0.28, dual_clip=c, token_level_loss=token_level)(
        their_logp, old, adv, action_mask=mask)
    loss.backward()
    cfg = algo(clip=("dual_clip", {"eps_low": 0.2, "eps_high": 0.28, "c": c}),
               aggregation="token_mean" if token_level else "seq_mean_token_mean")
    our_logp = logp0.clone().requires_grad_(True)
    ours, side = our_policy_loss(cfg, our_logp, old, adv, mask)
    ours.backward()
    close(loss, ours, F64, "loss vs -J")
    close(their_logp.grad, our_logp.grad, F64, "d loss / d logp")
    # OpenRLHF's clip_ratio is PPO's clip alone: our sides without the floor (A < 0 marked high)
    floored = (side == C.CLIP_HIGH) & (adv < 0)
    assert bool((floored & mask).any())
    close(clip_ratio, our_clip_fraction(torch.where(floored, torch.zeros_like(side), side), mask), F64, "clip ratio")


#: OpenRLHF's train/rollout correction (PolicyLoss is_correction_level / mode, gating "ratio", threshold (low, high))
#: -> the correction kind it is: clip at the token level truncates the ratio pi_old / pi_rollout to [low, high]; mask
#: zeroes a unit whose ratio (at seq level the geometric mean of its token ratios) leaves [low, high], a kept token
#: keeping its own ratio.
OPENRLHF_CORRECTIONS = {
    ("token", "clip"): ("truncated_is", {"level": "token", "sequence": "product"}),
    ("token", "mask"): ("masked_is", {"level": "token", "sequence": "product", "kept": "token_ratio"}),
    ("seq", "mask"): ("masked_is", {"level": "sequence", "sequence": "geometric_mean", "kept": "token_ratio"}),
}


def with_correction(cfg: ResolvedAlgorithm, kind: str, params: dict) -> ResolvedAlgorithm:
    components = dict(cfg.components)
    components["correction"] = ResolvedComponent(kind=kind, params=params)
    return ResolvedAlgorithm(id=cfg.id, name=cfg.name, components=components)


def test_policy_loss_correction_hand_worked():
    # is_correction_level token, mode clip, threshold (0.5, 1.2): the weight clamp(pi_old / pi_rollout, 0.5, 1.2)
    # multiplies PPO's loss. One response of three tokens, rho 1 (logp = old), A +1, clip 0.2/0.28:
    # pi_old / pi_rollout = e^0.3 = 1.3499 -> 1.2; e^-0.1 = 0.9048; e^-1 = 0.3679 -> 0.5
    # token mean of -(w x 1): -(1.2 + 0.9048374 + 0.5) / 3 = -0.8682791
    # mode mask instead (token level, kept tokens keep their ratio): the first and last leave [0.5, 1.2]:
    # -(0 + 0.9048374 + 0) / 3 = -0.3016125
    mask = left_mask([3], 3)
    old = t64([[-1.0, -2.0, -0.5]])
    rollout = old - t64([[0.3, -0.1, -1.0]])
    adv = t64([[1.0, 1.0, 1.0]])
    for mode, expected in (("clip", -(1.2 + math.exp(-0.1) + 0.5) / 3), ("mask", -math.exp(-0.1) / 3)):
        loss, *_ = orl.PolicyLoss(0.2, 0.28, is_correction_level="token", is_correction_mode=mode,
                              is_correction_threshold=(0.5, 1.2))(old.clone(), old, adv, action_mask=mask,
                                                                  rollout_log_probs=rollout)
        close(loss, expected, F64)
        kind, params = OPENRLHF_CORRECTIONS[("token", mode)]
        cfg = with_correction(algo(), kind, {**params, "lower": 0.5, "cap": 1.2})
        terms = O.token_terms(cfg, logp=old, old_logp=old, advantages=adv, mask=mask, sampler_logp=rollout)
        close(-O.step_objective(cfg, terms.objective, mask)[0], expected, F64)


@pytest.mark.parametrize("level, mode", sorted(OPENRLHF_CORRECTIONS))
@pytest.mark.parametrize("seed", SEEDS)
def test_policy_loss_correction_random(seed, level, mode):
    mask, logp0, old, adv, _ = policy_batch(seed)
    rng = np.random.default_rng(1000 + seed)
    rollout = old - t64(rng.normal(0.0, 0.4, size=tuple(old.shape)))  # pi_old / pi_rollout around 1, both sides
    rollout[0] = old[0] - 1.0  # not vacuous: the first response's ratios (and their mean) e^1, above the band
    their_logp = logp0.clone().requires_grad_(True)
    loss, clip_ratio, ppo_kl, vllm_kl, is_filter = orl.PolicyLoss(
        0.2, 0.28, is_correction_level=level, is_correction_mode=mode, is_correction_threshold=(0.7, 1.4))(
        their_logp, old, adv, action_mask=mask, rollout_log_probs=rollout)
    loss.backward()
    kind, params = OPENRLHF_CORRECTIONS[(level, mode)]
    cfg = with_correction(algo(), kind, {**params, "lower": 0.7, "cap": 1.4})
    our_logp = logp0.clone().requires_grad_(True)
    terms = O.token_terms(cfg, logp=our_logp, old_logp=old, advantages=adv, mask=mask, sampler_logp=rollout)
    ours = -O.step_objective(cfg, terms.objective, mask)[0]
    ours.backward()
    close(loss, ours, F64, "loss vs -J")
    close(their_logp.grad, our_logp.grad, F64, "d loss / d logp")
    # not vacuous: the correction acted on some token (a weight other than the plain ratio's)
    weight, _ = O.correction_weight(cfg, old, rollout, mask.to(torch.float64))
    ratio = torch.exp(old - rollout)
    assert bool(((weight - ratio).abs() > 1e-9)[mask].any())


@pytest.mark.parametrize("seed", SEEDS)
def test_clip_ratio_is_clip_side(seed):
    """Token by token: OpenRLHF's surr2 < surr1 is exactly our side != 0 on random data."""
    mask, logp, old, adv, _ = policy_batch(seed)
    rho = C.token_ratio(logp, old)
    _, side = C.clipped_surrogate(rho, adv, 0.2, 0.28)
    surr1 = rho * adv  # OpenRLHF's own two lines, PolicyLoss.forward
    surr2 = rho.clamp(1 - 0.2, 1 + 0.28) * adv
    assert torch.equal(torch.lt(surr2, surr1), side != 0)


def test_clip_ratio_tie():
    # rho = nextafter(1.2, 2) = 1.2000000000000002 is past the upper bound 1 + 0.2, so our side is
    # CLIP_HIGH; but with A = 1.7 both 1.2 * 1.7 and rho * 1.7 round to the same double, so
    # OpenRLHF's surr2 < surr1 is False. Only such ties (and |A| so small the products underflow)
    # separate the two definitions; in the other direction surr2 < surr1 always implies side != 0,
    # because multiplying by A > 0 (or A < 0) is monotone in floating point.
    rho = np.nextafter(1.2, 2.0)
    log_ratio = math.log(rho)
    assert math.exp(log_ratio) == rho
    old = t64([[0.0]])
    logp = t64([[log_ratio]])
    adv = t64([[1.7]])
    loss, clip_ratio, *_ = orl.PolicyLoss(0.2, 0.2)(logp, old, adv, action_mask=left_mask([1], 1))
    _, side = C.clipped_surrogate(C.token_ratio(logp, old), adv, 0.2, 0.2)
    assert float(clip_ratio) == 0.0 and side.tolist() == [[C.CLIP_HIGH]]
    # the surrogate values agree regardless: min picks the same double
    ours, _ = our_policy_loss(algo(clip=("symmetric", {"eps": 0.2})), logp, old, adv, left_mask([1], 1))
    close(loss, ours, F64)


@pytest.mark.parametrize("token_level", [True, False])
@pytest.mark.parametrize("seed", range(8))
def test_policy_loss_over_micro_batches_and_dp_ranks(seed, token_level):
    """OpenRLHF's global normalisers: the micro-batch (and DP-rank) losses add up to -J of the whole batch.

    batch_num_tokens / global_batch_size carry the step's totals; with dp_size ranks each loss is
    multiplied by dp_size and the gradients averaged, i.e. the per-rank losses are averaged.
    """
    mask, logp0, old, adv, _ = policy_batch(100 + seed, allow_empty=True)
    B = mask.shape[0]
    n_tokens = float(mask.sum())
    n_samples = float((mask.sum(-1) > 0).sum())
    rng = np.random.default_rng(seed)
    cuts = sorted(rng.choice(np.arange(1, B), size=min(2, B - 1), replace=False).tolist())
    parts = np.split(rng.permutation(B), cuts)
    for dp_size in (1, 2):
        logp = logp0.clone().requires_grad_(True)
        total = 0.0
        for part in parts:
            part = torch.as_tensor(part)
            loss, *_ = orl.PolicyLoss(0.2, 0.28, token_level_loss=token_level)(
                logp[part], old[part], adv[part], action_mask=mask[part], dp_size=dp_size,
                batch_num_tokens=torch.tensor(n_tokens, dtype=torch.float32),
                global_batch_size=torch.tensor(n_samples, dtype=torch.float32))
            total = total + loss / dp_size  # DeepSpeed averages the ranks' gradients
        total.backward()
        cfg = algo(aggregation="token_mean" if token_level else "seq_mean_token_mean")
        our_logp = logp0.clone().requires_grad_(True)
        ours, _ = our_policy_loss(cfg, our_logp, old, adv, mask)
        ours.backward()
        close(total, ours, F64)
        close(logp.grad, our_logp.grad, F64)


# ---------------------------------------------------------------------------
# KL in the loss (k1 / k2 / k3), token-mean aggregation
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("estimator", ["k1", "k2", "k3"])
@pytest.mark.parametrize("seed", range(8))
def test_kl_in_loss(seed, estimator):
    # OpenRLHF's actor: loss = PolicyLoss + kl_coef * aggregate_loss(compute_approx_kl(...), mask, batch totals)
    # (ppo_actor.training_step). Ours: J = sum w * (surrogate - beta * KL) with token_mean weights.
    mask, logp0, old, adv, ref = policy_batch(200 + seed)
    beta = 0.04
    logp = logp0.clone().requires_grad_(True)
    policy, *_ = orl.PolicyLoss(0.2, 0.28)(logp, old, adv, action_mask=mask)
    kl = orl.compute_approx_kl(logp, ref, log_probs_old=old, kl_estimator=estimator)
    loss = policy + beta * orl.aggregate_loss(kl, mask, batch_num_tokens=torch.tensor(float(mask.sum())))
    loss.backward()

    cfg = algo(kl=("in_loss", {"estimator": estimator, "beta": beta}))
    assert float(C.kl_estimate(logp0, ref, estimator).abs().max()) < 10  # inside the clamp
    our_logp = logp0.clone().requires_grad_(True)
    ours, _ = our_policy_loss(cfg, our_logp, old, adv, mask, ref_logp=ref)
    ours.backward()
    close(loss, ours, F32)  # the KL is float32 in OpenRLHF
    close(logp.grad, our_logp.grad, F32)


def test_kl_in_loss_under_seq_mean_is_a_documented_gap():
    # Lengths 2 and 1, no policy term (A = 0), KL k1 = 0.5 on token (0,0), 0 on (0,1), 1.0 on (1,0); beta 1.
    # OpenRLHF: KL token mean (0.5 + 0 + 1) / 3 = 0.5, even with loss_agg_mode seq-mean-token-mean.
    # Ours under seq_mean_token_mean: ((0.5 + 0) / 2 + 1) / 2 = 0.625.
    mask = left_mask([2, 1], 2)
    logp = t64([[-1.0, -1.0], [-1.0, -1.0]])
    ref = t64([[-1.5, -1.0], [-2.0, -1.0]])
    zero = torch.zeros(2, 2, dtype=torch.float64)
    policy, *_ = orl.PolicyLoss(0.2, 0.2, token_level_loss=False)(logp, logp, zero, action_mask=mask)
    theirs = policy + orl.aggregate_loss(orl.compute_approx_kl(logp, ref, kl_estimator="k1"), mask)
    ours, _ = our_policy_loss(algo(kl=("in_loss", {"estimator": "k1", "beta": 1.0}), aggregation="seq_mean_token_mean"),
                              logp, logp, zero, mask, ref_logp=ref)
    close(theirs, 0.5, F64)
    close(ours, 0.625, F64)


# ---------------------------------------------------------------------------
# aggregate_loss against aggregation_weights
# ---------------------------------------------------------------------------

def test_aggregate_loss_hand_worked():
    # loss [[1, 2, 3], [4, 9, 9]], lengths 3 and 1 (the 9s are padding)
    # token mean: (1 + 2 + 3 + 4) / 4 = 2.5 ; seq mean: (6/3 + 4) / 2 = 3
    # batch_num_tokens 8, dp_size 2: 10 / 8 * 2 = 2.5 ; global_batch_size 4: (2 + 4) / 4 = 1.5
    loss = t64([[1, 2, 3], [4, 9, 9]])
    mask = left_mask([3, 1], 3)
    mf = mask.to(torch.float64)
    close(orl.aggregate_loss(loss, mask, True), 2.5, F64)
    close(orl.aggregate_loss(loss, mask, False), 3.0, F64)
    close(orl.aggregate_loss(loss, mask, True, dp_size=2, batch_num_tokens=8.0), 2.5, F64)
    close(orl.aggregate_loss(loss, mask, False, global_batch_size=4.0), 1.5, F64)
    close((O.aggregation_weights("token_mean", mf) * loss).sum(), 2.5, F64)
    close((O.aggregation_weights("seq_mean_token_mean", mf) * loss).sum(), 3.0, F64)


@pytest.mark.parametrize("seed", SEEDS)
def test_aggregate_loss_random(seed):
    rng = np.random.default_rng(300 + seed)
    B, T = int(rng.integers(2, 9)), int(rng.integers(1, 9))
    lengths = random_lengths(rng, B, T, allow_empty=seed % 2 == 0)
    mask = left_mask(lengths, T)
    mf = mask.to(torch.float64)
    loss = t64(rng.normal(size=(B, T)))
    for token_level, kind in ((True, "token_mean"), (False, "seq_mean_token_mean")):
        ours = (O.aggregation_weights(kind, mf) * loss).sum()
        close(orl.aggregate_loss(loss, mask, token_level), ours, F64)
        # the same through micro-batches with the step's totals, summed
        parts = np.array_split(rng.permutation(B), int(rng.integers(1, B + 1)))
        total = sum(orl.aggregate_loss(loss[p], mask[p], token_level, batch_num_tokens=float(mf.sum()),
                                   global_batch_size=float((mf.sum(-1) > 0).sum()))
                    for p in map(torch.as_tensor, parts))
        close(total, ours, F64)


# ---------------------------------------------------------------------------
# compute_approx_kl against kl_estimate
# ---------------------------------------------------------------------------

def test_kl_hand_worked():
    # log pi = -1, log pi_ref = -1.5: OpenRLHF's log_ratio = 0.5, our log r = -0.5.
    # k1 = 0.5 ; k2 = 0.5^2 / 2 = 0.125 ; k3 = e^-0.5 - 1 + 0.5 = 0.10653065971263342
    logp, ref = t64([-1.0]), t64([-1.5])
    for est, value in (("k1", 0.5), ("k2", 0.125), ("k3", 0.10653065971263342)):
        close(orl.compute_approx_kl(logp, ref, kl_estimator=est), [value], F32)
        close(C.kl_estimate(logp, ref, est), [value], F64)


@settings(max_examples=50, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), estimator=st.sampled_from(["k1", "k2", "k3"]),
       scale=st.sampled_from([1e-3, 0.1, 1.0, 3.0]))
def test_kl_random(seed, estimator, scale):
    rng = np.random.default_rng(seed)
    logp = t64(-rng.exponential(1.0, size=(4, 6)))
    ref = logp + t64(rng.normal(0.0, scale, size=(4, 6)))
    theirs = orl.compute_approx_kl(logp, ref, kl_estimator=estimator)
    ours = C.kl_estimate(logp, ref, estimator)
    inside = (ours.abs() < 10) & ((logp - ref) > -10)  # OpenRLHF clamps outside (test_kl_clamp_is_openrlhf_only)
    assert inside.any()
    close(theirs[inside], ours[inside], F32)
    # the gradients through the estimator (unbiased_gradient=False: the legacy pathwise gradient)
    a = logp.clone().requires_grad_(True)
    (orl.compute_approx_kl(a, ref, kl_estimator=estimator) * inside).sum().backward()
    b = logp.clone().requires_grad_(True)
    (C.kl_estimate(b, ref, estimator) * inside).sum().backward()
    close(a.grad, b.grad, F32)


def test_kl_clamp_is_openrlhf_only():
    # log pi - log pi_ref = 12: k1 = 12, past OpenRLHF's clamp at 10; ours is not clamped.
    logp, ref = t64([0.0]), t64([-12.0])
    assert float(orl.compute_approx_kl(logp, ref, kl_estimator="k1")) == 10.0
    assert float(C.kl_estimate(logp, ref, "k1")) == 12.0


# ---------------------------------------------------------------------------
# compute_reward against terminal_token_rewards - beta * KL
# ---------------------------------------------------------------------------

def test_compute_reward_hand_worked():
    # r = [1, -0.5], lengths 3 and 1, KL 0.1 everywhere, beta 0.5:
    # row 0: [-0.05, -0.05, 1 - 0.05] ; row 1: [-0.5 - 0.05, -0.05, -0.05] (padding keeps -beta KL,
    # OpenRLHF masks it later; objective.compute_advantages masks the KL itself)
    mask = left_mask([3, 1], 3)
    kl = torch.full((2, 3), 0.1, dtype=torch.float64)
    expected = [[-0.05, -0.05, 0.95], [-0.55, -0.05, -0.05]]
    close(orl.compute_reward(t64([1.0, -0.5]), 0.5, kl, action_mask=mask, reward_clip_range=(-10, 10)), expected, F64)
    close(C.terminal_token_rewards(t64([1.0, -0.5]), mask.to(torch.float64)) - 0.5 * kl, expected, F64)


@pytest.mark.parametrize("seed", SEEDS)
def test_compute_reward_random(seed):
    rng = np.random.default_rng(400 + seed)
    B, T = int(rng.integers(2, 9)), int(rng.integers(1, 9))
    mask = left_mask(random_lengths(rng, B, T), T)
    r = t64(rng.uniform(-5, 5, size=B))  # inside the default clip range (-10, 10)
    kl = t64(rng.normal(0, 0.2, size=(B, T)))
    for beta in (0.0, 0.05, 0.5):
        theirs = orl.compute_reward(r, beta, kl, action_mask=mask, reward_clip_range=(-10, 10))
        ours = C.terminal_token_rewards(r, mask.to(torch.float64)) - beta * kl
        close(theirs, ours, F64)
        assert float(theirs.abs().sum()) > 0


# ---------------------------------------------------------------------------
# RemoteExperienceMaker.compute_advantages_and_returns on real Experience objects
# ---------------------------------------------------------------------------

def make_maker(estimator, n_samples, *, gamma=1.0, lambd=0.95, no_std_norm=False, kl_coef=0.0,
               overlong_buffer_len=None, max_new_tokens=16):
    args = SimpleNamespace(
        rollout=SimpleNamespace(n_samples_per_prompt=n_samples, max_new_tokens=max_new_tokens),
        algo=SimpleNamespace(advantage=SimpleNamespace(estimator=estimator, gamma=gamma, lambd=lambd,
                                                       no_std_norm=no_std_norm)),
        reward=SimpleNamespace(clip_range=(-10, 10), overlong_buffer_len=overlong_buffer_len,
                               overlong_penalty_factor=1.0, stop_properly_penalty_coef=None),
        data=SimpleNamespace(max_len=max_new_tokens),
    )
    maker = object.__new__(orl.RemoteExperienceMaker)
    maker.strategy = SimpleNamespace(args=args)
    maker.args = args
    maker.advantage_estimator = estimator
    maker.kl_ctl = orl.FixedKLController(kl_coef)
    return maker


def run_openrlhf(maker, batch, rng):
    """Split the batch (prompt-major, B = P * G) into micro-batches of shuffled responses, each
    padded to its own width, run compute_advantages_and_returns, and map the results back."""
    B, T = batch["mask"].shape
    perm = rng.permutation(B)
    n_parts = int(rng.integers(2, min(4, B) + 1))
    parts = np.array_split(perm, n_parts)
    experiences = []
    for part in parts:
        width = int(min(T, batch["lengths"][part].max() + rng.integers(0, 3)))
        idx = torch.as_tensor(part)
        experiences.append(orl.Experience(
            index=[int(i) for i in part],
            rewards=batch["rewards"][idx].clone(),
            action_mask=batch["mask"][idx, :width],
            kl=batch["kl"][idx, :width].clone(),
            values=batch["values"][idx, :width].clone(),
            response_length=torch.as_tensor(batch["lengths"][part]),
            info={},
        ))
    out = maker.compute_advantages_and_returns(experiences)
    adv = torch.full((B, T), float("nan"), dtype=torch.float64)
    ret = torch.full((B, T), float("nan"), dtype=torch.float64)
    rewards = torch.full((B,), float("nan"), dtype=torch.float64)
    for exp, part in zip(out, parts):
        width = exp.advantages.shape[1]
        adv[part, :width] = exp.advantages.to(torch.float64)
        ret[part, :width] = exp.returns.to(torch.float64)
        rewards[part] = exp.rewards.to(torch.float64)
        assert exp.kl is None  # consumed
    return adv, ret, rewards, [p.tolist() for p in parts]


def adv_batch(seed, *, binary=False, max_g=5):
    rng = np.random.default_rng(seed)
    P, G, T = int(rng.integers(2, 5)), int(rng.integers(2, max_g + 1)), int(rng.integers(2, 8))
    B = P * G
    lengths = random_lengths(rng, B, T)
    rewards = rng.integers(0, 2, size=B).astype(np.float64) if binary else rng.normal(0, 1.5, size=B)
    rewards[:2] = [1.0, 0.0] if binary else rewards[:2]  # at least one group with a nonzero advantage
    return rng, G, {
        "lengths": lengths, "mask": left_mask(lengths, T), "rewards": t64(rewards),
        "kl": t64(rng.normal(0.0, 0.3, size=(B, T))),  # nonzero on padding as well
        "values": t64(rng.normal(0.0, 1.0, size=(B, T))),
    }


def real(mask):
    return mask.to(torch.bool)


def test_group_estimators_hand_worked():
    # Two prompts, G = 4: rewards [1, 0, 0, 1] and [1, 1, 1, 1]; lengths [2, 1, 3, 1, 1, 2, 1, 1].
    # group_norm: mean 0.5, sample std sqrt(4 * 0.25 / 3) = 0.5773503 -> +-0.8660254; the equal group -> 0
    # dr_grpo: +-0.5 ; rloo: 1 - (0 + 0 + 1) / 3 = 0.6666667, 0 - 2/3 = -0.6666667; equal group -> 0
    lengths = np.array([2, 1, 3, 1, 1, 2, 1, 1])
    batch = {"lengths": lengths, "mask": left_mask(lengths, 3), "rewards": t64([1, 0, 0, 1, 1, 1, 1, 1]),
             "kl": torch.zeros(8, 3, dtype=torch.float64), "values": torch.zeros(8, 3, dtype=torch.float64)}
    s = math.sqrt(3) / 2
    expected = {"group_norm": [s, -s, -s, s, 0, 0, 0, 0], "dr_grpo": [0.5, -0.5, -0.5, 0.5, 0, 0, 0, 0],
                "rloo": [2 / 3, -2 / 3, -2 / 3, 2 / 3, 0, 0, 0, 0]}
    ours_kind = {"group_norm": ("group_zscore", {"std_ddof": 1, "eps": 1e-9}), "dr_grpo": ("group_mean", {}),
                 "rloo": ("leave_one_out", {})}
    mf = batch["mask"].to(torch.float64)
    for estimator, per_response in expected.items():
        adv, ret, _, _ = run_openrlhf(make_maker(estimator, 4), batch, np.random.default_rng(0))
        want = t64(per_response)[:, None] * mf
        close(adv, want, dict(rtol=1e-6, atol=1e-8))  # group_norm's +1e-9 on the std: 1.5e-9 relative
        close(ret, want, dict(rtol=1e-6, atol=1e-8))
        ours, _ = O.compute_advantages(algo(advantage=ours_kind[estimator]), rewards=batch["rewards"],
                                       group_size=4, mask=batch["mask"])
        close(ours, want, dict(rtol=1e-6, atol=1e-8))


def test_group_norm_equal_fractional_group():
    # A group of three equal rewards 0.7: torch's mean is 0.7 - 1 ulp, so OpenRLHF's
    # (0.7 - mean) / (std + 1e-9) = 1.1102230246251565e-16 / (1.36e-16 + 1e-9) = 1.1102e-07, not 0.
    # Ours detects the equal group (max == min) and returns exactly 0. Both within 1e-6.
    lengths = np.array([1, 2, 1, 1, 1, 1])
    batch = {"lengths": lengths, "mask": left_mask(lengths, 2), "rewards": t64([0.7, 0.7, 0.7, 1.0, 0.0, 0.0]),
             "kl": torch.zeros(6, 2, dtype=torch.float64), "values": torch.zeros(6, 2, dtype=torch.float64)}
    adv, _, _, _ = run_openrlhf(make_maker("group_norm", 3), batch, np.random.default_rng(3))
    ours, _ = O.compute_advantages(algo(advantage=("group_zscore", {"std_ddof": 1, "eps": 1e-9})),
                                   rewards=batch["rewards"], group_size=3, mask=batch["mask"])
    assert torch.all(ours[:3] == 0)
    assert 1e-8 < float(adv[0, 0]) < 1e-6  # the rounding noise, documented
    close(adv[~torch.isnan(adv)], ours[~torch.isnan(adv)], GROUP_NORM)
    # the second group is unaffected: mean 1/3, sample std sqrt(((2/3)^2 + 2 (1/3)^2) / 2) = 0.5773503
    # -> (2/3) / 0.5773503 = 1.1547005, (-1/3) / 0.5773503 = -0.5773503
    close(ours[3:, 0], [2 / math.sqrt(3), -1 / math.sqrt(3), -1 / math.sqrt(3)], F64)
    close(adv[3:, 0], ours[3:, 0], F64)


@pytest.mark.parametrize("estimator, kind", [
    ("group_norm", ("group_zscore", {"std_ddof": 1, "eps": 1e-9})),
    ("dr_grpo", ("group_mean", {})),
    ("rloo", ("leave_one_out", {})),
])
@pytest.mark.parametrize("seed", SEEDS)
def test_group_estimators_random(seed, estimator, kind):
    rng, G, batch = adv_batch(500 + seed, binary=seed % 2 == 0)
    adv, ret, _, parts = run_openrlhf(make_maker(estimator, G), batch, rng)
    ours, _ = O.compute_advantages(algo(advantage=kind), rewards=batch["rewards"], group_size=G, mask=batch["mask"])
    grouped = batch["rewards"].reshape(-1, G)
    direct = {"group_norm": lambda r: C.group_zscore_advantage(r, std_ddof=1, eps=1e-9),
              "dr_grpo": C.group_mean_advantage, "rloo": C.leave_one_out_advantage}[estimator](grouped)
    close(ours, direct.reshape(-1)[:, None] * batch["mask"], F64)
    seen = ~torch.isnan(adv)  # OpenRLHF's micro-batch widths vary; compare every column it has
    close(adv[seen], ours[seen], F64)  # padding included: 0 on both sides
    close(ret[seen], ours[seen], F64)
    assert len(parts) >= 2 and float(ours.abs().sum()) > 0


@pytest.mark.parametrize("gamma", [1.0, 0.9])
@pytest.mark.parametrize("kl_coef", [0.0, 0.05])
@pytest.mark.parametrize("seed", SEEDS)
def test_reinforce_whitened(seed, gamma, kl_coef):
    rng, G, batch = adv_batch(600 + seed, binary=seed % 2 == 0)
    adv, ret, _, _ = run_openrlhf(make_maker("reinforce", G, gamma=gamma, kl_coef=kl_coef), batch, rng)
    kl = ("in_reward", {"estimator": "k1", "beta": kl_coef}) if kl_coef else ("none", {})
    cfg = algo(advantage=("whitened_return", {"gamma": gamma, "eps": 0.0}), kl=kl)
    ours, our_returns = O.compute_advantages(cfg, rewards=batch["rewards"], group_size=G, mask=batch["mask"],
                                             rollout_kl=batch["kl"] if kl_coef else None)
    m = real(batch["mask"])
    close(ret[~torch.isnan(ret)], our_returns[~torch.isnan(ret)], F64)  # the returns are float64 throughout
    close(adv[m], ours[m], F32)  # mean and std are float32 in OpenRLHF
    # the same from the components, spelled out
    token_rewards = C.terminal_token_rewards(batch["rewards"], batch["mask"].to(torch.float64)) \
        - kl_coef * batch["kl"] * batch["mask"]
    whitened = C.batch_whiten(C.reward_to_go(token_rewards, batch["mask"].to(torch.float64), gamma),
                              batch["mask"].to(torch.float64), eps=0.0)
    close(whitened[m], ours[m], F64)


@pytest.mark.parametrize("gamma", [1.0, 0.9])
@pytest.mark.parametrize("seed", range(8))
def test_reinforce_no_std_norm_is_token_mean_centring(seed, gamma):
    rng, G, batch = adv_batch(700 + seed)
    adv, _, _, _ = run_openrlhf(make_maker("reinforce", G, gamma=gamma, no_std_norm=True, kl_coef=0.05), batch, rng)
    mf = batch["mask"].to(torch.float64)
    token_rewards = C.terminal_token_rewards(batch["rewards"], mf) - 0.05 * batch["kl"] * mf
    returns = C.reward_to_go(token_rewards, mf, gamma)
    centred = returns - (returns * mf).sum() / mf.sum()
    m = real(batch["mask"])
    close(adv[m], centred[m], F32)  # the mean is float32 in OpenRLHF


def test_reinforce_whitening_hand_worked():
    # Lengths 2 and 1, rewards 1 and 0, gamma 1, no KL: returns on the real tokens {1, 1, 0}.
    # mean 2/3; population variance (2 * (1/3)^2 + (2/3)^2) / 3 = 2/9, std 0.4714045
    # whitened: (1/3) / 0.4714045 = 0.7071068, (-2/3) / 0.4714045 = -1.4142136
    # no_std_norm: 1/3, 1/3, -2/3
    lengths = np.array([2, 1])
    batch = {"lengths": lengths, "mask": left_mask(lengths, 2), "rewards": t64([1.0, 0.0]),
             "kl": torch.zeros(2, 2, dtype=torch.float64), "values": torch.zeros(2, 2, dtype=torch.float64)}
    m = real(batch["mask"])
    s = math.sqrt(0.5)
    adv, _, _, _ = run_openrlhf(make_maker("reinforce", 2), batch, np.random.default_rng(1))
    close(adv[m], [s, s, -2 * s], F32)
    ours, _ = O.compute_advantages(algo(advantage=("whitened_return", {"gamma": 1.0, "eps": 0.0})),
                                   rewards=batch["rewards"], group_size=2, mask=batch["mask"])
    close(ours[m], [s, s, -2 * s], F64)
    adv, _, _, _ = run_openrlhf(make_maker("reinforce", 2, no_std_norm=True), batch, np.random.default_rng(1))
    close(adv[m], [1 / 3, 1 / 3, -2 / 3], F32)


def test_reinforce_batch_mean_baseline_is_a_documented_gap():
    # Same batch: OpenRLHF's centring subtracts the token mean of the returns, 2/3 -> [1/3, 1/3, -2/3];
    # our reinforce_return (baseline batch_mean) subtracts the mean reward 1/2 -> [1/2, 1/2, -1/2].
    lengths = np.array([2, 1])
    mask = left_mask(lengths, 2)
    ours, _ = O.compute_advantages(algo(advantage=("reinforce_return", {"baseline": "batch_mean", "gamma": 1.0})),
                                   rewards=t64([1.0, 0.0]), group_size=2, mask=mask)
    close(ours[real(mask)], [0.5, 0.5, -0.5], F64)


def test_gae_hand_worked():
    # Response 0: length 2, reward 1, values [0.5, 0.8]; response 1: length 1, reward 0, value [0.3].
    # gamma 1, lambda 0.5, no KL.
    # response 0: delta_1 = 1 + 0 - 0.8 = 0.2 ; delta_0 = 0 + 0.8 - 0.5 = 0.3
    #             A_1 = 0.2 ; A_0 = 0.3 + 0.5 * 0.2 = 0.4 ; returns A + V = [0.9, 1.0]
    # response 1: delta_0 = 0 + 0 - 0.3 = -0.3 = A_0 ; return 0
    # whitened over {0.4, 0.2, -0.3}: mean 0.1, variance (0.09 + 0.01 + 0.16) / 3 = 0.0866667
    #             -> 0.3 / 0.2943920 = 1.0190493, 0.1 / 0.2943920 = 0.3396831, -0.4 / 0.2943920 = -1.3587324
    lengths = np.array([2, 1])
    batch = {"lengths": lengths, "mask": left_mask(lengths, 2), "rewards": t64([1.0, 0.0]),
             "kl": torch.zeros(2, 2, dtype=torch.float64), "values": t64([[0.5, 0.8], [0.3, 7.0]])}
    m = real(batch["mask"])
    sd = math.sqrt(0.26 / 3)
    adv, ret, _, _ = run_openrlhf(make_maker("gae", 2, gamma=1.0, lambd=0.5), batch, np.random.default_rng(2))
    close(adv[m], [0.3 / sd, 0.1 / sd, -0.4 / sd], F32)
    close(ret[m], [0.9, 1.0, 0.0], F64)
    raw, returns = O.compute_advantages(algo(advantage=("gae", {"gamma": 1.0, "lam": 0.5})), rewards=batch["rewards"],
                                        group_size=2, mask=batch["mask"], values=batch["values"])
    close(raw, [[0.4, 0.2], [-0.3, 0.0]], F64)
    close(returns, [[0.9, 1.0], [0.0, 0.0]], F64)
    close(C.batch_whiten(raw, batch["mask"].to(torch.float64), eps=0.0)[m], [0.3 / sd, 0.1 / sd, -0.4 / sd], F64)


@pytest.mark.parametrize("gamma, lambd", [(1.0, 0.95), (1.0, 1.0), (0.9, 0.5)])
@pytest.mark.parametrize("kl_coef", [0.0, 0.05])
@pytest.mark.parametrize("no_std_norm", [False, True])
@pytest.mark.parametrize("seed", range(8))
def test_gae_random(seed, no_std_norm, kl_coef, gamma, lambd):
    rng, G, batch = adv_batch(800 + seed)
    maker = make_maker("gae", G, gamma=gamma, lambd=lambd, no_std_norm=no_std_norm, kl_coef=kl_coef)
    adv, ret, _, _ = run_openrlhf(maker, batch, rng)

    kl = ("in_reward", {"estimator": "k1", "beta": kl_coef}) if kl_coef else ("none", {})
    cfg = algo(advantage=("gae", {"gamma": gamma, "lam": lambd}), kl=kl)
    raw, returns = O.compute_advantages(cfg, rewards=batch["rewards"], group_size=G, mask=batch["mask"],
                                        rollout_kl=batch["kl"] if kl_coef else None, values=batch["values"])
    mf = batch["mask"].to(torch.float64)
    seen = ~torch.isnan(ret)
    close(ret[seen], returns[seen], F64)  # returns: float64 throughout, padding 0 on both sides
    # the raw GAE, through OpenRLHF's own get_advantages_and_returns on the whole batch
    token_rewards = orl.compute_reward(batch["rewards"], kl_coef, batch["kl"], action_mask=batch["mask"])
    their_raw, their_ret = maker.get_advantages_and_returns(batch["values"], token_rewards, batch["mask"],
                                                            gamma, lambd)
    close(their_raw, raw, F64)
    close(their_ret, returns, F64)
    m = real(batch["mask"])
    if no_std_norm:
        want = raw - (raw * mf).sum() / mf.sum()
    else:
        want = C.batch_whiten(raw, mf, eps=0.0)
    close(adv[m], want[m], F32)  # mean and std are float32 in OpenRLHF


# ---------------------------------------------------------------------------
# Overlong penalty
# ---------------------------------------------------------------------------

def test_overlong_hand_worked():
    # max_new_tokens 8, buffer 4: the ramp starts after 8 - 4 = 4 tokens.
    # length 1 -> 0 ; 4 -> 0 ; 5 -> -1/4 ; 7 -> -3/4 ; 8 -> -1
    lengths = [1, 4, 5, 7, 8]
    expected = [0.0, 0.0, -0.25, -0.75, -1.0]
    exp = orl.Experience(rewards=torch.zeros(5, dtype=torch.float64), response_length=torch.tensor(lengths))
    orl.apply_overlong_penalty([exp], max_new_tokens=8, overlong_buffer_len=4)
    close(exp.rewards, expected, F64)
    close(C.overlong_penalty(torch.tensor(lengths), 8, 4), expected, F64)


@settings(max_examples=50, deadline=None)
@given(max_new_tokens=st.integers(1, 64), data=st.data())
def test_overlong_random(max_new_tokens, data):
    cache = data.draw(st.integers(1, max_new_tokens))
    lengths = torch.arange(1, max_new_tokens + 1)  # every length OpenRLHF can produce
    rewards = t64(np.linspace(-1.0, 1.0, len(lengths)))
    exp = orl.Experience(rewards=rewards.clone(), response_length=lengths)
    orl.apply_overlong_penalty([exp], max_new_tokens=max_new_tokens, overlong_buffer_len=cache)
    ours = C.overlong_penalty(lengths, max_new_tokens, cache)
    close(exp.rewards - rewards, ours, F64)
    assert float(ours[-1]) == -1.0  # the budget itself gets the full penalty
    if cache < max_new_tokens:
        assert float(ours[max_new_tokens - cache - 1]) == 0.0  # the last length before the ramp


@pytest.mark.parametrize("seed", range(8))
def test_overlong_then_group_norm_end_to_end(seed):
    """DAPO's shaping then the group z-score, through compute_advantages_and_returns's own
    apply_length_penalties, against objective.shape_rewards + objective.compute_advantages."""
    rng, G, batch = adv_batch(900 + seed, binary=True)
    max_new_tokens = int(batch["mask"].shape[1])
    cache = int(rng.integers(1, max_new_tokens + 1))
    maker = make_maker("group_norm", G, overlong_buffer_len=cache, max_new_tokens=max_new_tokens)
    adv, _, shaped_theirs, _ = run_openrlhf(maker, batch, rng)
    cfg = algo(advantage=("group_zscore", {"std_ddof": 1, "eps": 1e-9}),
               shaping=("overlong", {"max_length": max_new_tokens, "cache_length": cache}))
    shaped, _ = O.shape_rewards(cfg, batch["rewards"], torch.as_tensor(batch["lengths"]))
    close(shaped_theirs, shaped, F64)
    ours, _ = O.compute_advantages(cfg, rewards=shaped, group_size=G, mask=batch["mask"])
    seen = ~torch.isnan(adv)
    close(adv[seen], ours[seen], GROUP_NORM)
