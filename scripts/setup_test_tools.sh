#!/usr/bin/env bash
# Tools the test suite needs beyond the Python packages: Debian's Chromium for the viewer's
# browser tests, and the front end's dev dependencies (esbuild, typescript) from the npm
# registry. Each step is skipped when already done; when one cannot be done, the tests that
# need it skip with a clear reason instead of failing.
set -uo pipefail
cd "$(dirname "$0")/.."
if [ ! -x /usr/bin/chromium ] && command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) \
    || echo "chromium not installed: browser tests will skip"
fi
if [ ! -d web/node_modules ] && command -v npm >/dev/null; then
  (cd web && npm ci --no-audit --no-fund --loglevel=error) || echo "npm ci failed: front-end unit tests will skip"
fi
exit 0
