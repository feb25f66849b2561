"""Reading and writing run directories in the canonical schema (see ``schema``).

Writes are crash-safe: steps and evals are appended one line at a time and flushed,
header and token files are written to a temporary file and renamed over the target.
Reads stream line by line, so a multi-GB steps.jsonl is never held in memory, and
every problem is reported as a LogError naming the file, the line or step, the
prompt and response, and the field. Nothing here ever writes to a file it reads.

A finished run may keep its steps, evaluations and token files gzipped (``steps.jsonl.gz``,
``evals.jsonl.gz``, ``tokens/step_000012.json.gz``): ``unipo publish`` writes them
(``gzlog.pack_run``), byte for byte the same each time. The header stays plain. Every reader
finds a log file through :func:`log_path` (NAME or NAME.gz; both at once is an error naming
the two) and reads it through :func:`log_lines` or :func:`read_log_bytes`, so a gzipped run
reads exactly as a plain one, and a gzipped file cut off or corrupt is a LogError naming it
(and the line, for steps and evaluations). A running run keeps plain files: the trainer
appends to them and ``unipo explain --watch`` follows them.
"""

from __future__ import annotations

import gzip
import json
import math
import os
import re
import tempfile
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, Iterator

from pydantic import BaseModel, ValidationError

from unipo_build.core import limits
from unipo_build.core.numbers import round_sig
from unipo_build.core.schema import EvalRecord, RunHeader, StepDetail, StepRecord

HEADER = "header.json"
STEPS = "steps.jsonl"
EVALS = "evals.jsonl"
TOKENS_DIR = "tokens"
SIGNIFICANT_DIGITS = 7  # metrics, evaluations, headers: float32 precision keeps the logs small
# Token files keep 9: a log-prob near -20 with 7 digits is off by up to 1e-5, and the site recomputes
# every token's ratio and objective from the logged log-probs to 1e-6.
TOKEN_SIGNIFICANT_DIGITS = 9


#: A step's token file is ``step_000012.json``: prefix, the step to this many digits, suffix. The one
#: definition: the site copies the files under the same names (views/common.step_path) and the
#: browser builds their URLs from these three (views/common.browser_data, views-common.js stepUrl).
TOKEN_FILE_PREFIX = "step_"
TOKEN_FILE_DIGITS = 6
TOKEN_FILE_SUFFIX = ".json"
TOKEN_FILE_GLOB = f"{TOKEN_FILE_PREFIX}*{TOKEN_FILE_SUFFIX}"


def token_file_name(step: int) -> str:
    return f"{TOKEN_FILE_PREFIX}{step:0{TOKEN_FILE_DIGITS}d}{TOKEN_FILE_SUFFIX}"


#: A log file stored gzipped is its plain name plus this (``steps.jsonl.gz``, ``step_000012.json.gz``).
GZIP_SUFFIX = ".gz"
#: The deflate level ``gzlog.pack_run`` writes (fixed: a run published twice is byte-identical).
GZIP_LEVEL = 9
#: The files ``gzlog.pack_run`` may gzip: steps and evaluations by name, and every token file. The header stays
#: plain (a reader opens it by hand; ``finished_at`` in it says the run may be gzipped).
PACKED_LOGS = (STEPS, EVALS)
#: Token files in either form.
TOKEN_FILE_GLOBS = (TOKEN_FILE_GLOB, TOKEN_FILE_GLOB + GZIP_SUFFIX)


def json_schema() -> dict[str, Any]:
    """The JSON Schema of every file of a run, for the reference docs, by the file's name."""
    return {
        HEADER: RunHeader.model_json_schema(by_alias=True),
        f"{STEPS} (one object per line)": StepRecord.model_json_schema(by_alias=True),
        f"{EVALS} (one object per line)": EvalRecord.model_json_schema(by_alias=True),
        f"{TOKENS_DIR}/{TOKEN_FILE_PREFIX}{'N' * TOKEN_FILE_DIGITS}{TOKEN_FILE_SUFFIX}":
            StepDetail.model_json_schema(by_alias=True),
    }


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
        return round_sig(value, digits)
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


def new_file_mode() -> int:
    """The mode open() gives a new file (0o644 under the usual umask 022); mkstemp's own is 0o600."""
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def atomic_write_text(path: Path, text: str) -> None:
    """Write to a temporary file in the same directory, fsync, then rename over ``path`` (UTF-8)."""
    atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write to a temporary file in the same directory, fsync, then rename over ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        os.fchmod(fd, new_file_mode())
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


