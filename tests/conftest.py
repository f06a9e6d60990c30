"""Shared fixtures: real embedders, real indexes built in temp folders."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import httpx
import pytest

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
for _var in (
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "AGENTIC_RAG_OPENAI_API_KEY",
    "AGENTIC_RAG_OPENAI_BASE_URL",
):
    os.environ.pop(_var, None)

# Tests talk to real servers (subprocesses and threads running the graph) on a shared 2-core machine,
# two test workers at a time: httpx's 5 s default read timeout is a flake there, not a check (no test
# is about it). A call that passes its own ``timeout=`` keeps it; the product never relies on this default.
httpx._config.DEFAULT_TIMEOUT_CONFIG.read = 120.0
httpx._config.DEFAULT_TIMEOUT_CONFIG.write = 120.0
httpx._config.DEFAULT_TIMEOUT_CONFIG.pool = 120.0


@pytest.fixture(scope="session")
def embedder():
    from providers.embeddings import make_embedder

    return make_embedder("use-multilingual")


@pytest.fixture
def settings(tmp_path):
    from config import load_settings

    return load_settings(
        index_dir=tmp_path / "index",
        checkpoint_db=tmp_path / "checkpoints.sqlite",
        embedder="use-multilingual",
        reranker="none",
    )
