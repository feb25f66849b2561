"""The names of the files the project writes outside a run's log, each written once (a run's own files are
``runlog.HEADER``, ``STEPS``, ``EVALS`` and ``TOKENS_DIR``).

A task directory: training/task.py writes it; SFT and RL (training/), the OpenRLHF command builder, the CLI
and the scale chapter read it. Generator version 3 writes three disjoint pools and a meta file; version 2
(the tiny set's first task) has no RL pool, and its runs drew RL prompts from the SFT pool.

A warm start: training/sft.py writes a Hugging Face checkpoint with its own record beside it, which RL
(its prompts must not be ones the warm start trained on) and the scale chapter's provenance read.
"""

from __future__ import annotations

#: The SFT pool: worked solutions the warm start learns (version 2: RL's prompts as well).
SFT_POOL = "train.jsonl"
#: The RL pool: the prompts RL draws, with their answers but no worked solutions (version 3).
RL_POOL = "rl.jsonl"
#: The held-out pool: evaluation only.
HELDOUT_POOL = "eval.jsonl"
#: Each pool's file by the pool's name (the names meta.json and training/task.py use).
POOL_FILES = {"sft": SFT_POOL, "rl": RL_POOL, "heldout": HELDOUT_POOL}
#: What the task generator wrote: its version, seed, level, and each pool's rows, bytes and digest.
TASK_META = "meta.json"
#: A warm start's record: its steps, seed, stop rule, evaluations and the SFT data it trained on.
SFT_META = "sft_meta.json"

__all__ = ["HELDOUT_POOL", "POOL_FILES", "RL_POOL", "SFT_META", "SFT_POOL", "TASK_META"]
