"""The chapter "When the sampler and the learner disagree" (unipo_build/site/pages/dynamics/sampler.py)
on hand-made runs whose numbers can be worked out by hand, and the real chapter as built.

The fixture (``seed_fixtures``, 20 held-out problems, 4 right at the start), five seeds of each variant the
verdicts need clear (core.judge: five against five reaches p = 2/252):

- synchronous GRPO, ending with 14, 15, 16, 15 and 16 right: gains of +50, +55, +60, +55, +60 points;
- GRPO sampled 8 rollouts stale (``grpo@lag8``), ending with 8, 9, 10, 9, 8 right: +20, +25, +30, +25, +20,
  every seed below every synchronous seed (a cost, clear at five seeds);
- truncated IS at lag 8, ending like synchronous GRPO: it recovers the cost;
- masked IS at lag 8, ending with 9, 10, 9, 10, 9 right: inside the uncorrected range, below every
  synchronous seed: it does not recover the cost;
- GRPO at lag 2, three seeds ending with 13, 15, 17 right: overlapping synchronous GRPO, so no
  clear cost; lag 16, five seeds ending with 9 right; lag 32, five seeds ending with 6 right; lag 64, one
  seed ending with 5 right (one seed: never clear, however far).

The mismatch (``mismatch/logp_abs_mean`` on every update): 0 at lag 2 (no mismatch), 0.02 + a small
wobble at lag 8, 0.01 at lag 16 (smaller than lag 8's: no steady growth), 0.06 at lag 32 and 0.08 at lag 64.
"""

from __future__ import annotations

import html as html_lib
import math
import re
from itertools import cycle

import pytest

import seed_fixtures
from seed_fixtures import FixtureRun, N_EVAL, seed_runs, write_fixture_runs
from helpers_runlog import make_detail
from unipo_build.site.context import Site
from unipo_build.site.pages.dynamics import sampler as SM
from unipo_build.site.pages.dynamics import sampler_facts as SF

START = "1111" + "0" * (N_EVAL - 4)


def ends(k: int) -> str:
    """k problems right at the end: the first k."""
    return "1" * k + "0" * (N_EVAL - k)


WOBBLE = (0.0, 0.001, 0.002)


def mismatch(level: float):
    return lambda step: {"mismatch/logp_abs_mean": (level + WOBBLE[step % 3]) if level else 0.0,
                         "mismatch/logp_abs_max": 10 * level}


def run(run_id: str, algorithm: str, seed: int, end: int, lag: int = 0, level: float = 0.0,
        detail_steps: tuple[int, ...] = ()) -> FixtureRun:
    return FixtureRun(run_id=run_id, algorithm=algorithm, seed=seed, sampler_lag=lag,
                      update_metrics=mismatch(level) if lag else (lambda s: {}),
                      start_bits=START, end_bits=ends(end), sampled_start=START, sampled_end=ends(end),
                      detail_steps=detail_steps)


#: Per-token gaps log pi_old - log pi_sampler, cycled along each response of step 4's token file:
#: ratio 1, e (above 2), e^-0.75 = 0.47 (below 0.5; the third token's old log-prob is -0.75, so the
#: sampler's stays at most 0), e^0.1. Responses of 3, 4, 2 and 5 tokens (make_detail)
#: give 14 tokens: 4 above the cap 2, 3 below 0.5.
GAPS = (0.0, 1.0, -0.75, 0.1)
DETAIL_STEP = 4


def detail_with_sampler(step: int, *, rollout: int | None = None):
    """make_detail's step with a sampler log-prob on every token (all equal to old_logp at step 0)."""
    detail = make_detail(step, rollout=rollout)
    gaps = GAPS if step == DETAIL_STEP else (0.0,)
    prompts = []
    for prompt in detail.prompts:
        responses = []
        for response in prompt.responses:
            t = response.tokens
            sample = [o - g for o, g in zip(t.old_logp, cycle(gaps))]
            responses.append(response.model_copy(update={"tokens": t.model_copy(update={"sample_logp": sample})}))
        prompts.append(prompt.model_copy(update={"responses": responses}))
    return detail.model_copy(update={"prompts": prompts})


