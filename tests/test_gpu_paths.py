"""The GPU path of the RL loop, run on the CPU: bf16 autocast, the static decoder, the fused old
log-probs, the sampling-mismatch log, and the GPU benchmark's CPU smoke mode.

On a CUDA GPU the same code adds CUDA graphs (benchmarks/gpu_speed.py exercises that there); here
CPU autocast to bf16 stands in for the GPU's, and the static decoder runs eagerly.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from training_fixtures import coin_flip_score  # noqa: E402
from unipo_build.core import runlog  # noqa: E402
from unipo_build.core.reader import validate_run  # noqa: E402
from unipo_build.core.recompute import check_step  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
SMOKE = {"prompts_per_step": 4, "group_size": 4, "max_new_tokens": 12}


@pytest.fixture(scope="module")
def tiny(tiny_policy):
    from training.model import load_policy

    path = tiny_policy
    model, tok = load_policy(path)
    from training.task import load_task

    rows = load_task(REPO / "data" / "tasks" / "eval.jsonl")
    prompts = [r["prompt"] for r in sorted(rows[:6], key=lambda r: len(r["prompt"]))]
    return path, model.eval(), tok, prompts


def test_precision_setting():
    from training.model import resolve_precision

    cpu = torch.device("cpu")
    assert resolve_precision("auto", cpu) is None  # the CPU default stays float32
    assert resolve_precision("fp32", cpu) is None
    assert resolve_precision("bf16", cpu) is torch.bfloat16
    with pytest.raises(ValueError, match="precision 'fp16'"):
        resolve_precision("fp16", cpu)


def test_static_decoder_logprobs_match_a_full_forward_in_fp32(tiny):
    """Same function as the training forward: the log-probs it samples with are recomputed to 1e-4,
    across prompt widths that are not a multiple of the static width and row counts that are not a
    multiple of the static row step (dummy rows)."""
    from training.generation import response_logprobs, sample_groups

    _, model, tok, prompts = tiny
    assert len({len(tok(p, add_special_tokens=False)["input_ids"]) for p in prompts}) > 1
    for group_size, seed in ((3, 0), (4, 1)):
        batch = sample_groups(model, tok, prompts, group_size, 16, 1.0, seed=seed, static=True)
        assert batch.size == len(prompts) * group_size
        with torch.no_grad():
            logp, _ = response_logprobs(model, batch)
        assert (logp.cpu() - batch.logprobs).abs().max().item() < 1e-4
        lengths = batch.response_lengths.tolist()
        assert max(lengths) == batch.response_mask.shape[1]  # trailing steps with no live row are cut
        for i, ids in enumerate(batch.response_ids):  # a response stops at its first <eos>
            assert tok.eos_token_id not in ids[:-1]
            assert bool(batch.truncated[i]) == (not ids or ids[-1] != tok.eos_token_id)
            assert (batch.logprobs[i, len(ids):] == 0).all() and (batch.logprobs[i, :len(ids)] < 0).all()


def test_static_decoder_reuses_its_buffers(tiny):
    from training import llama_decode
    from training.generation import sample_groups

    _, model, tok, prompts = tiny
    dec = llama_decode.static_decoder(model)
    assert llama_decode.static_decoder(model) is dec
    sample_groups(model, tok, prompts, 4, 8, 1.0, seed=0, static=True)
    plan = dec.plan
    assert plan.rows == llama_decode.ROW_STEP and plan.prompt_width % llama_decode.PROMPT_STEP == 0
    sample_groups(model, tok, prompts, 4, 8, 1.0, seed=1, static=True)
    sample_groups(model, tok, prompts[:2], 3, 6, 1.0, seed=2, static=True)  # fits: fewer rows, shorter budget
    assert dec.plan is plan
    sample_groups(model, tok, prompts, 4, 40, 1.0, seed=3, static=True)  # a longer budget needs a new shape
    assert dec.plan is not plan and dec.plan.total == plan.prompt_width + 40
    # kept with the model, not beyond it: a dropped model takes its decoder (and cache) with it
    import gc

    from training.model import build_model

    other = build_model("tiny", len(tok), seed=1).eval()
    sample_groups(other, tok, prompts[:1], 2, 4, 1.0, seed=0, static=True)
    assert other in llama_decode._STATIC
    n = len(llama_decode._STATIC)
    del other
    gc.collect()
    assert len(llama_decode._STATIC) == n - 1


def test_bf16_logprobs_stay_close_to_fp32(tiny):
    """bf16 autocast in the transformer, float32 log-softmax: within a few hundredths of fp32."""
    from training.generation import response_logprobs, sample_groups

    _, model, tok, prompts = tiny
    batch = sample_groups(model, tok, prompts, 4, 16, 1.0, seed=2)
    with torch.no_grad():
        fp32, ent32 = response_logprobs(model, batch)
        bf16, ent16 = response_logprobs(model, batch, autocast=torch.bfloat16)
    assert bf16.dtype == torch.float32  # log-probs in float32 whatever the autocast
    m = batch.response_mask.bool()
    diff = (bf16 - fp32)[m].abs()
    assert 0 < diff.max().item() < 0.05  # bf16 really ran (not bit-equal), and stays close
    assert diff.mean().item() < 0.01
    assert (ent16 - ent32)[m].abs().max().item() < 0.05
    # sampling under autocast: its log-probs agree with the bf16 training pass about as well
    sampled = sample_groups(model, tok, prompts, 4, 16, 1.0, seed=3, autocast=torch.bfloat16, static=True)
    with torch.no_grad():
        train16, _ = response_logprobs(model, sampled, autocast=torch.bfloat16)
    m = sampled.response_mask.bool()
    assert (train16 - sampled.logprobs)[m].abs().max().item() < 0.05


def test_mismatch_metrics_by_hand():
    from training.records import mismatch_metrics

    train = torch.tensor([[-1.0, -2.0, -0.5], [-3.0, 0.0, 0.0]])
    sample = torch.tensor([[-1.1, -1.8, -0.5], [-2.0, -9.0, 0.0]])
    mask = torch.tensor([[1, 1, 1], [1, 0, 0]])
    m = mismatch_metrics(train, sample, mask)
    # deltas train - sample on real tokens: +0.1, -0.2, 0, -1.0 (the masked -9 gap is ignored)
    assert m["mismatch/logp_abs_mean"] == pytest.approx((0.1 + 0.2 + 0 + 1.0) / 4)
    assert m["mismatch/logp_abs_max"] == pytest.approx(1.0)
    assert m["mismatch/tis_mean"] == pytest.approx((1 + math.exp(-0.2) + 1 + math.exp(-1.0)) / 4)
    assert m["mismatch/tis_min"] == pytest.approx(math.exp(-1.0))
    assert m["mismatch/tis_below_1_frac"] == pytest.approx(0.5)


def _train(path, out, monkeypatch, algorithm="grpo", steps=1, **overrides):
    import training.rl as rl

    monkeypatch.setattr(rl, "score_response", coin_flip_score)
    opts = rl.TrainOptions(algorithm=algorithm, steps=steps, model=str(path), out=str(out), progress=False,
                           eval_n=8, detail_every=1, device="cpu", rl_overrides={**SMOKE, **overrides})
    return rl.train(opts)


@pytest.mark.slow
def test_cpu_default_is_float32_and_logs_no_sampling_logprob(tiny, tmp_path, monkeypatch):
    run = _train(tiny[0], tmp_path / "cpu", monkeypatch)
    header = runlog.read_header(run)
    assert header.hardware.dtype == "float32"
    assert header.hyperparameters.get("micro_rows") == 32 and header.hyperparameters.get("precision") is None
    steps = list(runlog.iter_steps(run))
    assert not any(k.startswith("mismatch/") for s in steps for k in s.metrics)
    raw = json.loads((run / "tokens" / "step_000000.json").read_text())
    assert all("sample_logp" not in r["tokens"] for p in raw["prompts"] for r in p["responses"])


@pytest.mark.slow
@pytest.mark.parametrize("algorithm", ["grpo", "ppo"])
def test_bf16_path_trains_logs_both_logprobs_and_recomputes(tiny, tmp_path, monkeypatch, algorithm):
    """precision bf16 runs the GPU path on the CPU: autocast, static decoder, fused old log-probs
    (grpo: one minibatch, no KL in the reward) or a separate old pass (ppo: KL in the reward)."""
    run = _train(tiny[0], tmp_path / algorithm, monkeypatch, algorithm=algorithm, steps=2, precision="bf16")
    header = runlog.read_header(run)
    assert header.hardware.dtype == "bfloat16 autocast, float32 log-probs"
    assert header.hyperparameters.get("precision") == "bf16"
    assert header.hyperparameters.get("micro_rows") == 128 and header.hyperparameters.get("cuda_graphs") is False
    assert validate_run(run) == []
    steps = list(runlog.iter_steps(run))
    problems = []
    for s in steps:
        detail = runlog.read_step_detail(run, s.step)
        problems += check_step(header.algorithm_config, detail)
        toks = [r.tokens for g in detail.prompts for r in g.responses if r.tokens is not None]
        assert toks and all(t.sample_logp is not None and len(t.sample_logp) == len(t.ids) for t in toks)
        gaps = [abs(a - b) for t in toks for a, b in zip(t.old_logp, t.sample_logp)]
        assert max(gaps) < 0.1
        assert s.metrics["mismatch/logp_abs_max"] >= max(gaps) - 1e-6  # over the minibatch, detail is a sample
        assert 0 < s.metrics["mismatch/tis_mean"] <= 1 and s.metrics["mismatch/tis_min"] <= s.metrics["mismatch/tis_mean"]
        if s.first_in_rollout:  # old log-probs from the same (fused) or an identical pass: exactly on-policy
            assert s.metrics["ratio/min"] == s.metrics["ratio/max"] == 1.0
    assert problems == []


def _host_reads(tiny, tmp_path, algorithm, micro_rows):
    """Calls that read a tensor on the host (.cpu(), .item(), .tolist(), float()) made by each
    update and by the old / reference / value passes of one rollout on the GPU path, and the
    number of chunks each update ran. On a GPU each is a wait for the device."""
    from training import rl

    with pytest.MonkeyPatch.context() as monkeypatch:
        return _count_host_reads(rl, tiny, tmp_path, monkeypatch, algorithm, micro_rows)


def _count_host_reads(rl, tiny, tmp_path, monkeypatch, algorithm, micro_rows):

    counts, active = [], []

    def counting(name):
        original = getattr(torch.Tensor, name)

        def wrapper(self, *args, **kwargs):
            if active:
                counts[-1][0] += 1
            return original(self, *args, **kwargs)
        monkeypatch.setattr(torch.Tensor, name, wrapper)

    for name in ("cpu", "item", "tolist", "__float__"):
        counting(name)

    def watched(fn, label):
        def wrapper(*args, **kwargs):
            counts.append([0, label])
            active.append(1)
            try:
                return fn(*args, **kwargs)
            finally:
                active.pop()
        return wrapper

    monkeypatch.setattr(rl.Trainer, "_update", watched(rl.Trainer._update, "update"))
    monkeypatch.setattr(rl.Trainer, "_old_and_ref", watched(rl.Trainer._old_and_ref, "old_ref"))
    monkeypatch.setattr(rl, "by_minibatch", watched(rl.by_minibatch, "pass"))
    chunks = []
    real_chunks = rl.length_chunks
    monkeypatch.setattr(rl, "length_chunks", lambda *a: chunks.append(len(real_chunks(*a))) or real_chunks(*a))
    _train(tiny[0], tmp_path / f"{algorithm}-{micro_rows}", monkeypatch, algorithm=algorithm, precision="bf16",
           cuda_micro_rows=micro_rows)
    return counts, chunks


@pytest.mark.slow
@pytest.mark.parametrize("algorithm", ["grpo", "ppo"])
def test_an_update_reads_the_device_a_fixed_number_of_times(tiny, tmp_path, algorithm):
    """Nothing in the chunk loops waits for the device: an update (and a pass of old, reference or
    value log-probs) reads tensors on the host as often with 8 chunks of 2 rows as with 1 of 16.
    grpo takes its old log-probs from the first update (fused), ppo from a separate pass and trains a
    critic in each update."""
    few, few_chunks = _host_reads(tiny, tmp_path, algorithm, 16)
    many, many_chunks = _host_reads(tiny, tmp_path, algorithm, 2)
    assert max(few_chunks) == 1 and min(many_chunks) == 8  # 16 rows: one chunk, or eight
    assert [label for _, label in many] == [label for _, label in few]
    assert [c for c, _ in many] == [c for c, _ in few]


@pytest.mark.slow
def test_gpu_speed_benchmark_cpu_smoke(tmp_path):
    out, prof = tmp_path / "gpu_speed.json", tmp_path / "profile.txt"
    proc = subprocess.run([sys.executable, str(REPO / "benchmarks" / "gpu_speed.py"), "--device", "cpu", "--smoke",
                           "--json", str(out), "--profile", str(prof)], cwd=REPO, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(out.read_text())
    assert result["device"]["type"] == "cpu" and result["torch"] == torch.__version__
    ours = result["ours"]
    for phase in ("sampling", "old_ref_logprobs", "updates"):
        p = ours["phases"][phase]
        assert p["seconds"] > 0 and p["tokens_per_s"] > 0 and p["tflop"] > 0
        assert p["tflops_achieved"] == pytest.approx(p["tflop"] / p["seconds"], rel=1e-6)
    assert ours["s_per_rollout"] == pytest.approx(sum(ours["phases"][k]["seconds"] for k in ours["phases"]), rel=1e-6)
    assert ours["peak_fraction"] is None  # no bf16 peak is claimed for a CPU
    assert "sampling" in proc.stdout and "TFLOP/s" in proc.stdout
    table = prof.read_text()  # the profiled extra rollout: its operators, by self CPU time here
    assert table.startswith("gpu_speed --profile: one rollout of 4 prompts x 4 on cpu, sorted by self_cpu_time_total")
    assert "Self CPU" in table and "# of Calls" in table
    assert sum(line.lstrip().startswith("aten::") for line in table.splitlines()) >= 10  # operators, one a row


def test_sampling_mismatch_sentence_from_the_logs(tmp_path):
    """The course's sentence on the two ratios is computed from the build's runs, both ways."""
    import json as _json

    from helpers_runlog import write_metric_run
    from site_build import bound_macros

    write_metric_run(tmp_path / "plain" / "grpo", "grpo", rollouts=3)
    text = bound_macros(tmp_path / "plain")["sampling_mismatch"]()
    assert text.startswith("The one synchronous run these pages compare logs no sampling log-prob")
    assert "stale copy" not in text  # no asynchronous run in this build
    # two asynchronous runs (sampler 8 rollouts stale) at seeds 0 and 1, one at lag 2: each lag's gaps, by lag
    for name, lag, seed, gap in (("async8", 8, 0, 0.03), ("async8-s1", 8, 1, 0.02), ("async2", 2, 0, 0.006)):
        run = write_metric_run(tmp_path / "plain" / name, "grpo", rollouts=3, seed=seed,
                               metrics=lambda f, g, gap=gap: {"mismatch/logp_abs_mean": gap, "mismatch/logp_abs_max": 1.0})
        header = _json.loads((run / "header.json").read_text())
        header["hyperparameters"]["sampler_lag"] = lag
        (run / "header.json").write_text(_json.dumps(header))
    text = bound_macros(tmp_path / "plain")["sampling_mismatch"]()
    assert text.startswith("The one synchronous run these pages compare logs no sampling log-prob")
    assert text.endswith("The build's three runs sampled by a stale copy of the policy (the asynchronous mode) do log "
                         "it: their mean gap |log π_train − log π_sample| is 0.006 nats at a lag of 2 and 0.02 to 0.03 "
                         "nats at a lag of 8.")

    def metrics(f, g):  # the gap shrinks over training: 0.02 -> 0.01
        return {"mismatch/logp_abs_mean": 0.02 - 0.01 * f, "mismatch/logp_abs_max": 0.5,
                "mismatch/tis_mean": 0.99, "mismatch/tis_min": 0.6 + 0.1 * f}
    run = write_metric_run(tmp_path / "mixed" / "grpo", "grpo", rollouts=3, metrics=metrics)
    header = _json.loads((run / "header.json").read_text())
    header["hardware"] = {"device": "cuda", "dtype": "bfloat16 autocast, float32 log-probs"}
    (run / "header.json").write_text(_json.dumps(header))
    text = bound_macros(tmp_path / "mixed")["sampling_mismatch"]()
    assert text.startswith("One run of this build samples and trains in bfloat16 autocast, float32 log-probs and logs "
                           "both log-probs.")
    assert "over their updates: GRPO 0.015; the largest single gap, 0.5." in text  # mean of 0.02, 0.015, 0.01
    assert "averages 0.99, and its smallest value on a token is 0.6." in text
    # a weight one point below 1 on average is worded as a correction that would matter
    assert "Applied, it would scale the average token's term down by at most 1" in text
    assert text.endswith("enough to change what the update does.")


# ---------------------------------------------------------------------------
# On a CUDA GPU only (benchmarks/gpu_call.sh runs these there; skipped elsewhere)

cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")


@cuda
def test_cuda_graph_decoder_matches_eager_and_a_full_forward(tiny):
    from training import llama_decode
    from training.generation import eos_ids_of, left_pad, pad_id_of, pick_tokens, response_logprobs, sample_groups
    from training.model import load_policy

    model, tok = load_policy(tiny[0], device="cuda")
    model.eval()
    prompts = tiny[3]
    batch = sample_groups(model, tok, prompts, 4, 16, 1.0, seed=0, static=True)  # graphs on CUDA
    with torch.no_grad():
        logp, _ = response_logprobs(model, batch)
    assert (logp.cpu() - batch.logprobs).abs().max().item() < 1e-4
    # a replayed graph computes what the same step computes eagerly
    rows = [tok(p, add_special_tokens=False)["input_ids"] for p in prompts for _ in range(4)]
    ids, mask = (t.cuda() for t in left_pad(rows, pad_id_of(tok)))
    eos = torch.tensor(eos_ids_of(model, tok), device="cuda")
    dec = llama_decode.static_decoder(model)
    runs = []
    for graphs in (True, False):
        gen = torch.Generator(device="cuda").manual_seed(7)
        runs.append(dec.decode(ids, mask, 16, lambda x: pick_tokens(x, 1.0, gen), eos, pad_id_of(tok), graphs=graphs))
    assert torch.equal(runs[0][0], runs[1][0]) and (runs[0][2] - runs[1][2]).abs().max().item() < 1e-5
    # bf16: sampling and training passes round differently, but stay close
    b16 = sample_groups(model, tok, prompts, 4, 16, 1.0, seed=1, autocast=torch.bfloat16, static=True)
    with torch.no_grad():
        t16, _ = response_logprobs(model, b16, autocast=torch.bfloat16)
    m = b16.response_mask.bool()
    assert (t16.cpu() - b16.logprobs)[m].abs().max().item() < 0.1


@pytest.mark.slow
@cuda
def test_cuda_trainer_takes_the_gpu_path(tiny, tmp_path, monkeypatch):
    import training.rl as rl

    monkeypatch.setattr(rl, "score_response", coin_flip_score)
    run = rl.train(rl.TrainOptions(algorithm="grpo", steps=2, model=str(tiny[0]), out=str(tmp_path / "run"),
                                   progress=False, eval_n=8, detail_every=1, device="cuda", rl_overrides=dict(SMOKE)))
    header = runlog.read_header(run)
    assert header.hardware.device == "cuda" and header.hyperparameters.get("cuda_graphs") is True
    assert header.hardware.dtype == "bfloat16 autocast, float32 log-probs"
    steps = list(runlog.iter_steps(run))
    assert all(s.metrics["ratio/min"] == s.metrics["ratio/max"] == 1.0 for s in steps if s.first_in_rollout)
    assert all(s.metrics["mismatch/logp_abs_mean"] is not None for s in steps)
    problems = []
    for s in steps:
        problems += check_step(header.algorithm_config, runlog.read_step_detail(run, s.step))
    assert problems == []


# ---------------------------------------------------------------------------
# Passes bounded by tokens, step files bounded by bytes (the gpu preset's settings)
# ---------------------------------------------------------------------------

def _lengths_batch(lengths, prompt_width):
    """What length_chunks reads of a rollout: the response mask and the prompt width."""
    from types import SimpleNamespace

    width = max(lengths)
    mask = torch.tensor([[1.0] * n + [0.0] * (width - n) for n in lengths])
    return SimpleNamespace(response_mask=mask, prompt_width=prompt_width)


def test_length_chunks_by_rows_and_by_tokens():
    """Lengths 10, 3, 7, 20, 5, 1 (rows 0-5), prompts 4 wide: in length order rows 5, 1, 4, 2, 0, 3
    of widths 5, 7, 9, 11, 14, 24. By rows (4 a pass): [5, 1, 4, 2] and [0, 3]. With 30 tokens a
    pass as well: 3 x 9 = 27 fits, a fourth row of width 11 would make 44; then 2 x 14 = 28; the row
    of width 24 alone (3 x 24 > 30). A row wider than the budget still gets a pass of its own."""
    from training.batches import length_chunks

    b = _lengths_batch([10, 3, 7, 20, 5, 1], prompt_width=4)
    rows = list(range(6))
    assert length_chunks(b, rows, 4) == [[5, 1, 4, 2], [0, 3]]
    assert length_chunks(b, rows, 4, 30) == [[5, 1, 4], [2, 0], [3]]
    assert length_chunks(b, rows, 2, 30) == [[5, 1], [4, 2], [0], [3]]  # rows still cap a pass
    assert length_chunks(b, rows, 4, 20) == [[5, 1], [4], [2], [0], [3]]  # 24 > 20: alone
    for chunk in length_chunks(b, rows, 4, 30):
        widest = max(4 + int(b.response_mask[r].sum()) for r in chunk)
        assert len(chunk) == 1 or len(chunk) * widest <= 30


def _view(group_lengths):
    """A MinibatchView of one group per entry, two responses each of the given token counts; the
    first group all correct, the second all wrong, the rest mixed."""
    from training.records import MinibatchView

    rows = [(g, n, ok) for g, (n, ok_pair) in enumerate(zip(group_lengths, [(1, 1), (0, 0)] + [(1, 0)] * 8))
            for ok in ok_pair]
    width = max(group_lengths)
    mask = torch.tensor([[1.0] * n + [0.0] * (width - n) for _, n, _ in rows])
    grid = torch.linspace(-1.0, -0.1, len(rows) * width).reshape(len(rows), width) * mask
    correct = torch.tensor([float(ok) for *_, ok in rows])
    return MinibatchView(
        group_index=[g for g, *_ in rows], prompts=[f"prompt {g}" for g in range(len(group_lengths))],
        answers=[str(g) for g in range(len(group_lengths))], response_text=["answer"] * len(rows),
        token_ids=[[5] * n for _, n, _ in rows], token_text=[["x"] * n for _, n, _ in rows], rewards=correct,
        reward_components={"correct": correct}, correct=correct, truncated=torch.zeros(len(rows), dtype=torch.bool),
        mask=mask, logp=grid, old_logp=grid, ref_logp=None, values=None, advantages=(correct - 0.5)[:, None] * mask,
        returns=None, kl=None, ratio=mask.clone(), clip_side=torch.zeros_like(mask, dtype=torch.int8), entropy=-grid,
        weights=mask / mask.sum(), objective=grid * 0.5, group_advantage=True)


def test_step_detail_keeps_to_its_byte_limit():
    """Groups are detailed in the order of choice (a mixed one, an all-correct one, an all-wrong one:
    core/step_budget.detail_order) while the written file stays within max_bytes; one that does not
    fit is passed over for the next, and the first is always detailed. Sizes are of the file as the
    run log writes it (runlog.dumps and a newline)."""
    from training.records import step_detail

    def detail(view, groups=3, **kw):
        d = step_detail(view, step=0, rollout=0, objective=0.0, detail_groups=groups, **kw)
        return d, len(runlog.dumps(d)) + 1, {g.index for g in d.groups if g.detailed}

    view = _view([40, 4, 6])  # order of choice 2 (mixed), 0 (all correct, the long one), 1 (all wrong)
    _, full, everything = detail(view)
    assert everything == {0, 1, 2}
    _, one, first = detail(view, max_bytes=1)
    assert first == {2}  # nothing fits 1 byte: the first group all the same
    _, with_long, two = detail(view, groups=2)
    assert two == {2, 0}
    _, size, kept = detail(view, max_bytes=with_long - 1)
    assert kept == {2, 1} and size <= with_long - 1  # group 0 passed over, group 1 still fits
    _, size, kept = detail(view, max_bytes=full - 1)
    assert kept == {2, 0} and size == with_long  # the last one is the one left out
    d, size, kept = detail(view, max_bytes=full)
    assert kept == {0, 1, 2} and size == full
    assert [p.index for p in d.prompts] == [0, 1, 2] and all(r.tokens for p in d.prompts for r in p.responses)
    assert one < size


@pytest.mark.slow
@pytest.mark.parametrize("algorithm", ["grpo", "ppo"])
def test_token_bounded_passes_train_exactly_and_step_files_keep_their_limit(tiny, tmp_path, monkeypatch, algorithm):
    """The gpu preset's settings on the GPU path: passes of at most 120 tokens (several a rollout,
    sized by answer length) give the first update of each rollout ratios of exactly 1 (the old
    log-probs were taken on the same passes), every step recomputes, and no step file passes its
    byte limit unless it details a single group."""
    limit = 6_000
    run = _train(tiny[0], tmp_path / algorithm, monkeypatch, algorithm=algorithm, steps=2, precision="bf16",
                 cuda_micro_tokens=120, detail_bytes=limit)
    header = runlog.read_header(run)
    assert header.hyperparameters.get("micro_tokens") == 120 and header.hyperparameters.get("detail_bytes") == limit
    assert validate_run(run) == []
    detailed = []
    for s in runlog.iter_steps(run):
        detail = runlog.read_step_detail(run, s.step)
        assert check_step(header.algorithm_config, detail) == []
        size = (run / "tokens" / runlog.token_file_name(s.step)).stat().st_size
        detailed.append(sum(g.detailed for g in detail.groups))
        assert size <= limit or detailed[-1] == 1
        if s.first_in_rollout:
            assert s.metrics["ratio/min"] == s.metrics["ratio/max"] == 1.0
    assert min(detailed) < header.hyperparameters["detail_groups"]  # the limit took groups out


@pytest.mark.slow
def test_a_non_finite_gradient_is_skipped_and_traced_to_its_chunk(tiny, tmp_path, monkeypatch, capsys):
    """A chunk whose backward pass gives NaN (here: whichever chunk holds the first response the
    policy scores, its forward values untouched, as on the GPU lease where the logged objectives were
    finite) makes the update's gradient non-finite: the step is skipped and logged (update/skipped),
    and the run's log names that chunk as the one with non-finite gradients while its log-probs and
    the other chunks' gradients are finite. Both updates of the rollout are skipped, as on the lease:
    the batch and the weights are the same for the second."""
    import training.rl as rl

    class NanGrad(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x.clone()

        @staticmethod
        def backward(ctx, grad):
            return grad * float("nan")

    poisoned: list[str] = []
    real = rl.response_logprobs

    def poisoning(model, mb, **kw):
        logp, entropy = real(model, mb, **kw)
        poisoned[:] = poisoned or [mb.texts[0]]
        return (NanGrad.apply(logp) if poisoned[0] in mb.texts else logp), entropy

    monkeypatch.setattr(rl, "response_logprobs", poisoning)
    run = _train(tiny[0], tmp_path / "nan", monkeypatch, algorithm="dr_grpo", steps=1, precision="bf16",
                 cuda_micro_rows=4)
    steps = list(runlog.iter_steps(run))
    assert [s.metrics["update/skipped"] for s in steps] == [1.0, 1.0]
    assert all(s.metrics["grad_norm"] is None for s in steps)
    lines = [json.loads(line.split(": ", 1)[1]) for line in capsys.readouterr().err.splitlines()
             if line.startswith("non-finite gradient: ")]
    assert [r["step"] for r in lines] == [0, 1]
    for record in lines:
        bad = [c for c in record["chunks"] if not c["grad_finite"]]
        assert len(bad) == 1 and bad[0]["logp_finite"] and bad[0]["part_finite"] and bad[0]["first_bad_params"]
        assert len(record["chunks"]) == 4 and all(c["logp_finite"] and c["grad_finite"]
                                                  for c in record["chunks"] if c is not bad[0])
        assert sum(c["rows"] for c in record["chunks"]) == 16


@pytest.mark.slow
def test_held_out_evaluations_run_without_the_static_decoders_cache(tiny, tmp_path, monkeypatch):
    """On the GPU path the sampler's static cache (2 GB for the gpu preset) is dropped before each
    held-out evaluation, whose own decoder needs as much again, and built again by the next rollout:
    a run's memory peak is the larger of the two, not their sum. Every evaluation (start, the RL
    pool's at the start, periodic, end) finds no static decoder; every rollout builds it again."""
    import training.llama_decode as LD
    import training.rl as rl
    import training.rl_evals as rl_evals

    seen = []
    real_eval, real_sample = rl_evals.evaluate, rl.Trainer._sample_rollout

    def evaluating(model, *a, **kw):
        seen.append(("eval", model in LD._STATIC))
        return real_eval(model, *a, **kw)

    def sampling(self):
        out = real_sample(self)
        seen.append(("rollout", self.policy in LD._STATIC))
        return out

    monkeypatch.setattr(rl_evals, "evaluate", evaluating)
    monkeypatch.setattr(rl.Trainer, "_sample_rollout", sampling)
    _train(tiny[0], tmp_path / "evals", monkeypatch, steps=2, precision="bf16", eval_every=1)
    assert [kind for kind, _ in seen] == ["eval", "eval", "rollout", "eval", "rollout", "eval"]
    assert [has for kind, has in seen if kind == "eval"] == [False, False, False, False]
    assert all(has for kind, has in seen if kind == "rollout")
