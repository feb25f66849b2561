"""GPU speed of one RL run: per phase seconds, tokens/s, achieved TFLOP/s and the share of the
device's peak, peak GPU memory, N runs sharing the GPU, and TRL's GRPOTrainer on the same shape.

    python benchmarks/gpu_speed.py                        # on a CUDA machine: the gpu preset, GRPO
    python benchmarks/gpu_speed.py --concurrent 8 --trl   # also 8 runs at once, and TRL
    python benchmarks/gpu_speed.py --device cpu --smoke   # a tiny shape on the CPU (the test runs this)
    python benchmarks/gpu_speed.py --profile prof.txt     # also one profiled rollout: operators by device time

What is timed: ``Trainer.run_rollout()`` of training/rl.py (algorithm ``grpo``: k3 KL in the loss,
so a reference pass; 2 epochs x 1 minibatch), driven directly as benchmarks/trainer_speed.py does
(no periodic evaluation or checkpoints), after ``--warmup`` rollouts that are not counted (CUDA
graph capture, allocator growth, kernel selection). The device is synchronised at each boundary.
A rollout is cut into three phases that add up to its wall time:

- sampling: ``_sample_rollout`` (tokenise, decode P x G answers, detokenise, score);
- old/ref log-probs: from there to the first update (scoring, the reference pass, the old pass
  unless the first update's own forward pass gives it, advantages);
- updates: the ``epochs x minibatches`` optimizer steps and the run log (token detail on the
  preset's ``detail_every`` rollouts, as in a real run).

FLOPs are counted from the parameter count P (tied embedding once, so the output projection is
in it) and the real tokens T_seq (prompt + response, no padding) or T_gen (generated):
a forward pass costs 2 P per token and a forward + backward 6 P (Kaplan et al. 2020, "Scaling
laws", the 2N / 6N rule; attention's own score and value products, about 4 L h x context per
token, are left out: for the gpu preset at a context of 100 that is under 3% more).

    sampling          2 P (T_prompt + T_gen)        (one prefill, one decode step per new token)
    old/ref log-probs 2 P T_seq x passes            (reference, plus old unless fused)
    updates           6 P T_seq x epochs            (each epoch's minibatches cover every row)

Achieved TFLOP/s = FLOPs / seconds; the peak is the dense bf16 tensor rate from NVIDIA's data
sheets by device name: H100 SXM and H200 989 TFLOP/s (the sheets' 1,979 "with sparsity" halved),
H100 PCIe 756. The matrix rate this script measures on the same GPU (an 8192^3 bf16 product on
random data, the median of 10) is reported beside it, since that is what the card delivers.
Memory: torch's peak reserved bytes of the run's process (what the caching allocator held; the
CUDA context, a few hundred MB, comes on top), and in the concurrent mode also the whole GPU's
used memory sampled with nvidia-smi every 0.5 s.

Modes (each a fresh process, so memory peaks are per run): ``ours`` (the GPU path: bf16
autocast, static KV cache under CUDA graphs, GPU micro-batches); ``--baseline`` the path before
issue 20 on the same GPU (fp32, micro-batches of 32, the pruning decoder, a separate old pass;
at most 5 measured rollouts, it is the slow one); one warm-up rollout for TRL;
``--concurrent N`` N ``ours`` runs started together (different seeds), measured over the same
window (they wait for each other after warm-up); ``--trl`` TRL's GRPOTrainer with
benchmarks/trainer_speed.py's mapping (bf16, no vLLM, same model, prompts, P x G, budget and
optimizer steps). It writes benchmarks/results/gpu_speed.json (date, device, versions).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

# Dense bf16 tensor-core peaks (TFLOP/s) from NVIDIA's data sheets: H100 SXM5 and H200 SXM list
# 1,979 with 2:4 sparsity (989 dense); H100 PCIe 1,513 (756 dense). Matched on the device name.
PEAKS = [("H200", 989.0, "NVIDIA H200 data sheet (SXM): 1,979 TFLOP/s bf16 with sparsity, 989 dense"),
         ("H100 PCIe", 756.0, "NVIDIA H100 data sheet (PCIe): 1,513 TFLOP/s bf16 with sparsity, 756 dense"),
         ("H100", 989.0, "NVIDIA H100 data sheet (SXM5): 1,979 TFLOP/s bf16 with sparsity, 989 dense")]
SMOKE = {"prompts_per_step": 4, "group_size": 4, "max_new_tokens": 12}


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description="Per-phase speed of one RL run on a GPU, N runs at once, and TRL.")
    ap.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    ap.add_argument("--smoke", action="store_true", help="tiny preset and shape (4 prompts x 4, 12 tokens), 1+1 rollouts")
    ap.add_argument("--preset", default=None, help="default: gpu (tiny with --smoke)")
    ap.add_argument("--model", default=None,
                    help="a local HF checkpoint; default the preset's warm start (work/sft-<preset>, else data/warm-start/<preset>) if it exists, else a random model of the "
                         "preset's shape with the task's tokenizer (its answers run to the budget: the worst case)")
    ap.add_argument("--rollouts", type=int, default=None, help="measured rollouts (default 10; 1 with --smoke)")
    ap.add_argument("--warmup", type=int, default=None, help="rollouts run first, not measured (default 2; 1 smoke)")
    ap.add_argument("--concurrent", type=int, default=0, help="also start this many runs at once (e.g. 8)")
    ap.add_argument("--concurrent-rollouts", type=int, default=5, help="measured rollouts per concurrent run")
    ap.add_argument("--baseline", action="store_true", help="also time the pre-issue-20 path (fp32, no graphs)")
    ap.add_argument("--trl", action="store_true", help="also time TRL's GRPOTrainer (needs trl and datasets)")
    ap.add_argument("--trl-rollouts", type=int, default=3)
    ap.add_argument("--micro-rows", type=int, default=None, help="override the preset's GPU micro-batch rows")
    ap.add_argument("--no-graphs", action="store_true", help="the static decoder without CUDA graphs")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--profile", default=None, metavar="PATH",
                    help="after the timed rollouts, profile one more (torch.profiler) and write its table here")
    ap.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: the preset's)")
    ap.add_argument("--json", default=str(REPO / "benchmarks" / "results" / "gpu_speed.json"))
    ap.add_argument("--out-dir", default=None, help="keep the workers' run logs and results here")
    # internal: one measured run in this process
    ap.add_argument("--worker", choices=("ours", "baseline", "trl"), default=None, help=argparse.SUPPRESS)
    ap.add_argument("--result", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--barrier", default=None, help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    a.preset = a.preset or ("tiny" if a.smoke else "gpu")
    a.rollouts = a.rollouts if a.rollouts is not None else (1 if a.smoke else 10)
    a.warmup = a.warmup if a.warmup is not None else (1 if a.smoke else 2)
    return a


def peak_for(name: str | None) -> tuple[float | None, str | None]:
    for key, tflops, source in PEAKS:
        if name and key in name:
            return tflops, source
    return None, None


# ---------------------------------------------------------------------------
# The warm start
# ---------------------------------------------------------------------------

def checkpoint(args, scratch: Path) -> tuple[str, str]:
    """(path, description) of the model every side starts from."""
    if args.model:
        return args.model, os.path.relpath(args.model, REPO)
    from training.sft import warm_start_path

    default = warm_start_path(args.preset, REPO)
    if (default / "config.json").is_file():
        return str(default), os.path.relpath(default, REPO)
    from training.model import build_model
    from training.presets import get_preset
    from training.task import load_task
    from training.tokenizer import save_tokenizer, task_corpus, train_tokenizer
    from unipo_build.core.file_names import SFT_POOL

    rows = load_task(REPO / get_preset(args.preset).task_dir / SFT_POOL)
    tok = train_tokenizer(task_corpus(rows))
    model = build_model(args.preset, len(tok), seed=args.seed, pad_token_id=tok.pad_token_id,
                        bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id)
    path = scratch / f"random-{args.preset}"
    model.save_pretrained(path)
    save_tokenizer(tok, path)
    return str(path), f"random {args.preset}-preset model (seed {args.seed}), the task's tokenizer"


# ---------------------------------------------------------------------------
# Workers (one run each, in their own process)
# ---------------------------------------------------------------------------

def sync(device: str) -> None:
    import torch

    if device == "cuda":
        torch.cuda.synchronize()


def wait_at_barrier(barrier: str | None, index: int) -> None:
    """Tell the parent this run is warm, then wait until every run is (the file `go` appears)."""
    if not barrier:
        return
    folder = Path(barrier)
    (folder / f"ready-{index}").write_text("")
    while not (folder / "go").exists():
        time.sleep(0.05)


def memory(device: str) -> dict:
    import resource

    import torch

    out = {"peak_rss_gb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20}
    if device == "cuda":
        out.update(peak_reserved_gb=torch.cuda.max_memory_reserved() / 2**30,
                   peak_allocated_gb=torch.cuda.max_memory_allocated() / 2**30)
    return out


def run_ours(args, model_path: str, out: Path, baseline: bool, index: int) -> dict:
    import torch

    from training.model import count_parameters
    from training.rl import Trainer, TrainOptions

    overrides = dict(SMOKE) if args.smoke else {}
    if args.micro_rows:
        overrides["cuda_micro_rows"] = args.micro_rows
    if args.no_graphs:
        overrides["cuda_graphs"] = False
    total = args.warmup + args.rollouts
    t = Trainer(TrainOptions(algorithm="grpo", preset=args.preset, steps=total + bool(args.profile), seed=args.seed + index, out=str(out),
                             model=model_path, device=args.device, progress=False, eval_every=10**9,
                             threads=args.threads, rl_overrides=overrides or None))
    if baseline:  # the path before issue 20, on this device: float32, CPU micro-batches, pruning decoder
        t.autocast, t.gpu_path, t.static_decode, t.micro_rows = None, False, False, t.rl.micro_rows
        t.fuse_old = False  # and a separate pass of old log-probs (the CPU path fuses it too since issue 45)
    setup0 = time.perf_counter()
    t.setup()
    setup_s = time.perf_counter() - setup0
    params = count_parameters(t.policy)
    marks: dict = {}
    sample, update = t._sample_rollout, t._update

    def timed_sample():
        res = sample()
        sync(args.device)
        marks["sampled"] = time.perf_counter()
        batch = res[0]
        marks["batch"] = batch
        return res

    def timed_update(*a, **kw):
        if "update" not in marks:
            sync(args.device)
            marks["update"] = time.perf_counter()
        return update(*a, **kw)

    t._sample_rollout, t._update = timed_sample, timed_update
    records = []
    for r in range(total):
        if r == args.warmup:
            wait_at_barrier(args.barrier, index)
        marks.clear()
        sync(args.device)
        t0 = time.perf_counter()
        t.run_rollout()
        sync(args.device)
        t1 = time.perf_counter()
        b = marks["batch"]
        prompt_tokens = int(b.attention_mask[:, :b.prompt_width].sum())
        gen_tokens = int(b.response_mask.sum())
        passes = (0 if t.fused_old_logprobs else 1) + (1 if t.reference is not None else 0)
        records.append({
            "measured": r >= args.warmup, "wall_s": t1 - t0, "sampling_s": marks["sampled"] - t0,
            "old_ref_s": marks["update"] - marks["sampled"], "updates_s": t1 - marks["update"],
            "responses": b.size, "prompt_tokens": prompt_tokens, "generated_tokens": gen_tokens,
            "logprob_passes": passes, "epochs": t.rl.epochs, "updates": t.rl.epochs * t.rl.minibatches})
    if args.profile and not baseline:
        profile_rollout(t, args.device, Path(args.profile))
    m = [r for r in records if r["measured"]]
    n = len(m)
    seq = sum(r["prompt_tokens"] + r["generated_tokens"] for r in m) / n
    gen = sum(r["generated_tokens"] for r in m) / n
    prm = sum(r["prompt_tokens"] for r in m) / n
    phases = {}
    for name, key, flop, tokens in (
            ("sampling", "sampling_s", 2 * params * (prm + gen), gen),
            ("old_ref_logprobs", "old_ref_s", 2 * params * seq * m[0]["logprob_passes"], seq * m[0]["logprob_passes"]),
            ("updates", "updates_s", 6 * params * seq * m[0]["epochs"], seq * m[0]["epochs"])):
        secs = sum(r[key] for r in m) / n
        phases[name] = {"seconds": secs, "tokens": tokens, "tokens_per_s": tokens / secs if secs else None,
                        "tflop": flop / 1e12, "tflops_achieved": flop / 1e12 / secs if secs else None}
    wall = sum(r["wall_s"] for r in m) / n
    flop = sum(p["tflop"] for p in phases.values())
    device_name = torch.cuda.get_device_name() if args.device == "cuda" else (platform.processor() or platform.machine())
    return {
        "mode": "baseline" if baseline else "ours", "index": index, "seed": args.seed + index,
        "device_name": device_name, "parameters": params, "setup_s": setup_s,
        "settings": {"precision": "bf16" if t.autocast else "fp32", "micro_rows": t.micro_rows,
                     "static_decoder": t.static_decode, "cuda_graphs": t.static_decode and args.device == "cuda",
                     "fused_old_logprobs": m[0]["logprob_passes"] < (2 if t.reference is not None else 1),
                     "prompts_per_step": t.rl.prompts_per_step, "group_size": t.rl.group_size,
                     "max_new_tokens": t.rl.max_new_tokens, "epochs": t.rl.epochs, "minibatches": t.rl.minibatches,
                     "detail_every": t.rl.detail_every, "threads": torch.get_num_threads()},
        "rollouts": n, "s_per_rollout": wall, "s_per_rollout_median": statistics.median(r["wall_s"] for r in m),
        "phases": phases, "tflop_per_rollout": flop, "tflops_achieved": flop / wall,
        "generated_tokens_per_rollout": gen, "sequence_tokens_per_rollout": seq,
        "memory": memory(args.device), "per_rollout": records,
    }


def run_trl(args, model_path: str, out: Path) -> dict:
    import torch

    import benchmarks.trainer_speed as ts
    from training.rl import Trainer, TrainOptions

    ts.ARGS_THREADS[0] = torch.get_num_threads()
    warmup = min(args.warmup, 1)  # TRL has no graphs to capture: one warm-up rollout
    total = warmup + args.trl_rollouts
    overrides = dict(SMOKE) if args.smoke else None
    trainer = Trainer(TrainOptions(algorithm="grpo", preset=args.preset, steps=total, seed=args.seed,
                                   out=str(out / "unused"), model=model_path, device=args.device, progress=False,
                                   threads=args.threads, rl_overrides=overrides))

    class Side:  # what TRLSide reads of ours: the trainer's settings (no model is loaded for it)
        pass

    ours = Side()
    ours.trainer = trainer
    targs = argparse.Namespace(warmup=warmup, rollouts=args.trl_rollouts, seed=args.seed, model=model_path,
                               device=args.device, bf16=args.device == "cuda")
    side = ts.TRLSide(targs, out / "trl", ours, lambda r: None)
    side.run()
    s = ts.summarize(side.records)
    import transformers
    import trl

    return {"mode": "trl", "summary": s, "mapping": side.mapping, "bf16": side.config.bf16,
            "s_per_rollout": s["s_per_rollout"], "s_per_rollout_gen": s["s_per_rollout_gen"],
            "s_per_rollout_update": s["s_per_rollout_update"], "trl": trl.__version__,
            "transformers": transformers.__version__, "memory": memory(args.device), "per_rollout": side.records}


def profile_rollout(trainer, device: str, path: Path, rows: int = 40) -> None:
    """One more rollout under torch.profiler (CPU, and CUDA on a GPU), its operators by self device
    time (self CPU time without CUDA) written to `path`: where a rollout's time goes, kernel by kernel."""
    from torch.profiler import ProfilerActivity, profile

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device == "cuda" else [])
    sync(device)
    with profile(activities=activities) as prof:
        trainer.run_rollout()
        sync(device)
    sort = "self_cuda_time_total" if device == "cuda" else "self_cpu_time_total"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"gpu_speed --profile: one rollout of {trainer.rl.prompts_per_step} prompts x "
                    f"{trainer.rl.group_size} on {device}, sorted by {sort}\n\n"
                    + prof.key_averages().table(sort_by=sort, row_limit=rows) + "\n")


