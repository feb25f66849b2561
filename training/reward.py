"""The one reward used by the UNIPO trainer and by OpenRLHF.

Two separate, verifiable components of a response (the text the policy generated after the prompt):

- correctness: 1.0 if the LAST ``Answer: <int>`` in the response equals the label, else 0.0.
  Integer labels compare as integers ("043" == "43"); a non-integer label (a user's own task, e.g.
  a MATH answer such as ``\\frac{1}{2}``) compares as the stripped text after the last ``Answer:``.
- format: 1.0 if the response ENDS with a well-formed ``Answer: <int>`` (optional minus sign, no
  leading zeros), after trailing whitespace and special-token strings such as ``<eos>`` or
  ``</s>`` are removed; else 0.0. ``Answer: 43. Done`` is correct but badly formatted.

A chat model (a preset with a ``chat`` section, e.g. ``smollm2``) is asked for the number alone and never
writes ``Answer:`` (shared/FEASIBILITY.md: 0 of 64 answers under three system prompts), so its answers are
read by another rule, ``last_integer`` (``score_response(..., rule="last_integer")``):

- correctness: 1.0 if the LAST number in the response is an integer equal to the label. A minus sign
  belongs to the number when it does not join two numbers or words (``5 - 30 = -25`` reads -25, ``34-7``
  reads 7); thousands separators are read (``1,000``); a decimal (``41.5``) is a number but not an
  integer, so an answer ending in one is wrong. ``34 + 7 = 41.`` reads 41; ``41, or 42`` reads 42.
- format: 1.0 if the response is the number alone (an optional final period), as the system prompt
  asks; else 0.0. Logged, weighted 0 like the other rule's.

Weighting: reward = CORRECTNESS_WEIGHT * correctness + FORMAT_WEIGHT * format, with weights 1.0 and
0.0 by default, so the training reward IS correctness (the binary, verifiable reward of DeepSeekMath's
GRPO and DAPO). The format component is always computed and logged, so a reader can see format being
learned or lost, and a run can weight it in without touching this file: our trainer passes
``format_weight`` to ``total_reward``; OpenRLHF, which loads this file by path, reads the environment
variables UNIPO_CORRECTNESS_WEIGHT and UNIPO_FORMAT_WEIGHT.

OpenRLHF (0.11.2, ``--reward.remote_url training/reward.py``, older releases ``--remote_rm_url``)
loads this file with ``importlib.util.spec_from_file_location`` and calls
``reward_func(queries, prompts, labels)``: queries are the decoded prompt + response (special tokens
kept), prompts the prompt strings, labels the answers as strings. It expects a dict of
``rewards`` (tensor [B], used for advantages), ``scores`` (tensor [B] in [0, 1], used for dynamic
filtering) and ``extra_logs`` (dict of tensors [B], averaged into the logs). Because the file is
loaded outside its package, it imports nothing from ``training`` (only the weights from the core,
``unipo_build.core.presets``, installed with the tap); torch is imported lazily inside
``reward_func`` so that ``score_response`` works without torch (the site build has none).
"""

from __future__ import annotations

import os
import re

from unipo_build.core.presets import REWARD_WEIGHTS  # the site quotes them, so they live in the core

CORRECTNESS_WEIGHT = REWARD_WEIGHTS["correct"]
FORMAT_WEIGHT = REWARD_WEIGHTS["format"]

# Any "Answer: <something>" up to the end of its line or the next "Answer:"; the last one counts.
ANSWER_ANY = re.compile(r"Answer:[ \t]*((?:(?!Answer:)[^\n])*)")
# An integer at the start of the text after "Answer:".
LEADING_INT = re.compile(r"-?\d+")
# A well-formed final answer: start of text or whitespace, then "Answer: <int>" at the very end.
ANSWER_AT_END = re.compile(r"(?:^|\s)Answer: (-?(?:0|[1-9]\d*))$")
# Special-token strings a decoder may leave at the end: <eos>, </s>, <|im_end|>, <|endoftext|> ...
TRAILING_SPECIAL = re.compile(r"(?:\s*<\|?/?[A-Za-z_][A-Za-z0-9_.\-]*\|?>)+\s*$")
INTEGER_LABEL = re.compile(r"^\s*-?\d+\s*$")


# The last_integer rule (a chat answer): a number, its minus sign kept unless a digit, letter or closing
# bracket stands right before it (then the "-" is an operator: "34-7"); "\u2212" is the typographic minus.
NUMBER = re.compile(r"(?:(?<![\w)\]])[-\u2212])?\d{1,3}(?:,\d{3})+(?!\d)(?:\.\d+)?|(?:(?<![\w)\]])[-\u2212])?\d+(?:\.\d+)?")
# The number alone, as the chat preset's system prompt asks ("Answer with only the final number.").
NUMBER_ALONE = re.compile(r"[-\u2212]?\d+\.?")
#: Every rule score_response knows: "answer" (the last "Answer: <int>", the task's own format) and
#: "last_integer" (the last number of a chat answer).
REWARD_RULES = ("answer", "last_integer")
#: What each rule's components mean, as the run header states them.
RULE_TEXT = {
    "answer": {
        "description": "Correctness of the final answer (1/0); the format component is logged but weighted 0.",
        "correct": "1 if the last 'Answer: <int>' equals the label, else 0.",
        "format": "1 if the response ends with a well-formed 'Answer: <int>'.",
    },
    "last_integer": {
        "description": "Correctness of a chat answer's last number (1/0): the last number in the response, a minus "
                       "sign kept unless it joins two numbers or words, must be an integer equal to the label; the "
                       "format component (the number alone, as the system prompt asks) is logged but weighted 0.",
        "correct": "1 if the last number in the response is an integer equal to the label ('34 + 7 = 41.' reads 41, "
                   "'41, or 42' reads 42, '5 - 30 = -25' reads -25), else 0.",
        "format": "1 if the response is the number alone (an optional final period), else 0.",
    },
}


