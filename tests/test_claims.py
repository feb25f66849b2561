"""Sentences about the runs are chosen by the runs: the verdict rules on hand-made numbers, the
words on two runs directories where the effects point opposite ways, and a whole site built on
one of them.
"""

from __future__ import annotations

import json

import re
from html import unescape
from pathlib import Path

import pytest

from helpers_runlog import write_metric_run
from site_build import bound_macros, build_site, free_port
from unipo_build.core.numbers import fmt_num, fmt_signed
from unipo_build.site.pages.learning import effects as E

# ---------------------------------------------------------------------------
# The verdict rules, on hand-made numbers
# ---------------------------------------------------------------------------


class _Header:
    def __init__(self, seed):
        self.seed = seed


class _Run:
    def __init__(self, seed=0):
        self.header = _Header(seed)
        self.id = f"run-{seed}"


def side(name, *values, se=None):
    return E.Side(name, tuple(E.RunValue(_Run(i), v, se) for i, v in enumerate(values)))


def test_five_seeds_that_do_not_overlap_are_clear_both_ways():
    """Five seeds each, every seed of one beyond every seed of the other: 2 of the C(10, 5) = 252 splits are as
    far from zero, p = 2/252 = 0.008, clear; the words give the difference and its interval."""
    a, b = side("A", 0.5, 0.6, 0.7, 0.8, 0.9), side("B", 0.0, 0.1, 0.2, 0.3, 0.4)
    v = E.compare(a, b, +1)
    assert v.status == "shown" and v.judgement.p == pytest.approx(2 / 252)
    assert v.basis == "clear (five seeds each, two-sided permutation p = 0.008)"
    assert E.compare(a, b, -1).status == "contradicted"
    assert E.compare(b, a, -1).status == "shown"
    j = v.judgement
    assert j.effect == pytest.approx(0.5) and j.low < 0.5 < j.high
    points = lambda x: fmt_num(100 * x, 2)  # noqa: E731
    assert E.judged(v, points, unit=" points") == (
        f"the difference, 50 points (95% interval {points(j.low)} to {points(j.high)} points), is clear (five seeds "
        "each, two-sided permutation p = 0.008)")
    # four against four: the extreme split has p = 2/70 = 0.029, clear too
    assert E.compare(side("A", 5, 6, 7, 8), side("B", 1, 2, 3, 4), +1).status == "shown"


def test_three_seeds_that_do_not_overlap_are_only_suggestive():
    """The rule the course used before read 3 against 3 with no overlap as clear; the procedure cannot: the
    extreme split is 2 of C(6, 3) = 20, p = 0.10, suggestive, and no interval is printed."""
    a, b = side("A", 0.5, 0.6, 0.7), side("B", 0.1, 0.2, 0.3)
    for predicted in (+1, -1):
        v = E.compare(a, b, predicted)
        assert v.status == "unclear" and v.judgement.word == "suggestive"
        assert v.reason == E.UNCLEAR_REASONS["suggestive"]
    assert v.basis == "suggestive (three seeds each, two-sided permutation p = 0.10)"
    assert E.judged(v, lambda x: fmt_num(100 * x, 2), unit=" points") == (
        "the difference, 40 points, is suggestive (three seeds each, two-sided permutation p = 0.10)")
    # overlapping seeds: p = 0.3 (6 of 20 splits at least as far), not separable at three seeds
    v = E.compare(side("A", 0.5, 0.15, 0.7), side("B", 0.1, 0.2, 0.3), +1)
    assert v.status == "unclear" and v.judgement.p == pytest.approx(0.3)
    assert v.basis.startswith("not separable with three seeds (the test cannot reach p \u2264 0.05 with three seeds each)")
    # two against two: a clean split is p = 2/6, never even suggestive
    v = E.compare(side("A", 0.5, 0.6), side("B", 0.1, 0.2), +1)
    assert v.status == "unclear" and v.basis.startswith("not separable with two seeds")


def test_one_seed_is_never_clear_however_large_the_gap():
    """The unit is the run: one seed's own standard error does not stand in for seeds (the old rule judged a
    difference of 0.3 against hypot(0.1, 0.1) as shown)."""
    v = E.compare(side("A", 0.5, se=0.001), side("B", 0.2, se=0.001), +1)
    assert v.status == "unclear" and v.judgement.word == "not separable"
    assert v.basis == "not separable with one seed (the test cannot reach p \u2264 0.05 with one seed each)"
    assert v.reason == "there are too few seeds to tell them apart"
    v = E.compare(side("A", 0.4, 0.5, 0.6), side("B", 0.2, se=0.05), +1)
    assert v.status == "unclear" and "(the test cannot reach p \u2264 0.05 with three seeds against one)" in v.basis
    assert E.compare(side("A", 0.2, se=0.05), side("B", 0.4, 0.5, 0.6), +1).basis.endswith("with one seed against three)")
    # a side without runs: unmeasurable, with the side's own reason
    v = E.compare(E.Side("A", (), "no log"), side("B", 0.2), +1)
    assert (v.status, v.reason, v.judgement) == ("unmeasurable", "no log", None)


