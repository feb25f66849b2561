"""Three changes to GRPO (``site/pages/objectives/beyond_grpo.py`` and ``clip_family_gains(..., baseline=true)``):
each sentence's numbers against a hand computation from the runs' own files (data/runs/<id>/evals.jsonl,
steps.jsonl, tokens/), the verdict's wording on synthetic seed bands, SAPO's gate worked by hand, a build
without the runs, and the built chapter (the session's shared build: no build of its own).
"""

from __future__ import annotations

import html
import json
import math
import re
from pathlib import Path

import numpy as np
import pytest

from seed_fixtures import FixtureRun, fixture_project, write_fixture_runs
from unipo_build.core import judge as J
from unipo_build.core import runlog
from unipo_build.core.judge import count_word
from unipo_build.core.numbers import fmt_num, fmt_share, fmt_signed_points
from unipo_build.site.context import Site
from unipo_build.site.pages.learning.effects import RunValue, Side, compare
from unipo_build.site.pages.objectives import beyond_grpo as B
from unipo_build.site.pages.objectives import clip_family as CF

RUNS = Path(__file__).resolve().parents[1] / "data" / "runs"
VARIANTS = ("sapo", "gmpo", "grpo_batch_std")


@pytest.fixture(scope="module")
def site(repo_root) -> Site:
    return Site(root=repo_root)


def evals(run_id: str) -> list[dict]:
    return [json.loads(line) for line in runlog.read_log_text(RUNS / run_id / runlog.EVALS).splitlines()
            if line.strip()]


def steps(run_id: str) -> list[dict]:
    return [json.loads(line) for line in runlog.read_log_text(RUNS / run_id / runlog.STEPS).splitlines()
            if line.strip()]


# ---------------------------------------------------------------------------
# Held-out gains against GRPO
# ---------------------------------------------------------------------------

def test_the_gains_and_the_paired_gap_equal_a_hand_computation_from_evals_jsonl(site):
    """SAPO against its baseline one slot away, GRPO without its KL term (not GRPO, two slots away)."""
    text = B.baseline_gains_text(site, "sapo")
    # seed 0 of each: end accuracy minus start accuracy, greedy, straight from the files
    gains = {}
    sapo_runs = [r.id for r in B.finished_runs(site.catalog.seeds_of("sapo"))[0]]  # every shipped seed, in order
    assert sapo_runs[:3] == ["sapo", "sapo-s1", "sapo-s2"]
    for run_id in (*sapo_runs, "ladder_no_kl"):
        rows = evals(run_id)
        start, end = rows[0], rows[-1]
        assert (start["phase"], end["phase"]) == ("start", "end")
        gains[run_id] = end["accuracy_greedy"] - start["accuracy_greedy"]
    assert ("under SAPO" in text and "(seeds: " + ", ".join(fmt_signed_points(gains[r]) for r in sapo_runs[:-1])
            + " and " + fmt_signed_points(gains[sapo_runs[-1]]) + ")") in text
    assert "under GRPO \u2212 KL" in text and " under GRPO;" not in text
    # the same seed's two runs at the end, problem by problem: the mean of (SAPO's bit - GRPO - KL's bit)
    a, b = evals("sapo")[-1], evals("ladder_no_kl")[-1]
    assert a["problems"] == b["problems"]
    diff = np.array([int(x) - int(y) for x, y in zip(a["correct_greedy"], b["correct_greedy"])], dtype=float)
    assert f"SAPO run{'' if 'each seed' in text else ' of seed 0'} ended {fmt_signed_points(diff.mean())} (" in text
    # however far apart, a baseline with one seed is never clear: the words say how many seeds there are
    if len(B.finished_runs(site.catalog.seeds_of("ladder_no_kl"))[0]) == 1:
        assert text.count("is not separable with one seed (the test cannot reach p \u2264 0.05 with "
                          f"{count_word(len(sapo_runs))} seeds against one)") == 2


