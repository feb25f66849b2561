"""The sections that teach what the logs show: each measurement on hand-worked numbers, and the
moments that open the inspector where the section needs it."""

from __future__ import annotations

import math

import numpy as np
import pytest

from helpers_runlog import CREATED, make_header, write_metric_run
from site_build import bound_macros
from unipo_build.core.moments import find_moments, shared_prefix_push
from unipo_build.core.registry import kind as registry_kind
from unipo_build.core.runlog import RunWriter
from unipo_build.core.schema import (
    EvalRecord,
    GroupSummary,
    PromptGroup,
    Response,
    StepDetail,
    StepRecord,
    TokenArrays,
)
from unipo_build.site.pages.objectives import lessons_clip as LC
from unipo_build.site.pages.objectives import lessons_groups as LG


def tokens(ids, *, advantage, weight, old_logp=None, logp=None, clip=None):
    n = len(ids)
    old = old_logp or [-0.5] * n
    new = logp or old
    return TokenArrays(ids=ids, text=[f"t{i}" for i in ids], logp=new, old_logp=old, advantage=[advantage] * n,
                       ratio=[math.exp(a - b) for a, b in zip(new, old)], clip=clip or [0] * n, weight=[weight] * n,
                       objective=[advantage] * n, mask=[1] * n)


def group(index, rewards, lengths, aggregation="seq_mean_token_mean", shared=2, n_responses=None, **kw):
    """A trained group: answers of ``lengths`` whose first ``shared`` token ids are the same,
    advantages from the GRPO z-score of ``rewards``, weights from the aggregation kind."""
    adv = np.asarray(registry_kind("advantage", "group_zscore").apply(np.array([rewards], dtype=float),
                                                                      {"std_ddof": 1, "eps": 1e-6}))[0]
    n = n_responses or len(rewards)
    mask = np.zeros((len(lengths), max(lengths)))
    for i, L in enumerate(lengths):
        mask[i, :L] = 1
    w = np.asarray(registry_kind("aggregation", aggregation).apply(mask, {"normalizer": 10}))
    responses = []
    for i, (r, L) in enumerate(zip(rewards, lengths)):
        ids = list(range(shared)) + [100 + 10 * i + t for t in range(L - shared)]
        responses.append(Response(index=i, text="x", reward=r, advantage=float(adv[i]), length=L, correct=bool(r),
                                  tokens=tokens(ids, advantage=float(adv[i]), weight=float(w[i, 0]), **kw)))
    return PromptGroup(index=index, prompt="p", responses=responses)


def test_the_push_on_a_shared_opening_cancels_only_with_length_free_weights():
    # rewards 1, 0 -> advantages +-0.7071; lengths 2 and 4, two shared tokens
    grpo = shared_prefix_push(group(0, [1.0, 0.0], [2, 4]))
    # weights 1/(N |o_i|) = 1/4 and 1/8: net per shared token 0.7071/4 - 0.7071/8, two tokens
    a = 1 / math.sqrt(2)
    assert grpo.length == 2
    assert grpo.net == pytest.approx(2 * (a / 4 - a / 8), rel=1e-5)
    assert grpo.total == pytest.approx(2 * (a / 4 + a / 8), rel=1e-5)
    assert grpo.share == pytest.approx(1 / 3, rel=1e-5)
    for aggregation in ("token_mean", "constant_normalizer"):
        push = shared_prefix_push(group(0, [1.0, 0.0], [2, 4], aggregation))
        assert push.length == 2 and abs(push.net) < 1e-9 and push.share < LG.ROUNDING_SHARE
    # no shared opening, no push
    assert shared_prefix_push(group(0, [1.0, 0.0], [2, 4], shared=0)) is None


def test_length_free_weights_are_asked_of_the_aggregation_itself():
    class Run:
        def __init__(self, algorithm):
            from unipo_build.core.project import spec_dir
            from unipo_build.core.specs import load_spec, resolve

            self.config = resolve(load_spec(spec_dir() / f"{algorithm}.yaml"), max_new_tokens=16)

    assert not LG.length_free(Run("grpo")) and not LG.length_free(Run("reinforce"))
    assert LG.length_free(Run("dapo")) and LG.length_free(Run("dr_grpo")) and LG.length_free(Run("dapo_dr"))


def write_token_run(run_dir, details, algorithm="grpo", steps=2, evals=()):
    writer = RunWriter(run_dir, make_header(algorithm).model_copy(update={"run_id": run_dir.name}))
    for e in evals:
        writer.eval(e)
    for s in range(steps):
        detail = next((d for d in details if d.step == s), None)
        if detail is not None:
            writer.step_detail(detail)
        writer.step(StepRecord(step=s, rollout=s // 2, first_in_rollout=s % 2 == 0, has_tokens=detail is not None,
                               metrics={"objective": 0.0}))
    writer.finish(finished_at=CREATED)
    return run_dir


