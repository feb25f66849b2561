"""Reading and writing run directories in the canonical schema (see ``schema``).

Writes are crash-safe: steps and evals are appended one line at a time and flushed,
header and token files are written to a temporary file and renamed over the target.
Reads stream line by line, so a multi-GB steps.jsonl is never held in memory, and
every problem is reported as a LogError naming the file, the line or step, the
prompt and response, and the field. Nothing here ever writes to a file it reads.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from pydantic import BaseModel, ValidationError

from .schema import EvalRecord, RunHeader, StepDetail, StepRecord

HEADER = "header.json"
STEPS = "steps.jsonl"
EVALS = "evals.jsonl"
TOKENS_DIR = "tokens"
SIGNIFICANT_DIGITS = 7  # metrics, evaluations, headers: float32 precision keeps the logs small
# Token files keep 9: a log-prob near -20 with 7 digits is off by up to 1e-5, and the site recomputes
# every token's ratio and objective from the logged log-probs to 1e-6.
TOKEN_SIGNIFICANT_DIGITS = 9


def token_file_name(step: int) -> str:
    return f"step_{step:06d}.json"


@dataclass
class LogError(Exception):
    """One problem in a run log, with everything a reader needs to find it."""

    file: str
    message: str
    line: int | None = None
    step: int | None = None
    where: str | None = None  # "prompt 2, response 5"
    field: str | None = None

    def __str__(self) -> str:
        place = [self.file]
        details = []
        if self.line is not None:
            details.append(f"line {self.line}")
        if self.step is not None:
            details.append(f"step {self.step}")
        if self.where:
            details.append(self.where)
        if details:
            place.append(f" ({', '.join(details)})")
        field = f" {self.field}:" if self.field else ""
        return f"{''.join(place)}:{field} {self.message}"


# ---------------------------------------------------------------------------
# Serialisation
# ---------------------------------------------------------------------------

def _compact(value: Any, digits: int = SIGNIFICANT_DIGITS) -> Any:
    """Round floats to `digits` significant digits to keep logs small."""
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"non-finite number {value!r} cannot be logged")
        return float(f"{value:.{digits}g}")
    if isinstance(value, dict):
        return {k: _compact(v, digits) for k, v in value.items()}
    if isinstance(value, list):
        return [_compact(v, digits) for v in value]
    return value


def dumps(model: BaseModel) -> str:
    data = model.model_dump(mode="json", by_alias=True, exclude_none=True)
    if isinstance(model, StepDetail):
        # the step objective is the step record's "objective" metric: written alike, it reads back equal
        data = {**_compact(data, TOKEN_SIGNIFICANT_DIGITS), "objective": _compact(data["objective"])}
    else:
        data = _compact(data)
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def atomic_write_text(path: Path, text: str) -> None:
    """Write to a temporary file in the same directory, fsync, then rename over ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


class RunWriter:
    """Writes one run directory. ``resume_after`` keeps what was logged up to that step."""

    def __init__(self, run_dir: str | Path, header: RunHeader, *, resume_after: int | None = None):
        self.dir = Path(run_dir)
        self.header = header
        (self.dir / TOKENS_DIR).mkdir(parents=True, exist_ok=True)
        if resume_after is None:
            if (self.dir / STEPS).exists() and (self.dir / STEPS).stat().st_size > 0:
                raise FileExistsError(f"{self.dir}: already holds a run; pass --resume to continue it or choose another --out")
            for name in (STEPS, EVALS):
                (self.dir / name).write_text("", encoding="utf-8")
        else:
            self._truncate_after(resume_after)
        atomic_write_text(self.dir / HEADER, dumps(header) + "\n")

    def _truncate_after(self, step: int) -> None:
        """Keep what the checkpoint after update ``step`` covers; drop the rest.

        Kept: step records 0..step, evaluations taken after at most step + 1 updates
        (EvalRecord.step counts updates done), token files of steps 0..step. Dropped:
        anything logged after the checkpoint, and a last line cut off by a crash.
        """
        limits = {STEPS: step, EVALS: step + 1}
        for name, limit in limits.items():
            path = self.dir / name
            kept = []
            if path.exists():
                with path.open(encoding="utf-8") as fh:
                    for line in fh:
                        if not line.endswith("\n"):
                            break
                        if json.loads(line)["step"] <= limit:
                            kept.append(line)
            atomic_write_text(path, "".join(kept))
        for token_file in (self.dir / TOKENS_DIR).glob("step_*.json"):
            if int(token_file.stem.split("_")[1]) > step:
                token_file.unlink()

    def _append(self, name: str, record: BaseModel) -> None:
        with (self.dir / name).open("a", encoding="utf-8") as fh:
            fh.write(dumps(record) + "\n")
            fh.flush()
            os.fsync(fh.fileno())

    def step(self, record: StepRecord) -> None:
        self._append(STEPS, record)

    def eval(self, record: EvalRecord) -> None:
        self._append(EVALS, record)

    def step_detail(self, detail: StepDetail) -> None:
        atomic_write_text(self.dir / TOKENS_DIR / token_file_name(detail.step), dumps(detail) + "\n")

    def finish(self, **updates: Any) -> None:
        self.header = self.header.model_copy(update=updates)
        atomic_write_text(self.dir / HEADER, dumps(self.header) + "\n")


