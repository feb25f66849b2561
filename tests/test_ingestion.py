"""Robust ingestion: broken runs never end the build in a traceback.

A good run is made by the real trainer (a tiny random policy, one rollout); broken copies of it
sit next to it: a line cut off at the end of steps.jsonl, NaN in a metric, a value of the wrong
type, a header field missing. The site is built (`mkdocs build`, not --strict: --strict is about
MkDocs' own warnings and does not change how runs are read) with UNIPO_RUNS pointing at them.
The build must succeed, the pages and the build log must name each skipped run and why, and
UNIPO_STRICT_RUNS=1 must turn the same runs into a failed build that names them.
"""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")

from training_fixtures import coin_flip_score  # noqa: E402
from unipo_build.core import runs  # noqa: E402
from unipo_build.core.reader import validate_run  # noqa: E402

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]

# Broken copy (directory name) -> what its error must say: (file, location, field / message).
BROKEN = {
    # Named like the algorithm, so every page that shows "grpo" finds this broken run first.
    "grpo": ("steps.jsonl", "(line ", "the line is cut off"),
    "nan-metric": ("steps.jsonl", "(line 2, step 1)", "metrics.reward/mean: NaN or infinity is not allowed here"),
    "wrong-type": ("steps.jsonl", "(line 3, step 2)", "metrics.reward/mean: Input should be a valid number"),
    "missing-field": ("header.json", "", "task: required field is missing"),
}


def _train(out: Path, checkpoint: Path) -> Path:
    import training.rl as rl

    original = rl.score_response
    rl.score_response = coin_flip_score
    try:
        opts = rl.TrainOptions(algorithm="grpo", steps=2, model=str(checkpoint), out=str(out), progress=False,
                               eval_n=8, detail_every=1,
                               rl_overrides={"prompts_per_step": 4, "group_size": 4, "max_new_tokens": 12})
        return Path(rl.train(opts))
    finally:
        rl.score_response = original


def _copy(root: Path, name: str) -> Path:
    target = root / name
    shutil.copytree(root / "good", target)
    header = json.loads((target / "header.json").read_text())
    header["run_id"] = name
    (target / "header.json").write_text(json.dumps(header) + "\n")
    return target


def _edit_line(path: Path, index: int, edit) -> None:
    lines = path.read_text().splitlines()
    record = json.loads(lines[index])
    edit(record)
    lines[index] = json.dumps(record)
    path.write_text("\n".join(lines) + "\n")


def build(runs_dir: Path, site: Path, **env) -> subprocess.CompletedProcess:
    environ = dict(os.environ, NO_MKDOCS_2_WARNING="1", UNIPO_RUNS=str(runs_dir))
    environ.pop("UNIPO_STRICT_RUNS", None)
    environ.update(env)
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--site-dir", str(site)], cwd=ROOT, env=environ,
                          capture_output=True, text=True, timeout=900)


@pytest.fixture(scope="module")
def good_run(tmp_path_factory, tiny_policy) -> Path:
    run = _train(tmp_path_factory.mktemp("trained") / "good", tiny_policy)
    assert validate_run(run) == []
    return run