def test_the_baseline_is_the_spec_one_slot_away_that_undoes_the_change(site):
    """From the specs: SAPO and GMPO differ from GRPO in the clip and the KL term, so their baseline is GRPO without
    its KL term (the clip alone apart, and GRPO's clip); batch-std GRPO's is GRPO itself. GMPO is one slot from SAPO
    too, but its clip is not GRPO's, so it is not SAPO's baseline."""
    assert B.one_slot_baseline(site, "sapo") == ("ladder_no_kl", "clip")
    assert B.one_slot_baseline(site, "gmpo") == ("ladder_no_kl", "clip")
    assert B.one_slot_baseline(site, "grpo_batch_std") == ("grpo", "advantage")
    assert B.one_slot_baseline(site, "cispo") == ("dapo", "clip")
    assert B.one_slot_baseline(site, "grpo") is None  # no predecessor
    assert B.baseline_text(site, "sapo").startswith(
        "The spec one slot away from SAPO is GRPO \u2212 KL (GRPO without its KL term): the two differ in the clip "
        "alone, so this page judges SAPO's runs against GRPO \u2212 KL's")
    assert B.baseline_text(site, "grpo") == (
        "No spec of the project differs from GRPO in one slot alone, so its runs have no baseline that isolates its "
        "change.")


def _side(values):
    return Side("x", tuple(RunValue(None, v, 0.01) for v in values))


def test_the_verdict_wording_switches_on_the_seed_bands():
    apart = compare(_side([0.30, 0.31, 0.32, 0.33, 0.34]), _side([0.20, 0.21, 0.22, 0.23, 0.24]), +1)
    overlap = compare(_side([0.20, 0.25, 0.30]), _side([0.22, 0.24, 0.26]), +1)
    below = compare(_side([0.10, 0.11, 0.12, 0.13, 0.14]), _side([0.20, 0.21, 0.22, 0.23, 0.24]), +1)
    three_below = compare(_side([0.10, 0.11, 0.12]), _side([0.20, 0.21, 0.22]), +1)
    assert CF.gain_verdict_words(apart, "A", "B", baseline=True).startswith(
        "A gained more than B: the difference, +10.0 points (95% interval +")
    assert CF.gain_verdict_words(apart, "A", "B", baseline=True).endswith(
        "points), is clear (five seeds each, two-sided permutation p = 0.008)")
    assert CF.gain_verdict_words(overlap, "A", "B", baseline=True) == (
        "A's gain is not clearly apart from B's: the difference, +1.0 points, is not separable with three seeds (the test "
        "cannot reach p \u2264 0.05 with three seeds each)")
    assert CF.gain_verdict_words(below, "A", "B", baseline=True).startswith("A gained less than B: ")
    # every seed below every seed at three against three: suggestive, never "gained less"
    assert CF.gain_verdict_words(three_below, "A", "B", baseline=True) == (
        "A's gain is not clearly apart from B's: the difference, \u221210.0 points, is suggestive (three seeds each, "
        "two-sided permutation p = 0.10)")
    # the CISPO chapter's wording (a direction predicted)
    assert CF.gain_verdict_words(below, "A", "B").startswith("A gained less than B, not more: ")
    assert CF.gain_verdict_words(overlap, "A", "B").startswith("the two gains are not clearly apart: ")


def test_seeds_that_part_on_both_sides_of_zero_say_so(site):
    text = CF.clip_family_gains_text(site, "grpo_batch_std", "grpo", baseline=True)
    gaps = CF.end_gaps(*(CF._runs(site, n)[1] for n in ("grpo_batch_std", "grpo")), "greedy")
    directions = {c.direction for _, c in gaps if c.direction != "flat"}
    assert ("on both sides of it: the seeds disagree" in text) == (len(directions) > 1)


# ---------------------------------------------------------------------------
# What differs in the specs
# ---------------------------------------------------------------------------

def test_the_slots_apart_come_from_the_specs(site):
    assert B.slots_apart_text(site, "grpo_batch_std", "grpo").startswith(
        "Batch-std GRPO differs from GRPO in one of the eight slots, the advantage (modified): whatever differs")
    assert B.slots_apart_text(site, "sapo", "grpo").startswith(
        "SAPO differs from GRPO in two of the eight slots, the clip (modified) and the KL penalty (removed): a "
        "difference between their runs can come from either of them")