# ---------------------------------------------------------------------------
# Reading
# ---------------------------------------------------------------------------

def _where(loc: tuple) -> tuple[str | None, str]:
    """Split a pydantic location into ("prompt 2, response 5", "tokens.logp")."""
    parts, field = [], []
    i = 0
    loc = list(loc)
    names = {"prompts": "prompt", "responses": "response", "groups": "group", "filtered_groups": "filtered group"}
    while i < len(loc):
        item = loc[i]
        if item in names and i + 1 < len(loc) and isinstance(loc[i + 1], int):
            parts.append(f"{names[item]} {loc[i + 1]}")
            i += 2
            continue
        field.append(str(item))
        i += 1
    return (", ".join(parts) or None), ".".join(field)


def validation_errors(file: str, err: ValidationError, *, line: int | None = None,
                      step: int | None = None) -> list[LogError]:
    out = []
    for e in err.errors():
        where, field = _where(e["loc"])
        msg = e["msg"].removeprefix("Value error, ")
        if e["type"] == "value_error" and ": " in msg and msg.split(": ", 1)[0].replace(".", "").replace("_", "").isalnum():
            inner_field, msg = msg.split(": ", 1)
            field = f"{field}.{inner_field}" if field and not inner_field.startswith(field) else inner_field
        if e["type"] == "finite_number":
            msg = "NaN or infinity is not allowed here"
        elif e["type"] == "missing":
            msg = "required field is missing"
        out.append(LogError(file, msg, line=line, step=step, where=where, field=field or None))
    return out


def _loads(text: str) -> Any:
    """Parse JSON; NaN and infinities are parsed so that _validate can say where they are."""
    return json.loads(text, parse_constant=float)


def _non_finite(value: Any, loc: tuple = ()) -> Iterator[tuple]:
    """Locations of NaN and infinities in parsed JSON (also in unknown and free-form fields)."""
    if isinstance(value, float):
        if not math.isfinite(value):
            yield loc
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _non_finite(item, loc + (key,))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _non_finite(item, loc + (index,))


def _validate(file: str, raw: Any, model: type[BaseModel], *, line: int | None = None, step: int | None = None):
    """Validate parsed JSON; every problem, non-finite numbers included, as a LogError."""
    errors = []
    for loc in _non_finite(raw):
        where, field = _where(loc)
        errors.append(LogError(file, "NaN or infinity is not allowed here", line=line, step=step, where=where,
                               field=field or None))
    try:
        record = model.model_validate(raw)
    except ValidationError as err:
        errors += [e for e in validation_errors(file, err, line=line, step=step) if e not in errors]
        record = None
    if errors:
        raise LogErrors(errors)
    return record


def read_json_model(path: Path, model: type[BaseModel], *, step: int | None = None):
    try:
        raw = _loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise LogError(str(path), "file is missing", step=step) from None
    except (json.JSONDecodeError, ValueError) as err:
        raise LogError(str(path), f"not valid JSON: {err}", step=step) from None
    if step is None and isinstance(raw, dict) and isinstance(raw.get("step"), int):
        step = raw["step"]
    return _validate(str(path), raw, model, step=step)


class LogErrors(Exception):
    """Several LogErrors found in one file."""

    def __init__(self, errors: list[LogError]):
        self.errors = errors
        super().__init__("\n".join(str(e) for e in errors))