@pytest.fixture(scope="module")
def runs_dir(good_run, tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("runs")
    shutil.copytree(good_run, root / "good")
    steps = (root / "good" / "steps.jsonl").read_text()
    assert steps.count("\n") >= 4
    (_copy(root, "grpo") / "steps.jsonl").write_text(steps[:-25])  # killed while writing the last line
    _edit_line(_copy(root, "nan-metric") / "steps.jsonl", 1,
               lambda r: r["metrics"].__setitem__("reward/mean", float("nan")))
    _edit_line(_copy(root, "wrong-type") / "steps.jsonl", 2,
               lambda r: r["metrics"].__setitem__("reward/mean", "high"))
    header = _copy(root, "missing-field") / "header.json"
    raw = json.loads(header.read_text())
    del raw["task"]
    header.write_text(json.dumps(raw) + "\n")
    return root


@pytest.fixture(scope="module")
def site(runs_dir, tmp_path_factory):
    out = tmp_path_factory.mktemp("site")
    result = build(runs_dir, out)
    return out, result


def _pages(site_dir: Path) -> dict[str, str]:
    return {str(p.relative_to(site_dir)): html.unescape(p.read_text(encoding="utf-8"))
            for p in site_dir.rglob("*.html")}


def test_build_succeeds_without_a_traceback(site, runs_dir):
    out, result = site
    log = result.stdout + result.stderr
    assert result.returncode == 0, log[-6000:]
    assert "Traceback" not in log and "Macro Rendering Error" not in log
    # Broken runs are reported at INFO level, so `mkdocs build --strict` would not fail on them.
    noisy = [line for line in log.splitlines() if re.match(r"\s*(WARNING|ERROR)\b", line)
             and (str(runs_dir) in line or any(name in line for name in BROKEN))]
    assert noisy == []
    assert (out / "index.html").is_file()


def test_each_run_fails_with_a_precise_message(runs_dir):
    found = {r.path.name: r for r in runs.discover(runs_dir)}
    assert found["good"].ok
    for name, (file, location, message) in BROKEN.items():
        run = found[name]
        assert not run.ok, name
        assert run.error.startswith(str(runs_dir / name / file)), run.error
        assert location in run.error and message in run.error, run.error


def test_build_log_names_every_skipped_run(site, runs_dir):
    _, result = site
    log = result.stdout + result.stderr
    for name, (file, location, message) in BROKEN.items():
        lines = [line for line in log.splitlines() if f"run {name} failed to load" in line]
        assert lines and message in lines[0], name


def test_a_broken_run_named_like_its_algorithm_gives_way_to_a_loadable_one(site, runs_dir):
    """The broken copy called grpo does not hide GRPO's loadable run: pages about GRPO show that
    one (an algorithm's id names its chosen run), and the page that lists the build's runs names
    the broken directory with its error (test_guide_page_lists_the_skipped_runs)."""
    out, _ = site
    chosen = runs.get_run("grpo", runs_dir)
    assert chosen is not None and chosen.ok and chosen.path.name == "good"
    broken = next(r for r in runs.catalog_of(runs_dir).runs if r.path.name == "grpo")
    assert not broken.ok and BROKEN["grpo"][2] in broken.error
    # The good run is published for the pages that use it; nothing of the broken one is.
    assert list((out / "assets" / "runs" / "good" / "steps").glob("step_*.json"))
    assert not (out / "assets" / "runs" / "grpo").exists()


def test_skipped_runs_admonition_names_each_run_and_error(runs_dir):
    found = runs.discover(runs_dir)
    admonition = html.unescape(runs.skipped_runs_html(found, runs_dir))
    # outside the project, the runs directory is named without the building machine's path
    assert f"{len(BROKEN)} runs in <code>.../{runs_dir.name}</code> could not be read and were skipped" in admonition
    for name, (_, _, message) in BROKEN.items():
        assert f"<strong>{name}</strong>" in admonition and message in admonition
    assert runs.skipped_runs_html([r for r in found if r.ok]) == ""
    # What a log holds is escaped on its way into the page.
    bad = runs.Run(id="x", path=runs_dir / "<script>", error="<b>")
    assert "<script>" not in runs.skipped_runs_html([bad]) and "&lt;b&gt;" in runs.skipped_runs_html([bad])


def test_guide_page_lists_the_skipped_runs(site, runs_dir):
    out, _ = site
    page = _pages(out)["guides/own-logs/index.html"]
    assert "Runs in this build" in page and "good" in page
    for name, (_, _, message) in BROKEN.items():
        assert name in page and message in page


def test_strict_runs_turn_broken_runs_into_a_failed_build(runs_dir, tmp_path):
    result = build(runs_dir, tmp_path / "site", UNIPO_STRICT_RUNS="1")
    log = result.stdout + result.stderr
    assert result.returncode != 0
    assert "runs that failed to load (UNIPO_STRICT_RUNS=1)" in log
    for name in BROKEN:
        assert str(runs_dir / name) in log


def test_a_broken_token_file_does_not_stop_the_build(good_run, tmp_path):
    root = tmp_path / "runs"
    root.mkdir()
    shutil.copytree(good_run, root / "good")
    bad = _copy(root, "a-token-bad")  # sorts first: pages asking for "grpo" get this run
    token_file = bad / "tokens" / "step_000000.json"
    detail = json.loads(token_file.read_text())
    detail["prompts"][0]["responses"][0]["reward"] = "one"
    token_file.write_text(json.dumps(detail) + "\n")
    result = build(root, tmp_path / "site")
    log = result.stdout + result.stderr
    assert result.returncode == 0 and "Traceback" not in log, log[-3000:]