#: The right answers at the end of each seed's run, by variant (see the module's docstring).
ENDS = {"sync": (14, 15, 16, 15, 16), "lag8": (8, 9, 10, 9, 8), "tis": (14, 15, 16, 15, 16), "mis": (9, 10, 9, 10, 9),
        "lag2": (13, 15, 17), "lag16": (9,) * 5, "lag32": (6,) * 5, "lag64": (5,)}


@pytest.fixture(scope="module")
def runs_dir(tmp_path_factory):
    detail = lambda seed: (0, DETAIL_STEP) if seed == 0 else ()  # noqa: E731
    specs = (seed_runs("grpo", ENDS["sync"], lambda i, seed, end: run(i, "grpo", seed, end))
             + seed_runs("grpo", ENDS["lag8"], lambda i, seed, end: run(i, "grpo", seed, end, lag=8, level=0.02),
                         prefix="async8_")
             + seed_runs("tis", ENDS["tis"], lambda i, seed, end: run(i, "grpo_tis", seed, end, lag=8, level=0.02,
                                                                      detail_steps=detail(seed)), prefix="async8_")
             + seed_runs("mis", ENDS["mis"], lambda i, seed, end: run(i, "grpo_mis", seed, end, lag=8, level=0.02,
                                                                      detail_steps=detail(seed)), prefix="async8_"))
    for lag, level in ((2, 0.0), (16, 0.01), (32, 0.06), (64, 0.08)):
        specs += seed_runs("grpo", ENDS[f"lag{lag}"],
                           lambda i, seed, end, lag=lag, level=level: run(i, "grpo", seed, end, lag=lag, level=level),
                           prefix=f"async{lag}_")
    root = tmp_path_factory.mktemp("sampler-runs")
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(seed_fixtures, "make_detail", detail_with_sampler)
        return write_fixture_runs(root, specs)


@pytest.fixture(scope="module")
def site(runs_dir):
    return Site(runs_where=runs_dir)


# ---------------------------------------------------------------------------
# The mismatch
# ---------------------------------------------------------------------------

def test_mismatch_words_give_each_lag_its_mean_and_name_the_lag_without_one(site):
    text = SM.mismatch_words_text(site, ("grpo@lag2", "grpo@lag8", "grpo@lag32"))
    # lag 8: five seeds, each the mean of 0.02 + (0, .001, .002) over 20 updates
    assert "0 nats (three seeds: 0 to 0) at a lag of 2 rollouts" in text
    assert "at a lag of 8 rollouts" in text and "0.021 nats (five seeds" in text
    assert "0.061 nats (five seeds: 0.061 to 0.061) at a lag of 32 rollouts" in text
    assert "At a lag of 2 rollouts no mismatch is visible" in text
    # growth is judged among the lags that have a mismatch: 8 -> 32, five seeds each, every one above: clear
    assert "The gap grows with the lag, every step clear" in text
    wobble = sum(WOBBLE[s % 3] for s in range(20)) / 20  # each run's 20 updates
    ratio = (0.06 + wobble) / (0.02 + wobble)
    assert f"it is {SM.fmt_num(ratio, 2)} times what it is at 8" in text
    assert ("(from 8 to 32 rollouts, the difference, +0.04 nats (95% interval +0.04 to +0.04 nats), is clear (five "
            "seeds each, two-sided permutation p = 0.008))") in text


def test_mismatch_words_say_when_the_gap_does_not_grow(site):
    text = SM.mismatch_words_text(site, ("grpo@lag8", "grpo@lag16"))
    assert "no mismatch is visible" not in text
    assert ("The gap does not grow steadily with the lag here: from 8 to 16 rollouts it shrinks: the difference, "
            "\u22120.01 nats") in text and "is clear (five seeds each" in text
    assert "grows with the lag," not in text


