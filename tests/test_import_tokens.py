"""importers/common.derive_tokens, the token numbers of every importer (TRL, prime-rl, UNIPO's format, OpenRLHF's
tap), worked by hand: it goes through objective.token_terms and objective.weights, so an imported token holds the
numbers the trainer's objective gives it."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from unipo_build.trainers import common as K
from unipo_build.core.specs import load_specs, resolve

SPECS = load_specs(Path(__file__).resolve().parents[1] / "data" / "algorithms")
GRPO = resolve(SPECS["grpo"], max_new_tokens=12)  # symmetric clip 0.2, k3 in the loss with beta 0.04, seq-mean-token-mean


def inputs(**fields) -> K.TokenInputs:
    n = len(fields["logp"])
    return K.TokenInputs(loc=K.Loc("log.jsonl", step=0), ids=list(range(n)), text=["x"] * n, **fields)


def responses() -> list[K.TokenInputs]:
    """Response 1 (A = 1): token 0 unchanged (ratio 1, reference alike: KL 0); token 1 ratio 1.5, past 1 + 0.2, and
    reference log-prob log 0.5 below: k3 = (0.5 - 1) - log 0.5 = log 2 - 0.5. Response 2 (A = -1): ratio 0.5, below
    1 - 0.2, its KL logged as 0.1 (no reference log-probs)."""
    one = inputs(logp=[-1.0, -2.0], old_logp=[-1.0, -2.0 - math.log(1.5)], advantage=[1.0, 1.0],
                 ref_logp=[-1.0, -2.0 + math.log(0.5)])
    two = inputs(logp=[-1.0], old_logp=[-1.0 + math.log(2.0)], advantage=[-1.0], kl=[0.1])
    return [one, two]


def test_grpo_tokens_by_hand():
    notes = K.Notes()
    one, two = K.derive_tokens(GRPO, responses(), notes)
    k3 = math.log(2.0) - 0.5
    assert one.ratio == pytest.approx([1.0, 1.5], abs=1e-12) and one.clip == [0, 1]
    # token 1: min(1.5 x 1, 1.2 x 1) = 1.2, minus beta x KL
    assert one.kl == pytest.approx([0.0, k3], abs=1e-12)
    assert one.objective == pytest.approx([1.0, 1.2 - 0.04 * k3], abs=1e-12)
    # two responses: each weighs 1/2, spread over its own tokens
    assert one.weight == [0.25, 0.25] and two.weight == [0.5]
    assert one.contribution == pytest.approx(0.25 * (1.0 + 1.2 - 0.04 * k3), abs=1e-12)
    # response 2: min(0.5 x -1, 0.8 x -1) = -0.8, the logged KL kept and subtracted
    assert two.ratio == pytest.approx([0.5], abs=1e-12) and two.clip == [-1] and two.kl == [0.1]
    assert two.objective == pytest.approx([-0.8 - 0.04 * 0.1], abs=1e-12)
    assert two.contribution == pytest.approx(0.5 * (-0.804), abs=1e-12)
    assert "token kl computed from ref_log_probs with the spec's estimator" in notes.lines()
    assert "token objective derived from the spec's math (token_objective not logged) [2 times]" in notes.lines()


def test_a_logged_objective_is_kept_and_a_missing_kl_is_noted():
    notes = K.Notes()
    logged = inputs(logp=[-1.0], old_logp=[-1.0], advantage=[2.0], objective=[0.7])
    bare = inputs(logp=[-1.0], old_logp=[-1.0], advantage=[2.0])  # no ref_logp, no kl: the KL term cannot be had
    a, b = K.derive_tokens(GRPO, [logged, bare], notes)
    assert a.objective == [0.7] and a.contribution == pytest.approx(0.5 * 0.7)
    assert b.objective == [2.0] and b.kl is None
    assert "token objective derived without its KL term (no ref_log_probs or token_kl logged)" in notes.lines()


def test_an_unknown_algorithm_reads_ratio_times_advantage_and_a_token_mean():
    """cfg None: token ratio, no clip, no KL, one token mean over the step's 3 tokens."""
    notes = K.Notes()
    one, two = K.derive_tokens(None, responses(), notes)
    assert one.ratio == pytest.approx([1.0, 1.5], abs=1e-12) and one.clip == [0, 0]
    assert one.objective == pytest.approx([1.0, 1.5], abs=1e-12) and two.objective == pytest.approx([-0.5], abs=1e-12)
    assert one.weight == pytest.approx([1 / 3, 1 / 3]) and two.weight == pytest.approx([1 / 3])
    assert one.kl is None and two.kl == [0.1]  # the logged KL is kept beside, never in the objective
    assert "token objective derived as ratio x advantage (algorithm unknown) [2 times]" in notes.lines()


def test_a_sequence_ratio_is_the_geometric_mean_of_the_response():
    """GSPO: the ratio of every token is exp(mean log-ratio); response 1's is sqrt(1 x 1.5) = 1.2247, past
    1 + eps_high = 1.0004 with A > 0, so both tokens are clipped there (GSPO has no KL)."""
    gspo = resolve(SPECS["gspo"], max_new_tokens=12)
    one, _ = K.derive_tokens(gspo, responses(), K.Notes())
    assert one.ratio == pytest.approx([math.sqrt(1.5)] * 2, abs=1e-12) and one.clip == [1, 1]
    assert one.objective == pytest.approx([1.0004, 1.0004], abs=1e-12)


def test_a_ratio_that_overflows_is_one_line():
    far = inputs(logp=[0.0], old_logp=[-900.0], advantage=[1.0], ref_logp=[0.0])
    with pytest.raises(Exception, match=r"log.jsonl \(step 0\): tokens.ratio: the derived ratio of token 0 is not finite"):
        K.derive_tokens(GRPO, [far], K.Notes())
