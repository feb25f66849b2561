"""CISPO beside DAPO and dual-clip beside GRPO (``site/pages/objectives/clip_family.py``) on fixture runs
worked by hand, both outcomes of each sentence, a missing run, and the built chapter.

Fixtures (``seed_fixtures``; 20 held-out problems, 10 rollouts of 2 updates): every run starts at 10 of 20
right ("0" * 10 + "1" * 10); a run that gains k problems ends at "1" * k + "0" * (10 - k) + "1" * 10.
In the ``worse`` set CISPO gains 2, 2 and 3 problems (+10, +10, +15 points) and DAPO 4, 5 and 4 (+20, +25,
+20): every CISPO seed below every DAPO seed, which three seeds against three can only call suggestive
(p = 2/20, core.judge). Their sampled gains overlap. CISPO's entropy is 0.050, 0.051 and 0.052 at every
update, DAPO's 0.046, 0.047 and 0.048. The ``worse5`` and ``better5`` sets add two seeds to each (CISPO
+15 and +10 points, entropy 0.0505 and 0.0515; DAPO +25 and +20, entropy 0.0465 and 0.0475): the same
separation at five seeds against five is clear (p = 2/252). Every update trains 100 tokens (100
sampled tokens / 10 per answer / 1.25 generated per kept = 8 answers of 12.5 tokens); CISPO's clip marks
2 tokens high on each second update (10 updates: 20 tokens per run), DAPO's 1 high and 3 low. CISPO's
seed 0 logs update 1's tokens, with one token of ratio 2 and advantage 0.5 and one of ratio 0.5 and
advantage -0.5. Dual-clip and GRPO (seed 0) log the same metrics, timings apart. The ``better`` set
swaps the two algorithms' numbers, logs no CISPO tokens, and its dual-clip run clips more on the high
side than GRPO's from update 7 on.
"""

from __future__ import annotations

import html
import json
import math
import re

import pytest

from seed_fixtures import FixtureRun, fixture_project, seed_runs, write_fixture_runs
from unipo_build.site.context import Site
from unipo_build.site.pages.objectives import clip_family as CF

START = "0" * 10 + "1" * 10


def ends(k: int) -> str:
    return "1" * k + "0" * (10 - k) + "1" * 10


def batch(r: int) -> dict:
    return {"sampled/tokens": 100.0, "sampled/length": 10.0, "sampling/generated_per_kept": 1.25,
            "length/mean": 12.5, "reward/mean": 0.5}


def run(run_id: str, algorithm: str, seed: int, gained: int, sampled: int, entropy: float, high: float,
        low: float, **kw) -> FixtureRun:
    return FixtureRun(run_id=run_id, algorithm=algorithm, seed=seed, metrics=batch,
                      update_metrics=lambda s: {"entropy/mean": entropy, "clip/frac_high": high if s % 2 else 0.0,
                                                "clip/frac_low": low, "ratio/max": 4.0 if s == 5 else 1.1,
                                                "time/update_s": 1.0 + 0.1 * s + 0.01 * seed},
                      start_bits=START, end_bits=ends(gained), sampled_start=START, sampled_end=ends(sampled), **kw)


#: (problems gained greedy, sampled, entropy) of each seed; the first three are the three-seed sets'.
CISPO_SEEDS = [(2, 5, 0.050), (2, 3, 0.051), (3, 6, 0.052), (3, 4, 0.0505), (2, 5, 0.0515)]
DAPO_SEEDS = [(4, 4, 0.046), (5, 6, 0.047), (4, 2, 0.048), (5, 5, 0.0465), (4, 3, 0.0475)]


def fixture_set(root, better: bool, seeds: int = 3) -> Site:
    cispo = (CISPO_SEEDS[:seeds], 0.02, 0.0)
    dapo = (DAPO_SEEDS[:seeds], 0.01, 0.03)
    if better:
        cispo, dapo = (dapo[0], cispo[1], cispo[2]), (cispo[0], dapo[1], dapo[2])
    specs = []
    for algorithm, (per_seed, high, low) in (("cispo", cispo), ("dapo", dapo)):
        specs += seed_runs(algorithm, per_seed, lambda run_id, seed, v, algorithm=algorithm, high=high, low=low: run(
            run_id, algorithm, seed, *v, high, low,
            detail_steps=(1,) if algorithm == "cispo" and seed == 0 and not better else ()))
    specs.append(run("grpo", "grpo", 0, 3, 3, 0.06, 0.01, 0.02))
    dual = run("dual_clip", "dual_clip", 0, 3, 3, 0.06, 0.01, 0.02)
    if better:  # the floor engages at update 7: one more token clipped high, and everything after moves
        base = dual.update_metrics
        dual.update_metrics = lambda s: {**base(s), **({"clip/frac_high": 0.02, "entropy/mean": 0.061} if s >= 7 else {})}
    specs.append(dual)
    runs_dir = write_fixture_runs(root / "runs", specs)
    if not better:
        clip_tokens(runs_dir / "cispo" / "tokens" / "step_000001.json")
    return Site(root=fixture_project(root / "project"), runs_where=runs_dir)


