"""The micro_token_mean aggregation (issue 44 item 5): gradient accumulation of a per-micro-batch token mean, TRL's
loss_type 'bnpo' with gradient_accumulation_steps > 1, worked by hand. The real TRL run is tests/test_trl_run.py's
test_bnpo_under_gradient_accumulation_is_its_kind."""

from __future__ import annotations

import numpy as np
import pytest

from unipo_build.core import registry
from unipo_build.core.components import micro_token_mean_weights

#: Four responses of 2, 1, 3 and 3 tokens, two per micro-batch: micro-batch 1 holds 3 tokens, micro-batch 2 holds 6.
MASK = np.array([[1, 1, 0], [1, 0, 0], [1, 1, 1], [1, 1, 1]], dtype=np.float64)


def test_each_micro_batch_is_its_own_token_mean():
    """M = 2 micro-batches: a token of the first weighs 1 / (2 x 3) = 1/6, one of the second 1 / (2 x 6) = 1/12; each
    micro-batch carries half of the total. The whole step's token mean would give every token 1/9."""
    w = micro_token_mean_weights(MASK, 2)
    assert w == pytest.approx(np.array([[1 / 6, 1 / 6, 0], [1 / 6, 0, 0], [1 / 12] * 3, [1 / 12] * 3]))
    assert w[:2].sum() == pytest.approx(0.5) and w[2:].sum() == pytest.approx(0.5)
    torch = pytest.importorskip("torch")
    assert micro_token_mean_weights(torch.tensor(MASK), 2).numpy() == pytest.approx(w)


def test_it_is_trls_bnpo_loss_under_accumulation():
    """TRL (_compute_loss, loss_type 'bnpo'): each micro-batch's loss is sum(l * mask) / mask.sum(), divided by the
    accumulation steps, and the step's loss is their sum. With per-token losses l, the kind's weighted sum is minus
    that (the objective is minus the loss); a micro-batch whose tokens are all masked (TRL's clamp(min=1)) adds 0."""
    rng = np.random.default_rng(0)
    loss = rng.normal(size=MASK.shape)
    trl = sum((loss[m:m + 2] * MASK[m:m + 2]).sum() / max(MASK[m:m + 2].sum(), 1.0) / 2 for m in (0, 2))
    assert float((micro_token_mean_weights(MASK, 2) * loss).sum()) == pytest.approx(trl)
    empty = MASK.copy()
    empty[:2] = 0
    assert micro_token_mean_weights(empty, 2)[:2].sum() == 0


def test_the_kind_is_registered_with_its_micro_batch_and_trl_setting():
    kind = registry.kind("aggregation", "micro_token_mean")
    assert registry.explainer_problem(kind) is None
    assert kind.apply(MASK, {"micro_batch": 2}).tolist() == micro_token_mean_weights(MASK, 2).tolist()
    with pytest.raises(ValueError):
        kind.params.model_validate({"micro_batch": 0})
    assert kind.apply(MASK, {"micro_batch": None}).tolist() == (MASK / MASK.sum()).tolist()  # one micro-batch
    (trl,) = registry.settings_of(kind, "trl")
    assert "bnpo" in trl.note and "gradient_accumulation_steps > 1" in trl.note
    # TRL's loss_type names keep their one kind each: bnpo alone (one micro-batch a step) is the token mean
    from unipo_build.trainers.trl.config import AGGREGATION

    assert AGGREGATION["bnpo"] == "token_mean"
