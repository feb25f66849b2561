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

CLI: ``python -m training.task --out data/tasks --seed 0``
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

GENERATOR_VERSION = "2"
DEFAULT_SEED = 0
DEFAULT_N_TRAIN = 12_000
DEFAULT_N_EVAL = 1_500

NAMES = ("Ana", "Ben", "Cara", "Dan", "Eva", "Finn", "Gia", "Hugo")
ITEMS = ("stickers", "marbles", "cards", "stamps", "shells", "beads")
FRUITS = ("apples", "pears", "plums", "cherries", "grapes", "figs")

STYLES = ("bare", "column", "check")
# Share of each style in the generated solutions (SFT data). "check" falls back to "column" for
# templates without a check line (mul, coins).
STYLE_MIX = {"bare": 0.5, "column": 0.35, "check": 0.15}
# Levels (operand digits) per template; every (template, level) cell is equally frequent.
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


TEMPLATES: dict[str, Callable[[random.Random, int], Problem]] = {
    "add": make_add,
    "sub": make_sub,
    "mul": make_mul,
    "coins": make_coins,
}


def pick_style(rng: random.Random) -> str:
    x, acc = rng.random(), 0.0
    for style, share in STYLE_MIX.items():
        acc += share
        if x < acc:
            return style
    return STYLES[-1]


def make_row(rng: random.Random, template: str, level: int, row_id: str) -> dict:
    p = TEMPLATES[template](rng, level)
    style = pick_style(rng)
    return {
        "id": row_id,
        "prompt": p.prompt,
        "answer": str(p.answer),
        "solution": p.solutions[style],
        "style": style,
        "template": template,
        "level": level,
    }


def cells() -> list[tuple[str, int]]:
    """Every (template, level) pair; rows cycle through them so each is equally represented."""
    return [(t, lv) for t in TEMPLATES for lv in LEVELS[t]]


def generate_rows(
    rng: random.Random,
    n: int,
    prefix: str,
    exclude: set[str] = frozenset(),
    unique: bool = False,
    max_tries: int = 1000,
) -> list[dict]:
    """`n` rows, balanced over (template, level) cells, then shuffled.

    Prompts in `exclude` are redrawn (keeps train disjoint from eval); with `unique`, repeats too.
    """
    grid, rows, seen = cells(), [], set()
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


def file_sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def generate_task(
    out_dir: str | Path = "data/tasks",
    seed: int = DEFAULT_SEED,
    n_train: int = DEFAULT_N_TRAIN,
    n_eval: int = DEFAULT_N_EVAL,
) -> dict:
    """Write train.jsonl, eval.jsonl and meta.json to `out_dir`; return the meta dict.

    The eval set is drawn first from its own seeded stream, so it does not change when n_train does.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    eval_rows = generate_rows(random.Random(f"{seed}-eval"), n_eval, "eval", unique=True)
    eval_prompts = {r["prompt"] for r in eval_rows}
    train_rows = generate_rows(random.Random(f"{seed}-train"), n_train, "train", exclude=eval_prompts)
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
        "levels": {t: list(lv) for t, lv in LEVELS.items()},
        "level_meaning": "digits of the operands (the multiplier in mul and coins has one digit, 2-9)",
        "styles": dict(STYLE_MIX),
        "style_meaning": {
            "bare": "the equation(s) only, then the answer",
            "column": "one sentence per digit with carries and borrows, then the equation(s), then the answer",
            "check": "the column working plus a check line (add and sub; column elsewhere)",
        },
        "answer_type": "string holding a base-10 integer",
        "eval_disjoint_from_train": "by prompt text",
        "bytes": {name: (out / name).stat().st_size for name in ("train.jsonl", "eval.jsonl")},
        "sha256": {name: file_sha256(out / name) for name in ("train.jsonl", "eval.jsonl")},
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
    args = ap.parse_args(argv)
    meta = generate_task(args.out, args.seed, args.n_train, args.n_eval)
    print(json.dumps(meta, indent=2))


if __name__ == "__main__":
    main()