def clip_tokens(path) -> None:
    """Give update 1's first response a third token of ratio 2 (advantage 0.5, past 1.28: clipped high) and its
    second a token of ratio 0.5 (advantage -0.5, below DAPO's 0.8)."""
    detail = json.loads(path.read_text(encoding="utf-8"))
    for index, (ratio, side) in enumerate(((2.0, 1), (0.5, 0))):
        tokens = detail["prompts"][0]["responses"][index]["tokens"]
        tokens["ratio"][2], tokens["clip"][2] = ratio, side
        tokens["logp"][2] = tokens["old_logp"][2] + math.log(ratio)
    path.write_text(json.dumps(detail), encoding="utf-8")


@pytest.fixture(scope="module")
def worse(tmp_path_factory) -> Site:
    return fixture_set(tmp_path_factory.mktemp("clip-worse"), better=False)


@pytest.fixture(scope="module")
def better(tmp_path_factory) -> Site:
    return fixture_set(tmp_path_factory.mktemp("clip-better"), better=True)


@pytest.fixture(scope="module")
def worse5(tmp_path_factory) -> Site:
    return fixture_set(tmp_path_factory.mktemp("clip-worse5"), better=False, seeds=5)


@pytest.fixture(scope="module")
def better5(tmp_path_factory) -> Site:
    return fixture_set(tmp_path_factory.mktemp("clip-better5"), better=True, seeds=5)


# ---------------------------------------------------------------------------
# Held-out gains
# ---------------------------------------------------------------------------

def test_three_seeds_below_three_are_only_suggestive(worse):
    """Every CISPO seed below every DAPO seed, three against three: the old rule's "gained less" is now suggestive."""
    text = CF.clip_family_gains_text(worse, "cispo", "dapo")
    assert ("From the same start of 50.0%, held-out greedy accuracy rose by +11.7 points on average (seeds: +10.0, "
            "+10.0 and +15.0) under CISPO and by +21.7 on average (seeds: +20.0, +25.0 and +20.0) under DAPO; the two "
            "gains are not clearly apart: the difference, \u221210.0 points, is suggestive (three seeds each, two-sided "
            "permutation p = 0.10).") in text
    assert "gained less" not in text and "gained more" not in text
    # sampled: CISPO +25, +15, +30 against DAPO +20, +30, +10 (means +23.3, +20.0): 16 of the 20 splits are as far
    assert "sampled accuracy rose by +23.3 points on average" in text
    assert ("the two gains are not clearly apart: the difference, +3.3 points, is not separable with three seeds (the "
            "test cannot reach p \u2264 0.05 with three seeds each)") in text
    # seed 0: CISPO ends 12 of 20, DAPO 14, the same problems: 2 lost, none gained, -10 points
    assert "Paired problem by problem, each seed's CISPO run ended \u221210.0 (" in text
    assert "points from the DAPO run of the same seed, in greedy accuracy (95% intervals)" in text


def test_five_seeds_below_five_are_clear_with_the_difference_and_its_interval(worse5):
    text = CF.clip_family_gains_text(worse5, "cispo", "dapo")
    # greedy: CISPO +10, +10, +15, +15, +10 (mean +12) against DAPO +20, +25, +20, +25, +20 (mean +22): p = 2/252
    assert re.search(r"under DAPO; CISPO gained less than DAPO, not more: the difference, \u221210\.0 points \(95% "
                     r"interval \u22121\d\.\d to \u2212\d\.\d points\), is clear \(five seeds each, two-sided "
                     r"permutation p = 0\.008\)\.", text), text
    # sampled: CISPO 25, 15, 30, 20, 25 (mean 23) against DAPO 20, 30, 10, 25, 15 (mean 20): they overlap, and the
    # interval the test bounds at five seeds holds zero
    assert re.search(r"the two gains are not clearly apart: the difference, \+3\.0 points \(95% interval \u2212\d+\.\d "
                     r"to \+\d+\.\d points\), is not separated \(five seeds each, two-sided permutation p = 0\.\d\d\)",
                     text), text