def test_mismatch_growth_against_one_seed_is_never_clear(site):
    """Lag 64 has one run: 0.08 against lag 32's 0.06 is a larger gap than any other step, and still no finding."""
    text = SM.mismatch_words_text(site, ("grpo@lag32", "grpo@lag64"))
    assert ("Whether the gap grows with the lag is not clear from these runs: from 32 to 64 rollouts, the difference, "
            "+0.02 nats, is not separable with one seed (the test cannot reach p \u2264 0.05 with one seed against "
            "five).") in text
    assert "grows with the lag," not in text and "shrinks" not in text


def test_mismatch_present_needs_a_gap_above_the_float32_agreement(site):
    assert not SM.mismatch_present(SM.mismatch_side(site, "grpo@lag2"))
    assert SM.mismatch_present(SM.mismatch_side(site, "grpo@lag8"))


def test_mismatch_of_a_variant_without_runs_is_one_line_naming_it(site):
    text = SM.mismatch_words_text(site, ("grpo@lag4", "grpo@lag8"))
    assert text == ("This build has no finished run of GRPO, sampler 4 rollouts stale (variant grpo@lag4), so its "
                    "mismatch cannot be measured.")
    html = SM.mismatch_figure_html(site, ("grpo@lag4", "grpo@lag8"))
    assert "grpo@lag4" in html and "8 rollouts stale (5 runs)" in html


def test_mismatch_figure_draws_one_band_per_lag_darker_when_staler(site):
    html = SM.mismatch_figure_html(site, ("grpo@lag32", "grpo@lag2", "grpo@lag8"))
    labels = re.findall(r"(\d+) rollouts stale \((\d) runs?\)", html_lib.unescape(html))
    assert labels[:3] == [("2", "3"), ("8", "5"), ("32", "5")]
    assert SM.lag_colour("grpo@lag2", SM.LAGS) == SM.LAG_COLOURS[0]
    assert SM.lag_colour("grpo@lag32", SM.LAGS) == SM.LAG_COLOURS[-1]


# ---------------------------------------------------------------------------
# The cost and the corrections
# ---------------------------------------------------------------------------

def test_gains_are_the_paired_changes_of_each_seed(site):
    side = SM.gain_side(site, "grpo@lag8", "greedy")
    assert [round(v.value, 6) for v in side.values] == [0.2, 0.25, 0.3, 0.25, 0.2]
    assert side.name == "GRPO sampled 8 rollouts stale"
    assert SM.gain_side(site, "grpo_tis@lag8", "greedy").name == "GRPO-TIS"
    assert SM.gain_side(site, "grpo", "greedy").name == "synchronous GRPO"


def test_cost_words_when_the_stale_runs_fall_below_every_synchronous_seed(site):
    text = SM.cost_words_text(site, "greedy")
    assert text.startswith("Sampling from a policy 8 rollouts stale cost greedy accuracy: Synchronous GRPO gained "
                           "+50.0 to +60.0 points over five seeds of greedy held-out accuracy, GRPO sampled 8 rollouts "
                           "stale +20.0 to +30.0 points over five seeds; the difference, \u221232.0 points (95% interval ")
    assert "is clear (five seeds each, two-sided permutation p = 0.008)." in text
    # each seed's two runs, problem by problem: seed 0 ends 8 against 14 right, the same problems: -30 points
    assert "Paired problem by problem, each seed's stale run ended \u221230.0 (" in text
    assert "points from the synchronous run of the same seed, in greedy accuracy (95% intervals)" in text


def test_three_stale_seeds_below_three_are_only_suggestive(tmp_path):
    """The old rule called three seeds below three a cost; the procedure calls it suggestive and states no cost."""
    specs = (seed_runs("grpo", (14, 15, 16), lambda i, seed, end: run(i, "grpo", seed, end))
             + seed_runs("grpo", (8, 9, 10), lambda i, seed, end: run(i, "grpo", seed, end, lag=8, level=0.02),
                         prefix="async8_"))
    three = Site(runs_where=write_fixture_runs(tmp_path / "runs", specs))
    text = SM.cost_words_text(three, "greedy")
    assert text.startswith("A cost of the stale sampler in greedy accuracy is not clear here: ")
    assert "; the difference, \u221230.0 points, is suggestive (three seeds each, two-sided permutation p = 0.10)." in text
    assert "cost greedy accuracy:" not in text


