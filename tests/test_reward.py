"""The shared reward: hand-written responses, the OpenRLHF entry point, and loading without torch."""

import subprocess
import sys
from pathlib import Path

import pytest

from training.reward import reward_func, score_response, total_reward

REWARD_FILE = Path(__file__).resolve().parents[1] / "training" / "reward.py"


@pytest.mark.parametrize(
    "response, label, correct, fmt, parsed",
    [
        ("58 + 28 = 86. 86 / 2 = 43. Answer: 43", "43", 1, 1, 43),  # correct and well formed
        ("58 + 28 = 86. 86 / 2 = 43. Answer: 43", 43, 1, 1, 43),  # integer label
        ("58 + 28 = 86. 86 / 2 = 44. Answer: 44", "43", 0, 1, 44),  # wrong
        ("58 + 28 = 86. 86 / 2 = 43.", "43", 0, 0, None),  # no answer line
        ("58 + 28 = 86. Answer:", "43", 0, 0, None),  # empty answer
        ("Answer: forty-three", "43", 0, 0, None),  # not an integer
        ("Answer: 43. That is all", "43", 1, 0, 43),  # extra text after the answer: right, badly formatted
        ("Answer: 43.", "43", 1, 0, 43),  # trailing period
        ("86 / 2 = 43. Answer: 43<eos>", "43", 1, 1, 43),  # special token left by a decoder
        ("86 / 2 = 43. Answer: 43</s><pad><pad>\n", "43", 1, 1, 43),
        (" 86 / 2 = 43. Answer: 43  \n", "43", 1, 1, 43),  # surrounding whitespace
        ("Answer: 7. Answer: 43", "43", 1, 1, 43),  # the last answer counts
        ("Answer: 43. Answer: 7", "43", 0, 1, 7),
        ("Answer: 043", "43", 1, 0, 43),  # leading zero: same integer, not canonical
        ("5 - 9 = -4. Answer: -4", "-4", 1, 1, -4),  # negative
        ("Answer:43", "43", 1, 0, 43),  # no space: parsed, but not the fixed format
        ("Answer: 43x", "43", 1, 0, 43),
        ("The Answer: 43", "43", 1, 1, 43),
        ("TheAnswer: 43", "43", 1, 0, 43),  # "Answer:" must start a word to be well formed
        ("", "43", 0, 0, None),
    ],
)
def test_score_response(response, label, correct, fmt, parsed):
    s = score_response(response, label)
    assert s == {"correct": float(correct), "format": float(fmt), "parsed_answer": parsed}


@pytest.mark.parametrize(
    "response, label, correct, fmt, parsed",
    [
        ("34 + 7 = 41.", "41", 1, 0, 41),  # the equation's result is the last integer
        ("To add 34 and 7, you simply add them together: 34 + 7 = 41.", 41, 1, 0, 41),
        ("The answer is 41, or 42", "41", 0, 0, 42),  # the last integer counts, not the first right one
        ("The answer is 41, or 42", "42", 1, 0, 42),
        ("I cannot say.", "41", 0, 0, None),  # no integer
        ("", "41", 0, 0, None),
        ("41", "41", 1, 1, 41),  # the number alone, as the system prompt asks: well formed
        ("41.", "41", 1, 1, 41),
        (" 41 \n", "41", 1, 1, 41),
        ("41<|im_end|>", "41", 1, 1, 41),  # a special token left by a decoder
        ("-6", "-6", 1, 1, -6),  # negative numbers: a sign before a number
        ("5 - 11 = -6.", "-6", 1, 0, -6),
        ("5 - 11 = \u22126", "-6", 1, 0, -6),  # the typographic minus
        ("The result is (-6).", "-6", 1, 0, -6),
        ("34-7", "7", 1, 0, 7),  # a minus between two numbers is an operator, not a sign
        ("34-7", "-7", 0, 0, 7),
        ("x-7", "7", 1, 0, 7),
        ("The answer is 41.5", "41", 0, 0, None),  # a decimal is no integer answer
        ("41.5 rounds to 42", "42", 1, 0, 42),
        ("1,000 apples", "1000", 1, 0, 1000),  # a thousands separator
        ("41, 42", "41", 0, 0, 42),
        ("Answer: 41", "41", 1, 0, 41),  # the task's format is read too, but is not the number alone
    ],
)
def test_a_chat_answer_is_read_by_its_last_integer(response, label, correct, fmt, parsed):
    s = score_response(response, label, rule="last_integer")
    assert s == {"correct": float(correct), "format": float(fmt), "parsed_answer": parsed}