class RunWriter:
    """Writes one run directory. ``resume_after`` keeps what was logged up to that step."""

    def __init__(self, run_dir: str | Path, header: RunHeader, *, resume_after: int | None = None,
                 durable: bool = True):
        """``durable``: flush and fsync every appended line (a trainer that may be killed). An importer,
        which writes a staging directory it validates before publishing, passes False: lines are
        buffered and synced once in ``finish`` (an fsync per line is most of the time of a long import)."""
        self.dir = Path(run_dir)
        self.header = header
        self.durable = durable
        self._open: dict[str, Any] = {}
        packed = [p for name in PACKED_LOGS if (p := log_candidates(self.dir / name)[1]).exists()]
        if packed:  # a published run: its logs are gzipped, and a writer appends to plain files
            raise FileExistsError(f"{self.dir}: already holds a finished, published run ({packed[0].name}); "
                                  "choose another --out")
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
        for token_file in (self.dir / TOKENS_DIR).glob(TOKEN_FILE_GLOB):
            logged = token_step_of(token_file.name)
            if logged is not None and logged > step:
                token_file.unlink()

    def _append(self, name: str, record: BaseModel) -> None:
        if not self.durable:
            if name not in self._open:
                self._open[name] = (self.dir / name).open("a", encoding="utf-8")
            self._open[name].write(dumps(record) + "\n")
            return
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

    def update_header(self, **updates: Any) -> None:
        """Set header fields known only during the run (the memorisation check after rollout 0)."""
        self.header = self.header.model_copy(update=updates)
        atomic_write_text(self.dir / HEADER, dumps(self.header) + "\n")

    def finish(self, **updates: Any) -> None:
        for fh in self._open.values():
            fh.flush()
            os.fsync(fh.fileno())
            fh.close()
        self._open.clear()
        self.update_header(**updates)


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
        # A model validator reports several problems as "field: message; field: message".
        parts = msg.split("; ") if e["type"] == "value_error" else [msg]
        for part in parts:
            inner_field, text = None, part
            head = part.split(": ", 1)[0]
            if e["type"] == "value_error" and ": " in part and head.replace(".", "").replace("_", "").isalnum():
                inner_field, text = part.split(": ", 1)
            full = field
            if inner_field:
                full = f"{field}.{inner_field}" if field and not inner_field.startswith(field) else inner_field
            if e["type"] == "finite_number":
                text = "NaN or infinity is not allowed here"
            elif e["type"] == "missing":
                text = "required field is missing"
            out.append(LogError(file, text, line=line, step=step, where=where, field=full or None))
    return out


def _loads(text: str) -> Any:
    """Parse JSON; NaN and infinities are parsed so that _validate can say where they are."""
    try:
        return json.loads(text, parse_constant=float)
    except RecursionError:
        raise ValueError(f"nested deeper than Python can parse (at most {limits.MAX_DEPTH} levels are allowed)") from None


def _decode(data: bytes) -> str:
    """UTF-8 text; UnicodeDecodeError names the byte (callers turn it into a LogError)."""
    return data.decode("utf-8")


def _utf8_error(err: UnicodeDecodeError, data: bytes, *, line: int | None = None) -> str:
    """Where a UTF-8 decoding error is: the line (when not given) and the byte within it."""
    newline = b"\n"
    line_start = data.rfind(newline, 0, err.start) + 1
    where = "" if line is not None else f"line {data.count(newline, 0, err.start) + 1}, "
    return f"not valid UTF-8 text ({where}byte {err.start - line_start + 1} of the line: 0x{data[err.start]:02x})"


def _validate(file: str, raw: Any, model: type[BaseModel], *, line: int | None = None, step: int | None = None):
    """Validate parsed JSON; every problem as a LogError.

    Values no schema accepts (NaN, numbers out of range, lone surrogates, over-long strings) are
    found everywhere, in unknown fields too (unipo_build.core.limits); the model's own errors follow,
    except at a place already reported.
    """
    errors = []
    for loc, message in limits.problems(raw):
        where, field = _where(loc)
        errors.append(LogError(file, message, line=line, step=step, where=where, field=field or None))
    reported = {(e.where, e.field) for e in errors}
    try:
        record = model.model_validate(raw)
    except ValidationError as err:
        errors += [e for e in validation_errors(file, err, line=line, step=step)
                   if e not in errors and (e.where, e.field) not in reported]
        record = None
    if errors:
        raise LogErrors(errors)
    return record


# ---------------------------------------------------------------------------
# Plain or gzipped: the one way to a log file
# ---------------------------------------------------------------------------

