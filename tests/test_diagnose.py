"""The practitioners' questions answered from a run (unipo_build.core.diagnose, issue 30 item 1): each diagnosis fires
on a log built to trigger it, stays "fine" on a healthy one, says what is missing where the log lacks it, and
raises no false alarm on any shipped run (data/runs, data/runs-gpu)."""

from __future__ import annotations

from pathlib import Path

import json
import re
import numpy as np
import pytest

from helpers_runlog import make_detail, make_header, write_metric_run
from unipo_build.core.diagnose import DIAGNOSES, FINE, LOOK, UNMEASURABLE, diagnose
from unipo_build.core import runlog
from unipo_build.core.runlog import RunWriter
from unipo_build.core.schema import EvalRecord, StepRecord

ROOT = Path(__file__).resolve().parents[1]
KEYS = ["loss_zero", "clip_zero", "zero_grad_with_std", "reward_not_rising", "entropy_trend", "sampler_learner",
        "length_moving", "which_side"]


def healthy(f: float, rng) -> dict:
    """A run that learns: reward rises, the gradient moves, entropy sharpens, little clipping, no truncation, a
    sampler in lower precision (the gpu runs' gaps: 5e-4 nats on average, 0.2 at most)."""
    return {"reward/mean": 0.3 + 0.2 * f + 0.01 * rng.standard_normal(), "reward/std": 0.3, "grad_norm": 0.5,
            "entropy/mean": 1.0 - 0.4 * f, "clip/frac_low": 0.01, "clip/frac_high": 0.005, "ratio/min": 1.0,
            "ratio/max": 1.0, "length/mean": 30 + 10 * f, "length/truncated_frac": 0.01,
            "groups/zero_variance_frac": 0.2, "mismatch/logp_abs_mean": 5e-4, "mismatch/logp_abs_max": 0.2}


def run_of(tmp_path: Path, name: str = "run", change=None, algorithm: str = "grpo", **kwargs):
    def metrics(f, rng):
        values = healthy(f, rng)
        values.update((change or (lambda f, v: {}))(f, values))
        return values

    return {d.key: d for d in diagnose(write_metric_run(tmp_path / name, algorithm, metrics=metrics, **kwargs))}


def test_one_diagnosis_per_question_all_fine_on_a_healthy_run(tmp_path):
    found = run_of(tmp_path)
    assert list(found) == KEYS == [fn.__name__ for fn in DIAGNOSES]
    assert {k: d.verdict for k, d in found.items()} == dict.fromkeys(KEYS, FINE)
    for d in found.values():
        assert d.figure and d.chapter.path.startswith("course/") and (ROOT / "docs" / d.chapter.path).is_file()
    assert "the gradient norm says it trains" in found["loss_zero"].figure
    assert found["clip_zero"].figure.startswith("tokens were clipped on 80 of 80 updates")


def test_a_zero_gradient_is_not_training(tmp_path):
    d = run_of(tmp_path, change=lambda f, v: {"grad_norm": 0.0})["loss_zero"]
    assert d.verdict == LOOK and "gradient norm 0 on 80 of 80 updates" in d.figure and d.steps == [0, 1, 2, 3, 4]


