"""The token-level tap: per-token arrays from inside OpenRLHF 0.11.2's Ray workers.

OpenRLHF logs scalars only, and its work happens in Ray worker processes (the PPO trainer actor
makes the experience; the policy actors train on it), so a patch applied in the driver never
reaches it. ``setup`` is a Ray ``worker_process_setup_hook``: every worker runs it at start-up,
before it imports OpenRLHF. It installs post-import hooks that wrap, when their module is first
imported (or at once if it already is):

=========================================================  ========================================
openrlhf.trainer.ppo_utils.experience_maker                records, per rollout, every group's
  RemoteExperienceMaker.compute_advantages_and_returns     rewards and, for the sampled groups,
                                                           each response's tokens, old/ref log-probs,
                                                           KL, values, advantages and returns
openrlhf.trainer.ppo_utils.experience_maker                remembers the reference log-probs it is
  compute_approx_kl                                        given (the experience drops them when the
                                                           KL sits in the reward)
openrlhf.trainer.ray.ppo_actor ActorPPOTrainer.ppo_train   counts rollouts in a policy worker
openrlhf.trainer.ray.ppo_actor                             records, per gradient micro-step, the
  ActorPPOTrainer.training_step                            sampled responses' arrays below
openrlhf.models.loss PolicyLoss.forward                    the log-probs at the update, the ratio
                                                           and the clip side, as OpenRLHF computes them
openrlhf.models.actor Actor.forward                        the per-token entropy (computed when
                                                           --actor.entropy_coef is set; the command
                                                           builder sets it to 0)
=========================================================  ========================================

Which groups are sampled is decided by a hash of the prompt text, so the trainer actor and every
policy worker (on any node) agree without talking to each other: a group is recorded when
``sha1(prompt) / 2**160 < UNIPO_TAP_FRACTION``. Records from the two sides are joined later by a
hash of the sample's token ids (prompt and response), which survives OpenRLHF's re-batching.

Each process appends JSON lines to its own shard, ``<UNIPO_TAP_DIR>/<role>-<host>-<pid>.jsonl``
(role ``rollout`` or ``policy-rank<R>``), flushing every line, so a killed run keeps what it wrote.
``unipo import openrlhf TB_DIR --tap TAP_DIR`` joins them (``convert``).

The tap refuses any OpenRLHF other than 0.11.2 (``check_version``), and checks the signature of every
function it wraps (``SIGNATURES``) before wrapping it, so an internal change fails loudly instead of
recording the wrong thing.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.abc
import importlib.util
import inspect
import json
import os
import socket
import sys
import threading
from pathlib import Path
from typing import Any, Callable

from unipo_build.trainers.openrlhf import TAP_FORMAT, VersionError, check_version

ENV_DIR = "UNIPO_TAP_DIR"
ENV_FRACTION = "UNIPO_TAP_FRACTION"
SHARD_FORMAT = TAP_FORMAT

# module -> {qualified name: expected parameter names}: what the wrappers rely on.
SIGNATURES: dict[str, dict[str, tuple[str, ...]]] = {
    "openrlhf.trainer.ppo_utils.experience_maker": {
        "RemoteExperienceMaker.compute_advantages_and_returns": ("self", "experiences"),
        "compute_approx_kl": ("log_probs", "log_probs_base", "log_probs_old", "kl_estimator", "unbiased_gradient"),
    },
    "openrlhf.trainer.ray.ppo_actor": {
        "ActorPPOTrainer.ppo_train": ("self", "kl_ctl"),
        "ActorPPOTrainer.training_step": ("self", "experience", "kl_ctl", "step", "loss_batch_info"),
    },
    "openrlhf.models.loss": {
        "PolicyLoss.forward": ("self", "log_probs", "old_log_probs", "advantages", "action_mask",
                               "rollout_log_probs", "dp_size", "batch_num_tokens", "global_batch_size"),
    },
    "openrlhf.models.actor": {
        "Actor.forward": ("self", "sequences", "action_mask", "attention_mask", "return_output", "allgather_logits",
                          "return_logprobs", "ring_attn_group", "packed_seq_lens", "return_entropy", "mm_inputs"),
    },
}


# ---------------------------------------------------------------------------------------------
# Shards
# ---------------------------------------------------------------------------------------------

class Tap:
    """One process's tap: where it writes and what it has seen."""

    def __init__(self, directory: str | Path, fraction: float):
        self.directory = Path(directory)
        self.fraction = float(fraction)
        self._files: dict[str, Any] = {}
        self._lock = threading.Lock()
        self.rollouts = 0  # compute_advantages_and_returns calls (trainer actor)
        self.ppo_calls = -1  # ppo_train calls (policy worker)
        self.updates = 0  # training_step calls (policy worker)
        self.ref_logp: dict[int, Any] = {}  # id(action_log_probs) -> (action_log_probs, reference log-probs)
        self.local = threading.local()  # what one training_step has captured so far, per thread

    def selected(self, prompt: str) -> bool:
        digest = hashlib.sha1(prompt.encode("utf-8")).digest()
        return int.from_bytes(digest, "big") / 2 ** 160 < self.fraction

    def write(self, role: str, record: dict) -> None:
        line = json.dumps(record, allow_nan=False, separators=(",", ":")) + "\n"
        with self._lock:
            handle = self._files.get(role)
            if handle is None:
                self.directory.mkdir(parents=True, exist_ok=True)
                path = self.directory / f"{role}-{socket.gethostname()}-{os.getpid()}.jsonl"
                handle = open(path, "a", encoding="utf-8")
                handle.write(json.dumps({"kind": "shard", "format": SHARD_FORMAT, "role": role,
                                         "host": socket.gethostname(), "pid": os.getpid()}) + "\n")
                self._files[role] = handle
            handle.write(line)
            handle.flush()


