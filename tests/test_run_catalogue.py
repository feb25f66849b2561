"""The one run catalogue (unipo_build.core.runs.RunCatalog): runs by name, algorithm and seed.

Every page that finds runs by name, algorithm or seed asks it (issue 31: five name-to-runs helpers
were one); these tests hold it to what those helpers did.
"""

from __future__ import annotations

import pytest

from seed_fixtures import FixtureRun, write_fixture_runs
from unipo_build.core import runs
from unipo_build.site.context import Site


@pytest.fixture(scope="module")
def cat(tmp_path_factory):
    root = tmp_path_factory.mktemp("catalogue")
    # found in directory order grpo-s2, grpo, grpo-s1, ppo-a: seed order is not the order found
    write_fixture_runs(root, [
        FixtureRun(run_id="grpo-s2", algorithm="grpo", seed=2, rollouts=3),
        FixtureRun(run_id="grpo", algorithm="grpo", seed=0, rollouts=3),
        FixtureRun(run_id="grpo-s1", algorithm="grpo", seed=1, rollouts=3),
        FixtureRun(run_id="ppo-a", algorithm="ppo", seed=5, rollouts=3),
        # asynchronous GRPO (sampled 8 rollouts stale) at seeds 0 and 1: its own band, never GRPO's seeds
        FixtureRun(run_id="async8_grpo", algorithm="grpo", seed=0, rollouts=3, sampler_lag=8),
        FixtureRun(run_id="async8_grpo-s1", algorithm="grpo", seed=1, rollouts=3, sampler_lag=8),
    ])
    (root / "broken").mkdir()
    (root / "broken" / "header.json").write_text("{", encoding="utf-8")
    return runs.catalog_of(root)


def test_seeds_of_orders_an_algorithms_runs_by_seed(cat):
    assert [r.id for r in cat.of_algorithm("grpo")] == ["grpo", "grpo-s1", "grpo-s2"]  # sorted directories
    assert [r.id for r in cat.seeds_of("grpo")] == ["grpo", "grpo-s1", "grpo-s2"]
    assert [r.header.seed for r in cat.seeds_of("grpo")] == [0, 1, 2]
    assert cat.seeds_of("dapo") == []


def test_asynchronous_runs_are_their_own_variant_not_seeds_of_the_synchronous_algorithm(cat):
    assert runs.split_variant("grpo@lag8") == ("grpo", 8) and runs.split_variant("grpo") == ("grpo", 0)
    assert runs.split_variant("grpo@lagx") == ("grpo@lagx", 0)
    assert [r.variant for r in cat.seeds_of("grpo")] == ["grpo"] * 3
    assert [r.id for r in cat.seeds_of("grpo@lag8")] == ["async8_grpo", "async8_grpo-s1"]
    assert cat.chosen("grpo").id == "grpo" and cat.chosen("grpo@lag8").id == "async8_grpo"
    run, seeds = cat.with_seeds("async8_grpo-s1")
    assert run.id == "async8_grpo-s1" and [r.id for r in seeds] == ["async8_grpo", "async8_grpo-s1"]
    assert "grpo@lag8" in cat.algorithms
    assert {r.id for r in cat.chosen_each()} >= {"grpo", "async8_grpo"}
    assert "async8_grpo" not in {r.id for r in cat.chosen_each(skip={"grpo@lag8"})}
    site = Site(runs_where=cat)
    assert site.algorithm_name("grpo@lag8") == "GRPO, sampler 8 rollouts stale"
    assert site.run_label(run) == "GRPO, sampler 8 rollouts stale (async8_grpo-s1)"


def test_seed_order_puts_runs_without_a_seed_last(cat):
    a, b, c = cat.seeds_of("grpo")
    unseeded = runs.Run(id="aaa", path=a.path, header=a.header.model_copy(update={"seed": None}))
    assert sorted([unseeded, c, a, b], key=runs.seed_order) == [a, b, c, unseeded]


def test_by_id_is_exact_and_never_an_algorithms_choice(cat):
    assert cat.by_id("grpo-s1").id == "grpo-s1"
    assert cat.by_id("ppo") is None  # an algorithm id is not a run id
    assert cat.by_id("broken") is None  # not loaded
    assert cat.get("broken") is not None and not cat.get("broken").ok


def test_named_is_every_seed_of_an_algorithm_or_the_one_run_of_an_id(cat):
    assert [r.id for r in cat.named("grpo")] == ["grpo", "grpo-s1", "grpo-s2"]
    assert [r.id for r in cat.named("grpo-s2")] == ["grpo-s2"]
    assert [r.id for r in cat.named("ppo")] == ["ppo-a"]
    assert cat.named("broken") == [] and cat.named("nothing") == []


def test_with_seeds_gives_the_run_and_its_algorithms_seeds(cat):
    run, seeds = cat.with_seeds("grpo-s1")
    assert run.id == "grpo-s1" and [r.id for r in seeds] == ["grpo", "grpo-s1", "grpo-s2"]
    run, seeds = cat.with_seeds("grpo")
    assert run.id == "grpo"  # no token detail anywhere: the lowest seed is chosen
    assert cat.with_seeds("broken") == (None, [])


def test_chosen_each_gives_one_run_per_algorithm_in_the_order_found(cat):
    assert [r.id for r in cat.chosen_each()] == ["async8_grpo", "grpo", "ppo-a"]  # a variant is its own
    assert [r.id for r in cat.chosen_each(skip={"grpo"})] == ["ppo-a"]


def test_the_site_asks_the_catalogue(cat):
    site = Site(runs_where=cat)
    assert site.run("grpo-s2") is cat.by_id("grpo-s2")
    assert site.run("broken") is None and site.run("nothing") is None