def detail(step, groups):
    return StepDetail(step=step, rollout=step // 2, objective=0.0,
                      groups=[GroupSummary(index=g.index, size=len(g.responses), contribution=0.0, detailed=True)
                              for g in groups], prompts=groups)


def test_moments_of_ratios_groups_and_shared_openings(tmp_path):
    g0 = group(0, [1.0, 1.0, 1.0, 1.0], [3, 3, 3, 3])  # all right: not mixed
    g1 = group(1, [1.0, 0.0, 0.0, 0.0], [2, 4, 4, 4])  # mixed, lengths differ
    # a later step with one token whose ratio is e^2 and one at e^-3, clipped or not
    g2 = group(2, [1.0, 0.0], [3, 3])
    g2.responses[0].tokens.ratio[1] = math.exp(2.0)
    g2.responses[1].tokens.ratio[2] = math.exp(-3.0)
    run = write_token_run(tmp_path / "grpo", [detail(0, [g0, g1]), detail(1, [g2])])
    m = find_moments(run)
    assert (m["mixed_group"].step, m["mixed_group"].group) == (0, 1)
    assert (m["ratio_max"].step, m["ratio_max"].group, m["ratio_max"].response, m["ratio_max"].token) == (1, 2, 0, 1)
    assert m["ratio_max"].value == pytest.approx(math.exp(2.0), rel=1e-6)
    assert (m["ratio_min"].response, m["ratio_min"].token) == (1, 2)
    # g2's answers are equally long: their opening gets no net push; g1's does
    assert (m["shared_prefix_group"].step, m["shared_prefix_group"].group) == (0, 1)
    assert m["shared_prefix_group"].value == pytest.approx(shared_prefix_push(g1).share)


def test_grpo_is_a_rescaled_rloo_on_a_logged_group(tmp_path):
    write_token_run(tmp_path / "grpo", [detail(0, [group(0, [1.0, 0.0, 0.0, 0.0], [3, 3, 3, 3])])])
    html = bound_macros(tmp_path)["rloo_identity"]("grpo")
    # rewards 1,0,0,0: GRPO 1.5 and -0.5; leave-one-out 1 and -1/3; ratio (G-1)/(G std) = 3/(4 * 0.5) = 1.5
    cells = [c for c in __import__("re").findall(r"<td[^>]*>([^<]*)</td>", html)]
    rows = [cells[i:i + 5] for i in range(0, len(cells), 5)]
    assert [r[1:] for r in rows] == [["1", "1.5", "1", "1.5"]] + [["0", "\u22120.5", "\u22120.3333", "1.5"]] * 3
    assert "(G \u2212 1) / (G \u00b7 std) = 3 / (4 \u00d7 0.5) = 1.5" in html


def test_rank_sum_z_by_hand():
    # x below y entirely: U = 0, mean n1 n2 / 2 = 4.5, var 3 * 3 * 7 / 12 = 5.25
    assert LC.rank_sum_z(np.array([1.0, 2, 3]), np.array([4.0, 5, 6])) == pytest.approx(-4.5 / math.sqrt(5.25))
    assert LC.rank_sum_z(np.array([4.0, 5, 6]), np.array([1.0, 2, 3])) == pytest.approx(4.5 / math.sqrt(5.25))


def test_up_clipped_tokens_are_compared_with_every_pushed_up_token(tmp_path):
    groups = []
    for k in range(6):
        g = group(k, [1.0, 0.0], [4, 4], old_logp=[math.log(0.9)] * 4)
        # the right answer's first token was improbable and got clipped high
        g.responses[0].tokens.old_logp[0] = math.log(0.05)
        g.responses[0].tokens.clip[0] = 1
        groups.append(g)
    write_token_run(tmp_path / "dapo", [detail(0, groups)], algorithm="dapo")
    text = bound_macros(tmp_path)["up_clipped_verdict"]("dapo")
    assert text.startswith("As DAPO's fig. 3a reports, the tokens that reach the upper bound are the improbable ones")
    assert "median sampling probability of 0.05" in text and "0.9 for all 24 tokens" in text


