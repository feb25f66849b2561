"""A token tap for TRL's GRPOTrainer: what each sampled token did in the loss, as TRL computed it.

Written against TRL 1.16 (``trl/trainer/grpo_trainer.py``). Use it in a training script::

    from unipo_build.trainers.trl.tap import TrlTokenTap

    trainer = GRPOTrainer(model=..., reward_funcs=..., args=GRPOConfig(..., logging_steps=1), ...)
    TrlTokenTap("tap", every=10, groups=4).install(trainer)
    trainer.train()
    trainer.save_state()          # OUTPUT_DIR/trainer_state.json: the metrics `unipo import trl` reads

then ``unipo import trl OUTPUT_DIR --tap tap --out RUN``. trl is imported only by ``install``: the site
and the importer never need it.

``install`` wraps two methods of that trainer instance (nothing of TRL is copied or changed):

- ``_generate_and_score_completions``: after TRL has generated, scored and computed the advantages of
  a generation batch (one rollout), the tap gives every row a position tag (``unipo_tap_row``, a 1-D
  tensor that TRL's shuffle and split carry along with the batch) and, on every ``every``-th rollout,
  writes a ``generation`` record: each completion's group, reward (TRL's weighted sum of its reward
  functions, and each function's value), length and truncation, and for the first ``groups`` groups
  the token ids, token text, advantage and the old, reference and sampling log-probs TRL holds.
- ``_compute_loss``: on the micro-batches of a tapped rollout the tap reads the local variables of
  TRL's own ``GRPOTrainer._compute_loss`` when it returns (a profile hook set for that one call):
  ``per_token_logps`` (the training log-probs), ``old_per_token_logps`` (TRL passes ``None`` and uses
  the detached training log-probs when the batch is on-policy; the record says which), ``coef_1``
  (TRL's importance ratio), ``per_token_loss`` (TRL's per-token loss, KL term included),
  ``per_token_kl``, ``entropies``, the loss mask and, with vLLM's importance-sampling correction,
  the weight TRL multiplied the policy loss by (``inputs["importance_sampling_ratio"]``, ``is_weight``).
  An ``update`` record keeps them for the tapped rows, and for every row of the micro-batch its weight in TRL's loss (from ``loss_type``, as
  ``_compute_loss`` aggregates, over the number of data-parallel processes, which average their
  gradients) and its share of the loss, so the shares of a step add up to TRL's loss (checked:
  ``loss`` and ``loss_from_rows`` in the record, the rank's own loss). For loss_type ``cispo``, whose
  per-token loss TRL writes as the paper does, -sg(w) A log pi (the value is log pi times the registry
  kind's, the gradient the same), each row's share is also recorded in the kind's value, -sg(w) A + beta
  KL, from TRL's ``clamped_ratios`` and ``advantages`` (``row_value_loss``).

Files in the tap directory: ``manifest.json`` (the format, the TRL / transformers / torch versions,
the trainer's GRPOConfig and the tap's options) and ``shard-rank<R>.jsonl`` per process, whose first
line is a ``shard`` record with the same version stamp. One JSON object per line, flushed per record.

Every file and record carries the run's identity: ``run`` (a fingerprint drawn when the tap is installed,
the same on every process of one run: rank 0 draws it and the others receive it), ``seed`` and
``loss_type``. ``unipo import trl`` refuses a shard or a record of another run, and compares the tap's
losses and rewards with what TRL logged in trainer_state.json step by step (a tap of another run is
refused even when its identity was rewritten).
"""

from __future__ import annotations

import inspect
import json
import math
import sys
from pathlib import Path
from typing import Any

from unipo_build.core.token_text import token_pieces