def test_gains_word_cispo_above_dapo(better, better5):
    assert "gained more" not in CF.clip_family_gains_text(better, "cispo", "dapo")
    text = CF.clip_family_gains_text(better5, "cispo", "dapo")
    assert "CISPO gained more than DAPO: the difference, +10.0 points (95% interval" in text
    assert "is clear (five seeds each, two-sided permutation p = 0.008)" in text
    assert "not more" not in text.split("Held-out sampled")[0]


def test_a_baseline_comparison_words_no_predicted_direction(worse5):
    text = CF.clip_family_gains_text(worse5, "cispo", "dapo", baseline=True)
    assert "CISPO gained less than DAPO: the difference" in text and "not more" not in text
    assert "CISPO's gain is not clearly apart from DAPO's: the difference, +3.0 points (95% interval" in text


# ---------------------------------------------------------------------------
# Entropy
# ---------------------------------------------------------------------------

def test_entropy_ends_higher_under_cispo_by_a_sliver(worse, worse5):
    text = CF.clip_family_entropy_text(worse5, "cispo", "dapo")
    assert text.startswith("Entropy ended higher under CISPO than under DAPO: the mean token entropy over the last "
                           "tenth of the updates was 0.051 nats on average (seeds: 0.05, 0.051, 0.052, 0.0505 and "
                           "0.0515) under CISPO and 0.047 on average (seeds: 0.046, 0.047, 0.048, 0.0465 and 0.0475) "
                           "under DAPO; the difference, +0.004 nats (95% interval ")
    assert "is clear (five seeds each, two-sided permutation p = 0.008)" in text
    # 0.004 / 0.047 = 8.5%: under the 10% of a sliver
    assert "The gap is 9% of DAPO's level, a sliver" in text
    # the same at three seeds against three: suggestive, no direction stated
    three = CF.clip_family_entropy_text(worse, "cispo", "dapo")
    assert three.startswith("These runs do not tell the two apart in entropy")
    assert "the difference, +0.004 nats, is suggestive (three seeds each, two-sided permutation p = 0.10)" in three
    assert "The gap between the means is 9% of the lower one" in three


def test_entropy_ends_higher_under_dapo_when_the_runs_say_so(better5):
    text = CF.clip_family_entropy_text(better5, "cispo", "dapo")
    assert text.startswith("Entropy ended higher under DAPO than under CISPO")
    assert "the difference, \u22120.004 nats (95% interval" in text
    assert "of CISPO's level, a sliver" in text


def test_entropy_that_cannot_be_told_apart_says_so(tmp_path):
    specs = [run("cispo", "cispo", 0, 2, 2, 0.050, 0.0, 0.0), run("cispo-s1", "cispo", 1, 2, 2, 0.047, 0.0, 0.0),
             run("dapo", "dapo", 0, 2, 2, 0.048, 0.0, 0.0), run("dapo-s1", "dapo", 1, 2, 2, 0.049, 0.0, 0.0)]
    site = Site(root=fixture_project(tmp_path / "project"), runs_where=write_fixture_runs(tmp_path / "runs", specs))
    text = CF.clip_family_entropy_text(site, "cispo", "dapo")
    assert text.startswith("These runs do not tell the two apart in entropy")
    assert "is not separable with two seeds (the test cannot reach p \u2264 0.05 with two seeds each)" in text


# ---------------------------------------------------------------------------
# Tokens that kept a gradient, and one of them under both objectives
# ---------------------------------------------------------------------------

def test_trained_tokens_from_the_rollout_metrics():
    assert CF.trained_tokens(batch(0)) == 100
    assert CF.trained_tokens({"sampled/tokens": 50.0, "sampled/length": 10.0, "length/mean": 10.0}) == 50
    assert CF.trained_tokens({"length/mean": 10.0}) is None


