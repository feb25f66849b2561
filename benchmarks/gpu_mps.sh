#!/usr/bin/env bash
# N runs sharing one GPU, with and without CUDA MPS (issue 32): benchmarks/gpu_speed.py --concurrent N
# twice on the same machine, the second time through an MPS server (started only if
# benchmarks/mps_probe.py passes through it, and stopped after). Without MPS the runs' contexts take
# turns on the card; with it their kernels run side by side. What to compare: each JSON's
# concurrent.rollouts_per_s_all_runs (and the runs' seconds per rollout).
#
# From the repository root, with the wheels of benchmarks/README.md ("GPU speed") in .whl/:
#     N=8 bash benchmarks/gpu_mps.sh      # about 3 minutes; writes $OUT/nomps.json and $OUT/mps.json
# Without a warm start in work/sft-gpu both sides use the same random model of the gpu preset's
# shape, whose answers run to the budget (the worst case for a rollout's cost).
set -uo pipefail
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True
OUT=${OUT:-/tmp/gpu_mps_out}
N=${N:-8}
EACH=${EACH:-95}
mkdir -p "$OUT"
source benchmarks/gpu_lib.sh
install_wheels || { echo "wheel install failed"; exit 1; }
[ -f data/tasks-gpu/train.jsonl ] || python3 -m training.task --out data/tasks-gpu --level gpu --seed 0 > /dev/null
bench() {
  timeout "$EACH" python3 benchmarks/gpu_speed.py --rollouts 2 --warmup 1 --concurrent "$N" --concurrent-rollouts 3 \
    --json "$OUT/$1.json" --out-dir "/tmp/gpu_mps_$1" 2>&1 | tail -4
}
echo "== $(date -u +%T) $N runs at once, without MPS"
bench nomps
if start_mps 1; then
  echo "== $(date -u +%T) $N runs at once, through MPS"
  bench mps
  stop_mps
else
  echo "MPS unavailable here"
fi
python3 - "$OUT" <<'PY'
import json, sys
from pathlib import Path
for name in ("nomps", "mps"):
    p = Path(sys.argv[1]) / f"{name}.json"
    if p.is_file():
        d = json.loads(p.read_text())
        c = d.get("concurrent") or {}
        print(f"{name:6s} alone {d['ours']['s_per_rollout']:.2f} s/rollout; {c.get('runs')} at once: "
              f"{c.get('s_per_rollout_mean') or float('nan'):.2f} s/rollout each, {c.get('rollouts_per_s_all_runs') or float('nan'):.2f} rollouts/s in all")
PY
echo "== $(date -u +%T) done"
