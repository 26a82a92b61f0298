#!/usr/bin/env bash
# Creates .venv and installs kinetoscope with pinned dependencies; does nothing when already current.
set -euo pipefail
cd "$(dirname "$0")/.."
python="${PYTHON:-python3}"
extras="${KINETOSCOPE_EXTRAS:-explorer,fleet,agent,dev}"
stamp=".venv/.kinetoscope-setup"
want="$(cat pyproject.toml requirements/constraints.txt | sha256sum | cut -c1-16) $extras"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  exit 0
fi
[ -x .venv/bin/python ] || "$python" -m venv .venv
# pip's notes about local index folders it skips are noise here; real errors still show.
quiet() { "$@" 2>&1 | grep -v -e "is ignored: it is neither a file nor a directory" || true; return "${PIPESTATUS[0]}"; }
quiet .venv/bin/python -m pip install --quiet -c requirements/constraints.txt -e ".[$extras]"
echo "$want" > "$stamp"
