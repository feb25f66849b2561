"""The training pipeline: task, tokenizer, model, SFT warm start and the RL loop."""

import os

# OpenMP threads that wait for work spin by default; on a machine shared with other jobs
# that made 2 torch threads several times slower than 1. Must be set before torch loads.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

from pathlib import Path

from unipo_build.core.project import root_or

#: The project the pipeline reads its task, warm start and suite from and writes work/ into: the one
#: the working directory (or UNIPO_ROOT) names, as for every other unipo command. Not this file's
#: directory alone: `pip install .` puts the package in site-packages and leaves data/ behind. Run
#: outside any project, it is the checkout this package sits in.
PROJECT = root_or(Path(__file__).resolve().parent.parent)
