"""Importers: other tools' training logs -> canonical run directories (``unipo import``).

- ``unipo``: UNIPO's published log format, JSON or JSONL (``unipo_format``).
- ``openrlhf``: OpenRLHF's TensorBoard scalars (``openrlhf_tb``).
- ``trl``: TRL's GRPOTrainer output directory (trainer_state.json) and the UNIPO TRL tap (``trl``).
- ``verl``: verl's metrics JSONL, rollout and validation dumps and Hydra config (``verl``).
- ``prime-rl``: prime-rl's token export, metrics and resolved configs (``prime_rl``).

``import_log(fmt, src, out)`` writes a new run directory and returns its header. It never
touches ``src``, refuses an ``out`` that is not empty, and writes through a staging directory
that is validated before it is moved to ``out``, so a failed import leaves nothing behind. The
mapping and every derivation are documented in the modules and in docs/guides/own-logs.md.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import ValidationError

from unipo_build.core.runlog import HEADER, LogErrors, validation_errors
from unipo_build.core.schema import RunHeader
from unipo_build.trainers.common import OutputError, discard, publish, run_id_from, staging_dir
from unipo_build.trainers.openrlhf.importer import import_openrlhf
from unipo_build.trainers.prime_rl.importer import import_prime_rl
from unipo_build.trainers.trl.importer import import_trl
from unipo_build.trainers.unipo.importer import import_unipo
from unipo_build.trainers.verl.importer import import_verl

#: Formats whose run id (without --run-id) is the --out directory's name: their source directory's name is the
#: trainer's output folder or experiment name (TRL's output_dir, prime-rl's run directory, verl's experiment_name),
#: which two runs often share.
OUT_NAMED = ("trl", "prime-rl", "verl")

FORMATS = {"unipo": import_unipo, "openrlhf": import_openrlhf, "trl": import_trl, "verl": import_verl,
           "prime-rl": import_prime_rl}


def same_id_beside(out: Path, run_id: str) -> Path | None:
    """A run directory next to ``out`` (in its parent) whose header has ``run_id``; None if there is none."""
    import json

    parent = out.parent
    if not parent.is_dir():
        return None
    for sibling in sorted(parent.iterdir()):
        if sibling.name.startswith(".") or sibling.resolve() == out.resolve() or not (sibling / HEADER).is_file():
            continue
        try:
            if json.loads((sibling / HEADER).read_text(encoding="utf-8")).get("run_id") == run_id:
                return sibling
        except (OSError, ValueError, AttributeError):
            continue
    return None


def import_log(fmt: str, src: str | Path, out: str | Path, *, algorithm: str | None = None,
               run_id: str | None = None, max_new_tokens: int | None = None,
               tap: str | Path | None = None) -> RunHeader:
    """Import ``src`` (format ``fmt``) into the new run directory ``out``; returns the run's header.

    Raises LogError / LogErrors for bad input, OutputError for an unusable ``out``,
    FileNotFoundError for a missing ``src``.
    """
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r} (known: {', '.join(FORMATS)})")
    src, out = Path(src), Path(out)
    if not src.exists():
        raise FileNotFoundError(f"{src}: no such file or directory")
    if fmt == "unipo" and not src.is_file():
        raise OutputError(f"{src}: the unipo format is one .json or .jsonl file")
    if tap is not None and fmt not in ("openrlhf", "trl"):
        raise OutputError("--tap goes with the openrlhf and trl formats (the UNIPO token tap's shards)")
    if algorithm is not None:
        from unipo_build.trainers.trainer_config import check_algorithm

        check_algorithm(algorithm, str(src))  # a --algorithm that names no spec: one line listing the spec ids
    extra = {"tap": Path(tap)} if tap is not None else {}
    if run_id is None and fmt in OUT_NAMED:
        run_id = run_id_from(out)
    stage = staging_dir(out, src)
    try:
        header = FORMATS[fmt](src, stage, algorithm=algorithm, run_id=run_id, max_new_tokens=max_new_tokens,
                              **extra)
        clash = same_id_beside(out, header.run_id)
        if clash is not None:
            raise OutputError(f"{out}: the run id {header.run_id!r} is already the id of {clash} beside it (a site "
                              f"built from {out.parent} would show only one of them): pass --run-id NAME, or choose "
                              "another --out; nothing was written")
        publish(stage, out)
    except ValidationError as err:
        # A value the schema's bounds refuse (text too long, a number out of range): named by
        # the field it would have filled, in the source file.
        discard(stage)
        raise LogErrors(validation_errors(str(src), err)) from None
    except BaseException:
        discard(stage)
        raise
    return header
