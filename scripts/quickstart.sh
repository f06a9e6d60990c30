#!/usr/bin/env bash
# One command: install, index the bundled bilingual guide, then start the interactive session.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/python main.py ingest docs/guide --prewarm-reranker
exec .venv/bin/python main.py "$@"
