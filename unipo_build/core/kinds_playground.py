"""The playgrounds' words for the shipped kinds (:attr:`Kind.words`, ``describe``): what the loss-shapes playground's
aggregation chart calls each aggregation kind it draws and the algorithm whose colour draws it
(site/playgrounds/loss_shapes.py, shape_charts.py). A kind without them is not drawn there."""

from __future__ import annotations

from unipo_build.core.registry_base import describe

# playground_label: the chart's legend; drawn_as: the algorithm id whose colour draws the kind (None: neutral grey).
describe("aggregation", "seq_mean_token_mean", playground_label=lambda: "seq-mean-token-mean (GRPO, GSPO)",
         drawn_as=lambda: "grpo")
describe("aggregation", "token_mean", playground_label=lambda: "token-mean (DAPO)", drawn_as=lambda: "dapo")
describe("aggregation", "constant_normalizer", playground_label=lambda: "constant L (Dr. GRPO)",
         drawn_as=lambda: "dr_grpo")
describe("aggregation", "seq_mean_token_sum", playground_label=lambda: "seq-mean-token-sum", drawn_as=lambda: None)