def worker(args) -> None:
    import torch  # noqa: F401  (the worker's own CUDA context)

    out = Path(args.out_dir)
    index = int(os.environ.get("GPU_SPEED_INDEX", "0"))
    model_path = os.environ["GPU_SPEED_MODEL"]
    if args.worker == "trl":
        result = run_trl(args, model_path, out / "trl")
    else:
        result = run_ours(args, model_path, out / f"{args.worker}-{index}", args.worker == "baseline", index)
    Path(args.result).write_text(json.dumps(result, indent=1))


# ---------------------------------------------------------------------------
# The parent: starts the workers, measures the card, reports
# ---------------------------------------------------------------------------

def spawn(args, role: str, model_path: str, out: Path, index: int = 0, barrier: Path | None = None,
          extra: list[str] | None = None) -> tuple[subprocess.Popen, Path]:
    result = out / f"result-{role}-{index}.json"
    cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", role, "--result", str(result),
           "--out-dir", str(out), "--device", args.device, "--preset", args.preset, "--seed", str(args.seed),
           "--warmup", str(args.warmup), *(extra or [])]
    if args.smoke:
        cmd.append("--smoke")
    if args.micro_rows:
        cmd += ["--micro-rows", str(args.micro_rows)]
    if args.no_graphs:
        cmd.append("--no-graphs")
    if args.threads:
        cmd += ["--threads", str(args.threads)]
    if barrier is not None:
        cmd += ["--barrier", str(barrier)]
    env = {**os.environ, "GPU_SPEED_INDEX": str(index), "GPU_SPEED_MODEL": model_path,
           "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)}
    return subprocess.Popen(cmd, env=env), result


def finish(proc: subprocess.Popen, result: Path, what: str) -> dict:
    if proc.wait() != 0:
        raise SystemExit(f"gpu_speed: the {what} run failed (exit {proc.returncode}); its error is above")
    return json.loads(result.read_text())


def gpu_used_mib() -> int | None:
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=memory.used", "--format=csv,noheader,nounits"],
                             capture_output=True, text=True, timeout=10)
        return int(out.stdout.split()[0]) if out.returncode == 0 and out.stdout.strip() else None
    except (OSError, ValueError, subprocess.SubprocessError):
        return None


