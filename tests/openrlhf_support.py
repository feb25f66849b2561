"""Import OpenRLHF for the tests that compare against it, or skip them.

OpenRLHF is installed without its dependencies (``.ci/lib.sh``: ``install_openrlhf_cpu``):
its pins (transformers==5.15.0, flash-attn, deepspeed built for CUDA) would replace the
project's stack, and the parity tests need only its Python code. flash_attn and vllm,
which it imports at module level, come from the stubs in ``tests/openrlhf_stubs``.

Without OpenRLHF the tests skip, unless ``UNIPO_REQUIRE_OPENRLHF=1`` (set by
``.ci/test.sh``), which turns the skip into a failure.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import os
import sys
from pathlib import Path

import pytest

OPENRLHF_VERSION = "0.11.2"

INSTALL_HINT = (
    f"pip install --no-deps openrlhf=={OPENRLHF_VERSION} && "
    'pip install "ray==2.55.0" peft torchdata pylatexenc einops hjson ninja py-cpuinfo aiohttp pillow && '
    "DS_BUILD_OPS=0 pip install --no-deps --no-build-isolation deepspeed==0.19.6 "
    "(or source .ci/lib.sh && install_openrlhf_cpu)"
)


def stub_dir() -> Path:
    """The folder holding the flash_attn and vllm import stubs."""
    return Path(__file__).resolve().parent / "openrlhf_stubs"


def _unavailable(reason: str):
    if os.environ.get("UNIPO_REQUIRE_OPENRLHF") == "1":
        pytest.fail(f"{reason}; UNIPO_REQUIRE_OPENRLHF=1 makes this a failure. Install with: {INSTALL_HINT}",
                    pytrace=False)
    pytest.skip(f"{reason} (install with: {INSTALL_HINT})", allow_module_level=True)


def require_openrlhf():
    """Return the imported ``openrlhf`` package, or skip (fail under UNIPO_REQUIRE_OPENRLHF=1).

    Callable at module level (the skip then covers the whole module) or inside a test.

    The stubs are appended to ``sys.path``, so a real flash_attn or vllm installed in
    site-packages is found first and never shadowed.
    """
    stubs = str(stub_dir())
    if stubs not in sys.path:
        sys.path.append(stubs)
    try:
        version = importlib.metadata.version("openrlhf")
    except importlib.metadata.PackageNotFoundError:
        _unavailable(f"openrlhf {OPENRLHF_VERSION} is not installed")
    if version != OPENRLHF_VERSION:
        _unavailable(f"openrlhf {version} is installed; these tests are written against {OPENRLHF_VERSION}")
    try:
        # The modules the parity tests call into; importing them is the availability check.
        for name in ("openrlhf", "openrlhf.models.loss", "openrlhf.models.utils",
                     "openrlhf.trainer.ppo_utils.experience", "openrlhf.trainer.ppo_utils.experience_maker",
                     "openrlhf.trainer.ppo_utils.length_penalty"):
            importlib.import_module(name)
    except ImportError as exc:
        _unavailable(f"openrlhf {OPENRLHF_VERSION} is installed but does not import ({exc!r})")
    return importlib.import_module("openrlhf")
