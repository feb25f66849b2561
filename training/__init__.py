"""The training pipeline: task, tokenizer, model, SFT warm start and the RL loop."""

import os

# OpenMP threads that wait for work spin by default; on a machine shared with other jobs
# that made 2 torch threads several times slower than 1. Must be set before torch loads.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