def test_clip_ratio_zero(tmp_path):
    zero = lambda f, v: {"clip/frac_low": 0.0, "clip/frac_high": 0.0}  # noqa: E731
    d = run_of(tmp_path, "two", change=zero)["clip_zero"]
    assert d.verdict == LOOK and "a rollout is trained by 2 updates on average" in d.figure
    assert "at the later updates the ratio is exactly 1 too (ratio/min and ratio/max of 40 later updates)" in d.figure
    assert d.steps == [1, 3, 5, 7, 9]  # the second update of each rollout, where the ratio should have moved
    # the ratio moved, inside PPO's range [0.8, 1.2]: nothing reached a bound, so nothing could be clipped
    moved = lambda f, v: {**zero(f, v), "ratio/min": 0.9, "ratio/max": 1.1}  # noqa: E731
    d = run_of(tmp_path, "inside", change=moved)["clip_zero"]
    assert d.verdict == FINE and d.figure.endswith("at the later updates the ratio stayed between 0.9 and 1.1 (ratio/min "
                                                   "and ratio/max of 40 later updates), inside PPO's clip, the ratio's "
                                                   "range [0.8, 1.2]: no token reached a bound, so none could be clipped")
    # no ratio logged: PPO's bound is near 1, which several updates per rollout should reach
    d = run_of(tmp_path, "blind", change=lambda f, v: {**zero(f, v), "ratio/min": None, "ratio/max": None})["clip_zero"]
    assert d.verdict == LOOK and "too small to move it past PPO's clip, the ratio's range [0.8, 1.2]" in d.figure
    # one update per rollout: the ratio is exactly 1, so a clip ratio of 0 is what it must be
    d = run_of(tmp_path, "one", change=zero, steps_per_rollout=1)["clip_zero"]
    assert d.verdict == FINE and "one update per rollout" in d.figure
    # an algorithm without a clip
    assert run_of(tmp_path, "reinforce", change=zero, algorithm="reinforce")["clip_zero"].verdict == FINE


def test_reward_std_without_a_gradient(tmp_path):
    late = lambda f, v: {"grad_norm": 0.0, "groups/zero_variance_frac": 1.0} if f > 0.5 else {}  # noqa: E731
    found = run_of(tmp_path, change=late)
    d = found["zero_grad_with_std"]
    assert d.verdict == LOOK and d.figure.startswith("40 of 80 updates have reward std > 0 and gradient norm 0")
    assert "on them every group has zero reward variance" in d.figure and d.steps == [40, 41, 42, 43, 44]
    assert found["loss_zero"].verdict == FINE  # most updates still move


def test_reward_that_does_not_rise(tmp_path):
    flat = lambda f, v: {"reward/mean": 0.3 + 0.05 * np.sin(40 * f)}  # noqa: E731
    d = run_of(tmp_path, "flat", change=flat)["reward_not_rising"]
    assert d.verdict == LOOK and "no held-out evaluation logged" in d.figure
    # with held-out evaluations, they decide: the same problems right at the start and the end
    bits = "0110" * 25
    evals = [EvalRecord(step=0, phase="start", n=100, accuracy_greedy=0.5, temperature=1.0, problems="eval rows 1-100",
                        correct_greedy=bits),
             EvalRecord(step=0, phase="end", n=100, accuracy_greedy=0.5, temperature=1.0, problems="eval rows 1-100",
                        correct_greedy=bits)]
    d = run_of(tmp_path, "evals", evals=evals)["reward_not_rising"]  # the training reward rises; held-out does not
    assert d.verdict == LOOK and d.figure.startswith("held-out greedy accuracy 50.0% \u2192 50.0% (0.0 points")
    few = run_of(tmp_path, "few", rollouts=5)["reward_not_rising"]
    assert few.verdict == UNMEASURABLE and "under 20 logged training rewards" in few.verdict_text


def test_entropy_collapsing_or_exploding(tmp_path):
    d = run_of(tmp_path, "collapse", change=lambda f, v: {"entropy/mean": 1.0 - 0.98 * f})["entropy_trend"]
    assert d.verdict == LOOK and "collapsed below 0.2 of the start" in d.figure and d.steps
    d = run_of(tmp_path, "explode", change=lambda f, v: {"entropy/mean": 1.0 + 3 * f})["entropy_trend"]
    assert d.verdict == LOOK and "more than 2\u00d7 the start" in d.figure


def test_sampler_and_learner_disagree(tmp_path):
    """From the sampler's own log-probs in the token files (a vLLM-style sampler 0.05 nats off on each of the 56
    tokens of 4 steps): the mean gap 0.05 is above 0.01, and the sampler KL, k3 = exp(0.05) - 1 - 0.05 = 0.001271 per
    token, above 0.001; no token is beyond a factor 2 (exp(0.05) = 1.05)."""
    run = tmp_path / "tokens"
    writer = RunWriter(run, make_header())
    for s in range(4):
        detail = make_detail(s)
        for p in detail.prompts:
            for r in p.responses:
                r.tokens.sample_logp = [x - 0.05 for x in r.tokens.old_logp]
        writer.step_detail(detail)
        writer.step(StepRecord(step=s, rollout=s // 2, first_in_rollout=s % 2 == 0, has_tokens=True,
                               metrics={"objective": 0.0}))
    writer.finish()
    d = {x.key: x for x in diagnose(run)}["sampler_learner"]
    assert d.verdict == LOOK and d.figure.startswith("over 56 tokens of 4 steps' token files, mean gap 0.05 nats, 99.9% "
                                                     "of tokens within 0.05 (largest 0.05), no token beyond a factor 2 in "
                                                     "probability, sampler KL 0.00127 nats per token: the mean gap is "
                                                     "above 0.01, and the sampler KL is above 0.001")
    assert d.steps == [0, 1, 2, 3]