def test_kept_tokens_are_counted_on_both_sides(worse):
    text = CF.kept_gradient_tokens_text(worse, "cispo", "dapo")
    assert text.startswith("On the high side, counted at every update: over the 60 updates of CISPO's runs, its three "
                           "runs had 20, 20 and 20 tokens with a positive advantage and a ratio above 1.28: 60 of the "
                           "6,000 tokens trained on, 1.000%, in 30 of the updates. DAPO's clip, whose upper bound is the "
                           "same 1.28, would have given each a zero gradient; CISPO kept a gradient for each")
    # the logged step, 14 tokens: one with a negative advantage and ratio 0.5 (below DAPO's 0.8), one with a positive
    # advantage and ratio 2 (past the cap): the two sides side by side
    assert ("On the low side CISPO has no bound, so its logs count nothing there at every update; its logged token "
            "steps show both sides: of 14 tokens, 1 (7.143%) had a negative advantage and a ratio below 0.8, which "
            "DAPO's clip would have silenced and CISPO kept pushing down, against 1 (7.143%) past the cap on the high "
            "side; none had a negative advantage and a ratio above 1.28") in text
    assert "DAPO's own three runs silenced 30 tokens on the high side and 180 on the low side, of 6,000." in text
    # DAPO's low side is the larger (180 > 30), CISPO's logged one is not (1 = 1): no sentence on which side is larger
    assert "the low side is the larger" not in text


def test_a_larger_low_side_on_both_counts_is_said(tmp_path):
    site = fixture_set(tmp_path, better=False)
    path = tmp_path / "runs" / "cispo" / "tokens" / "step_000001.json"
    detail = json.loads(path.read_text(encoding="utf-8"))
    tokens = detail["prompts"][0]["responses"][1]["tokens"]  # the response of advantage -0.5
    tokens["ratio"][3], tokens["clip"][3] = 0.6, 0
    tokens["logp"][3] = tokens["old_logp"][3] + math.log(0.6)
    path.write_text(json.dumps(detail), encoding="utf-8")
    text = CF.kept_gradient_tokens_text(site, "cispo", "dapo")
    assert "of 14 tokens, 2 (14.286%) had a negative advantage and a ratio below 0.8" in text
    assert text.endswith("On both counts the low side is the larger: most of what CISPO changes is on tokens of wrong "
                         "answers whose probability had already fallen, which it keeps pushing down where DAPO stops, "
                         "not on the rising tokens the high-side count holds.")


def test_no_token_past_the_bound_is_worded_as_none(tmp_path):
    specs = [run("cispo", "cispo", 0, 2, 2, 0.05, 0.0, 0.0), run("dapo", "dapo", 0, 2, 2, 0.05, 0.01, 0.0)]
    site = Site(root=fixture_project(tmp_path / "project"), runs_where=write_fixture_runs(tmp_path / "runs", specs))
    text = CF.kept_gradient_tokens_text(site, "cispo", "dapo")
    assert "no token with a positive advantage rose above 1.28: no token kept a gradient" in text


def test_a_clipped_token_keeps_its_gradient_under_cispo_and_loses_it_under_dapo(worse):
    tok = CF.clipped_token(worse, "cispo", "dapo")
    assert (tok.step, tok.ratio, tok.advantage) == (1, 2.0, 0.5)
    (a, va, ga, sa), (b, vb, gb, sb) = tok.rows
    # CISPO: sg[1.28] A = 0.64, slope 1.28 A; DAPO: min(2 A, 1.28 A) = 0.64, the constant branch
    assert (a, b) == ("CISPO", "DAPO") and (sa, sb) == (1, 1)
    assert va == pytest.approx(0.64) and vb == pytest.approx(0.64)
    assert ga == pytest.approx(0.64) and gb == 0.0
    text = CF.clipped_token_text_of(worse, "cispo", "dapo")
    assert "The objectives agree on the value and part on the gradient: DAPO silences the token, CISPO still pushes" in text
    html_table = CF.clipped_token_html(worse, "cispo", "dapo")
    assert "<td>DAPO</td>" in html_table and "clipped high" in html_table


def test_the_token_under_other_clips_words_what_differs(worse):
    # dual-clip's PPO bound is 1.2: its term is 1.2 A = 0.6, not CISPO's 0.64, and it silences the token
    text = CF.clipped_token_text_of(worse, "cispo", "dual_clip")
    assert "The objectives agree" not in text
    assert text.endswith("Dual-clip GRPO silences the token, CISPO still pushes it, by 0.64 times its weight in the "
                         "step (0.0625), 0.04 in all.")
    # the same clip on both sides: the same gradient
    assert CF.clipped_token_text_of(worse, "cispo", "cispo").endswith(
        "The two objectives give this token the same gradient.")