#: 2: every file and record carries the run's identity (run fingerprint, seed, loss_type).
TAP_FORMAT = "unipo-trl-tap/2"
#: The TRL release line the tap reads the internals of (``_compute_loss``'s local names).
TRL_SERIES = "1.16"
ROW_KEY = "unipo_tap_row"
MANIFEST = "manifest.json"
#: TRL 1.16's loss types (TRL's own names, two of them, sapo and cispo, also clip kinds' names) by how
#: ``_compute_loss`` divides a micro-batch's summed token losses: "row_mean" each row's token mean over the rows,
#: "micro_tokens" the micro-batch's token count, "constant" rows x max_completion_length, "generation_tokens" the
#: generation batch's token count (num_items_in_batch), "rows" each row's token sum over the rows. The tap weighs
#: rows by it; the importer reads which normalisers divide by the generation batch and which still count a
#: masked row (trainers/trl/config.py).
NORMALISERS = {"row_mean": ("grpo", "sapo"), "micro_tokens": ("bnpo",), "constant": ("dr_grpo",),
               "generation_tokens": ("cispo", "dapo", "vespo"), "rows": ("luspo",)}
#: Each loss type's normaliser (:data:`NORMALISERS`).
NORMALISER = {loss_type: name for name, types in NORMALISERS.items() for loss_type in types}


class TapError(RuntimeError):
    """The tap cannot be installed on this trainer."""


def _json_safe(value: Any) -> Any:
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, (str, int, bool)) or value is None:
        return value
    if isinstance(value, dict):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    return str(value)


def _floats(tensor) -> list[float | None]:
    return [None if not math.isfinite(v) else v for v in tensor.detach().double().cpu().tolist()]


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list) and value and all(isinstance(m, dict) for m in value):
        # Conversational: the messages' contents, one per line.
        return "\n".join(str(m.get("content", "")) for m in value)
    return json.dumps(_json_safe(value))


