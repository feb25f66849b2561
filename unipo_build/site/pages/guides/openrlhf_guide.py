"""Macros for the guide "Train at scale with OpenRLHF": what the command builder does, computed at build time.

The table of exact and approximated algorithms and the printed commands come from
``unipo_build.trainers.openrlhf.command`` itself, so the guide cannot drift from the code. The table is
HTML with every spec string escaped; a command is a fenced block whose fence is longer than any
run of backticks inside it, so nothing in a spec is read as Markdown.
"""

from __future__ import annotations

import re
from typing import Any, Callable

from unipo_build.trainers.openrlhf import OPENRLHF_VERSION
from unipo_build.trainers.openrlhf.command import RunOptions, build_command, translation_for
from unipo_build.core.specs import lineage, load_specs
from unipo_build.site.fmt import escape_text, table
from unipo_build.site.page_links import page_linker
from unipo_build.site.pages.guides.reference import ALGORITHM_PAGES
from unipo_build.site.context import Site, macro


def translations_table(max_new_tokens: int = RunOptions().max_new_tokens,
                       link: Callable[[str], str | None] = lambda target: None) -> str:
    """One row per spec: exact on OpenRLHF, or each gap with its nearest approximation (HTML;
    ``link`` gives the URL of a docs page, for the algorithm's reference page)."""
    specs = load_specs()
    rows = []
    for spec in lineage(specs):
        t = translation_for(spec, max_new_tokens)
        href = link(f"{ALGORITHM_PAGES}/{spec.id}.md")
        name = f'<a href="{escape_text(href)}">{escape_text(spec.name)}</a>' if href else escape_text(spec.name)
        if not t.gaps:
            rows.append([name, "exact", "", ""])
            continue
        for i, gap in enumerate(t.gaps):
            first = i == 0
            rows.append([name if first else "", "approximated" if first else "",
                         escape_text(f"{gap.slot}: {gap.spec_says}"), escape_text(gap.nearest)])
    head = ["Algorithm", f"On OpenRLHF {escape_text(OPENRLHF_VERSION)}", "The spec asks for", "OpenRLHF runs instead"]
    return table(head, rows)


def fenced(text: str, language: str = "bash") -> str:
    """``text`` as a fenced code block that nothing inside it can close."""
    fence = "`" * max(3, 1 + max((len(run) for run in re.findall(r"`+", text)), default=0))
    return f"{fence}{language}\n{text}\n{fence}"


@macro(name="openrlhf_command", with_site=False, markdown=True)
def command_block(algorithm: str, tap: bool = True, **options: Any) -> str:
    """The printed command for ``algorithm`` as a fenced shell block (its approximations accepted, if any)."""
    cmd = build_command(algorithm, RunOptions(**options), accept_approximation=True,
                        tap_dir="work/openrlhf/tap" if tap else None)
    return fenced(cmd.shell())


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


@macro(html=True)
def openrlhf_translations(site: Site) -> str:
    """A table: every shipped spec, exact on OpenRLHF or its gaps and approximations."""
    return translations_table(link=page_linker(site.env))


@macro(with_site=False, markdown=True)
def openrlhf_train_commands(preset: str = "gpu", gpus_per_node: int = RunOptions().gpus_per_node) -> str:
    """One `unipo train --engine openrlhf` line per shipped spec, as a fenced bash block."""
    return fenced("\n".join(train_commands(preset, gpus_per_node)))


@macro(with_site=False)
def openrlhf_version() -> str:
    return OPENRLHF_VERSION