TAP: Tap | None = None


def sample_key(ids) -> str:
    """The join key of one sample: a hash of its real token ids (prompt and response), in order."""
    return hashlib.sha1(",".join(str(int(i)) for i in ids).encode()).hexdigest()[:20]


def _floats(tensor, mask) -> list[float] | None:
    if tensor is None:
        return None
    values = tensor.detach().float()[mask].cpu().tolist()
    return [v if v == v and abs(v) != float("inf") else None for v in values]


# ---------------------------------------------------------------------------------------------
# Wrappers
# ---------------------------------------------------------------------------------------------

def _rollout_wrapper(original: Callable) -> Callable:
    @functools.wraps(original)
    def compute_advantages_and_returns(self, experiences, *args, **kwargs):
        tap = TAP
        kls = [None if e.kl is None else e.kl.detach().clone() for e in experiences]
        refs = [tap.ref_logp.get(id(e.action_log_probs), (None, None))[1] if tap else None for e in experiences]
        result = original(self, experiences, *args, **kwargs)
        if tap is not None:
            try:
                _record_rollout(tap, self, result, kls, refs)
            finally:
                tap.ref_logp.clear()
                tap.rollouts += 1
        return result

    return compute_advantages_and_returns


def _record_rollout(tap: Tap, maker, experiences, kls, refs) -> None:
    args = maker.args
    n = int(args.rollout.n_samples_per_prompt)
    rollout = tap.rollouts
    tokenizer = getattr(maker, "tokenizer", None)
    groups: dict[int, dict] = {}
    for e, kl_entry, ref_captured in zip(experiences, kls, refs):
        ref = e.base_action_log_probs if e.base_action_log_probs is not None else ref_captured
        for j in range(len(e.sequences)):
            index = int(e.index[j]) if e.index is not None else None
            prompt = e.prompts[j] if e.prompts else ""
            label = e.labels[j] if e.labels else None
            group = index // n if index is not None else None
            mask = e.action_mask[j].bool()
            ids = e.sequences[j][-mask.shape[0]:][mask].tolist()
            length = int(e.response_length[j]) if e.response_length is not None else len(ids)
            truncated = bool(e.truncated[j]) if e.truncated is not None else None
            reward = float(e.rewards[j])
            score = float(e.scores[j]) if e.scores is not None else None
            entry = groups.setdefault(group, {"group": group, "prompt": prompt, "label": label, "samples": []})
            entry["samples"].append({"index": index, "reward": reward, "score": score, "length": length,
                                     "truncated": truncated})
            if not tap.selected(prompt):
                continue
            full = e.sequences[j][e.attention_mask[j].bool()].tolist()
            text = [tokenizer.decode([i]) for i in ids] if tokenizer is not None else [f"⟨{i}⟩" for i in ids]
            response = tokenizer.decode(ids) if tokenizer is not None else "".join(text)
            tap.write("rollout", {
                "kind": "sample", "rollout": rollout, "index": index, "group": group, "key": sample_key(full),
                "prompt": prompt, "label": label, "ids": ids, "text": text, "response": response,
                "reward": reward, "score": score, "length": length, "truncated": truncated,
                "old_logp": _floats(e.action_log_probs[j], mask),
                "ref_logp": _floats(None if ref is None else ref[j], mask),
                "kl": _floats(None if kl_entry is None else kl_entry[j], mask),
                "value": _floats(None if e.values is None else e.values[j], mask),
                "advantage": _floats(e.advantages[j], mask),
                "return": _floats(None if e.returns is None else e.returns[j], mask),
            })
    tap.write("rollout", {
        "kind": "rollout", "rollout": rollout, "group_size": n,
        "estimator": str(args.algo.advantage.estimator),
        "kl_coef": float(getattr(maker.kl_ctl, "value", 0.0)) if getattr(maker, "kl_ctl", None) else 0.0,
        "groups": [{**g, "detailed": tap.selected(g["prompt"])} for _, g in sorted(
            groups.items(), key=lambda kv: (kv[0] is None, kv[0] if kv[0] is not None else 0))],
    })


