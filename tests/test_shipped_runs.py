"""The shipped runs in data/runs keep the promises the course makes about them.

- each validates against the schema and was produced by this pipeline (engine, seed,
  preset and provenance in the header);
- every logged token objective and step objective is reproduced by the site's numpy
  math (the consistency check, 1e-5 relative);
- the teaching moments the chapters rely on are there, found by code;
- learning: for GRPO, DAPO and Dr. GRPO the mean reward over the last 10% of steps
  exceeds the first 10%.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from unipo_build import runlog
from unipo_build.moments import find_moment
from unipo_build.recompute import check_step
from unipo_build.specs import load_specs
from unipo_build.summary import summarize

RUNS = Path(__file__).resolve().parent.parent / "data" / "runs"
SHIPPED = sorted(p for p in RUNS.glob("*") if (p / "header.json").exists()) if RUNS.is_dir() else []
EXPECTED = {"reinforce", "ppo", "grpo", "dapo", "dr_grpo"}

pytestmark = pytest.mark.skipif(not SHIPPED, reason="no shipped runs in data/runs")


def _run(algorithm: str) -> Path:
    for path in SHIPPED:
        if runlog.read_header(path).algorithm == algorithm:
            return path
    pytest.fail(f"no shipped run of {algorithm} in {RUNS}")


def test_one_run_per_algorithm_with_provenance():
    algorithms = {runlog.read_header(p).algorithm for p in SHIPPED}
    assert EXPECTED <= algorithms
    for path in SHIPPED:
        header = runlog.read_header(path)
        assert header.engine == "unipo"
        assert header.seed is not None and header.preset in ("tiny", "gpu")
        assert header.hardware is not None and header.commit
        assert header.finished_at is not None, f"{path} did not finish"
        assert header.algorithm_config is not None


@pytest.mark.parametrize("path", SHIPPED, ids=[p.name for p in SHIPPED])
def test_validates(path):
    assert runlog.validate_run(path, known_algorithms=set(load_specs())) == []


@pytest.mark.parametrize("path", SHIPPED, ids=[p.name for p in SHIPPED])
def test_every_logged_token_recomputes(path):
    header = runlog.read_header(path)
    metrics = {r.step: r.metrics for r in runlog.iter_steps(path)}
    problems = []
    for step in runlog.token_steps(path):
        detail = runlog.read_step_detail(path, step)
        problems += check_step(header.algorithm_config, detail)
        assert detail.objective == pytest.approx(metrics[step]["objective"], rel=1e-5, abs=1e-9)
    assert problems == []


@pytest.mark.parametrize("algorithm,moment", [
    ("grpo", "all_correct_group"), ("grpo", "all_wrong_group"),
    ("dapo", "clipped_high"), ("dapo", "filtered_group"),
    ("dr_grpo", "longest_wrong"), ("ppo", "max_kl_step"),
])
def test_teaching_moments_are_in_the_runs(algorithm, moment):
    assert find_moment(_run(algorithm), moment) is not None


def test_clipping_happens_on_both_sides():
    sides = {name: any(find_moment(_run(a), name) for a in ("grpo", "dapo", "dr_grpo", "ppo"))
             for name in ("clipped_high", "clipped_low")}
    assert sides == {"clipped_high": True, "clipped_low": True}


def test_all_correct_group_has_zero_advantage_everywhere():
    run = _run("grpo")
    m = find_moment(run, "all_correct_group")
    detail = runlog.read_step_detail(run, m.step)
    group = next(g for g in detail.prompts if g.index == m.group)
    assert all(a == 0.0 for r in group.responses for a in r.tokens.advantage)


@pytest.mark.parametrize("algorithm", ["grpo", "dapo", "dr_grpo"])
def test_training_reward_rises(algorithm):
    s = summarize(_run(algorithm), with_moments=False)
    assert s["reward_mean_last_10pct"] > s["reward_mean_first_10pct"]


@pytest.mark.parametrize("path", SHIPPED, ids=[p.name for p in SHIPPED])
def test_each_moment_has_its_defining_property(path):
    """Checked against every logged token: the moments are the extremes and firsts they claim."""
    from unipo_build.moments import find_moments

    found = find_moments(path)
    details = [runlog.read_step_detail(path, s) for s in runlog.token_steps(path)]
    responses = [(d.step, g, r) for d in details for g in d.prompts for r in g.responses]
    clipped = [(ratio, side) for _, _, r in responses if r.tokens for ratio, side in zip(r.tokens.ratio, r.tokens.clip)]
    for name, side, pick in (("clipped_high", 1, max), ("clipped_low", -1, min)):
        ratios = [ratio for ratio, s in clipped if s == side]
        assert (found[name] is None) == (not ratios)
        if ratios:
            assert found[name].value == pick(ratios)
    trained_wrong = [r.length for _, g, r in responses if not g.filtered and r.tokens and r.correct is False]
    assert (found["longest_wrong"].value if found["longest_wrong"] else None) == (max(trained_wrong) if trained_wrong else None)
    for name, holds in (("all_correct_group", lambda g: not g.filtered and all(r.correct for r in g.responses)),
                        ("filtered_group", lambda g: g.filtered)):
        first = next(((d.step, g.index) for d in details for g in d.prompts if holds(g)), None)
        assert (None if found[name] is None else (found[name].step, found[name].group)) == first
