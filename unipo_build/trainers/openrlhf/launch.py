"""Run OpenRLHF's ``train_ppo_ray`` with the UNIPO token tap in every Ray worker.

    python -m unipo_build.trainers.openrlhf.launch --tap-dir DIR [--tap-fraction F] -- <train_ppo_ray flags>

OpenRLHF's entry point calls ``ray.init`` only when Ray is not yet initialised. This launcher
initialises it first, with a runtime environment whose ``worker_process_setup_hook`` is
``unipo_build.trainers.openrlhf.tap.setup`` and whose environment variables tell the tap where to write
(plus the three variables OpenRLHF's own ``ray.init`` would have set), then runs OpenRLHF's entry
point as ``__main__`` with the flags after ``--``. With ``RAY_ADDRESS`` set it joins that cluster;
every node needs this package installed (``pip install -e .`` in the same environment as OpenRLHF)
and the shards stay on the node that wrote them (collect them before converting).
"""

from __future__ import annotations

import argparse
import os
import runpy
import sys

from unipo_build.trainers.openrlhf import VersionError, check_version
from unipo_build.trainers.openrlhf.tap import ENV_DIR, ENV_FRACTION

ENTRY_MODULE = "openrlhf.cli.train_ppo_ray"


def runtime_env(tap_dir: str, fraction: float) -> dict:
    """The Ray runtime environment that loads the tap in every worker."""
    env_vars = {
        ENV_DIR: os.path.abspath(tap_dir),
        ENV_FRACTION: repr(float(fraction)),
        # What OpenRLHF 0.11.2's train() passes to ray.init when it initialises Ray itself.
        "TOKENIZERS_PARALLELISM": os.environ.get("TOKENIZERS_PARALLELISM", "true"),
        "NCCL_DEBUG": os.environ.get("NCCL_DEBUG", "WARN"),
        "RAY_ENABLE_ZERO_COPY_TORCH_TENSORS": os.environ.get("RAY_ENABLE_ZERO_COPY_TORCH_TENSORS", "1"),
    }
    return {"worker_process_setup_hook": "unipo_build.trainers.openrlhf.tap.setup", "env_vars": env_vars}


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if "--" not in argv:
        print("usage: python -m unipo_build.trainers.openrlhf.launch --tap-dir DIR [--tap-fraction F] -- <train_ppo_ray flags>",
              file=sys.stderr)
        return 2
    cut = argv.index("--")
    parser = argparse.ArgumentParser(prog="python -m unipo_build.trainers.openrlhf.launch")
    parser.add_argument("--tap-dir", required=True)
    parser.add_argument("--tap-fraction", type=float, default=0.25)
    ours = parser.parse_args(argv[:cut])
    if not 0 < ours.tap_fraction <= 1:
        parser.error("--tap-fraction must be in (0, 1]")
    try:
        check_version()
    except VersionError as err:
        print(f"unipo openrlhf launch: {err}", file=sys.stderr)
        return 2
    import ray

    ray.init(address=os.environ.get("RAY_ADDRESS"), runtime_env=runtime_env(ours.tap_dir, ours.tap_fraction))
    sys.argv = [ENTRY_MODULE, *argv[cut + 1:]]
    runpy.run_module(ENTRY_MODULE, run_name="__main__", alter_sys=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
