#!/usr/bin/env bash
# The tests: set up, lint and type-check src/, then run the test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
.venv/bin/ruff check src tests benchmarks
.venv/bin/mypy
exec .venv/bin/python -m pytest -q "$@"
