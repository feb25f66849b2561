"""Seeds, held-out verdicts and seed bands on small fixture runs with hand-worked numbers.

The fixture (``seed_fixtures``): GRPO with three seeds, DAPO with one. Each evaluation scores 20
problems at the start and the end and the first 10 halfway. GRPO starts at 4 of 20 right
("1111" then zeros); at the end seed 0 lost problem 4 and gained problems 5-11 (7 gained, 1 lost),
seed 1 lost problems 1-2 and gained 5-6 (2 and 2), seed 2 gained problems 5-14 (10 and 0).
"""

from __future__ import annotations

import html as html_lib
import json
import math
import re

import numpy as np
import pytest

from seed_fixtures import FixtureRun, write_fixture_runs
from site_build import page_data
from unipo_build.core import heldout, runs
from unipo_build.site.pages.learning import bands as B
from unipo_build.site.facts import seeds as S
from unipo_build.site.pages.learning import verdicts as V
from unipo_build.site.context import AuthorError, Site

START = "1111" + "0" * 16
ENDS = {0: "1110" + "1" * 7 + "0" * 9, 1: "0011" + "11" + "0" * 14, 2: "1" * 14 + "0" * 6}
PERIODIC = {0: "1110111000", 1: "0011110000", 2: "1111111100"}


def grpo(seed: int, run_id: str, tokens: float = 100.0) -> FixtureRun:
    return FixtureRun(
        run_id=run_id, algorithm="grpo", seed=seed,
        metrics=lambda r, k=seed: {"reward/mean": 0.05 * r + 0.1 * k, "length/mean": 20.0 + r,
                                   "sampled/tokens": tokens, "sampled/accuracy": 0.25 + 0.05 * r},
        update_metrics=lambda s: {"entropy/mean": 1.0 - 0.01 * s},
        start_bits=START, end_bits=ENDS[seed], periodic_bits=PERIODIC[seed],
        sampled_start=START, sampled_end=ENDS[seed])


@pytest.fixture(scope="module")
def runs_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("seed-runs")
    dapo = FixtureRun(run_id="dapo", algorithm="dapo", seed=0,
                      metrics=lambda r: {"reward/mean": 0.5, "length/mean": 30.0, "sampled/tokens": 175.0},
                      start_bits=START, end_bits=START)
    return write_fixture_runs(root, [grpo(1, "grpo-s1"), grpo(0, "grpo"), grpo(2, "grpo-s2"), dapo])


@pytest.fixture(scope="module")
def site(runs_dir):
    return Site(runs_where=runs_dir)


# ---------------------------------------------------------------------------
# heldout.accuracy_curve and the paired changes
# ---------------------------------------------------------------------------

def test_accuracy_curve_scores_every_evaluation_on_the_shared_problems(site):
    curve = heldout.accuracy_curve(site.run("grpo").evals)
    # the shared problems are rows 1-10: start "1111000000", halfway "1110111000", end "1110111111"
    assert [(p.step, p.n, p.common) for p in curve] == [(0, 10, True), (10, 10, True), (20, 10, True)]
    assert [p.accuracy for p in curve] == [0.4, 0.6, 0.9]


def test_accuracy_curve_without_per_problem_results_keeps_each_evaluations_own_accuracy():
    a = heldout.EvalRecord(step=0, phase="start", n=20, accuracy_greedy=0.25, problems="eval rows 1-20")
    b = heldout.EvalRecord(step=5, phase="periodic", n=10, accuracy_greedy=0.5, problems="eval rows 1-10")
    curve = heldout.accuracy_curve([a, b])
    assert [(p.accuracy, p.n, p.common) for p in curve] == [(0.25, 20, False), (0.5, 10, False)]