class TrlTokenTap:
    """Records sampled groups of sampled rollouts of a GRPOTrainer run into ``tap_dir``.

    ``every``: tap rollouts 0, every, 2 x every, ...; ``groups``: how many groups of a tapped
    rollout get token detail (the first ones of the generation batch; None: all).
    """

    def __init__(self, tap_dir: str | Path, *, every: int = 1, groups: int | None = 4):
        if every < 1:
            raise ValueError("every must be >= 1")
        if groups is not None and groups < 1:
            raise ValueError("groups must be >= 1 or None")
        self.tap_dir = Path(tap_dir)
        self.every = every
        self.groups = groups
        self.rollout = 0
        self._tapped: dict[int, set[int]] = {}  # tapped rollout -> rows with token detail
        self._handle = None
        self.trainer = None

    # -- installation -------------------------------------------------------------------------

    def install(self, trainer):
        """Wrap ``trainer``'s generation and loss, write the manifest; returns the trainer."""
        import torch
        import transformers
        import trl
        from transformers import TrainerCallback
        from trl import GRPOTrainer

        if not trl.__version__.startswith(TRL_SERIES + "."):
            raise TapError(f"the UNIPO TRL tap reads TRL {TRL_SERIES}.x internals; this is trl {trl.__version__}: "
                           f"pip install 'trl=={TRL_SERIES}.*'")
        if not isinstance(trainer, GRPOTrainer):
            raise TapError(f"install the tap on a trl.GRPOTrainer, not {type(trainer).__name__}")
        self.trainer = trainer
        self._loss_code = inspect.unwrap(GRPOTrainer._compute_loss).__code__
        args = trainer.args
        self.tap_dir.mkdir(parents=True, exist_ok=True)
        self.run = self._fingerprint(trainer)
        stamp = {"format": TAP_FORMAT, "trl_version": trl.__version__, "run": self.run, "seed": args.seed,
                 "loss_type": trainer.loss_type}
        rank = trainer.accelerator.process_index
        if rank == 0:
            manifest = {
                **stamp, "transformers_version": transformers.__version__, "torch_version": torch.__version__,
                "config": _json_safe(args.to_dict()),
                "trainer": {"num_generations": trainer.num_generations, "num_iterations": trainer.num_iterations,
                            "loss_type": trainer.loss_type, "beta": trainer.beta,
                            "epsilon_low": trainer.epsilon_low, "epsilon_high": trainer.epsilon_high,
                            "scale_rewards": trainer.scale_rewards,
                            "importance_sampling_level": trainer.importance_sampling_level,
                            "mask_truncated_completions": trainer.mask_truncated_completions,
                            "max_completion_length": trainer.max_completion_length,
                            "steps_per_generation": args.steps_per_generation,
                            "gradient_accumulation_steps": args.gradient_accumulation_steps,
                            "per_device_train_batch_size": args.per_device_train_batch_size,
                            "num_processes": trainer.accelerator.num_processes,
                            "reward_func_names": list(trainer.reward_func_names),
                            "reward_weights": _floats(trainer.reward_weights),
                            "model": getattr(trainer.model.config, "_name_or_path", None) or None,
                            "model_type": getattr(trainer.model.config, "model_type", None)},
                "options": {"every": self.every, "groups": self.groups},
            }
            (self.tap_dir / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
        self._handle = open(self.tap_dir / f"shard-rank{rank}.jsonl", "a", encoding="utf-8")
        self._write({"kind": "shard", **stamp, "rank": rank})

        generate, compute_loss = trainer._generate_and_score_completions, trainer._compute_loss
        trainer._generate_and_score_completions = lambda inputs: self._after_generation(generate(inputs))
        trainer._compute_loss = lambda model, inputs: self._loss(compute_loss, model, inputs)
        tap = self

        class _Close(TrainerCallback):
            def on_train_end(self, args, state, control, **kwargs):
                tap.close()

        trainer.add_callback(_Close())
        return trainer

    @staticmethod
    def _fingerprint(trainer) -> str:
        """A fresh identity for this run, drawn on rank 0 and broadcast (one run, one fingerprint on every process).
        Drawn from the operating system, not from torch or random: the tap must not move the run's random state."""
        import os

        token = os.urandom(8).hex()
        accelerator = trainer.accelerator
        if accelerator.num_processes > 1:
            from accelerate.utils import broadcast_object_list

            box = [token]
            broadcast_object_list(box, from_process=0)
            token = box[0]
        return token

    def close(self) -> None:
        if self._handle is not None:
            self._handle.close()
            self._handle = None

    def _write(self, record: dict) -> None:
        self._handle.write(json.dumps(record, allow_nan=False) + "\n")
        self._handle.flush()

    # -- generation ---------------------------------------------------------------------------

    def _after_generation(self, output: dict) -> dict:
        import torch

        t = self.trainer
        if not t.model.training:
            return output
        rollout = self.rollout
        self.rollout += 1
        ids = output["completion_ids"]
        local = ids.shape[0]
        offset = t.accelerator.process_index * local
        output[ROW_KEY] = torch.arange(offset, offset + local, device=ids.device)
        if rollout % self.every:
            self._tapped = {}
            return output
        G = t.num_generations
        total = local * t.accelerator.num_processes
        # The rewards TRL just logged (gathered over processes): the last `total` of each function.
        per_func = {name: list(t._logs["rewards"][name])[-total:] for name in t.reward_func_names}
        weights = t.reward_weights.tolist()
        prompts = list(t._logs["prompt"])[-total:]
        completions = list(t._logs["completion"])[-total:]
        mask = output["completion_mask"]
        width = ids.shape[1]
        eos = set(t.eos_token_ids)
        first_groups = None if self.groups is None else self.groups
        rows, samples, tapped = [], [], set()
        for i in range(local):
            row = offset + i
            group, index = divmod(row, G)
            n_mask = int(mask[i].sum().item())
            # A truncated completion masked out (mask_truncated_completions) is max_completion_length long.
            length = n_mask if n_mask else min(width, t.max_completion_length)
            row_ids = ids[i, :length].tolist()
            truncated = bool(length and row_ids[-1] not in eos)
            values = {name: per_func[name][row] for name in per_func}
            finite = [w * v for w, v in zip(weights, values.values()) if v is not None and math.isfinite(v)]
            reward = float(sum(finite)) if finite else None
            rows.append({"row": row, "group": group, "index": index, "reward": reward,
                         "rewards": _json_safe(values), "length": length, "loss_tokens": n_mask,
                         "truncated": truncated})
            if first_groups is not None and group >= first_groups:
                continue
            tapped.add(row)
            sample = {"row": row, "group": group, "index": index, "prompt": _text(prompts[row]),
                      "completion": _text(completions[row]), "ids": row_ids,
                      "text": token_pieces(t.processing_class, row_ids),
                      "advantage": float(output["advantages"][i].item()), "mask": mask[i, :length].tolist()}
            for key, name in (("old_per_token_logps", "old_logp"), ("ref_per_token_logps", "ref_logp"),
                              ("sampling_per_token_logps", "sampling_logp")):
                if output.get(key) is not None:
                    sample[name] = _floats(output[key][i, :length])
            samples.append(sample)
        self._tapped = {rollout: tapped}  # the loss only ever trains on the latest generation batch
        self._write({"kind": "generation", "run": self.run, "rollout": rollout, "global_step": t.state.global_step,
                     "num_generations": G, "rows": rows, "samples": samples})
        return output

    # -- loss ---------------------------------------------------------------------------------

    def _loss(self, compute_loss, model, inputs):
        rollout = self.rollout - 1
        if not model.training or ROW_KEY not in inputs or rollout not in self._tapped:
            return compute_loss(model, inputs)
        captured: dict = {}
        code = self._loss_code

        def profile(frame, event, arg):
            if event == "return" and frame.f_code is code:
                captured.update(frame.f_locals)

        previous = sys.getprofile()
        sys.setprofile(profile)
        try:
            loss = compute_loss(model, inputs)
        finally:
            sys.setprofile(previous)
        self._record_update(rollout, inputs, captured, loss)
        return loss

    def _row_weights(self, mask, inputs):
        """Each row's weight in the micro-batch's loss, as ``_compute_loss`` aggregates for its loss_type."""
        t = self.trainer
        rows = mask.shape[0]
        lengths = mask.sum(-1)
        gas = t.current_gradient_accumulation_steps
        normaliser = NORMALISER.get(t.loss_type)  # as TRL's _compute_loss normalises its loss_type
        if normaliser == "row_mean":
            return 1.0 / (lengths.clamp(min=1.0) * rows * gas)
        if normaliser == "micro_tokens":
            return (1.0 / (mask.sum().clamp(min=1.0) * gas)).expand(rows)
        if normaliser == "constant":
            return (mask.new_tensor(1.0 / (rows * t.max_completion_length * gas))).expand(rows)
        if normaliser == "generation_tokens":
            normalizer = inputs["num_items_in_batch"].clamp(min=1.0) / t.accelerator.num_processes
            normalizer = normalizer * gas / t.args.steps_per_generation
            return (1.0 / normalizer).expand(rows)
        if normaliser == "rows":
            return mask.new_tensor(1.0 / (rows * gas)).expand(rows)
        return None

    def _record_update(self, rollout: int, inputs: dict, v: dict, loss) -> None:
        import torch

        t = self.trainer
        mask = v["mask"].to(torch.float64)
        weights = self._row_weights(mask, inputs)
        on_policy_old = inputs.get("old_per_token_logps") is None
        width = mask.shape[1]

        def per_token(name):
            # Sequence-level importance sampling keeps (B, 1) tensors, broadcast over the tokens by TRL.
            tensor = v.get(name)
            if tensor is None:
                return None
            return tensor.expand(mask.shape[0], width) if tensor.shape[-1] == 1 else tensor

        per_token_loss = per_token("per_token_loss").to(torch.float64)
        # Data-parallel ranks average their gradients: a row's weight in the step's objective is its weight in
        # this rank's loss over the number of processes (loss_from_rows checks the rank's own loss).
        processes = t.accelerator.num_processes
        row_loss = None
        if weights is not None:
            weights = weights.to(torch.float64) / processes
            row_loss = (per_token_loss * mask).sum(-1) * weights

        # CISPO: TRL's loss is the paper's -sg(w) A log pi (its value is log pi times the registry kind's w A, its
        # gradient the same). Each row's share in the kind's value, -sg(w) A + beta KL, from TRL's own tensors, so
        # that a group without token detail still joins the kind's step objective (row_value_loss).
        row_value_loss = None
        # kind name: TRL's loss_type cispo, whose loss is the paper's form (above)
        if t.loss_type == "cispo" and weights is not None and v.get("clamped_ratios") is not None:
            factor = self._policy_factor(v, inputs)
            policy = (v["clamped_ratios"] * v["advantages"]).to(torch.float64) * factor
            value_loss = per_token_loss + policy * (v["per_token_logps"].to(torch.float64) - 1.0)
            row_value_loss = (value_loss * mask).sum(-1) * weights

        ratio, kl, entropy = per_token("coef_1"), per_token("per_token_kl"), per_token("entropies")
        # vLLM's importance-sampling weight, as TRL multiplied the policy loss by it (per token, or per completion)
        is_weight = inputs.get("importance_sampling_ratio") if t.use_vllm and t.vllm_importance_sampling_correction \
            else None
        if is_weight is not None and is_weight.shape[-1] == 1:
            is_weight = is_weight.expand(mask.shape[0], width)
        rows = [int(r) for r in inputs[ROW_KEY].tolist()]
        samples = []
        for i, row in enumerate(rows):
            if row not in self._tapped[rollout]:
                continue
            sample = {"row": row, "logp": _floats(v["per_token_logps"][i]), "ratio": _floats(ratio[i]),
                      "loss": _floats(per_token_loss[i]), "mask": [int(m) for m in mask[i].tolist()],
                      "old_logp": _floats(v["old_per_token_logps"][i])}
            if kl is not None:
                sample["kl"] = _floats(kl[i])
            if entropy is not None:
                sample["entropy"] = _floats(entropy[i])
            if is_weight is not None:
                sample["is_weight"] = _floats(is_weight[i])
            samples.append(sample)
        loss_value = float(loss.detach().item())
        self._write({
            "kind": "update", "run": self.run, "rollout": rollout, "step": t.state.global_step + 1, "micro_step": t._step,
            "loss": loss_value,
            "num_processes": processes,
            "loss_from_rows": None if row_loss is None else float(row_loss.sum().item()) * processes,
            "old_logp_source": "logp (on-policy: TRL uses the detached training log-probs)" if on_policy_old
            else "trl",
            "rows": rows, "loss_tokens": [int(x) for x in mask.sum(-1).tolist()],
            "row_weight": None if weights is None else _floats(weights),
            "row_loss": None if row_loss is None else _floats(row_loss),
            **({"row_value_loss": _floats(row_value_loss)} if row_value_loss is not None else {}),
            "samples": samples})

    def _policy_factor(self, v: dict, inputs: dict):
        """What ``_compute_loss`` multiplied the policy term by before adding the KL: its off-policy mask, its
        entropy mask and vLLM's importance weight, where each is on (1 where none is)."""
        import torch

        t = self.trainer
        factor = torch.ones_like(v["per_token_logps"], dtype=torch.float64)
        for name in ("off_policy_mask", "entropy_mask"):
            if v.get(name) is not None:
                factor = factor * v[name].to(torch.float64)
        if t.use_vllm and t.vllm_importance_sampling_correction and inputs.get("importance_sampling_ratio") is not None:
            factor = factor * inputs["importance_sampling_ratio"].to(torch.float64)
        return factor