def test_finding_states_a_direction_only_for_a_clear_verdict():
    clear = E.compare(side("A", 5, 6, 7, 8, 9), side("B", 0, 1, 2, 3, 4), +1)
    vague = E.compare(side("A", 5, 6, 7), side("B", 0, 1, 2), +1)
    words = dict(shown="A is above B", contradicted="A is below B", unclear="A and B are not clearly apart")
    assert E.finding(clear, fmt_num, **words).startswith("A is above B: the difference, 5 (95% interval ")
    assert E.finding(vague, fmt_num, **words) == (
        "A and B are not clearly apart: the difference, 5, is suggestive (three seeds each, two-sided permutation "
        "p = 0.10)")
    missing = E.compare(E.Side("A", (), "the build has no run of A"), side("B", 1), +1)
    assert E.finding(missing, fmt_num, **words, unmeasurable="A and B cannot be compared") == (
        "A and B cannot be compared: the build has no run of A")


def test_a_change_within_runs_needs_every_seed_beyond_its_noise():
    assert E.direction(side("A", 0.5, 0.6, se=0.1), +1).status == "shown"
    assert E.direction(side("A", -0.5, -0.6, se=0.1), +1).status == "contradicted"
    assert E.direction(side("A", 0.5, 0.1, se=0.1), +1).reason.startswith("the change is within")
    assert E.direction(side("A", 0.5, -0.6, se=0.1), +1).reason == "the seeds disagree"
    assert E.direction(E.Side("A", (), "no log"), +1).status == "unmeasurable"


def test_changes_read_as_signed_words():
    assert E.relative_change_words(-0.3) == "fell 30%" and E.relative_change_words(0.05) == "rose 5%"
    assert E.relative_change_words(0.001) == "stayed level"
    assert fmt_signed(-0.76, 2) == "\u22120.76" and fmt_signed(3.2, 2) == "+3.2"


# ---------------------------------------------------------------------------
# Two runs directories, the effects pointing opposite ways
# ---------------------------------------------------------------------------

def _lerp(a, b, f):
    return a + (b - a) * f


#: Seeds of each algorithm in the two worlds: five, so that a difference can be clear (core.judge).
SEEDS = 5


def world(root: Path, clip_higher_works: bool) -> Path:
    """GRPO, DAPO and Dr. GRPO, five seeds each: with ``clip_higher_works`` DAPO's entropy
    falls a little and GRPO's a lot, DAPO clips fewer high-side tokens, GRPO's wrong answers drift
    longer and DAPO's overlong term shrinks; otherwise every one of these the other way round."""
    w = clip_higher_works

    def grpo(f, g):
        return {"entropy/mean": _lerp(1.0, 0.6 if w else 0.95, f) + g.normal(0, 0.01),
                "clip/frac_high": (0.004 if w else 0.001) + g.normal(0, 1e-4),
                "clip/frac_low": 0.002,
                "length/correct": 20 + g.normal(0, 0.3),
                "length/incorrect": _lerp(25, 35 if w else 20, f) + g.normal(0, 0.3),
                "groups/all_correct_frac": _lerp(0.2, 0.5 if w else 0.1, f) + g.normal(0, 0.01)}

    def dapo(f, g):
        return {"entropy/mean": _lerp(1.0, 0.95 if w else 0.6, f) + g.normal(0, 0.01),
                "clip/frac_high": (0.001 if w else 0.004) + g.normal(0, 1e-4),
                "clip/frac_low": 0.002,
                "reward/shaping": _lerp(-0.2, -0.02, f if w else 1 - f) + g.normal(0, 0.005),
                "sampling/rounds": 2.0 if w else 10.0, "sampling/generated_per_kept": 1.5}

    def dr_grpo(f, g):
        return {"length/correct": 20 + g.normal(0, 0.3),
                "length/incorrect": _lerp(25, 26 if w else 34, f) + g.normal(0, 0.3)}

    for seed in range(SEEDS):
        suffix = "" if seed == 0 else f"-s{seed}"
        write_metric_run(root / f"grpo{suffix}", "grpo", seed=seed, metrics=grpo)
        write_metric_run(root / f"dapo{suffix}", "dapo", seed=seed, metrics=dapo)
        write_metric_run(root / f"dr_grpo{suffix}", "dr_grpo", seed=seed, metrics=dr_grpo)
    return root


