#!/usr/bin/env bash
# Tiny-set runs on the GPU machine's 16 CPU cores (not its GPU): `unipo suite --device cpu`, one
# torch thread per run, as on the 2-core machine, only many at once. Made for a lease of 15 minutes
# in at most two calls of 10: the suite checkpoints every 5 rollouts into work/device-runs (ignored
# by git, so a warm machine keeps it between calls), and running this script again at once resumes
# every unfinished run from its checkpoint. Each call sends back the runs finished so far.
#
# From the repository root, with the wheels of benchmarks/README.md ("GPU speed") in .whl/:
#     BUDGET=540 ONLY="cispo dual_clip ..." bash benchmarks/tiny_on_device.sh     # timeout_s 570
# $OUT gets runs-tiny.tar.gz (finished runs, without checkpoints, and the suite's logs), cpu.txt.
set -uo pipefail
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false
OUT=${OUT:-/tmp/tiny_on_device_out}
RUNS=work/device-runs
BUDGET=${BUDGET:-540}
T0=$(date +%s)
mkdir -p "$OUT" "$RUNS" work
source benchmarks/gpu_lib.sh
install_wheels || { echo "wheel install failed"; exit 1; }
{ nproc; lscpu | grep -E "Model name|Thread|Core|Socket|MHz"; python3 -c "import torch; print(torch.__version__)"; } \
  | tee "$OUT/cpu.txt"

# The shipped suite, checkpointing every 5 rollouts (checkpoints change nothing a run computes).
sed 's/^rollouts: \(.*\)$/rollouts: \1\ncheckpoint_every: 5/' data/suite.yaml > work/suite-device.yaml
grep -q '^checkpoint_every: 5' work/suite-device.yaml || { echo "could not set checkpoint_every"; exit 1; }

pack() {
  python3 benchmarks/pack_runs.py "$OUT/runs-tiny.tar.gz" "$RUNS" runs work/suite/suite.log work/suite/logs
}

rm -f /tmp/tiny-stop
( while [ ! -f /tmp/tiny-stop ]; do
    for _ in $(seq 12); do sleep 5; [ -f /tmp/tiny-stop ] && exit 0; done
    pack > /dev/null 2>&1
  done ) &
PACKER=$!
LEFT=$((BUDGET - ($(date +%s) - T0) - 20))
echo "suite: $LEFT s"
# shellcheck disable=SC2086
timeout -s INT -k 10 "$LEFT" python3 -m unipo_build.cli.main suite --suite work/suite-device.yaml --out "$RUNS" \
  --device cpu --jobs "${JOBS:-16}" ${ONLY:+--only $ONLY} 2>&1 | grep -v "^ *$"
touch /tmp/tiny-stop; wait "$PACKER"
pack
for d in "$RUNS"/*/; do
  python3 -c "import json,sys; p=sys.argv[1]; n=sum(1 for _ in open(p+'steps.jsonl')) if __import__('os').path.exists(p+'steps.jsonl') else 0; print(p, n, 'updates')" "$d"
done
echo "done in $(($(date +%s) - T0)) s"