def is_packed(path: str | Path) -> bool:
    """Whether ``path`` names a gzipped log file (``steps.jsonl.gz``)."""
    return str(path).endswith(GZIP_SUFFIX)


def log_candidates(path: str | Path) -> tuple[Path, Path]:
    """(plain, gzipped) for a log file's plain path: ``run/steps.jsonl`` -> (it, ``run/steps.jsonl.gz``).
    What a cache key of the file takes the state of: either appearing, changing or going changes it."""
    path = Path(path)
    return path, path.with_name(path.name + GZIP_SUFFIX)


def log_path(path: str | Path) -> Path:
    """The file that holds the log ``path`` names by its plain name: ``run/steps.jsonl`` or, where only that
    exists, ``run/steps.jsonl.gz``; the plain path when neither exists (reading it then says "file is missing").
    Both at once is a LogError naming the two: a reader cannot know which is current."""
    plain, packed = log_candidates(path)
    if not packed.exists():
        return plain
    if plain.exists():
        raise LogError(str(plain), f"{packed} is here too: a run keeps each log once, plain or gzipped; remove "
                                   "the one that is out of date (`unipo publish` leaves only the gzipped one)")
    return packed


def log_file(run_dir: str | Path, name: str) -> Path:
    """:func:`log_path` of one of the run's files (``STEPS``, ``EVALS``)."""
    return log_path(Path(run_dir) / name)


def has_log(run_dir: str | Path, name: str) -> bool:
    """Whether the run holds the file ``name`` in either form."""
    return any(p.is_file() for p in log_candidates(Path(run_dir) / name))


def token_file(run_dir: str | Path, step: int) -> Path:
    """:func:`log_path` of one step's token file."""
    return log_path(Path(run_dir) / TOKENS_DIR / token_file_name(step))


def token_paths(run_dir: str | Path) -> list[Path]:
    """Every file in the run's tokens/ named like a token file, plain or gzipped, sorted (misnamed ones too)."""
    folder = Path(run_dir) / TOKENS_DIR
    if not folder.is_dir():
        return []
    return sorted(p for pattern in TOKEN_FILE_GLOBS for p in folder.glob(pattern))


def _gzip_problem(err: Exception, after_line: int | None = None) -> str:
    """A gzipped file's decompression error as a reader's message."""
    where = f" after line {after_line}" if after_line else ""
    if isinstance(err, EOFError):
        return (f"the gzipped file is cut off{where} ({err}); restore it (git checkout) or publish the run "
                "again from its plain files")
    return f"not a readable gzip file{where} ({err}); restore it (git checkout) or publish the run again"


_GZIP_ERRORS = (EOFError, gzip.BadGzipFile, zlib.error)


def open_log(path: str | Path) -> BinaryIO:
    """The file's bytes as a binary stream: decompressed when it is gzipped. OSError as open() raises it."""
    path = Path(path)
    if is_packed(path):
        return gzip.open(path, "rb")
    return path.open("rb")


def log_lines(path: str | Path) -> Iterator[tuple[int, bytes]]:
    """(line number, line as bytes) of a log file, plain or gzipped (resolve its name with :func:`log_path`).
    A file that cannot be read, or gzipped data cut off or corrupt, is a LogError naming the file and the
    line the problem is on."""
    path = Path(path)
    try:
        fh = open_log(path)
    except FileNotFoundError:
        raise LogError(str(path), "file is missing") from None
    except OSError as err:
        raise LogError(str(path), f"cannot be read: {err.strerror or err}") from None
    number = 0
    with fh:
        lines = iter(fh)
        while True:
            try:
                data = next(lines)
            except StopIteration:
                return
            except _GZIP_ERRORS as err:
                raise LogError(str(path), _gzip_problem(err, number), line=number + 1) from None
            except OSError as err:
                raise LogError(str(path), f"cannot be read: {err.strerror or err}", line=number + 1) from None
            number += 1
            yield number, data


def read_log_bytes(path: str | Path) -> bytes:
    """A whole log file's bytes, decompressed when it is gzipped; OSError as read_bytes() raises it, gzip data cut
    off or corrupt as a LogError naming the file."""
    path = Path(path)
    data = path.read_bytes()
    if not is_packed(path):
        return data
    try:
        return gzip.decompress(data)
    except _GZIP_ERRORS as err:
        raise LogError(str(path), _gzip_problem(err)) from None


def read_log_text(path: str | Path) -> str:
    """The text of the log file ``path`` names by its plain name (``run/steps.jsonl``: it or steps.jsonl.gz, as
    :func:`log_path` finds it); for a script or a test that wants the raw lines."""
    return read_log_bytes(log_path(path)).decode("utf-8")


