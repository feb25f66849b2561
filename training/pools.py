"""Keeping RL's prompts apart from the warm start's (issue 20), in the RL trainer.

A warm start that learned its RL prompts by heart leaves RL nothing to learn: on the gpu preset it
answered them 99.8% right at rollout 0 against 78% held-out. So RL reads a task's RL pool
(rl.jsonl, generator version 3), refuses prompts the warm start trained on (its sft_meta.json names
its SFT data), and the run header records, after rollout 0, the training reward and the start
policy's sampled accuracy on the RL pool beside the held-out sampled accuracy
(``RunHeader.memorisation_check``).
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

from unipo_build.core.file_names import RL_POOL, SFT_META
from unipo_build.core.paths import project_relative
from unipo_build.core.schema import MemorisationCheck

from .runstate import TrainError
from .task import POOL_FILES, TaskFileError, check_pools, generate_task, load_task, task_version


def load_rows(task: str | None, preset, repo: Path) -> tuple[list[dict], list[dict], str]:
    """RL prompts and held-out rows: the preset's task, a task directory, or one JSONL split 90/10.

    A task directory's RL pool (rl.jsonl) when it has one (generator version 3), else its
    train.jsonl (version 2); a directory whose pools share a prompt is refused. The preset's own
    task directory is generated (its level, seed 0) when it does not exist.
    """
    source = Path(task) if task else repo / preset.task_dir
    if not task and not source.exists():
        generate_task(source, level=preset.task_level)
    if source.is_dir():
        try:
            check_pools(source)
        except TaskFileError as err:
            raise TrainError(str(err)) from None
        prompts = source / POOL_FILES["rl"]
        return (load_task(prompts if prompts.is_file() else source / POOL_FILES["sft"]),
                load_task(source / POOL_FILES["heldout"]), str(source))
    rows = load_task(source)
    cut = max(1, len(rows) // 10)
    shuffled = rows[:]
    random.Random(1234).shuffle(shuffled)
    return shuffled[cut:], shuffled[:cut], str(source)


def warm_start_overlap(checkpoint: str | Path, prompts: list[str], root: str | Path = ".",
                       prompts_file: str | Path | None = None) -> tuple[Path, int, int, bool] | None:
    """How many of `prompts` a warm start trained on, from its sft_meta.json.

    Returns (the SFT data file, shared distinct prompts, distinct prompts, legacy) or None when the
    checkpoint does not name a readable SFT file (a checkpoint made elsewhere) or nothing is shared.
    ``legacy``: the prompts come from `prompts_file`, and it is the SFT file itself, the train.jsonl of
    a generator-version-2 directory (that layout had no RL pool). A relative path in the meta is
    tried from `root` (the project, as sft.py stores it), then from the working directory.
    """
    meta_path = Path(checkpoint) / SFT_META
    try:
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    named = (meta.get("sft_data") or {}).get("file") or (
        str(Path(meta["task_dir"]) / POOL_FILES["sft"]) if meta.get("task_dir") else None)
    if not named:
        return None
    candidates = ([Path(root) / named] if not Path(named).is_absolute() else []) + [Path(named)]
    sft_file = next((c for c in candidates if c.is_file()), None)
    if sft_file is None:
        return None
    seen = {r["prompt"] for r in load_task(sft_file)}
    distinct = set(prompts)
    shared = len(distinct & seen)
    if not shared:
        return None
    legacy = (prompts_file is not None and Path(prompts_file).resolve() == sft_file.resolve()
              and task_version(sft_file.parent) == "2")
    return sft_file, shared, len(distinct), legacy


def check_rl_prompts(checkpoint: str, rows: list[dict], task_source: str, task_flag: str | None, level: str,
                     repo: Path) -> None:
    """Refuse RL prompts that the warm start trained on, in one line: the file, the count, the way out.

    The one exception is a version-2 task directory read with the warm start made on it: that
    layout has no RL pool (the shipped tiny set was trained so), and a line on stderr says so.
    """
    source = Path(task_source)
    prompts_file = next((source / POOL_FILES[k] for k in ("rl", "sft") if (source / POOL_FILES[k]).is_file()),
                        None) if source.is_dir() else source
    found = warm_start_overlap(checkpoint, [r["prompt"] for r in rows], repo, prompts_file)
    if found is None:
        return
    sft_file, shared, distinct, legacy = found
    flag = f"--task {task_flag}" if task_flag else f"task {project_relative(task_source, repo)}"
    if legacy:
        print(f"{flag}: generator version 2 has no RL pool, so RL draws the warm start's own SFT prompts ({shared} of "
              f"{distinct}); a version-3 task keeps them apart (python -m training.task --level {level})",
              file=sys.stderr)
        return
    raise TrainError(
        f"{flag}: {shared} of its {distinct} RL prompts are in the warm start's SFT data "
        f"({project_relative(sft_file, repo)}, named in {project_relative(checkpoint, repo)}/{SFT_META}): draw RL "
        f"prompts from the {RL_POOL} of the task that warm start was made on, or make a warm start on this task "
        f"(unipo sft --task-dir DIR)")


def memorisation_check(stats: dict, start_eval: dict, pool_eval: dict | None = None) -> MemorisationCheck | None:
    """Rollout 0's training reward (every sampled response, filtered groups included) beside the start
    evaluation's held-out sampled accuracy, with the start policy's sampled accuracy on the RL pool's
    first prompts (`pool_eval`, an ``evaluate`` result) when it was measured; None without a sampled
    start evaluation."""
    if start_eval.get("accuracy_sampled") is None:
        return None
    correct = stats["sampled_correct"]
    pool = pool_eval if pool_eval and pool_eval.get("accuracy_sampled") is not None else None
    return MemorisationCheck(train_reward=float(correct.float().mean()), train_responses=int(correct.numel()),
                             heldout_sampled=float(start_eval["accuracy_sampled"]), heldout_n=int(start_eval["n"]),
                             pool_sampled=float(pool["accuracy_sampled"]) if pool else None,
                             pool_n=int(pool["n"]) if pool else None)
