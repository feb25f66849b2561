# Shell functions the GPU machine's scripts share (gpu_call.sh, gpu_set.sh, gpu_mps.sh); sourced,
# not run. From the repository root.

# The carried wheels (benchmarks/README.md, "GPU speed") into /tmp/site, ahead of the image's packages.
install_wheels() {
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    || return 1
  export PYTHONPATH="/tmp/site:$PWD"
}

# start_mps CLIENTS: start a CUDA MPS server and probe it with CLIENTS processes at once
# (benchmarks/mps_probe.py: bf16 product, growable allocations, a graph replay). Returns 0 with the
# server up; otherwise prints the probes' logs, stops any server it started and returns 1, so the
# runs take turns on the card as without MPS. The card's own settings are left as they are.
start_mps() {
  local clients=${1:-1} pids=() i ok=0
  export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log
  mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
  command -v nvidia-cuda-mps-control >/dev/null && nvidia-cuda-mps-control -d || return 1
  for i in $(seq 1 "$clients"); do
    timeout 60 python3 benchmarks/mps_probe.py > "/tmp/mps-probe-$i.log" 2>&1 & pids+=($!)
  done
  for i in "${pids[@]}"; do wait "$i" || ok=1; done
  if [ "$ok" -ne 0 ]; then
    tail -n 20 /tmp/mps-probe-*.log "$CUDA_MPS_LOG_DIRECTORY"/*.log 2>/dev/null
    stop_mps
    return 1
  fi
}

stop_mps() {
  echo quit | nvidia-cuda-mps-control
  sleep 2
}
