"""A real TRL GRPOTrainer run on CPU with the UNIPO token tap, for the TRL import tests.

The policy is a tiny random LlamaForCausalLM with the project's task tokenizer (the ``tiny`` preset's
shape, as tests/training_fixtures.py builds it); the prompts are the generated task's. A random policy
never answers right, so beside the correctness reward a second reward function scores each completion
by a hash of its text: groups then have mixed rewards and non-zero advantages, while every path of
TRL's trainer (generation, rewards, advantages, old and reference log-probs, loss) runs for real.
"""

from __future__ import annotations

import sys
import zlib
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
STUBS = str(REPO / "tests" / "openrlhf_stubs")


def import_grpo_trainer():
    """TRL's GRPOTrainer module, imported with the OpenRLHF tests' import stubs out of sight.

    Those tests put stand-ins for vllm and flash_attn on sys.path (tests/openrlhf_stubs); TRL takes any
    module it finds named vllm for the real one and imports its submodules when its trainer module loads.
    The stubs are hidden for that one import and put back; the trainer module then stays in sys.modules.
    """
    saved_path = list(sys.path)
    hidden = {name: mod for name, mod in sys.modules.items()
              if str(getattr(mod, "__file__", None) or "").startswith(STUBS)}
    sys.path[:] = [p for p in sys.path if p != STUBS]
    for name in hidden:
        del sys.modules[name]
    try:
        import trl.trainer.grpo_trainer as grpo_trainer
    finally:
        sys.path[:] = saved_path
        sys.modules.update(hidden)
    return grpo_trainer


def correct_reward(prompts, completions, answer, **kwargs) -> list[float]:
    from training.reward import score_response

    return [score_response(c, a)["correct"] for c, a in zip(completions, answer)]


def coin_reward(prompts, completions, **kwargs) -> list[float]:
    return [float(zlib.crc32(c.encode()) % 2) for c in completions]


def run_trl(out: Path, *, loss_type: str = "grpo", beta: float = 0.04, num_iterations: int = 2,
            max_steps: int = 3, groups: int | None = None, every: int = 1, tap: bool = True,
            mask_truncated_completions: bool = False, epsilon_high: float | None = None,
            scale_rewards: str = "group", importance_sampling_level: str = "token",
            max_completion_length: int = 12, use_bias_correction_kl: bool = False, seed: int = 0,
            logging_steps: int = 1, eval_rows: int = 0, **config) -> tuple[Path, Path]:
    """Train for ``max_steps`` optimizer steps; returns (TRL's output_dir, the tap directory). ``config``: any
    other GRPOConfig field (sapo_temperature_pos, eval_strategy, ...). ``eval_rows``: an eval_dataset of that many
    task prompts, none of them among the training ones."""
    import torch
    from datasets import Dataset

    import_grpo_trainer()
    from trl import GRPOConfig, GRPOTrainer

    from training.model import build_model
    from training.task import load_task
    from training.tokenizer import save_tokenizer, task_corpus, train_tokenizer
    from unipo_build.trainers.trl.tap import TrlTokenTap

    torch.manual_seed(seed)
    rows = load_task(REPO / "data" / "tasks" / "train.jsonl")[:400]
    tokenizer = train_tokenizer(task_corpus(rows))
    model = build_model("tiny", len(tokenizer), seed=seed, pad_token_id=tokenizer.pad_token_id,
                        bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id)
    # TRL loads the reference model from the policy's path (beta > 0): the policy is saved first.
    policy = out / "policy"
    model.save_pretrained(policy)
    save_tokenizer(tokenizer, policy)
    dataset = Dataset.from_list([{"prompt": r["prompt"], "answer": r["answer"]} for r in rows[:64]])
    evaluation = (Dataset.from_list([{"prompt": r["prompt"], "answer": r["answer"]} for r in rows[100:100 + eval_rows]])
                  if eval_rows else None)
    output_dir, tap_dir = out / "trl-output", out / "tap"
    args = GRPOConfig(
        output_dir=str(output_dir), use_cpu=True, report_to=[], logging_steps=logging_steps, save_strategy="no",
        max_steps=max_steps, per_device_train_batch_size=4, gradient_accumulation_steps=2, num_generations=4,
        max_completion_length=max_completion_length, learning_rate=3e-3, beta=beta, num_iterations=num_iterations,
        loss_type=loss_type, epsilon_high=epsilon_high, scale_rewards=scale_rewards,
        importance_sampling_level=importance_sampling_level,
        mask_truncated_completions=mask_truncated_completions, use_bias_correction_kl=use_bias_correction_kl,
        reward_weights=[1.0, 0.5], seed=seed,
        dataloader_num_workers=0, disable_tqdm=True, **config)
    trainer = GRPOTrainer(model=str(policy), reward_funcs=[correct_reward, coin_reward], args=args,
                          train_dataset=dataset, eval_dataset=evaluation, processing_class=tokenizer)
    if tap:
        TrlTokenTap(tap_dir, every=every, groups=groups).install(trainer)
    trainer.train()
    trainer.save_state()
    return output_dir, tap_dir


#: The recorded fixtures (tests/fixtures/trl): the run the import tests read, and two foreign runs whose
#: taps must not join it: the same settings with another seed, and the same seed with loss_type bnpo.
#: gaps: the batch std of scale_rewards='batch' and masked truncated completions (once settings without a kind;
#: now the group_mean_batch_std and mask_truncated kinds).
#: cispo, sapo: the two loss types whose clip slot has another form (CISPO's cap 1.02 binds on this run; SAPO's
#: negative temperature is not its default, so the mapping of each is seen).
FIXTURE_RUNS = {"run1": {}, "seed1": {"seed": 1}, "bnpo": {"loss_type": "bnpo"},
                "gaps": {"scale_rewards": "batch", "mask_truncated_completions": True, "max_completion_length": 6},
                "cispo": {"loss_type": "cispo", "epsilon_high": 1.02},
                "sapo": {"loss_type": "sapo", "sapo_temperature_neg": 1.3}}


if __name__ == "__main__":
    # Regenerates tests/fixtures/trl: python tests/trl_support.py tests/fixtures/trl
    # (NAME and NAME-tap for each of FIXTURE_RUNS: trainer_state.json and the tap directory; names after the
    # directory: only those)
    import shutil
    import tempfile

    dest = Path(sys.argv[1])
    for name, settings in FIXTURE_RUNS.items():
        if sys.argv[2:] and name not in sys.argv[2:]:
            continue
        with tempfile.TemporaryDirectory() as tmp:
            output_dir, tap_dir = run_trl(Path(tmp), groups=1, **settings)
            (dest / name).mkdir(parents=True, exist_ok=True)
            shutil.copy(output_dir / "trainer_state.json", dest / name / "trainer_state.json")
            shutil.rmtree(dest / f"{name}-tap", ignore_errors=True)
            shutil.copytree(tap_dir, dest / f"{name}-tap")