def read_json_model(path: Path, model: type[BaseModel], *, step: int | None = None):
    """One JSON file (plain or gzipped: ``path`` as :func:`log_path` resolves it) validated as ``model``."""
    try:
        data = read_log_bytes(path)
    except FileNotFoundError:
        raise LogError(str(path), "file is missing", step=step) from None
    except OSError as err:
        raise LogError(str(path), f"cannot be read: {err.strerror or err}", step=step) from None
    except LogError as err:  # gzipped, cut off or corrupt
        err.step = step
        raise
    try:
        raw = _loads(_decode(data))
    except UnicodeDecodeError as err:
        raise LogError(str(path), _utf8_error(err, data), step=step) from None
    except (json.JSONDecodeError, ValueError) as err:
        raise LogError(str(path), f"not valid JSON: {err}", step=step) from None
    if step is None and isinstance(raw, dict) and _is_step(raw.get("step")):
        step = raw["step"]
    return _validate(str(path), raw, model, step=step)


def _is_step(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= limits.MAX_INT


class LogErrors(Exception):
    """Several LogErrors found in one file."""

    def __init__(self, errors: list[LogError]):
        self.errors = errors
        super().__init__("\n".join(str(e) for e in errors))


def read_header(run_dir: str | Path) -> RunHeader:
    return read_json_model(Path(run_dir) / HEADER, RunHeader)


def _iter_jsonl(path: Path, model: type[BaseModel]) -> Iterator[tuple[int, Any]]:
    """Yield (line number, record) of a plain or gzipped file; raise LogError at the first bad line (a gzipped
    file cut off: at the line it stops at, with the step that would come next)."""
    last_step = None
    lines = log_lines(path)
    while True:
        try:
            number, data = next(lines)
        except StopIteration:
            return
        except LogError as err:
            if err.line is not None and last_step is not None and err.step is None:
                err.step = last_step + 1
            raise
        try:
            line = _decode(data)
        except UnicodeDecodeError as err:
            raise LogError(str(path), _utf8_error(err, data, line=number), line=number) from None
        if not line.strip():
            continue
        try:
            raw = _loads(line)
        except (json.JSONDecodeError, ValueError) as err:
            hint = " (the line is cut off: was the run killed while writing?)" if not line.endswith("\n") else ""
            raise LogError(str(path), f"not valid JSON: {err}{hint}", line=number) from None
        step = raw.get("step") if isinstance(raw, dict) and _is_step(raw.get("step")) else None
        record = _validate(str(path), raw, model, line=number, step=step)
        last_step = step
        yield number, record


def iter_steps(run_dir: str | Path) -> Iterator[StepRecord]:
    """Stream the step records; steps must increase by one from the first."""
    path = log_file(run_dir, STEPS)
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
    path = log_file(run_dir, EVALS)
    if not path.exists():
        return
    for _, record in _iter_jsonl(path, EvalRecord):
        yield record


_TOKEN_FILE = re.compile("^" + re.escape(TOKEN_FILE_PREFIX) + r"(\d{" + str(TOKEN_FILE_DIGITS) + ",})"
                         + re.escape(TOKEN_FILE_SUFFIX) + "$")


def token_step_of(name: str) -> int | None:
    """The step a token file's name says (``step_000012.json`` or ``step_000012.json.gz`` -> 12), or None for
    another name."""
    name = name.removesuffix(GZIP_SUFFIX)
    match = _TOKEN_FILE.match(name)
    if match and token_file_name(int(match.group(1))) == name:
        return int(match.group(1))
    return None


def token_steps(run_dir: str | Path) -> list[int]:
    """Steps that have a token file (named as :func:`token_file_name` names it, plain or gzipped), sorted; a step
    with both files is listed once (reading it is the error, :func:`token_file`)."""
    return sorted({step for p in token_paths(run_dir) if (step := token_step_of(p.name)) is not None})


def tokens_mtime(run_dir: str | Path) -> float:
    """The newest modification time of a run's token files (0 without any): a cache key for them."""
    try:
        return max((p.stat().st_mtime for p in token_paths(run_dir)), default=0.0)
    except OSError:
        return 0.0


def read_step_detail(run_dir: str | Path, step: int) -> StepDetail:
    """One step's token file; a file that says another step than its name is an error."""
    path = token_file(run_dir, step)
    detail = read_json_model(path, StepDetail, step=step)
    if detail.step != step:
        raise LogError(str(path), f"file is for step {step} but says step {detail.step}", step=step, field="step")
    return detail

