"""One RL loop for every algorithm, configured only by its spec.

Read top to bottom, one rollout is:

1. sample G responses for each prompt from pi_old (and, with a sampling filter, keep
   sampling new prompts until the batch is full of informative groups);
2. score them with training/reward.py, shape the rewards if the spec asks;
3. recompute old log-probs, reference log-probs (KL in the spec) and values (GAE);
4. advantages from the spec's advantage component;
5. ``epochs x minibatches`` gradient updates, each one a logged step, with the loss
   ``-J = -sum w * objective`` built by unipo_build.core.objective, the same code the site
   uses to recompute and explain a logged token.

Nothing here branches on an algorithm's name: only on what the resolved components
need (a critic, a reference model, a filter).
"""

from __future__ import annotations

import copy
import json
import math
import random
import sys
import time
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path

import torch

from unipo_build.core import objective as O
from unipo_build.core.components import explained_variance
from unipo_build.core.paths import project_relative
from unipo_build.core.runlog import RunWriter, read_header
from unipo_build.core.schema import RunHeader, StepRecord
from unipo_build.core.specs import resolve

from . import PROJECT
from . import nonfinite, records
from .batches import (TrainBatch, by_minibatch, concat_batches, length_chunks, pad_columns, rows_to_host,
                      select_rows, to_device, to_host)
from .critic import Critic, critic_step
from .generation import RolloutBatch, response_logprobs, sample_groups
from .rl_evals import Evaluations
from .model import (load_policy, resolve_device, resolve_precision, set_threads, show_progress_bars,
                    thread_count)
from .presets import get_preset
from .reward import score_response, total_reward
from .stale import StaleSampler, restore_sampler
from .runstate import (CHECKPOINT_META, Interrupted, TrainError, check_out_dir, checkpoint_dir, checkpoint_interval,
                       checkpoint_rollout, clear_logged_steps, logged_updates, remove_checkpoints, replace_checkpoint,
                       rng_from_state, rng_state, run_state)
from .pools import check_rl_prompts, load_rows, memorisation_check
from .run_info import RolloutBar, TimeLimit, TrainOptions, _Pieces, git_commit, load_algorithm, run_header  # noqa: F401 (the API)
from .task import generate_task

REPO = PROJECT  # the project root (training/__init__.py)


# ---------------------------------------------------------------------------
# The loop
# ---------------------------------------------------------------------------

