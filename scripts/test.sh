#!/usr/bin/env bash
# The tests: set up (Python packages, Chromium, front-end tools), lint and type-check, then run the test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/setup_test_tools.sh
.venv/bin/ruff check src tests benchmarks
.venv/bin/mypy
exec .venv/bin/python -m pytest -q "$@"