@pytest.fixture(scope="module")
def worlds(tmp_path_factory):
    return {flag: world(tmp_path_factory.mktemp(f"world-{flag}"), flag) for flag in (True, False)}


def sentences(macros) -> dict[str, str]:
    return {"entropy": macros["effect"]("entropy_kept", "dapo", "grpo"),
            "high": macros["effect"]("fewer_high_clips", "dapo", "grpo"),
            "length": macros["effect"]("length_bias", "grpo", "dr_grpo"),
            "overlong": macros["effect"]("overlong_finish", "dapo"),
            "all_correct": macros["effect"]("all_correct_grows", "grpo"),
            "batch": macros["batch_fill"]("dapo"),
            "lengths": macros["length_verdict"]("grpo")}


def test_the_words_follow_the_runs(worlds):
    works, fails = sentences(bound_macros(worlds[True])), sentences(bound_macros(worlds[False]))
    assert works["entropy"].startswith("Entropy fell less under DAPO than under GRPO")
    assert "fell 5%" in works["entropy"] and "fell 38%" in works["entropy"]
    # five seeds each, every DAPO seed above every GRPO seed: p = 2/252, with the difference and its interval
    assert "is clear (five seeds each, two-sided permutation p = 0.008)" in works["entropy"]
    assert re.search(r"; the difference, \+3\d points \(95% interval \+\d\d to \+\d\d points\), is clear", works["entropy"])
    assert fails["entropy"].startswith("Entropy fell more under DAPO than under GRPO, not less")
    # DAPO and GRPO differ in five slots: the words do not lay the difference at clip-higher's door
    assert "clip-higher" not in fails["entropy"] and "clip-higher" not in works["entropy"]
    assert works["high"].startswith("DAPO clipped fewer tokens on the high side than GRPO")
    assert fails["high"].startswith("DAPO clipped more tokens on the high side than GRPO, not fewer")
    assert works["length"].startswith("Wrong answers drifted longer, relative to right ones, under GRPO than under Dr. GRPO")
    assert "tokens), is clear (five seeds each, two-sided permutation p = 0.008)" in works["length"]
    assert fails["length"].startswith("Wrong answers drifted longer under Dr. GRPO than under GRPO")
    assert works["overlong"].startswith("DAPO's answers learned to finish before the cut-off")
    assert fails["overlong"].startswith("DAPO's answers ran further into the cache zone")
    assert works["all_correct"].startswith("In GRPO's runs the share of groups with every answer right grew")
    assert "shrank" in fails["all_correct"]
    assert "Every batch was full" in works["batch"] and "Not every batch was full" in fails["batch"]
    assert "drifted longer, beyond the noise" in works["lengths"] and "drifted shorter" in fails["lengths"]
    # the cause note names the slots the two algorithms differ in
    assert "so the clip is one candidate cause among several" in works["entropy"]


def test_what_cannot_be_measured_is_said(worlds, tmp_path):
    only_grpo = tmp_path / "runs"
    only_grpo.mkdir()
    write_metric_run(only_grpo / "grpo", "grpo", metrics=lambda f, g: {"entropy/mean": 1.0 - 0.1 * f})
    m = bound_macros(only_grpo)
    text = m["effect"]("entropy_kept", "dapo", "grpo")
    assert text.startswith("Whether entropy fell less under DAPO than under GRPO cannot be measured in this build")
    assert "cannot be measured" in m["effect"]("overlong_finish", "dapo")
    assert "does not log" in m["effect"]("length_bias", "grpo", "grpo")


def _text(html: str) -> str:
    return re.sub(r"\s+", " ", unescape(re.sub(r"<[^>]+>", " ", html)))


@pytest.mark.slow
def test_a_site_built_on_other_runs_says_what_those_runs_show(worlds, tmp_path_factory):
    """The whole site, built on the directory where clip-higher works: every page that words these
    effects says what these runs show, and the opposite nowhere."""
    url = f"http://127.0.0.1:{free_port()}/unipo/"
    build = build_site(tmp_path_factory.mktemp("claims-site"), site_url=url,
                       extra_env={"UNIPO_RUNS": str(worlds[True])})
    assert build.returncode == 0, (build.log or "")[-4000:]
    site = build.site_dir
    dapo = _text((site / "course/algorithms/dapo/index.html").read_text(encoding="utf-8"))
    assert "Entropy fell less under DAPO than under GRPO" in dapo
    assert "DAPO clipped fewer tokens on the high side than GRPO" in dapo
    assert "DAPO's answers learned to finish before the cut-off" in dapo
    dynamics = _text((site / "course/compare/dynamics/index.html").read_text(encoding="utf-8"))
    assert "Entropy fell less under DAPO than under GRPO" in dynamics
    aggregation = _text((site / "course/compare/aggregation/index.html").read_text(encoding="utf-8"))
    assert "Wrong answers drifted longer, relative to right ones, under GRPO than under Dr. GRPO" in aggregation
    for page in site.rglob("*.html"):
        text = _text(page.read_text(encoding="utf-8"))
        assert "clip-higher did not keep entropy up" not in text, page
        assert "not fewer" not in text, page


