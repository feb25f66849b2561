"""Arithmetic word problems with verifiable integer answers.

The RL chapters need a task where (a) a reward can be checked exactly, (b) a ~1M-parameter model can
reach "sometimes right" after a short supervised warm start, so that a group of G samples contains
both correct and wrong answers, and (c) everything is generated here, offline, from a seed.

Five templates, three default difficulty levels (operands with 1, 2 or 3 digits; level 4 exists for
bigger models). Every problem has a worked solution in one fixed format, for example::

    prompt:   Ana picks two numbers with a difference of 15 and a sum of 71. What is the larger of the two numbers?
    solution: 71 + 15 = 86. 86 / 2 = 43. Answer: 43

The solution is a sequence of ``<expression> = <result>.`` steps followed by ``Answer: <int>``; the
reward (training/reward.py) only reads the final ``Answer: <int>``.

Row format of data/tasks/{train,eval}.jsonl (one JSON object per line)::

    {"id": "eval-00001", "prompt": str, "answer": str, "solution": str, "template": str, "level": int}

``answer`` is ALWAYS a string holding a base-10 integer (``"43"``): OpenRLHF passes labels through as
strings, and a user's own file (say a copy of MATH) may hold answers that are not integers at all.

The eval set is a fixed held-out set (1500 problems gives about +-1.3 points of accuracy), unique by
prompt text and disjoint from the training prompts. Training prompts may repeat (level-1 cells are
small: two 1-digit numbers have only 36 (larger, smaller) pairs).

CLI: ``python -m training.task --out data/tasks --seed 0``
"""

from __future__ import annotations

import argparse
import json
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

GENERATOR_VERSION = "1"
DEFAULT_SEED = 0
DEFAULT_N_TRAIN = 20_000
DEFAULT_N_EVAL = 1_500
DEFAULT_LEVELS = (1, 2, 3)
SUPPORTED_LEVELS = (1, 2, 3, 4)

NAMES = ("Ana", "Ben", "Cara", "Dan", "Eva", "Finn", "Gia", "Hugo")
ITEMS = ("stickers", "marbles", "cards", "stamps", "shells", "beads")
FRUITS = ("apples", "pears", "plums", "cherries", "grapes", "figs")


@dataclass(frozen=True)
class Problem:
    prompt: str
    answer: int
    solution: str


def operand(rng: random.Random, level: int) -> int:
    """A number with exactly `level` digits (level 1: 1..9, so never 0)."""
    return rng.randint(1 if level == 1 else 10 ** (level - 1), 10**level - 1)


def worked(steps: list[tuple[str, int]], answer: int) -> str:
    """Format the fixed solution style: `58 + 28 = 86. 86 / 2 = 43. Answer: 43`."""
    return " ".join(f"{expr} = {value}." for expr, value in steps) + f" Answer: {answer}"


# ----------------------------------------------------------------------------------------------
# Templates: each takes (rng, level) and returns a Problem. Keep the arithmetic in the solution
# exactly what a careful student would write; tests re-check every step.


def make_add(rng: random.Random, level: int) -> Problem:
    name, items = rng.choice(NAMES), rng.choice(ITEMS)
    a, b = operand(rng, level), operand(rng, level)
    prompt = f"{name} has {a} {items} and gets {b} more. How many {items} does {name} have now?"
    return Problem(prompt, a + b, worked([(f"{a} + {b}", a + b)], a + b))


def make_sub(rng: random.Random, level: int) -> Problem:
    """'Apples minus eaten': the eaten count never exceeds what is there (answer >= 0)."""
    name, fruits = rng.choice(NAMES), rng.choice(FRUITS)
    a = operand(rng, level)
    b = rng.randint(1, a)
    prompt = f"{name} has {a} {fruits} and eats {b} of them. How many {fruits} are left?"
    return Problem(prompt, a - b, worked([(f"{a} - {b}", a - b)], a - b))


def make_mul(rng: random.Random, level: int) -> Problem:
    """A `level`-digit number times a 1-digit number (2..9): long multiplication stays short."""
    name, items = rng.choice(NAMES), rng.choice(ITEMS)
    a, b = operand(rng, level), rng.randint(2, 9)
    prompt = f"{name} buys {a} boxes with {b} {items} in each box. How many {items} does {name} buy?"
    return Problem(prompt, a * b, worked([(f"{a} * {b}", a * b)], a * b))


def make_diffsum(rng: random.Random, level: int) -> Problem:
    """Two numbers from their difference d and sum s: larger = (s + d) / 2, smaller = (s - d) / 2."""
    name = rng.choice(NAMES)
    x, y = operand(rng, level), operand(rng, level)
    while x == y:
        y = operand(rng, level)
    x, y = max(x, y), min(x, y)
    s, d = x + y, x - y
    if rng.random() < 0.5:
        which, steps, answer = "larger", [(f"{s} + {d}", s + d), (f"{s + d} / 2", x)], x
    else:
        which, steps, answer = "smaller", [(f"{s} - {d}", s - d), (f"{s - d} / 2", y)], y
    prompt = (
        f"{name} picks two numbers with a difference of {d} and a sum of {s}. "
        f"What is the {which} of the two numbers?"
    )
    return Problem(prompt, answer, worked(steps, answer))


