"""The bad-input table (tests/bad_inputs.py) against the validator and the site build.

For every case: ``unipo validate`` names the file, the line or step, and the field (or says the
run is valid, with a warning where one is due), never with a traceback; the site build skips the
run with the validator's message, or fails naming it under UNIPO_STRICT_RUNS=1; and no input
file is changed by either.
"""

from __future__ import annotations

import json

import html
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from bad_inputs import ALL_CASES, Case, expected_line, write_case
from cli_helpers import unipo
from helpers_runlog import checksums, make_header, write_run
from unipo_build.core import runs as unipo_runs
from unipo_build.cli.main import _known_algorithms, validate_path

ROOT = Path(__file__).resolve().parents[1]
BAD = [c for c in ALL_CASES if c.level == "error"]


def _line_for(lines: list[str], run: Path, case: Case) -> str | None:
    start, where, message = expected_line(run, case)
    for line in lines:
        if line.startswith(start) and where in line and message in line:
            return line
    return None


@pytest.mark.parametrize("case", ALL_CASES, ids=lambda c: c.name)
def test_validate_names_file_place_and_field(case, tmp_path):
    run = write_case(tmp_path, case)
    before = checksums(run)
    warnings: list[str] = []
    problems = validate_path(run, _known_algorithms(), warnings)
    assert checksums(run) == before
    if case.level == "error":
        assert _line_for(problems, run, case), "\n".join(problems) or "no problem reported"
    else:
        assert problems == []
        if case.level == "warning":
            assert _line_for([w.removeprefix("warning: ") for w in warnings], run, case), warnings
        else:
            assert warnings == []


@pytest.fixture(scope="module")
def cases_dir(tmp_path_factory) -> Path:
    """Every case as a run of one runs directory, next to a good run."""
    root = tmp_path_factory.mktemp("bad-inputs")
    for case in ALL_CASES:
        write_case(root, case)
    write_run(root / "good", header=make_header("grpo", run_id="good"))
    return root


def test_console_script_reports_every_case_without_a_traceback(cases_dir):
    before = checksums(cases_dir)
    result = unipo("validate", cases_dir)
    assert checksums(cases_dir) == before
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    lines = result.stderr.splitlines()
    missing = [c.name for c in ALL_CASES if c.level != "valid" and not _line_for(
        [line.removeprefix("warning: ") for line in lines], cases_dir / c.name, c)]
    assert missing == []


def _build(runs: Path, site: Path, **env) -> subprocess.CompletedProcess:
    environ = dict(os.environ, NO_MKDOCS_2_WARNING="1", UNIPO_RUNS=str(runs))
    environ.pop("UNIPO_STRICT_RUNS", None)
    environ.update(env)
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--site-dir", str(site)], cwd=ROOT,
                          env=environ, capture_output=True, text=True, timeout=900)


@pytest.fixture(scope="module")
def lenient_build(cases_dir, tmp_path_factory):
    before = checksums(cases_dir)
    site = tmp_path_factory.mktemp("site")
    result = _build(cases_dir, site)
    return result, before, site


def test_build_skips_each_bad_run_with_the_validators_message(lenient_build, cases_dir):
    result, before, site = lenient_build
    log = result.stdout + result.stderr
    assert result.returncode == 0, log[-5000:]
    assert "Traceback" not in log and "Error" not in log.replace("ValidationError", "")
    assert checksums(cases_dir) == before
    found = {r.path.name: r for r in unipo_runs.discover(cases_dir)}
    # The page of the guide that lists the runs of the build (runs_status) names each skipped run
    # with the validator's message.
    listed = _skipped_on_page(site / "guides" / "own-logs" / "index.html")
    for case in ALL_CASES:
        run = found[case.name]
        if case.level == "error":
            assert not run.ok, case.name
            assert _line_for(run.error.splitlines(), cases_dir / case.name, case), (case.name, run.error)
            skipped = [line for line in log.splitlines() if f"run {case.name} failed to load" in line]
            assert skipped, case.name
            assert listed.get(case.name) == run.error, (case.name, listed.get(case.name))
        elif case.name == "steps-empty":
            assert not run.ok and "an empty run" in run.error
        else:
            assert run.ok, (case.name, run.error)


def _skipped_on_page(page: Path) -> dict[str, str]:
    """Run name -> error text, as the skipped-runs admonition of a built page shows them."""
    text = page.read_text(encoding="utf-8")
    box = re.search(r'<div class="admonition failure unipo-skipped-runs">(.*?)</ul></div>', text, re.S)
    assert box, f"{page}: no list of skipped runs"
    return {html.unescape(name): html.unescape(error) for name, error in
            re.findall(r"<li><p><strong>(.*?)</strong></p><pre><code>(.*?)</code></pre></li>", box.group(1), re.S)}