def test_cost_words_when_the_cost_is_within_the_noise(site):
    text = SM.cost_words_text(site, "sampled", stale="grpo@lag2")
    assert text.startswith("A cost of the stale sampler in sampled accuracy is not clear here: ")
    # lag 2: +45, +55, +65 (mean +55) against +50..+60 (mean +56): three seeds against five could be clear; these overlap
    assert "+45.0 to +65.0 points over three seeds" in text
    assert "; the difference, \u22121.0 points (95% interval " in text
    assert "is not separated (three seeds against five, two-sided permutation p = " in text


def test_a_correction_that_recovers_the_cost(site):
    text = SM.correction_words_text(site, "grpo_tis@lag8", "greedy")
    assert text.startswith("With the sampler 8 rollouts stale, GRPO-TIS recovers the stale sampler's cost in greedy "
                           "accuracy: its runs gained +50.0 to +60.0 points over five seeds")
    assert "; against no correction the difference, +32.0 points (95% interval" in text
    # TIS ends exactly as synchronous GRPO: every split is as far from zero, p = 1
    assert "against the synchronous runs the difference, 0.0 points (95% interval" in text
    assert "is not separated (five seeds each, two-sided permutation p = 1.00)" in text
    assert "each seed's GRPO-TIS run ended +30.0 (" in text and "from the uncorrected run of the same seed" in text


def test_a_correction_that_does_not_recover_the_cost(site):
    text = SM.correction_words_text(site, "grpo_mis@lag8", "greedy")
    assert text.startswith("With the sampler 8 rollouts stale, GRPO-MIS does not clearly recover the stale sampler's "
                           "cost in greedy accuracy: its runs gained +25.0 to +30.0 points over five seeds")
    assert "It stays below synchronous GRPO: against the synchronous runs the difference, \u221229.0 points" in text
    assert "is clear (five seeds each, two-sided permutation p = 0.008); against no correction the difference, +3.0" in text


def test_a_correction_with_no_cost_to_recover(site):
    text = SM.correction_words_text(site, "grpo_mis@lag8", "greedy", stale="grpo@lag2")
    # MIS (+25..+30) is below lag 2's runs (+45..+65), five seeds against three: worse than no correction there
    assert text.startswith("With the sampler 8 rollouts stale, GRPO-MIS did worse than no correction in greedy accuracy")
    # every MIS seed below every lag-2 seed: the extreme split of five against three stands alone, p = 1/56
    assert "is clear (five seeds against three, two-sided permutation p = 0.018)" in text


def test_lag_words_name_the_lags_with_a_clear_cost(site):
    text = SM.lag_words_text(site, "greedy", lags=("grpo@lag2", "grpo@lag8", "grpo@lag32", "grpo@lag64"))
    assert text.startswith("With no correction, the greedy held-out gain was +45.0 to +65.0 points over three seeds at "
                           "a lag of 2, +20.0 to +30.0 points over five seeds at a lag of 8, +10.0 to +10.0 points over "
                           "five seeds at a lag of 32 and +5.0 points (one seed) at a lag of 64, against +50.0 to +60.0 "
                           "points over five seeds for synchronous GRPO.")
    assert "Against synchronous GRPO, the difference was \u22121.0 points at 2 (not separated, p = 1.00)" in text
    assert ("\u221232.0 points at 8 (clear, p = 0.008), \u221246.0 points at 32 (clear, p = 0.008) and \u221251.0 "
            "points at 64 (not separable with one seed): the cost is clear at lags of 8 and 32 rollouts.") in text
    # the means fall at every step, but the step to lag 64 rests on one seed: not a finding
    assert text.endswith("The mean gain falls at every step of the lag, but one of the three steps is not clear, so the "
                         "order is a hint, not a finding.")
    clear = SM.lag_words_text(site, "greedy", lags=("grpo@lag2", "grpo@lag8", "grpo@lag32"))
    assert clear.endswith("The gain falls at every step of the lag, each step clear.")


