"""Each token's share of the decoded text, for any tokenizer: the token files show a token as the
reader sees it in the answer. Used by the trainer (training/tokenizer.py) and the TRL tap."""

from __future__ import annotations


def token_pieces(tokenizer, ids: list[int]) -> list[str]:
    """The text each token adds to the decoded string: ``"".join(pieces) == tokenizer.decode(ids)``.

    Works for any tokenizer (incremental decoding), so the token-level logs show each token as the
    reader would see it in the text (``▁apples`` -> `` apples``; the first token loses its space).
    """
    pieces, previous = [], ""
    for i in range(len(ids)):
        text = tokenizer.decode(ids[: i + 1], skip_special_tokens=False)
        pieces.append(text[len(previous):] if text.startswith(previous) else text)
        previous = text
    return pieces
