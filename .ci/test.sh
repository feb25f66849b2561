#!/usr/bin/env bash
# The whole test suite: .venv with torch (CPU) and the train + dev + trl + model extras (model: gguf, with which
# tests/test_pretrained.py writes the tiny GGUF it converts), OpenRLHF's Python
# code for the parity test, the browser libraries from npm, Chromium for the browser tests,
# then pytest. Arguments go to pytest; --install-only (first) installs all of it and runs no test.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$REPO_ROOT"

install_only=0
if [ "${1:-}" = "--install-only" ]; then
  install_only=1
  shift
fi

ensure_venv
# torch first and pinned, so that no later requirement lets pip pick another build.
if ! "$VPY" -c 'import sys, torch; sys.exit(torch.__version__.split("+")[0] != "2.13.0")' >/dev/null 2>&1; then
  say "pip install torch==2.13.0"
  quiet "$VPY" -m pip install -q torch==2.13.0
fi
pip_install_project ".[train,dev,trl,model]"
install_openrlhf_cpu
npm_ci

if ! have_browser; then
  if can_apt; then
    apt_install chromium chromium-driver
  elif [ "${CI:-}" = "true" ]; then
    die "Chromium and chromedriver are needed (apt-get install chromium chromium-driver)"
  else
    echo "warning: /usr/bin/chromium or /usr/bin/chromedriver missing: browser tests will be skipped" >&2
  fi
fi
if [ "$install_only" = 1 ]; then
  say "installed torch 2.13.0 and the train, dev, trl and model extras into .venv (no test run): source .venv/bin/activate"
  exit 0
fi
if have_browser; then
  export UNIPO_REQUIRE_BROWSER=1
fi
# OpenRLHF was installed above: a parity test that cannot import it fails instead of skipping.
export UNIPO_REQUIRE_OPENRLHF=1
# TRL came with the trl extra: the real GRPOTrainer run of tests/test_trl_run.py fails instead of skipping.
export UNIPO_REQUIRE_TRL=1

# Two workers by default (pytest-xdist, in the dev extra: -n 2 --dist loadgroup); each module with fixtures of
# its own runs on one worker, and the users of the session's site builds and TRL run all on one
# (tests/conftest.py), so nothing costly is made twice; the other tests are handed out slowest first (by the
# last measured durations, benchmarks/results/test_durations.txt), so no long walk is left to run alone at the end.
# Each worker computes on one thread (tests/conftest.py one_thread_per_worker). On the 2-core machine the whole
# suite took 27.6 min in one process and 13.6 to 13.9 min on two workers (benchmarks/results/test_durations.txt).
# UNIPO_TEST_WORKERS=1: one process (no xdist), e.g. to read a failing test's output in order.
workers="${UNIPO_TEST_WORKERS:-2}"
parallel=()
if [ "$workers" != 1 ]; then
  parallel=(-n "$workers" --dist loadgroup)
fi
say "pytest${parallel[*]:+ ${parallel[*]}}"
rc=0
"$VPY" -m pytest -q "${parallel[@]}" "$@" || rc=$?
if [ "$rc" = 5 ]; then
  die "pytest collected no tests"
fi
exit "$rc"