def test_cost_modes_compare_the_two_decodings(site):
    text = SM.cost_modes_text(site)
    assert text.startswith("On average over the seeds, the stale runs' gain was 32.0 points smaller than the "
                           "synchronous runs' in sampled accuracy and 32.0 points smaller in greedy accuracy.")
    # every run gains as much sampled as greedy: the difference of the costs is 0, p = 1
    assert ("Whether the cost is larger in sampled accuracy is not clear from these runs: the sampled cost minus the "
            "greedy cost, 0.0 points") in text
    assert "is not separated (five seeds each, two-sided permutation p = 1.00)" in text
    assert "One would predict it larger there" in text


@pytest.mark.parametrize("words", [
    lambda s: SM.cost_words_text(s, "greedy", stale="grpo_dapo@lag8"),
    lambda s: SM.correction_words_text(s, "grpo_cispo@lag8", "sampled"),
    lambda s: SM.lag_words_text(s, "greedy", sync="reinforce"),
])
def test_a_variant_without_runs_is_one_line_naming_it(site, words):
    text = words(site)
    assert re.fullmatch(r"This build has no finished run of [^.]+ \(variant [\w@]+\), so its \w+ held-out gain "
                        r"cannot be measured\.", text), text


def test_gains_figure_has_a_dot_per_run_and_a_row_per_variant(site):
    html = SM.gains_figure_html(site, ["grpo", "grpo@lag8", "grpo_tis@lag8", "grpo@lag99"])
    text = html_lib.unescape(html)
    assert "GRPO, synchronous" in text and "GRPO-TIS, 8 rollouts stale" in text
    assert len(re.findall(r'"r": ?"async8_tis', text)) == 2 * 5  # five runs, greedy and sampled panels
    assert "+50.0 · +55.0 · +60.0 · +55.0 · +60.0" in text
    assert "variant grpo@lag99" in text  # the missing variant's one line


def test_runs_setup_counts_the_seeds_from_the_catalogue(site):
    text = SM.runs_setup_text(site)
    assert text.startswith("The runs of this chapter: synchronous GRPO (five seeds), GRPO sampled 8 rollouts stale "
                           "(16 updates stale; five seeds), GRPO-TIS sampled 8 rollouts stale (five seeds)")
    assert "GRPO sampled 2 rollouts stale (three seeds) and GRPO sampled 32 rollouts stale (five seeds)" in text
    assert "Every run trains 10 rollouts of 2 updates" in text


# ---------------------------------------------------------------------------
# What a correction did to one update's tokens
# ---------------------------------------------------------------------------

def test_the_busiest_step_is_the_one_whose_tokens_leave_the_bounds(site):
    assert SM.detail_step(site.run("async8_mis")) == DETAIL_STEP
    counts = SF.token_counts(site.run("async8_mis"), DETAIL_STEP)
    assert (counts.tokens, counts.above, counts.below) == (14, 4, 3)
    assert counts.high == pytest.approx(math.e) and counts.low == pytest.approx(math.exp(-0.75))
    quiet = SF.token_counts(site.run("async8_mis"), 0)
    assert (quiet.above, quiet.below) == (0, 0)


def test_token_words_for_masking_and_truncation(site):
    mis = SM.token_words_text(site, "async8_mis")
    assert mis.startswith(f"At update {DETAIL_STEP} (rollout 2) of the async8_mis run, the behaviour ratio \u03f1 (the "
                          "learner's probability of a token over the sampler's) of the 14 tokens the Step Inspector holds "
                          "runs from 0.472 to 2.72.")
    assert "7 of them (50.00%) fall outside [0.5, 2] (4 above, 3 below): masked IS sets their weight to 0" in mis
    tis = SM.token_words_text(site, "async8_tis")
    assert "4 of them (28.57%) exceed the cap 2 and are weighted 2" in tis
    quiet = SM.token_words_text(site, "async8_tis", 0)
    assert "None of them exceeds the cap 2, so truncation changes no weight at this update" in quiet