def concurrent(args, model_path: str, out: Path) -> dict:
    barrier = out / "barrier"
    barrier.mkdir(parents=True, exist_ok=True)
    procs = [spawn(args, "ours", model_path, out, index=i + 1, barrier=barrier,
                   extra=["--rollouts", str(args.concurrent_rollouts)]) for i in range(args.concurrent)]
    while len(list(barrier.glob("ready-*"))) < args.concurrent:
        if any(p.poll() not in (None, 0) for p, _ in procs):
            break
        time.sleep(0.1)
    (barrier / "go").write_text("")
    used = []
    while any(p.poll() is None for p, _ in procs):
        mib = gpu_used_mib() if args.device == "cuda" else None
        if mib is not None:
            used.append(mib)
        time.sleep(0.5)
    runs = [finish(p, r, f"concurrent #{i + 1}") for i, (p, r) in enumerate(procs)]
    per = [r["s_per_rollout"] for r in runs]
    return {"runs": len(runs), "s_per_rollout_mean": statistics.mean(per), "s_per_rollout_max": max(per),
            "rollouts_per_s_all_runs": sum(1 / x for x in per),
            "peak_reserved_gb_max": max((r["memory"].get("peak_reserved_gb") or 0) for r in runs) or None,
            "gpu_used_gb_max": max(used) / 1024 if used else None,
            "per_run": [{k: r[k] for k in ("index", "s_per_rollout", "s_per_rollout_median", "memory", "phases")}
                        for r in runs]}