def read_header(run_dir: str | Path) -> RunHeader:
    return read_json_model(Path(run_dir) / HEADER, RunHeader)


def _iter_jsonl(path: Path, model: type[BaseModel]) -> Iterator[tuple[int, Any]]:
    """Yield (line number, record); raise LogError at the first bad line."""
    with path.open(encoding="utf-8") as fh:
        for number, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                raw = _loads(line)
            except (json.JSONDecodeError, ValueError) as err:
                hint = " (the line is cut off: was the run killed while writing?)" if not line.endswith("\n") else ""
                raise LogError(str(path), f"not valid JSON: {err}{hint}", line=number) from None
            step = raw.get("step") if isinstance(raw, dict) and isinstance(raw.get("step"), int) else None
            yield number, _validate(str(path), raw, model, line=number, step=step)


def iter_steps(run_dir: str | Path) -> Iterator[StepRecord]:
    """Stream the step records; steps must increase by one from the first."""
    path = Path(run_dir) / STEPS
    if not path.exists():
        raise LogError(str(path), "file is missing")
    expected = None
    for number, record in _iter_jsonl(path, StepRecord):
        if expected is not None and record.step != expected:
            raise LogError(str(path), f"expected step {expected} next, found {record.step} (a step lost or logged twice)",
                           line=number, step=record.step, field="step")
        expected = record.step + 1
        yield record


def iter_evals(run_dir: str | Path) -> Iterator[EvalRecord]:
    path = Path(run_dir) / EVALS
    if not path.exists():
        return
    for _, record in _iter_jsonl(path, EvalRecord):
        yield record


def token_steps(run_dir: str | Path) -> list[int]:
    """Steps that have a token file, sorted."""
    folder = Path(run_dir) / TOKENS_DIR
    if not folder.is_dir():
        return []
    steps = []
    for p in folder.glob("step_*.json"):
        try:
            steps.append(int(p.stem.split("_", 1)[1]))
        except ValueError:
            continue
    return sorted(steps)


def tokens_mtime(run_dir: str | Path) -> float:
    """The newest modification time of a run's token files (0 without any): a cache key for them."""
    folder = Path(run_dir) / TOKENS_DIR
    try:
        return max((p.stat().st_mtime for p in folder.glob("step_*.json")), default=0.0)
    except OSError:
        return 0.0


def read_step_detail(run_dir: str | Path, step: int) -> StepDetail:
    return read_json_model(Path(run_dir) / TOKENS_DIR / token_file_name(step), StepDetail, step=step)


def validate_run(run_dir: str | Path, *, known_algorithms: set[str] | None = None, limit: int = 50) -> list[LogError]:
    """Every problem found in a run directory (up to ``limit``); empty when valid."""
    run_dir = Path(run_dir)
    errors: list[LogError] = []

    def collect(fn):
        try:
            return fn()
        except LogErrors as err:
            errors.extend(err.errors)
        except LogError as err:
            errors.append(err)
        return None

    header = collect(lambda: read_header(run_dir))
    # A run of our own trainer always names a spec it trained; an imported run may carry an
    # algorithm no spec describes (algorithm_config null): the views then show it with a note.
    if header is not None and known_algorithms is not None and header.algorithm not in known_algorithms \
            and header.algorithm_config is None and header.engine == "unipo":
        errors.append(LogError(str(run_dir / HEADER), f"unknown algorithm {header.algorithm!r} (known: "
                               f"{', '.join(sorted(known_algorithms))}); add data/algorithms/{header.algorithm}.yaml "
                               "or copy the resolved components into algorithm_config", field="algorithm"))
    logged = set()
    collect(lambda: logged.update(r.step for r in iter_steps(run_dir) if r.has_tokens))
    collect(lambda: list(iter_evals(run_dir)))
    for step in token_steps(run_dir):
        if len(errors) >= limit:
            break
        detail = collect(lambda: read_step_detail(run_dir, step))
        if detail is not None and detail.step != step:
            errors.append(LogError(str(run_dir / TOKENS_DIR / token_file_name(step)),
                                   f"file is for step {step} but says step {detail.step}", step=step, field="step"))
    for step in sorted(logged - set(token_steps(run_dir))):
        errors.append(LogError(str(run_dir / TOKENS_DIR / token_file_name(step)),
                               f"file is missing, but {STEPS} marks step {step} with has_tokens", step=step,
                               field="has_tokens"))
    return errors[:limit]
