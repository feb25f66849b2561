"""Write verl and prime-rl runs in the exact on-disk formats their own code writes.

Each writer mirrors one upstream code path (the file and function named beside it; none of their
code is copied here): the same file names, the same JSON encoding options, the same keys in the
same order. ``python tests/trainer_formats.py`` rewrites tests/fixtures/verl and
tests/fixtures/prime_rl (small runs whose numbers the tests work by hand);
benchmarks/trainer_logs.py writes large ones through the same functions, streamed.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Iterable

import yaml

ROOT = Path(__file__).resolve().parents[1]

# ---------------------------------------------------------------------------
# verl 0.8.0.dev
# ---------------------------------------------------------------------------

VERL_CONFIG = {
    # The keys Hydra resolves into .hydra/config.yaml (verl/trainer/config/ppo_trainer.yaml) that the importer reads.
    "data": {"train_files": "~/data/gsm8k/train.parquet", "train_batch_size": 2, "max_response_length": 16,
             "seed": 1},
    "actor_rollout_ref": {
        "model": {"path": "Qwen/Qwen2.5-0.5B-Instruct"},
        "actor": {"ppo_mini_batch_size": 2, "ppo_epochs": 1, "clip_ratio": 0.2, "clip_ratio_low": 0.2,
                  "clip_ratio_high": 0.2, "clip_ratio_c": 3.0, "loss_agg_mode": "seq-mean-token-mean",
                  "use_kl_loss": True, "kl_loss_coef": 0.04, "kl_loss_type": "low_var_kl", "grad_clip": 1.0,
                  "policy_loss": {"loss_mode": "vanilla"}, "optim": {"lr": 1e-6}},
        "rollout": {"n": 2, "temperature": 1.0, "val_kwargs": {"do_sample": False, "temperature": 0, "n": 1}},
    },
    "algorithm": {"adv_estimator": "grpo", "norm_adv_by_std_in_grpo": True, "use_kl_in_reward": False,
                  "kl_penalty": "kl", "kl_ctrl": {"type": "fixed", "kl_coef": 0.001}, "gamma": 1.0, "lam": 1.0},
    "trainer": {"project_name": "unipo_fixture", "experiment_name": "verl_grpo", "logger": ["console", "file"],
                "total_training_steps": 3, "test_freq": 3, "rollout_data_dir": "rollout_data",
                "validation_data_dir": "validation_data"},
}


def verl_config(run: Path, config: dict = VERL_CONFIG) -> None:
    """Hydra's resolved config, as hydra.core.utils.run_job saves it (OmegaConf.to_yaml)."""
    (run / ".hydra").mkdir(parents=True, exist_ok=True)
    (run / ".hydra" / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))


class VerlFileLogger:
    """verl/utils/tracking.py, FileLogger: ``{"step", "data"}`` per log call, orjson (compact), unbuffered."""

    def __init__(self, run: Path, project: str, experiment: str):
        directory = run / project
        directory.mkdir(parents=True, exist_ok=True)
        self.fp = (directory / f"{experiment}.jsonl").open("wb", buffering=0)

    def log(self, data: dict, step: int) -> None:
        # orjson writes NaN as null and no spaces
        clean = {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in data.items()}
        self.fp.write(json.dumps({"step": step, "data": clean}, separators=(",", ":"), ensure_ascii=False).encode() + b"\n")

    def close(self) -> None:
        self.fp.close()


def verl_console_line(data: dict, step: int, prefix: str = "(TaskRunner pid=4242) ") -> str:
    """verl/utils/logger/aggregate_logger.py, concat_dict_to_str (LocalLogger.log prints it), as Ray's driver
    shows it: ``step:N - key:pformat(value) - ...``, numbers only."""
    import numbers
    import pprint

    parts = [f"step:{step}"] + [f"{k}:{pprint.pformat(v)}" for k, v in data.items() if isinstance(v, numbers.Number)]
    return prefix + " - ".join(parts)


def verl_dump_generations(dump_dir: Path, step: int, inputs: list[str], outputs: list[str], gts: list,
                          scores: list[float], extra: dict[str, list]) -> None:
    """verl/trainer/ppo/ray_trainer.py, RayPPOTrainer._dump_generations: ``<step>.jsonl``."""
    dump_dir.mkdir(parents=True, exist_ok=True)
    n = len(inputs)
    base = {"input": inputs, "output": outputs, "gts": gts, "score": scores, "step": [step] * n}
    for k, v in extra.items():
        if len(v) == n:
            base[k] = v
    lines = [json.dumps({k: v[i] for k, v in base.items()}, ensure_ascii=False) for i in range(n)]
    (dump_dir / f"{step}.jsonl").write_text("\n".join(lines) + "\n")