def matmul_rate(device: str) -> float | None:
    """Measured bf16 matrix-product rate (TFLOP/s): 8192^3 on random data, median of 10 after 3."""
    if device != "cuda":
        return None
    import torch

    n = 8192
    a, b = (torch.randn(n, n, device="cuda", dtype=torch.bfloat16) for _ in range(2))
    for _ in range(3):
        a @ b
    times = []
    for _ in range(10):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        a @ b
        e.record()
        e.synchronize()
        times.append(s.elapsed_time(e) / 1e3)
    del a, b
    torch.cuda.empty_cache()
    return 2 * n**3 / statistics.median(times) / 1e12


def fmt(x, spec="{:.3f}"):
    return "-" if x is None else spec.format(x)


def main(args) -> dict:
    import torch

    if args.device == "cuda" and not torch.cuda.is_available():
        raise SystemExit("gpu_speed: --device cuda but torch sees no CUDA GPU; on a CPU run --device cpu --smoke")
    started = datetime.now(timezone.utc)
    out = Path(args.out_dir) if args.out_dir else Path(tempfile.mkdtemp(prefix="gpu_speed_"))
    out.mkdir(parents=True, exist_ok=True)
    model_path, model_desc = checkpoint(args, out)
    measured_rate = matmul_rate(args.device)  # before any run, on an idle card

    profile = ["--profile", str(Path(args.profile).resolve())] if args.profile else []
    proc, res = spawn(args, "ours", model_path, out, extra=["--rollouts", str(args.rollouts), *profile])
    ours = finish(proc, res, "ours")
    errors: dict[str, str] = {}

    def optional(name, fn):
        """A comparison mode: its failure is reported in the JSON and the other modes still run."""
        try:
            return fn()
        except (SystemExit, Exception) as err:  # noqa: BLE001  (a worker's exit is reported, not raised)
            errors[name] = str(err)
            print(f"gpu_speed: {name}: {err}", file=sys.stderr)
            return None

    def worker_run(role, extra, what):
        proc, res = spawn(args, role, model_path, out, extra=extra)
        return finish(proc, res, what)

    name = ours["device_name"]
    peak, source = peak_for(name) if args.device == "cuda" else (None, None)
    ours["peak_fraction"] = ours["tflops_achieved"] / peak if peak else None
    ours["measured_matmul_fraction"] = ours["tflops_achieved"] / measured_rate if measured_rate else None
    for p in ours["phases"].values():
        p["peak_fraction"] = p["tflops_achieved"] / peak if peak and p["tflops_achieved"] else None
    import transformers

    path = Path(args.json)
    path.parent.mkdir(parents=True, exist_ok=True)
    modes: dict = {"baseline": None, "concurrent": None, "trl": None}

    def save() -> dict:
        """The JSON as it stands: written after every mode, so a call cut short keeps what it measured."""
        baseline, trl_side = modes["baseline"], modes["trl"]
        result = {
            "benchmark": "gpu_speed", "date": started.isoformat(timespec="seconds"),
            "finished": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "command": "python " + " ".join([Path(sys.argv[0]).as_posix(), *sys.argv[1:]]),
            "device": {"type": args.device, "name": name, "bf16_dense_peak_tflops": peak, "peak_source": source,
                       "measured_bf16_matmul_tflops": measured_rate},
            "torch": torch.__version__, "transformers": transformers.__version__,
            "python": platform.python_version(), "cuda": torch.version.cuda, "model": model_desc,
            "preset": args.preset, "algorithm": "grpo",
            "flop_formula": "sampling 2*P*(T_prompt+T_gen); old/ref 2*P*T_seq*passes; updates 6*P*T_seq*epochs; "
                            "P = parameters (tied embedding once), T = real tokens (no padding)",
            "warmup_rollouts": args.warmup, "ours": ours, **modes,
            "ours_over_trl_speed": (trl_side["s_per_rollout"] / ours["s_per_rollout"]) if trl_side else None,
            "ours_over_baseline_speed": (baseline["s_per_rollout"] / ours["s_per_rollout"]) if baseline else None,
            "errors": errors,
        }
        path.write_text(json.dumps(result, indent=1) + "\n")
        return result

    save()
    ph = ours["phases"]
    print(f"gpu_speed: ours {ours['s_per_rollout']:.3f} s/rollout (sampling {ph['sampling']['seconds']:.3f}, old/ref "
          f"{ph['old_ref_logprobs']['seconds']:.3f}, updates {ph['updates']['seconds']:.3f}), "
          f"{ours['tflops_achieved']:.2f} TFLOP/s, peak reserved {fmt(ours['memory'].get('peak_reserved_gb'), '{:.2f}')} GB",
          flush=True)
    if args.baseline:
        # the old path is several times slower: fewer rollouts keep the call short
        modes["baseline"] = optional("baseline", lambda: worker_run(
            "baseline", ["--rollouts", str(min(args.rollouts, 5))], "baseline"))
        save()
    if args.concurrent:
        modes["concurrent"] = optional("concurrent", lambda: concurrent(args, model_path, out))
        save()
    if args.trl:
        modes["trl"] = optional("trl", lambda: worker_run("trl", ["--trl-rollouts", str(args.trl_rollouts)], "TRL"))
    result = save()
    baseline, many, trl_side = modes["baseline"], modes["concurrent"], modes["trl"]

    s = ours["settings"]
    print(f"\ngpu_speed: {name}, torch {torch.__version__}, {model_desc}, {ours['parameters']:,} parameters")
    print(f"GRPO, {s['prompts_per_step']} prompts x {s['group_size']}, <= {s['max_new_tokens']} new tokens, "
          f"{s['epochs']} x {s['minibatches']} updates; precision {s['precision']}, micro-batch {s['micro_rows']} rows, "
          f"CUDA graphs {s['cuda_graphs']}, old log-probs fused {s['fused_old_logprobs']}; "
          f"mean of {ours['rollouts']} rollouts after {args.warmup} warm-up")
    print(f"peak: {fmt(peak, '{:.0f}')} TFLOP/s bf16 dense ({source or 'no data-sheet peak for this device'}); "
          f"measured 8192^3 bf16 matmul {fmt(measured_rate, '{:.0f}')} TFLOP/s")
    print(f"\n{'phase':18} {'seconds':>8} {'tokens/s':>11} {'TFLOP':>8} {'TFLOP/s':>8} {'of peak':>8}")
    for label, key in (("sampling", "sampling"), ("old/ref log-probs", "old_ref_logprobs"), ("updates", "updates")):
        p = ours["phases"][key]
        print(f"{label:18} {p['seconds']:8.3f} {fmt(p['tokens_per_s'], '{:,.0f}'):>11} {p['tflop']:8.3f} "
              f"{fmt(p['tflops_achieved'], '{:.2f}'):>8} {fmt(p.get('peak_fraction'), '{:.1%}'):>8}")
    print(f"{'rollout':18} {ours['s_per_rollout']:8.3f} {'':>11} {ours['tflop_per_rollout']:8.3f} "
          f"{ours['tflops_achieved']:8.2f} {fmt(ours['peak_fraction'], '{:.1%}'):>8}")
    mem = ours["memory"]
    print(f"peak memory of the run: GPU reserved {fmt(mem.get('peak_reserved_gb'), '{:.2f}')} GB, "
          f"allocated {fmt(mem.get('peak_allocated_gb'), '{:.2f}')} GB; host RSS {mem['peak_rss_gb']:.2f} GB")
    if baseline:
        print(f"baseline (fp32, no graphs, micro-batch {baseline['settings']['micro_rows']}): "
              f"{baseline['s_per_rollout']:.3f} s/rollout (sampling {baseline['phases']['sampling']['seconds']:.3f}, "
              f"old/ref {baseline['phases']['old_ref_logprobs']['seconds']:.3f}, updates "
              f"{baseline['phases']['updates']['seconds']:.3f}); ours is {result['ours_over_baseline_speed']:.2f}x faster")
    if many:
        print(f"{many['runs']} runs at once: {many['s_per_rollout_mean']:.3f} s/rollout each (slowest "
              f"{many['s_per_rollout_max']:.3f}), {many['rollouts_per_s_all_runs']:.2f} rollouts/s together; peak "
              f"reserved per run {fmt(many['peak_reserved_gb_max'], '{:.2f}')} GB, GPU used "
              f"{fmt(many['gpu_used_gb_max'], '{:.1f}')} GB")
    if trl_side:
        print(f"TRL GRPOTrainer {trl_side['trl']} (bf16 {trl_side['bf16']}): {trl_side['s_per_rollout']:.3f} s/rollout "
              f"(generation {trl_side['s_per_rollout_gen']:.3f}, update {trl_side['s_per_rollout_update']:.3f}); "
              f"ours over TRL: {result['ours_over_trl_speed']:.2f}x")
    print(f"wrote {path}")
    return result


if __name__ == "__main__":
    ARGS = parse_args()
    if ARGS.worker:
        worker(ARGS)
    else:
        main(ARGS)
