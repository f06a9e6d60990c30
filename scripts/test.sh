#!/usr/bin/env bash
# One command: install everything the tests need (every extra, PostgreSQL server binaries), run the suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh all
if [ -f .ci/install-postgres.sh ]; then
  bash .ci/install-postgres.sh || echo "warning: could not install PostgreSQL; its tests will skip" >&2
fi
# The web page's browser test drives Debian's Chromium through Playwright (never `playwright install`);
# a CJK font so its Chinese screenshots show glyphs. Without them tests/test_web.py skips and says why.
if [ ! -x /usr/bin/chromium ]; then
  { apt-get update -qq && apt-get install -y -qq chromium fonts-wqy-zenhei >/dev/null; } \
    || echo "warning: could not install chromium; the browser test will skip" >&2
fi
# Two workers (pytest-xdist), each taking whole test files (--dist loadfile), so module-scoped servers,
# indexes and models are still built once per file; TEST_WORKERS=0 runs everything in this one process.
exec .venv/bin/python -m pytest -q -p no:cacheprovider -n "${TEST_WORKERS:-2}" --dist loadfile "$@"
