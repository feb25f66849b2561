"""A tiny random policy saved to disk, for smoke runs of the real trainer.

Built from the generated task's tokenizer and the ``tiny`` preset's shape; never shipped.
"""

from __future__ import annotations

import zlib
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def save_tiny_checkpoint(directory: Path, n_rows: int = 2000) -> Path:
    from training.model import build_model
    from training.task import load_task
    from training.tokenizer import save_tokenizer, task_corpus, train_tokenizer

    rows = load_task(REPO / "data" / "tasks" / "train.jsonl")[:n_rows]
    tokenizer = train_tokenizer(task_corpus(rows))
    model = build_model("tiny", len(tokenizer), seed=0, pad_token_id=tokenizer.pad_token_id,
                        bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id)
    directory.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(directory)
    save_tokenizer(tokenizer, directory)
    return directory


def coin_flip_score(text: str, label) -> dict:
    """A stand-in scorer for smoke runs: 'correct' by a hash of the text.

    A random policy never writes a right answer, so every group would be all wrong and a
    dynamic-sampling filter would drop everything. This gives mixed groups while keeping
    the trainer's real code path (filter, refill, advantages) under test.
    """
    correct = float(zlib.crc32(text.encode()) % 2)
    return {"correct": correct, "format": 0.0, "parsed_answer": None}