def test_without_logged_tokens_no_token_is_shown(better):
    assert CF.clipped_token_text_of(better, "cispo", "dapo") == (
        "The cispo run logs no token steps, so no clipped token of it can be shown.")


# ---------------------------------------------------------------------------
# Dual-clip: identical logs, or where they part
# ---------------------------------------------------------------------------

def test_identical_logs_say_the_floor_never_engaged(worse):
    text = CF.run_divergence_text(worse, "dual_clip", "grpo", "the floor")
    assert text.startswith("Dual-clip GRPO and GRPO, which differ in the clip alone, log identical values with seed 0: "
                           "all ")
    assert "on all 20 updates. The floor never engaged in this run." in text
    reach = CF.dual_clip_reach_text(worse, "dual_clip", "grpo")
    assert reach.startswith("The largest ratio grpo logged was 4, at update 5; 1 of its 20 updates had a token above "
                            "c = 3.")
    assert "belonged to a token with a positive (or zero) advantage" in reach


def test_logs_that_part_say_where(better):
    text = CF.run_divergence_text(better, "dual_clip", "grpo", "the floor")
    assert text.startswith("With seed 0, Dual-clip GRPO's and GRPO's runs log the same values up to update 6 and part "
                           "at update 7 (")
    assert "the first update on which the floor acted; they differ on 13 of their 20 updates." in text
    reach = CF.dual_clip_reach_text(better, "dual_clip", "grpo")
    assert ("At update 7, the first on which the two runs' logs differ, Dual-clip GRPO's share of tokens clipped high "
            "exceeds GRPO's: the floor held tokens of wrong answers there.") in reach
    assert "positive (or zero) advantage" not in reach


# ---------------------------------------------------------------------------
# Bad input
# ---------------------------------------------------------------------------

def test_a_missing_run_gives_one_line_naming_it(tmp_path):
    specs = [run("cispo", "cispo", 0, 2, 2, 0.05, 0.0, 0.0)]
    site = Site(root=fixture_project(tmp_path / "project"), runs_where=write_fixture_runs(tmp_path / "runs", specs))
    for fn in (CF.clip_family_gains_text, CF.clip_family_entropy_text, CF.kept_gradient_tokens_text,
               CF.run_divergence_text, CF.dual_clip_reach_text):
        text = fn(site, "cispo", "dapo")
        assert text.startswith("There is no finished 'dapo' run in this build, so ") and text.count(".") == 1, text
    assert CF.clipped_token_text_of(site, "nope", "dapo") == (
        "There is no 'nope' run in this build, so no clipped token of it can be shown.")


# ---------------------------------------------------------------------------
# The built chapter
# ---------------------------------------------------------------------------

def test_the_built_chapter_shows_each_claim_computed_from_the_runs(built_site, repo_root):
    page = html.unescape((built_site / "course" / "algorithms" / "cispo" / "index.html").read_text(encoding="utf-8"))
    site = Site(root=repo_root)
    for text in (CF.clip_family_gains_text(site, "cispo", "dapo"), CF.clip_family_entropy_text(site, "cispo", "dapo"),
                 CF.kept_gradient_tokens_text(site, "cispo", "dapo"), CF.clipped_token_text_of(site, "cispo", "dapo"),
                 CF.run_divergence_text(site, "dual_clip", "grpo", "the floor"),
                 CF.dual_clip_reach_text(site, "dual_clip", "grpo")):
        assert text in page, text[:80]
    assert 'class="unipo-inspector"' in page and 'data-algorithm="cispo"' in page
    # the dual-clip section says what a GRPO run in verl has of the spec, from the registry (trainer_words)
    from unipo_build.site.pages.guides.trainer_words import trainer_defaults_text

    plain = re.sub(r"<[^>]+>", "", page)
    assert html.unescape(re.sub(r"<[^>]+>", "", trainer_defaults_text(site.spec("dual_clip", "test"), "verl",
                                                                       ("advantage",)))) in plain
    assert "so a GRPO run in verl is this spec" not in plain
    ladder = (built_site / "course" / "compare" / "ladder" / "index.html").read_text(encoding="utf-8")
    assert 'id="from-grpo-to-cispo"' in ladder
