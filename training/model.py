"""Build a fresh policy from a preset, or load any local Hugging Face causal LM by path.

The fresh model is transformers' LlamaForCausalLM (RMSNorm, rotary positions, SwiGLU MLP: the
architecture of Llama 2/3, Touvron et al. 2023) at a toy size, so the same code path (and the same
checkpoint format) serves our tiny model and a user's own local checkpoint.
"""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # local paths only; never retry the hub

from pathlib import Path

import torch

from training.presets import Preset, get_preset


def set_threads(n: int = 2) -> None:
    """Use `n` CPU threads (default 2: the calibration machine). More threads than cores only thrash."""
    torch.set_num_threads(n)


def thread_count(requested: int | None, preset: str | Preset) -> int:
    """Torch threads for a run: ``requested`` (--threads), else $UNIPO_THREADS, else the preset's.

    One answer for the SFT warm start and the RL loop, so that --threads 1 holds through both.
    """
    if requested:
        return requested
    env = os.environ.get("UNIPO_THREADS", "").strip()
    if env:
        if not env.isdigit() or int(env) < 1:
            raise ValueError(f"UNIPO_THREADS={env!r}: a number of threads (1 or more) is expected")
        return int(env)
    return get_preset(preset).threads


def show_progress_bars(enabled: bool) -> None:
    """Turn transformers' own bars ("Loading weights", "Writing model shards") on or off with ours."""
    from transformers.utils import logging as hf_logging

    (hf_logging.enable_progress_bar if enabled else hf_logging.disable_progress_bar)()


def resolve_device(device: str = "auto") -> torch.device:
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(device)


def resolve_precision(setting: str, device: torch.device) -> torch.dtype | None:
    """The autocast dtype of the RL loop's policy passes for a preset's ``precision``, or None (float32).

    "auto": bf16 on a CUDA GPU that supports it, float32 elsewhere (the CPU runs are unchanged);
    "fp32": float32 everywhere; "bf16": bf16 autocast on any device (CPU autocast to bf16 works: the
    tests run the GPU path that way).
    """
    if setting == "fp32":
        return None
    if setting == "bf16":
        return torch.bfloat16
    if setting == "auto":
        return torch.bfloat16 if device.type == "cuda" and torch.cuda.is_bf16_supported() else None
    raise ValueError(f"precision {setting!r}: expected 'auto', 'fp32' or 'bf16'")


def autocast_for(device: torch.device):
    """bf16 autocast on a CUDA GPU that supports it; a no-op context on CPU (fp32 there)."""
    if device.type == "cuda" and torch.cuda.is_bf16_supported():
        return torch.autocast("cuda", dtype=torch.bfloat16)
    return torch.autocast(device.type, enabled=False)


def build_model(
    preset: str | Preset,
    vocab_size: int,
    *,
    seed: int | None = None,
    pad_token_id: int = 0,
    bos_token_id: int = 1,
    eos_token_id: int = 2,
):
    """A randomly initialised LlamaForCausalLM of the preset's shape (ids default to our tokenizer's)."""
    from transformers import LlamaConfig, LlamaForCausalLM

    m = get_preset(preset).model
    config = LlamaConfig(
        vocab_size=vocab_size,
        hidden_size=m.hidden_size,
        intermediate_size=m.intermediate_size,
        num_hidden_layers=m.num_layers,
        num_attention_heads=m.num_heads,
        num_key_value_heads=m.num_heads,
        max_position_embeddings=m.max_position_embeddings,
        tie_word_embeddings=m.tie_word_embeddings,
        rope_theta=m.rope_theta,
        pad_token_id=pad_token_id,
        bos_token_id=bos_token_id,
        eos_token_id=eos_token_id,
    )
    if seed is None:
        model = LlamaForCausalLM(config)
    else:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            model = LlamaForCausalLM(config)
    model.generation_config.pad_token_id = pad_token_id
    model.generation_config.eos_token_id = eos_token_id
    model.generation_config.bos_token_id = bos_token_id
    return model


def count_parameters(model) -> int:
    """Trainable parameters, tied weights counted once (model.parameters() yields each tensor once)."""
    return sum(p.numel() for p in model.parameters())


class CheckpointError(FileNotFoundError):
    """A path that is not a loadable local checkpoint."""


def check_checkpoint_dir(path: str | Path) -> Path:
    p = Path(path)
    if not p.exists():
        raise CheckpointError(f"checkpoint path does not exist: {p} (only local checkpoints are loaded; no hub)")
    if not p.is_dir():
        raise CheckpointError(f"checkpoint path is not a directory: {p}")
    if not (p / "config.json").is_file():
        raise CheckpointError(f"not a Hugging Face checkpoint (no config.json): {p}")
    return p


def load_policy(path: str | Path, device: str = "cpu", dtype: torch.dtype | None = None):
    """Load (model, tokenizer) from a local Hugging Face causal-LM checkpoint directory.

    Works for our SFT checkpoints and for any local model AutoModelForCausalLM knows. The tokenizer
    gets a pad token if it has none (its EOS), since batched generation pads.
    """
    from transformers import AutoModelForCausalLM, AutoTokenizer

    p = check_checkpoint_dir(path)
    model = AutoModelForCausalLM.from_pretrained(p, local_files_only=True, dtype=dtype or torch.float32)
    tokenizer = AutoTokenizer.from_pretrained(p, local_files_only=True)
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    return model.to(resolve_device(device)), tokenizer