def test_lite_ppo_is_named_for_its_advantage_not_for_the_batch_std_spec(repo_root):
    """Lite PPO (Liu et al., arXiv 2508.08221) is the group's mean and the batch's std in the advantage AND one mean
    over every token in the loss; the batch-std spec keeps GRPO's per-response mean, so every sentence that names
    Lite PPO says it means its advantage."""
    from unipo_build.core.registry import REGISTRY
    from unipo_build.core.specs import load_specs

    spec = load_specs(repo_root / "data" / "algorithms")["grpo_batch_std"]
    assert spec.components["aggregation"].kind != "token_mean"
    texts = {"the spec": " ".join([spec.paper.note, spec.changed, spec.summary]),
             "the chapter": (repo_root / "docs/course/algorithms/beyond_grpo.md").read_text(encoding="utf-8"),
             "the kind's terms": " ".join(t.tooltip for t in REGISTRY["advantage"]["group_mean_batch_std"].terms)}
    named = 0
    for where, text in texts.items():
        for sentence in re.split(r"(?<=[.;])\s", " ".join(text.split())):
            if "Lite PPO" in sentence:
                named += 1
                assert "advantage" in sentence or "in the loss" in sentence, (where, sentence)
    assert named >= 3


# ---------------------------------------------------------------------------
# SAPO's gate
# ---------------------------------------------------------------------------

def test_the_gate_worked_by_hand(site):
    kind, params = CF.clip_of(site, "sapo")
    assert (params["tau_pos"], params["tau_neg"]) == (1.0, 1.05)
    sig = 1 / (1 + math.exp(-0.5))
    # ratio 1.5, positive advantage: weight 4 s (1 - s) rho; its share of the unclipped weight rho is 4 s (1 - s)
    assert B.kept_share(kind, params, 1.5, 1.0) == pytest.approx(4 * sig * (1 - sig))
    # half the weight where 4 s (1 - s) = 1/2: s = (1 + sqrt(1/2)) / 2, tau (rho - 1) = log(s / (1 - s))
    s_half = (1 + math.sqrt(0.5)) / 2
    assert B.half_ratio(kind, params, +1) == pytest.approx(1 + math.log(s_half / (1 - s_half)), abs=1e-6)
    # a negative advantage (tau 1.05): at a ratio near 0 the share is 4 s (1 - s) with s = sigmoid(-1.05) > 1/2 kept
    assert B.half_ratio(kind, params, -1) is None
    grpo_kind, grpo_params = CF.clip_of(site, "grpo")
    assert B.kept_share(grpo_kind, grpo_params, 1.5, 1.0) == 0.0 and B.kept_share(grpo_kind, grpo_params, 1.1, 1.0) == 1.0


def test_the_gate_sentence_counts_the_tokens_grpo_silences(site):
    run, tokens = B.weigh(site, "sapo", "grpo")
    silenced = [t for t in tokens if t.second == 0.0]
    # by hand from the token files: a trained token with a non-zero advantage past [0.8, 1.2] on its pushing side
    by_hand = total = 0
    for path in runlog.token_paths(RUNS / "sapo"):  # tokens/step_N.json.gz: the shipped runs are published
        for group in json.loads(runlog.read_log_bytes(path))["prompts"]:
            for response in group["responses"]:
                tk = response.get("tokens")
                for a, rho, m in zip(tk["advantage"], tk["ratio"], tk["mask"]) if tk else ():
                    if m and a != 0:
                        total += 1
                        by_hand += (a > 0 and rho > 1.2) or (a < 0 and rho < 0.8)
    assert (len(tokens), len(silenced)) == (total, by_hand)
    text = B.gate_weight_text(site, "sapo", "grpo")
    assert f"{fmt_num(total)} trained tokens had a non-zero advantage. {fmt_num(by_hand)} of them (" in text
    largest = max(max(s["metrics"]["ratio/max"] for s in steps(r)) for r in ("sapo", "sapo-s1", "sapo-s2"))
    assert f"runs logged was {fmt_num(largest, 3)} (" in text


# ---------------------------------------------------------------------------
# GMPO's clip
# ---------------------------------------------------------------------------

def test_the_clip_shares_equal_the_steps_files(site):
    text = B.log_clip_text(site, "gmpo", "grpo")
    later = [s["metrics"] for s in steps("gmpo") if not s["first_in_rollout"]]
    held = float(np.mean([m["clip/frac_high"] + m["clip/frac_low"] for m in later]))
    assert f"(seeds: {fmt_share(held, 2)}, " in text
    # three verdicts (the share held, the largest ratio, the smallest), each judged across the shipped seeds
    n = len(B.finished_runs(site.catalog.seeds_of("gmpo"))[0])
    assert n == len(B.finished_runs(site.catalog.seeds_of("grpo"))[0]) >= 3
    seeds = f"{count_word(n)} seeds each"
    assert text.count(f"({seeds}, two-sided permutation p = ") + text.count(
        f"(the test cannot reach p \u2264 0.05 with {seeds})") == 3
    assert "gained" not in text
    # a direction is stated only where the design can reach p <= 0.05 and the test did
    if J.min_p(n, n) > J.ALPHA:
        assert "held fewer" not in text
    else:
        assert ("held fewer" in text) == bool(re.search(r"held fewer: the difference, [^;]*? is clear \(", text))
    assert "GMPO's clip (ratios 0.67 to 1.49)" in text and "GRPO's (0.8 to 1.2)" in text
    # by default against the spec one slot away
    assert "GRPO \u2212 KL's (0.8 to 1.2)" in B.log_clip_text(site, "gmpo")


