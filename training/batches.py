"""Sub-batches of a rollout: whole responses selected, trimmed to what they need, and joined.

A rollout is 128 rows padded to the longest prompt and the longest answer. Every forward pass the
trainer makes works on a subset of rows (a minibatch), and pays for the widest row it holds, so
these helpers cut the padding columns that no selected row needs. TrainBatch is what each update of
a rollout reads (training/rl.py's Trainer._update).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import torch
from torch import nn

from .generation import RolloutBatch


@dataclass
class TrainBatch:
    """One rollout's kept groups, scored and prepared: what each of its updates reads.

    Tensors are [N, Tr] over the batch's rows (N responses, Tr the longest answer) unless noted;
    None where the spec needs none (no reference model, no critic, no KL in the reward).
    """

    batch: RolloutBatch
    answers: list[str]  # one per prompt group
    shaped: torch.Tensor  # [N] rewards after shaping
    comps: dict[str, torch.Tensor]  # [N] reward components ("correct", "format", "shaping")
    mask: torch.Tensor
    old_logp: torch.Tensor  # filled by the first update when it computes them itself (fill_old)
    ref_logp: torch.Tensor | None
    values: torch.Tensor | None
    advantages: torch.Tensor
    returns: torch.Tensor | None
    rollout_kl: torch.Tensor | None
    metrics: dict  # the rollout's metrics, logged with each of its updates
    filtered: list  # groups the sampling filter dropped (logged with the rollout's first update)


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


def length_chunks(batch: RolloutBatch, rows: list[int], size: int, max_tokens: int | None = None) -> list[list[int]]:
    """`rows` sorted by response length (ties by row) and cut into runs of at most `size` rows.

    A forward pass over a chunk of similar lengths pays for its own longest answer, not for the
    minibatch's: answers here run from 10 to 90 tokens. Deterministic, so the old log-probs can be
    computed on exactly the chunks the first update will use.

    With `max_tokens`, a chunk also ends before its rows x (prompt width + its longest answer) would
    pass it (a chunk holds one row at least): a pass's memory is then bounded by tokens, not rows,
    and short answers share a pass (fewer, larger passes) while long ones take smaller ones.
    """
    lengths = batch.response_mask.sum(-1)
    ordered = sorted(rows, key=lambda r: (int(lengths[r]), r))
    if max_tokens is None:
        return [ordered[i:i + size] for i in range(0, len(ordered), size)]
    chunks: list[list[int]] = []
    current: list[int] = []
    for r in ordered:  # ascending length: the row being added is the chunk's widest
        width = batch.prompt_width + max(int(lengths[r]), 1)
        if current and (len(current) >= size or (len(current) + 1) * width > max_tokens):
            chunks.append(current)
            current = []
        current.append(r)
    if current:
        chunks.append(current)
    return chunks


def pad_columns(x: torch.Tensor, width: int) -> torch.Tensor:
    return nn.functional.pad(x, (0, width - x.shape[1]))


def by_minibatch(fn, batch: RolloutBatch, row_sets: list[list[int]]) -> torch.Tensor:
    """fn(sub-batch) -> [rows, width] for each set of rows, assembled into [N, Tr] (zero padded).

    Each sub-batch is trimmed to its own longest row (select_rows), so a pass over the rollout
    costs what its minibatches cost, not 128 rows padded to the longest answer. The parts stay on
    the model's device until the pass ends and come back in one copy (on a GPU a copy per part
    would stall the host on every part).
    """
    return rows_to_host(batch, row_sets, [[fn(select_rows(batch, rows)) for rows in row_sets]])[0]


def rows_to_host(batch: RolloutBatch, row_sets: list[list[int]], passes: list[list[torch.Tensor]]) -> list[torch.Tensor]:
    """For each pass, its parts (one [len(rows), width] per set of rows, on any device) written into
    a zero [N, Tr] float32 tensor on the host at their rows; every pass comes back in one copy."""
    width = batch.response_mask.shape[1]
    joined = [torch.cat([pad_columns(part.detach().float(), width) for part in parts]) for parts in passes]
    order = torch.tensor([r for rows in row_sets for r in rows], dtype=torch.long)
    out = []
    for host in to_host(joined):
        full = torch.zeros(batch.size, width)
        full[order] = host
        out.append(full)
    return out


def _segments(tensors: list[torch.Tensor]) -> tuple[torch.Tensor, list[tuple[int, int]]]:
    """The tensors' bytes in one flat uint8 tensor, each segment starting at a multiple of 8 bytes
    (so that a segment can be viewed back as any dtype); returns (bytes, [(start, length)])."""
    flat, spans, at = [], [], 0
    for t in tensors:
        b = t.detach().contiguous().reshape(-1).view(torch.uint8)
        pad = -b.numel() % 8
        flat.append(nn.functional.pad(b, (0, pad)) if pad else b)
        spans.append((at, b.numel()))
        at += b.numel() + pad
    return torch.cat(flat) if flat else torch.zeros(0, dtype=torch.uint8), spans


def _unpack(data: torch.Tensor, spans, like: list[torch.Tensor]) -> list[torch.Tensor]:
    return [data[a:a + n].view(t.dtype).view(t.shape) for (a, n), t in zip(spans, like)]


def to_host(tensors: list[torch.Tensor]) -> list[torch.Tensor]:
    """Tensors of any dtypes and shapes on one device, copied to the host in a single transfer (the
    bytes packed, copied once, viewed back): one wait for the device instead of one per tensor."""
    data, spans = _segments(tensors)
    return _unpack(data.cpu(), spans, tensors)


def to_device(tensors: list[torch.Tensor], device: torch.device) -> list[torch.Tensor]:
    """Host tensors of any dtypes uploaded to `device` in a single copy (the mirror of to_host)."""
    data, spans = _segments(tensors)
    return _unpack(data.to(device), spans, tensors)


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
