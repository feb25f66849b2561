"""An aggregation kind of a trainer that accumulates gradients over micro-batches, each normalised on its own: TRL's
loss_type 'bnpo' with gradient_accumulation_steps > 1 divides each micro-batch's loss by that micro-batch's tokens and
by the accumulation steps, so a token's weight depends on the micro-batch it fell in (``unipo_build.core.registry``
says what a kind is made of; the other aggregation kinds are in ``kinds_loss``)."""

from __future__ import annotations

from pydantic import Field

from unipo_build.core import components as C
from unipo_build.core.numbers import param_text as _fmt
from unipo_build.core.registry_base import Term, _Params, explain, register, row, setting


class MicroBatch(_Params):
    micro_batch: int | None = Field(None, gt=0, description="Completions per micro-batch (TRL "
                                    "per_device_train_batch_size): the update's rows, in order, this many at a time; "
                                    "null: the update is one micro-batch (the token mean).")


register("aggregation", "micro_token_mean", MicroBatch,
         "A token mean in each micro-batch, the micro-batches' means averaged: gradient accumulation of a per-batch "
         "token mean (TRL's bnpo with gradient accumulation).",
         lambda p: (r"\frac{1}{M}\sum_{m=1}^{M}\frac{1}{\sum_{j\in m}|o_j|}\sum_{i\in m}\sum_{t=1}^{|o_i|},\quad "
                    r"|m|=%s" % (_fmt(p["micro_batch"]) + r"\ \text{responses}" if p.get("micro_batch")
                                 else r"\text{the update}")),
         (Term("M", r"M", "The micro-batches of the update (the gradient accumulation steps), each of the same number "
                          "of responses, taken in order."),
          Term("micro_tokens", r"\sum_{j\in m}|o_j|", "The tokens of the response's own micro-batch: each of its tokens "
                                                      "weighs one over M times this, so a token weighs more in a "
                                                      "micro-batch of short responses.")),
         fn=C.micro_token_mean_weights,
         apply=lambda mask, p: C.micro_token_mean_weights(mask, p.get("micro_batch") or mask.shape[0]),
         label="mean over each micro-batch's tokens, then over micro-batches",
         weight_tex=r"w_{i,t}=\frac{1}{M\sum_{j\in m(i)}|o_j|}",
         # the weight is one over M times the micro-batch's tokens, which a step's log holds only as that weight
         explain=explain(row("weight w", "1 / (M · Σ|oⱼ| of its micro-batch) = 1 / {raw(counts.tokens)} (from the log)",
                             "calc.weight", key="weight", check="token.weight"),
                         counts={"tokens": "token.weight > 0 ? round(1 / token.weight) : null"}),
         weight_meaning="The tokens of one micro-batch weigh the same; a micro-batch of short responses gives each of "
                        "its tokens more weight than one of long responses, so the weights depend on how the update "
                        "was split.",
         worked=lambda w, n, length, p: (r"w=\frac{1}{M\sum_{j\in m}|o_j|}=\frac{1}{"
                                         + str(round(1.0 / w) if w > 0 else 0) + "}"),
         trainers=(setting("trl", note="loss_type 'bnpo' with gradient_accumulation_steps > 1; the micro-batch is "
                                       "per_device_train_batch_size"),))
