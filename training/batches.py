"""Sub-batches of a rollout: whole responses selected, trimmed to what they need, and joined.

A rollout is 128 rows padded to the longest prompt and the longest answer. Every forward pass the
trainer makes works on a subset of rows (a minibatch), and pays for the widest row it holds, so
these helpers cut the padding columns that no selected row needs.
"""

from __future__ import annotations

from dataclasses import replace

import torch
from torch import nn

from .generation import RolloutBatch


def select_rows(batch: RolloutBatch, rows: list[int]) -> RolloutBatch:
    """A sub-batch of whole responses (rows keep their group-major order), without the padding
    columns that none of its rows needs: a forward pass costs what its widest row costs."""
    index = torch.tensor(rows, dtype=torch.long)
    mask = batch.attention_mask[index]
    tp = batch.prompt_width
    prompt_cut = int((mask[:, :tp].sum(0) == 0).sum())  # leading columns that are padding in every row
    width = max(int(batch.response_mask[index].sum(-1).max()), 1)
    cols = slice(prompt_cut, tp + width)
    return replace(batch, prompt_index=batch.prompt_index[index], input_ids=batch.input_ids[index][:, cols],
                   attention_mask=mask[:, cols], prompt_width=tp - prompt_cut,
                   response_mask=batch.response_mask[index][:, :width],
                   logprobs=batch.logprobs[index][:, :width], truncated=batch.truncated[index],
                   response_ids=[batch.response_ids[i] for i in rows], texts=[batch.texts[i] for i in rows])


def length_chunks(batch: RolloutBatch, rows: list[int], size: int) -> list[list[int]]:
    """`rows` sorted by response length (ties by row) and cut into runs of at most `size` rows.

    A forward pass over a chunk of similar lengths pays for its own longest answer, not for the
    minibatch's: answers here run from 10 to 90 tokens. Deterministic, so the old log-probs can be
    computed on exactly the chunks the first update will use.
    """
    lengths = batch.response_mask.sum(-1)
    ordered = sorted(rows, key=lambda r: (int(lengths[r]), r))
    return [ordered[i:i + size] for i in range(0, len(ordered), size)]


def pad_columns(x: torch.Tensor, width: int) -> torch.Tensor:
    return nn.functional.pad(x, (0, width - x.shape[1]))


def by_minibatch(fn, batch: RolloutBatch, row_sets: list[list[int]]) -> torch.Tensor:
    """fn(sub-batch) -> [rows, width] for each set of rows, assembled into [N, Tr] (zero padded).

    Each sub-batch is trimmed to its own longest row (select_rows), so a pass over the rollout
    costs what its minibatches cost, not 128 rows padded to the longest answer.
    """
    out = torch.zeros(batch.size, batch.response_mask.shape[1])
    for rows in row_sets:
        out[rows] = pad_columns(fn(select_rows(batch, rows)).float().cpu(), out.shape[1])
    return out


def concat_batches(batches: list[RolloutBatch]) -> RolloutBatch:
    """Join rollouts sampled in several rounds (a refilling filter) into one batch."""
    if len(batches) == 1:
        return batches[0]
    tp = max(b.prompt_width for b in batches)
    tr = max(b.response_mask.shape[1] for b in batches)
    ids, att, rmask, logps = [], [], [], []
    offset = 0
    index = []
    for b in batches:
        pad_left = tp - b.prompt_width
        pad_right = tr - b.response_mask.shape[1]
        p_ids, r_ids = b.input_ids[:, :b.prompt_width], b.input_ids[:, b.prompt_width:]
        p_att, r_att = b.attention_mask[:, :b.prompt_width], b.attention_mask[:, b.prompt_width:]
        ids.append(torch.cat([nn.functional.pad(p_ids, (pad_left, 0)), nn.functional.pad(r_ids, (0, pad_right))], 1))
        att.append(torch.cat([nn.functional.pad(p_att, (pad_left, 0)), nn.functional.pad(r_att, (0, pad_right))], 1))
        rmask.append(nn.functional.pad(b.response_mask, (0, pad_right)))
        logps.append(nn.functional.pad(b.logprobs, (0, pad_right)))
        index.append(b.prompt_index + offset)
        offset += len(b.prompts)
    return RolloutBatch(
        prompts=[p for b in batches for p in b.prompts], group_size=batches[0].group_size,
        temperature=batches[0].temperature, prompt_index=torch.cat(index), input_ids=torch.cat(ids),
        attention_mask=torch.cat(att), prompt_width=tp, response_mask=torch.cat(rmask), logprobs=torch.cat(logps),
        truncated=torch.cat([b.truncated for b in batches]),
        response_ids=[r for b in batches for r in b.response_ids], texts=[t for b in batches for t in b.texts])