def test_strict_build_fails_with_the_validators_messages(cases_dir, tmp_path):
    before = checksums(cases_dir)
    result = _build(cases_dir, tmp_path / "site", UNIPO_STRICT_RUNS="1")
    log = result.stdout + result.stderr
    assert checksums(cases_dir) == before
    assert result.returncode != 0
    assert "Traceback" not in log
    assert "runs that failed to load (UNIPO_STRICT_RUNS=1)" in log
    missing = [c.name for c in BAD if not _line_for([line.strip() for line in log.splitlines()], cases_dir / c.name, c)]
    assert missing == []


def test_text_like_the_builds_placeholders_is_shown_as_it_is(lenient_build):
    import html

    result, _, site = lenient_build
    assert result.returncode == 0
    pages = [html.unescape(p.read_text(encoding="utf-8")) for p in site.rglob("*.html")]
    # A step's prompts and answers reach the reader through its step file, which the Step Inspector
    # draws in the browser (text only): the file must carry them as they were logged.
    step_files = [json.dumps(json.loads(p.read_text(encoding="utf-8")), ensure_ascii=False)
                  for p in site.glob("assets/runs/*/steps/step_*.json")]
    assert pages and step_files
    for case in ALL_CASES:
        if case.shows:
            assert any(case.shows in text for text in pages + step_files), case.name


def test_runs_are_resolved_by_their_header_not_their_directory(tmp_path):
    runs = tmp_path / "runs"
    write_run(runs / "ppo", header=make_header("grpo", run_id="ppo"))  # a GRPO run in a folder named ppo
    write_run(runs / "grpo", header=make_header("dapo", run_id="mine"))
    assert unipo_runs.get_run("ppo", runs) is None  # no PPO run in this build, whatever the folders say
    assert unipo_runs.get_run("grpo", runs).path == runs / "ppo"
    assert unipo_runs.get_run("dapo", runs).path == runs / "grpo"
    assert unipo_runs.get_run("mine", runs).path == runs / "grpo"
    result = _build(runs, tmp_path / "site")
    log = result.stdout + result.stderr
    assert result.returncode == 0 and "Traceback" not in log, log[-3000:]


def test_import_turns_a_foreign_algorithm_name_into_an_identifier_and_names_bad_fields(tmp_path):
    import json as _json

    source = (ROOT / "tests" / "fixtures" / "unipo" / "custom_algo.jsonl").read_text(encoding="utf-8").splitlines()
    header = _json.loads(source[0])
    header["algorithm"] = "REINFORCE++ <b>v2</b>"
    good = tmp_path / "named.jsonl"
    good.write_text("\n".join([_json.dumps(header)] + source[1:]) + "\n", encoding="utf-8")
    result = unipo("import", "unipo", good, "--out", tmp_path / "named")
    assert result.returncode == 0, result.stderr
    written = _json.loads((tmp_path / "named" / "header.json").read_text(encoding="utf-8"))
    assert written["algorithm"] == "REINFORCE_b_v2_b" and "REINFORCE++ <b>v2</b>" in written["title"]
    header["label"] = "x" * 5000
    bad = tmp_path / "long.jsonl"
    bad.write_text("\n".join([_json.dumps(header)] + source[1:]) + "\n", encoding="utf-8")
    before = checksums(tmp_path)
    result = unipo("import", "unipo", bad, "--out", tmp_path / "long")
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert result.stderr.startswith(f"{bad}: title: String should have at most 4096 characters"), result.stderr
    assert not (tmp_path / "long").exists() and checksums(tmp_path) == before


def test_numbers_at_their_bounds_build_without_overflow(tmp_path):
    """Every float of every shipped run moved to the bound its field allows (±1e15, log-probs at
    -300, accuracies at 0 and 1, ...): the validator accepts it, so the build must carry it."""
    from hostile import extreme_run

    runs = tmp_path / "runs"
    for run in sorted(p for p in (ROOT / "data" / "runs").iterdir() if p.is_dir()):
        extreme_run(run, runs / run.name)
    assert unipo("validate", "-q", runs).returncode == 0
    result = _build(runs, tmp_path / "site", PYTHONWARNINGS="error::RuntimeWarning")
    log = result.stdout + result.stderr
    assert result.returncode == 0, log[-5000:]
    assert "Traceback" not in log and "RuntimeWarning" not in log and "failed to load" not in log