def test_each_seeds_paired_change_is_worked_by_hand(site):
    c0 = V.changes_of(site.run("grpo"))["greedy"]
    assert (c0.gained, c0.lost, c0.start, c0.end) == (7, 1, 0.2, 0.5)
    # 20 problems, under heldout.MIN_PROBLEMS: Newcombe's paired interval. 3 right both times, 7 gained, 1 lost, 9
    # neither. Wilson(0.5, 20) = 0.5 -+ 0.200702, Wilson(0.2, 20) = (0.080657, 0.416016); phi = (3 x 9 - 7 x 1 - 20 /
    # 2) / sqrt(10 x 10 x 4 x 16) = 10 / 80 = 0.125; low = 0.3 - sqrt(0.200702^2 - 2 x 0.125 x 0.200702 x 0.216016 +
    # 0.216016^2) = 0.3 - 0.275873; high = 0.3 + sqrt(0.200702^2 - 2 x 0.125 x 0.200702 x 0.119344 + 0.119344^2) =
    # 0.3 + 0.220309
    assert (c0.low, c0.high) == pytest.approx((0.3 - 0.275873, 0.3 + 0.220309), abs=2e-6)
    assert c0.method == "newcombe"
    assert c0.p_value == pytest.approx(2 * 9 / 256)  # McNemar: P(Binomial(8, 1/2) <= 1), two-sided
    c2 = V.changes_of(site.run("grpo-s2"))["greedy"]
    assert (c2.gained, c2.lost, c2.direction) == (10, 0, "up") and c2.p_value == pytest.approx(2 / 1024)
    c1 = V.changes_of(site.run("grpo-s1"))["greedy"]
    assert (c1.change, c1.direction) == (0.0, "flat")


# ---------------------------------------------------------------------------
# learning_verdict, eval_compare, run_card
# ---------------------------------------------------------------------------

def test_verdict_states_the_signed_paired_change_and_every_seed(site):
    run, runs = site.catalog.with_seeds("grpo")
    assert [r.id for r in runs] == ["grpo", "grpo-s1", "grpo-s2"]  # seed order, not the order found
    text = V.learning_verdict_text(site, run, "grpo", runs)
    assert text.startswith("Held-out greedy accuracy of the run grpo (seed 0) went from")
    assert "went from 20.0% to 50.0% over 20 updates, on the same 20 held-out problems" in text
    assert "a change of +30.0 points (95% interval +2.4 to +52.0; 7 problems gained, 1 lost" in text
    assert "McNemar's exact test p = 0.070" in text
    assert "The interval lies above zero" in text
    assert "Sampled accuracy" in text and "+30.0 points" in text
    assert ("the greedy change was +30.0 (seed 0), 0.0 (seed 1) and +50.0 (seed 2) points: from 0.0 to +50.0 "
            "points, and 2 of 3 seeds gained clearly and 1 showed no clear change, so the direction depends on "
            "the seed") in text


def test_a_drop_reads_as_a_drop_and_one_seed_says_so(tmp_path):
    spec = FixtureRun(run_id="ppo", algorithm="ppo", seed=0, start_bits="1" * 10 + "0" * 10,
                      end_bits="1" * 2 + "0" * 18)
    site = Site(runs_where=write_fixture_runs(tmp_path, [spec]))
    run, runs = site.catalog.with_seeds("ppo")
    text = V.learning_verdict_text(site, run, "ppo", runs)
    assert "a change of \u221240.0 points" in text and "The interval lies below zero" in text
    assert "This rests on one seed" in text


def test_eval_compare_lists_the_shown_run_and_each_seed(site):
    html = V.eval_compare_html(site, ["grpo", "dapo", "reinforce"])
    rows = re.findall(r"<tr>(.*?)</tr>", html)[1:]
    grpo_row = [re.sub(r"<[^>]+>", "", c.replace("<br>", " | ")) for c in re.findall(r"<td[^>]*>(.*?)</td>", rows[0])]
    assert grpo_row[1] == "grpo | seed 0"
    assert grpo_row[3] == "+30.0 [+2.4, +52.0]" and grpo_row[4] == "7 / 1" and grpo_row[5] == "gain"
    assert grpo_row[6] == "+30.0 · 0.0 · +50.0 | range 0.0 to +50.0; 2 up and 1 unclear"
    dapo_row = re.findall(r"<td[^>]*>(.*?)</td>", rows[1])
    # the same 4 of 20 right at start and end: no discordant problem, yet 20 problems bound the change only to
    # Newcombe's -+13.2 points (4 both, 16 neither: phi = (4 x 16 - 10) / sqrt(4 x 16 x 4 x 16) = 0.84375; Wilson(0.2,
    # 20) = (0.080657, 0.416016): sqrt(0.119344^2 - 2 x 0.84375 x 0.119344 x 0.216016 + 0.216016^2) = 0.131916)
    assert dapo_row[3] == "0.0 [\u221213.2, +13.2]" and dapo_row[6] == "one seed only"
    assert "not in this build" in rows[2]


