"""What differs between run sets besides scale (site/pages/learning/set_differences.py): hand-made runs, one of
them stopped by a time limit, with hand-worked held-out gains at matched update counts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers_runlog import write_metric_run
from site_build import MacroEnv, bound_macros
from unipo_build.core.schema import EvalRecord
from unipo_build.site.pages.learning import set_differences as SD
from unipo_build.site.context import Site

N = 20  # problems per evaluation


def record(phase: str, step: int, right: int) -> EvalRecord:
    """An evaluation of N problems whose first ``right`` are answered right (greedy and sampled)."""
    bits = "1" * right + "0" * (N - right)
    return EvalRecord(step=step, phase=phase, n=N, accuracy_greedy=right / N, accuracy_sampled=right / N,
                      problems=f"eval rows 1-{N}", correct_greedy=bits, correct_sampled=bits)


def cut_short(run: Path, asked: int) -> None:
    """Make a run's header say that a time limit stopped it before the rollouts it asked for."""
    header = json.loads((run / "header.json").read_text())
    header["hyperparameters"]["steps_asked"] = asked
    header["notes"] = f"Stopped after fewer than the {asked} rollouts asked for: --time-limit."
    (run / "header.json").write_text(json.dumps(header))


@pytest.fixture
def runs(tmp_path) -> Path:
    # GRPO: 40 rollouts x 2 updates = 80; evaluated after 40 updates (12 of 20 right) and at the end (16)
    write_metric_run(tmp_path / "grpo", "grpo", rollouts=40,
                     evals=[record("start", 0, 5), record("periodic", 40, 12), record("end", 0, 16)])
    # PPO asked for 40 rollouts and trained 30 (60 updates): after 40 updates 6 right, at its end 7
    ppo = write_metric_run(tmp_path / "ppo", "ppo", rollouts=30,
                           evals=[record("start", 0, 5), record("periodic", 40, 6), record("end", 0, 7)])
    cut_short(ppo, 40)
    return tmp_path


def test_a_run_stopped_by_a_time_limit_is_counted_and_named(runs):
    site = Site(MacroEnv()).with_runs(runs)
    setups = SD.core_setups(site)
    ppo, grpo = setups["ppo"][0], setups["grpo"][0]
    assert (ppo.rollouts, ppo.asked, ppo.updates, ppo.cut_short) == (30, 40, 60, True)
    assert (grpo.rollouts, grpo.asked, grpo.updates, grpo.cut_short) == (40, 40, 80, False)
    # 5 -> 16 of 20: +55 points; 5 -> 7: +10
    assert grpo.gain.change == pytest.approx(0.55) and ppo.gain.change == pytest.approx(0.10)
    # the last two evaluations: 12 -> 16 (4 of 20 gained, none lost) and 6 -> 7
    assert grpo.rising.change == pytest.approx(0.20) and ppo.rising.change == pytest.approx(0.05)
    note = bound_macros(runs)["cut_short_note"]()
    assert note.startswith("Not every run trained all the rollouts it asked for: ppo (30 of 40 rollouts, 60 updates) "
                           "stopped early, by a time limit")
    assert "compare them at equal updates or rollouts, not at equal fractions" in note


def test_gains_are_compared_at_matched_updates(runs):
    site = Site(MacroEnv()).with_runs(runs)
    setups = SD.core_setups(site)
    # only after 40 updates were both evaluated (GRPO's 80 and PPO's 60 are each alone)
    assert SD.matched_steps(setups) == [40]
    gap = SD.matched_gap(site, setups)
    assert gap.updates == 40 and gap.group == {"grpo": [pytest.approx(0.35)]}
    # one run of each kind: however far apart, one run against one is never clear (core.judge)
    assert gap.other == {"ppo": [pytest.approx(0.05)]} and gap.ahead == 0
    words = SD.matched_words(site, "A set", gap)
    assert words == ("After the same 40 updates in the A set, the group methods had gained GRPO +35.0 held-out points "
                     "and the others PPO +5.0: at equal updates the two kinds are not clearly apart; the difference of "
                     "the means, +30.0 points, is not separable with one seed (the test cannot reach p \u2264 0.05 "
                     "with one seed each).")
    # GRPO's +55 against PPO's +10 at the end: PPO gained 18% of what the group methods gained
    assert SD.relative_gains_words(site, "A set", setups) == (
        "In the A set, measured against the group methods' mean held-out gain (+55.0 points), PPO 18% of it.")


def test_a_lead_at_matched_updates_is_judged_across_the_runs(tmp_path):
    """Five group-method runs (GRPO, gains +35..+55 after 80 updates) against three others (PPO, +5..+15): every
    group run ahead, five runs against three, p = 1/C(8, 3) = 1/56: clear, with the difference and its interval."""
    for seed, end in enumerate((12, 13, 14, 15, 16)):
        write_metric_run(tmp_path / f"grpo-s{seed}", "grpo", seed=seed, rollouts=40,
                         evals=[record("start", 0, 5), record("end", 0, end)])
    for seed, end in enumerate((6, 7, 8)):
        write_metric_run(tmp_path / f"ppo-s{seed}", "ppo", seed=seed, rollouts=40,
                         evals=[record("start", 0, 5), record("end", 0, end)])
    site = Site(MacroEnv()).with_runs(tmp_path)
    gap = SD.matched_gap(site, SD.core_setups(site))
    assert gap.updates == 80 and gap.ahead == 1 and gap.judgement.p == pytest.approx(1 / 56)
    words = SD.matched_words(site, "A set", gap)
    # means +45 and +10: +35 points
    assert words.startswith("After the same 80 updates in the A set, the group methods had gained GRPO +35.0 to +55.0 "
                            "held-out points and the others PPO +5.0 to +15.0: the group methods were ahead at equal "
                            "updates, so the number of updates alone does not explain the difference; the difference of "
                            "the means, +35.0 points (95% interval +"), words
    assert words.endswith("points), is clear (five seeds against three, two-sided permutation p = 0.018).")


def test_a_run_within_a_tenth_of_the_matched_count_stands_beside_it(tmp_path):
    """A run cut after 38 updates is read beside runs evaluated after 40; one cut after 35 is not."""
    write_metric_run(tmp_path / "grpo", "grpo", rollouts=20, evals=[record("start", 0, 5), record("end", 0, 12)])
    write_metric_run(tmp_path / "ppo", "ppo", rollouts=19, evals=[record("start", 0, 5), record("end", 0, 6)])
    setups = SD.core_setups(Site(MacroEnv()).with_runs(tmp_path))
    assert SD.matched_steps(setups) == [40]
    assert SD.evaluation_at(setups["ppo"][0].run, 40).step == 38
    assert SD.evaluation_at(setups["ppo"][0].run, 42) is None or SD.evaluation_at(setups["ppo"][0].run, 42).step == 38
    assert SD.evaluation_at(setups["ppo"][0].run, 43) is None


def test_a_set_without_core_runs_says_so(tmp_path):
    (tmp_path / "empty").mkdir()
    site = Site(MacroEnv()).with_runs(tmp_path / "empty")
    assert SD.core_setups(site) == {}
    html = SD.set_differences_html(site, [("Empty set", site)])
    assert html.startswith("<div") and "Empty set: no run of the course&#x27;s core algorithms." in html
    assert bound_macros(tmp_path / "empty")["cut_short_note"]() == (
        "Every core run of this build trained all the rollouts it asked for.")
