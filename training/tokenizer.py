"""A word-level tokenizer for the arithmetic task, saved as a normal Hugging Face tokenizer.

Why words, and why single digits:

- Tokens should be things a reader recognises in the token-level figures: ``▁apples``, ``▁has``,
  ``.``, ``▁Answer``, ``:``. So the model is WordLevel (one token per word; the vocabulary is
  every piece in the training corpus), not byte- or character-level.
- Numbers are split into single digits, most significant first (``86`` -> ``▁8`` ``6``). Whole
  numbers as tokens would make arithmetic a lookup table over thousands of rare tokens, and eval
  answers could be tokens never seen in training. Measured on the default task (seed 0): whole-number
  tokens need 3,741 distinct number tokens for the training set, and 6.3% of the eval answers (3.2% of
  all numbers in eval solutions) never occur in training, so they could not even be written; digit
  tokens need 20 (``▁0``-``▁9`` begin a number, ``0``-``9`` continue it) and cover every integer.
- Spaces are kept SentencePiece-style: a word carries its leading space as ``▁`` (the Metaspace
  pre-tokenizer), so decoding is lossless for task text and ``tokenize(prompt) +
  tokenize(completion) == tokenize(prompt + " " + completion)``: SFT can tokenize prompt and
  completion separately and the RL loop can decode a response on its own. The space goes on the
  first digit (``▁8``) rather than into a separate ``▁`` token: a solution is 18.6 tokens (with
  <eos>) instead of 23.8, and generation is half of every RL step.

Result on the default task: 90 tokens (86 corpus pieces + 4 special); a prompt is 21.5 tokens on
average (max 29), a solution 18.6 with <eos> (max 32, the default max_new_tokens).

Special tokens: <pad> (0), <bos> (1), <eos> (2), <unk> (3). No post-processor adds <bos>: prompts are
tokenized the same with or without ``add_special_tokens``, exactly as OpenRLHF tokenizes them
(``add_special_tokens=False``). Completions end with <eos>, which stops generation.
"""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # local paths only; never retry the hub

from collections import Counter
from collections.abc import Iterable
from pathlib import Path

from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, pre_tokenizers

from unipo_build.core.token_text import token_pieces  # noqa: F401 (this module's API since the first runs)

SPACE = "\u2581"  # "▁", the SentencePiece word-boundary marker
PAD, BOS, EOS, UNK = "<pad>", "<bos>", "<eos>", "<unk>"
SPECIAL_TOKENS = (PAD, BOS, EOS, UNK)
# One piece = a word with its leading space, or one digit (the first digit of a number carries the
# space), or one other symbol (with its leading space), or a lone space marker (runs of spaces).
PIECE_PATTERN = rf"{SPACE}?[A-Za-z]+|{SPACE}?[0-9]|{SPACE}?[^\sA-Za-z0-9{SPACE}]|{SPACE}"
ALWAYS_IN_VOCAB = [SPACE] + [d for d in "0123456789"] + [SPACE + d for d in "0123456789"]


def build_pre_tokenizer() -> pre_tokenizers.PreTokenizer:
    return pre_tokenizers.Sequence(
        [
            pre_tokenizers.Metaspace(replacement=SPACE, prepend_scheme="first", split=True),
            pre_tokenizers.Split(Regex(PIECE_PATTERN), behavior="isolated"),
        ]
    )


def build_vocab(texts: Iterable[str]) -> dict[str, int]:
    """Special tokens first, then every corpus piece by descending count (ties by text): deterministic."""
    pre = build_pre_tokenizer()
    counts = Counter(piece for text in texts for piece, _ in pre.pre_tokenize_str(text))
    for piece in ALWAYS_IN_VOCAB:
        counts.setdefault(piece, 0)
    vocab = {tok: i for i, tok in enumerate(SPECIAL_TOKENS)}
    for piece in sorted(counts, key=lambda p: (-counts[p], p)):
        if piece not in vocab:
            vocab[piece] = len(vocab)
    return vocab


def train_tokenizer(texts: Iterable[str]):
    """Build the task tokenizer from a corpus of texts; returns a transformers tokenizer."""
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.WordLevel(build_vocab(texts), unk_token=UNK))
    tok.pre_tokenizer = build_pre_tokenizer()
    tok.decoder = decoders.Metaspace(replacement=SPACE, prepend_scheme="first", split=True)
    tok.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in SPECIAL_TOKENS])
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        pad_token=PAD,
        bos_token=BOS,
        eos_token=EOS,
        unk_token=UNK,
        clean_up_tokenization_spaces=False,
        padding_side="left",
        model_max_length=1024,
    )


def task_corpus(rows: Iterable[dict]) -> Iterable[str]:
    """The texts a tokenizer is built from: prompts and worked solutions (or bare answers)."""
    for row in rows:
        yield row["prompt"]
        yield row.get("solution") or f"Answer: {row['answer']}"


def save_tokenizer(tokenizer, out_dir: str | Path) -> None:
    """Save so that AutoTokenizer.from_pretrained(out_dir) works (transformers 4.x and 5.x).

    transformers 5 writes tokenizer_class "TokenizersBackend", a name 4.x does not know; the
    4.x name PreTrainedTokenizerFast loads in both.
    """
    import json

    tokenizer.save_pretrained(out_dir)
    cfg_path = Path(out_dir) / "tokenizer_config.json"
    cfg = json.loads(cfg_path.read_text())
    cfg["tokenizer_class"] = "PreTrainedTokenizerFast"
    cfg_path.write_text(json.dumps(cfg, indent=2) + "\n")
