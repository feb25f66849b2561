"""The task's solution styles and the length probe, as the course shows them."""

from __future__ import annotations

import random
import re

import pytest

from seed_fixtures import FixtureRun, write_fixture_runs
from unipo_build.core.schema import LengthProbe
from unipo_build.site.pages.scale import task_length as T
from unipo_build.site.context import AuthorError, Site

task = pytest.importorskip("training.task")


@pytest.mark.parametrize("template,level", [("add", 3), ("sub", 3), ("add", 2), ("sub", 2)])
def test_a_check_row_holds_the_generators_other_styles(template, level):
    rng = random.Random(f"styles-{template}-{level}")
    for _ in range(50):
        problem = task.TEMPLATES[template](rng, level)
        row = {"prompt": problem.prompt, "answer": str(problem.answer), "style": "check",
               "solution": problem.solutions["check"]}
        assert T.styles_of_row(row) == problem.solutions


def test_rows_without_a_check_line_or_in_a_short_style_hold_one_style():
    rng = random.Random(5)
    coins = task.make_coins(rng, 2)  # no check line: its "check" style is the column working
    assert T.styles_of_row({"style": "check", "solution": coins.solutions["check"]}) is None
    assert T.styles_of_row({"style": "column", "solution": coins.solutions["column"]}) is None
    given = {"bare": "2 + 2 = 4. Answer: 4", "column": "2 + 2 = 4, write 4. So 2 + 2 = 4. Answer: 4"}
    assert T.styles_of_row({"style": "bare", "solution": given["bare"], "solutions": given}) == given


def test_the_example_prefers_a_row_whose_column_working_carries_or_borrows():
    plain = {"id": "a", "style": "check", "solution": "3 + 4 = 7, write 7. So 3 + 4 = 7. Check: 7 - 4 = 3. Answer: 7"}
    carry = {"id": "b", "style": "check",
             "solution": "7 + 5 = 12, write 2 carry 1. 1 + 1 + 1 = 3, write 3. So 17 + 15 = 32. Check: 32 - 15 = 17. "
                         "Answer: 32"}
    row, styles = T.example_row([{"id": "c", "style": "bare", "solution": "x. Answer: 1"}, plain, carry])
    assert row["id"] == "b"
    assert styles["bare"] == "17 + 15 = 32. Answer: 32"
    assert styles["column"] == "7 + 5 = 12, write 2 carry 1. 1 + 1 + 1 = 3, write 3. So 17 + 15 = 32. Answer: 32"
    assert T.example_row([plain])[0]["id"] == "a"  # no carrying row: the first one that has all styles


def test_the_shipped_task_shows_one_real_row_in_three_styles():
    html = T.task_styles_html(Site())
    row_id = re.search(r"row (eval-\d+)", html).group(1)
    rows = {r["id"]: r for r in T.read_rows(Site().root / "data" / "tasks" / "eval.jsonl")}
    assert rows[row_id]["style"] == "check"
    assert html.count("<code") == 3 and rows[row_id]["solution"] in html
    assert "this build does not hold" not in html  # the tiny set trained on data/tasks itself


def test_a_set_trained_on_a_task_this_build_lacks_says_where_the_example_comes_from(tmp_path):
    """The gpu set's runs name data/tasks-gpu, which the project does not ship: the welcome page's
    example then comes from data/tasks, and the caption says so; with that directory present, the
    example is the set's own task."""
    gpu_runs = Site().root / "data" / "runs-gpu"
    if not gpu_runs.is_dir():
        pytest.skip("no gpu set in data/runs-gpu")
    html = T.task_styles_html(Site(runs_where=gpu_runs))
    assert "data/tasks/eval.jsonl, row" in html
    assert "trained on data/tasks-gpu, which this build does not hold, so the example comes from data/tasks" in html
    root = tmp_path / "project"
    (root / "data" / "algorithms").mkdir(parents=True)
    task.generate_task(root / "data" / "tasks-gpu", level="gpu", n_train=40, n_eval=40, n_rl=20)
    html = T.task_styles_html(Site(root=root, runs_where=gpu_runs))
    assert "data/tasks-gpu/eval.jsonl, row" in html and "does not hold" not in html