def make_coins(rng: random.Random, level: int) -> Problem:
    """a + b * c in two steps: the product first, then the sum."""
    name = rng.choice(NAMES)
    a, b, c = operand(rng, level), operand(rng, level), rng.randint(2, 9)
    prompt = (
        f"{name} has {a} coins and finds {b} bags with {c} coins in each bag. "
        f"How many coins does {name} have now?"
    )
    total = a + b * c
    return Problem(prompt, total, worked([(f"{b} * {c}", b * c), (f"{a} + {b * c}", total)], total))


TEMPLATES: dict[str, Callable[[random.Random, int], Problem]] = {
    "add": make_add,
    "sub": make_sub,
    "mul": make_mul,
    "diffsum": make_diffsum,
    "coins": make_coins,
}


def make_row(rng: random.Random, template: str, level: int, row_id: str) -> dict:
    p = TEMPLATES[template](rng, level)
    return {
        "id": row_id,
        "prompt": p.prompt,
        "answer": str(p.answer),
        "solution": p.solution,
        "template": template,
        "level": level,
    }


def cells(levels: tuple[int, ...]) -> list[tuple[str, int]]:
    """Every (template, level) pair; rows cycle through them so each is equally represented."""
    return [(t, lv) for t in TEMPLATES for lv in levels]


def generate_rows(
    rng: random.Random,
    n: int,
    levels: tuple[int, ...],
    prefix: str,
    exclude: set[str] = frozenset(),
    unique: bool = False,
    max_tries: int = 1000,
) -> list[dict]:
    """`n` rows, balanced over (template, level) cells, then shuffled.

    Prompts in `exclude` are redrawn (keeps train disjoint from eval); with `unique`, repeats too.
    """
    grid, rows, seen = cells(levels), [], set()
    for i in range(n):
        template, level = grid[i % len(grid)]
        for _ in range(max_tries):
            row = make_row(rng, template, level, "")
            if row["prompt"] not in exclude and not (unique and row["prompt"] in seen):
                break
        else:
            raise RuntimeError(f"cannot draw a new {template!r} level-{level} prompt in {max_tries} tries")
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


def generate_task(
    out_dir: str | Path = "data/tasks",
    seed: int = DEFAULT_SEED,
    n_train: int = DEFAULT_N_TRAIN,
    n_eval: int = DEFAULT_N_EVAL,
    levels: tuple[int, ...] = DEFAULT_LEVELS,
) -> dict:
    """Write train.jsonl, eval.jsonl and meta.json to `out_dir`; return the meta dict.

    The eval set is drawn first from its own seeded stream, so it does not change when n_train does.
    """
    levels = tuple(levels)
    bad = [lv for lv in levels if lv not in SUPPORTED_LEVELS]
    if bad:
        raise ValueError(f"unsupported levels {bad}; choose from {SUPPORTED_LEVELS}")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    eval_rows = generate_rows(random.Random(f"{seed}-eval"), n_eval, levels, "eval", unique=True)
    eval_prompts = {r["prompt"] for r in eval_rows}
    train_rows = generate_rows(random.Random(f"{seed}-train"), n_train, levels, "train", exclude=eval_prompts)
    write_jsonl(out / "train.jsonl", train_rows)
    write_jsonl(out / "eval.jsonl", eval_rows)
    meta = {
        "generator": "training.task",
        "generator_version": GENERATOR_VERSION,
        "seed": seed,
        "n_train": len(train_rows),
        "n_eval": len(eval_rows),
        "distinct_train_prompts": len({r["prompt"] for r in train_rows}),
        "templates": list(TEMPLATES),
        "levels": list(levels),
        "level_meaning": "operands with this many digits (multipliers in mul and coins: one digit, 2-9)",
        "answer_type": "string holding a base-10 integer",
        "solution_format": "<expr> = <int>. [<expr> = <int>. ...] Answer: <int>",
        "eval_disjoint_from_train": "by prompt text",
        "bytes": {name: (out / name).stat().st_size for name in ("train.jsonl", "eval.jsonl")},
    }
    (out / "meta.json").write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
    return meta


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
    ap.add_argument("--n-train", type=int, default=DEFAULT_N_TRAIN)
    ap.add_argument("--n-eval", type=int, default=DEFAULT_N_EVAL)
    ap.add_argument("--levels", type=int, nargs="+", default=list(DEFAULT_LEVELS))
    args = ap.parse_args(argv)
    meta = generate_task(args.out, args.seed, args.n_train, args.n_eval, tuple(args.levels))
    print(json.dumps(meta, indent=2))


if __name__ == "__main__":
    main()
