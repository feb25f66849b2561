"""The ablation ladder and the batch-filling figure on small fixture runs, worked by hand.

Ladder fixture (``seed_fixtures.SUITE``): GRPO with three seeds (greedy changes +30, 0 and +50 points on 20 problems, as in
test_seed_views), GRPO − KL, + clip-higher and DAPO with one run each; + token mean and + dynamic
sampling have no finished run (+ token mean's is at 3 of its 10 rollouts). DAPO's fixture fills its batch of 4 groups x 2 answers in every rollout but
rollout 4 (6 of 8 responses kept) and rollout 7 (nothing kept: no update, no line in steps.jsonl).
"""

from __future__ import annotations

import re

import pytest

from seed_fixtures import FixtureRun, fixture_project, write_fixture_runs
from site_build import page_data
from test_seed_views import grpo, START
from unipo_build.site.pages.objectives import ladder as L
from unipo_build.site.pages.dynamics import sampling as SM
from unipo_build.site.context import AuthorError, Site


def dapo_metrics(r: int) -> dict:
    return {"sampling/rounds": float(r % 3 + 1), "sampling/generated_per_kept": 2.0 if r < 5 else 1.5,
            "sampled/length": 10.0, "sampled/tokens": 120.0 if r == 4 else 160.0 if r < 5 else 120.0,
            "accuracy/train": 0.5, "sampled/accuracy": 0.25 if r < 5 else 0.375,
            "reward/mean": 0.5, "sampled/reward": 0.25, "length/mean": 30.0}


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    root = tmp_path_factory.mktemp("ladder-runs")
    one = lambda run_id, **kw: FixtureRun(run_id=run_id, algorithm=run_id, seed=0, start_bits=START, **kw)  # noqa: E731
    specs = [grpo(0, "grpo"), grpo(1, "grpo-s1"), grpo(2, "grpo-s2"),
             one("ladder_no_kl", end_bits="1" * 6 + "0" * 14,
                 update_metrics=lambda s: {"clip/frac_high": 0.001 * s, "entropy/mean": 0.5}),
             one("ladder_clip_higher", end_bits=START),
             one("ladder_token_mean", rollouts=3, planned_rollouts=10),
             one("dapo", end_bits=START, metrics=dapo_metrics, skip_rollouts=(7,))]
    return Site(root=fixture_project(root / "project"), runs_where=write_fixture_runs(root / "runs", specs))


def layer_values(spec: dict, mark: str) -> list[dict]:
    """The data of the first layer drawing ``mark`` (Altair may hoist data shared by layers)."""
    layer = next(layer for layer in spec["layer"] if layer["mark"]["type"] == mark)
    return (layer.get("data") or spec["data"])["values"]


def cells(html: str) -> list[list[str]]:
    """Each body row's cells as text; a line break within a cell reads ' | '."""
    def text(cell: str) -> str:
        return re.sub(r"<[^>]+>", "", cell.replace("<br>", " | "))
    return [[text(c) for c in re.findall(r"<td[^>]*>(.*?)</td>", row)] for row in re.findall(r"<tr>(.*?)</tr>", html)[1:]]


# ---------------------------------------------------------------------------
# The ladder
# ---------------------------------------------------------------------------

def test_each_rung_names_the_one_slot_it_changes_from_the_specs(site):
    rungs = L.ladder_rungs(site, "dapo")
    assert [r.spec_id for r in rungs] == ["grpo", "ladder_no_kl", "ladder_clip_higher", "ladder_token_mean",
                                          "ladder_dynamic_sampling", "dapo"]
    assert [[d.slot for d in r.changed] for r in rungs] == [[], ["kl"], ["clip"], ["aggregation"], ["filter"],
                                                            ["shaping"]]
    table = cells(L.ladder_table_html(site, "dapo", rungs))
    assert table[0][1] == "the starting rung" and table[1][0] == "GRPO \u2212 KL | ladder_no_kl"
    assert table[2][1] == "Clip: symmetric clip (\u03b5 0.2) \u2192 asymmetric clip (clip-higher) (lower \u03b5 0.2, upper \u03b5 0.28)"
    # a slot's change in the registry's words, not its kind ids (seq_mean_token_mean -> token_mean)
    assert table[3][1] == ("Aggregation: mean per response, then over responses \u2192 mean over every token of the "
                           "batch")
    assert table[3][2] == "still training: 3 of 10 rollouts logged" and table[4][2] == "no run"
    assert table[3][3:] == ["–"] * 5  # a run still training has no end evaluation nor final values yet
    # DAPO's run resolved the overlong lengths from its budget (64 tokens in the fixture)
    assert table[5][1].startswith("Reward shaping: no shaping \u2192 overlong penalty (length budget 64 tokens, ")


def test_two_changes_tried_alone_are_each_compared_with_their_shared_base(site):
    rungs = L.ladder_rungs(site, "two_alone")
    # − length norm is one slot from GRPO − KL, two from the row above it
    assert [r.base for r in rungs] == [None, "ladder_no_kl", "ladder_no_kl", "ladder_constant_normalizer"]
    assert [[d.slot for d in r.changed] for r in rungs] == [[], ["advantage"], ["aggregation"], ["advantage"]]
    table = cells(L.ladder_table_html(site, "two_alone", rungs))
    assert table[2][1].startswith("from GRPO \u2212 KL: Aggregation:")


