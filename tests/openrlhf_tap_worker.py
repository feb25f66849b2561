"""What a Ray worker runs in the token-tap test: OpenRLHF 0.11.2's own experience and policy code on CPU.

A GPU run goes ppo_trainer -> RemoteExperienceMaker.make_experience_batch -> compute_advantages_and_returns,
then PolicyModelActor.fit -> ActorPPOTrainer.ppo_train -> training_step -> Actor.forward and PolicyLoss.
The GPU-only shell around them (vLLM sampling, DeepSpeed engines, CUDA calls in ppo_train) cannot run here,
so this module does its work by hand: it samples groups from a small local checkpoint with transformers,
scores them with the project's reward_func, computes old and reference log-probs with OpenRLHF's Actor, and
calls OpenRLHF's real compute_approx_kl, compute_advantages_and_returns and training_step (with a minimal
strategy: backward, an SGD step, no distributed state). The tap, loaded by the worker_process_setup_hook
before any of this is imported, records what those functions see.
"""

from __future__ import annotations

import os
from types import SimpleNamespace


def _args(n: int, estimator: str, kl_use_loss: bool, kl_coef: float):
    ns = SimpleNamespace
    return ns(
        rollout=ns(n_samples_per_prompt=n, max_new_tokens=12),
        data=ns(max_len=128),
        algo=ns(advantage=ns(estimator=estimator, gamma=1.0, lambd=1.0, no_std_norm=False),
                kl=ns(use_loss=kl_use_loss, init_coef=kl_coef, estimator="k3", unbiased_gradient=False)),
        reward=ns(clip_range=(-10, 10), overlong_buffer_len=None, stop_properly_penalty_coef=None),
        actor=ns(entropy_coef=0.0, aux_loss_coef=0.0),
        train=ns(dynamic_batch_enable=False),
        ds=ns(ring_attn_size=1, tensor_parallel_size=1),
    )


class _Strategy:
    """What training_step asks of DeepSpeedStrategy, on one CPU process."""

    ring_attn_group = None

    def __init__(self, args):
        self.args = args

    def backward(self, loss, model, optimizer):
        loss.backward()

    def optimizer_step(self, optimizer, model, scheduler, name="model"):
        optimizer.step()
        optimizer.zero_grad()

    def get_grad_norm(self, model):
        return 0.0


