# Shared helpers for .ci/setup-site.sh, .ci/test.sh and .ci/run (sourced, not run).
# Each step is idempotent: it does nothing when its result is already there.

export NO_MKDOCS_2_WARNING=1            # hide Material's MkDocs-2 banner
export PIP_DISABLE_PIP_VERSION_CHECK=1
export PIP_NO_INPUT=1

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$REPO_ROOT/.venv"
VPY="$VENV/bin/python"

say() { printf '\033[1m==> %s\033[0m\n' "$*"; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

# Run a command quietly; show its output only when it fails.
quiet() {
  local log
  log="$(mktemp)"
  if ! "$@" >"$log" 2>&1; then
    tail -n 60 "$log" >&2
    rm -f "$log"
    die "failed: $*"
  fi
  rm -f "$log"
}

as_root() {
  if [ "$(id -u)" = 0 ]; then "$@"
  elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then sudo "$@"
  else return 1
  fi
}

can_apt() { command -v apt-get >/dev/null 2>&1 && as_root true 2>/dev/null; }

APT_UPDATED=0
apt_install() {
  can_apt || die "need $* (apt-get install $*), and cannot install as root here"
  say "apt-get install $*"
  if [ "$APT_UPDATED" = 0 ]; then
    quiet as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq
    APT_UPDATED=1
  fi
  quiet as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@"
}

find_python() {
  local candidate
  for candidate in "${PYTHON:-}" python3.11 python3; do
    [ -n "$candidate" ] || continue
    command -v "$candidate" >/dev/null 2>&1 || continue
    if "$candidate" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
      echo "$candidate"
      return 0
    fi
  done
  die "Python 3.11 or newer not found (set PYTHON=/path/to/python3.11)"
}

ensure_venv() {
  if [ -x "$VPY" ] && "$VPY" -c 'import pip' >/dev/null 2>&1; then
    return 0
  fi
  local py
  py="$(find_python)"
  say "creating .venv with $py"
  rm -rf "$VENV"
  if ! "$py" -m venv "$VENV" >/dev/null 2>&1; then
    # Debian ships venv/ensurepip separately.
    rm -rf "$VENV"
    apt_install python3-venv
    "$py" -m venv "$VENV" || die "could not create .venv with $py"
  fi
  quiet "$VPY" -m pip install -q --upgrade pip
}

# pip install -e SPEC into .venv unless it was already done for this pyproject.toml (stamps
# in .venv record it; any install with extras also covers the plain ".").
pip_install_project() {
  local spec="$1" stamp_file="$VENV/.unipo-pip-stamp" hash
  hash="$(sha256sum "$REPO_ROOT/pyproject.toml" | cut -c1-16)"
  if [ -f "$stamp_file" ] && "$VPY" -c 'import unipo_build, mkdocs, material' >/dev/null 2>&1; then
    if grep -qxF "$spec $hash" "$stamp_file" \
       || { [ "$spec" = "." ] && grep -q " $hash\$" "$stamp_file"; }; then
      return 0
    fi
  fi
  say "pip install -e '$spec'"
  quiet "$VPY" -m pip install -q -e "$spec"
  echo "$spec $hash" >>"$stamp_file"
}

# npm ci, unless node_modules already holds exactly package-lock.json.
npm_ci() {
  command -v npm >/dev/null 2>&1 || apt_install nodejs npm
  local stamp_file="$REPO_ROOT/node_modules/.unipo-lock-stamp" stamp
  stamp="$(cat "$REPO_ROOT/package.json" "$REPO_ROOT/package-lock.json" | sha256sum | cut -c1-16)"
  if [ -f "$stamp_file" ] && [ "$(cat "$stamp_file")" = "$stamp" ]; then
    return 0
  fi
  say "npm ci (KaTeX, Vega, Vega-Lite, vega-embed, vega-interpreter)"
  (cd "$REPO_ROOT" && quiet npm ci --no-audit --no-fund --loglevel=error)
  echo "$stamp" >"$stamp_file"
}

# OpenRLHF 0.11.2's Python code, for tests/test_openrlhf_parity.py (CPU only). openrlhf and
# deepspeed go in with --no-deps: openrlhf pins transformers==5.15.0 and pulls flash-attn and
# a deepspeed build that need CUDA, and the parity test needs only its Python code (flash_attn
# and vllm are stubbed in tests/openrlhf_stubs). OPENRLHF_CPU_DEPS is what its modules import
# when loaded; none of them moves torch or transformers (checked after the install).
OPENRLHF_CPU_DEPS=("ray==2.55.0" peft torchdata pylatexenc einops hjson ninja py-cpuinfo aiohttp pillow)
install_openrlhf_cpu() {
  local check='import importlib.metadata as m, sys
pins = {"openrlhf": "0.11.2", "ray": "2.55.0", "deepspeed": "0.19.6"}
try:
    ok = all(m.version(k) == v for k, v in pins.items())
    for name in ("peft", "torchdata", "pylatexenc", "einops", "hjson", "ninja", "py-cpuinfo", "aiohttp", "pillow"):
        m.version(name)
except m.PackageNotFoundError:
    ok = False
sys.exit(0 if ok else 1)'
  if "$VPY" -c "$check" >/dev/null 2>&1; then
    return 0
  fi
  local stack='import importlib.metadata as m; print(m.version("torch"), m.version("transformers"))' before after
  before="$("$VPY" -c "$stack" 2>/dev/null || echo missing)"
  say "pip install --no-deps openrlhf==0.11.2 (+ its CPU-side imports, deepspeed without ops)"
  quiet "$VPY" -m pip install -q --no-deps openrlhf==0.11.2
  quiet "$VPY" -m pip install -q "${OPENRLHF_CPU_DEPS[@]}"
  quiet env DS_BUILD_OPS=0 "$VPY" -m pip install -q --no-deps --no-build-isolation deepspeed==0.19.6
  after="$("$VPY" -c "$stack" 2>/dev/null || echo missing)"
  [ "$before" = "$after" ] || die "installing OpenRLHF's CPU set changed torch/transformers ($before -> $after)"
}

have_browser() {
  [ -x /usr/bin/chromium ] && [ -x /usr/bin/chromedriver ]
}