def test_length_moved_by_truncation(tmp_path):
    d = run_of(tmp_path, change=lambda f, v: {"length/truncated_frac": 0.4 * f, "length/mean": 30 + 60 * f}
               )["length_moving"]
    assert d.verdict == LOOK and "the budget shapes length" in d.figure and d.steps
    d = run_of(tmp_path, "untracked", change=lambda f, v: {"length/truncated_frac": None})["length_moving"]
    assert d.verdict == UNMEASURABLE and d.lacks.startswith("no length/truncated_frac")


def test_which_side_clipped(tmp_path):
    d = run_of(tmp_path, change=lambda f, v: {"clip/frac_low": 0.3})["which_side"]
    assert d.verdict == LOOK and "the low side counts over 20% of tokens, a wall rather than a guard rail" in d.figure
    assert d.figure.startswith("low side (A < 0, ratio below 0.8) 30.0% of tokens, high side (A > 0, ratio above 1.2)")


def test_a_log_without_the_metrics_says_what_it_lacks(tmp_path):
    run = write_metric_run(tmp_path / "bare", "grpo", metrics=lambda f, rng: {"reward/mean": 0.3})
    found = {d.key: d for d in diagnose(run)}
    lacking = {k: d.lacks for k, d in found.items() if d.verdict == UNMEASURABLE}
    assert set(lacking) == {"loss_zero", "clip_zero", "zero_grad_with_std", "entropy_trend", "sampler_learner",
                            "length_moving", "which_side"}
    assert lacking["loss_zero"].startswith("no grad_norm") and lacking["entropy_trend"] == "no entropy/mean over two updates"
    assert all(d.verdict_text == f"not measurable: {d.lacks}" for k, d in found.items() if k in lacking)


