"""The `unipo` console script and the command lines of the guides, for the tests that run them as written."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
UNIPO = Path(sys.executable).with_name("unipo")
if not UNIPO.exists():
    UNIPO = ROOT / ".venv" / "bin" / "unipo"


def unipo(*args, cwd=ROOT, env_extra: dict[str, str] | None = None, timeout: float = 120):
    env = {**os.environ, **env_extra} if env_extra else None
    return subprocess.run([str(UNIPO), *map(str, args)], cwd=cwd, capture_output=True, text=True, timeout=timeout,
                          env=env)


def guide_commands(page: str) -> list[str]:
    """Every command line of the ```bash blocks of docs/guides/<page> (comment lines left out)."""
    text = (ROOT / "docs" / "guides" / page).read_text(encoding="utf-8")
    commands = []
    for block in re.findall(r"```bash\n(.*?)```", text, flags=re.S):
        commands += [line.strip() for line in block.splitlines() if line.strip() and not line.startswith("#")]
    return commands


def unwrapped(stdout: str) -> str:
    """``unipo import``'s output with each note whole again: it wraps a note at 80 columns, its continuation lines
    indented by four spaces (cli/commands.py, import_report)."""
    return stdout.replace("\n    ", " ")
