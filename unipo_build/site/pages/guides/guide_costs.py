"""What a guide's command costs, measured: ``{{ measured("unipo train ...") }}``.

The guides say how long their training commands take and how much they write. Those figures
are not typed into the prose: benchmarks/guide_commands.py walks the guides on a fresh copy of
the project, times every command and sums what it wrote, and records the result in
benchmarks/results/guide_commands.json; this macro quotes it. A command the file does not know
is shown as not measured yet (tests/test_guides.py fails on it, so a guide does not ship one).
"""

from __future__ import annotations

import json
from pathlib import Path

from unipo_build.core.numbers import fmt_fixed, plain_num
from unipo_build.site.context import Site, macro

RESULTS = Path("benchmarks") / "results" / "guide_commands.json"


def duration_text(seconds: float) -> str:
    """45 s, 2 min 5 s, 14 min, 1 h 5 min."""
    seconds = round(seconds)
    if seconds < 60:
        return f"{seconds} s"
    minutes, rest = divmod(seconds, 60)
    if minutes < 10:
        return f"{minutes} min {rest} s" if rest else f"{minutes} min"
    if minutes < 60:
        return f"{minutes + (rest >= 30)} min"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes} min"


def size_text(n_bytes: int) -> str:
    """0.4 MB, 27 MB (decimal megabytes)."""
    mb = n_bytes / 1e6
    return f"{plain_num(mb, 2)} MB" if mb < 10 else f"{fmt_fixed(mb, 0)} MB"


NOT_MEASURED = "not measured yet: `python benchmarks/guide_commands.py` times it"


def load_results(root: Path) -> dict:
    path = root / RESULTS
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}


def measured_text(results: dict, command: str, style: str = "sentence") -> str:
    if style not in ("sentence", "short"):
        raise ValueError(f"measured: style is 'sentence' or 'short', not {style!r}")
    entry = results.get("commands", {}).get(command)
    if entry is None:
        return f"({NOT_MEASURED})" if style == "sentence" else NOT_MEASURED
    took = duration_text(entry["wall_s"])
    wrote = size_text(entry["bytes"]) if entry["bytes"] >= 10_000 else None
    if style == "short":
        return f"{took}" + (f" and {wrote}" if wrote else "")
    where = ", ".join(f"`{w}`" for w in entry.get("writes", []))
    machine = results.get("machine", "this project's machine")
    busy = entry.get("load_average_5min", 0) > results.get("cores", float("inf"))
    # a command measured again on its own carries its own date; the others the file's
    when = entry.get("measured_at") or results.get("measured_at", "an unrecorded date")
    return (f"Measured on {when} on {machine}"
            + (" while other work kept its cores busy" if busy else "") + f": {took}"
            + (f", writing {wrote} to {where}." if wrote else "."))


@macro
def measured(site: Site, command: str, style: str = "sentence") -> str:
    """A guide command's measured time and size: a sentence, or ``style="short"`` ("52 s and 0.13 MB")."""
    return measured_text(load_results(site.root), command, style)
