"""Several serving replicas on shared state: processes answering at once against one Milvus server (the
Milvus Lite gRPC server on 127.0.0.1) and one PostgreSQL checkpoint store."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from ingestion.pipeline import ingest_paths
from tests.milvus_server import milvus_server_uri, with_store
from tests.postgres_server import postgres_url

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
import replicas  # noqa: E402

pytestmark = pytest.mark.slow


@pytest.fixture
def replica_env(milvus_server_uri, postgres_url, settings, embedder, tmp_path):
    """The bundled guide in a fresh collection of the shared server; the environment replicas start with."""
    shared = with_store(settings, "milvus", tmp_path, uri=milvus_server_uri)
    ingest_paths([ROOT / "docs" / "guide"], shared, embedder, progress=False)
    return {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "AGENTIC_RAG_STORE": "milvus",
        "AGENTIC_RAG_MILVUS_URI": milvus_server_uri,
        "AGENTIC_RAG_MILVUS_COLLECTION": shared.milvus_collection,
        "AGENTIC_RAG_POSTGRES_URL": postgres_url,
        "AGENTIC_RAG_EMBEDDER": "use-multilingual",
        "AGENTIC_RAG_RERANKER": "none",
        "AGENTIC_RAG_BRAIN": "offline",
        "AGENTIC_RAG_INDEX_DIR": str(tmp_path / "replica-index"),
    }


def test_replicas_answering_at_once_on_their_own_threads_lose_and_mix_nothing(replica_env, postgres_url):
    results, _ = replicas.run_replicas(3, 3, replica_env, "concurrent")
    assert [e for r in results for e in r["errors"]] == []
    assert all(len(r["latencies_ms"]) == 3 for r in results)
    assert replicas.thread_problems(postgres_url, results) == []


def test_replicas_answering_at_once_on_the_same_thread_take_turns(replica_env, postgres_url):
    results, _ = replicas.run_replicas(2, 3, replica_env, "same", shared=True)
    assert [e for r in results for e in r["errors"]] == []
    assert replicas.thread_problems(postgres_url, results) == []


def test_a_thread_continues_on_another_replica_with_its_whole_history(replica_env, postgres_url):
    first, _ = replicas.run_replicas(1, 2, replica_env, "handoff")
    second, _ = replicas.run_replicas(1, 2, replica_env, "handoff")  # a new process, the same thread
    both = {**second[0], "asked": first[0]["asked"] + second[0]["asked"]}
    assert first[0]["errors"] == second[0]["errors"] == []
    assert replicas.thread_problems(postgres_url, [both]) == []
