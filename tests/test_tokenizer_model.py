"""Tokenizer (readable word tokens, lossless decoding) and model building/loading."""

import time

import pytest
import torch

from training.model import CheckpointError, build_model, count_parameters, load_policy
from training.task import generate_task, load_task
from training.tokenizer import save_tokenizer, task_corpus, token_pieces, train_tokenizer


@pytest.fixture(scope="module")
def rows(tmp_path_factory):
    out = tmp_path_factory.mktemp("task")
    generate_task(out, seed=3, n_train=1500, n_eval=150)
    return load_task(out / "train.jsonl"), load_task(out / "eval.jsonl")


@pytest.fixture(scope="module")
def tok(rows):
    return train_tokenizer(task_corpus(rows[0]))


def test_round_trip_on_task_text(tok, rows):
    for r in rows[0][:300] + rows[1]:  # eval rows were not in the tokenizer's corpus
        for text in (r["prompt"], r["solution"], r["prompt"] + " " + r["solution"]):
            ids = tok(text, add_special_tokens=False)["input_ids"]
            assert tok.unk_token_id not in ids
            assert tok.decode(ids) == text


def test_tokens_are_words_and_digits(tok):
    assert tok.tokenize("Ana has 58 apples.") == ["▁Ana", "▁has", "▁5", "8", "▁apples", "."]
    assert tok.tokenize("Answer: 43") == ["▁Answer", ":", "▁4", "3"]
    assert len(tok("apples", add_special_tokens=False)["input_ids"]) == 1
    assert len(tok) < 120  # a word-level vocabulary, not thousands of numbers
    assert tok.convert_ids_to_tokens([0, 1, 2, 3]) == ["<pad>", "<bos>", "<eos>", "<unk>"]
    assert (tok.pad_token_id, tok.bos_token_id, tok.eos_token_id, tok.unk_token_id) == (0, 1, 2, 3)
    # every integer is writable, even ones absent from the corpus
    assert tok.decode(tok("Answer: 9876501234", add_special_tokens=False)["input_ids"]) == "Answer: 9876501234"


def test_prompt_and_completion_tokenize_separately(tok, rows):
    """What SFT and the RL loop rely on: ids(prompt) + ids(solution) == ids(prompt + ' ' + solution)."""
    for r in rows[0][:200]:
        p = tok(r["prompt"], add_special_tokens=False)["input_ids"]
        s = tok(r["solution"], add_special_tokens=False)["input_ids"]
        assert p + s == tok(r["prompt"] + " " + r["solution"], add_special_tokens=False)["input_ids"]
        assert tok(r["prompt"])["input_ids"] == p  # no <bos> is added: same as OpenRLHF's tokenization
        assert tok.decode(s + [tok.eos_token_id], skip_special_tokens=True) == r["solution"]


def test_token_pieces_concatenate_to_the_text(tok):
    ids = tok("Ben has 12 coins. Answer: 3", add_special_tokens=False)["input_ids"] + [tok.eos_token_id]
    pieces = token_pieces(tok, ids)
    assert "".join(pieces) == tok.decode(ids)
    assert pieces[:3] == ["Ben", " has", " 1"]


def test_tokenizer_saves_and_reloads(tok, tmp_path):
    from transformers import AutoTokenizer

    save_tokenizer(tok, tmp_path)
    loaded = AutoTokenizer.from_pretrained(tmp_path)
    text = "Eva has 7 plums and eats 3 of them. How many plums are left?"
    assert loaded(text)["input_ids"] == tok(text)["input_ids"]
    assert loaded.decode(loaded(text)["input_ids"]) == text
    assert loaded.eos_token == "<eos>" and loaded.pad_token == "<pad>"


def test_tiny_parameter_count():
    vocab = 90
    model = build_model("tiny", vocab)
    # per layer: attention 4*128^2 + SwiGLU 3*128*512 + two RMSNorms 2*128; final norm; tied embedding
    per_layer = 4 * 128 * 128 + 3 * 128 * 512 + 2 * 128
    assert count_parameters(model) == 4 * per_layer + 128 + vocab * 128 == 1_061_248
    cfg = model.config
    assert (cfg.hidden_size, cfg.num_hidden_layers, cfg.num_attention_heads, cfg.intermediate_size) == (128, 4, 4, 512)
    assert cfg.tie_word_embeddings


def test_build_model_is_seeded():
    a, b = build_model("tiny", 50, seed=1), build_model("tiny", 50, seed=1)
    assert all(torch.equal(x, y) for x, y in zip(a.parameters(), b.parameters()))


def test_load_policy_round_trip(tok, tmp_path):
    model = build_model("tiny", len(tok), seed=0)
    model.save_pretrained(tmp_path)
    save_tokenizer(tok, tmp_path)
    loaded, loaded_tok = load_policy(tmp_path)
    ids = torch.tensor([tok("Ana has 5 cards.")["input_ids"]])
    with torch.no_grad():
        assert torch.allclose(model(ids).logits, loaded(ids).logits)
    assert loaded_tok.pad_token_id == 0 and count_parameters(loaded) == count_parameters(model)


def test_load_policy_clear_errors(tmp_path):
    t0 = time.perf_counter()
    with pytest.raises(CheckpointError, match="does not exist"):
        load_policy(tmp_path / "missing")
    assert time.perf_counter() - t0 < 5  # no hub retries
    (tmp_path / "empty").mkdir()
    with pytest.raises(CheckpointError, match="no config.json"):
        load_policy(tmp_path / "empty")