# ---------------------------------------------------------------------------
# The batch's std
# ---------------------------------------------------------------------------

def test_every_group_under_grpo_has_the_z_scores_scale_and_the_batch_std_one_its_own(site):
    grpo = B.group_scales(site.run("grpo"))
    assert grpo and all(g.rms == pytest.approx(math.sqrt((g.size - 1) / g.size), abs=1e-4) for g in grpo)
    batch = B.group_scales(site.run("grpo_batch_std"))
    for g in batch:
        p = g.right / g.size
        # rewards 1/0: the centred rewards' root mean square is sqrt(p (1 - p)), divided by the batch's divisor
        assert g.rms == pytest.approx(math.sqrt(p * (1 - p)) / g.divisor, rel=1e-4)
    text = B.advantage_scale_text(site, "grpo_batch_std", "grpo")
    near = [g.rms for g in batch if B.near_edge(g)]
    mid = [g.rms for g in batch if not B.near_edge(g)]
    assert f"{fmt_num(float(np.mean(near)), 3)} on average in the {len(near)} groups" in text
    assert f"{fmt_num(float(np.mean(near)) / float(np.mean(mid)), 2)} times the advantage scale" in text
    assert "root mean square of 0.935 every one" in text


# ---------------------------------------------------------------------------
# A build without the runs
# ---------------------------------------------------------------------------

def test_without_the_runs_each_macro_gives_one_line(tmp_path):
    grpo = FixtureRun(run_id="grpo", algorithm="grpo", seed=0)
    site = Site(root=fixture_project(tmp_path / "project"), runs_where=write_fixture_runs(tmp_path / "runs", [grpo]))
    for fn, name in ((B.gate_weight_text, "sapo"), (B.log_clip_text, "gmpo"),
                     (B.advantage_scale_text, "grpo_batch_std")):
        text = fn(site, name, "grpo")
        assert text.startswith(f"There is no finished '{name}' run in this build, so ") and text.count(".") == 1, text
    assert "There is no finished 'grpo_batch_std' run" in html.unescape(
        B.advantage_scale_html(site, "grpo_batch_std", "grpo"))
    assert "There is no finished 'gmpo' run" in html.unescape(B.gains_dots_html(site, ["grpo", "gmpo"]))
    # the baseline one slot away is found from the specs, and its missing runs are named
    assert B.baseline_gains_text(site, "sapo") == (
        "There is no finished 'sapo' and 'ladder_no_kl' run in this build, so their held-out gains cannot be measured "
        "here.")
    assert B.baseline_text(site, "sapo").endswith("This build has no finished run of GRPO \u2212 KL.")


# ---------------------------------------------------------------------------
# The built chapter and its reference pages
# ---------------------------------------------------------------------------

def test_the_built_chapter_shows_each_sentence_computed_from_the_runs(built_site, site):
    page = html.unescape((built_site / "course" / "algorithms" / "beyond_grpo" / "index.html").read_text(encoding="utf-8"))
    texts = [B.gate_weight_text(site, "sapo", "grpo"), B.log_clip_text(site, "gmpo"),
             B.advantage_scale_text(site, "grpo_batch_std", "grpo")]
    texts += [B.baseline_gains_text(site, name) for name in VARIANTS]
    texts += [B.baseline_text(site, name) for name in VARIANTS]
    texts += [B.slots_apart_text(site, name, "grpo") for name in VARIANTS]
    for text in texts:
        assert text in page, text[:80]
    assert page.count("unipo-beyond-gains") == 1 and page.count("unipo-beyond-scale") == 1
    assert 'href="../../../reference/judging/"' in page  # the verdicts' procedure, linked
    for name in ("gmpo", "grpo_batch_std"):
        ref = (built_site / "reference" / "algorithms" / name / "index.html").read_text(encoding="utf-8")
        assert "beyond_grpo" in ref
