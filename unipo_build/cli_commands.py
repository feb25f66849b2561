"""Subcommands beyond ``validate``, each registered by a function taking the subparsers."""

from __future__ import annotations

REGISTRARS: list = []
