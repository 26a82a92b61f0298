#!/usr/bin/env bash
# The main job: set up, profile the built-in demo model with all four modes, and describe the session.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
exec .venv/bin/kinetoscope demo "$@"
