"""Arithmetic word problems whose answers can be worked out at different lengths.

The RL chapters need a task where (a) a reward can be checked exactly, (b) a ~1M-parameter model can
reach "sometimes right" after a short supervised warm start, so that a group of G samples contains
both correct and wrong answers, (c) the same prompt admits answers of clearly different lengths, with
the longer, step-by-step ones more reliable for a small model, and (d) everything is generated here,
offline, from a seed.

(c) is what gives RL a lever that the length-aware objectives can act on: answers that work step by
step earn more reward, so response length moves during training, and per-response normalisation
(GRPO's 1/|o_i|), clip-higher, overlong shaping and dynamic sampling have something to act on. Four
templates (add, sub, mul, coins = a + b * c), each at several levels (operand digits), and each
problem gets ONE worked solution in one of three styles, drawn at random per row:

    prompt:  Ana has 347 stickers and gets 285 more. How many stickers does Ana have now?
    bare:    347 + 285 = 632. Answer: 632
    column:  7 + 5 = 12, write 2 carry 1. 4 + 8 + 1 = 13, write 3 carry 1. 3 + 2 + 1 = 6, write 6.
             So 347 + 285 = 632. Answer: 632
    check:   the column solution, then "Check: 632 - 285 = 347." before the answer (add and sub)

The bare style is short and, beyond one-digit operands, usually wrong for a small model; the column
style does one digit at a time (carries and borrows written out) and is usually right; the check adds
a verification line. The SFT warm start sees all styles mixed (STYLE_MIX), so the warm-started policy
picks a style at random per sample, and RL can learn which one pays for which problem. Easy prompts
(one-digit operands) are right in any style: there the short answer suffices.

The reward (training/reward.py) only reads the final ``Answer: <int>``.

Row format of data/tasks/{train,eval}.jsonl (one JSON object per line)::

    {"id": "eval-0001", "prompt": str, "answer": str, "solution": str, "style": str,
     "template": str, "level": int}

``answer`` is ALWAYS a string holding a base-10 integer (``"632"``): OpenRLHF passes labels through as
strings, and a user's own file (say a copy of MATH) may hold answers that are not integers at all.

The eval set is a fixed held-out set (1,500 problems: about +-1.3 points of accuracy unpaired, less
for a paired comparison of the same problems), unique by prompt text and disjoint from the training
prompts. Training prompts may repeat (one-digit cells are small).

Generator versions. Version 2 (the shipped data/tasks and the runs made on it) writes two files:
train.jsonl, read by SFT and, there, by RL as well, and eval.jsonl. Version 3 (the default) writes
three disjoint pools from the seed, so that RL never trains on prompts the warm start learned by
heart (issue 20: a warm start that saw its RL prompts 85 times answered them 99.8% right against
78% held-out, and RL had nothing left to learn): train.jsonl, the SFT pool; rl.jsonl, the RL pool; eval.jsonl,
the held-out pool (each file's name and what it holds: ``unipo_build/core/file_names.py``).

No prompt text is in two pools (meta.json counts the shared prompts of every pair, all zero, and
``check_pools`` refuses a directory where one is not). Version 3 also takes a task level: which
templates at which operand digits, and the style mix. The levels are data (TASK_LEVELS), named by
each size preset (``unipo_build/core/presets.py``, ``task_level``), not code branches.

CLI: ``python -m training.task --out work/tasks-tiny --seed 0 --level tiny`` (``--version 2`` remakes
the shipped two-file data; ``--force`` replaces a task already in ``--out``).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from unipo_build.core.file_names import HELDOUT_POOL, POOL_FILES, RL_POOL, SFT_POOL, TASK_META
from unipo_build.core.numbers import fmt_num

GENERATOR_VERSION = "3"
GENERATOR_VERSIONS = ("2", "3")
DEFAULT_SEED = 0
DEFAULT_N_TRAIN = 12_000  # the SFT pool (version 3) or the training set (version 2)
DEFAULT_N_RL = 8_000  # the RL pool (version 3): 16 x 100 draws (tiny set) see each prompt about once
DEFAULT_N_EVAL = 1_500
DEFAULT_LEVEL = "tiny"

NAMES = ("Ana", "Ben", "Cara", "Dan", "Eva", "Finn", "Gia", "Hugo")
ITEMS = ("stickers", "marbles", "cards", "stamps", "shells", "beads")
FRUITS = ("apples", "pears", "plums", "cherries", "grapes", "figs")

STYLES = ("bare", "column", "check")
# Share of each style in the generated solutions (SFT data). "check" falls back to "column" for
# templates without a check line (mul, coins).
STYLE_MIX = {"bare": 0.5, "column": 0.35, "check": 0.15}
# Levels (operand digits) per template of the tiny level (= version 2's); every (template, level)
# cell is equally frequent.
LEVELS = {"add": (2, 3), "sub": (2, 3), "mul": (2,), "coins": (1, 2)}


@dataclass(frozen=True)
class Problem:
    prompt: str
    answer: int
    solutions: dict[str, str]  # style -> worked solution


def operand(rng: random.Random, level: int) -> int:
    """A number with exactly `level` digits (level 1: 1..9, so never 0)."""
    return rng.randint(1 if level == 1 else 10 ** (level - 1), 10**level - 1)


def digits(n: int, width: int) -> list[int]:
    """Base-10 digits of n, least significant first, padded with zeros to `width`."""
    return [(n // 10**i) % 10 for i in range(width)]


# ----------------------------------------------------------------------------------------------
# Column working, one sentence per digit: the long, reliable way to the same answer.


def column_add(a: int, b: int) -> list[str]:
    """`7 + 5 = 12, write 2 carry 1.` per column, units first; the last column writes its whole sum."""
    width = len(str(max(a, b)))
    out, carry = [], 0
    for i, (x, y) in enumerate(zip(digits(a, width), digits(b, width))):
        s = x + y + carry
        expr = f"{x} + {y}" + (f" + {carry}" if carry else "")
        if i == width - 1:
            out.append(f"{expr} = {s}, write {s}.")
        else:
            out.append(f"{expr} = {s}, write {s % 10}" + (f" carry {s // 10}." if s >= 10 else "."))
        carry = s // 10
    return out


def column_sub(a: int, b: int) -> list[str]:
    """`14 - 8 = 6, write 6 borrow 1.` per column (a >= b); a borrowed 1 is written as `- 1`."""
    width = len(str(a))
    out, borrow = [], 0
    for x, y in zip(digits(a, width), digits(b, width)):
        need = x - borrow < y
        top = x + 10 * need
        r = top - borrow - y
        expr = f"{top}" + (" - 1" if borrow else "") + f" - {y}"
        out.append(f"{expr} = {r}, write {r}" + (" borrow 1." if need else "."))
        borrow = int(need)
    return out


def column_mul(a: int, d: int) -> list[str]:
    """`7 * 6 = 42, write 2 carry 4.` per digit of a (d has one digit); the last writes the whole."""
    width = len(str(a))
    out, carry = [], 0
    for i, x in enumerate(digits(a, width)):
        s = x * d + carry
        expr = f"{x} * {d}" + (f" + {carry}" if carry else "")
        if i == width - 1:
            out.append(f"{expr} = {s}, write {s}.")
        else:
            out.append(f"{expr} = {s}, write {s % 10}" + (f" carry {s // 10}." if s >= 10 else "."))
        carry = s // 10
    return out


def finish(lines: list[str], answer: int) -> str:
    return " ".join(lines + [f"Answer: {answer}"])


def styles_for(column: list[str], bare: list[str], answer: int, check: str | None) -> dict[str, str]:
    solutions = {"bare": finish(bare, answer), "column": finish(column, answer)}
    solutions["check"] = finish(column + [check], answer) if check else solutions["column"]
    return solutions


# ----------------------------------------------------------------------------------------------
# Templates: each takes (rng, level) and returns a Problem with a solution in every style. Keep the
# arithmetic exactly what a careful student would write; tests re-check every line.


def make_add(rng: random.Random, level: int) -> Problem:
    name, items = rng.choice(NAMES), rng.choice(ITEMS)
    a, b = operand(rng, level), operand(rng, level)
    v = a + b
    prompt = f"{name} has {a} {items} and gets {b} more. How many {items} does {name} have now?"
    return Problem(prompt, v, styles_for(column_add(a, b) + [f"So {a} + {b} = {v}."], [f"{a} + {b} = {v}."], v,
                                         f"Check: {v} - {b} = {a}."))


def make_sub(rng: random.Random, level: int) -> Problem:
    """'Fruit minus eaten': the eaten count never exceeds what is there (answer >= 0)."""
    name, fruits = rng.choice(NAMES), rng.choice(FRUITS)
    a = operand(rng, level)
    b = rng.randint(1, a)
    v = a - b
    prompt = f"{name} has {a} {fruits} and eats {b} of them. How many {fruits} are left?"
    return Problem(prompt, v, styles_for(column_sub(a, b) + [f"So {a} - {b} = {v}."], [f"{a} - {b} = {v}."], v,
                                         f"Check: {v} + {b} = {a}."))


def make_mul(rng: random.Random, level: int) -> Problem:
    """A `level`-digit number times a one-digit number (2..9)."""
    name, items = rng.choice(NAMES), rng.choice(ITEMS)
    a, d = operand(rng, level), rng.randint(2, 9)
    v = a * d
    prompt = f"{name} buys {a} boxes with {d} {items} in each box. How many {items} does {name} buy?"
    return Problem(prompt, v, styles_for(column_mul(a, d) + [f"So {a} * {d} = {v}."], [f"{a} * {d} = {v}."], v, None))


def make_coins(rng: random.Random, level: int) -> Problem:
    """a + b * c in two steps (the product first): the longest worked solutions of the task."""
    name = rng.choice(NAMES)
    a, b, c = operand(rng, level), operand(rng, level), rng.randint(2, 9)
    p, v = b * c, a + b * c
    prompt = (f"{name} has {a} coins and finds {b} bags with {c} coins in each bag. "
              f"How many coins does {name} have now?")
    column = column_mul(b, c) + [f"So {b} * {c} = {p}."] + column_add(a, p) + [f"So {a} + {p} = {v}."]
    return Problem(prompt, v, styles_for(column, [f"{b} * {c} = {p}.", f"{a} + {p} = {v}."], v, None))


def make_spend(rng: random.Random, level: int) -> Problem:
    """a - b * c in two steps (the cost first, then what is left): b has `level` digits, a one more."""
    name, items = rng.choice(NAMES), rng.choice(ITEMS)
    b, c = operand(rng, level), rng.randint(2, 9)
    p = b * c
    a = rng.randint(max(p, 10**level), 10 ** (level + 1) - 1)
    v = a - p
    prompt = (f"{name} has {a} coins and buys {b} {items} at {c} coins each. "
              f"How many coins does {name} have left?")
    column = column_mul(b, c) + [f"So {b} * {c} = {p}."] + column_sub(a, p) + [f"So {a} - {p} = {v}."]
    return Problem(prompt, v, styles_for(column, [f"{b} * {c} = {p}.", f"{a} - {p} = {v}."], v, None))


ASK_SMALLEST = 2  # the questions' smallest operand (the largest is their level)


def _asked(a: int, sign: str, b: int, v: int) -> Problem:
    """A bare question and its one-equation solution, the same in every style."""
    return Problem(f"What is {a} {sign} {b}?", v, dict.fromkeys(STYLES, finish([f"{a} {sign} {b} = {v}."], v)))


def make_ask_add(rng: random.Random, level: int) -> Problem:
    """'What is a + b?', a and b from 2 to `level` (the largest operand, not a digit count): a chat model's
    question, the number alone its expected answer."""
    a, b = rng.randint(ASK_SMALLEST, level), rng.randint(ASK_SMALLEST, level)
    return _asked(a, "+", b, a + b)


def make_ask_sub(rng: random.Random, level: int) -> Problem:
    """'What is a - b?', a >= b, both from 2 to `level`: the answer is never negative, so no minus sign can be
    misread (the last-integer reward reads '-' as a sign only before a number)."""
    a, b = sorted((rng.randint(ASK_SMALLEST, level), rng.randint(ASK_SMALLEST, level)), reverse=True)
    return _asked(a, "-", b, a - b)


TEMPLATES: dict[str, Callable[[random.Random, int], Problem]] = {
    "add": make_add,
    "sub": make_sub,
    "mul": make_mul,
    "coins": make_coins,
    "spend": make_spend,
    "ask_add": make_ask_add,
    "ask_sub": make_ask_sub,
}


@dataclass(frozen=True)
class TaskLevel:
    """What a task level draws: templates at operand digits (every cell equally often) and the style
    mix of the worked solutions. A size preset names its level (``Preset.task_level``)."""

    name: str
    levels: dict[str, tuple[int, ...]]
    style_mix: dict[str, float]
    description: str
    # What a row's "level" means (meta.json's level_meaning).
    level_meaning: str = ("digits of the operands (the multiplier in mul and coins has one digit, 2-9; in spend the "
                          "amount has one digit more than the count)")
    # The run header's task name.
    task_name: str = "arithmetic word problems"
    # Pool sizes when none is asked for (SFT, RL, held-out rows): a level with few distinct prompts needs
    # smaller pools, since no prompt may be in two of them.
    sizes: tuple[int, int, int] | None = None


TASK_LEVELS: dict[str, TaskLevel] = {
    # Version 2's cells and mix: a ~1M-parameter model warm-starts at about a third greedy.
    "tiny": TaskLevel("tiny", LEVELS, STYLE_MIX,
                      "2-3 digit addition and subtraction, 2-digit times 1-digit, coins a + b * c at 1-2 digits"),
    # For the ~34M-parameter gpu preset, which learns the tiny level to ~78% by SFT alone: more
    # digits (4-digit addition and subtraction, 3-digit multiplication in columns) and two two-step
    # templates (coins a + b * c, spend a - b * c); the bare style keeps half the SFT answers,
    # tempting and, beyond 2 digits, unreliable. Easy cells (2-digit addition and subtraction) stay,
    # where the bare answer is good enough, so the right length depends on the problem. Every worked
    # solution fits the presets' 96 new tokens (tests/test_task.py measures the longest; a 2-digit
    # by 2-digit long multiplication needs about 137, so it is not here).
    "gpu": TaskLevel("gpu", {"add": (2, 4), "sub": (2, 4), "mul": (3,), "coins": (2,), "spend": (2,)}, STYLE_MIX,
                     "2- and 4-digit addition and subtraction, 3-digit times 1-digit in columns, coins a + b * c "
                     "and spend a - b * c at 2 digits"),
    # For a pretrained chat model (the smollm2 preset), which cannot do the word problems above (0-6% greedy,
    # shared/FEASIBILITY.md) but answers some bare questions, read by their last integer (reward rule
    # last_integer; no difference is negative). The SFT pool keeps the three pools disjoint; nothing trains on it.
    # 1,521 + 780 distinct questions: held-out 1,000, RL 2,000 draws, SFT 500. Greedy start of
    # SmolLM2-135M-Instruct (Q4_1, 2026-11-29), greedy: 7.8% of the first 64 held-out questions at 64 new tokens (40
    # answers cut off before their number), 20.3% at the preset's 128 (2 cut off), in the 15-40% asked for. Narrower
    # operands (2-30, 2-20) would leave too few distinct questions for three disjoint pools.
    "smollm2": TaskLevel("smollm2", {"ask_add": (40,), "ask_sub": (40,)}, {"bare": 1.0},
                         "'What is a + b?' and 'What is a - b?' (a >= b), operands 2-40",
                         level_meaning="the largest operand (both are drawn from 2 to it)",
                         task_name="arithmetic questions", sizes=(500, 2_000, 1_000)),
}


def get_level(name: str) -> TaskLevel:
    try:
        return TASK_LEVELS[name]
    except KeyError:
        raise ValueError(f"unknown task level {name!r}; choose from {', '.join(TASK_LEVELS)}") from None


def pick_style(rng: random.Random, mix: dict[str, float] = STYLE_MIX) -> str:
    x, acc = rng.random(), 0.0
    for style, share in mix.items():
        acc += share
        if x < acc:
            return style
    return STYLES[-1]


def make_row(rng: random.Random, template: str, level: int, row_id: str,
             mix: dict[str, float] = STYLE_MIX) -> dict:
    p = TEMPLATES[template](rng, level)
    style = pick_style(rng, mix)
    return {
        "id": row_id,
        "prompt": p.prompt,
        "answer": str(p.answer),
        "solution": p.solutions[style],
        "style": style,
        "template": template,
        "level": level,
    }


def cells(levels: dict[str, tuple[int, ...]] = LEVELS) -> list[tuple[str, int]]:
    """Every (template, level) pair; rows cycle through them so each is equally represented."""
    return [(t, lv) for t in levels for lv in levels[t]]


def generate_rows(
    rng: random.Random,
    n: int,
    prefix: str,
    exclude: set[str] = frozenset(),
    unique: bool = False,
    max_tries: int = 1000,
    level: "TaskLevel | None" = None,
) -> list[dict]:
    """`n` rows, balanced over (template, level) cells, then shuffled.

    Prompts in `exclude` are redrawn (keeps train disjoint from eval); with `unique`, repeats too.
    `level`: the task level (default: the tiny level, version 2's cells and style mix).
    """
    level = level or TASK_LEVELS[DEFAULT_LEVEL]
    grid, rows, seen = cells(level.levels), [], set()
    for i in range(n):
        template, digits_ = grid[i % len(grid)]
        for _ in range(max_tries):
            row = make_row(rng, template, digits_, "", level.style_mix)
            if row["prompt"] not in exclude and not (unique and row["prompt"] in seen):
                break
        else:
            raise RuntimeError(f"cannot draw a new {template!r} level-{digits_} prompt in {max_tries} tries")
        seen.add(row["prompt"])
        rows.append(row)
    rng.shuffle(rows)
    width = len(str(n))
    for i, row in enumerate(rows):
        row["id"] = f"{prefix}-{i + 1:0{width}d}"
    return rows


def write_jsonl(path: Path, rows: list[dict]) -> None:
    with open(path, "w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")


def file_sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


STYLE_MEANING = {
    "bare": "the equation(s) only, then the answer",
    "column": "one sentence per digit with carries and borrows, then the equation(s), then the answer",
    "check": "the column working plus a check line (add and sub; column elsewhere)",
}


def generate_task(
    out_dir: str | Path = "data/tasks",
    seed: int = DEFAULT_SEED,
    n_train: int | None = None,
    n_eval: int | None = None,
    *,
    version: str = GENERATOR_VERSION,
    level: str = DEFAULT_LEVEL,
    n_rl: int | None = None,
) -> dict:
    """Write the task's files and meta.json to `out_dir`; return the meta dict.

    Version 3: three disjoint pools (train.jsonl for SFT, rl.jsonl, eval.jsonl) of the task level
    `level`. Version 2: train.jsonl and eval.jsonl of the tiny level, byte for byte what the shipped
    data/tasks holds (`level` and `n_rl` do not apply). Either way the held-out set is drawn first
    from its own seeded stream, so it does not change when the other sizes do. A size left None is the
    level's (TaskLevel.sizes), else the defaults (DEFAULT_N_TRAIN, DEFAULT_N_RL, DEFAULT_N_EVAL).
    """
    if version == "2":
        if level != DEFAULT_LEVEL:
            raise ValueError(f"generator version 2 has one level ({DEFAULT_LEVEL}); --level {level} needs version 3")
        return _generate_v2(Path(out_dir), seed, DEFAULT_N_TRAIN if n_train is None else n_train,
                            DEFAULT_N_EVAL if n_eval is None else n_eval)
    if version != "3":
        raise ValueError(f"unknown generator version {version!r}; choose from {', '.join(GENERATOR_VERSIONS)}")
    lv = get_level(level)
    sizes = lv.sizes or (DEFAULT_N_TRAIN, DEFAULT_N_RL, DEFAULT_N_EVAL)
    n_train = sizes[0] if n_train is None else n_train
    n_rl = sizes[1] if n_rl is None else n_rl
    n_eval = sizes[2] if n_eval is None else n_eval
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    pools: dict[str, list[dict]] = {}
    pools["heldout"] = generate_rows(random.Random(f"{seed}-{level}-heldout"), n_eval, "eval", unique=True, level=lv)
    taken = {r["prompt"] for r in pools["heldout"]}
    pools["rl"] = generate_rows(random.Random(f"{seed}-{level}-rl"), n_rl, "rl", exclude=taken, level=lv)
    for row in pools["rl"]:  # RL needs prompt and answer; without worked solutions nothing can SFT on it
        del row["solution"], row["style"]
    taken |= {r["prompt"] for r in pools["rl"]}
    pools["sft"] = generate_rows(random.Random(f"{seed}-{level}-sft"), n_train, "train", exclude=taken, level=lv)
    for pool, name in POOL_FILES.items():
        write_jsonl(out / name, pools[pool])
    shared = shared_prompts({pool: {r["prompt"] for r in pools[pool]} for pool in POOL_FILES})
    meta = {
        "generator": "training.task",
        "generator_version": "3",
        "seed": seed,
        "level": lv.name,
        "level_description": lv.description,
        "n_train": len(pools["sft"]),
        "n_rl": len(pools["rl"]),
        "n_eval": len(pools["heldout"]),
        "pools": {pool: {"file": POOL_FILES[pool], "rows": len(pools[pool]),
                         "distinct_prompts": len({r["prompt"] for r in pools[pool]})} for pool in POOL_FILES},
        "pool_use": {"sft": "the SFT warm start trains on its worked solutions",
                     "rl": "RL draws its prompts here; the SFT stop rule's periodic eval scores its first rows",
                     "heldout": "evaluation only"},
        "shared_prompts": shared,
        "pools_disjoint": not any(shared.values()),
        "templates": list(lv.levels),
        "levels": {t: list(d) for t, d in lv.levels.items()},
        "level_meaning": lv.level_meaning,
        "styles": dict(lv.style_mix),
        "style_meaning": STYLE_MEANING,
        "answer_type": "string holding a base-10 integer",
        "bytes": {name: (out / name).stat().st_size for name in POOL_FILES.values()},
        "sha256": {name: file_sha256(out / name) for name in POOL_FILES.values()},
    }
    (out / TASK_META).write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
    return meta


def _generate_v2(out: Path, seed: int, n_train: int, n_eval: int) -> dict:
    """Version 2: the shipped data/tasks (train.jsonl, read by SFT and RL alike, and eval.jsonl)."""
    out.mkdir(parents=True, exist_ok=True)
    eval_rows = generate_rows(random.Random(f"{seed}-eval"), n_eval, "eval", unique=True)
    eval_prompts = {r["prompt"] for r in eval_rows}
    train_rows = generate_rows(random.Random(f"{seed}-train"), n_train, "train", exclude=eval_prompts)
    write_jsonl(out / SFT_POOL, train_rows)
    write_jsonl(out / HELDOUT_POOL, eval_rows)
    meta = {
        "generator": "training.task",
        "generator_version": "2",
        "seed": seed,
        "n_train": len(train_rows),
        "n_eval": len(eval_rows),
        "distinct_train_prompts": len({r["prompt"] for r in train_rows}),
        "templates": list(LEVELS),
        "levels": {t: list(lv) for t, lv in LEVELS.items()},
        "level_meaning": "digits of the operands (the multiplier in mul and coins has one digit, 2-9)",
        "styles": dict(STYLE_MIX),
        "style_meaning": STYLE_MEANING,
        "answer_type": "string holding a base-10 integer",
        "eval_disjoint_from_train": "by prompt text",
        "bytes": {name: (out / name).stat().st_size for name in (SFT_POOL, HELDOUT_POOL)},
        "sha256": {name: file_sha256(out / name) for name in (SFT_POOL, HELDOUT_POOL)},
    }
    (out / TASK_META).write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
    return meta


def shared_prompts(pools: dict[str, set[str]]) -> dict[str, int]:
    """Prompts in both pools of every pair, e.g. {"sft-rl": 0, "sft-heldout": 0, "rl-heldout": 0}."""
    names = list(pools)
    return {f"{a}-{b}": len(pools[a] & pools[b]) for i, a in enumerate(names) for b in names[i + 1:]}


def task_version(task_dir: str | Path) -> str | None:
    """The generator version in a task directory's meta.json; None for a directory without one."""
    meta = Path(task_dir) / TASK_META
    try:
        return str(json.loads(meta.read_text(encoding="utf-8")).get("generator_version"))
    except (OSError, ValueError, AttributeError):
        return None


def check_pools(task_dir: str | Path) -> dict[str, int]:
    """Refuse a task directory whose pools share a prompt; return the pools' sizes in rows.

    Reads every pool file present (train.jsonl, rl.jsonl, eval.jsonl). The error is one line: the
    file, the count of shared prompts and the way out.
    """
    task_dir = Path(task_dir)
    present = {pool: task_dir / name for pool, name in POOL_FILES.items() if (task_dir / name).is_file()}
    rows = {pool: load_task(path) for pool, path in present.items()}
    prompts = {pool: {r["prompt"] for r in pool_rows} for pool, pool_rows in rows.items()}
    names = list(prompts)
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            both = prompts[a] & prompts[b]
            if both:
                raise TaskFileError(
                    f"{present[b]}: {len(both)} prompts also in {present[a].name} ({a} pool), but the pools must share "
                    f"none: make the directory again with `python -m training.task --out {task_dir} --seed SEED "
                    f"--level LEVEL` (or remove those rows from one of the files)")
    return {pool: len(pool_rows) for pool, pool_rows in rows.items()}


# ----------------------------------------------------------------------------------------------
# Loading: our files, or a user's own JSONL of {"prompt", "answer"} rows (extra fields kept).


class TaskFileError(ValueError):
    """A task JSONL row that cannot be used; the message names file, line and field."""


def normalize_answer(value, path: Path, line_no: int) -> str:
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise TaskFileError(
            f"{path}, line {line_no}: field 'answer' must be an integer or a string, got {type(value).__name__}"
        )
    text = str(value).strip()
    if not text:
        raise TaskFileError(f"{path}, line {line_no}: field 'answer' is empty")
    return text


def load_task(path: str | Path) -> list[dict]:
    """Read a task JSONL into a list of dicts with at least "prompt" (str) and "answer" (str).

    Accepts our generated files and any user file of {"prompt": ..., "answer": ...} rows; other
    fields are kept as they are. Integer answers become strings ("43"); blank lines are skipped.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"task file not found: {path}")
    rows = []
    with open(path, encoding="utf-8") as f:
        for line_no, line in enumerate(f, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as e:
                raise TaskFileError(f"{path}, line {line_no}: not valid JSON ({e.msg})") from None
            if not isinstance(row, dict):
                raise TaskFileError(f"{path}, line {line_no}: expected a JSON object, got {type(row).__name__}")
            for field in ("prompt", "answer"):
                if field not in row:
                    raise TaskFileError(f"{path}, line {line_no}: missing field {field!r}")
            if not isinstance(row["prompt"], str) or not row["prompt"].strip():
                raise TaskFileError(f"{path}, line {line_no}: field 'prompt' must be a non-empty string")
            row["answer"] = normalize_answer(row["answer"], path, line_no)
            row.setdefault("id", f"{path.stem}-{line_no}")
            rows.append(row)
    if not rows:
        raise TaskFileError(f"{path}: no rows")
    return rows


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="data/tasks")
    ap.add_argument("--seed", type=int, default=DEFAULT_SEED)
    ap.add_argument("--level", default=DEFAULT_LEVEL, choices=list(TASK_LEVELS),
                    help="the task level (a preset's task_level; default %(default)s)")
    ap.add_argument("--version", default=GENERATOR_VERSION, choices=GENERATOR_VERSIONS,
                    help="3: three disjoint pools (default); 2: the shipped two-file layout")
    ap.add_argument("--n-train", type=int, help=f"rows of the SFT pool ({SFT_POOL}; default: the level's, else "
                                                 f"{fmt_num(DEFAULT_N_TRAIN)})")
    ap.add_argument("--n-rl", type=int, help=f"rows of the RL pool ({RL_POOL}; version 3; default: the level's, else "
                                             f"{fmt_num(DEFAULT_N_RL)})")
    ap.add_argument("--n-eval", type=int, help=f"held-out problems ({HELDOUT_POOL}; default: the level's, else "
                                               f"{fmt_num(DEFAULT_N_EVAL)})")
    ap.add_argument("--force", action="store_true", help="replace a task already in --out")
    args = ap.parse_args(argv)
    held = [name for name in (*POOL_FILES.values(), TASK_META) if (Path(args.out) / name).exists()]
    if held and not args.force:
        ap.exit(2, f"{args.out} already holds a task (generator version {task_version(args.out)}: "
                   f"{', '.join(held)}); nothing was changed: choose another --out, or pass --force to replace it "
                   f"(runs made on it then no longer match their task)\n")
    try:
        meta = generate_task(args.out, args.seed, args.n_train, args.n_eval, version=args.version, level=args.level,
                             n_rl=args.n_rl)
    except ValueError as err:
        ap.exit(2, f"{err}\n")
    print(json.dumps(meta, indent=2))


if __name__ == "__main__":
    main()