def _kl_wrapper(original: Callable) -> Callable:
    @functools.wraps(original)
    def compute_approx_kl(log_probs, log_probs_base, *args, **kwargs):
        if TAP is not None and log_probs_base is not None:
            TAP.ref_logp[id(log_probs)] = (log_probs, log_probs_base.detach())
        return original(log_probs, log_probs_base, *args, **kwargs)

    return compute_approx_kl


def _ppo_train_wrapper(original: Callable) -> Callable:
    @functools.wraps(original)
    def ppo_train(self, *args, **kwargs):
        if TAP is not None:
            TAP.ppo_calls += 1
        return original(self, *args, **kwargs)

    return ppo_train


def _rank() -> int:
    try:
        import torch.distributed as dist

        return dist.get_rank() if dist.is_available() and dist.is_initialized() else 0
    except Exception:  # noqa: BLE001 - a rank is a label here, never a reason to fail training
        return 0


def _training_step_wrapper(original: Callable) -> Callable:
    @functools.wraps(original)
    def training_step(self, experience, *args, **kwargs):
        tap = TAP
        rows = []
        if tap is not None and experience.prompts:
            rows = [j for j, p in enumerate(experience.prompts) if tap.selected(p)]
        if tap is None or not rows:
            return original(self, experience, *args, **kwargs)
        tap.local.capture = {}
        tap.local.entropy = None
        try:
            result = original(self, experience, *args, **kwargs)
            _record_update(tap, self, experience, rows)
        finally:
            tap.local.capture = None
            tap.local.entropy = None
            tap.updates += 1
        return result

    return training_step


def _record_update(tap: Tap, trainer, experience, rows: list[int]) -> None:
    cap = tap.local.capture or {}
    if "logp" not in cap:
        return
    entropy = tap.local.entropy
    width = experience.action_mask.shape[1]
    rank = _rank()
    for j in rows:
        mask = experience.action_mask[j].bool()
        full = experience.sequences[j][experience.attention_mask[j].bool()].tolist()
        side = cap["side"][j]
        tap.write(f"policy-rank{rank}", {
            "kind": "update", "rank": rank, "ppo_call": tap.ppo_calls, "update": tap.updates,
            "key": sample_key(full), "prompt": experience.prompts[j],
            "logp": _floats(cap["logp"][j], mask), "old_logp": _floats(cap["old_logp"][j], mask),
            "advantage": _floats(cap["advantage"][j], mask), "ratio": _floats(cap["ratio"][j], mask),
            "clip": [int(s) for s in side[mask].tolist()],
            "entropy": _floats(None if entropy is None else entropy[j, -width:], mask),
            "loss_type": cap["loss_type"],
        })


def _policy_loss_wrapper(original: Callable) -> Callable:
    @functools.wraps(original)
    def forward(self, log_probs, old_log_probs, advantages, action_mask=None, *args, **kwargs):
        result = original(self, log_probs, old_log_probs, advantages, action_mask, *args, **kwargs)
        tap = TAP
        if tap is not None and getattr(tap.local, "capture", None) is not None:
            import torch

            with torch.no_grad():
                logp, old, adv = log_probs.detach().float(), old_log_probs.detach().float(), advantages.detach().float()
                if self.policy_loss_type == "gspo":
                    m = action_mask.float()
                    ratio = (((logp - old) * m).sum(-1) / m.sum(-1).clamp(min=1)).exp().unsqueeze(-1) * m
                else:
                    ratio = (logp - old).clamp(-20.0, 20.0).exp()
                surr1 = ratio * adv
                surr2 = ratio.clamp(1 - self.clip_eps_low, 1 + self.clip_eps_high) * adv
                side = torch.where(surr2 < surr1, torch.sign(adv), torch.zeros_like(adv)).to(torch.int8)
            tap.local.capture.update(logp=logp, old_logp=old, advantage=adv, ratio=ratio, side=side,
                                     loss_type=self.policy_loss_type)
        return result

    return forward