def write_verl_fixture(run: Path) -> None:
    """Three GRPO steps of 2 prompts x 2 samples, validation before training and after the last step."""
    verl_config(run)
    log = VerlFileLogger(run, "unipo_fixture", "verl_grpo")
    log.log({"val-core/gsm8k/reward/mean@1": 0.5}, step=0)  # _validate before training (val_before_train)
    verl_dump_generations(run / "validation_data", 0, ["Q3", "Q4"], ["#### 7", "#### 2"], ["7", "9"], [1.0, 0.0],
                          {"reward": [1.0, 0.0], "acc": [True, False]})
    # step 1: Q1 (1, 0), Q2 (1, 1): zero-variance 1/2, all-correct 1/2, all-wrong 0, accuracy 3/4
    # step 2: Q1 (0, 0), Q2 (1, 0): zero-variance 1/2, all-correct 0, all-wrong 1/2, accuracy 1/4
    # step 3: Q1 (1, 1), Q2 (1, 1): zero-variance 1, all-correct 1, all-wrong 0, accuracy 1
    steps = {1: [1, 0, 1, 1], 2: [0, 0, 1, 0], 3: [1, 1, 1, 1]}
    for step, scores in steps.items():
        verl_dump_generations(run / "rollout_data", step, ["Q1", "Q1", "Q2", "Q2"],
                              [f"#### {s}" for s in scores], ["1", "1", "1", "1"], [float(s) for s in scores],
                              {"acc": [bool(s) for s in scores], "pred": [str(s) for s in scores]})
        data = {"actor/pg_loss": -0.1 * step, "actor/kl_loss": 0.01 * step, "actor/entropy": 1.5,
                "actor/grad_norm": 0.5, "actor/lr": 1e-6, "actor/pg_clipfrac": 0.0, "actor/ppo_kl": 0.0,
                "critic/score/mean": sum(scores) / 4, "critic/rewards/mean": sum(scores) / 4,
                "response_length/mean": 6.0, "response_length/clip_ratio": 0.0, "timing_s/gen": 1.25,
                "timing_s/step": 2.5, "training/global_step": step, "training/epoch": 0}
        if step == 3:  # the last step validates and its metrics join the step's line
            verl_dump_generations(run / "validation_data", 3, ["Q3", "Q4"], ["#### 7", "#### 9"], ["7", "9"],
                                  [1.0, 1.0], {"reward": [1.0, 1.0], "acc": [True, True]})
            data["val-core/gsm8k/reward/mean@1"] = 1.0
        log.log(data, step=step)
    log.close()


# ---------------------------------------------------------------------------
# prime-rl (commit 559b447)
# ---------------------------------------------------------------------------

TRAINER_CONFIG = {"model": {"name": "PrimeIntellect/Qwen3-0.6B-Reverse-Text-SFT"}, "max_steps": 2,
                  "optim": {"lr": 3e-6}, "enable_token_export": True,
                  "loss": {"type": "default", "dppo_mask_low": 0.2, "dppo_mask_high": 0.2, "adv_tau": 1.0,
                           "kl_tau": 0.001}}
# The keys of packages/prime-rl-configs/src/prime_rl/configs/orchestrator.py (OrchestratorConfig) the importer reads.
ORCHESTRATOR_CONFIG = {"algo": {"type": "grpo", "length_penalty": None}, "group_size": 2, "batch_size": 2,
                       "max_steps": 2, "train": {"sampling": {"temperature": 1.0, "max_completion_tokens": 8}}}


def prime_configs(run: Path, trainer: dict = TRAINER_CONFIG, orchestrator: dict = ORCHESTRATOR_CONFIG) -> None:
    """src/prime_rl/entrypoints/rl.py, write_subconfigs: configs/trainer.json and orchestrator.json (indent 2)."""
    conf = run / "configs"
    conf.mkdir(parents=True, exist_ok=True)
    for name, data in (("trainer.json", trainer), ("orchestrator.json", orchestrator)):
        with open(conf / name, "w") as f:
            json.dump(data, f, indent=2)


class PrimeFileMonitor:
    """src/prime_rl/monitors/file.py, FileMonitor.log_metrics: ``{"step", "time", ...}`` rows, json.dumps."""

    def __init__(self, run: Path):
        run.mkdir(parents=True, exist_ok=True)
        self.file = open(run / "metrics.jsonl", "a", buffering=1)

    def log(self, metrics: dict, step: int, time: float) -> None:
        row = {"step": step, "time": time, **{k: v for k, v in metrics.items()
                                              if not (isinstance(v, float) and not math.isfinite(v))}}
        self.file.write(json.dumps(row) + "\n")

    def close(self) -> None:
        self.file.close()


