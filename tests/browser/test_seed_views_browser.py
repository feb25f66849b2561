"""The seed bands, the ablation ladder, the batch-filling figure and the held-out tables in Chromium,
on a site built from small fixture runs with several seeds: every chart draws, light and dark,
without console errors, and at 390 px wide nothing overflows the page."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

import browser_harness as H  # noqa: E402
from seed_fixtures import SUITE, FixtureRun, write_fixture_runs  # noqa: E402

PAGES = {
    "bands.md": '# Bands\n\n{{ seed_bands() }}\n\n{{ seed_bands(["heldout/greedy", "sampled/accuracy"], x="tokens") }}\n\n'
                "{{ eval_compare() }}\n",
    "ladder.md": '# Ladder\n\n{{ ablation_ladder("dapo") }}\n\n{{ ablation_ladder("two_alone") }}\n',
    "filling.md": "# Filling\n\n{{ batch_filling() }}\n\n{{ task_styles() }}\n\n{{ run_card(\"dapo\") }}\n",
    "index.md": "# Runs\n",
}
START = "1100" * 5


def fixture_runs(root: Path) -> Path:
    runs = []
    for algorithm in ("grpo", "dapo", "dr_grpo"):
        for seed in range(3):
            runs.append(FixtureRun(
                run_id=algorithm if seed == 0 else f"{algorithm}-s{seed}", algorithm=algorithm, seed=seed,
                rollouts=30, start_bits=START, end_bits="1110" * 5, periodic_bits="1110111000",
                sampled_start=START, sampled_end=START,
                metrics=lambda r, s=seed, a=algorithm: {
                    "reward/mean": 0.3 + 0.01 * r + 0.02 * s, "length/mean": 20.0 + 0.5 * r - s,
                    "accuracy/train": 0.5, "sampled/accuracy": 0.3 + 0.01 * r, "sampled/length": 20.0,
                    "sampled/tokens": 320.0 if a == "dapo" else 160.0,
                    "sampling/generated_per_kept": 2.0 if a == "dapo" else 1.0, "sampling/rounds": 2.0},
                update_metrics=lambda step, s=seed: {"entropy/mean": 1.0 - 0.01 * step - 0.05 * s}))
    runs.append(FixtureRun(run_id="ladder_no_kl", algorithm="ladder_no_kl", seed=0, start_bits=START,
                           end_bits="1111" * 5))
    return write_fixture_runs(root, runs)


@pytest.fixture(scope="module")
def seeds_site(tmp_path_factory):
    root = tmp_path_factory.mktemp("seeds-site")
    (root / "data").mkdir()
    (root / "data" / "suite.yaml").write_text(SUITE, encoding="utf-8")  # the ladders are read from the project
    (root / "data" / "tasks").symlink_to(H.REPO / "data" / "tasks")  # and so is the task example
    site = H.build_test_site(root, PAGES, fixture_runs(root / "runs"))
    with H.serving(site, prefix="/") as url:
        yield url


@pytest.mark.parametrize("page", ["bands/", "ladder/", "filling/"])
def test_every_chart_draws_in_both_schemes_without_errors(seeds_site, driver, console_errors, page):
    H.set_width(driver, 1280)
    driver.get(seeds_site + page)
    H.wait_rendered(driver)
    for scheme in ("slate", "default"):
        # the test config has no palette toggle: set the scheme as the toggle would (charts redraw on it)
        driver.execute_script("document.body.setAttribute('data-md-color-scheme', arguments[0])", scheme)
        H.wait_rendered(driver)
        states = driver.execute_script(
            "return [...document.querySelectorAll('.unipo-vega')].map(e => e.getAttribute('data-unipo-rendered'))")
        assert states and all(s == scheme for s in states), states
    assert console_errors(driver) == []


def test_bands_are_drawn_around_the_median_lines(seeds_site, driver, console_errors):
    driver.get(seeds_site + "bands/")
    H.wait_rendered(driver)
    # four panels per update, two per generated token; each has one band (area) per algorithm with seeds
    areas = driver.execute_script("return document.querySelectorAll('.unipo-seed-bands .mark-area path').length")
    lines = driver.execute_script("return document.querySelectorAll('.unipo-seed-bands .mark-line path').length")
    assert areas == 3 * 6 and lines == 3 * 6
    assert console_errors(driver) == []


@pytest.mark.parametrize("page", ["bands/", "ladder/", "filling/"])
def test_narrow_screen_has_no_horizontal_overflow(seeds_site, driver, page):
    H.set_width(driver, 390)
    driver.get(seeds_site + page)
    H.wait_rendered(driver)
    overflow = driver.execute_script("return document.documentElement.scrollWidth - document.documentElement.clientWidth")
    assert overflow <= 0
    widths = driver.execute_script(
        "return [...document.querySelectorAll('.unipo-vega svg')].map(s => s.getBoundingClientRect().width)")
    assert widths and all(w <= 390 for w in widths), widths