def test_up_clipped_tokens_of_an_algorithms_seeds_are_pooled(tmp_path):
    """Three up-clipped tokens per seed are too few alone; the algorithm's two seeds pooled hold
    six, and the sentence names both runs."""
    for run_id in ("dapo", "dapo-s1"):
        groups = []
        for k in range(3):
            g = group(k, [1.0, 0.0], [4, 4], old_logp=[math.log(0.9)] * 4)
            g.responses[0].tokens.old_logp[0] = math.log(0.05)
            g.responses[0].tokens.clip[0] = 1
            groups.append(g)
        write_token_run(tmp_path / run_id, [detail(0, groups)], algorithm="dapo")
    m = bound_macros(tmp_path)
    text = m["up_clipped_verdict"]("dapo")
    assert text.startswith("As DAPO's fig. 3a reports") and "the 6 up-clipped tokens in the logged steps of DAPO's two runs" in text
    alone = m["up_clipped_verdict"]("dapo-s1")
    assert "The logged steps of the " in alone and "hold 3 token(s) clipped on the high side, too few" in alone


def test_sharpening_pairs_problems_and_reads_the_gap(tmp_path):
    start = EvalRecord(step=0, phase="start", n=4, accuracy_greedy=0.5, accuracy_sampled=0.25, problems="eval rows 1-4",
                       correct_greedy="1100", correct_sampled="1000")
    end = EvalRecord(step=2, phase="end", n=4, accuracy_greedy=0.5, accuracy_sampled=0.5, problems="eval rows 1-4",
                     correct_greedy="1100", correct_sampled="1100")
    g = LG.gap_reading(start, end)
    # per problem (g1 - s1) - (g0 - s0): 0, -1, 0, 0 -> mean -0.25, sd 0.5 -> half 1.96 * 0.5 / 2
    assert (g.start, g.end, g.paired) == (0.25, 0.0, True) and g.half == pytest.approx(1.959963984540054 * 0.25)
    # the size's change, sign(end) d_end - sign(start) d_start with sign(0) = 0: -d_start = 0, -1, 0, 0: the same
    assert g.size_change == -0.25 and g.size_half == pytest.approx(g.half)
    unpaired = LG.gap_reading(start.model_copy(update={"correct_greedy": None}), end)
    assert unpaired.paired is False and unpaired.half > g.half


def test_the_size_of_a_gap_that_changes_sign():
    """Sampled leads by 2 of 4 problems at the start (gap -0.5); greedy leads by 1 at the end
    (+0.25): the signed change is +0.75, the size's change -0.25, and its per-problem terms
    sign(end) d_end - sign(start) d_start = d_end + d_start are worked out by hand."""
    start = EvalRecord(step=0, phase="start", n=4, accuracy_greedy=0.25, accuracy_sampled=0.75,
                       problems="eval rows 1-4", correct_greedy="1000", correct_sampled="1110")
    end = EvalRecord(step=2, phase="end", n=4, accuracy_greedy=0.5, accuracy_sampled=0.25,
                     problems="eval rows 1-4", correct_greedy="1100", correct_sampled="0100")
    g = LG.gap_reading(start, end)
    assert (g.start, g.end) == (-0.5, 0.25) and g.size_change == pytest.approx(-0.25)
    # d_start = 0, -1, -1, 0; d_end = 1, 0, 0, 0; d_end + d_start = 1, -1, -1, 0: mean -0.25, sd 0.9574
    assert g.size_half == pytest.approx(1.959963984540054 * 0.957427 / 2, rel=1e-5)
    # d_end - d_start = 1, 1, 1, 0: mean 0.75, sd 0.5
    assert g.half == pytest.approx(1.959963984540054 * 0.25)
    assert g.sampled_led and not g.closed and not g.widened