def _actor_forward_wrapper(original: Callable) -> Callable:
    @functools.wraps(original)
    def forward(self, *args, **kwargs):
        result = original(self, *args, **kwargs)
        tap = TAP
        if tap is not None and getattr(tap.local, "capture", None) is not None and isinstance(result, tuple):
            entropy = getattr(result[1], "entropy", None)
            if entropy is not None:
                tap.local.entropy = entropy.detach().float()
        return result

    return forward


WRAPPERS: dict[str, dict[str, Callable[[Callable], Callable]]] = {
    "openrlhf.trainer.ppo_utils.experience_maker": {
        "RemoteExperienceMaker.compute_advantages_and_returns": _rollout_wrapper,
        "compute_approx_kl": _kl_wrapper,
    },
    "openrlhf.trainer.ray.ppo_actor": {
        "ActorPPOTrainer.ppo_train": _ppo_train_wrapper,
        "ActorPPOTrainer.training_step": _training_step_wrapper,
    },
    "openrlhf.models.loss": {"PolicyLoss.forward": _policy_loss_wrapper},
    "openrlhf.models.actor": {"Actor.forward": _actor_forward_wrapper},
}


# ---------------------------------------------------------------------------------------------
# Signatures and patching
# ---------------------------------------------------------------------------------------------

def _lookup(module, qualname: str):
    owner, name = module, qualname
    if "." in qualname:
        cls_name, name = qualname.split(".", 1)
        owner = getattr(module, cls_name)
    return owner, name, getattr(owner, name)


def signature_problems(module) -> list[str]:
    """Every wrapped function of ``module`` whose parameters are not what the tap was written for."""
    problems = []
    for qualname, expected in SIGNATURES.get(module.__name__, {}).items():
        try:
            _, _, func = _lookup(module, qualname)
        except AttributeError:
            problems.append(f"{module.__name__}.{qualname}: missing")
            continue
        func = getattr(func, "__unipo_original__", func)
        found = tuple(inspect.signature(func).parameters)
        if found != expected:
            problems.append(f"{module.__name__}.{qualname}: parameters {found}, the tap expects {expected}")
    return problems


def patch_module(module) -> None:
    """Wrap the tap's targets in ``module`` (idempotent); refuse a changed signature."""
    problems = signature_problems(module)
    if problems:
        raise VersionError("the UNIPO token tap does not match this OpenRLHF: " + "; ".join(problems))
    for qualname, make in WRAPPERS.get(module.__name__, {}).items():
        owner, name, func = _lookup(module, qualname)
        if getattr(func, "__unipo_original__", None) is not None:
            continue
        wrapped = make(func)
        wrapped.__unipo_original__ = func
        setattr(owner, name, wrapped)


class _PatchingLoader(importlib.abc.Loader):
    def __init__(self, loader):
        self.loader = loader

    def create_module(self, spec):
        return self.loader.create_module(spec)

    def exec_module(self, module):
        self.loader.exec_module(module)
        patch_module(module)


class _PostImportFinder(importlib.abc.MetaPathFinder):
    """Hands each target module to ``patch_module`` as soon as it has been executed."""

    def __init__(self):
        self._busy: set[str] = set()

    def find_spec(self, fullname, path=None, target=None):
        if fullname not in WRAPPERS or fullname in self._busy:
            return None
        self._busy.add(fullname)
        try:
            spec = importlib.util.find_spec(fullname)
        finally:
            self._busy.discard(fullname)
        if spec is None or spec.loader is None:
            return None
        spec.loader = _PatchingLoader(spec.loader)
        return spec


def install_hooks() -> None:
    """Patch the targets already imported and hook the rest (idempotent)."""
    if not any(isinstance(f, _PostImportFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, _PostImportFinder())
    for name in WRAPPERS:
        module = sys.modules.get(name)
        if module is not None:
            patch_module(module)


def setup() -> None:
    """The Ray ``worker_process_setup_hook``: start the tap when UNIPO_TAP_DIR is set, else do nothing."""
    global TAP
    directory = os.environ.get(ENV_DIR)
    if not directory:
        return
    check_version()
    fraction = float(os.environ.get(ENV_FRACTION, "0.25"))
    if not 0 < fraction <= 1:
        raise ValueError(f"{ENV_FRACTION}={fraction}: the fraction of groups recorded must be in (0, 1]")
    if TAP is None:
        TAP = Tap(directory, fraction)
    install_hooks()