def test_run_card_labels_the_periodic_subset_and_the_full_set(site):
    html = V.run_card_html(site, site.run("grpo"), "grpo")
    assert "all 20" in html and "the first 10" in html
    assert "Greedy on the 10 shared" in html
    # the shared column reads 40.0%, 60.0%, 90.0% from top to bottom
    assert re.findall(r">(\d+\.\d%)</td></tr>", html) == ["40.0%", "60.0%", "90.0%"]


def test_which_run_a_page_shows_for_an_algorithm(tmp_path):
    specs = [FixtureRun(run_id="grpo", algorithm="grpo", seed=0),
             FixtureRun(run_id="grpo-s1", algorithm="grpo", seed=1, detail_steps=(0, 1)),
             FixtureRun(run_id="grpo-s2", algorithm="grpo", seed=2)]
    root = write_fixture_runs(tmp_path, specs)
    site = Site(runs_where=root)
    # the algorithm's id names its chosen run, although a run has that id: token detail first
    assert site.run("grpo").id == "grpo-s1" and site.run("grpo-s2").id == "grpo-s2"
    text = S.run_choice_text(site, "grpo")
    assert text.startswith("This chapter shows the run grpo-s1 (seed 1) of the 3 GRPO runs in this build: it is the "
                           "one with token-level detail.")
    assert "The others, grpo (seed 0) and grpo-s2 (seed 2), log metrics and held-out evaluations only" in text
    assert "the page names it by its id" in S.run_choice_text(site, "grpo-s2")
    # mkdocs.yml's extra.unipo_run_choice overrides the rule, and the sentence says so
    source = runs.runs_source(extra={"unipo_runs": str(root), "unipo_run_choice": {"grpo": "grpo-s2"}}, environ={})
    chosen = Site(runs_where=source)
    assert chosen.run("grpo").id == "grpo-s2"
    assert "mkdocs.yml names it in extra.unipo_run_choice" in S.run_choice_text(chosen, "grpo")


def test_run_choice_names_the_shown_run_and_where_the_others_are(site):
    text = S.run_choice_text(site, "grpo")
    assert text.startswith("This chapter shows the run grpo (seed 0) of the 3 GRPO runs in this build: it has the "
                           "lowest seed.")
    assert "grpo-s1 (seed 1) and grpo-s2 (seed 2)" in text and "seed bands" in text
    assert "the only DAPO run in this build, so what it shows rests on one seed" in S.run_choice_text(site, "dapo")
    assert S.run_choice_text(site, "ppo") == "There is no ppo run in this build."


# ---------------------------------------------------------------------------
# Seed bands
# ---------------------------------------------------------------------------

def test_band_is_median_min_and_max_of_the_seeds_on_a_common_grid(site):
    curves = [B.run_curve(r, "reward/mean", "fraction") for r in site.catalog.seeds_of("grpo")]
    band = B.band_of(curves, grid=5)  # x = 0, 0.25, 0.5, 0.75, 1 of 9 rollouts
    assert band.runs == 3 and list(band.x) == [0, 0.25, 0.5, 0.75, 1]
    # at x = 0.5 (rollout 4.5) the seeds read 0.225 + 0.1 k
    assert (band.low[2], band.median[2], band.high[2]) == pytest.approx((0.225, 0.325, 0.425))


def test_token_axis_counts_every_generated_token_before_an_update(site):
    run = site.run("grpo")
    # 100 tokens per rollout, two updates per rollout: step 3 trains on rollout 1, after 200 tokens
    assert list(B.tokens_at_steps(run, np.array([0, 1, 2, 3, 19]))) == [100, 100, 200, 200, 1000]
    curve = B.run_curve(run, "heldout/greedy", "tokens")
    # evaluations after 0, 10 and 20 updates: 0 tokens, then those of rollouts 0-4 and 0-9
    assert list(curve.x) == [0, 500, 1000] and list(curve.y) == [0.4, 0.6, 0.9]
    band = B.band_of([B.run_curve(site.run("dapo"), "reward/mean", "tokens")], grid=3)
    assert list(band.x) == [175, 962.5, 1750]  # DAPO's 175 tokens per rollout


