#!/usr/bin/env bash
# The GPU machine's one call that makes the gpu set (issue 20 item 4): install the carried wheels,
# make data/tasks-gpu and the gpu warm start (stopped by the preset's rule), then train the suite's
# 15 core runs (five algorithms x three seeds) at once with `unipo suite`, and send back the
# finished runs, the warm start's meta, the suite's logs and a GPU memory/utilisation trace.
# If time is left, one run alone under torch.profiler (benchmarks/gpu_speed.py --profile).
#
# From the repository root, with the wheels of benchmarks/README.md ("GPU speed") in .whl/:
#     UNIPO_COMMIT=$(git rev-parse HEAD) bash benchmarks/gpu_set.sh   # timeout_s 600; BUDGET (s) bounds it
# Everything is written under $OUT; what finished before a timeout is still packed.
set -uo pipefail
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false
# Fifteen runs share one GPU: allocate in growable segments so that each run's reserved memory stays
# near what it uses (about 7.3 GB at peak) instead of its fragmented high-water mark.
export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True
OUT=${OUT:-/tmp/gpu_set_out}
mkdir -p "$OUT"
T0=$(date +%s)
BUDGET=${BUDGET:-575}
left() { echo $((BUDGET - ($(date +%s) - T0))); }
log() { echo "== $(date -u +%T) (+$(($(date +%s) - T0)) s) $*" | tee -a "$OUT/steps.log"; }
CORE="grpo dapo dr_grpo ppo reinforce grpo-s1 dapo-s1 dr_grpo-s1 reinforce-s1 ppo-s1 grpo-s2 dapo-s2 dr_grpo-s2 reinforce-s2 ppo-s2"

log "install wheels"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  || { log "wheel install failed"; exit 1; }
export PYTHONPATH="/tmp/site:$PWD"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv | tee "$OUT/nvidia-smi.csv"
python3 -c "import sys, os, torch, transformers, pydantic; print(sys.version.split()[0], torch.__version__, \
transformers.__version__, pydantic.VERSION, torch.cuda.get_device_name(), os.cpu_count(), 'cores')" | tee "$OUT/versions.txt"

pack() {
  # Finished runs only (their header has finished_at), the warm start's meta, the suite's logs.
  python3 - "$OUT" <<'EOF'
import json, sys, tarfile
from pathlib import Path
out = Path(sys.argv[1])
runs = Path("data/runs-gpu")
done = [d for d in sorted(runs.iterdir()) if (d / "header.json").is_file()
        and json.loads((d / "header.json").read_text()).get("finished_at")] if runs.is_dir() else []
with tarfile.open(out / "runs-gpu.tar.gz", "w:gz") as tar:
    for d in done:
        tar.add(d, arcname=f"runs-gpu/{d.name}", filter=lambda t: None if "/checkpoint" in t.name else t)
    for extra in ("work/sft-gpu/sft_meta.json", "data/tasks-gpu/meta.json", "work/suite/summary.json",
                  "work/suite/suite.log"):
        if Path(extra).is_file():
            tar.add(extra, arcname=extra)
    if Path("work/suite/logs").is_dir():
        tar.add("work/suite/logs", arcname="work/suite/logs")
print(f"packed {len(done)} finished runs: {' '.join(d.name for d in done)}")
EOF
  ls -la "$OUT"
}

log "task data (level gpu, seed 0) and the warm start (stop rule of the gpu preset)"
[ -f data/tasks-gpu/train.jsonl ] || python3 -m training.task --out data/tasks-gpu --level gpu --seed 0 | tail -3
sha256sum data/tasks-gpu/*.jsonl | tee "$OUT/tasks-gpu.sha256"
timeout "${SFT_TIMEOUT:-230}" python3 -m unipo_build.cli sft --preset gpu --device cuda --no-progress 2>&1 \
  | tee "$OUT/sft.log" | tail -20
[ -f work/sft-gpu/config.json ] || { log "no warm start: stopping"; pack; exit 1; }
cat work/sft-gpu/sft_meta.json | python3 -c "import json,sys; m=json.load(sys.stdin); \
print({k: m[k] for k in m if k in ('stopped_at_step','stop_accuracy_greedy','stop_rule','seconds','final_eval')})"

nvidia-smi --query-gpu=timestamp,memory.used,utilization.gpu --format=csv -l 5 > "$OUT/gpu-trace.csv" 2>/dev/null &
SMI=$!
SUITE_S=$(($(left) - 35))
log "suite: the 15 core runs at once, $SUITE_S s at most"
# shellcheck disable=SC2086
# --time-limit: each run stops taking rollouts when another one and its end evaluation would not
# fit, and finishes (its header says how many of the suite's rollouts it trained); the outer timeout
# is only the last resort.
timeout -s INT -k 25 "$SUITE_S" python3 -m unipo_build.cli suite --suite data/suite-gpu.yaml --out data/runs-gpu \
  --jobs 15 --device cuda --time-limit $((SUITE_S - 25)) --only $CORE 2>&1 | tee "$OUT/suite.log" | grep -v "^ *$"
kill "$SMI" 2>/dev/null
log "pack"
pack

if [ "$(left)" -gt 75 ] && grep -q -- "--profile" benchmarks/gpu_speed.py; then
  log "one run alone with a profiled rollout ($(left) s left)"
  timeout $(($(left) - 10)) python3 benchmarks/gpu_speed.py --rollouts 4 --json "$OUT/gpu_speed_alone.json" \
    --profile "$OUT/profile.txt" --out-dir /tmp/gpu_speed_runs 2>&1 | tail -30
fi
log "done"
