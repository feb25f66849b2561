"""Where a skipped update's non-finite gradient came from, written to the run's own log (stderr).

The trainer skips an optimizer step whose gradient norm is not finite (training/rl.py). On the
2026-11-27 GPU lease such steps came in pairs, both updates of one rollout, so the cause sits in the
rollout's batch. This re-runs the update's chunks one at a time (the step is skipped anyway, so the
gradients are free to overwrite) and reports, per chunk: its rows and width, how many of its rows
are left-padded (their first positions attend to nothing), whether its log-probs, token objectives,
share of J and gradients are finite, and the first parameters whose gradient is not; with the
device's free memory, since the lease's runs shared a full card. `unipo suite` keeps each run's log
(work/suite/logs/<run>.log), and benchmarks/gpu_set.sh sends those logs back.
"""

from __future__ import annotations

import json
import sys

import torch

from .batches import select_rows


def report(policy, batch, chunks: list[list[int]], chunk_part, *, step: int, rollout: int, out=None) -> dict:
    """`chunk_part(chunk, start)` -> (share of J, logp, entropy, token terms): the update's own forward
    pass for one chunk. Prints one line ``non-finite gradient: {json}`` and returns the record."""
    params = list(policy.named_parameters())
    found, start = [], 0
    try:
        for chunk in chunks:
            policy.zero_grad(set_to_none=True)
            part, logp, _, terms = chunk_part(chunk, start)
            start += len(chunk)
            (-part).backward()
            bad = [name for name, p in params if p.grad is not None and not bool(torch.isfinite(p.grad).all())]
            mask = select_rows(batch, chunk).attention_mask
            found.append({"rows": len(chunk), "width": int(mask.shape[1]), "left_padded_rows": int((mask[:, 0] == 0).sum()),
                          "logp_finite": bool(torch.isfinite(logp.detach()).all()),
                          "objective_finite": bool(torch.isfinite(terms.objective.detach()).all()),
                          "part_finite": bool(torch.isfinite(part.detach())), "grad_finite": not bad,
                          "first_bad_params": bad[:4]})
    except torch.OutOfMemoryError as err:  # a full card is one of the suspects: say so, do not die of it
        found.append({"error": f"out of memory while re-running chunk {len(found)}: {str(err).splitlines()[0]}"})
    finally:
        policy.zero_grad(set_to_none=True)
    record = {"step": step, "rollout": rollout, "chunks": found}
    device = next(policy.parameters()).device
    if device.type == "cuda":
        free, total = torch.cuda.mem_get_info(device)
        record.update(device_free_gb=round(free / 2**30, 2), device_total_gb=round(total / 2**30, 2))
    print("non-finite gradient: " + json.dumps(record), file=out or sys.stderr, flush=True)
    return record
