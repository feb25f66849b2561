"""Size presets: the model, the SFT warm start and the RL loop's hyperparameters, in one place.

``tiny`` is calibrated on 2 CPU cores (shared/FEASIBILITY.md): a ~1M-parameter Llama, SFT at batch 64
and lr 1.5e-3 for about 1000 steps (~4.5 min) lands at ~43% greedy / ~38% sampled held-out accuracy,
which leaves RL room to learn; GRPO at lr 1e-4 with 16 prompts x G=8 and 2 minibatches per rollout
improved held-out accuracy by ~9 points in 800 steps, while lr 3e-4 collapsed. We use 2 epochs per
rollout so that ratio clipping actually happens (with 1 epoch only the second minibatch is off-policy).

``gpu`` (one large GPU) is sized from FLOP estimates, not measured: treat its numbers as a start.

Presets are frozen dataclasses: derive variants with ``dataclasses.replace``. They live in the
core because the site shows them (the OpenRLHF commands of the guide) and never imports ``training``;
``training.presets`` re-exports them for the trainer.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace


@dataclass(frozen=True)
class ModelPreset:
    """A LlamaForCausalLM shape (transformers LlamaConfig names in the comments)."""

    hidden_size: int = 128  # hidden_size
    num_layers: int = 4  # num_hidden_layers
    num_heads: int = 4  # num_attention_heads (= num_key_value_heads: plain multi-head attention)
    intermediate_size: int = 512  # SwiGLU MLP width
    max_position_embeddings: int = 256  # prompt (<= 27 tokens) + response (<= 96) fits
    tie_word_embeddings: bool = True  # the embedding is ~1% of the model; tying keeps it honest
    rope_theta: float = 10_000.0


@dataclass(frozen=True)
class SFTPreset:
    """Supervised warm start on worked solutions (loss on the completion only)."""

    batch_size: int = 64
    lr: float = 1.5e-3
    warmup_steps: int = 100
    max_steps: int = 2400  # the schedule's length: warmup, then cosine to min_lr_ratio
    min_lr_ratio: float = 0.1  # cosine decays to 10% of lr at max_steps
    weight_decay: float = 0.01  # torch AdamW default, as in the calibration run
    betas: tuple[float, float] = (0.9, 0.999)
    grad_clip: float = 1.0
    eval_every: int = 200
    eval_n: int = 500  # problems per periodic eval (+-2.2 points); the final eval uses the full set
    # The stop rule: stop at the first periodic eval whose greedy accuracy reaches this, else at
    # max_steps (None: train the calibrated step count max_steps). The periodic eval scores the
    # first eval_n prompts of the RL pool (rl.jsonl): RL's own prompt distribution, never trained
    # on, so the target is the accuracy RL starts from, and the held-out set stays out of every
    # decision (its start accuracy is then an honest estimate). A task without an RL pool (version
    # 2) falls back to the held-out set's first eval_n rows. Tiny: calibrated to the shipped warm
    # start, whose whole 2,400-step schedule left it at about 29% greedy held-out (data/runs/*/
    # evals.jsonl, phase start), so the rule stops there or sooner.
    stop_greedy_accuracy: float | None = 0.29
    max_new_tokens: int = 96
    eval_batch_size: int = 500


@dataclass(frozen=True)
class RLPreset:
    """What the RL loop reads. The objective itself (clip eps, KL beta, ...) comes from the spec."""

    prompts_per_step: int = 16  # prompts per rollout
    group_size: int = 8  # G samples per prompt
    # The longest worked solution (a two-digit coins problem in column style) is 90 tokens with
    # <eos>; the warm start's median answer is about a fifth of the budget, and only its longest
    # answers reach DAPO's overlong band (the last fifth).
    max_new_tokens: int = 96
    temperature: float = 1.0  # logp is always of the temperature-scaled distribution
    lr: float = 1e-4
    weight_decay: float = 0.0
    betas: tuple[float, float] = (0.9, 0.999)
    grad_clip: float = 1.0
    # Passes over each rollout and optimizer steps per pass (a spec's defaults take precedence).
    # The second pass is off-policy: each token has already been pushed by its own gradient, so
    # ratios leave 1 and clipping shows. One minibatch per pass keeps a run at two logged steps per
    # rollout (measured on the GPU: held-out accuracy per rollout as with 2 x 2 or 1 x 4).
    epochs: int = 2
    minibatches: int = 1
    # Rows per forward/backward pass: a minibatch is cut into chunks of similar answer length, so a
    # pass pays for its own longest answer; the gradients add up to the minibatch's (exact).
    micro_rows: int = 32
    # On a CUDA GPU (training/rl.py's Trainer decides; the CPU path above is unchanged):
    # - precision "auto" runs the policy's forward passes (sampling, old/reference log-probs, updates)
    #   under bf16 autocast, with the output projection, log-softmax and log-probs in float32; "fp32"
    #   keeps float32 there too; "bf16" takes this whole GPU path on any device, the CPU included
    #   (the tests run it that way; CPU autocast to bf16 works).
    # - cuda_micro_rows replaces micro_rows: a GPU needs thousands of tokens per pass to be busy, and
    #   the run must stay under 8 GB so that 8 share an 80 GB GPU. The gpu preset's saved activations
    #   are about 280 KB per token under autocast (8 layers of width 512, float32 residual stream), so
    #   128 answers of up to 96 tokens (plus about 25 of prompt) keep a pass under 4.5 GB beside the
    #   sampler's 2 GB cache; 256 would reach about 9 GB when every answer runs to the budget.
    # - cuda_graphs: sample with a static, preallocated KV cache whose decoding step is one CUDA
    #   graph replay (training/llama_decode.py); False keeps the CPU's loop.
    # - cuda_micro_tokens (None: rows alone): a pass also ends before its rows x (prompt width + its
    #   longest answer) would pass this many tokens (training/batches.py length_chunks), so memory is
    #   bounded by tokens while short answers share larger passes.
    precision: str = "auto"
    cuda_micro_rows: int = 128
    cuda_micro_tokens: int | None = None
    cuda_graphs: bool = True
    steps: int = 300  # rollouts
    eval_every: int = 50  # held-out eval at the start, every eval_every rollouts and at the end
    eval_n: int = 1500  # start and end: the whole held-out set
    eval_periodic_n: int = 500  # periodic: its first 500 rows, the same every time
    eval_greedy: bool = True
    eval_sampled: bool = True
    probe_prompts: int = 64  # length probe of the starting policy (run header); 0 skips it
    # Token-level detail in the run log: this many prompt groups (all G responses each) on every
    # update of rollout 0, of every detail_every-th rollout and of the last one (0: none;
    # training/rl.py's Trainer._wants_detail applies the rule).
    detail_groups: int = 4
    detail_every: int = 25
    # A step file's size limit in bytes (None: none): groups are taken in the order of choice while
    # the file stays within it, one group at least (unipo_build/core/step_budget.py). The site
    # fetches a step's file when the step is opened: benchmarks/page_budget.py's 300 KB.
    detail_bytes: int | None = None
    # Asynchronous sampling (training/stale.py): rollout r is sampled by the policy as it was at the
    # start of rollout r - sampler_lag, as an inference engine that runs ahead of the learner
    # (prime-rl's max_off_policy_steps bounds it; AReaL) would; 0 samples with the current policy.
    sampler_lag: int = 0
    seed: int = 0


@dataclass(frozen=True)
class ChatPreset:
    """A pretrained chat model fine-tuned as it comes (no warm start here): where its checkpoint is, how a
    question is put to it and how its answer is read. Not an RLPreset field: the run header's hyperparameters
    are the RLPreset's fields, and the tiny and gpu presets' headers stay as they were."""

    model: str  # `unipo model <model>` makes the checkpoint (training/pretrained.py MODELS)
    checkpoint: str  # where that command saves it, relative to the project (under work/: never in git)
    # Prompts go through the tokenizer's chat template: this system message, then the question as the user's.
    system_prompt: str = "Answer with only the final number."
    # How an answer is read (training/reward.py REWARD_RULES): the last number of the answer, since a chat
    # model does not write the task's "Answer: N" (shared/FEASIBILITY.md: 0 of 64 answers did).
    reward_rule: str = "last_integer"
    # Problems decoded at once in an evaluation: a 134.5M-parameter model's cache for 500 answers is GBs.
    eval_batch_size: int = 64


@dataclass(frozen=True)
class Preset:
    name: str
    model: ModelPreset = field(default_factory=ModelPreset)
    sft: SFTPreset = field(default_factory=SFTPreset)
    rl: RLPreset = field(default_factory=RLPreset)
    threads: int = 2  # torch.set_num_threads: the calibration machine has 2 cores
    task_dir: str = "data/tasks"
    # The task level (training/task.py TASK_LEVELS) the preset's task directory is generated at
    # (`python -m training.task --out <task_dir> --level <task_level>`; `unipo suite` makes it when
    # missing).
    task_level: str = "tiny"
    # A preset only a CUDA GPU can run in reasonable time: `unipo suite` refuses it on a machine
    # without one before writing anything.
    needs_cuda: bool = False
    # A pretrained chat model (None: a model trained here from scratch, after an SFT warm start).
    chat: ChatPreset | None = None
    # True: the preset's epochs and minibatches hold whatever a spec's defaults say (False: the spec's win, as
    # they do for tiny and gpu). smollm2's budget is one update per rollout of a 134.5M-parameter model on CPU.
    fixed_passes: bool = False


TINY = Preset(name="tiny")

GPU = Preset(
    name="gpu",
    model=ModelPreset(hidden_size=512, num_layers=8, num_heads=8, intermediate_size=2048),
    # Target 35% greedy: the middle of the 25-45% band issue 20 asks of the gpu warm start.
    sft=SFTPreset(batch_size=256, lr=6e-4, warmup_steps=200, max_steps=4000, eval_every=100, eval_n=1000,
                  eval_batch_size=1000, stop_greedy_accuracy=0.35),
    # Passes of up to 256 rows and 8,192 tokens: about 2.3 GB of saved activations at most (280 KB
    # a token; 128 rows of the longest answers took 4.5 GB), so that 19 runs share one H200
    # (139 GiB) beside their 2 GB decoding caches, and rollouts of short answers take larger passes. Groups of 16 answers make
    # four detailed groups reach 440 KB: the step files keep to the site's 300 KB.
    rl=RLPreset(prompts_per_step=64, group_size=16, lr=2e-5, steps=500, eval_every=50, detail_every=10,
                cuda_micro_rows=256, cuda_micro_tokens=8_192, detail_bytes=300_000),
    task_dir="data/tasks-gpu",
    task_level="gpu",
    needs_cuda=True,
)

# SmolLM2-135M-Instruct (134.5M parameters, pretrained; `unipo model smollm2` makes its checkpoint) on "What
# is a + b?" / "a - b" with operands 2-40, the shape of the CPU prototype (shared/FEASIBILITY.md, "Prototype: a
# real pretrained model, offline": 18.8% greedy at the start, 54.7% after 30 rollouts of 4 x 8 answers of plain
# GRPO at lr 1e-5, temperature 0.8). 128 new tokens, not the prototype's 64: the model explains before it
# answers, and at 64 tokens 40 of the first 64 held-out greedy answers were cut off before their number (7.8%
# right); at 128, 2 of 64 were, and 20.3% were right (2026-11-29; training/task.py's smollm2 level). 8 prompts x
# 8 answers, one update per rollout (the ratio stays 1 unless a spec asks for more), micro-batches of 16 answers
# (logits over a 49k vocabulary are the memory). 40 rollouts: 2,560 answers, 2.7 times the prototype's 960 that
# gained 36 points. On the 2-core machine with one thread, loaded, a rollout took 76 s to sample and 85 s to
# update, and an evaluation of 64 problems (greedy and sampled) about 2 minutes. The model section is unused
# (the checkpoint brings its own shape), and so is sft: there is no warm start.
SMOLLM2 = Preset(
    name="smollm2",
    rl=RLPreset(prompts_per_step=8, group_size=8, max_new_tokens=128, temperature=0.8, lr=1e-5, epochs=1,
                minibatches=1, micro_rows=16, steps=40, eval_every=10, eval_n=1000, eval_periodic_n=200,
                probe_prompts=16, detail_groups=4, detail_every=10),
    task_dir="data/tasks-smollm2",
    task_level="smollm2",
    chat=ChatPreset(model="smollm2", checkpoint="work/models/smollm2-135m-instruct"),
    fixed_passes=True,
)

PRESETS: dict[str, Preset] = {p.name: p for p in (TINY, GPU, SMOLLM2)}


def get_preset(preset: str | Preset) -> Preset:
    """A preset by name (or the preset itself, so callers may pass a `replace`d variant)."""
    if isinstance(preset, Preset):
        return preset
    try:
        return PRESETS[preset]
    except KeyError:
        raise ValueError(f"unknown preset {preset!r}; choose from {sorted(PRESETS)}") from None


def with_overrides(preset: Preset, **sections: dict) -> Preset:
    """E.g. ``with_overrides(TINY, sft={"max_steps": 5}, rl={"lr": 5e-5})``."""
    changes = {name: replace(getattr(preset, name), **values) for name, values in sections.items()}
    return replace(preset, **changes)


#: The trainer's reward: weight of each scored component (training/reward.py adds them up; the
#: format component is logged but not rewarded by default). Here, not in training/, because the
#: playgrounds quote them.
REWARD_WEIGHTS: dict[str, float] = {"correct": 1.0, "format": 0.0}