def test_seed_bands_draw_a_band_only_where_there_are_seeds(site):
    html = B.seed_bands_html(site, ["heldout/greedy", "reward/mean"], ["grpo", "dapo"], "fraction")
    specs = [data for _, data in page_data(html)]
    assert len(specs) == 2
    reward = specs[1]
    rows = reward["data"]["values"]  # one data set: the median line, and the band's low and high
    area = next(layer for layer in reward["layer"] if layer["mark"]["type"] == "area")
    assert area["transform"] == [{"filter": "(datum.n > 1)"}]  # the band only where there are several runs
    assert {(r["a"], r["n"]) for r in rows} == {("GRPO (3 runs)", 3), ("DAPO (1 run)", 1)}
    half = [r for r in rows if r["a"] == "GRPO (3 runs)" and r["x"] == 0.5][0]
    assert (half["lo"], half["m"], half["hi"]) == (0.225, 0.325, 0.425)
    assert "One run only, so no band: DAPO." in html
    grpo_points = [(r["x"], r["m"]) for r in specs[0]["data"]["values"] if r["a"].startswith("GRPO")]
    # shared rows 1-10: 0.4 for every seed at the start, then median(0.6, 0.4, 0.8) and median(0.9, 0.4, 1.0)
    assert grpo_points == [(0, 0.4), (0.5, 0.6), (1, 0.9)]


def test_seed_bands_leave_a_family_member_to_its_own_chapter_unless_asked_for(tmp_path):
    """CISPO is compared with DAPO in a chapter of its own (run_facts.OWN_CHAPTER): the figure of every
    algorithm leaves it out and says so (no page here, so no link); asked for by name, it is drawn."""
    cispo = FixtureRun(run_id="cispo", algorithm="cispo", seed=0,
                       metrics=lambda r: {"reward/mean": 0.4, "length/mean": 25.0, "sampled/tokens": 150.0},
                       start_bits=START, end_bits=START)
    site = Site(runs_where=write_fixture_runs(tmp_path, [grpo(0, "grpo"), grpo(1, "grpo-s1"), cispo]))
    every = B.seed_bands_html(site, ["reward/mean"], None, "fraction")
    rows = json.loads(re.findall(r'<template class="unipo-data"[^>]*>(.*?)</template>', every)[0])["data"]["values"]
    assert {r["a"] for r in rows} == {"GRPO (2 runs)"}
    assert "Not drawn here: CISPO, each compared with the algorithm it changes in a chapter of its own." in every
    asked = B.seed_bands_html(site, ["reward/mean"], ["grpo", "cispo"], "fraction")
    rows = json.loads(re.findall(r'<template class="unipo-data"[^>]*>(.*?)</template>', asked)[0])["data"]["values"]
    assert {r["a"] for r in rows} == {"GRPO (2 runs)", "CISPO (1 run)"} and "Not drawn here" not in asked


def test_seed_bands_reject_an_unknown_metric_or_axis(site):
    with pytest.raises(AuthorError):
        B.seed_bands_html(site, ["reward/nonsense"], None)
    with pytest.raises(AuthorError):
        B.seed_bands_html(site, None, None, "wall")


def test_seed_counts_say_how_many_runs_and_which_rest_on_one_seed(site):
    assert S.seed_counts_text(site) == ("This build has three runs (seeds 0, 1 and 2) of GRPO and one run (seed 0) of "
                                        "DAPO. What it shows of DAPO rests on one seed.")
    assert S.seed_counts_text(site, ["dapo", "ppo"]) == ("This build has one run (seed 0) of DAPO. What it shows of "
                                                         "DAPO rests on one seed.")
    # an algorithm without a run is left out, never said as a missing run (issue 47 item 1)
    assert S.seed_counts_text(site, ["ppo"]) == ""


# ---------------------------------------------------------------------------
# Runs still training: named, not drawn, not counted
# ---------------------------------------------------------------------------

@pytest.fixture(scope="module")
def training_site(tmp_path_factory):
    """GRPO seeds 0 and 1 finished, seed 2 at 4 of its 10 rollouts; GSPO's only run at 3 of 10."""
    root = tmp_path_factory.mktemp("training-runs")
    partial = FixtureRun(run_id="grpo-s2", algorithm="grpo", seed=2, rollouts=4, planned_rollouts=10,
                         metrics=lambda r: {"reward/mean": 0.9}, start_bits=START)
    gspo = FixtureRun(run_id="gspo", algorithm="gspo", seed=0, rollouts=3, planned_rollouts=10,
                      metrics=lambda r: {"reward/mean": 0.3}, start_bits=START)
    return Site(runs_where=write_fixture_runs(root, [grpo(0, "grpo"), grpo(1, "grpo-s1"), partial, gspo]))


