"""Trainer speed: our RL loop next to TRL's GRPOTrainer, same model, task and batch shape.

Measures optimizer steps/s, rollouts/s and generated tokens/s of ``training/rl.py`` (algorithm
``grpo``) and of TRL's ``GRPOTrainer`` (``loss_type="grpo"``), in one process, on the CPU, with
the same torch thread count, from the same warm start (``work/sft-tiny``) on the same task
(``data/tasks/train.jsonl``) scored by the same function (training/reward.py's
``score_response`` through ``total_reward``). It prints a table and writes
``benchmarks/results/trainer_speed.json``. It is a measurement, not a test.

    nice -n 5 .venv/bin/python benchmarks/trainer_speed.py                 # 6 measured rollouts each
    nice -n 5 .venv/bin/python benchmarks/trainer_speed.py --rollouts 3 --threads 1
    nice -n 5 .venv/bin/python benchmarks/trainer_speed.py --order sequential --omp-wait-policy ACTIVE
    nice -n 5 .venv/bin/python benchmarks/trainer_speed.py --preset smollm2 --rollouts 3            # 128 tokens
    nice -n 5 .venv/bin/python benchmarks/trainer_speed.py --preset smollm2 --rollouts 3 --max-new-tokens 64

One rollout, both sides: P prompts x G generations (tiny: 16 x 8 = 128 completions, at most 96
new tokens, temperature 1, no top-k/top-p), rewards, old and reference log-probs (k3 KL in the loss,
beta 0.04, as our GRPO spec), group z-score advantages, then ``epochs x minibatches`` optimizer
steps (tiny GRPO: 2 x 1 = 2 steps of all 128 completions). TRL's knobs are mapped so that each
generation batch also gets the same optimizer steps of the same size:

    per_device_train_batch_size = P * G / minibatches   (completions per optimizer step)
    steps_per_generation        = minibatches           (one generation batch = P * G = 128 completions)
    num_iterations              = epochs                (each generation batch is used `epochs` times)
    gradient_accumulation_steps = 1                     (one forward/backward per optimizer step)

Timing: setup (model loads, TRL's reference model, dataset, optimizer) and the first ``--warmup``
rollout(s) of each side are excluded. A side's rollout is timed from the moment it gets control
to the end of its last optimizer step of that rollout: for ours, ``Trainer.run_rollout()`` as a
whole (sampling, scoring, log-probs, 4 updates and the run log, token detail included, since
``detail_every=1`` writes token-level detail on every rollout); for TRL, from just after the
previous rollout to ``on_step_end`` of the rollout's 4th optimizer step (its data loading, logging
of the previous step, generation and the 4 steps). Generation vs update: ours, from the start of
``run_rollout()`` to the start of its first ``_update`` (sampling, scoring, old/reference log-probs,
advantages; the run's own ``time/rollout_s`` is kept next to it as a check) and the rest (4 updates
and the run log); TRL, ``GRPOTrainer._generate_and_score_completions`` (the same scope: generation,
rewards, old/reference log-probs, advantages), wrapped with a timer, and the rest. Periodic evaluation and
checkpoints are off on both sides (our ``Trainer.train()`` would add them; we drive
``run_rollout()`` directly).

Both sides get the same prompts in the same order: the TRL dataset is the sequence of prompts our
trainer's prompt RNG draws (16 per rollout), read unshuffled (``shuffle_dataset=False``); a check
compares the prompts each side actually sampled. The completions themselves differ (each side has
its own sampling RNG), so token counts differ a little.

Generated tokens, counted exactly: ours from the run's steps.jsonl (``length/mean`` x responses),
TRL from its logged ``completions/mean_length`` x completions (``logging_steps=1``); each is
cross-checked against an instrumented count (the sampled batch's response mask / TRL's
``completion_mask``). Lengths include the <eos> token on both sides.

A chat preset (``--preset smollm2``: SmolLM2-135M-Instruct from its checkpoint, work/models/...; 8 prompts x 8
answers, 128 new tokens unless ``--max-new-tokens`` says otherwise (the issue's shape is 64), T = 0.8, lr 1e-5,
one optimizer step of all 64 answers per rollout, in passes of ``micro_rows`` = 16 answers):

- prompts: ours puts each question through the tokenizer's chat template after the preset's system prompt
  (training/generation.py ``prompt_ids``); TRL's dataset holds the same conversation ([system, user] messages),
  which TRL puts through the same tokenizer's template with ``add_generation_prompt``. A check compares the
  token ids each side fed the model for every group of every rollout (``same_prompt_token_ids_each_rollout``).
- reward: the preset's rule (``last_integer``: the answer's last integer), through the same
  ``score_response``/``total_reward``; TRL hands a chat completion over as ``[{"role": "assistant", ...}]``
  and its text is scored.
- batch shape: TRL gets ours' micro-batches, ``per_device_train_batch_size = micro_rows = 16``,
  ``gradient_accumulation_steps = 4``, ``steps_per_generation = 4`` (one generation batch of 64, one optimizer
  step), ``num_iterations = 1``. Since its generation and its optimizer step are aligned, TRL takes the old
  log-probs from the training pass itself (no separate pass), as ours does (training/rl.py ``fill_old``: one
  minibatch, no KL in the reward); both compute reference log-probs (KL beta 0.04, as the grpo spec).
- ours skips the run header's length probe (``probe_prompts=0``, setup only); the default result file is
  ``benchmarks/results/trainer_speed_<preset>.json``, with ``_<N>`` for ``--max-new-tokens N`` off the preset's.

"sampling" (a sub-row of generation) is ours' ``_sample_rollout`` (the decode and scoring) and TRL's
``_generate`` (tokenizing, ``model.generate``, decoding).

``--order alternate`` (default) interleaves the two trainers rollout by rollout (ours runs inside
a TRL callback between TRL's generation cycles), so a change of machine load hits both alike;
``sequential`` runs ours fully, then TRL. CPU seconds of this process are reported next to wall
seconds: on a shared machine wall time includes waiting for a core.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TORCH_PRELOADED = "torch" in sys.modules  # libgomp reads OMP_WAIT_POLICY once, when torch loads


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description="Steps/s and generated tokens/s: our RL trainer vs TRL GRPOTrainer.")
    ap.add_argument("--rollouts", type=int, default=6, help="measured rollouts per trainer (after warm-up)")
    ap.add_argument("--warmup", type=int, default=1, help="rollouts per trainer run first and not measured")
    ap.add_argument("--threads", type=int, default=1, help="torch threads for both trainers")
    ap.add_argument("--preset", default="tiny", help="tiny, or a chat preset (smollm2): see the docstring")
    ap.add_argument("--max-new-tokens", type=int, default=None,
                    help="both sides' answer budget (default: the preset's; smollm2 128, the issue's shape 64)")
    ap.add_argument("--model", default=None,
                    help="local HF checkpoint (default: the preset's warm start, work/sft-<preset> when trained here, "
                         "else the shipped data/warm-start/<preset>; a chat preset: its checkpoint, "
                         "work/models/...)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--sampler-lag", type=int, default=0,
                    help="ours in its asynchronous mode: each rollout sampled by the policy of this many rollouts "
                         "before (unipo train --sampler-lag); TRL's side is unchanged")
    ap.add_argument("--order", choices=("alternate", "sequential"), default="alternate")
    ap.add_argument("--omp-wait-policy", choices=("PASSIVE", "ACTIVE"), default=None,
                    help="set OMP_WAIT_POLICY before torch loads (default: the environment's value, else PASSIVE as "
                         "training/__init__.py sets it for every project run)")
    ap.add_argument("--json", default=None,
                    help="default benchmarks/results/trainer_speed.json (tiny), trainer_speed_<preset>.json, "
                         "with _<N> when --max-new-tokens N differs from the preset's")
    ap.add_argument("--keep-runs", default=None, help="keep both trainers' output directories under this path")
    args = ap.parse_args(argv)
    if args.omp_wait_policy:  # before anything below loads torch (training.sft does)
        os.environ["OMP_WAIT_POLICY"] = args.omp_wait_policy
    from training.presets import get_preset

    preset = get_preset(args.preset)
    if args.model is None:
        from training.sft import warm_start_path

        args.model = str(REPO / preset.chat.checkpoint if preset.chat else warm_start_path(args.preset, REPO))
    if args.json is None:
        name = "trainer_speed" if args.preset == "tiny" else f"trainer_speed_{args.preset}"
        if args.max_new_tokens is not None and args.max_new_tokens != preset.rl.max_new_tokens:
            name += f"_{args.max_new_tokens}"
        args.json = str(REPO / "benchmarks" / "results" / f"{name}.json")
    return args


ARGS = parse_args() if __name__ == "__main__" else None  # sets OMP_WAIT_POLICY from --omp-wait-policy first
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
sys.path.insert(0, str(REPO))

import training  # noqa: E402,F401  (sets OMP_WAIT_POLICY=PASSIVE unless set, as in every project run)

# libgomp reads the policy once, when torch loads it: record what it saw (parse_args sets --omp-wait-policy, and
# training/__init__.py its PASSIVE default, before anything loads torch).
OMP_POLICY = (os.environ.get("OMP_WAIT_POLICY", "unset (libgomp default)")
              if not TORCH_PRELOADED else "unknown (torch loaded before this script set it)")

import torch  # noqa: E402

from training.presets import get_preset  # noqa: E402
from unipo_build.core import runlog  # noqa: E402


def loadavg() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def busy_trainers() -> int:
    """How many other `unipo train` processes run now (a fact about the shared machine)."""
    n = 0
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            cmd = (Path("/proc") / pid / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if any(c.endswith(b"unipo") or c == b"unipo_build.cli.main" for c in cmd[:3]) and b"train" in cmd:
            n += 1
    return n


class Clock:
    def __init__(self):
        self.wall, self.cpu = time.perf_counter(), time.process_time()

    def lap(self) -> tuple[float, float]:
        return time.perf_counter() - self.wall, time.process_time() - self.cpu


# ---------------------------------------------------------------------------
# Ours
# ---------------------------------------------------------------------------

class Ours:
    def __init__(self, args, out: Path):
        from training.rl import Trainer, TrainOptions

        total = args.warmup + args.rollouts
        overrides = {}
        if args.max_new_tokens is not None:
            overrides["max_new_tokens"] = args.max_new_tokens
        if get_preset(args.preset).chat:  # the run header's length probe (16 prompts x 8 answers): setup only
            overrides["probe_prompts"] = 0
        self.trainer = Trainer(TrainOptions(
            algorithm="grpo", preset=args.preset, steps=total, seed=args.seed, out=str(out), model=args.model,
            device="cpu", progress=False, detail_every=1, threads=args.threads, eval_every=10**9,
            sampler_lag=args.sampler_lag, rl_overrides=overrides or None))
        self.trainer.setup()
        self.out = out
        self.sampled_tokens: list[int] = []
        self.sampled_prompts: list[list[str]] = []
        self.prompt_ids: list[list[list[int]]] = []  # per rollout, each group's prompt token ids as the model read them
        self.sample_times: list[tuple[float, float]] = []
        self.first_update: tuple[float, float] | None = None
        sample, update = self.trainer._sample_rollout, self.trainer._update

        def counted():  # instrumented count of the tokens in the trained batch
            clock = Clock()
            batch, answers, filtered, stats = sample()
            self.sample_times.append(clock.lap())
            self.sampled_tokens.append(int(batch.response_mask.sum()) if batch is not None else 0)
            self.sampled_prompts.append(list(batch.prompts) if batch is not None else [])
            self.prompt_ids.append(unpadded(batch.input_ids[:, :batch.prompt_width], batch.attention_mask[:, :batch.prompt_width],
                                            batch.group_size) if batch is not None else [])
            return batch, answers, filtered, stats

        def marked(*a, **kw):  # the end of the generation phase: the rollout's first update starts
            if self.first_update is None:
                self.first_update = (time.perf_counter(), time.process_time())
            return update(*a, **kw)

        self.trainer._sample_rollout, self.trainer._update = counted, marked
        self.records: list[dict] = []

    @property
    def updates_per_rollout(self) -> int:
        return self.trainer.rl.epochs * self.trainer.rl.minibatches

    def rollout(self, measured: bool) -> None:
        t = self.trainer
        first_step = t.step
        torch.set_num_threads(ARGS_THREADS[0])
        self.first_update = None
        clock = Clock()
        t.run_rollout()
        wall, cpu = clock.lap()
        gen_wall, gen_cpu = self.first_update[0] - clock.wall, self.first_update[1] - clock.cpu
        steps = [json.loads(line) for _, line in runlog.log_lines(runlog.log_file(self.out, runlog.STEPS)) if line.strip()]
        mine = [s for s in steps if s["step"] >= first_step]
        m = mine[0]["metrics"]
        n_resp = t.rl.prompts_per_step * t.rl.group_size  # grpo has no filter: every group is trained on
        logged_tokens = round(m["length/mean"] * n_resp)
        self.records.append({
            "measured": measured, "wall_s": wall, "cpu_s": cpu, "gen_s": gen_wall, "gen_cpu_s": gen_cpu,
            "gen_s_logged": m["time/rollout_s"], "sample_s": self.sample_times[-1][0],
            "sample_cpu_s": self.sample_times[-1][1], "update_s": wall - gen_wall, "steps": len(mine),
            "tokens": logged_tokens,
            "tokens_instrumented": self.sampled_tokens[-1], "responses": n_resp,
            "token_detail_steps": sum(1 for s in mine if s.get("has_tokens")),
            "threads": torch.get_num_threads(), "load1": loadavg()[0]})


# ---------------------------------------------------------------------------
# TRL
# ---------------------------------------------------------------------------

def unpadded(ids, mask, every: int) -> list[list[int]]:
    """The real (unmasked) token ids of every `every`-th row: one row per prompt group."""
    return [row[m.bool()].tolist() for row, m in zip(ids[::every], mask[::every])]


def trl_reward_for(rule: str):
    """training/reward.py's score, exactly as our trainer computes it (Trainer._score: correctness, weight 1,
    read by the preset's rule: "answer" for tiny, "last_integer" for a chat preset). A chat prompt's completion
    comes from TRL as a message list, [{"role": "assistant", "content": text}]: its text is scored."""
    from training.reward import score_response, total_reward

    kw = {"rule": rule} if rule != "answer" else {}

    def trl_reward(completions, answer, **kwargs):
        texts = [c[-1]["content"] if isinstance(c, list) else c for c in completions]
        return [total_reward(score_response(t, a, **kw)) for t, a in zip(texts, answer)]

    return trl_reward


class TRLSide:
    def __init__(self, args, out: Path, ours: Ours, between):
        from datasets import Dataset
        from transformers import TrainerCallback
        from trl import GRPOConfig, GRPOTrainer

        from training.model import load_policy

        rl = ours.trainer.rl
        P, G, E, M = rl.prompts_per_step, rl.group_size, rl.epochs, rl.minibatches
        if (P * G) % M:
            raise SystemExit(f"P*G={P * G} is not divisible by minibatches={M}")
        self.U = E * M
        self.total = args.warmup + args.rollouts
        cfg = ours.trainer.cfg
        self.chat = ours.trainer.chat
        # tiny: one forward/backward per optimizer step. A chat preset: ours cuts a minibatch into passes of
        # micro_rows answers (a 49k vocabulary's logits are the memory), so TRL gets the same micro-batches:
        # gradient accumulation over micro_rows-answer passes, one optimizer step per P*G/M answers.
        mb = P * G // M
        micro = min(ours.trainer.micro_rows, mb) if self.chat else mb
        if mb % micro:
            raise SystemExit(f"a minibatch of {mb} answers is not a whole number of {micro}-answer micro-batches")
        GA = mb // micro
        self.mapping = {
            "per_device_train_batch_size": micro, "steps_per_generation": M * GA, "num_iterations": E,
            "gradient_accumulation_steps": GA, "num_generations": G, "generation_batch_size (derived)": P * G,
            "optimizer_steps_per_generation_batch": self.U,
        }
        # benchmarks/gpu_speed.py runs this side on a GPU (args.device "cuda", args.bf16 True: bf16
        # autocast through accelerate, float32 weights, as our GPU path); this script, on the CPU.
        on_cpu = getattr(args, "device", "cpu") == "cpu"
        self.config = GRPOConfig(
            output_dir=str(out), report_to="none", use_cpu=on_cpu, bf16=bool(getattr(args, "bf16", False)), fp16=False,
            gradient_checkpointing=False,  # TRL defaults to True; ours does not checkpoint activations
            per_device_train_batch_size=micro, gradient_accumulation_steps=GA, steps_per_generation=M * GA,
            num_iterations=E, num_generations=G, max_completion_length=rl.max_new_tokens,
            temperature=rl.temperature, top_p=1.0, top_k=0, use_vllm=False, shuffle_dataset=False,
            loss_type="grpo", scale_rewards="group", epsilon=float(cfg.param("clip", "eps")),
            beta=float(cfg.param("kl", "beta")), learning_rate=rl.lr, weight_decay=rl.weight_decay,
            adam_beta1=rl.betas[0], adam_beta2=rl.betas[1], max_grad_norm=rl.grad_clip, optim="adamw_torch",
            lr_scheduler_type="constant", warmup_steps=0, max_steps=self.U * self.total, logging_steps=1,
            save_strategy="no", eval_strategy="no", disable_tqdm=True, log_completions=False, seed=args.seed,
            dataloader_pin_memory=not on_cpu, dataloader_num_workers=0, remove_unused_columns=False,
            model_init_kwargs={"dtype": "float32"},
        )
        # The prompts ours will draw (its prompt_rng: random.Random(seed), P draws per rollout, no filter),
        # in the same order: TRL reads them unshuffled, P per generation batch, so both sides see the same
        # 16 prompts in rollout r.
        # ours' own rows: the RL pool (rl.jsonl) since the task has three pools, not train.jsonl
        rows = ours.trainer.train_rows
        rng = random.Random(args.seed)
        drawn = [rows[rng.randrange(len(rows))] for _ in range(P * self.total)]
        # A chat preset: conversational prompts (its system prompt, the question as the user's), which TRL puts
        # through the same tokenizer's chat template (add_generation_prompt), as ours does; a check compares the
        # token ids both sides fed the model.
        system = ours.trainer.system_prompt
        dataset = Dataset.from_list([{"prompt": r["prompt"] if system is None else
                                      [{"role": "system", "content": system}, {"role": "user", "content": r["prompt"]}],
                                      "answer": r["answer"]} for r in drawn])
        _, tokenizer = load_policy(args.model)  # the same tokenizer (pad token set as ours does)
        side = self

        class Timer(TrainerCallback):
            def on_step_end(self, targs, state, control, **kw):
                if state.global_step % side.U:
                    return
                wall, cpu = side.clock.lap()
                r = state.global_step // side.U - 1
                gen = sum(w for w, _ in side.gen_times[side.gen_mark:])
                gen_cpu = sum(c for _, c in side.gen_times[side.gen_mark:])
                side.gen_mark = len(side.gen_times)
                side.records.append({"measured": r >= args.warmup, "wall_s": wall, "cpu_s": cpu, "gen_s": gen,
                                     "gen_cpu_s": gen_cpu,
                                     "sample_s": sum(w for w, _ in side.sample_times[side.sample_mark:]),
                                     "sample_cpu_s": sum(c for _, c in side.sample_times[side.sample_mark:]),
                                     "update_s": wall - gen, "steps": side.U,
                                     "tokens_instrumented": sum(side.gen_tokens[side.tok_mark:]),
                                     "threads": torch.get_num_threads(), "load1": loadavg()[0]})
                side.tok_mark = len(side.gen_tokens)
                side.sample_mark = len(side.sample_times)
                between(r + 1)  # ours runs here in --order alternate (not part of TRL's time)
                torch.set_num_threads(ARGS_THREADS[0])
                side.clock = Clock()

        self.trainer = GRPOTrainer(model=args.model, reward_funcs=[trl_reward_for(ours.trainer.reward_rule)],
                                   args=self.config,
                                   train_dataset=dataset, processing_class=tokenizer, callbacks=[Timer()])
        self.records: list[dict] = []
        self.gen_times: list[tuple[float, float]] = []
        self.gen_tokens: list[int] = []
        self.gen_prompts: list[list[str]] = []
        self.prompt_ids: list[list[list[int]]] = []
        self.sample_times: list[tuple[float, float]] = []
        self.gen_mark = self.tok_mark = self.sample_mark = 0
        original = self.trainer._generate_and_score_completions

        def timed(inputs):
            clock = Clock()
            out = original(inputs)
            self.gen_times.append(clock.lap())
            self.gen_tokens.append(int(out["completion_mask"].sum()))
            # each prompt comes G times in a row; a conversational one is compared by its question
            self.gen_prompts.append([x["prompt"][-1]["content"] if isinstance(x["prompt"], list) else x["prompt"]
                                     for x in inputs[::G]])
            self.prompt_ids.append(unpadded(out["prompt_ids"].cpu(), out["prompt_mask"].cpu(), G))
            return out

        self.trainer._generate_and_score_completions = timed
        generate = self.trainer._generate

        def sampled(prompts):  # TRL's sampling alone (tokenizing, model.generate, decoding), as ours' _sample_rollout
            clock = Clock()
            out = generate(prompts)
            self.sample_times.append(clock.lap())
            return out

        self.trainer._generate = sampled

    def run(self) -> None:
        torch.set_num_threads(ARGS_THREADS[0])
        self.clock = Clock()
        self.trainer.train()
        # One completions/mean_length per generation batch (logging_steps=1, metrics cleared after each log).
        means = [h["completions/mean_length"] for h in self.trainer.state.log_history
                 if h.get("completions/mean_length") is not None]
        n = self.mapping["generation_batch_size (derived)"]
        for rec, mean in zip(self.records, means):
            rec["tokens"] = round(mean * n)
            rec["responses"] = n
        for rec in self.records[len(means):]:
            rec["tokens"] = None


ARGS_THREADS = [1]


# ---------------------------------------------------------------------------
# Report
# ---------------------------------------------------------------------------

def summarize(records: list[dict]) -> dict:
    m = [r for r in records if r["measured"]]
    wall = sum(r["wall_s"] for r in m)
    cpu = sum(r["cpu_s"] for r in m)
    gen = sum(r["gen_s"] for r in m)
    gen_cpu = sum(r["gen_cpu_s"] for r in m)
    steps = sum(r["steps"] for r in m)
    tokens = sum(r["tokens"] for r in m) if all(r.get("tokens") is not None for r in m) else None
    n = len(m)
    return {
        "rollouts": n, "optimizer_steps": steps, "generated_tokens": tokens,
        "generated_tokens_instrumented": sum(r["tokens_instrumented"] for r in m),
        "tokens_per_response": round(tokens / sum(r["responses"] for r in m), 2) if tokens else None,
        "wall_s": round(wall, 2), "cpu_s": round(cpu, 2),
        "steps_per_s": steps / wall, "rollouts_per_s": n / wall,
        "generated_tokens_per_s": tokens / wall if tokens else None,
        "s_per_rollout": wall / n, "s_per_rollout_median": statistics.median(r["wall_s"] for r in m),
        "s_per_rollout_gen": gen / n, "s_per_rollout_sample": sum(r["sample_s"] for r in m) / n,
        "s_per_rollout_update": (wall - gen) / n,
        "s_per_step": wall / steps, "s_per_step_gen": gen / steps, "s_per_step_update": (wall - gen) / steps,
        "cpu_s_per_rollout": cpu / n, "cpu_s_per_rollout_gen": gen_cpu / n,
        "cpu_s_per_rollout_sample": sum(r["sample_cpu_s"] for r in m) / n,
        "cpu_s_per_rollout_update": (cpu - gen_cpu) / n,
        "steps_per_cpu_s": steps / cpu, "generated_tokens_per_cpu_s": tokens / cpu if tokens else None,
        "threads_seen": sorted({r["threads"] for r in m}),
    }


ROWS = [
    ("optimizer steps/s", "steps_per_s", "{:.3f}"),
    ("rollouts/s", "rollouts_per_s", "{:.4f}"),
    ("generated tokens/s", "generated_tokens_per_s", "{:.1f}"),
    ("s/rollout (wall)", "s_per_rollout", "{:.2f}"),
    ("  generation", "s_per_rollout_gen", "{:.2f}"),
    ("    sampling", "s_per_rollout_sample", "{:.2f}"),
    ("  update", "s_per_rollout_update", "{:.2f}"),
    ("s/rollout median", "s_per_rollout_median", "{:.2f}"),
    ("s/optimizer step", "s_per_step", "{:.3f}"),
    ("  generation share", "s_per_step_gen", "{:.3f}"),
    ("  update", "s_per_step_update", "{:.3f}"),
    ("CPU s/rollout", "cpu_s_per_rollout", "{:.2f}"),
    ("  generation", "cpu_s_per_rollout_gen", "{:.2f}"),
    ("    sampling", "cpu_s_per_rollout_sample", "{:.2f}"),
    ("  update", "cpu_s_per_rollout_update", "{:.2f}"),
    ("optimizer steps/CPU s", "steps_per_cpu_s", "{:.3f}"),
    ("generated tokens/CPU s", "generated_tokens_per_cpu_s", "{:.1f}"),
    ("tokens/response", "tokens_per_response", "{:.2f}"),
]


def table(ours: dict, trl: dict) -> str:
    lines = [f"{'':26} {'ours':>10} {'TRL':>10} {'ours/TRL':>9}"]
    for label, key, fmt in ROWS:
        a, b = ours.get(key), trl.get(key)
        ratio = f"{a / b:.2f}" if a is not None and b else "-"
        lines.append(f"{label:26} {fmt.format(a) if a is not None else '-':>10} "
                     f"{fmt.format(b) if b is not None else '-':>10} {ratio:>9}")
    return "\n".join(lines)


def main(args) -> dict:
    import shutil

    import transformers
    import trl

    ARGS_THREADS[0] = args.threads
    started = datetime.now(timezone.utc)
    load_start, busy_start = loadavg(), busy_trainers()
    keep = Path(args.keep_runs) if args.keep_runs else None
    root = keep or Path(tempfile.mkdtemp(prefix="trainer_speed_"))
    root.mkdir(parents=True, exist_ok=True)
    setup = Clock()
    ours = Ours(args, root / "ours")
    ours_setup = setup.lap()[0]

    def between(next_ours_rollout: int):
        if args.order == "alternate" and next_ours_rollout < args.warmup + args.rollouts:
            ours.rollout(measured=next_ours_rollout >= args.warmup)

    setup = Clock()
    theirs = TRLSide(args, root / "trl", ours, between)
    trl_setup = setup.lap()[0]
    torch.set_num_threads(args.threads)

    print(f"trainer_speed: {args.rollouts} measured rollouts each after {args.warmup} warm-up, threads {args.threads}, "
          f"order {args.order}, OMP_WAIT_POLICY={OMP_POLICY}, load {load_start}",
          file=sys.stderr)
    if args.order == "alternate":
        ours.rollout(measured=args.warmup == 0)  # ours' first rollout; the rest run between TRL's
    else:
        for r in range(args.warmup + args.rollouts):
            ours.rollout(measured=r >= args.warmup)
    theirs.run()
    load_end, busy_end = loadavg(), busy_trainers()

    s_ours, s_trl = summarize(ours.records), summarize(theirs.records)
    checks = {
        "ours_tokens_logged_equal_instrumented": s_ours["generated_tokens"] == s_ours["generated_tokens_instrumented"],
        "trl_tokens_logged_equal_instrumented": s_trl["generated_tokens"] == s_trl["generated_tokens_instrumented"],
        "ours_token_detail_on_every_update": all(r["token_detail_steps"] == r["steps"] for r in ours.records),
        "same_prompts_each_rollout": ours.sampled_prompts == theirs.gen_prompts,
        "same_prompt_token_ids_each_rollout": ours.prompt_ids == theirs.prompt_ids,
    }
    run_dir_bytes = sum(p.stat().st_size for p in (root / "ours").rglob("*") if p.is_file())
    rl = ours.trainer.rl
    result = {
        "benchmark": "trainer_speed", "date": started.isoformat(timespec="seconds"),
        "finished": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "command": "python " + " ".join([Path(sys.argv[0]).as_posix(), *sys.argv[1:]]),
        "machine": {"cpu": platform.processor() or platform.machine(), "cores": os.cpu_count(),
                    "loadavg_start": load_start, "loadavg_end": load_end,
                    "other_unipo_train_processes_start": busy_start, "other_unipo_train_processes_end": busy_end,
                    "nice": os.nice(0)},
        "settings": {
            "preset": args.preset, "model": os.path.relpath(args.model, REPO), "algorithm": "grpo",
            "threads": args.threads, "OMP_WAIT_POLICY": OMP_POLICY,
            "order": args.order, "warmup_rollouts_excluded": args.warmup, "measured_rollouts": args.rollouts,
            "prompts_per_rollout": rl.prompts_per_step, "group_size": rl.group_size,
            "max_new_tokens": rl.max_new_tokens, "temperature": rl.temperature, "lr": rl.lr,
            "prompt_tokens": sorted({len(ids) for r in ours.prompt_ids for ids in r}),
            "chat": ({"system_prompt": ours.trainer.system_prompt, "reward_rule": ours.trainer.reward_rule,
                      "prompts": "ours: the chat template via training/generation.py prompt_ids; TRL: conversational "
                                 "[system, user] messages through the same tokenizer's template"}
                     if ours.trainer.chat else None),
            "ours": {"epochs": rl.epochs, "minibatches": rl.minibatches, "detail_every": rl.detail_every,
                     "micro_rows": ours.trainer.micro_rows,
                     "old_logprobs_from_first_update": bool(getattr(ours.trainer, "fused_old_logprobs", False)),
                     "detail_groups": rl.detail_groups, "kl": "k3 in loss, beta 0.04 (grpo spec)",
                     "sampler_lag": rl.sampler_lag,
                     "run_dir_bytes": run_dir_bytes},
            "trl": {**theirs.mapping, "loss_type": "grpo", "beta": theirs.config.beta, "epsilon": theirs.config.epsilon,
                    "scale_rewards": theirs.config.scale_rewards, "bf16": theirs.config.bf16,
                    "gradient_checkpointing": theirs.config.gradient_checkpointing, "use_vllm": False,
                    "top_k": theirs.config.top_k, "top_p": theirs.config.top_p},
            "excluded": "model/tokenizer loads, TRL reference model, dataset, optimizer creation "
                        f"(setup: ours {ours_setup:.1f} s, TRL {trl_setup:.1f} s) and the first {args.warmup} "
                        "rollout(s) of each side; no periodic evaluation or checkpoints on either side",
        },
        "software": {"python": platform.python_version(), "torch": torch.__version__,
                     "transformers": transformers.__version__, "trl": trl.__version__},
        "ours": s_ours, "trl": s_trl,
        "ratio_ours_over_trl": {k: (s_ours[k] / s_trl[k] if s_ours.get(k) and s_trl.get(k) else None)
                                for k in ("steps_per_s", "rollouts_per_s", "generated_tokens_per_s",
                                          "s_per_rollout_gen", "s_per_rollout_update", "steps_per_cpu_s",
                                          "generated_tokens_per_cpu_s", "cpu_s_per_rollout_gen",
                                          "cpu_s_per_rollout_update")},
        "checks": checks,
        "per_rollout": {"ours": ours.records, "trl": theirs.records},
    }
    print()
    print(f"{rl.prompts_per_step} prompts x {rl.group_size} generations per rollout, max {rl.max_new_tokens} new "
          f"tokens, T={rl.temperature}; {ours.updates_per_rollout} optimizer steps of "
          f"{rl.prompts_per_step * rl.group_size // rl.minibatches} completions per rollout on both sides")
    print(f"TRL mapping: per_device_train_batch_size={theirs.mapping['per_device_train_batch_size']}, "
          f"steps_per_generation={theirs.mapping['steps_per_generation']}, num_iterations="
          f"{theirs.mapping['num_iterations']}, gradient_accumulation_steps="
          f"{theirs.mapping['gradient_accumulation_steps']} -> "
          f"{theirs.U} optimizer steps per generation batch of {theirs.mapping['generation_batch_size (derived)']}")
    print(f"threads {args.threads}, OMP_WAIT_POLICY {result['settings']['OMP_WAIT_POLICY']}, order {args.order}, "
          f"{args.rollouts} measured rollouts each (setup and {args.warmup} warm-up rollout(s) excluded)")
    print(f"load average start {load_start}, end {load_end}; other `unipo train` processes: {busy_start} -> {busy_end}")
    print()
    print(table(s_ours, s_trl))
    print()
    print("checks:", ", ".join(f"{k}={v}" for k, v in checks.items()))
    path = Path(args.json)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {path}")
    if keep is None:
        shutil.rmtree(root, ignore_errors=True)
    return result


if __name__ == "__main__":
    main(ARGS)