def test_token_words_without_a_correction_or_a_run(site):
    assert SM.token_words_text(site, "async8_grpo") == ("The async8_grpo run has no rollout correction: every token "
                                                        "keeps its surrogate unweighted.")
    assert SM.token_words_text(site, "nope") == ("This build has no run named nope, so what its correction did to the "
                                                 "tokens cannot be shown.")
    assert "logged no token file with the sampler's log-probs at update 3" in SM.token_words_text(site, "async8_mis", 3)


@pytest.fixture(scope="module")
def sequence_site(tmp_path_factory):
    """One run of GRPO-MIS (sequence) at lag 8 whose step 4 has GAPS cycled along each response: the responses'
    gaps sum to 0 + 1 - 0.75 = 0.25 (3 tokens), 0.35 (4), 1 (2) and 0.35 (5), ratios e^0.25 = 1.28, e^0.35 = 1.42
    (twice) and e = 2.72: only the two-token answer leaves [0.5, 2], above, and drops out whole."""
    spec = run("async8_mis_seq", "grpo_mis_seq", 0, 9, lag=8, level=0.02, detail_steps=(0, DETAIL_STEP))
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(seed_fixtures, "make_detail", detail_with_sampler)
        return Site(runs_where=write_fixture_runs(tmp_path_factory.mktemp("sequence-runs"), [spec]))


def test_response_words_count_whole_answers_at_the_sequence_level(sequence_site, site):
    text = SM.response_words_text(sequence_site, "async8_mis_seq")
    assert text == (f"At update {DETAIL_STEP} (rollout 2) of the async8_mis_seq run, the ratio of a whole response (the "
                    "product of its token ratios) runs from 1.28 to 2.72 over the 4 answers the Step Inspector holds. "
                    "1 of them (25.0%) falls outside the band [0.5, 2] (1 above, 0 below): it leaves the update whole, "
                    "its 2 tokens weighted 0, and every token of a kept answer weighs its answer's ratio.")
    # the same tokens tested one by one (GRPO-MIS) drop 7 of 14, from every answer
    assert (SF.token_counts(site.run("async8_mis"), DETAIL_STEP).above, SF.token_counts(site.run("async8_mis"),
                                                                                         DETAIL_STEP).below) == (4, 3)
    assert SM.response_words_text(sequence_site, "async8_mis_seq", 0).endswith(
        "None of them leaves the band [0.5, 2], so the test drops no answer at this update.")
    assert SM.response_words_text(site, "async8_mis") == "The async8_mis run has no correction tested on whole responses."
    assert SM.response_words_text(site, "nope").startswith("This build has no run named nope")


# ---------------------------------------------------------------------------
# The real chapter
# ---------------------------------------------------------------------------

def test_the_chapter_builds_with_every_claim_computed(built_site):
    page = (built_site / "course" / "compare" / "sampler" / "index.html").read_text(encoding="utf-8")
    text = html_lib.unescape(re.sub(r"<[^>]+>", "", page))
    real = Site()
    for sentence in (SM.mismatch_words_text(real), SM.cost_words_text(real, "sampled"),
                     SM.correction_words_text(real, "grpo_tis@lag8", "greedy"),
                     SM.correction_words_text(real, "grpo_mis@lag8", "sampled"), SM.lag_words_text(real, "sampled"),
                     SM.correction_words_text(real, "grpo_mis_seq@lag8", "greedy"), SM.level_words_text(real, "sampled")):
        assert sentence in text
    step = SM.detail_step(real.run("async8_mis"))
    assert step is not None and SM.token_words_text(real, "async8_mis", step) in text
    step = SM.detail_step(real.run("async8_mis_seq"))
    assert step is not None and SM.response_words_text(real, "async8_mis_seq", step) in text
    assert 'class="unipo-inspector"' in page and "unipo-sampler-mismatch" in page and "unipo-sampler-gains" in page
    assert "This build has no" not in text
