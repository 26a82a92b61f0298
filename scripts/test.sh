#!/usr/bin/env bash
# The tests: set up (Python packages, Chromium, front-end tools), lint and type-check, then run the test suite.
# With arguments, they go to one pytest run as they are (e.g. a file or -k). Without, the timing-sensitive
# tests (marked `serial`) run first on their own, then the rest over KINETOSCOPE_TEST_WORKERS processes
# (default: one per CPU, at most 4), each test file kept on one process so its fixtures are made once.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/setup_test_tools.sh
.venv/bin/ruff check src tests benchmarks
.venv/bin/mypy
if [ "$#" -gt 0 ]; then
    exec .venv/bin/python -m pytest -q "$@"
fi
workers="${KINETOSCOPE_TEST_WORKERS:-$(.venv/bin/python -c 'import os; print(max(1, min(4, os.cpu_count() or 1)))')}"
.venv/bin/python -m pytest -q -m serial
exec .venv/bin/python -m pytest -q -m "not serial" -n "$workers" --dist loadfile
