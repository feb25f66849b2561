"""The bad-input table: each entry breaks one copy of a small valid run in one way, and says what
``unipo validate`` must report (file, line or step, field, message) or that the run stays valid.

Used by tests/test_bad_inputs.py (the validator, in process and through the console script, and
the site build, lenient and strict). Entries are data: a new way to break a run is one more row.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from helpers_runlog import make_header, read_json, write_json, write_run
from unipo_build.core.specs import REGISTRY, SLOTS

STEPS, HEADER, EVALS = "steps.jsonl", "header.json", "evals.jsonl"
TOKENS2 = "tokens/step_000002.json"
HOSTILE = "<img src=x onerror=alert(1)>"


@dataclass(frozen=True)
class Case:
    """One broken run. ``file`` is relative to the run; ``where`` and ``message`` must appear in
    the validator's line for it; ``level`` is "error", "warning" (valid, with a warning) or
    "valid" (nothing to report: the build must show it as it is)."""

    name: str
    breaks: Callable[[Path], None]
    file: str | None = None
    where: str = ""
    message: str = ""
    level: str = "error"
    algorithm: str = "grpo"
    shows: str | None = None  # text a page of the built site must show (for a valid case)


# --------------------------------------------------------------------------- editing helpers


def _lines(run: Path, name: str = STEPS) -> list[str]:
    return (run / name).read_text(encoding="utf-8").splitlines(keepends=True)


def _edit_line(run: Path, index: int, edit, name: str = STEPS) -> None:
    lines = _lines(run, name)
    record = json.loads(lines[index])
    edit(record)
    lines[index] = json.dumps(record) + "\n"
    (run / name).write_text("".join(lines), encoding="utf-8")


def _replace_line(run: Path, index: int, text: str, name: str = STEPS) -> None:
    lines = _lines(run, name)
    lines[index] = text
    (run / name).write_text("".join(lines), encoding="utf-8")


def _edit_json(path: Path, edit) -> None:
    data = read_json(path)
    edit(data)
    write_json(path, data)


def _header(edit):
    return lambda run: _edit_json(run / HEADER, edit)


def _tokens(edit, name: str = TOKENS2):
    return lambda run: _edit_json(run / name, edit)


def _response(data, p: int = 0, r: int = 1) -> dict:
    return data["prompts"][p]["responses"][r]


def _raw_replace(path: str, old: str, new: str, count: int = 1):
    def breaks(run: Path) -> None:
        text = (run / path).read_text(encoding="utf-8")
        assert old in text, (path, old)
        (run / path).write_text(text.replace(old, new, count), encoding="utf-8")
    return breaks


def _bytes_replace(path: str, old: bytes, new: bytes):
    def breaks(run: Path) -> None:
        data = (run / path).read_bytes()
        assert old in data, (path, old)
        (run / path).write_bytes(data.replace(old, new, 1))
    return breaks


def _truncate(path: str, keep: float):
    def breaks(run: Path) -> None:
        data = (run / path).read_bytes()
        (run / path).write_bytes(data[:int(len(data) * keep)])
    return breaks


def _empty(path: str):
    return lambda run: (run / path).write_bytes(b"")


def _nested(depth: int) -> dict:
    value: dict = {}
    for _ in range(depth):
        value = {"x": value}
    return value


def _rename(src: str, dest: str):
    return lambda run: (run / src).rename(run / dest)


def _both(*edits):
    def breaks(run: Path) -> None:
        for edit in edits:
            edit(run)
    return breaks


# --------------------------------------------------------------------------- the table


CASES: list[Case] = [
    # truncated lines and files
    Case("steps-line-cut-off", lambda run: (run / STEPS).write_text("".join(_lines(run)[:-1]) + _lines(run)[-1][:40],
                                                                    encoding="utf-8"),
         STEPS, "(line 6)", "the line is cut off"),
    Case("token-file-cut-off", _truncate(TOKENS2, 0.5), TOKENS2, "(step 2)", "not valid JSON"),
    Case("header-cut-off", _truncate(HEADER, 0.5), HEADER, "", "not valid JSON"),
    # short arrays
    Case("token-array-short", _tokens(lambda d: _response(d)["tokens"]["advantage"].pop()),
         TOKENS2, "(step 2, prompt 0, response 1)", "tokens.advantage: has 3 elements, expected 4"),
    Case("token-text-short", _tokens(lambda d: _response(d)["tokens"]["text"].pop()),
         TOKENS2, "(step 2, prompt 0, response 1)", "tokens.text: has 3 elements, expected 4"),
    Case("length-disagrees", _tokens(lambda d: _response(d).__setitem__("length", 9)),
         TOKENS2, "(step 2, prompt 0, response 1)", "length: is 9 but tokens.ids has 4 elements"),
    # NaN, infinities, out of range
    Case("metric-nan", _raw_replace(STEPS, '"reward/mean":0.5', '"reward/mean":NaN'),
         STEPS, "(line 1, step 0)", "metrics.reward/mean: NaN or infinity is not allowed here"),
    Case("token-infinity", _raw_replace(TOKENS2, '"logp":[-0.5', '"logp":[-Infinity'),
         TOKENS2, "(step 2, prompt 0, response 0)", "tokens.logp.0: NaN or infinity is not allowed here"),
    Case("eval-nan", _raw_replace(EVALS, '"accuracy_greedy":0.25', '"accuracy_greedy":NaN'),
         EVALS, "(line 1, step 0)", "accuracy_greedy: NaN or infinity is not allowed here"),
    Case("metric-1e308", _raw_replace(STEPS, '"reward/mean":0.5', '"reward/mean":1e308'),
         STEPS, "(line 1, step 0)", "metrics.reward/mean: 1e+308 is outside \u00b11e15"),
    Case("objective-minus-1e308", _tokens(lambda d: d.__setitem__("objective", -1e308)),
         TOKENS2, "(step 2)", "objective: -1e+308 is outside \u00b11e15"),
    Case("extra-field-1e308", _header(lambda h: h.__setitem__("my_score", 1e308)),
         HEADER, "", "my_score: 1e+308 is outside \u00b11e15"),
    Case("hyperparameter-1e308", _header(lambda h: h["hyperparameters"].__setitem__("my_beta", 1e308)),
         HEADER, "", "hyperparameters.my_beta: 1e+308 is outside \u00b11e15"),
    Case("token-id-huge", _tokens(lambda d: _response(d)["tokens"]["ids"].__setitem__(0, 10**30)),
         TOKENS2, "(step 2, prompt 0, response 1)", "tokens.ids.0: an integer of 31 digits is outside"),
    Case("logp-above-zero", _tokens(lambda d: _response(d)["tokens"]["logp"].__setitem__(0, 0.5)),
         TOKENS2, "(step 2, prompt 0, response 1)", "tokens.logp.0: Input should be less than or equal to 0.001"),
    Case("logp-below-floor", _tokens(lambda d: _response(d)["tokens"]["old_logp"].__setitem__(1, -1000.0)),
         TOKENS2, "(step 2, prompt 0, response 1)", "tokens.old_logp.1: Input should be greater than or equal to -300"),
    # wrong types
    Case("hyperparameter-string", _header(lambda h: h["hyperparameters"].__setitem__("group_size", "8 answers")),
         HEADER, "", "hyperparameters.group_size: Input should be a valid integer"),
    Case("component-parameter-string",
         _header(lambda h: h["algorithm_config"]["components"]["clip"]["params"].__setitem__("eps", "0.2 wide")),
         HEADER, "", "algorithm_config.components.clip.params.eps: Input should be a valid number"),
    Case("component-parameter-unknown",
         _header(lambda h: h["algorithm_config"]["components"]["clip"]["params"].__setitem__("eps_high", 0.3)),
         HEADER, "", "algorithm_config.components.clip.params.eps_high: unknown parameter of symmetric"),
    Case("component-kind-unknown",
         _header(lambda h: h["algorithm_config"]["components"]["clip"].__setitem__("kind", HOSTILE)),
         HEADER, "", "algorithm_config.components.clip.kind: unknown component"),
    Case("metric-string", _raw_replace(STEPS, '"reward/mean":0.5', '"reward/mean":"high"'),
         STEPS, "(line 1, step 0)", "metrics.reward/mean: Input should be a valid number"),
    Case("clip-side-two", _tokens(lambda d: _response(d)["tokens"]["clip"].__setitem__(0, 2)),
         TOKENS2, "(step 2, prompt 0, response 1)", "tokens.clip.0: Input should be -1, 0 or 1"),
    Case("header-not-an-object", lambda run: write_json(run / HEADER, [1, 2]), HEADER, "",
         "Input should be a valid dictionary"),
    Case("steps-line-not-an-object", lambda run: _replace_line(run, 2, "[2, 3]\n"), STEPS, "(line 3)",
         "Input should be a valid dictionary"),
    # missing fields
    Case("header-task-missing", _header(lambda h: h.pop("task")), HEADER, "", "task: required field is missing"),
    # (a response's reward may be null or absent: prime-rl's token export has none)
    Case("response-length-missing", _tokens(lambda d: _response(d).pop("length")),
         TOKENS2, "(step 2, prompt 0, response 1)", "length: required field is missing"),
    Case("steps-file-missing", lambda run: (run / STEPS).unlink(), STEPS, "", "file is missing"),
    # schema versions
    Case("header-schema-version", _header(lambda h: h.__setitem__("schema_version", "unipo-run/3")),
         HEADER, "", "schema_version: Input should be 'unipo-run/1' or 'unipo-run/2'"),
    Case("token-schema-version", _tokens(lambda d: d.__setitem__("schema_version", "unipo-run/0")),
         TOKENS2, "(step 2)", "schema_version: Input should be 'unipo-run/1' or 'unipo-run/2'"),
    # empty files
    Case("header-empty", _empty(HEADER), HEADER, "", "not valid JSON"),
    Case("token-file-empty", _empty(TOKENS2), TOKENS2, "(step 2)", "not valid JSON"),
    Case("steps-empty", lambda run: ((run / STEPS).write_bytes(b""), *(p.unlink() for p in (run / "tokens").iterdir())),
         STEPS, "", "no steps logged yet: an empty run", level="warning"),
    # duplicate steps
    Case("step-twice", lambda run: _replace_line(run, 3, _lines(run)[2]), STEPS, "(line 4, step 2)",
         "step: expected step 3 next, found 2"),
    Case("group-twice", _tokens(lambda d: d["prompts"].append(d["prompts"][0])), TOKENS2, "(step 2)",
         "prompts: group 0 appears twice"),
    # encoding errors
    Case("steps-invalid-utf8", _bytes_replace(STEPS, b'"objective"', b'"obj\xffective"'), STEPS, "(line 1)",
         "not valid UTF-8 text (byte 80 of the line: 0xff)"),
    Case("header-invalid-utf8", _bytes_replace(HEADER, b'"toy arithmetic"', b'"toy \xc3\x28arithmetic"'), HEADER,
         "", "not valid UTF-8 text (line 1, byte"),
    Case("token-file-invalid-utf8", _bytes_replace(TOKENS2, b'"t0"', b'"t\xe2\x82"'), TOKENS2, "(step 2)",
         "not valid UTF-8 text"),
    Case("token-lone-surrogate", _raw_replace(TOKENS2, '"t1"', '"t1\\ud800"'), TOKENS2,
         "(step 2, prompt 0, response 0)", "tokens.text.1: holds a lone surrogate U+D800 at character 2"),
    Case("prompt-lone-surrogate", _raw_replace(TOKENS2, '"What is 0 + 0?"', '"What is \\udfff?"'), TOKENS2,
         "(step 2, prompt 0)", "prompt: holds a lone surrogate U+DFFF"),
    Case("metric-name-lone-surrogate", _raw_replace(STEPS, '"reward/mean"', '"reward/\\ud83d"'), STEPS,
         "(line 1, step 0)", "metrics: a key holds a lone surrogate U+D83D"),
    Case("utf8-bom", _bytes_replace(HEADER, b"{", b"\xef\xbb\xbf{"), HEADER, "", "not valid JSON: Unexpected UTF-8 BOM"),
    # text too long, nested too deep, identifiers
    Case("title-too-long", _header(lambda h: h.__setitem__("title", "t" * 5000)), HEADER, "",
         "title: String should have at most 4096 characters"),
    Case("token-text-too-long", _tokens(lambda d: _response(d)["tokens"]["text"].__setitem__(0, "x" * 1001)),
         TOKENS2, "(step 2, prompt 0, response 1)", "tokens.text.0: String should have at most 1000 characters"),
    Case("extra-string-huge", _header(lambda h: h.__setitem__("my_notes", "x" * 1_000_001)), HEADER, "",
         "my_notes: is 1,000,001 characters long; at most 1,000,000 are allowed"),
    Case("nested-too-deep", _header(lambda h: h.__setitem__("deep", _nested(80))), HEADER, "",
         "nested deeper than 64 levels"),
    Case("nested-beyond-the-parser", lambda run: (run / HEADER).write_text("[" * 100_000 + "]" * 100_000),
         HEADER, "", "not valid JSON: nested deeper than Python can parse"),
    Case("run-id-hostile", _header(lambda h: h.__setitem__("run_id", HOSTILE)), HEADER, "",
         "run_id: String should match pattern"),
    Case("algorithm-hostile", _header(lambda h: h.__setitem__("algorithm", HOSTILE)), HEADER, "",
         "algorithm: String should match pattern"),
    Case("preset-hostile", _header(lambda h: h.__setitem__("preset", "{{ 7*7 }}")), HEADER, "",
         "preset: String should match pattern"),
    Case("config-id-hostile", _header(lambda h: h["algorithm_config"].__setitem__("id", "grpo</script>")), HEADER,
         "", "algorithm_config.id: String should match pattern"),
    Case("unknown-algorithm", _header(lambda h: (h.__setitem__("algorithm", "nosuch"), h.__setitem__("algorithm_config", None))),
         HEADER, "", "algorithm: unknown algorithm 'nosuch'"),
    # step mismatches
    Case("token-file-says-other-step", _tokens(lambda d: d.__setitem__("step", 4)), TOKENS2, "(step 2)",
         "step: file is for step 2 but says step 4"),
    Case("token-file-missing", _rename(TOKENS2, "tokens/step_2.json.bak"), TOKENS2, "(step 2)",
         "has_tokens: file is missing, but steps.jsonl marks step 2 with has_tokens"),
    Case("token-file-misnamed", _both(_rename(TOKENS2, "tokens/step_2.json"),
                                      lambda run: _edit_line(run, 2, lambda r: r.__setitem__("has_tokens", False))),
         "tokens/step_2.json", "", "ignored: token files are named step_000000.json", level="warning"),
    Case("token-file-beyond-the-steps",
         lambda run: _edit_json(Path(shutil.copy(run / "tokens" / "step_000004.json", run / "tokens" / "step_000009.json")),
                                lambda d: d.__setitem__("step", 9)),
         "tokens/step_000009.json", "(step 9)", "step: steps.jsonl has no step 9", level="warning"),
    # placeholder collisions: text that looks like the build's internal placeholders is just text
    Case("placeholder-in-prompt", lambda run: [_edit_json(path, lambda d: [g.__setitem__("prompt", "UNIPOHTML0001Xdeadbeef")
                                                                           for g in d["prompts"]])
                                               for path in sorted((run / "tokens").glob("step_*.json"))],
         level="valid", algorithm="dapo", shows="UNIPOHTML0001Xdeadbeef"),
    Case("placeholder-in-title", _header(lambda h: h.__setitem__("title", "<p>UNIPOHTML0002Xcafe</p> UNIPOHTML")),
         level="valid", algorithm="ppo", shows="<p>UNIPOHTML0002Xcafe</p> UNIPOHTML"),
]


def parameter_cases() -> list[Case]:
    """A string in every parameter of every registered component kind (from the registry, so a
    new kind or parameter is covered without editing this file)."""
    cases = []
    for slot in SLOTS:
        for kind in REGISTRY[slot].values():
            for name in kind.params.model_fields:
                cases.append(Case(f"param-{slot}-{kind.name}-{name}", _param_breaker(slot, kind.name, name),
                                  HEADER, "", f"algorithm_config.components.{slot}.params.{name}:"))
    return cases


def _param_breaker(slot: str, kind: str, name: str):
    def breaks(run: Path) -> None:
        def edit(h):
            component = h["algorithm_config"]["components"][slot]
            if component["kind"] != kind:
                component["kind"], component["params"] = kind, {}
            component["params"][name] = HOSTILE
        _edit_json(run / HEADER, edit)
    return breaks


ALL_CASES = CASES + parameter_cases()


def write_case(root: Path, case: Case) -> Path:
    """A valid run under ``root/<case.name>``, broken as the case says."""
    run = root / case.name
    write_run(run, header=make_header(case.algorithm, run_id=case.name))
    case.breaks(run)
    return run


def expected_line(run: Path, case: Case) -> tuple[str, str, str]:
    """(start, location, message) the validator's line for ``case`` must have."""
    return str(run / case.file), case.where, case.message

