"""Task generation: determinism, held-out disjointness, arithmetic of every worked solution, loading."""

import json
import re

import pytest

from training.task import DEFAULT_N_EVAL, TEMPLATES, TaskFileError, generate_task, load_task

STEP = re.compile(r"(\d+) ([-+*/]) (\d+) = (\d+)\.")
OPS = {"+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b, "/": lambda a, b: a / b}


@pytest.fixture(scope="module")
def task(tmp_path_factory):
    out = tmp_path_factory.mktemp("task")
    meta = generate_task(out, seed=7, n_train=1500, n_eval=300)
    return out, meta, load_task(out / "train.jsonl"), load_task(out / "eval.jsonl")


def numbers(text):
    return [int(x) for x in re.findall(r"\d+", text)]


def test_same_seed_same_bytes_other_seed_differs(tmp_path, task):
    out, *_ = task
    generate_task(tmp_path / "a", seed=7, n_train=1500, n_eval=300)
    generate_task(tmp_path / "b", seed=8, n_train=1500, n_eval=300)
    for name in ("train.jsonl", "eval.jsonl"):
        assert (tmp_path / "a" / name).read_bytes() == (out / name).read_bytes()
        assert (tmp_path / "b" / name).read_bytes() != (out / name).read_bytes()


def test_eval_is_fixed_when_train_size_changes(tmp_path, task):
    out, *_ = task
    generate_task(tmp_path, seed=7, n_train=100, n_eval=300)
    assert (tmp_path / "eval.jsonl").read_bytes() == (out / "eval.jsonl").read_bytes()


def test_counts_balance_and_disjointness(task):
    _, meta, train, evals = task
    assert meta["n_train"] == len(train) == 1500 and meta["n_eval"] == len(evals) == 300
    eval_prompts = [r["prompt"] for r in evals]
    assert len(set(eval_prompts)) == len(eval_prompts)
    assert not set(eval_prompts) & {r["prompt"] for r in train}
    cells = {(t, lv) for t in TEMPLATES for lv in (1, 2, 3)}
    for rows in (train, evals):
        counts = {c: sum((r["template"], r["level"]) == c for r in rows) for c in cells}
        assert set(counts.values()) == {len(rows) // len(cells)}
    assert len({r["id"] for r in train + evals}) == len(train) + len(evals)
    assert meta["templates"] == list(TEMPLATES) and len(TEMPLATES) >= 5


def test_row_schema(task):
    *_, train, evals = task
    for r in train[:50] + evals[:50]:
        assert set(r) == {"id", "prompt", "answer", "solution", "template", "level"}
        assert isinstance(r["answer"], str) and int(r["answer"]) >= 0
        assert r["solution"].endswith(f"Answer: {r['answer']}")


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
    if t == "diffsum":
        d, s = n
        return (s + d) // 2 if "larger" in row["prompt"] else (s - d) // 2
    if t == "coins":
        return n[0] + n[1] * n[2]
    raise AssertionError(t)


def test_every_solution_is_correct_arithmetic(task):
    *_, train, evals = task
    for r in train + evals:
        assert int(r["answer"]) == expected_answer(r), r
        steps = STEP.findall(r["solution"])
        assert steps, r["solution"]
        for a, op, b, value in steps:
            assert OPS[op](int(a), int(b)) == int(value), r["solution"]
        assert int(steps[-1][3]) == int(r["answer"])
        # the solution is only steps and the answer line, in the fixed format
        assert re.fullmatch(r"(\d+ [-+*/] \d+ = \d+\. )+Answer: \d+", r["solution"]), r["solution"]


def test_operand_digits_follow_level(task):
    *_, train, _ = task
    for r in train:
        n = numbers(r["prompt"])
        digit_operands = {"add": n[:2], "sub": n[:1], "mul": n[:1], "coins": n[:2]}.get(r["template"])
        if digit_operands is None:  # diffsum: the prompt shows d and s; the hidden numbers have `level` digits
            digit_operands = [int(r["answer"])]
        assert all(len(str(x)) == r["level"] for x in digit_operands), r


def test_hand_checked_examples():
    """A few problems checked by hand against the fixed solution format."""
    from training.task import worked

    assert worked([("58 + 28", 86), ("86 / 2", 43)], 43) == "58 + 28 = 86. 86 / 2 = 43. Answer: 43"
    row = {"template": "diffsum", "prompt": "Ana picks two numbers with a difference of 3 and a sum of 31. "
           "What is the larger of the two numbers?"}
    assert expected_answer(row) == 17
    row = {"template": "coins", "prompt": "Ben has 12 coins and finds 3 bags with 4 coins in each bag. "
           "How many coins does Ben have now?"}
    assert expected_answer(row) == 24


def test_committed_data_matches_generator(tmp_path):
    """data/tasks/ is exactly what the default seed generates (so the code and the data agree)."""
    from pathlib import Path

    committed = Path(__file__).resolve().parents[1] / "data" / "tasks"
    if not (committed / "meta.json").is_file():
        pytest.skip("data/tasks not generated")
    meta = json.loads((committed / "meta.json").read_text())
    generate_task(tmp_path, seed=meta["seed"], n_train=meta["n_train"], n_eval=meta["n_eval"], levels=tuple(meta["levels"]))
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
