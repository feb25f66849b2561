"""Task generation: determinism, held-out disjointness, the arithmetic of every worked solution in
every style, the style mix, loading."""

import json
import re

import pytest

from training.task import (DEFAULT_N_EVAL, LEVELS, STYLE_MIX, TEMPLATES, TaskFileError, column_add, column_mul,
                           column_sub, generate_task, load_task)

EQUATION = re.compile(r"(\d+) ([-+*]) (\d+) = (\d+)\.")
OPS = {"+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b}
ADD_COL = re.compile(r"^(\d) \+ (\d)(?: \+ (\d))? = (\d+), write (\d+)(?: carry (\d))?\.$")
SUB_COL = re.compile(r"^(\d+)( - 1)? - (\d) = (\d), write (\d)( borrow 1)?\.$")
MUL_COL = re.compile(r"^(\d) \* (\d)(?: \+ (\d))? = (\d+), write (\d+)(?: carry (\d))?\.$")


@pytest.fixture(scope="module")
def task(tmp_path_factory):
    out = tmp_path_factory.mktemp("task")
    meta = generate_task(out, seed=7, n_train=1500, n_eval=280)
    return out, meta, load_task(out / "train.jsonl"), load_task(out / "eval.jsonl")


def numbers(text):
    return [int(x) for x in re.findall(r"\d+", text)]


def test_same_seed_same_bytes_other_seed_differs(tmp_path, task):
    out, *_ = task
    generate_task(tmp_path / "a", seed=7, n_train=1500, n_eval=280)
    generate_task(tmp_path / "b", seed=8, n_train=1500, n_eval=280)
    for name in ("train.jsonl", "eval.jsonl"):
        assert (tmp_path / "a" / name).read_bytes() == (out / name).read_bytes()
        assert (tmp_path / "b" / name).read_bytes() != (out / name).read_bytes()


def test_eval_is_fixed_when_train_size_changes(tmp_path, task):
    out, *_ = task
    generate_task(tmp_path, seed=7, n_train=100, n_eval=280)
    assert (tmp_path / "eval.jsonl").read_bytes() == (out / "eval.jsonl").read_bytes()


def test_counts_balance_and_disjointness(task):
    _, meta, train, evals = task
    assert meta["n_train"] == len(train) == 1500 and meta["n_eval"] == len(evals) == 280
    eval_prompts = [r["prompt"] for r in evals]
    assert len(set(eval_prompts)) == len(eval_prompts)
    assert not set(eval_prompts) & {r["prompt"] for r in train}
    cells = {(t, lv) for t in TEMPLATES for lv in LEVELS[t]}
    for rows in (train, evals):
        counts = {c: sum((r["template"], r["level"]) == c for r in rows) for c in cells}
        assert max(counts.values()) - min(counts.values()) <= 1 and sum(counts.values()) == len(rows)
    assert len({r["id"] for r in train + evals}) == len(train) + len(evals)
    assert meta["templates"] == list(TEMPLATES) and meta["styles"] == STYLE_MIX


def test_row_schema(task):
    *_, train, evals = task
    for r in train[:50] + evals[:50]:
        assert set(r) == {"id", "prompt", "answer", "solution", "style", "template", "level"}
        assert isinstance(r["answer"], str) and int(r["answer"]) >= 0
        assert r["solution"].endswith(f"Answer: {r['answer']}")


def test_style_mix(task):
    *_, train, _ = task
    share = {s: sum(r["style"] == s for r in train) / len(train) for s in STYLE_MIX}
    for style, want in STYLE_MIX.items():
        assert abs(share[style] - want) < 0.05, (style, share)


def expected_answer(row):
    """The answer recomputed from the prompt's numbers alone, per template."""
    n = numbers(row["prompt"])
    t = row["template"]
    if t == "add":
        return n[0] + n[1]
    if t == "sub":
        return n[0] - n[1]
    if t == "mul":
        return n[0] * n[1]
    if t == "coins":
        return n[0] + n[1] * n[2]
    raise AssertionError(t)


def check_column(sentences, a, b, op):
    """Re-check one column computation digit by digit and return the number its writes compose."""
    width = len(str(max(a, b) if op != "-" else a))
    digits_a = [(a // 10**i) % 10 for i in range(width)]
    digits_b = [(b // 10**i) % 10 for i in range(width)] if op != "*" else [b] * width
    assert len(sentences) == width, sentences
    carry, written = 0, []
    for i, (sentence, x, y) in enumerate(zip(sentences, digits_a, digits_b)):
        last = i == width - 1
        if op == "-":
            m = SUB_COL.match(sentence)
            assert m, sentence
            top, borrowed, bottom, r, w, borrow_out = m.groups()
            assert int(bottom) == y and bool(borrowed) == bool(carry)
            assert int(top) == x + 10 * bool(borrow_out) and int(top) - carry - y == int(r) == int(w)
            carry = int(bool(borrow_out))
            written.append(w)
            continue
        m = (ADD_COL if op == "+" else MUL_COL).match(sentence)
        assert m, sentence
        p, q, c, total, w, k = m.groups()
        assert (int(p), int(q), int(c or 0)) == (x, y, carry)
        assert OPS[op](x, y) + carry == int(total)
        if last:
            assert w == total and k is None
        else:
            assert int(w) == int(total) % 10 and int(k or 0) == int(total) // 10
        carry = int(total) // 10
        written.append(w)
    return int("".join(reversed(written)))


def test_every_solution_is_correct_arithmetic_in_every_style(task):
    *_, train, evals = task
    for r in train + evals:
        answer = int(r["answer"])
        assert answer == expected_answer(r), r
        body, tail = r["solution"].rsplit(" Answer: ", 1)
        assert int(tail) == answer
        for a, op, b, value in EQUATION.findall(body):
            assert OPS[op](int(a), int(b)) == int(value), r["solution"]
        sentences = [s + "." for s in body.split(". ") if s]
        sentences[-1] = sentences[-1].rstrip(".") + "."
        if r["style"] == "bare":
            assert all(EQUATION.fullmatch(s) for s in sentences), r["solution"]
            continue
        n = numbers(r["prompt"])
        if r["style"] == "check" and r["template"] in ("add", "sub"):
            check = sentences.pop()
            a, b = n[0], n[1]
            assert check == (f"Check: {answer} - {b} = {a}." if r["template"] == "add" else f"Check: {answer} + {b} = {a}.")
        else:
            assert not any(s.startswith("Check:") for s in sentences)
        # column working, then "So <equation>." for each operation
        if r["template"] == "coins":
            a, b, c = n
            product = b * c
            cut = sentences.index(f"So {b} * {c} = {product}.")
            assert check_column(sentences[:cut], b, c, "*") == product
            assert sentences[-1] == f"So {a} + {product} = {answer}."
            assert check_column(sentences[cut + 1:-1], a, product, "+") == answer
        else:
            a, b = n[0], n[1]
            op = {"add": "+", "sub": "-", "mul": "*"}[r["template"]]
            assert sentences[-1] == f"So {a} {op} {b} = {answer}."
            assert check_column(sentences[:-1], a, b, op) == answer


def test_hand_checked_columns():
    assert column_add(347, 285) == ["7 + 5 = 12, write 2 carry 1.", "4 + 8 + 1 = 13, write 3 carry 1.",
                                    "3 + 2 + 1 = 6, write 6."]
    assert column_add(95, 7) == ["5 + 7 = 12, write 2 carry 1.", "9 + 0 + 1 = 10, write 10."]
    assert column_sub(503, 78) == ["13 - 8 = 5, write 5 borrow 1.", "10 - 1 - 7 = 2, write 2 borrow 1.",
                                   "5 - 1 - 0 = 4, write 4."]
    assert column_mul(347, 6) == ["7 * 6 = 42, write 2 carry 4.", "4 * 6 + 4 = 28, write 8 carry 2.",
                                  "3 * 6 + 2 = 20, write 20."]


def test_solutions_differ_in_length_per_prompt(task):
    """The point of the styles: the same problem has a short and a long worked solution."""
    from training.task import make_add
    import random

    p = make_add(random.Random(0), 3)
    lengths = {style: len(text.split()) for style, text in p.solutions.items()}
    assert lengths["bare"] * 2 < lengths["column"] < lengths["check"]


def test_committed_data_matches_generator(tmp_path):
    """data/tasks/ is exactly what the default seed generates (so the code and the data agree)."""
    from pathlib import Path

    committed = Path(__file__).resolve().parents[1] / "data" / "tasks"
    if not (committed / "meta.json").is_file():
        pytest.skip("data/tasks not generated")
    meta = json.loads((committed / "meta.json").read_text())
    generate_task(tmp_path, seed=meta["seed"], n_train=meta["n_train"], n_eval=meta["n_eval"])
    assert meta["n_eval"] == DEFAULT_N_EVAL
    for name in ("train.jsonl", "eval.jsonl", "meta.json"):
        assert (tmp_path / name).read_bytes() == (committed / name).read_bytes(), name


def write_lines(path, lines):
    path.write_text("\n".join(lines) + "\n")
    return path


def test_load_user_file_with_extra_fields(tmp_path):
    path = write_lines(tmp_path / "mine.jsonl", [
        json.dumps({"prompt": "What is 2 + 2?", "answer": 4, "source": "mine"}),
        "",
        json.dumps({"prompt": "Half of 1?", "answer": "\\frac{1}{2}"}),
    ])
    rows = load_task(path)
    assert [r["answer"] for r in rows] == ["4", "\\frac{1}{2}"]
    assert rows[0]["source"] == "mine" and rows[0]["id"] == "mine-1"


@pytest.mark.parametrize(
    "line, words",
    [
        ('{"prompt": "x?"}', ["line 2", "'answer'"]),
        ('{"answer": "3"}', ["line 2", "'prompt'"]),
        ('{"prompt": "x?", "answer": 1.5}', ["line 2", "'answer'", "float"]),
        ('{"prompt": "", "answer": "1"}', ["line 2", "'prompt'"]),
        ('{"prompt": "x?", "answer": ', ["line 2", "not valid JSON"]),
        ('["x?", "1"]', ["line 2", "JSON object"]),
    ],
)
def test_bad_rows_name_file_line_and_field(tmp_path, line, words):
    path = write_lines(tmp_path / "bad.jsonl", ['{"prompt": "ok?", "answer": "1"}', line])
    with pytest.raises(TaskFileError) as e:
        load_task(path)
    message = str(e.value)
    assert "bad.jsonl" in message
    for w in words:
        assert w in message


def test_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="nope.jsonl"):
        load_task(tmp_path / "nope.jsonl")
