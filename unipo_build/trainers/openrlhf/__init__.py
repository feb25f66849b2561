"""Training at scale on OpenRLHF with the project's algorithm specs and token-level logs.

- ``command``: an algorithm spec and run options become an OpenRLHF 0.11.2 command line
  (``unipo openrlhf command``, ``unipo train --engine openrlhf``). Where OpenRLHF cannot express
  a spec exactly, the translation names the gap and its nearest approximation and refuses unless
  the user accepts the approximation.
- ``tap``: code loaded in OpenRLHF's Ray workers (a ``worker_process_setup_hook`` that installs
  post-import hooks) recording token-level arrays for a sample of prompt groups into per-process
  shards.
- ``launch``: starts Ray with the tap's runtime environment, then runs OpenRLHF's own entry point.
- ``convert``: joins the shards and OpenRLHF's TensorBoard scalars into a canonical run log.

OpenRLHF is an optional extra pinned to exactly 0.11.2 (its flags changed in 0.10.2 and 0.11);
nothing here imports it at module level, and the site and the CPU trainer never need it.
"""

from __future__ import annotations

OPENRLHF_VERSION = "0.11.2"
TAP_FORMAT = "unipo-openrlhf-tap/1"  # the tap's manifest and the first line of every shard


class VersionError(RuntimeError):
    """OpenRLHF is missing or is not the version the tap and the command builder were written for."""


def installed_version() -> str | None:
    """The installed OpenRLHF's version, or None when it is not installed."""
    from importlib import metadata

    try:
        return metadata.version("openrlhf")
    except metadata.PackageNotFoundError:
        return None


def check_version(version: str | None = None) -> str:
    """Refuse any OpenRLHF other than 0.11.2, with what to do about it."""
    found = installed_version() if version is None else version
    if found is None:
        raise VersionError(f"OpenRLHF is not installed: pip install openrlhf=={OPENRLHF_VERSION} (see the guide "
                           "'Train at scale with OpenRLHF' for the GPU install)")
    if found != OPENRLHF_VERSION:
        raise VersionError(f"OpenRLHF {found} is installed, but the UNIPO command builder and token tap are written "
                           f"for exactly {OPENRLHF_VERSION} (flags changed in 0.10.2 and 0.11, and the tap wraps "
                           f"internal functions): pip install openrlhf=={OPENRLHF_VERSION}")
    return found
