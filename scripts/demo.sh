#!/usr/bin/env bash
# The main job: set up, profile the built-in demo model with all four modes, then verify and
# summarise the session. The demo's own output folder (default ./demo_output) is remade each run.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
out="${KINETOSCOPE_DEMO_OUT:-demo_output}"
rm -rf "$out"
.venv/bin/kinetoscope demo --out "$out" "$@"
echo
.venv/bin/kinetoscope verify "$out"
echo
.venv/bin/kinetoscope summary "$out"
echo
echo "Open it in the viewer:  .venv/bin/kinetoscope view $out"
