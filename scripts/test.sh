#!/usr/bin/env bash
# One command: install everything the tests need (every extra, PostgreSQL server binaries), run the suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh all
if [ -f .ci/install-postgres.sh ]; then
  bash .ci/install-postgres.sh || echo "warning: could not install PostgreSQL; its tests will skip" >&2
fi
exec .venv/bin/python -m pytest -q -p no:cacheprovider "$@"