def test_the_default_rule_is_the_tasks_and_an_unknown_rule_is_named():
    assert score_response("34 + 7 = 41.", "41") == {"correct": 0.0, "format": 0.0, "parsed_answer": None}
    assert score_response("34 + 7 = 41.", "41", rule="answer") == score_response("34 + 7 = 41.", "41")
    with pytest.raises(ValueError, match="unknown reward rule 'first'"):
        score_response("41", "41", rule="first")


def test_non_integer_label_compares_text():
    assert score_response("Answer: \\frac{1}{2}", "\\frac{1}{2}")["correct"] == 1.0
    assert score_response("Answer: 0.5", "\\frac{1}{2}")["correct"] == 0.0


def test_total_reward_weights(monkeypatch):
    s = {"correct": 0.0, "format": 1.0}
    assert total_reward(s) == 0.0  # correctness only by default
    assert total_reward(s, format_weight=0.1) == pytest.approx(0.1)
    monkeypatch.setenv("UNIPO_FORMAT_WEIGHT", "0.25")
    assert total_reward(s) == pytest.approx(0.25)


def test_reward_func_openrlhf_contract():
    import torch

    prompts = ["Ana has 2 cards and gets 3 more. How many cards does Ana have now?"] * 3 + ["Q?"]
    responses = [" 2 + 3 = 5. Answer: 5", " 2 + 3 = 6. Answer: 6", " 2 + 3 = 5. Answer: 5. Yes", " Answer: 1<eos>"]
    queries = [p + r for p, r in zip(prompts, responses)]
    out = reward_func(queries, prompts, ["5", "5", "5", "1"])
    assert set(out) == {"rewards", "scores", "extra_logs"}
    for t in [out["rewards"], out["scores"], *out["extra_logs"].values()]:
        assert isinstance(t, torch.Tensor) and t.dtype == torch.float32 and t.shape == (4,)
    assert out["rewards"].tolist() == [1.0, 0.0, 1.0, 1.0]
    assert out["scores"].tolist() == [1.0, 0.0, 1.0, 1.0]
    assert out["extra_logs"]["correctness"].tolist() == [1.0, 0.0, 1.0, 1.0]
    assert out["extra_logs"]["format"].tolist() == [1.0, 1.0, 0.0, 1.0]
    assert out["extra_logs"]["answer_parsed"].tolist() == [1.0, 1.0, 1.0, 1.0]
    # extra keyword arguments (newer OpenRLHF versions pass some) are accepted
    assert reward_func(queries[:1], prompts[:1], ["5"], metadata=None)["rewards"].tolist() == [1.0]


def test_reward_func_response_is_after_the_prompt():
    # The prompt itself contains a number that equals the label: it must not count.
    prompt = "Answer: 5 is what Ben says. How many?"
    out = reward_func([prompt + " no idea"], [prompt], ["5"])
    assert out["rewards"].tolist() == [0.0]
    # A query whose prompt part was re-spaced by decoding still finds the response
    out = reward_func(["Q ?  Answer: 5"], ["Q?"], ["5"])
    assert out["rewards"].tolist() == [1.0]


def test_reward_func_length_mismatch():
    with pytest.raises(ValueError, match="differ in length"):
        reward_func(["a", "b"], ["a"], ["1", "2"])


def test_loads_like_openrlhf_and_without_torch():
    """OpenRLHF loads the file by path under the module name 'reward_func'; score_response needs no torch."""
    code = f"""
import sys, importlib.util
sys.modules["torch"] = None  # any `import torch` now raises ImportError
spec = importlib.util.spec_from_file_location("reward_func", {str(REWARD_FILE)!r})
mod = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mod)
assert mod.score_response("Answer: 3", "3")["correct"] == 1.0
try:
    mod.reward_func(["q Answer: 3"], ["q"], ["3"])
except ImportError:
    print("ok")
"""
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"
