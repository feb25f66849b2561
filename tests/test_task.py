"""Task generation: determinism, held-out disjointness, the three disjoint pools of version 3 and
their check, the task levels, the arithmetic of every worked solution in every style and level, the
style mix, loading."""

import json
import re

import pytest

from training.task import (DEFAULT_N_EVAL, LEVELS, POOL_FILES, STYLE_MIX, TASK_LEVELS, TaskFileError, check_pools,
                           column_add, column_mul, column_sub, generate_task, load_task)

EQUATION = re.compile(r"(\d+) ([-+*]) (\d+) = (\d+)\.")
OPS = {"+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b}
ADD_COL = re.compile(r"^(\d) \+ (\d)(?: \+ (\d))? = (\d+), write (\d+)(?: carry (\d))?\.$")
SUB_COL = re.compile(r"^(\d+)( - 1)? - (\d) = (\d), write (\d)( borrow 1)?\.$")
MUL_COL = re.compile(r"^(\d) \* (\d)(?: \+ (\d))? = (\d+), write (\d+)(?: carry (\d))?\.$")


@pytest.fixture(scope="module")
def task(tmp_path_factory):
    """Version 2: the shipped layout (train.jsonl read by SFT and RL, eval.jsonl)."""
    out = tmp_path_factory.mktemp("task")
    meta = generate_task(out, seed=7, n_train=1500, n_eval=280, version="2")
    return out, meta, load_task(out / "train.jsonl"), load_task(out / "eval.jsonl")


@pytest.fixture(scope="module", params=list(TASK_LEVELS))
def pools(request, tmp_path_factory):
    """Version 3 at each task level: the SFT, RL and held-out pools."""
    out = tmp_path_factory.mktemp(f"pools-{request.param}")
    meta = generate_task(out, seed=7, n_train=1400, n_eval=280, n_rl=700, level=request.param)
    return out, meta, {pool: load_task(out / name) for pool, name in POOL_FILES.items()}


def numbers(text):
    return [int(x) for x in re.findall(r"\d+", text)]


def test_same_seed_same_bytes_other_seed_differs(tmp_path, task):
    out, *_ = task
    generate_task(tmp_path / "a", seed=7, n_train=1500, n_eval=280, version="2")
    generate_task(tmp_path / "b", seed=8, n_train=1500, n_eval=280, version="2")
    for name in ("train.jsonl", "eval.jsonl"):
        assert (tmp_path / "a" / name).read_bytes() == (out / name).read_bytes()
        assert (tmp_path / "b" / name).read_bytes() != (out / name).read_bytes()


def test_eval_is_fixed_when_train_size_changes(tmp_path, task):
    out, *_ = task
    generate_task(tmp_path, seed=7, n_train=100, n_eval=280, version="2")
    assert (tmp_path / "eval.jsonl").read_bytes() == (out / "eval.jsonl").read_bytes()


def test_counts_balance_and_disjointness(task):
    _, meta, train, evals = task
    assert meta["n_train"] == len(train) == 1500 and meta["n_eval"] == len(evals) == 280
    eval_prompts = [r["prompt"] for r in evals]
    assert len(set(eval_prompts)) == len(eval_prompts)
    assert not set(eval_prompts) & {r["prompt"] for r in train}
    cells = {(t, lv) for t in LEVELS for lv in LEVELS[t]}
    for rows in (train, evals):
        counts = {c: sum((r["template"], r["level"]) == c for r in rows) for c in cells}
        assert max(counts.values()) - min(counts.values()) <= 1 and sum(counts.values()) == len(rows)
    assert len({r["id"] for r in train + evals}) == len(train) + len(evals)
    assert meta["templates"] == list(LEVELS) and meta["styles"] == STYLE_MIX
    assert meta["generator_version"] == "2" and not (task[0] / "rl.jsonl").exists()


def test_pools_are_disjoint_balanced_and_counted_in_meta(pools):
    out, meta, rows = pools
    level = TASK_LEVELS[meta["level"]]
    prompts = {pool: {r["prompt"] for r in pool_rows} for pool, pool_rows in rows.items()}
    assert not prompts["sft"] & prompts["rl"] and not prompts["sft"] & prompts["heldout"]
    assert not prompts["rl"] & prompts["heldout"]
    assert meta["generator_version"] == "3" and meta["pools_disjoint"] is True
    assert meta["shared_prompts"] == {"sft-rl": 0, "sft-heldout": 0, "rl-heldout": 0}
    assert (meta["n_train"], meta["n_rl"], meta["n_eval"]) == (1400, 700, 280)
    for pool, pool_rows in rows.items():
        assert meta["pools"][pool] == {"file": POOL_FILES[pool], "rows": len(pool_rows),
                                       "distinct_prompts": len(prompts[pool])}
        cells = {(t, lv) for t in level.levels for lv in level.levels[t]}
        counts = {c: sum((r["template"], r["level"]) == c for r in pool_rows) for c in cells}
        assert max(counts.values()) - min(counts.values()) <= 1 and sum(counts.values()) == len(pool_rows)
    assert len(prompts["heldout"]) == len(rows["heldout"])  # held-out problems are unique
    assert meta["templates"] == list(level.levels) and meta["styles"] == level.style_mix
    assert check_pools(out) == {"sft": 1400, "rl": 700, "heldout": 280}


def test_pools_are_deterministic_from_the_seed(tmp_path, pools):
    out, meta, _ = pools
    generate_task(tmp_path / "a", seed=7, n_train=1400, n_eval=280, n_rl=700, level=meta["level"])
    generate_task(tmp_path / "b", seed=8, n_train=1400, n_eval=280, n_rl=700, level=meta["level"])
    for name in (*POOL_FILES.values(), "meta.json"):
        assert (tmp_path / "a" / name).read_bytes() == (out / name).read_bytes(), name
    for name in POOL_FILES.values():
        assert (tmp_path / "b" / name).read_bytes() != (out / name).read_bytes(), name


def test_levels_differ_and_the_gpu_level_is_harder():
    tiny, gpu = TASK_LEVELS["tiny"], TASK_LEVELS["gpu"]
    assert tiny.levels == LEVELS
    assert max(max(d) for d in gpu.levels.values()) == 4 > max(max(d) for d in tiny.levels.values())
    assert "spend" in gpu.levels and "spend" not in tiny.levels
    assert gpu.style_mix["bare"] >= 0.5  # the short style stays tempting


def test_every_worked_solution_fits_the_generation_budget(pools):
    """The presets sample at most 96 new tokens: the longest worked solution (with <eos>) fits."""
    from training.tokenizer import task_corpus, train_tokenizer
    from unipo_build.core.presets import PRESETS

    _, meta, rows = pools
    every = rows["sft"] + rows["heldout"]
    tok = train_tokenizer(task_corpus(every))
    longest = max(len(tok(r["solution"], add_special_tokens=False)["input_ids"]) + 1 for r in every)
    budget = min(p.rl.max_new_tokens for p in PRESETS.values() if p.task_level == meta["level"])
    assert longest <= budget, (meta["level"], longest, budget)
    if len(TASK_LEVELS[meta["level"]].style_mix) > 1:
        assert longest > budget // 2  # the column style is long: length is a choice


def test_the_chat_level_asks_bare_questions_whose_answers_read_one_way(tmp_path):
    """The smollm2 level: 'What is a + b?' / 'a - b' with operands 2-40 and no negative difference, in three
    disjoint pools of its own sizes (1,000 held-out questions, unique); each answer is a plain integer that the
    chat reward's last-integer rule reads as itself, and the one equation of its solution reads as the answer."""
    from pathlib import Path

    from training.reward import score_response

    level = TASK_LEVELS["smollm2"]
    meta = generate_task(tmp_path, seed=0, level="smollm2")
    rows = {pool: load_task(tmp_path / name) for pool, name in POOL_FILES.items()}
    assert (meta["n_train"], meta["n_rl"], meta["n_eval"]) == level.sizes == (500, 2000, 1000)
    assert meta["pools_disjoint"] and len({r["prompt"] for r in rows["heldout"]}) == 1000
    assert meta["level_meaning"].startswith("the largest operand") and meta["styles"] == {"bare": 1.0}
    every = [r for pool in rows.values() for r in pool]
    assert {r["template"] for r in every} == {"ask_add", "ask_sub"} and {r["level"] for r in every} == {40}
    for r in every:
        m = re.fullmatch(r"What is (\d+) ([-+]) (\d+)\?", r["prompt"])
        a, op, b = int(m[1]), m[2], int(m[3])
        assert 2 <= a <= 40 and 2 <= b <= 40 and (op == "+" or a >= b), r
        assert r["answer"] == str(a + b if op == "+" else a - b) and int(r["answer"]) >= 0
        scored = score_response(r["answer"], r["answer"], rule="last_integer")
        assert scored == {"correct": 1.0, "format": 1.0, "parsed_answer": int(r["answer"])}
        if "solution" in r:
            equation = r["solution"].rsplit(" Answer: ", 1)[0]
            assert score_response(equation, r["answer"], rule="last_integer")["correct"] == 1.0
    committed = Path(__file__).resolve().parents[1] / "data" / "tasks-smollm2"  # the preset's, as generated
    for name in (*POOL_FILES.values(), "meta.json"):
        assert (committed / name).read_bytes() == (tmp_path / name).read_bytes(), name
    # the other levels keep the generator's default sizes and their meaning of a level
    assert TASK_LEVELS["tiny"].sizes is None and TASK_LEVELS["gpu"].sizes is None
    assert TASK_LEVELS["tiny"].task_name == TASK_LEVELS["gpu"].task_name == "arithmetic word problems"


def test_check_pools_refuses_an_overlap_in_one_line_and_changes_nothing(tmp_path):
    generate_task(tmp_path, seed=3, n_train=60, n_eval=21, n_rl=35)
    sft_lines = (tmp_path / "train.jsonl").read_text().splitlines()
    rl = tmp_path / "rl.jsonl"
    rl.write_text(rl.read_text() + "\n".join(sft_lines[:2]) + "\n")  # two SFT rows in the RL pool
    before = {f.name: f.read_bytes() for f in tmp_path.iterdir()}
    shared = len({json.loads(line)["prompt"] for line in sft_lines[:2]})
    with pytest.raises(TaskFileError) as e:
        check_pools(tmp_path)
    message = str(e.value)
    assert "\n" not in message and message.startswith(f"{rl}: {shared} prompts also in train.jsonl (sft pool)")
    assert f"python -m training.task --out {tmp_path}" in message
    assert {f.name: f.read_bytes() for f in tmp_path.iterdir()} == before


def test_version_2_has_one_level_and_unknown_levels_are_named(tmp_path):
    with pytest.raises(ValueError, match="version 2 has one level"):
        generate_task(tmp_path / "a", version="2", level="gpu")
    with pytest.raises(ValueError, match="unknown task level 'huge'"):
        generate_task(tmp_path / "b", level="huge")
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


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
    if t in ("add", "ask_add"):
        return n[0] + n[1]
    if t in ("sub", "ask_sub"):
        return n[0] - n[1]
    if t == "mul":
        return n[0] * n[1]
    if t == "coins":
        return n[0] + n[1] * n[2]
    if t == "spend":
        return n[0] - n[1] * n[2]
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


def test_every_solution_is_correct_arithmetic_in_every_style(task, pools):
    *_, train, evals = task
    every = train + evals + pools[2]["sft"] + pools[2]["heldout"]
    for r in pools[2]["rl"]:  # the RL pool: prompt and answer, no worked solution to learn
        assert set(r) == {"id", "prompt", "answer", "template", "level"} and int(r["answer"]) == expected_answer(r)
    for r in every:
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
        elif r["template"] == "spend":
            a, b, c = n
            cost = b * c
            assert a >= cost and len(str(a)) == r["level"] + 1
            cut = sentences.index(f"So {b} * {c} = {cost}.")
            assert check_column(sentences[:cut], b, c, "*") == cost
            assert sentences[-1] == f"So {a} - {cost} = {answer}."
            assert check_column(sentences[cut + 1:-1], a, cost, "-") == answer
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
    """data/tasks/ is exactly what its meta's generator version, seed, level and sizes generate (so the
    code and the data agree; the shipped version-2 data stays byte for byte reproducible)."""
    from pathlib import Path

    committed = Path(__file__).resolve().parents[1] / "data" / "tasks"
    if not (committed / "meta.json").is_file():
        pytest.skip("data/tasks not generated")
    meta = json.loads((committed / "meta.json").read_text())
    extra = {"level": meta["level"], "n_rl": meta["n_rl"]} if meta["generator_version"] == "3" else {}
    generate_task(tmp_path, seed=meta["seed"], n_train=meta["n_train"], n_eval=meta["n_eval"],
                  version=meta["generator_version"], **extra)
    assert meta["n_eval"] == DEFAULT_N_EVAL
    names = [n for n in (*POOL_FILES.values(), "meta.json") if (committed / n).is_file()]
    assert len(names) == (4 if meta["generator_version"] == "3" else 3)
    for name in names:
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


def test_cli_keeps_an_existing_task_unless_forced(tmp_path):
    import subprocess
    import sys

    out = tmp_path / "t"
    generate_task(out, seed=1, n_train=30, n_eval=10, version="2")
    before = {f.name: f.read_bytes() for f in out.iterdir()}
    cmd = [sys.executable, "-m", "training.task", "--out", str(out), "--n-train", "30", "--n-rl", "20", "--n-eval", "10"]
    refused = subprocess.run(cmd, capture_output=True, text=True)
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1
    assert refused.stderr.startswith(f"{out} already holds a task (generator version 2: train.jsonl, eval.jsonl, "
                                     "meta.json); nothing was changed")
    assert {f.name: f.read_bytes() for f in out.iterdir()} == before
    forced = subprocess.run(cmd + ["--force"], capture_output=True, text=True)
    assert forced.returncode == 0, forced.stderr
    assert json.loads((out / "meta.json").read_text())["generator_version"] == "3" and (out / "rl.jsonl").is_file()
    wrong = subprocess.run([sys.executable, "-m", "training.task", "--out", str(tmp_path / "u"), "--version", "2",
                            "--level", "gpu"], capture_output=True, text=True)
    assert wrong.returncode == 2 and "version 2 has one level" in wrong.stderr and not (tmp_path / "u").exists()
