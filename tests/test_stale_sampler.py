"""training/stale.py: the asynchronous mode's sampler, k rollouts behind the policy.

A linear "policy" whose weight is set to the rollout number by hand makes the lag visible as a
number: the sampler of rollout r must hold r - k (0 while fewer than k rollouts have run)."""

from __future__ import annotations

import pytest
import torch

from training.stale import StaleSampler


def _policy() -> torch.nn.Module:
    return torch.nn.Linear(1, 1, bias=False)


def _set(policy: torch.nn.Module, value: float) -> None:
    with torch.no_grad():
        policy.weight.fill_(value)


@pytest.mark.parametrize("lag", [1, 2, 3])
def test_rollout_r_is_sampled_by_the_policy_of_rollout_r_minus_lag(lag):
    policy = _policy()
    sampler = StaleSampler(policy, lag)
    seen = []
    for r in range(7):
        _set(policy, float(r))  # the policy's weights at the start of rollout r
        model = sampler.for_rollout(policy)
        seen.append(model.weight.item())
        _set(policy, 100.0 + r)  # the rollout's updates move the policy; the sampler's copy stays
        assert model.weight.item() == seen[-1]
    assert seen == [float(max(0, r - lag)) for r in range(7)]


def test_the_sampler_is_a_frozen_copy_not_the_policy():
    policy = _policy()
    model = StaleSampler(policy, 1).for_rollout(policy)
    assert model is not policy and not model.training
    assert not any(p.requires_grad for p in model.parameters())
    assert all(p.requires_grad for p in policy.parameters())


def test_a_resumed_sampler_continues_with_the_same_stale_weights():
    policy, lag = _policy(), 2
    straight, first = StaleSampler(policy, lag), StaleSampler(policy, lag)
    for r in range(4):
        _set(policy, float(r))
        straight.for_rollout(policy)
        first.for_rollout(policy)
    resumed = StaleSampler(policy, lag)
    resumed.load_state(first.state())  # what a checkpoint after rollout 3 holds
    for r in range(4, 7):
        _set(policy, float(r))
        assert resumed.for_rollout(policy).weight.item() == straight.for_rollout(policy).weight.item() == r - lag


def test_bad_lags_and_checkpoints_are_refused_with_one_line():
    with pytest.raises(ValueError, match="sampler_lag must be at least 1"):
        StaleSampler(_policy(), 0)
    sampler = StaleSampler(_policy(), 1)
    with pytest.raises(ValueError, match="holds 3 sampler snapshots; a lag of 1 keeps at most 2"):
        sampler.load_state([_policy().state_dict() for _ in range(3)])


@pytest.mark.slow
def test_an_asynchronous_run_logs_the_real_mismatch_of_its_stale_sampler(tiny_policy, tmp_path, monkeypatch):
    """A two-rollout-stale GRPO-TIS smoke run: rollout 0 is sampled by the policy itself (the sampler's
    and the learner's log-probs agree to rounding), later rollouts by the policy of two rollouts before,
    whose log-probs the learner no longer shares; the header says so, the mismatch metrics and each
    detailed token's sampler log-prob are logged, and every token still recomputes."""
    import training.rl as rl
    from training_fixtures import coin_flip_score
    from unipo_build.core import runlog
    from unipo_build.core.reader import validate_run
    from unipo_build.core.recompute import check_step

    monkeypatch.setattr(rl, "score_response", coin_flip_score)
    opts = rl.TrainOptions(algorithm="grpo_tis", steps=4, model=str(tiny_policy), out=str(tmp_path / "run"),
                           progress=False, eval_n=8, detail_every=1, sampler_lag=2,
                           rl_overrides={"prompts_per_step": 4, "group_size": 4, "max_new_tokens": 12, "lr": 3e-3})
    run = rl.train(opts)
    assert validate_run(run) == []
    assert runlog.read_header(run).hyperparameters.get("sampler_lag") == 2
    gap = {}
    for record in runlog.iter_steps(run):
        gap.setdefault(record.rollout, record.metrics["mismatch/logp_abs_mean"])
    assert gap[0] < 1e-4  # rollout 0: sampled by the policy itself
    assert min(gap[2], gap[3]) > 50 * max(gap[0], 1e-7)  # sampled two rollouts (four updates) behind
    for step in runlog.token_steps(run):
        detail = runlog.read_step_detail(run, step)
        tokens = [r.tokens for g in detail.prompts for r in g.responses if r.tokens is not None]
        assert tokens and all(t.sample_logp is not None for t in tokens)
        assert check_step(runlog.read_header(run).algorithm_config, detail) == [], step


def test_a_negative_lag_is_refused_in_one_line(tiny_policy, tmp_path):
    import training.rl as rl

    opts = rl.TrainOptions(algorithm="grpo", steps=1, model=str(tiny_policy), out=str(tmp_path / "run"),
                           progress=False, sampler_lag=-1)
    with pytest.raises(rl.TrainError, match=r"^--sampler-lag -1: a lag is 0 \(synchronous\) or more rollouts$"):
        rl.train(opts)
    assert not (tmp_path / "run").exists()
