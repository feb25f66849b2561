"""Pack the finished runs of a folder for the GPU machine's scripts to send back (gpu_set.sh, tiny_on_device.sh,
smollm2_on_device.sh): each run whose header has finished_at, without its checkpoint, under PREFIX/<run>, and each
EXTRA file or folder that exists, under its own path; written to a temporary name, then renamed, so a call cut
short leaves the last whole archive.

    python3 benchmarks/pack_runs.py OUT.tar.gz RUNS PREFIX [EXTRA ...]
"""

from __future__ import annotations

import json
import os
import sys
import tarfile
from pathlib import Path


def pack(archive: Path, runs: Path, prefix: str, extras: list[str]) -> list[str]:
    done = [d for d in sorted(runs.iterdir()) if (d / "header.json").is_file()
            and json.loads((d / "header.json").read_text()).get("finished_at")] if runs.is_dir() else []
    tmp = archive.with_name(f"{archive.name}.{os.getpid()}")
    with tarfile.open(tmp, "w:gz") as tar:
        for d in done:
            tar.add(d, arcname=f"{prefix}/{d.name}", filter=lambda t: None if "/checkpoint" in t.name else t)
        for extra in extras:
            if Path(extra).exists():
                tar.add(extra, arcname=extra)
    os.replace(tmp, archive)
    return [d.name for d in done]


if __name__ == "__main__":
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    names = pack(Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3], sys.argv[4:])
    print(f"packed {len(names)} finished runs: {' '.join(names)}")
