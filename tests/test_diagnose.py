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
from unipo_build.core.runlog import RunWriter
from unipo_build.core.schema import EvalRecord, StepRecord

ROOT = Path(__file__).resolve().parents[1]
KEYS = ["loss_zero", "clip_zero", "zero_grad_with_std", "reward_not_rising", "entropy_trend", "sampler_learner",
        "length_moving", "which_side"]


def healthy(f: float, rng) -> dict:
    """A run that learns: reward rises, the gradient moves, entropy sharpens, little clipping, no truncation."""
    return {"reward/mean": 0.3 + 0.2 * f + 0.01 * rng.standard_normal(), "reward/std": 0.3, "grad_norm": 0.5,
            "entropy/mean": 1.0 - 0.4 * f, "clip/frac_low": 0.01, "clip/frac_high": 0.005, "ratio/min": 1.0,
            "ratio/max": 1.0, "length/mean": 30 + 10 * f, "length/truncated_frac": 0.01,
            "groups/zero_variance_frac": 0.2}


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
    assert d.steps == [1, 3, 5, 7, 9]  # the second update of each rollout, where the ratio should have moved
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
    d = run_of(tmp_path, "ratio", change=lambda f, v: {"ratio/max": 1.05})["sampler_learner"]
    assert d.verdict == LOOK and "the learner's log-probs are not the sampler's" in d.figure
    assert d.steps == [0, 2, 4, 6, 8]  # the first update of each rollout
    # from the sampler's own log-probs in the token files (a vLLM-style sampler 0.05 nats off)
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
    assert d.verdict == LOOK and d.figure.startswith("mean |sampler \u2212 learner| log-prob gap 0.05 nats over ")
    assert d.steps == [0, 1, 2, 3]


def test_length_moved_by_truncation(tmp_path):
    d = run_of(tmp_path, change=lambda f, v: {"length/truncated_frac": 0.4 * f, "length/mean": 30 + 60 * f}
               )["length_moving"]
    assert d.verdict == LOOK and "the budget shapes length" in d.figure and d.steps
    d = run_of(tmp_path, "untracked", change=lambda f, v: {"length/truncated_frac": None})["length_moving"]
    assert d.verdict == UNMEASURABLE and d.lacks.startswith("no length/truncated_frac")


def test_which_side_clipped(tmp_path):
    d = run_of(tmp_path, change=lambda f, v: {"clip/frac_low": 0.3})["which_side"]
    assert d.verdict == LOOK and "the low side clips over 20% of tokens" in d.figure
    assert d.figure.startswith("low side (A < 0, ratio below 1 \u2212 \u03b5) 30.0% of tokens, high side")


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
    assert [d.key for d in found if d.verdict == UNMEASURABLE] == []


def test_sampler_and_learner_from_the_trainers_mismatch_metric(tmp_path):
    d = run_of(tmp_path, "ok", change=lambda f, v: {"mismatch/logp_abs_mean": 5e-4})["sampler_learner"]
    assert d.verdict == FINE and d.figure.startswith("mean |sampler \u2212 learner| log-prob gap (mismatch/logp_abs_mean) "
                                                     "5 \u00d7 10\u207b\u2074 nats over 80 updates")
    d = run_of(tmp_path, "off", change=lambda f, v: {"mismatch/logp_abs_mean": 0.05 if f > 0.9 else 5e-4}
               )["sampler_learner"]
    assert d.verdict == LOOK and "above 0.01 on 8 updates" in d.figure and d.steps == [72, 73, 74, 75, 76]


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
    assert d["which_side"].figure.startswith("low side (A < 0, ratio below 1 \u2212 \u03b5) 0.03% of tokens, high "
                                             "side (A > 0, ratio above 1 + \u03b5) 0.0% over the run; last tenth 0.03% and 0.0%")
    assert "responses cut at the budget 0.04% \u2192 0.04%: under 5% cut" in d["length_moving"].figure
    d = run_of(tmp_path, "tinier", change=lambda f, v: {"clip/frac_low": 0.00004, "clip/frac_high": 0.0})
    assert d["clip_zero"].figure.endswith("(mean clip fraction under 0.01%)")
    for found in (d, run_of(tmp_path, "healthy")):
        for x in found.values():
            text = x.figure + (x.lacks or "")
            assert "->" not in text and "+/-" not in text and not re.search(r"\b\d+x\b", text), text


def test_the_first_update_ratio_is_worded_by_its_size(tmp_path):
    """ratio/max = 1 exactly at every rollout's first update: 'exactly 1', not 'within exp(+/-0) of 1'; a ratio of
    1.0001 there: |log 1.0001| = 9.9995e-5, which fmt_num writes to three digits as 1 × 10⁻⁴ (under the 1e-3 alarm)."""
    d = run_of(tmp_path, "exact")["sampler_learner"]
    assert d.verdict == FINE and d.figure.endswith("the ratio is exactly 1")
    d = run_of(tmp_path, "near", change=lambda f, v: {"ratio/max": 1.0001})["sampler_learner"]
    assert d.verdict == FINE and d.figure.endswith("ratio stays within exp(\u00b11 \u00d7 10\u207b\u2074) of 1")


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