@pytest.mark.parametrize("run", sorted(p for s in ("runs", "runs-gpu") for p in (ROOT / "data" / s).iterdir()
                                       if (p / "header.json").is_file()), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_no_shipped_run_raises_a_false_alarm(run):
    """The shipped runs learn (their held-out accuracy rises), clip little and truncate almost nothing: no
    diagnosis may say "look here" on them, and each question is answered from their logs. The one true alarm:
    a run sampled by a stale policy on purpose (hyperparameters.sampler_lag > 0) has a sampler that is not its
    learner, and the sampler/learner question must say so; a synchronous run must not."""
    found = diagnose(run)
    stale = (json.loads((run / "header.json").read_text()).get("hyperparameters") or {}).get("sampler_lag", 0) > 0
    alarms = [(d.key, d.figure) for d in found if d.verdict == LOOK]
    assert [key for key, _ in alarms] == (["sampler_learner"] if stale else []), alarms
    # a run whose one process samples and trains in float32 keeps no sampler log-prob: that question has no answer
    sampled = "mismatch/logp_abs_mean" in runlog.read_log_text(run / runlog.STEPS).split("\n", 1)[0]
    assert [d.key for d in found if d.verdict == UNMEASURABLE] == ([] if sampled else ["sampler_learner"])


def test_sampler_and_learner_from_the_trainers_mismatch_metric(tmp_path):
    d = run_of(tmp_path, "ok")["sampler_learner"]
    assert d.verdict == FINE and d.figure == (
        "mean |sampler \u2212 learner| log-prob gap (mismatch/logp_abs_mean) 5 \u00d7 10\u207b\u2074 nats over 80 "
        "updates, at most 5 \u00d7 10\u207b\u2074; each update's largest token gap (mismatch/logp_abs_max) 0.2 nats "
        "in the median update (a probability ratio of 1.22), 0.2 at most: numerical noise (mean gap under 0.01 nats, "
        "the median update's largest gap within a factor 10)")
    d = run_of(tmp_path, "off", change=lambda f, v: {"mismatch/logp_abs_mean": 0.05 if f > 0.9 else 5e-4}
               )["sampler_learner"]
    assert d.verdict == LOOK and "the mean gap is above 0.01 on 8 updates" in d.figure
    assert d.steps == [72, 73, 74, 75, 76]


def test_a_zero_gradient_with_mixed_groups_points_at_the_mask(tmp_path):
    late = lambda f, v: {"grad_norm": 0.0, "groups/zero_variance_frac": 0.25} if f > 0.5 else {}  # noqa: E731
    d = run_of(tmp_path, change=late)["zero_grad_with_std"]
    assert d.verdict == LOOK and "only 25.0% of the groups have zero reward variance" in d.figure
    assert "the loss kept no token of the others" in d.figure


def test_the_course_run_card_shows_the_same_cards():
    """A chapter's run card carries the run's diagnosis cards (folded), the same ones unipo explain shows,
    each chapter linked into the course."""
    import re

    from site_build import bound_macros
    from unipo_build.core.runs import catalog_of

    shipped = ROOT / "data" / "runs"
    run = catalog_of(shipped).get("grpo")
    html = bound_macros(shipped)["run_card"]("grpo")
    cards = re.findall(r'unipo-diagnosis" data-key="(\w+)" data-verdict="([^"]+)"', html)
    assert cards == [(d.key, d.verdict) for d in diagnose(run.reader)]
    assert '<details class="unipo-fold unipo-run-diagnoses"><summary><span class="unipo-label">Diagnosis</span> Nothing to look ' \
           "at on the 8 questions" in html
    # a page's own URL is unknown outside a build: the chapter links are relative to the site's root
    assert re.search(r'<a href="[./]*course/[a-z_/]+/">', html)


# ---------------------------------------------------------------------------
# Issue 47 item 4: no non-zero share reads as 0, the site's symbols, chapters named by their pages' titles
# ---------------------------------------------------------------------------

def test_a_small_share_never_reads_as_zero(tmp_path):
    """Hand-worked: 0.0003 of tokens clipped low on every update and none high: the mean clip fraction is
    0.0003 = 0.03% (two significant digits below 1%), which fmt_pct(0.0003) printed as '0.0%'; 0.00004 is under
    0.01%. The last tenth's truncated share 0.0004 = 0.04%, not '0.0%'."""
    d = run_of(tmp_path, "tiny", change=lambda f, v: {"clip/frac_low": 0.0003, "clip/frac_high": 0.0,
                                                       "length/truncated_frac": 0.0004})
    assert d["clip_zero"].figure == "tokens were clipped on 80 of 80 updates (mean clip fraction 0.03%)"
    assert d["which_side"].figure.startswith("low side (A < 0, ratio below 0.8) 0.03% of tokens, high side (A > 0, "
                                             "ratio above 1.2) 0.0% of tokens over the run; last tenth 0.03% and 0.0%")
    assert "responses cut at the budget 0.04% \u2192 0.04%: under 5% cut" in d["length_moving"].figure
    d = run_of(tmp_path, "tinier", change=lambda f, v: {"clip/frac_low": 0.00004, "clip/frac_high": 0.0})
    assert d["clip_zero"].figure.endswith("(mean clip fraction under 0.01%)")
    for found in (d, run_of(tmp_path, "healthy")):
        for x in found.values():
            text = x.figure + (x.lacks or "")
            assert "->" not in text and "+/-" not in text and not re.search(r"\b\d+x\b", text), text


def test_without_the_samplers_log_probs_the_sampler_question_is_not_measurable(tmp_path):
    """Issue 43 f: at a rollout's first update the ratio is the learner's log-prob over its own old log-prob, 1 by
    construction whatever the sampler did. A log with neither the sampler's log-probs nor a mismatch metric cannot
    tell whether the two disagree: it says so, in a reader's words, and never 'fine' from that ratio (nor 'look
    here' from a first-update ratio off 1)."""
    blind = {"mismatch/logp_abs_mean": None, "mismatch/logp_abs_max": None}
    for name, ratio in (("exact", 1.0), ("off", 1.05)):
        d = run_of(tmp_path, name, change=lambda f, v: {**blind, "ratio/max": ratio})["sampler_learner"]
        assert d.verdict == UNMEASURABLE and d.steps == []
        assert d.lacks == ("the log holds no log-prob of the sampler's (no sample_logp in the token files, no mismatch "
                           "metric such as mismatch/logp_abs_mean): the ratio at a rollout's first update compares the "
                           "learner with itself, its old log-probs being its own, so it is 1 whatever the sampler did "
                           "and cannot show a disagreement")


def test_each_chapter_is_named_by_its_pages_title():
    """A diagnosis links to its chapter by the title the page itself shows (its level-one heading), so a link never
    reads as another page ('Taught in From the policy gradient to a loss' led to 'From the reward to the surrogate')."""
    from unipo_build.core.diagnose import CHAPTERS, page_title

    for chapter in CHAPTERS.values():
        heading = next(line[2:].strip() for line in (ROOT / "docs" / chapter.path).read_text().splitlines()
                       if line.startswith("# "))
        assert chapter.title == heading
    assert CHAPTERS["derivation"].title == "From the reward to the surrogate"
    assert page_title("course/no-such-page.md") == "docs/course/no-such-page.md"


# ---------------------------------------------------------------------------
# Issue 44 item 3: the diagnoses read the run's kinds (every clip kind and filter kind) and its reward
# ---------------------------------------------------------------------------

from unipo_build.core import objective as O  # noqa: E402
from unipo_build.core.registry import REGISTRY  # noqa: E402
from unipo_build.core.specs import ResolvedComponent  # noqa: E402

#: Every clip kind, with the parameters a run of it logs (CISPO twice: the course's cap 1.28, and 5, ScaleRL's and
#: TRL's recommended one), and every filter kind (masking truncations with and without the normaliser counting them).
CLIPS = {"none": {}, "symmetric": {"eps": 0.2}, "asymmetric": {"eps_low": 0.2, "eps_high": 0.28},
         "dual_clip": {"eps_low": 0.2, "eps_high": 0.2, "c": 3.0}, "cispo": {"eps_high": 0.28},
         "cispo-cap5": {"eps_high": 4.0}, "sapo": {"tau_pos": 1.0, "tau_neg": 1.05},
         "geo_mean": {"eps_low": 0.4, "eps_high": 0.4}, "dppo_mask": {"delta_low": 0.2, "delta_high": 0.2}}
FILTERS = {"none": {}, "dynamic_sampling": {"max_rounds": 10}, "mask_truncated": {"count_masked": True},
           "mask_truncated-token": {"count_masked": False}}


def config_of(clip: str, filter_: str):
    """GRPO's resolved configuration with another clip and filter kind (the token mean where masked truncations leave
    the normaliser, as TRL's bnpo, dapo and cispo losses do)."""
    from helpers_runlog import SPEC_DIR
    from unipo_build.core.specs import load_spec, resolve

    cfg = resolve(load_spec(SPEC_DIR / "grpo.yaml"), max_new_tokens=64)
    components = dict(cfg.components)
    components["clip"] = ResolvedComponent(kind=clip.split("-")[0], params=CLIPS[clip])
    components["filter"] = ResolvedComponent(kind=filter_.split("-")[0], params=FILTERS[filter_])
    if filter_.endswith("-token") and clip != "geo_mean":
        components["aggregation"] = ResolvedComponent(kind="token_mean", params={})
    name = f"test_{clip}_{filter_}".replace("-", "_")
    return cfg.model_copy(update={"id": name, "components": components})


def test_the_kinds_under_test_are_every_registered_clip_and_filter_kind():
    assert {c.split("-")[0] for c in CLIPS} == set(REGISTRY["clip"])
    assert {f.split("-")[0] for f in FILTERS} == set(REGISTRY["filter"])


def trouble(f: float, v: dict) -> dict:
    """A run in trouble on four questions at once in its second half: most responses cut at the budget, entropy
    spreading, a zero gradient although half its groups have mixed rewards, a quarter of the tokens clipped high."""
    if f <= 0.5:
        return {}
    return {"length/truncated_frac": 0.4, "entropy/mean": 3.0, "grad_norm": 0.0, "groups/zero_variance_frac": 0.5,
            "clip/frac_high": 0.25}


@pytest.mark.parametrize("filter_", list(FILTERS))
@pytest.mark.parametrize("clip", list(CLIPS))
def test_every_diagnosis_on_every_clip_and_filter_kind(tmp_path, clip, filter_):
    """Each of the eight questions on a log of each clip kind and filter kind: all fine on a healthy log, and where
    one looks, in the terms of the run's own objective: the clip kind's bound (objective.clip_rule) in numbers, never
    'ε'; a kind that clips no token says so in every clipping question; the length question says what the filter does
    with a truncated answer and quotes the header's reward (no token files here to read what one scored)."""
    cfg = config_of(clip, filter_)
    rule = O.clip_rule(cfg)
    kind = cfg.component("clip")

    def found(name, change=None):
        def metrics(f, rng):
            values = healthy(f, rng)
            values.update((change or (lambda f, v: {}))(f, values))
            return values
        run = write_metric_run(tmp_path / name, "grpo", config=cfg, rollouts=20, metrics=metrics)
        return {d.key: d for d in diagnose(run)}

    ok = found("healthy")
    assert {k: d.verdict for k, d in ok.items()} == dict.fromkeys(KEYS, FINE), {k: d.figure for k, d in ok.items()}
    for d in ok.values():
        assert "\u03b5" not in d.figure and "1 if its final answer" not in d.figure
    if rule is None:  # no clip, SAPO's gate: nothing is counted, by construction, on every clipping question
        for key in ("clip_zero", "which_side"):
            assert ok[key].figure.startswith("this objective clips no token") and kind.summary in ok[key].figure
    else:
        sides = [w for w, at in ((rule.low_side, rule.low), (rule.high_side, rule.high)) if at is not None]
        assert all(f"side ({w})" in ok["which_side"].figure for w in sides), ok["which_side"].figure
        if rule.low is None:  # CISPO without a lower bound: the one fraction it logs is its high side's
            assert ok["which_side"].figure.endswith(f"{rule.name} has no low side: {rule.bound}")

    bad = found("trouble", trouble)
    length = bad["length_moving"]
    assert length.verdict == LOOK and "a truncated answer is scored without its end by this run's reward " \
                                      "(\u201c1 if the final answer is right\u201d)" in length.figure
    if O.masks_responses(cfg):
        counted = "; the normaliser still counts them" if filter_ == "mask_truncated" else ", and out of the normaliser"
        assert f"takes a truncated answer's tokens out of the loss (weight 0{counted})" in length.figure
        assert "weighs by the aggregation" not in length.figure and "as any answer's do" not in length.figure
    else:
        assert f"its tokens weigh in the loss as any answer's do ({cfg.component('aggregation').label})" in length.figure
    zero = bad["zero_grad_with_std"]
    assert zero.verdict == LOOK and (("takes truncated answers out of the loss" in zero.figure) == O.masks_responses(cfg))
    entropy = bad["entropy_trend"]
    assert entropy.verdict == LOOK and (rule.bound in entropy.figure if rule is not None and rule.high is not None
                                        else "this objective clips no token" in entropy.figure)
    side = bad["which_side"]
    if rule is None:
        assert side.verdict == FINE
    else:
        assert side.verdict == LOOK and "the high side counts over 20% of tokens" in side.figure
        assert ("a wall rather than a guard rail" in side.figure) == rule.silences
        assert ("their gradient, only scaled down to the bound" in side.figure) == (not rule.silences)

    # no token clipped over two updates per rollout, the ratio exactly 1 at the second: for a clipping kind the weights
    # do not move; for one that clips nothing, 0 is what it must be
    still = found("still", lambda f, v: {"clip/frac_low": 0.0, "clip/frac_high": 0.0})["clip_zero"]
    assert still.verdict == (FINE if rule is None else LOOK)
    if rule is not None:
        assert "the ratio is exactly 1 too" in still.figure


def test_a_cispo_cap_of_5_that_no_ratio_reached_is_no_alarm(tmp_path):
    """Issue 44's false alarm: a CISPO run with a cap of 5 whose ratio reached 2.23 counts no capped token, which is
    what a cap that far from 1 does (it guards against rare large ratios); it is not told 'a learning rate too small
    to move it past 1 ± ε'. Without any ratio in its log, whether a token came near the cap cannot be told: a bound
    that far is met by rare tokens only."""
    cfg = config_of("cispo-cap5", "none")
    zero = {"clip/frac_low": None, "clip/frac_high": 0.0}

    def run(name, change):
        metrics = lambda f, rng: {**healthy(f, rng), **zero, **change}  # noqa: E731
        return {d.key: d for d in diagnose(write_metric_run(tmp_path / name, "grpo", config=cfg, metrics=metrics))}
    found = run("reached", {"ratio/min": 0.61, "ratio/max": 2.23})
    d = found["clip_zero"]
    assert d.verdict == FINE and d.figure == (
        "no token clipped in 80 updates although a rollout is trained by 2 updates on average; at the later updates the "
        "ratio stayed between 0.61 and 2.23 (ratio/min and ratio/max of 40 later updates), inside CISPO's cap on the "
        "importance weight, the weight's cap at 5 (no lower bound): no token reached a bound, so none could be clipped")
    side = found["which_side"]  # the one fraction CISPO logs (TRL's cispo_clip_ratio) is its high side's
    assert side.verdict == FINE and side.figure.startswith("high side (A > 0, ratio above the cap 5) 0.0% of tokens")
    blind = run("blind", {"ratio/min": None, "ratio/max": None})["clip_zero"]
    assert blind.verdict == UNMEASURABLE and blind.lacks == (
        "no ratio/min, ratio/max or token ratios at the later updates: whether any token came near CISPO's cap on the "
        "importance weight, the weight's cap at 5 (no lower bound), cannot be told, and a bound that far from 1 is "
        "reached by rare tokens only")
    # PPO's single clip fraction does not say which side; CISPO's one side does
    ppo = {d.key: d for d in diagnose(write_metric_run(
        tmp_path / "ppo", "grpo", metrics=lambda f, rng: {**healthy(f, rng), "clip/frac_low": None}))}["which_side"]
    assert ppo.verdict == UNMEASURABLE and ppo.lacks == ("only clip/frac_high is logged of PPO's clip's two sides (a "
                                                         "single clip fraction does not say which side)")


def test_the_length_question_reads_what_truncated_answers_scored(tmp_path):
    """A reward that is not 0/1: the token files show what the truncated answers got (here 0.35 each against 0.75 for
    the finished ones, hand-set), and the length question says that instead of 'a truncated answer scores as
    wrong'."""
    details = {}
    for step in (0, 10, 20):
        detail = make_detail(step)
        for p in detail.prompts:
            for r in p.responses:
                r.truncated = r.length >= 4
                r.reward = 0.35 if r.truncated else 0.75
        details[step] = detail
    cfg = config_of("symmetric", "mask_truncated")
    run = write_metric_run(tmp_path / "run", "grpo", config=cfg, details=details,
                           metrics=lambda f, rng: {**healthy(f, rng), "length/truncated_frac": 0.5})
    d = {x.key: x for x in diagnose(run)}["length_moving"]
    # make_detail's lengths 3, 4, 2, 5: two of four truncated per step, three steps
    assert d.verdict == LOOK and ("the budget shapes length (its 6 truncated answers in the token files scored 0.35 on "
                                  "average, its 6 finished ones 0.75; its filter (mask truncated responses) takes a "
                                  "truncated answer's tokens out of the loss") in d.figure
    assert "scores as wrong" not in d.figure


def test_the_mismatch_is_judged_on_its_tail(tmp_path):
    """Issue 43's missing point: practitioners watch the tail, not only the mean. A mean gap of 5e-4 nats (the gpu
    runs') with every update's worst token 3 nats off (a factor 20) looks; so does a sampler KL of 0.002 (prime-rl's
    mismatch_kl, read by its own name), and TRL's sampling_logp_difference metrics are read as the gap."""
    tail = run_of(tmp_path, "tail", change=lambda f, v: {"mismatch/logp_abs_max": 3.0})["sampler_learner"]
    assert tail.verdict == LOOK and "in most updates some token is over 10 times as likely to one as to the other" \
        in tail.figure and tail.steps == [0, 1, 2, 3, 4]
    blind = {"mismatch/logp_abs_mean": None, "mismatch/logp_abs_max": None}
    kl = run_of(tmp_path, "kl", change=lambda f, v: {**blind, "mismatch_kl/all/mean": 0.002})["sampler_learner"]
    assert kl.verdict == LOOK and kl.figure.startswith("sampler KL (mismatch_kl/all/mean) 0.002 nats per token")
    trl = run_of(tmp_path, "trl", change=lambda f, v: {**blind, "sampling/sampling_logp_difference/mean": 4e-4,
                                                      "sampling/sampling_logp_difference/max": 0.3})["sampler_learner"]
    assert trl.verdict == FINE and trl.figure.startswith(
        "mean |sampler \u2212 learner| log-prob gap (sampling/sampling_logp_difference/mean) 4 \u00d7 10\u207b\u2074 nats")


@pytest.mark.parametrize("name", ["cispo", "sapo", "bnpo", "gaps", "run1"])
def test_trl_runs_are_asked_in_their_own_terms(tmp_path, name):
    """The TRL fixtures (real TRL 1.16 runs with their taps: CISPO with its cap 1.02, SAPO, bnpo, masked truncation,
    a fractional reward of two functions): no clipping question speaks of ε, SAPO's says it clips nothing, CISPO's
    which-side question is answered from its one fraction, and the length question reads what the truncated answers
    scored (their reward is not 0/1) and, with masked truncation, that they weigh 0."""
    from unipo_build.trainers import import_log

    fixtures = ROOT / "tests" / "fixtures" / "trl"
    run = tmp_path / name
    import_log("trl", fixtures / name, run, tap=fixtures / f"{name}-tap")
    found = {d.key: d for d in diagnose(run)}
    for d in found.values():
        assert "\u03b5" not in d.figure + (d.lacks or "") and "scores as wrong" not in d.figure
    assert found["which_side"].verdict != UNMEASURABLE
    if name == "sapo":
        assert found["clip_zero"].figure.startswith("this objective clips no token")
    if name == "cispo":
        assert found["which_side"].figure.startswith("high side (A > 0, ratio above the cap 1.02)")
    length = found["length_moving"]
    assert "truncated answers in the token files scored" in length.figure
    assert ("out of the loss (weight 0" in length.figure) == (name == "gaps")


def test_a_clip_no_kind_expresses_is_named_beside_the_words(tmp_path):
    """TRL's CISPO at its defaults caps the weight at 0.2, below 1, which no kind expresses: the import holds the
    cispo kind's cap of 1.28 in its place and records the gap (issue 44 item 2). The clipping answers are worded from
    the run's components, and say so, naming what the trainer ran."""
    run = write_metric_run(tmp_path / "run", "grpo", config=config_of("cispo", "none"),
                           metrics=lambda f, rng: {**healthy(f, rng), "clip/frac_low": None, "clip/frac_high": 0.45})
    header = json.loads((run / "header.json").read_text())
    header["imported_from"] = {"format": "trl", "path": "x", "gaps": [
        {"setting": "epsilon_high", "value": "0.2 with loss_type 'cispo'", "slot": "clip",
         "nearest": "cispo with eps_high 0.28"}]}
    (run / "header.json").write_text(json.dumps(header))
    found = {d.key: d for d in diagnose(run)}
    said = (" (the trainer ran epsilon_high = 0.2 with loss_type 'cispo', which no kind expresses: these words are the "
            "run's components', cispo with eps_high 0.28)")
    assert found["clip_zero"].figure.endswith(said) and found["which_side"].figure.endswith(said)
    assert found["which_side"].verdict == LOOK and "keep their gradient, only scaled down" in found["which_side"].figure