def test_first_updates_and_ratio_extremes_from_the_metrics(tmp_path):
    def metrics(f, g):
        return {"ratio/min": 1.0, "ratio/max": 1.0, "kl/mean": 0.01 + (5.0 if 0.49 < f < 0.51 else 0.0),
                "grad_norm": 0.5 + (99.5 if 0.49 < f < 0.51 else 0.0)}
    run = write_metric_run(tmp_path / "grpo", "grpo", rollouts=51, metrics=metrics)
    import json
    lines = (run / "steps.jsonl").read_text().splitlines()
    records = [json.loads(line) for line in lines]
    for r in records:  # the later update of every rollout moves the ratios
        if not r["first_in_rollout"]:
            r["metrics"].update({"ratio/min": 0.01, "ratio/max": 12.0})
    (run / "steps.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    header = json.loads((run / "header.json").read_text())
    header["hyperparameters"]["grad_clip"] = 1.0
    (run / "header.json").write_text(json.dumps(header))
    m = bound_macros(tmp_path)
    assert m["first_update_ratios"]("grpo").endswith("logged every ratio at exactly 1: each took the policy gradient itself.")
    verdict = m["clip_bound_verdict"]()
    assert verdict.startswith("In 1 of the 1 runs of this build that clip, logged ratios went beyond the clip range")
    assert "12 (GRPO, update 1), is 10 times its upper bound 1.2" in verdict
    assert "0.01 (GRPO, update 1), is 80 times smaller than its lower bound 0.8" in verdict
    spike = m["kl_spike"]("grpo")
    assert "The largest mean KL of the GRPO run is 5.01 at update 50" in spike
    assert "scaled it down to the clipping norm, 1, 1.0% of its raw size" in spike
    assert "100%" in m["ratio_extremes"]()


def _eval_pair(greedy_start, sampled_start, greedy_end, sampled_end, n=40):
    """A start and an end evaluation on the same n problems: the first k of them right."""
    def bits(share):
        k = round(share * n)
        return "1" * k + "0" * (n - k)

    def record(phase, g, s):
        return EvalRecord(step=0, phase=phase, n=n, accuracy_greedy=g, accuracy_sampled=s,
                          problems=f"eval rows 1-{n}", correct_greedy=bits(g), correct_sampled=bits(s))
    return [record("start", greedy_start, sampled_start), record("end", greedy_end, sampled_end)]


def test_sharpening_names_a_few_runs_and_counts_many():
    from unipo_build.site.pages.objectives.lessons_groups import NAMED_AT_MOST, _named

    assert _named(2, ("GRPO", "DAPO"), 5) == "2 (GRPO, DAPO)" and _named(3, ("a", "b", "c"), 3) == "all 3"
    assert _named(0, (), 4) == "none"
    many = tuple(f"run {i}" for i in range(NAMED_AT_MOST + 1))
    assert _named(len(many), many, 94) == f"{NAMED_AT_MOST + 1} of the 94"  # a sentence, not a list of 77 runs


@pytest.mark.parametrize("gaps, words", [
    # greedy leads by 25 points, then the gap is 0: closed
    ((0.5, 0.25, 0.5, 0.5), ["greedy accuracy led sampled accuracy in every run before training",
                             "averaged 25 points before training and 0 after it",
                             "its size shrank in every run, clear of the noise",
                             "the policy samples its greedy answer more often."]),
    # greedy leads by 25, then by 40: the gap widened
    ((0.5, 0.25, 0.5, 0.1), ["averaged 25 points before training and 40 after it",
                             "Its size shrank clearly in none and grew clearly in all 2",
                             "those runs do not show sharpening in this measure."]),
    # sampled leads by 25, then the two agree: the gap's size closed (the signed gap rose)
    ((0.25, 0.5, 0.5, 0.5), ["sampled accuracy led greedy accuracy in every run before training",
                             "averaged \u221225 points before training and 0 after it, 25 and 0 points in size",
                             "its size shrank in every run, clear of the noise",
                             "a closing gap means greedy decoding caught up with the samples"]),
    # sampled leads by 25, greedy leads by 25 at the end: the size is unchanged and the sign crossed
    ((0.25, 0.5, 0.5, 0.25), ["averaged \u221225 points before training and 25 after it, 25 and 25 points in size",
                              "Its size shrank clearly in none; in 2 the change of its size is within the noise",
                              "The gap changed sign, clear of zero at the end, in all 2",
                              "neither show sharpening nor rule it out"]),
])
def test_sharpening_verdict_reads_the_size_of_the_gap(tmp_path, gaps, words):
    """Hand-made start and end evaluations for each pattern the measure must tell apart: a gap
    that closes, one that widens, one that starts with sampled ahead and closes (a signed measure
    read this as widening), and one that changes sign at the same size."""
    for algorithm in ("grpo", "dapo"):
        write_metric_run(tmp_path / algorithm, algorithm, rollouts=4, evals=_eval_pair(*gaps))
    text = bound_macros(tmp_path)["sharpening_verdict"]()
    assert text.startswith("Across the 2 runs of this build, ")
    for w in words:
        assert w in text, (w, text)


def test_first_updates_off_by_more_than_rounding_are_not_called_policy_gradient_steps(tmp_path):
    near = write_metric_run(tmp_path / "near" / "grpo", "grpo", rollouts=3,
                            metrics=lambda f, g: {"ratio/min": 0.9999, "ratio/max": 1.0002})
    far = write_metric_run(tmp_path / "far" / "grpo", "grpo", rollouts=3,
                           metrics=lambda f, g: {"ratio/min": 0.7, "ratio/max": 1.1})
    assert bound_macros(near.parent)["first_update_ratios"]("grpo").endswith(
        "logged ratios within 2 × 10⁻⁴ of 1 (the recomputed log-probabilities differ from the sampling ones by "
        "rounding), so each took the policy gradient to that precision.")
    text = bound_macros(far.parent)["first_update_ratios"]("grpo")
    assert "logged ratios as far as 0.3 from 1: more than rounding" in text and "not exact policy-gradient" in text
