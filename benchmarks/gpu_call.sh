#!/usr/bin/env bash
# The GPU machine's one call for issue 20's speed figures: install the carried wheels, run the GPU
# tests, then benchmarks/gpu_speed.py (ours alone and one more rollout of it under torch.profiler,
# the pre-issue-20 path, 8 runs at once, TRL's GRPOTrainer), everything written under $OUT.
# About 4-6 minutes on an H100 or H200; its
# timeouts add up to under 9.5 minutes (run it with timeout_s 600).
#
# From the repository root, with the wheels of benchmarks/README.md ("GPU speed") in .whl/:
#     bash benchmarks/gpu_call.sh
# A warm start in work/sft-gpu (carried) is used if present; otherwise a random model of the gpu
# preset's shape, whose answers run to the 96-token budget (the worst case for the target).
set -uo pipefail
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false
OUT=${OUT:-/tmp/gpu_call_out}
mkdir -p "$OUT"
log() { echo "== $(date -u +%T) $*" | tee -a "$OUT/steps.log"; }

log "install wheels"
source benchmarks/gpu_lib.sh
install_wheels || { log "wheel install failed"; exit 1; }
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm,clocks.max.sm --format=csv | tee "$OUT/nvidia-smi.csv"
python3 -c "import sys, torch, transformers, trl, pydantic; print(sys.version.split()[0], torch.__version__, \
transformers.__version__, trl.__version__, pydantic.VERSION, torch.cuda.get_device_name())" | tee "$OUT/versions.txt"

log "GPU tests (CUDA graphs against eager and a full forward, the trainer's GPU path)"
timeout "${TEST_TIMEOUT:-120}" python3 -m pytest -p no:cacheprovider -q tests/test_gpu_paths.py -k cuda 2>&1 \
  | tee "$OUT/pytest.log"

if [ ! -d work/sft-gpu ] && [ -n "${SFT_STEPS:-}" ]; then
  log "warm start of the gpu preset on data/tasks-gpu (stop rule, at most $SFT_STEPS steps)"
  timeout "${SFT_TIMEOUT:-200}" python3 -m unipo_build.cli.main sft --preset gpu --steps "$SFT_STEPS" --device cuda 2>&1 \
    | tee "$OUT/sft.log" | grep -v "^ *step" | tail -40
  cp work/sft-gpu/sft_meta.json "$OUT/" 2>/dev/null
fi

log "benchmark: ours, baseline, 8 at once, TRL"
timeout "${BENCH_TIMEOUT:-330}" python3 benchmarks/gpu_speed.py --baseline --concurrent 8 --trl --json "$OUT/gpu_speed.json" \
  --profile "$OUT/gpu_profile.txt" --out-dir /tmp/gpu_speed_runs 2>&1 | tee "$OUT/gpu_speed.log"
rc=${PIPESTATUS[0]}
if [ "$rc" -ne 0 ] && [ ! -s "$OUT/gpu_speed.json" ]; then
  log "benchmark failed (exit $rc): ours alone without CUDA graphs, to have a figure"
  timeout 90 python3 benchmarks/gpu_speed.py --no-graphs --json "$OUT/gpu_speed_no_graphs.json" \
    --out-dir /tmp/gpu_speed_runs_ng 2>&1 | tee "$OUT/gpu_speed_no_graphs.log"
fi
cp /tmp/gpu_speed_runs/result-*.json "$OUT/" 2>/dev/null

if [ "$rc" -eq 0 ] && [ -n "${MICRO256:-}" ]; then
  log "ours alone with micro-batches of 256 rows (the preset has 128: fewer passes, more memory)"
  timeout 90 python3 benchmarks/gpu_speed.py --micro-rows 256 --json "$OUT/gpu_speed_micro256.json" \
    --out-dir /tmp/gpu_speed_runs_256 2>&1 | tee "$OUT/gpu_speed_micro256.log"
fi
log "done"
