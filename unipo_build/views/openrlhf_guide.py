"""Macros for the guide "Train at scale with OpenRLHF": what the command builder does, computed at build time.

The table of exact and approximated algorithms and the printed commands come from
``unipo_build.openrlhf.command`` itself, so the guide cannot drift from the code.
"""

from __future__ import annotations

from typing import Any

from ..openrlhf import OPENRLHF_VERSION
from ..openrlhf.command import RunOptions, build_command, translation_for
from ..specs import lineage, load_specs
from .site import macro


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def translations_table(max_new_tokens: int = RunOptions().max_new_tokens) -> str:
    """One row per spec: exact on OpenRLHF, or each gap with its nearest approximation."""
    specs = load_specs()
    rows = ["| Algorithm | On OpenRLHF " + OPENRLHF_VERSION + " | The spec asks for | OpenRLHF runs instead |",
            "|---|---|---|---|"]
    for spec in lineage(specs):
        t = translation_for(spec, max_new_tokens)
        name = f"[{spec.name}](../reference/algorithms/{spec.id}.md)"
        if not t.gaps:
            rows.append(f"| {name} | exact | | |")
            continue
        for i, gap in enumerate(t.gaps):
            first = i == 0
            rows.append(f"| {name if first else ''} | {'approximated' if first else ''} | "
                        f"{gap.slot}: {_cell(gap.spec_says)} | {_cell(gap.nearest)} |")
    return "\n".join(rows)


def command_block(algorithm: str, *, tap: bool = True, **options: Any) -> str:
    """The printed command for ``algorithm`` as a fenced shell block (its approximations accepted, if any)."""
    cmd = build_command(algorithm, RunOptions(**options), accept_approximation=True,
                        tap_dir="work/openrlhf/tap" if tap else None)
    return "```bash\n" + cmd.shell() + "\n```"


def train_commands(preset: str = "gpu", gpus_per_node: int = RunOptions().gpus_per_node) -> list[str]:
    """`unipo train ALGO --engine openrlhf ...` for every shipped spec, with the flag its gaps need."""
    specs = load_specs()
    lines = []
    for spec in lineage(specs):
        t = translation_for(spec, RunOptions.from_preset(preset).max_new_tokens)
        line = f"unipo train {spec.id} --engine openrlhf --preset {preset}"
        if gpus_per_node != RunOptions().gpus_per_node:
            line += f" --gpus-per-node {gpus_per_node}"
        lines.append(line + (" --accept-approximation" if t.gaps else ""))
    return lines


@macro(with_site=False)
def openrlhf_translations() -> str:
    """Markdown table: every shipped spec, exact on OpenRLHF or its gaps and approximations."""
    return translations_table()


@macro(with_site=False)
def openrlhf_command(algorithm: str, tap: bool = True, **options: Any) -> str:
    """The OpenRLHF command the builder prints for ``algorithm`` (a fenced bash block)."""
    return command_block(algorithm, tap=tap, **options)


@macro(with_site=False)
def openrlhf_train_commands(preset: str = "gpu", gpus_per_node: int = RunOptions().gpus_per_node) -> str:
    """One `unipo train --engine openrlhf` line per shipped spec, as a fenced bash block."""
    return "```bash\n" + "\n".join(train_commands(preset, gpus_per_node)) + "\n```"


@macro(with_site=False)
def openrlhf_version() -> str:
    return OPENRLHF_VERSION