def test_a_one_slot_pair_is_named_so_and_labels_name_the_rungs(tmp_path):
    """Ablation rungs that differ in the clip alone: the cause note says so, and the page's labels
    name them."""
    for seed in range(5):
        write_metric_run(tmp_path / f"ch-{seed}", "ladder/ladder_clip_higher", seed=seed,
                         metrics=lambda f, g: {"entropy/mean": 1.0 - 0.05 * f + g.normal(0, 0.005)})
        write_metric_run(tmp_path / f"nokl-{seed}", "ladder/ladder_no_kl", seed=seed,
                         metrics=lambda f, g: {"entropy/mean": 1.0 - 0.4 * f + g.normal(0, 0.005)})
    text = bound_macros(tmp_path)["effect"]("entropy_kept", "ladder_clip_higher", "ladder_no_kl",
                                            labels=["the clip-higher rung", "the rung before it"])
    assert text.startswith("Entropy fell less under the clip-higher rung than under the rung before it")
    assert text.endswith("The clip is the only slot in which the clip-higher rung and the rung before it differ.")
    # without labels the logs' own names for the algorithms are used
    plain = bound_macros(tmp_path)["effect"]("entropy_kept", "ladder_clip_higher", "ladder_no_kl")
    assert "under + clip-higher than under GRPO \u2212 KL" in plain


def test_the_seeds_note_counts_each_algorithms_runs(worlds, tmp_path):
    """The warning under the charts says how many seeds each algorithm has, and only one seed
    when that is what the build holds."""
    every = bound_macros(worlds[True])["seeds_note"]()
    assert every.startswith("Some algorithms of this build were trained with several seeds: "
                            "GRPO (five seeds), DAPO (five seeds) and Dr. GRPO (five seeds). The charts")
    assert "the spread between seeds" in every
    some = tmp_path / "some"
    for run_id, algorithm, seed in (("grpo", "grpo", 0), ("grpo-s1", "grpo", 1), ("dapo", "dapo", 0)):
        write_metric_run(some / run_id, algorithm, seed=seed, metrics=lambda f, g: {"entropy/mean": 1.0})
    assert bound_macros(some)["seeds_note"]().startswith(
        "Some algorithms of this build were trained with several seeds: GRPO (two seeds); every other algorithm once.")
    only = tmp_path / "runs"
    only.mkdir()
    write_metric_run(only / "grpo", "grpo", metrics=lambda f, g: {"entropy/mean": 1.0})
    assert bound_macros(only)["seeds_note"]().startswith("Each algorithm of this build was trained once, with one seed.")


def test_a_run_still_training_is_left_out_and_said_to_be(tmp_path):
    """A log without a finish time is a run in progress: its last tenth is not the end of training,
    so a claim leaves it out and says why; its finished seeds still count."""
    def metrics(f, g):
        return {"groups/all_correct_frac": 0.1 + 0.3 * f + g.normal(0, 0.01)}
    for run_id, seed in (("grpo", 0), ("grpo-s1", 1)):
        write_metric_run(tmp_path / run_id, "grpo", seed=seed, metrics=metrics)
    header = tmp_path / "grpo-s1" / "header.json"
    data = json.loads(header.read_text())
    assert data.pop("finished_at")
    header.write_text(json.dumps(data))
    text = bound_macros(tmp_path)["effect"]("all_correct_grows", "grpo")
    assert text.startswith("In the GRPO run the share of groups with every answer right grew")
    (tmp_path / "grpo").rename(tmp_path.parent / f"{tmp_path.name}-grpo-away")
    alone = bound_macros(tmp_path)["effect"]("all_correct_grows", "grpo")
    assert alone.endswith("cannot be measured in this build: the grpo-s1 run is still training (its log has no finish time).")


def test_an_unmeasurable_comparison_names_the_second_algorithm_grammatically(tmp_path):
    write_metric_run(tmp_path / "grpo", "grpo", metrics=lambda f, g: {"clip/frac_high": 0.01})
    m = bound_macros(tmp_path)
    assert m["effect"]("more_clips", "gspo", "grpo").startswith(
        "Whether GSPO clipped a larger share of tokens than GRPO cannot be measured in this build")
    assert m["effect"]("entropy_kept", "dapo", "grpo").startswith(
        "Whether entropy fell less under DAPO than under GRPO cannot be measured")