def test_rung_rows_carry_the_paired_change_and_final_metrics_of_every_seed(site):
    table = cells(L.ladder_table_html(site, "dapo", L.ladder_rungs(site, "dapo")))
    grpo_row, no_kl = table[0], table[1]
    assert grpo_row[2] == "3 | seed 0, seed 1, seed 2"
    assert grpo_row[3] == "50.0% (median) | 50.0% · 20.0% · 70.0%"  # median end accuracy, then each seed's
    assert grpo_row[4] == "+30.0 (median) | +30.0 · 0.0 · +50.0; 2 of 3 intervals exclude zero"
    assert grpo_row[5] == "29 (median) | 29 · 29 · 29"  # length/mean = 20 + rollout: 29 in the last tenth
    # GRPO − KL: 2 of 20 gained; clip/frac_high = 0.001 x step: steps 18 and 19 are its last tenth
    assert no_kl[4].startswith("+10.0 [")
    assert no_kl[7] == "1.85% / –"


def test_ladder_figure_has_one_mark_per_run_and_every_rung_on_its_axis(site):
    html = L.ablation_ladder_html(site, "dapo")
    specs = [data for _, data in page_data(html)]
    change = layer_values(specs[0], "point")
    assert sorted((r["rung"], r["seed"]) for r in change) == sorted(
        [("GRPO", "seed 0"), ("GRPO", "seed 1"), ("GRPO", "seed 2"), ("GRPO \u2212 KL", "seed 0"),
         ("+ clip-higher", "seed 0"), ("DAPO", "seed 0")])
    # every rung has a row, in the ladder's order, by a number (a rung's name is never a sort list)
    rows = {r["rung"]: r["order"] for layer in specs[0]["layer"] for r in layer["data"]["values"]}
    # a rung the set has no run of is left out (issue 47 item 1), DAPO then compared with the rung above it
    assert sorted(rows, key=rows.get) == ["GRPO", "GRPO \u2212 KL", "+ clip-higher", "+ token mean", "DAPO"]
    assert specs[0]["layer"][0]["encoding"]["y"]["sort"] == {"field": "order", "op": "min"}
    # lanes centre each rung's runs in its row: GRPO's three seeds in lanes 0, 2, 4, one run in lane 2
    assert sorted(r["lane"] for r in change if r["rung"] == "GRPO") == ["0", "2", "4"]
    assert sorted(r["change"] for r in change if r["rung"] == "GRPO") == [0.0, 30.0, 50.0]  # percentage points
    assert {r["lane"] for r in change if r["rung"] != "GRPO"} == {"2"}
    assert "This set has no run of the rung + dynamic sampling, so the ladder leaves it out." in html
    assert not any(s in html for s in ("UNIPO_RUNS", "Train them", "in this build"))
    shown, absent = L.present_rungs(L.ladder_rungs(site, "dapo"))
    assert [r.spec_id for r in absent] == ["ladder_dynamic_sampling"]
    assert [d.slot for d in shown[-1].changed] == ["filter", "shaping"] and shown[-1].base == "ladder_token_mean"
    assert "Still training, so not shown yet" in html and "ladder_token_mean (still training: 3 of 10" in html
    # rows without a finished run say why inside the figure too
    assert [(r["rung"], r["note"]) for r in layer_values(specs[0], "text")] == [
        ("+ token mean", "still training")]
    assert "One run (one seed) only: GRPO \u2212 KL, + clip-higher, DAPO" in html


def test_an_unknown_ladder_is_an_authors_error(site):
    with pytest.raises(AuthorError, match="no ladder 'gspo'"):
        L.ablation_ladder_html(site, "gspo")


# ---------------------------------------------------------------------------
# Batch filling
# ---------------------------------------------------------------------------

def test_a_batch_is_full_when_the_kept_responses_fill_it(site):
    fill = SM.batch_fill(site.run("dapo"))
    # 10 rollouts; rollout 7 made no update; rollout 4 generated 120 / 10 = 12 responses, kept 12 / 2 = 6 of 8
    assert (fill.rollouts, fill.logged, fill.full, fill.full_frac) == (10, 9, 8, 0.8)
    assert fill.cap == 10 and fill.at_cap == 0
    # rounds r % 3 + 1 over rollouts 0-6, 8, 9: 1 2 3 1 2 3 1 3 1
    assert fill.rounds_mean == pytest.approx(17 / 9) and fill.rounds_max == 3
    assert fill.generated_per_kept == (2.0, 1.5)  # first and last logged rollout (a tenth of 9 is 1)
    assert SM.sampling_fact_text(site.run("dapo"), "dapo", "full_frac") == "80.0%"
    assert SM.sampling_fact_text(site.run("grpo"), "grpo", "full_frac") == "(the grpo run has no sampling filter)"


def test_without_sampled_metrics_fewer_rounds_than_the_cap_means_full(tmp_path):
    spec = FixtureRun(run_id="dapo", algorithm="dapo", seed=0, rollouts=4,
                      metrics=lambda r: {"sampling/rounds": 10.0 if r == 2 else 2.0})
    site = Site(runs_where=write_fixture_runs(tmp_path, [spec]))
    fill = SM.batch_fill(site.run("dapo"))
    assert (fill.full, fill.at_cap) == (3, 1)


def test_batch_filling_shows_filtering_runs_only_with_kept_and_all_sampled(site):
    html = SM.batch_filling_html(site, ["grpo", "dapo"])
    specs = [data for _, data in page_data(html)]
    assert len(specs) == 3
    assert specs[1]["layer"][1]["data"]["values"] == [{"cap": 10}]  # the cap drawn on the rounds panel
    kinds = {r["kind"] for r in layer_values(specs[2], "line")}
    assert kinds == {"kept", "all sampled"}
    row = cells(html)[0]
    assert row[1] == "8 of 10 (80.0%)"
    assert row[4] == "50.0% / 37.5%"
    assert "GRPO" not in row[0]
