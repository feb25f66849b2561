"""A small reader of TensorBoard event files (``events.out.tfevents.*``), scalars only.

No TensorFlow, tensorboard or protobuf package is needed: an event file is a sequence of
TFRecords (little-endian uint64 length, masked CRC-32C of the length, the bytes, masked CRC-32C
of the bytes), each an ``Event`` protocol buffer. Only the fields needed for scalars are decoded:

- Event: wall_time (1, double), step (2, int64), summary (5, Summary);
- Summary: repeated value (1, Value);
- Value: tag (1, string), simple_value (2, float: what ``SummaryWriter.add_scalar`` writes),
  metadata (9, SummaryMetadata: plugin_data.plugin_name), tensor (8, TensorProto: a rank-0
  float / double / int tensor, what TF2 and ``add_scalar(new_style=True)`` write).

Other values (text, histograms, images) are counted and skipped. Both CRCs are checked; a
record cut off at the end of a file (a run still writing, or killed) is reported as
``truncated`` and ignored, as TensorBoard does.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

# --- CRC-32C (Castagnoli), table-driven -------------------------------------

_POLY = 0x82F63B78
_TABLE = []
for _n in range(256):
    _c = _n
    for _ in range(8):
        _c = (_c >> 1) ^ _POLY if _c & 1 else _c >> 1
    _TABLE.append(_c)


def crc32c(data: bytes) -> int:
    crc = 0xFFFFFFFF
    table = _TABLE
    for byte in data:
        crc = table[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def masked_crc(data: bytes) -> int:
    crc = crc32c(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


class EventFileError(ValueError):
    def __init__(self, path: Path, offset: int, message: str):
        self.path, self.offset, self.message = path, offset, message
        super().__init__(f"{path}: record at byte {offset}: {message}")


# --- protobuf wire format -----------------------------------------------------

def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= len(buf):
            raise ValueError("varint runs past the end of the message")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7
        if shift > 70:
            raise ValueError("varint too long")


def fields(buf: bytes) -> Iterator[tuple[int, int, object]]:
    """(field number, wire type, value) of a message: ints for varint/fixed, bytes for length-delimited."""
    pos = 0
    while pos < len(buf):
        key, pos = _varint(buf, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(buf, pos)
        elif wire == 1:
            value, pos = buf[pos:pos + 8], pos + 8
        elif wire == 2:
            length, pos = _varint(buf, pos)
            value, pos = buf[pos:pos + length], pos + length
        elif wire == 5:
            value, pos = buf[pos:pos + 4], pos + 4
        else:
            raise ValueError(f"unsupported wire type {wire}")
        if pos > len(buf):
            raise ValueError("field runs past the end of the message")
        yield number, wire, value


def _signed64(n: int) -> int:
    return n - (1 << 64) if n >= 1 << 63 else n


# TensorProto dtypes that hold a scalar we can read.
DT_FLOAT, DT_DOUBLE, DT_INT32, DT_INT64 = 1, 2, 3, 9


def _tensor_scalar(buf: bytes) -> float | None:
    dtype, content, floats, doubles, ints, dims = None, None, [], [], [], 0
    for number, wire, value in fields(buf):
        if number == 1 and wire == 0:
            dtype = value
        elif number == 2 and wire == 2:
            dims = sum(1 for n, _, _ in fields(value) if n == 2)  # TensorShapeProto.dim
        elif number == 4 and wire == 2:
            content = value
        elif number == 5:
            floats += list(struct.unpack(f"<{len(value) // 4}f", value)) if wire == 2 else [struct.unpack("<f", value)[0]]
        elif number == 6:
            doubles += list(struct.unpack(f"<{len(value) // 8}d", value)) if wire == 2 else [struct.unpack("<d", value)[0]]
        elif number in (7, 10):
            if wire == 2:
                pos = 0
                while pos < len(value):
                    v, pos = _varint(value, pos)
                    ints.append(_signed64(v))
            else:
                ints.append(_signed64(value))
    if dims:
        return None
    if content:
        fmt = {DT_FLOAT: "<f", DT_DOUBLE: "<d", DT_INT32: "<i", DT_INT64: "<q"}.get(dtype)
        if fmt is None or struct.calcsize(fmt) != len(content):
            return None
        return float(struct.unpack(fmt, content)[0])
    for values in (floats, doubles, ints):
        if len(values) == 1:
            return float(values[0])
    return None


@dataclass
class Scalar:
    tag: str
    step: int
    wall_time: float
    value: float


@dataclass
class ReadStats:
    records: int = 0
    scalars: int = 0
    skipped_values: dict = field(default_factory=dict)  # plugin or kind -> count
    truncated: list = field(default_factory=list)  # paths whose last record is cut off


def _plugin(buf: bytes) -> str | None:
    for number, wire, value in fields(buf):
        if number == 1 and wire == 2:  # plugin_data
            for n, w, v in fields(value):
                if n == 1 and w == 2:
                    return v.decode("utf-8", "replace")
    return None


def _event_scalars(event: bytes, stats: ReadStats) -> Iterator[tuple[str, int, float, float]]:
    wall_time, step, summaries = 0.0, 0, []
    for number, wire, value in fields(event):
        if number == 1 and wire == 1:
            wall_time = struct.unpack("<d", value)[0]
        elif number == 2 and wire == 0:
            step = _signed64(value)
        elif number == 5 and wire == 2:
            summaries.append(value)
    for summary in summaries:
        for number, wire, value in fields(summary):
            if number != 1 or wire != 2:
                continue
            tag, simple, tensor, plugin, other = None, None, None, None, None
            for n, w, v in fields(value):
                if n == 1 and w == 2:
                    tag = v.decode("utf-8", "replace")
                elif n == 2 and w == 5:
                    simple = struct.unpack("<f", v)[0]
                elif n == 8 and w == 2:
                    tensor = v
                elif n == 9 and w == 2:
                    plugin = _plugin(v)
                elif n in (3, 4, 5, 6):
                    other = {3: "histogram", 4: "image", 5: "histogram", 6: "audio"}[n]
            if tag is None:
                continue
            scalar = simple
            if scalar is None and tensor is not None and plugin in (None, "scalars"):
                scalar = _tensor_scalar(tensor)
            if scalar is None:
                kind = plugin or other or "non-scalar"
                stats.skipped_values[kind] = stats.skipped_values.get(kind, 0) + 1
                continue
            yield tag, step, wall_time, float(scalar)


def read_scalars(path: Path, stats: ReadStats | None = None) -> Iterator[Scalar]:
    """Every scalar of one event file, in file order. Raises EventFileError on corruption."""
    stats = stats if stats is not None else ReadStats()
    with Path(path).open("rb") as fh:
        offset = 0
        while True:
            head = fh.read(12)
            if not head:
                return
            if len(head) < 12:
                stats.truncated.append(str(path))
                return
            length, length_crc = struct.unpack("<QI", head)
            if masked_crc(head[:8]) != length_crc:
                raise EventFileError(path, offset, "the length's checksum does not match (not an event file, or "
                                                   "corrupted)")
            data = fh.read(length)
            tail = fh.read(4)
            if len(data) < length or len(tail) < 4:
                stats.truncated.append(str(path))
                return
            if masked_crc(data) != struct.unpack("<I", tail)[0]:
                raise EventFileError(path, offset, "the record's checksum does not match (corrupted)")
            stats.records += 1
            try:
                for tag, step, wall_time, value in _event_scalars(data, stats):
                    stats.scalars += 1
                    yield Scalar(tag, step, wall_time, value)
            except (ValueError, struct.error) as err:
                raise EventFileError(path, offset, f"not a valid Event message: {err}") from None
            offset += 12 + length + 4


def event_files(src: Path) -> list[Path]:
    """The event files of ``src``: the file itself, or every events.out.tfevents.* below a directory."""
    src = Path(src)
    if src.is_file():
        return [src]
    return sorted(p for p in src.rglob("events.out.tfevents.*") if p.is_file())


# --- writing (for tests and examples: what SummaryWriter.add_scalar writes) -----------------

def _key(number: int, wire: int) -> bytes:
    return _encode_varint((number << 3) | wire)


def _encode_varint(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _bytes_field(number: int, data: bytes) -> bytes:
    return _key(number, 2) + _encode_varint(len(data)) + data


def encode_event(wall_time: float, step: int, scalars: dict[str, float] | None = None,
                 file_version: str | None = None, text: dict[str, str] | None = None) -> bytes:
    """An Event message with simple_value scalars (and text values, as add_text writes them)."""
    msg = _key(1, 1) + struct.pack("<d", wall_time) + _key(2, 0) + _encode_varint(step & ((1 << 64) - 1))
    if file_version is not None:
        msg += _bytes_field(3, file_version.encode())
    values = b""
    for tag, value in (scalars or {}).items():
        values += _bytes_field(1, _bytes_field(1, tag.encode()) + _key(2, 5) + struct.pack("<f", value))
    for tag, string in (text or {}).items():
        metadata = _bytes_field(1, _bytes_field(1, b"text"))
        tensor = _key(1, 0) + _encode_varint(7) + _bytes_field(8, string.encode())  # DT_STRING, string_val
        values += _bytes_field(1, _bytes_field(1, tag.encode()) + _bytes_field(9, metadata) + _bytes_field(8, tensor))
    if values:
        msg += _bytes_field(5, values)
    return msg


def encode_record(data: bytes) -> bytes:
    head = struct.pack("<Q", len(data))
    return head + struct.pack("<I", masked_crc(head)) + data + struct.pack("<I", masked_crc(data))