def run(model_dir: str, prompts: list[str], labels: list[str], n: int = 4, updates: int = 2) -> dict:
    """Sample, score, make experience and train with OpenRLHF's functions; return what the worker saw."""
    import sys

    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    # Which tap targets were already patched by the setup hook's post-import hooks when we import them.
    from openrlhf.models import Actor, PolicyLoss
    from openrlhf.trainer.ppo_utils import experience_maker as em
    from openrlhf.trainer.ppo_utils.experience import Experience, make_experience_batch, split_experience_batch
    from openrlhf.trainer.ppo_utils.kl_controller import FixedKLController
    from openrlhf.trainer.ray.ppo_actor import ActorPPOTrainer

    from training.reward import reward_func

    torch.manual_seed(0)
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForCausalLM.from_pretrained(model_dir, torch_dtype=torch.float32)
    actor = Actor(model)
    ref = Actor(AutoModelForCausalLM.from_pretrained(model_dir, torch_dtype=torch.float32))
    for a in (actor, ref):  # Actor's own loading path sets these; the model-instance path does not
        a.packing_samples = False
    with torch.no_grad():  # the reference differs from the policy, so KL and ref log-probs are not zero
        for p in ref.model.parameters():
            p.add_(0.01 * torch.randn_like(p))
    args = _args(n, "group_norm", kl_use_loss=True, kl_coef=0.04)

    # Sample G responses per prompt (vLLM's job on a GPU): left-padded prompts, right-padded responses.
    samples = []
    for prompt, label in zip(prompts, labels):
        enc = tokenizer([prompt] * n, return_tensors="pt")
        out = model.generate(**enc, do_sample=True, max_new_tokens=args.rollout.max_new_tokens,
                             pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id)
        width = enc["input_ids"].shape[1]
        for row in out:
            response = row[width:].tolist()
            if tokenizer.eos_token_id in response:
                response = response[: response.index(tokenizer.eos_token_id) + 1]
            samples.append((prompt, label, enc["input_ids"][0].tolist(), response))
    a_len = max(len(r) for *_, r in samples)
    p_len = max(len(p) for _, _, p, _ in samples)
    seqs, attn, amask = [], [], []
    for _, _, p, r in samples:
        pad_p, pad_r = p_len - len(p), a_len - len(r)
        seqs.append([tokenizer.pad_token_id] * pad_p + p + r + [tokenizer.pad_token_id] * pad_r)
        attn.append([0] * pad_p + [1] * (len(p) + len(r)) + [0] * pad_r)
        amask.append([1] * len(r) + [0] * pad_r)
    sequences = torch.tensor(seqs)
    attention_mask = torch.tensor(attn)
    action_mask = torch.tensor(amask, dtype=torch.bool)
    queries = [tokenizer.decode(s[a.bool()]) for s, a in zip(sequences, attention_mask)]
    scored = reward_func(queries, [s[0] for s in samples], [s[1] for s in samples])

    with torch.no_grad():
        old = actor(sequences, action_mask, attention_mask=attention_mask)
        base = ref(sequences, action_mask, attention_mask=attention_mask)
    # Two micro-batches, as make_experience_batch hands them to compute_advantages_and_returns.
    experiences = []
    half = len(samples) // 2
    for lo, hi in ((0, half), (half, len(samples))):
        e = Experience(sequences=sequences[lo:hi], attention_mask=attention_mask[lo:hi],
                       action_mask=action_mask[lo:hi], action_log_probs=old[lo:hi],
                       base_action_log_probs=base[lo:hi], rewards=scored["rewards"][lo:hi].clone(),
                       scores=scored["scores"][lo:hi].clone(),
                       response_length=action_mask[lo:hi].sum(-1).float(),
                       truncated=torch.zeros(hi - lo, dtype=torch.bool),
                       index=list(range(lo, hi)), prompts=[s[0] for s in samples[lo:hi]],
                       labels=[s[1] for s in samples[lo:hi]], info={})
        # make_experience computes the KL this way (kl_estimator from the args) before advantages.
        e.kl = em.compute_approx_kl(e.action_log_probs, e.base_action_log_probs, kl_estimator="k3")
        experiences.append(e)

    maker = object.__new__(em.RemoteExperienceMaker)
    maker.strategy = SimpleNamespace(args=args)
    maker.args = args
    maker.advantage_estimator = "group_norm"
    maker.tokenizer = tokenizer
    maker.kl_ctl = FixedKLController(0.0)  # the KL sits in the loss (use_loss): nothing in the reward
    experiences = maker.compute_advantages_and_returns(experiences)

    # The replay buffer splits the rollout into single samples and re-batches them for training.
    items = [item for e in experiences for item in split_experience_batch(e)]
    batch = make_experience_batch(items)
    trainer = object.__new__(ActorPPOTrainer)
    trainer.strategy = _Strategy(args)
    trainer.args = args
    trainer.actor = actor
    trainer.actor_loss_fn = PolicyLoss(clip_eps_low=0.2, clip_eps_high=0.28, token_level_loss=False)
    trainer.actor_optim = torch.optim.SGD(actor.parameters(), lr=2.0)
    trainer.actor_scheduler = SimpleNamespace(get_last_lr=lambda: [2.0])
    trainer.replay_buffer = None
    trainer.aux_loss = False
    trainer.ema_model = None
    info = {"dp_size": 1, "batch_num_tokens": None, "global_batch_size": None}
    for step in range(updates):
        trainer.training_step(batch, 0.04, step, info)

    tap = sys.modules["unipo_build.trainers.openrlhf.tap"].TAP
    return {
        "pid": os.getpid(),
        "wrapped": {
            "compute_advantages_and_returns": hasattr(em.RemoteExperienceMaker.compute_advantages_and_returns,
                                                      "__unipo_original__"),
            "compute_approx_kl": hasattr(em.compute_approx_kl, "__unipo_original__"),
            "training_step": hasattr(ActorPPOTrainer.training_step, "__unipo_original__"),
            "PolicyLoss.forward": hasattr(PolicyLoss.forward, "__unipo_original__"),
            "Actor.forward": hasattr(Actor.forward, "__unipo_original__"),
        },
        "tap_dir": str(tap.directory) if tap else None,
        "advantages": [e.advantages.tolist() for e in experiences],
        "rewards": scored["rewards"].tolist(),
        "scores": scored["scores"].tolist(),
    }