PROBE = LengthProbe(prompts=4, group_size=2, budget=96, median_length=24.0, mean_length=30.0, within_group_sd=6.5,
                    overlong_band=0.125, truncated=0.0, accuracy=0.25)


PROBE_S1 = PROBE.model_copy(update={"median_length": 32.0, "within_group_sd": 7.0})


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    root = tmp_path_factory.mktemp("probe-runs")
    runs = [FixtureRun(run_id="grpo", algorithm="grpo", seed=0, length_probe=PROBE),
            FixtureRun(run_id="ppo", algorithm="ppo", seed=0),
            FixtureRun(run_id="dapo", algorithm="dapo", seed=0, length_probe=PROBE),
            FixtureRun(run_id="grpo-s1", algorithm="grpo", seed=1, length_probe=PROBE_S1)]
    return Site(runs_where=write_fixture_runs(root, runs))


def test_length_probe_facts(site):
    fact = lambda key: T.length_probe_fact_text(site.run("grpo"), "grpo", key)  # noqa: E731
    assert fact("budget_over_median") == "4"  # 96 / 24
    assert fact("within_group_sd") == "6.5" and fact("overlong_band") == "12.5%" and fact("truncated") == "0.0%"
    assert T.length_probe_fact_text(site.run("ppo"), "ppo", "median_length") == "(the ppo log has no length probe)"
    with pytest.raises(AuthorError):
        fact("longest")


def test_length_probe_table_lists_the_runs_that_have_one(site):
    html = T.length_probe_html(site, ["grpo", "ppo"])
    rows = [re.sub(r"</?span[^>]*>", "", row) for row in re.findall(r"<tr>(.*?)</tr>", html)[1:]]
    assert len(rows) == 2  # every seed of GRPO; PPO has no probe
    assert re.findall(r"<td[^>]*>(.*?)</td>", rows[0]) == [
        "GRPO (seed 0)", "4 × 2", "24", "30", "6.5", "96 (4× the median)", "12.5%", "0.0%", "25.0%"]
    assert re.findall(r"<td[^>]*>(.*?)</td>", rows[1])[:5] == ["GRPO (seed 1)", "4 × 2", "32", "30", "7"]
    assert "share a row" not in html


def test_length_probe_table_gives_identical_probes_one_row(site):
    html = T.length_probe_html(site, ["grpo", "dapo"])
    cells = [re.sub(r"</?span[^>]*>", "", re.findall(r"<td[^>]*>(.*?)</td>", row)[0])
             for row in re.findall(r"<tr>(.*?)</tr>", html)[1:]]
    assert cells == ["GRPO and DAPO (seed 0)", "GRPO (seed 1)"]
    site_names = T._runs_cell(site, [site.run("grpo-s1")], {("grpo", "seed 1")})
    assert site_names == "GRPO\u00a0(grpo-s1) (seed 1)"  # named by id too when its algorithm and seed recur
    assert "share a row" in html


def test_length_probe_summary_in_sentences_or_says_there_is_none(site):
    text = T.length_probe_summary_text(site, site.run("grpo"), "grpo")
    assert text == ("In the GRPO run (4 held-out prompts, 2 answers each) the median answer was 24 tokens long and the "
                    "generation budget 96 tokens (4 times the median); answers to the same prompt differed in length "
                    "by 6.5 tokens on average (the standard deviation within a group). 12.5% of the answers fell in "
                    "the last fifth of the budget, where DAPO's overlong shaping starts to penalise, and 0.0% hit the "
                    "budget.")
    assert T.length_probe_summary_text(site, site.run("ppo"), "ppo").startswith("The ppo log has no length probe")