def prime_sequence(step: int, micro_step: int, idx: int, export_idx: int, prompt: list[int], completion: list[int],
                   trainer_lp: list[float], inference_lp: list[float], advantage: float, *,
                   mask_low: float = 0.2, mask_high: float = 0.2, env: str = "reverse-text") -> dict:
    """One line of src/prime_rl/trainer/rl/token_export.py, TokenExporter.export (``_export_columns``,
    ``_compute_export_tensors`` for the default loss; prompt tokens carry loss_mask false, log-prob 0 and
    the advantage of the sample)."""
    n_p, n = len(prompt), len(prompt) + len(completion)
    tlp = [0.0] * n_p + list(trainer_lp)
    ilp = [0.0] * n_p + list(inference_lp)
    adv = [advantage] * n
    log_ratio = [t - i for t, i in zip(tlp, ilp)]
    ratio = [math.exp(x) for x in log_ratio]
    delta = [math.exp(t) - math.exp(i) for t, i in zip(tlp, ilp)]
    mask = [False] * n_p + [True] * len(completion)
    high = [m and a > 0 and d > mask_high for m, a, d in zip(mask, adv, delta)]
    low = [m and a < 0 and d < -mask_low for m, a, d in zip(mask, adv, delta)]
    masked = [m and ((a > 0 and d > mask_high) or (a < 0 and d < -mask_low)) for m, a, d in zip(mask, adv, delta)]
    return {"schema_version": 1, "step": step, "rank": 0, "micro_step": micro_step, "micro_sequence_idx": idx,
            "export_sequence_idx": export_idx, "env_name": env, "token_ids": list(prompt) + list(completion),
            "position_ids": list(range(n)), "loss_mask": mask, "advantages": adv, "inference_logprobs": ilp,
            "trainer_logprobs": tlp, "entropy": [0.5] * n, "mismatch_kl": [r - x - 1 for r, x in zip(ratio, log_ratio)],
            "log_importance_ratio": log_ratio, "importance_ratio": ratio, "prob_delta": delta, "is_masked": masked,
            "is_masked_high": high, "is_masked_low": low, "rl_weights": [None] * n, "ce_weights": [None] * n,
            "ref_kl_weights": [None] * n}


def prime_export(run: Path, step: int, records: Iterable[dict], rank: int = 0) -> None:
    """TokenExporter._write (json.dumps compact, allow_nan False) then mark_stable (STABLE)."""
    d = run / "token_exports" / f"step_{step}"
    d.mkdir(parents=True, exist_ok=True)
    with (d / f"rank_{rank}.jsonl").open("w", encoding="utf-8") as f:
        for record in records:
            f.write(json.dumps(record, separators=(",", ":"), allow_nan=False) + "\n")
    (d / "STABLE").touch()


def write_prime_fixture(run: Path) -> None:
    """Two steps; step 0 exports one prompt [5, 6] with two completions:
    [7, 8] (trainer -0.5, -1.0; inference -0.6, -1.0; advantage 0.5) and [9] (-0.2 / -0.2; advantage -0.5)."""
    prime_configs(run)
    mon = PrimeFileMonitor(run)
    # The orchestrator runs ahead: its row for step 1 is written before the trainer's rows for step 0.
    mon.log({"reward/mean": 0.5}, step=0, time=1000.0)
    mon.log({"reward/mean": 0.75}, step=1, time=1001.0)
    mon.log({"optim/lr": 3e-6, "optim/grad_norm": 0.25}, step=0, time=1002.0)
    mon.log({"loss/mean": 0.01, "entropy/all/mean": 0.5, "mismatch_kl/all/mean": 0.002}, step=0, time=1002.5)
    mon.log({"optim/lr": 3e-6, "optim/grad_norm": 0.5}, step=1, time=1003.0)
    mon.close()
    prime_export(run, 0, [
        prime_sequence(0, 0, 0, 0, [5, 6], [7, 8], [-0.5, -1.0], [-0.6, -1.0], 0.5),
        prime_sequence(0, 0, 1, 1, [5, 6], [9], [-0.2], [-0.2], -0.5),
    ])


def main() -> int:
    import shutil

    for name, write in (("verl", write_verl_fixture), ("prime_rl", write_prime_fixture)):
        dest = ROOT / "tests" / "fixtures" / name
        shutil.rmtree(dest, ignore_errors=True)
        write(dest / "run")
        print(dest)
    return 0


if __name__ == "__main__":
    sys.exit(main())


def prime_sequence_channels(step: int, micro_step: int, idx: int, export_idx: int, prompt: list[int],
                            completion: list[int], trainer_lp: list[float], inference_lp: list[float], advantage: float,
                            reward: float | None, **kwargs) -> dict:
    """The same sequence in the token export layout of prime-rl commit 004274e (TokenExporter.export: export_step and
    run_id after step and before env_name; ``_export_columns``: per-token ``losses`` channels and ``rewards``; no
    rl_weights, ce_weights or ref_kl_weights), with the sample's reward on each of its tokens."""
    old = prime_sequence(step, micro_step, idx, export_idx, prompt, completion, trainer_lp, inference_lp, advantage,
                         **kwargs)
    n = len(old["token_ids"])
    head = {"schema_version": 1, "step": step, "export_step": step, "rank": 0, "micro_step": micro_step,
            "micro_sequence_idx": idx, "export_sequence_idx": export_idx, "run_id": None, "env_name": old["env_name"]}
    columns = {"token_ids": old["token_ids"], "position_ids": old["position_ids"], "loss_mask": old["loss_mask"],
               "advantages": old["advantages"],
               "losses": [{"rl": {"advantage": a, "mask": m}} for a, m in zip(old["advantages"], old["loss_mask"])],
               "rewards": [reward] * n}
    rest = ("inference_logprobs", "trainer_logprobs", "entropy", "mismatch_kl", "log_importance_ratio",
            "importance_ratio", "prob_delta", "is_masked", "is_masked_high", "is_masked_low")
    return {**head, **columns, **{k: old[k] for k in rest}}
