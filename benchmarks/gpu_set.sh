#!/usr/bin/env bash
# The GPU machine's one call that makes the gpu set (issue 32): install the carried wheels, make
# data/tasks-gpu and the gpu warm start (stopped by the preset's rule), then train every run of
# data/suite-gpu.yaml at once (19: five algorithms x three seeds and the DAPO ladder's four rungs)
# with `unipo suite --time-limit`, under CUDA MPS when the machine allows it (the runs' many small
# kernels then run side by side instead of taking turns), and send back the finished runs, the
# warm start's meta, the logs, an nvidia-smi trace and the set's report.
#
# From the repository root, with the wheels of benchmarks/README.md ("GPU speed") in .whl/:
#     UNIPO_COMMIT=$(git rev-parse HEAD) bash benchmarks/gpu_set.sh   # timeout_s 600; BUDGET (s) bounds it
# Everything is written under $OUT (four files: runs-gpu.tar.gz holds the runs and every log). The
# runs are packed as soon as the suite ends, and every 60 s while it runs, so a call cut short still
# returns the runs that finished. The runs go to work/gpu-set/runs-gpu (not data/runs-gpu, which
# holds the shipped set: the suite would skip those runs as finished).
set -uo pipefail
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false
# Many runs share one GPU: allocate in growable segments so that each run's reserved memory stays
# near what it uses instead of its fragmented high-water mark.
export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True
OUT=${OUT:-/tmp/gpu_set_out}
RUNS=work/gpu-set/runs-gpu
LOGS=work/gpu-set/logs
mkdir -p "$OUT" "$LOGS"
source benchmarks/gpu_lib.sh
T0=$(date +%s)
BUDGET=${BUDGET:-570}
left() { echo $((BUDGET - ($(date +%s) - T0))); }
log() { echo "== $(date -u +%T) (+$(($(date +%s) - T0)) s) $*" | tee -a "$LOGS/steps.log"; }

log "install wheels"
install_wheels || { log "wheel install failed"; exit 1; }
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv | tee "$LOGS/nvidia-smi.csv"
python3 -c "import sys, os, torch, transformers, pydantic; print(sys.version.split()[0], torch.__version__, \
transformers.__version__, pydantic.VERSION, torch.cuda.get_device_name(), os.cpu_count(), 'cores')" | tee "$LOGS/versions.txt"

pack() {
  # Finished runs only (their header has finished_at), without checkpoints; the warm start's meta;
  # the suite's summary and logs; this call's logs. Written to a temporary name, then renamed.
  python3 benchmarks/pack_runs.py "$OUT/runs-gpu.tar.gz" "$RUNS" runs-gpu work/sft-gpu/sft_meta.json \
    data/tasks-gpu/meta.json work/suite/summary.json work/suite/suite.log work/suite/logs "$LOGS"
}

log "task data (level gpu, seed 0) and the warm start (stop rule of the gpu preset)"
[ -f data/tasks-gpu/train.jsonl ] || python3 -m training.task --out data/tasks-gpu --level gpu --seed 0 | tail -3
sha256sum data/tasks-gpu/*.jsonl | tee "$LOGS/tasks-gpu.sha256"
timeout "${SFT_TIMEOUT:-230}" python3 -m unipo_build.cli.main sft --preset gpu --device cuda --no-progress 2>&1 \
  | tee "$LOGS/sft.log" | tail -8
[ -f work/sft-gpu/config.json ] || { log "no warm start: stopping"; pack; exit 1; }
python3 -c "import json; m=json.load(open('work/sft-gpu/sft_meta.json')); \
print({k: m[k] for k in m if k in ('stopped_at_step','stop_accuracy_greedy','stop_rule','seconds','final_eval')})"

# CUDA MPS: one server holds the card and the runs' kernels share it concurrently, if two probing
# clients at once pass through it (gpu_lib.sh start_mps); else the runs take turns on the card.
MPS=off
start_mps 2 && MPS=on
log "CUDA MPS: $MPS"
echo "mps=$MPS" >> "$LOGS/versions.txt"

nvidia-smi --query-gpu=timestamp,memory.used,utilization.gpu --format=csv -l 5 > "$LOGS/gpu-trace.csv" 2>/dev/null &
SMI=$!
rm -f /tmp/gpu-set-stop
( while [ ! -f /tmp/gpu-set-stop ]; do
    for _ in 1 2 3 4 5 6 7 8 9 10 11 12; do sleep 5; [ -f /tmp/gpu-set-stop ] && exit 0; done
    pack > /dev/null 2>&1
  done ) &
PACKER=$!
SUITE_S=$(($(left) - 30))
log "suite: all runs at once, $SUITE_S s at most"
# --time-limit: each run stops taking rollouts when another one and its end evaluation would not
# fit, and finishes (its header says how many of the suite's rollouts it trained); the outer timeout
# is only the last resort.
timeout -s INT -k 20 "$SUITE_S" python3 -m unipo_build.cli.main suite --suite data/suite-gpu.yaml --out "$RUNS" \
  --jobs 19 --device cuda --time-limit $((SUITE_S - 25)) 2>&1 | tee "$LOGS/suite.log" | grep -v "^ *$"
kill "$SMI" 2>/dev/null
touch /tmp/gpu-set-stop; wait "$PACKER"
[ "$MPS" = on ] && stop_mps
log "pack"
cp "$LOGS/gpu-trace.csv" "$OUT/"
pack
python3 benchmarks/gpu_set_report.py --runs "$RUNS" --trace "$LOGS/gpu-trace.csv" --json "$OUT/gpu_set.json" 2>&1 \
  | tee "$OUT/report.txt"
log "done"