def strip_trailing_special(text: str) -> str:
    return TRAILING_SPECIAL.sub("", text).rstrip()


def parse_answer(response: str) -> tuple[int | None, str | None]:
    """(integer answer or None, raw text after the last `Answer:` or None)."""
    matches = ANSWER_ANY.findall(response)
    if not matches:
        return None, None
    raw = strip_trailing_special(matches[-1]).strip()
    m = LEADING_INT.match(raw)
    return (int(m.group()) if m else None), raw


def parse_last_number(response: str) -> tuple[int | None, str | None]:
    """(the last number if it is an integer, else None; that number's text, or None without a number)."""
    numbers = NUMBER.findall(response)
    if not numbers:
        return None, None
    raw = numbers[-1].replace("\u2212", "-")
    if "." in raw:
        return None, raw
    return int(raw.replace(",", "")), raw


def score_response(response_text: str, label, rule: str = "answer") -> dict:
    """Score one response against its label by `rule` (REWARD_RULES; the module docstring says each).

    Returns {"correct": 0.0|1.0, "format": 0.0|1.0, "parsed_answer": int | None}.
    """
    if rule == "last_integer":
        return _score_last_integer(response_text, label)
    if rule != "answer":
        raise ValueError(f"unknown reward rule {rule!r}; choose from {', '.join(REWARD_RULES)}")
    response = strip_trailing_special(response_text)
    parsed, raw = parse_answer(response)
    label_text = str(label).strip()
    if INTEGER_LABEL.match(label_text):
        correct = parsed is not None and parsed == int(label_text)
    else:
        correct = raw is not None and raw == label_text
    well_formed = ANSWER_AT_END.search(response) is not None
    return {"correct": float(correct), "format": float(well_formed), "parsed_answer": parsed}


def _score_last_integer(response_text: str, label) -> dict:
    response = strip_trailing_special(response_text).strip()
    parsed, raw = parse_last_number(response)
    label_text = str(label).strip()
    if INTEGER_LABEL.match(label_text):
        correct = parsed is not None and parsed == int(label_text)
    else:
        correct = raw is not None and raw == label_text
    alone = NUMBER_ALONE.fullmatch(response) is not None
    return {"correct": float(correct), "format": float(alone), "parsed_answer": parsed}


def reward_weights() -> tuple[float, float]:
    """(correctness weight, format weight): module defaults, overridable by environment variables."""
    return (
        float(os.environ.get("UNIPO_CORRECTNESS_WEIGHT", CORRECTNESS_WEIGHT)),
        float(os.environ.get("UNIPO_FORMAT_WEIGHT", FORMAT_WEIGHT)),
    )


def total_reward(score: dict, correctness_weight: float | None = None, format_weight: float | None = None) -> float:
    """The scalar training reward of one scored response (see the module docstring for weights)."""
    default_c, default_f = reward_weights()
    wc = default_c if correctness_weight is None else correctness_weight
    wf = default_f if format_weight is None else format_weight
    return wc * score["correct"] + wf * score["format"]


def response_of(query: str, prompt: str) -> str:
    """The response part of an OpenRLHF query (prompt + response, decoded).

    The decoded query normally starts with the prompt exactly; if decoding changed the prompt's
    spacing, fall back to the text after the prompt's last occurrence, then to the whole query (only
    the last `Answer:` is read, and prompts do not contain one).
    """
    if query.startswith(prompt):
        return query[len(prompt):]
    cut = query.rfind(prompt) if prompt else -1
    return query[cut + len(prompt):] if cut >= 0 else query


def reward_func(queries, prompts, labels, **kwargs) -> dict:
    """OpenRLHF reward-function entry point (see the module docstring)."""
    import torch

    if not (len(queries) == len(prompts) == len(labels)):
        raise ValueError(f"queries, prompts, labels differ in length: {len(queries)}, {len(prompts)}, {len(labels)}")
    scores = [score_response(response_of(q, p), lab) for q, p, lab in zip(queries, prompts, labels)]
    correct = torch.tensor([s["correct"] for s in scores], dtype=torch.float32)
    fmt = torch.tensor([s["format"] for s in scores], dtype=torch.float32)
    parsed = torch.tensor([float(s["parsed_answer"] is not None) for s in scores], dtype=torch.float32)
    rewards = torch.tensor([total_reward(s) for s in scores], dtype=torch.float32)
    return {
        "rewards": rewards,
        "scores": correct,
        "extra_logs": {"correctness": correct, "format": fmt, "answer_parsed": parsed},
    }
