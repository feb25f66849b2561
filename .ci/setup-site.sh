#!/usr/bin/env bash
# Build the site: .venv with the site's dependencies (no torch), the browser libraries from
# npm, then `mkdocs build --strict` into site/.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$REPO_ROOT"

ensure_venv
pip_install_project "."
npm_ci
say "mkdocs build --strict"
"$VENV/bin/mkdocs" build --strict 2>&1 | { grep -v '^INFO ' || true; }

cat <<MSG
Site built in site/. To read it locally, activate the environment (source .venv/bin/activate), then
  mkdocs serve -a 127.0.0.1:8000               (rebuilds on every change)
or serve the built files: python3 -m http.server -d site -b 127.0.0.1 8000
and open http://127.0.0.1:8000/
MSG