def test_a_run_is_still_training_until_its_planned_rollouts_are_logged(training_site):
    assert S.still_training(training_site.run("grpo-s2")) == (4, 10)
    assert S.still_training(training_site.run("grpo")) is None
    assert S.training_text(training_site.run("gspo")) == "still training: 3 of 10 rollouts logged"


def test_verdicts_wait_for_a_run_still_training(training_site):
    run, seeds = training_site.catalog.with_seeds("gspo")
    assert V.learning_verdict_text(training_site, run, "gspo", seeds) == (
        "The run gspo (seed 0) is still training (3 of its 10 rollouts logged), so it has no end-of-training "
        "evaluation yet: whether it learned can be judged once it finishes and the site is rebuilt.")
    run, seeds = training_site.catalog.with_seeds("grpo")
    text = V.learning_verdict_text(training_site, run, "grpo", seeds)
    assert ("Across the 2 finished GRPO runs of this build, the greedy change was +30.0 (seed 0) and 0.0 (seed 1) "
            "points") in text
    assert text.endswith("Still training, so not counted yet: grpo-s2 (seed 2), 4 of 10 rollouts logged.")
    rows = re.findall(r"<tr>(.*?)</tr>", V.eval_compare_html(training_site, ["grpo", "gspo"]))[1:]
    assert re.findall(r"<td[^>]*>(.*?)</td>", rows[1])[5] == "still training: 3 of 10 rollouts logged"


def test_seed_bands_leave_out_runs_still_training_and_name_them(training_site):
    html = B.seed_bands_html(training_site, ["reward/mean"], ["grpo", "gspo"], "fraction")
    spec = json.loads(re.search(r'<template class="unipo-data"[^>]*>(.*?)</template>', html).group(1))
    rows = spec["data"]["values"]
    assert {r["a"] for r in rows} == {"GRPO (2 runs)"}  # grpo-s2's 0.9 would lift the band's top
    assert max(r["hi"] for r in rows) < 0.9
    assert ("Still training, so not drawn until it finishes: GRPO (grpo-s2, 4 of 10 rollouts), GSPO (gspo, 3 of 10 "
            "rollouts).") in html_lib.unescape(html)
    only = B.seed_bands_html(training_site, ["reward/mean"], ["gspo"], "fraction")
    assert "Every run this figure would draw is still training: GSPO (gspo, 3 of 10 rollouts)" in only


def test_a_run_still_training_ends_where_it_has_got_to_on_the_fraction_axis(training_site):
    from unipo_build.site.facts.series import raw_series
    _, _, fraction = raw_series(training_site.run("grpo-s2"), "reward/mean")
    assert fraction.tolist() == pytest.approx([0, 1 / 9, 2 / 9, 3 / 9])  # rollouts 0-3 of 0-9
    _, _, finished = raw_series(training_site.run("grpo"), "reward/mean")
    assert finished[-1] == 1.0


def test_explorer_headline_compares_a_subset_evaluation_on_the_shared_problems():
    from unipo_build.site.views.explorer.explorer import evals_html
    full = heldout.EvalRecord(step=0, phase="start", n=20, accuracy_greedy=0.2, problems="eval rows 1-20",
                              correct_greedy=START)  # 4 of 20 right, all of them in rows 1-4
    subset = heldout.EvalRecord(step=8, phase="periodic", n=10, accuracy_greedy=0.6, problems="eval rows 1-10",
                                correct_greedy="1110111000")
    # rows 1-10 at the start: "1111000000", 40%; not 20% (the whole set) against 60% (the subset)
    assert "Greedy accuracy <strong>40.0% → 60.0%</strong> on the 10 held-out problems both scored" in evals_html(
        [full, subset])
    end = full.model_copy(update={"step": 20, "phase": "end", "accuracy_greedy": 0.5})
    assert "Greedy accuracy <strong>20.0% → 50.0%</strong> on the 20 held-out problems (step 0 to 20)" in evals_html(
        [full, subset, end])


def test_runs_setup_speaks_of_the_runs_shown_and_of_runs_still_training(training_site):
    from unipo_build.site.facts.run_facts import runs_setup_text
    text = runs_setup_text(training_site)
    # four runs in the build, one shown per algorithm: not "the 2 runs of this build"
    assert text.startswith("The 2 runs these pages show, one per algorithm, share the preset")
    assert "the number of rollouts (GRPO 10, GSPO 3 of 10 so far)" in text
    assert runs_setup_text(training_site, ["grpo"]).startswith("The run of this build")