class Trainer(Evaluations):
    fuse_old = True  # run_rollout's fill_old where exact; benchmarks/gpu_speed.py's pre-issue-20 baseline sets False

    def __init__(self, opts: TrainOptions):
        self.opts = opts
        self.spec = load_algorithm(opts.algorithm)
        self.preset = get_preset(opts.preset)
        rl = self.preset.rl
        d = self.spec.defaults
        fixed = self.preset.fixed_passes  # the preset's passes hold over the spec's (smollm2: one update a rollout)
        self.rl = replace(
            rl,
            steps=opts.steps if opts.steps is not None else rl.steps,
            lr=opts.lr or d.lr or rl.lr,
            epochs=rl.epochs if fixed else d.epochs or rl.epochs,
            minibatches=rl.minibatches if fixed else d.minibatches or rl.minibatches,
            seed=opts.seed,
            eval_every=opts.eval_every or rl.eval_every,
            eval_n=opts.eval_n or rl.eval_n,
            detail_every=opts.detail_every if opts.detail_every is not None else rl.detail_every,
            sampler_lag=opts.sampler_lag if opts.sampler_lag is not None else rl.sampler_lag,
        )
        if opts.rl_overrides:
            self.rl = replace(self.rl, **opts.rl_overrides)
        self.critic_lr = d.critic_lr or 5e-4
        self.cfg = resolve(self.spec, max_new_tokens=self.rl.max_new_tokens)
        self.out = Path(opts.out) if opts.out else REPO / "work" / "runs" / f"{self.spec.id}-{self.preset.name}-s{opts.seed}"
        self.checkpoint_every = opts.checkpoint_every or checkpoint_interval(self.rl.steps)
        self._check_inputs()
        try:
            self.threads = thread_count(opts.threads, self.preset)
        except ValueError as err:
            raise TrainError(str(err)) from None
        set_threads(self.threads)
        show_progress_bars(opts.progress)
        self.device = resolve_device(opts.device)
        # The GPU path (on CUDA, or forced on any device by precision "bf16", which the tests use):
        # bf16 autocast in every policy pass (log-probs in float32), the preset's GPU micro-batches,
        # the static decoder (CUDA graphs on CUDA) and the sampling log-probs logged beside the old
        # ones. Elsewhere: float32, micro_rows, the pruning decoder. On both, the old log-probs come
        # from the first update's own forward pass where that is exact (run_rollout's fill_old).
        try:
            self.autocast = resolve_precision(self.rl.precision, self.device)
        except ValueError as err:
            raise TrainError(str(err)) from None
        self.gpu_path = self.device.type == "cuda" or self.autocast is not None
        self.micro_rows = self.rl.cuda_micro_rows if self.gpu_path else self.rl.micro_rows
        self.micro_tokens = self.rl.cuda_micro_tokens if self.gpu_path else None
        self.static_decode = self.gpu_path and self.rl.cuda_graphs

    # A chat preset's model reads its prompts through its chat template with the preset's system prompt, and its
    # answers are read by the preset's reward rule; None and "answer" (tiny, gpu): the task's own format.
    @property
    def chat(self):
        return self.preset.chat

    @property
    def system_prompt(self) -> str | None:
        return self.chat.system_prompt if self.chat else None

    @property
    def reward_rule(self) -> str:
        return self.chat.reward_rule if self.chat else "answer"

    # -- setup ---------------------------------------------------------------

    def _check_inputs(self) -> None:
        """Refuse before anything is loaded or written: a missing --model or --task, an --out holding a run."""
        for flag, value in (("--model", self.opts.model), ("--task", self.opts.task)):
            if value and not Path(value).exists():
                raise TrainError(f"{flag} {value}: no such file or directory")
        if self.opts.model and not (Path(self.opts.model) / "config.json").is_file():
            raise TrainError(f"--model {self.opts.model}: not a Hugging Face checkpoint directory (no config.json)")
        if self.rl.sampler_lag < 0:
            raise TrainError(f"--sampler-lag {self.rl.sampler_lag}: a lag is 0 (synchronous) or more rollouts")
        check_out_dir(self.out, self.opts.resume)

    def _warm_start(self) -> str:
        if self.opts.model:
            return self.opts.model
        chat = self.chat
        if chat:  # a pretrained model: its checkpoint is made by `unipo model`, never trained here
            path = REPO / chat.checkpoint
            if not (path / "config.json").is_file():
                raise TrainError(f"no {chat.model} checkpoint at {project_relative(path, REPO)}: make it with "
                                 f"`unipo model {chat.model}` (or pass --model DIR)")
            return str(path)
        from .sft import run_sft, warm_start_path

        path = warm_start_path(self.preset.name, REPO)
        if not (path / "config.json").exists():

            print(f"no warm-start checkpoint at {project_relative(path)}: running SFT first", file=sys.stderr)
            if not (REPO / self.preset.task_dir).exists():
                generate_task(REPO / self.preset.task_dir, level=self.preset.task_level)
            run_sft(path, preset=self.preset.name, seed=0, task_dir=REPO / self.preset.task_dir,
                    device=self.opts.device, progress=self.opts.progress, threads=self.threads)
        return str(path)

    def _header(self, checkpoint: str, n_train: int, n_eval: int, task_source: str) -> RunHeader:
        return run_header(self, checkpoint, n_train, n_eval, task_source)

    def setup(self) -> None:
        checkpoint = self._warm_start()
        self.policy, self.tokenizer = load_policy(checkpoint, device=str(self.device))
        if self.chat and not getattr(self.tokenizer, "chat_template", None):
            named = Path(self.opts.model) if self.opts.model else Path(project_relative(checkpoint, REPO))
            raise TrainError(f"{named / 'tokenizer_config.json'}: the tokenizer "
                             f"has no chat template, through which the {self.preset.name} preset puts each question "
                             f"to the model: pass a chat model's checkpoint (`unipo model {self.chat.model}` makes "
                             f"one)")
        self.policy.train()
        self.reference = None
        if O.uses_reference(self.cfg):
            self.reference = copy.deepcopy(self.policy).eval().requires_grad_(False)
        self.critic = Critic(self.policy).to(self.device) if O.uses_critic(self.cfg) else None
        self.stale = StaleSampler(self.policy, self.rl.sampler_lag) if self.rl.sampler_lag else None
        self.sampler = self.policy  # samples each rollout: the policy, or its stale copy (training/stale.py)
        self.optimizer = torch.optim.AdamW(self.policy.parameters(), lr=self.rl.lr, betas=self.rl.betas,
                                           weight_decay=self.rl.weight_decay)
        self.critic_optimizer = (torch.optim.AdamW(self.critic.parameters(), lr=self.critic_lr)
                                 if self.critic is not None else None)
        self.train_rows, self.eval_rows, task_source = load_rows(self.opts.task, self.preset, REPO)
        check_rl_prompts(checkpoint, self.train_rows, task_source, self.opts.task, self.preset.task_level, REPO)
        self.eval_rows = self.eval_rows[: self.rl.eval_n]
        self.prompt_rng = random.Random(self.opts.seed)
        self.sample_gen = torch.Generator(device=self.device).manual_seed(self.opts.seed)
        self.update_rng = random.Random(self.opts.seed + 1)
        self.step = 0
        self.rollout = 0
        self.last_metrics: dict = {}  # of the latest update, for the progress bar
        self.started = time.time()
        self.elapsed_before = 0.0
        header = self._header(checkpoint, len(self.train_rows), len(self.eval_rows), task_source)
        resume_after = None
        if self.opts.resume:
            resume_after = self._load_checkpoint()
            if resume_after is not None:
                previous = read_header(self.out)
                header = header.model_copy(update={"created_at": self._created_at,
                                                   "length_probe": previous.length_probe,
                                                   "memorisation_check": previous.memorisation_check})
        if resume_after is None and self.rl.probe_prompts:
            header = header.model_copy(update={"length_probe": self._length_probe()})
        self.writer = RunWriter(self.out, header, resume_after=resume_after)

    # -- checkpoints ---------------------------------------------------------

    def _save_checkpoint(self) -> None:
        """Everything needed to continue after this rollout, written then renamed into place."""
        def write(folder: Path) -> None:
            state = {
                "policy": self.policy.state_dict(), "optimizer": self.optimizer.state_dict(),
                "critic": self.critic.state_dict() if self.critic else None,
                "critic_optimizer": self.critic_optimizer.state_dict() if self.critic_optimizer else None,
                "sample_gen": self.sample_gen.get_state(),
                "sampler_snapshots": self.stale.state() if self.stale is not None else None,
            }
            torch.save(state, folder / "state.pt")
            meta = {"step": self.step, "rollout": self.rollout, "prompt_rng": rng_state(self.prompt_rng),
                    "update_rng": rng_state(self.update_rng),
                    "elapsed": self.elapsed_before + time.time() - self.started,
                    "created_at": self.writer.header.created_at.isoformat()}
            (folder / CHECKPOINT_META).write_text(json.dumps(meta))

        replace_checkpoint(self.out, write)

    def _load_checkpoint(self) -> int | None:
        """Restore the last checkpoint; returns the last step it covers (None: start fresh)."""
        path = checkpoint_dir(self.out)
        if not (path / CHECKPOINT_META).exists():
            if run_state(self.out) == "started":
                # Stopped before its first checkpoint: nothing to continue from, so start it over.
                print(f"{self.out}: no checkpoint yet, so the run starts over (its logged steps are replaced)",
                      file=sys.stderr)
                clear_logged_steps(self.out)
            return None
        meta = json.loads((path / CHECKPOINT_META).read_text())
        state = torch.load(path / "state.pt", map_location=self.device, weights_only=False)
        self.policy.load_state_dict(state["policy"])
        self.optimizer.load_state_dict(state["optimizer"])
        if self.critic is not None:
            self.critic.load_state_dict(state["critic"])
            self.critic_optimizer.load_state_dict(state["critic_optimizer"])
        self.sample_gen.set_state(state["sample_gen"])
        try:
            restore_sampler(self.stale, state.get("sampler_snapshots"))
        except ValueError as err:
            raise TrainError(f"{path}: {err}") from None
        self.prompt_rng.setstate(rng_from_state(meta["prompt_rng"]))
        self.update_rng.setstate(rng_from_state(meta["update_rng"]))
        self.step, self.rollout = meta["step"], meta["rollout"]
        self.elapsed_before = meta["elapsed"]
        self._created_at = datetime.fromisoformat(meta["created_at"])
        return self.step - 1

    # -- one rollout ---------------------------------------------------------

    def _chat_prompts(self) -> dict:
        """sample_groups' system prompt for a chat preset (the prompts go through the chat template); none otherwise."""
        return {"system": self.system_prompt} if self.chat else {}

    def _score(self, batch: RolloutBatch, answers: list[str]):
        rule = {"rule": self.reward_rule} if self.reward_rule != "answer" else {}
        scores = [score_response(text, answers[int(p)], **rule) for text, p in zip(batch.texts, batch.prompt_index)]
        correct = torch.tensor([float(s["correct"]) for s in scores])
        fmt = torch.tensor([float(s["format"]) for s in scores])
        reward = torch.tensor([total_reward(s) for s in scores], dtype=torch.float32)
        return reward, {"correct": correct, "format": fmt}

    def _sample_rollout(self):
        """Sample groups until the batch holds ``prompts_per_step`` groups the filter keeps.

        Without a filter that is one round of P prompts. With a sampling filter (DAPO's dynamic
        sampling) each further round samples enough new prompts to fill what is still missing at
        the pass rate seen so far in this rollout (at least the missing number, at most P), for at
        most ``max_rounds`` rounds (verl's max_num_gen_batches; DAPO's spec caps it at 10). Groups
        kept beyond P are generated but not trained on, like groups the filter drops.
        """
        G, want = self.rl.group_size, self.rl.prompts_per_step
        filtering = self.cfg.kind("filter") != "none"
        max_rounds = self.cfg.param("filter", "max_rounds", 1) if filtering else 1
        kept_batches, kept_answers, filtered_groups = [], [], []
        sampled = {"reward": [], "correct": [], "length": []}
        n_sampled = n_passed = all_correct = all_wrong = zero_var = 0
        rounds = kept_count = 0
        while kept_count < want and rounds < max_rounds:
            rounds += 1
            missing = want - kept_count
            n_prompts = missing
            if rounds > 1:
                pass_rate = max(kept_count / max(n_sampled, 1), 1 / want)
                n_prompts = min(want, max(missing, math.ceil(missing / pass_rate)))
            rows = [self.train_rows[self.prompt_rng.randrange(len(self.train_rows))] for _ in range(n_prompts)]
            answers = [r["answer"] for r in rows]
            batch = sample_groups(self.sampler, self.tokenizer, [r["prompt"] for r in rows], G, self.rl.max_new_tokens,
                                  self.rl.temperature, generator=self.sample_gen, autocast=self.autocast,
                                  static=self.static_decode, **self._chat_prompts())
            reward, comps = self._score(batch, answers)
            shaped, _ = O.shape_rewards(self.cfg, reward, batch.response_lengths)
            sampled["reward"].append(shaped)
            sampled["correct"].append(comps["correct"])
            sampled["length"].append(batch.response_lengths)
            correct = comps["correct"].view(-1, G)
            keep = O.keep_groups(self.cfg, correct)
            n_sampled += len(rows)
            n_passed += int(keep.sum())
            all_correct += int((correct.sum(-1) == G).sum())
            all_wrong += int((correct.sum(-1) == 0).sum())
            zero_var += int((shaped.view(-1, G).std(-1, correction=0) == 0).sum())
            kept_groups = [g for g in range(len(rows)) if keep[g]][:want - kept_count]
            for g in range(len(rows)):
                if not keep[g]:
                    filtered_groups.append((batch, g, answers[g], shaped, comps))
            if kept_groups:
                sub = select_rows(batch, [i for g in kept_groups for i in batch.group(g)])
                sub = replace(sub, prompts=[batch.prompts[g] for g in kept_groups],
                              prompt_index=torch.arange(len(kept_groups)).repeat_interleave(G))
                kept_batches.append(sub)
                kept_answers += [answers[g] for g in kept_groups]
                kept_count += len(kept_groups)
        lengths = torch.cat(sampled["length"]).float()
        stats = dict(n_sampled_groups=n_sampled, n_kept_groups=n_passed, rounds=rounds,
                     all_correct=all_correct, all_wrong=all_wrong, zero_variance=zero_var,
                     sampled_reward=torch.cat(sampled["reward"]), sampled_correct=torch.cat(sampled["correct"]),
                     sampled_lengths=lengths)
        return (concat_batches(kept_batches) if kept_batches else None), kept_answers, filtered_groups, stats

    def run_rollout(self) -> None:
        t0 = time.time()
        if self.stale is not None:
            self.sampler = self.stale.for_rollout(self.policy)
        batch, answers, filtered, stats = self._sample_rollout()
        if self.rollout == 0 and getattr(self, "start_eval", None):
            self.writer.update_header(memorisation_check=memorisation_check(stats, self.start_eval,
                                                                            getattr(self, "pool_eval", None)))
        if batch is None:  # the filter kept nothing in max_rounds: no update this rollout
            self.rollout += 1
            return
        G = self.rl.group_size
        reward, comps = self._score(batch, answers)
        lengths = batch.response_lengths
        shaped, shaping = O.shape_rewards(self.cfg, reward, lengths)
        if self.cfg.kind("shaping") != "none":
            comps["shaping"] = shaping
        mask = batch.response_mask
        # The minibatches of every epoch are drawn now, so that the old log-probs (and the reference
        # log-probs and values) are computed on exactly the rows and shapes the first epoch's updates
        # will use: the first update then recomputes them bit for bit, and its ratios are exactly 1.
        n_groups = len(batch.prompts)
        plans = []
        for _ in range(self.rl.epochs):
            order = list(range(n_groups))
            self.update_rng.shuffle(order)
            plans.append([sorted(order[i::self.rl.minibatches]) for i in range(self.rl.minibatches)
                          if order[i::self.rl.minibatches]])
        row_sets = [part for chunk in plans[0]
                    for part in length_chunks(batch, [r for g in chunk for r in batch.group(g)], self.micro_rows,
                                              self.micro_tokens)]
        # When the first update covers every row (one minibatch) and nothing needs the old log-probs
        # before it (no KL in the reward), the first update's own forward pass gives them: the same rows,
        # chunks and weights as a separate pass (a pass with gradients computes the same bits), one pass fewer.
        fill_old = self.fuse_old and len(plans[0]) == 1 and not O.kl_in_reward(self.cfg)
        self.fused_old_logprobs = fill_old  # read by benchmarks/gpu_speed.py (passes per rollout)
        with torch.no_grad():
            if fill_old:
                old_logp = torch.zeros(batch.size, batch.response_mask.shape[1])
                ref_logp = (by_minibatch(lambda mb: response_logprobs(self.reference, mb, autocast=self.autocast)[0],
                                         batch, row_sets) if self.reference is not None else None)
            else:
                old_logp, ref_logp = self._old_and_ref(batch, row_sets)
            values = by_minibatch(self.critic, batch, row_sets) if self.critic is not None else None
        rollout_kl = O.rollout_kl(self.cfg, old_logp, ref_logp, mask) if O.kl_in_reward(self.cfg) else None
        advantages, returns = O.compute_advantages(self.cfg, rewards=shaped.float(), group_size=G, mask=mask,
                                                   rollout_kl=rollout_kl, values=values)
        correct = comps["correct"]
        rollout_metrics = records.rollout_metrics(
            rewards=shaped, components={k: v for k, v in comps.items() if k != "shaping"}, shaping=shaping,
            correct=correct, lengths=lengths, truncated=batch.truncated, group_size=G, **stats)
        rollout_seconds = time.time() - t0
        rollout_metrics["time/rollout_s"] = rollout_seconds
        prepared = TrainBatch(batch=batch, answers=answers, shaped=shaped, comps=comps, mask=mask, old_logp=old_logp,
                              ref_logp=ref_logp, values=values, advantages=advantages, returns=returns,
                              rollout_kl=rollout_kl, metrics=rollout_metrics, filtered=filtered)
        first = True
        for chunks in plans:
            for chunk in chunks:
                self._update(prepared, [r for g in chunk for r in batch.group(g)], first=first,
                             fill_old=fill_old and first)
                first = False
        self.rollout += 1

    def _old_and_ref(self, batch, row_sets):
        """Old and reference log-probs in one loop over the chunks (each chunk cut from the batch
        once, both models run on it), copied to the host once at the end. Returns (old [N, Tr],
        reference [N, Tr] or None)."""
        old, ref = [], []
        for rows in row_sets:
            sub = select_rows(batch, rows)
            old.append(response_logprobs(self.policy, sub, autocast=self.autocast)[0])
            if self.reference is not None:
                ref.append(response_logprobs(self.reference, sub, autocast=self.autocast)[0])
        out = rows_to_host(batch, row_sets, [old, ref] if self.reference is not None else [old])
        return out[0], out[1] if self.reference is not None else None

    def _update(self, prepared: TrainBatch, rows: list[int], first: bool, fill_old: bool = False) -> None:
        """One optimizer step on the minibatch `rows` of the rollout: J = sum w * objective over its tokens.

        The forward and backward passes run on chunks of similar length (length_chunks) and their
        gradients add up: J is linear in the rows and the aggregation weights are computed on the
        whole minibatch first, so the step is the same as one pass over the minibatch. With
        `fill_old` this is the rollout's first update and its forward pass also writes the rollout's
        old log-probs (before the optimizer step), which the later updates read.

        The host and the device meet twice per update: the inputs go up in one copy (rows in chunk
        order, so that a chunk is a slice), and everything logged comes back in one copy after the
        optimizer steps. Between them nothing waits for the device, so on a GPU the host queues the
        next chunk while the device runs this one.
        """
        t0 = time.time()
        batch, answers, shaped, comps = prepared.batch, prepared.answers, prepared.shaped, prepared.comps
        correct, filtered = comps["correct"], prepared.filtered if first else []
        idx = torch.tensor(rows)
        width = max(int(batch.response_mask[idx].sum(-1).max()), 1)  # wider columns are padding here
        mask, old_logp, ref_logp, values, advantages, returns, rollout_kl = (
            None if t is None else t[:, :width]
            for t in (prepared.mask, prepared.old_logp, prepared.ref_logp, prepared.values, prepared.advantages,
                      prepared.returns, prepared.rollout_kl))
        weights = O.weights(self.cfg, mask[idx], dtype=torch.float32, truncated=batch.truncated[idx])  # mask_truncated
        chunks = length_chunks(batch, rows, self.micro_rows, self.micro_tokens)
        where = {r: i for i, r in enumerate(rows)}
        order = torch.tensor([r for chunk in chunks for r in chunk])
        at = torch.tensor([where[r] for chunk in chunks for r in chunk])  # minibatch positions, chunk order
        corrected = O.uses_sampler_logp(self.cfg)  # a rollout correction weighs by the sampler's log-probs
        named = {"sample": batch.logprobs[:, :width] if corrected else None,
                 "mask": mask, "advantages": advantages, "old": None if fill_old else old_logp, "ref": ref_logp,
                 "rollout_kl": rollout_kl, "values": values if self.critic is not None else None,
                 "returns": returns if self.critic is not None else None}
        named = {k: v[order] for k, v in named.items() if v is not None}
        named["weights"] = weights[at]
        dev = next(self.policy.parameters()).device
        inputs = dict(zip(named, to_device(list(named.values()), dev)))
        J = torch.zeros((), dtype=torch.float64, device=dev)
        kept, has_kl, start = [], False, 0
        self.optimizer.zero_grad(set_to_none=True)

        def chunk_part(chunk, start):  # one chunk's forward pass: (its share of J, logp, entropy, token terms)
            logp, entropy = response_logprobs(self.policy, select_rows(batch, chunk), autocast=self.autocast)
            part_of = {k: v[start:start + len(chunk), :logp.shape[1]] for k, v in inputs.items()}
            terms = O.token_terms(self.cfg, logp=logp, old_logp=logp.detach() if fill_old else part_of["old"],
                                  advantages=part_of["advantages"], mask=part_of["mask"], ref_logp=part_of.get("ref"),
                                  rollout_kl=part_of.get("rollout_kl"), sampler_logp=part_of.get("sample"))
            return (part_of["weights"] * terms.objective).sum(), logp, entropy, terms
        for chunk in chunks:
            part, logp, entropy, terms = chunk_part(chunk, start)
            start += len(chunk)
            (-part).backward()
            J += part.detach().double()
            has_kl = terms.kl is not None
            kept.append(torch.stack([pad_columns(v.detach().float(), width) for v in (
                logp, entropy, terms.ratio, terms.objective, terms.kl if has_kl else torch.zeros_like(logp),
                terms.clip_side)]))
        grad_norm = torch.nn.utils.clip_grad_norm_(self.policy.parameters(), self.rl.grad_clip)
        # One host read: a non-finite gradient must not reach the weights. The step is skipped, logged and
        # its chunks examined (training/nonfinite.py); three in a row stop the run.
        finite = bool(torch.isfinite(grad_norm))
        self.nonfinite = 0 if finite else getattr(self, "nonfinite", 0) + 1
        if finite:
            self.optimizer.step()
        else:
            nonfinite.report(self.policy, batch, chunks, chunk_part, step=self.step, rollout=self.rollout)
            if self.nonfinite >= 3:
                raise TrainError(f"{project_relative(self.out, REPO)}: step {self.step}: grad_norm: not finite in 3 "
                                 f"updates in a row; the run stops at its last checkpoint (unipo train --resume continues it)")
        value_loss = (critic_step(self.critic, self.critic_optimizer, batch, chunks, mask, idx, inputs,
                                  self.cfg.param("advantage", "value_clip"), self.rl.grad_clip)
                      if self.critic is not None else None)
        scalars = torch.stack([J, grad_norm.to(J), J if value_loss is None else value_loss])
        host, scalars = to_host([torch.cat(kept, 1), scalars])
        out = {}
        for name, got in zip(("logp", "entropy", "ratio", "objective", "kl", "clip_side"), host):
            out[name] = torch.zeros(len(rows), width)
            out[name][at] = got
        clip_side = out.pop("clip_side").to(torch.int8)
        if fill_old:
            old_logp[idx] = out["logp"]
        J = float(scalars[0])
        metrics = dict(prepared.metrics)
        metrics.update({"objective": J, "loss/policy": -J, "grad_norm": float(scalars[1]) if finite else None,
                        "update/skipped": 0.0 if finite else 1.0,
                        "lr": self.optimizer.param_groups[0]["lr"]})
        if self.critic is not None:
            metrics["loss/value"] = float(scalars[2])
            ev = float(explained_variance(values[idx], returns[idx], mask[idx]))
            metrics["value/explained_variance"] = ev if ev == ev else None
        has_tokens = self._wants_detail()
        # Each token's text, computed only for the rows the step detail logs (a few groups of the
        # minibatch): incremental decoding costs O(length^2) per answer, seconds for 1,024 answers.
        token_text = _Pieces(self.tokenizer, [batch.response_ids[r] for r in rows] if has_tokens else None)
        group_of_row = {r: g for g in range(len(batch.prompts)) for r in batch.group(g)}
        view = records.MinibatchView(
            group_index=[group_of_row[r] for r in rows],
            prompts=[batch.prompts[g] for g in sorted({group_of_row[r] for r in rows})],
            answers=[answers[g] for g in sorted({group_of_row[r] for r in rows})],
            response_text=[batch.texts[r] for r in rows], token_ids=[batch.response_ids[r] for r in rows],
            token_text=token_text, rewards=shaped[idx],
            reward_components={k: v[idx] for k, v in comps.items()}, correct=correct[idx],
            truncated=batch.truncated[idx], mask=mask[idx], logp=out["logp"], old_logp=old_logp[idx],
            ref_logp=ref_logp[idx] if ref_logp is not None else None,
            values=values[idx] if values is not None else None, advantages=advantages[idx],
            returns=returns[idx] if returns is not None else None,
            kl=out["kl"] if has_kl else None, ratio=out["ratio"],
            clip_side=clip_side, entropy=out["entropy"],
            weights=weights.detach().cpu(), objective=out["objective"],
            group_advantage=O.group_baseline(self.cfg),
            sample_logp=batch.logprobs[idx][:, :width] if self.gpu_path or corrected or self.stale is not None else None)
        metrics.update(records.update_metrics(view))
        metrics["time/update_s"] = time.time() - t0
        metrics["time/wall_s"] = self.elapsed_before + time.time() - self.started
        if has_tokens:
            self.writer.step_detail(records.step_detail(view, step=self.step, rollout=self.rollout, objective=J,
                                                        detail_groups=self.rl.detail_groups,
                                                        max_bytes=self.rl.detail_bytes,
                                                        filtered=records.filtered_records(filtered)))
        self.last_metrics = metrics
        self.writer.step(StepRecord(step=self.step, rollout=self.rollout, first_in_rollout=first, metrics=metrics,
                                    has_tokens=has_tokens))
        self.step += 1

    def _wants_detail(self) -> bool:
        """Token detail for every update of every ``detail_every``-th rollout and of the last one.

        All updates of a rollout, not only the first: ratios leave 1 (and clipping shows)
        only on the later updates of a rollout.
        """
        if not self.rl.detail_every:  # 0: no token detail at all (extra seeds keep only metrics)
            return False
        return self.rollout % self.rl.detail_every == 0 or self.rollout == self.rl.steps - 1

    # -- driver --------------------------------------------------------------

    def train(self) -> Path:
        try:
            return self._train()
        except KeyboardInterrupt:
            raise Interrupted(self.out, getattr(self, "rollout", 0), self.rl.steps, logged_updates(self.out),
                              checkpoint_rollout(self.out), started=hasattr(self, "writer")) from None

    def _train(self) -> Path:
        self.setup()
        total = self.rl.steps
        limit = TimeLimit(self.opts.time_limit, self.started)
        if self.rollout == 0 and self.step == 0:
            t0 = time.time()
            self.start_eval = self._evaluate("start")
            limit.eval_s = time.time() - t0
            self.pool_eval = self._pool_accuracy()
        bar = RolloutBar(total, self.rollout, self.spec.id) if self.opts.progress else None
        try:
            while self.rollout < total and limit.allows_another():
                t0 = time.time()
                self.run_rollout()
                if bar is not None:
                    bar.advance(self.step, self.last_metrics)
                if self.rollout % self.rl.eval_every == 0 and self.rollout < total:
                    self._evaluate("periodic")
                if self.rollout % self.checkpoint_every == 0 and self.rollout < total:
                    self._save_checkpoint()
                limit.rollout_s.append(time.time() - t0)
        finally:
            if bar is not None:
                bar.close()
        self._evaluate("end")
        early = {} if self.rollout >= total else {
            "notes": limit.note(self.rollout, total),
            "hyperparameters": self.writer.header.hyperparameters.model_copy(update={"steps": self.rollout,
                                                                                   "steps_asked": total})}
        self.writer.finish(finished_at=datetime.now(timezone.utc),
                           wall_time_s=round(self.elapsed_before + time.time() - self.started, 1), **early)
        remove_checkpoints(self.out)
        return self.out


def train(opts: TrainOptions) -> Path:
    return Trainer(opts).train()
