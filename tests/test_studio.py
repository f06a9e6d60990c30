"""The graph served by `langgraph dev` (what LangGraph Studio talks to), driven through langgraph_sdk.

The server runs from a scratch folder holding the repository's own langgraph.json (the in-memory
server keeps its state in ./.langgraph_api of the folder it runs in), fully offline.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from langgraph_sdk import get_sync_client

from config import load_settings
from ingestion.pipeline import ingest_paths

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures" / "ingest"
LANGGRAPH = shutil.which("langgraph") or str(Path(sys.executable).parent / "langgraph")


def test_langgraph_json_exposes_the_module_level_graph():
    config = json.loads((ROOT / "langgraph.json").read_text(encoding="utf-8"))
    assert config["graphs"] == {"agentic_rag": "./app/studio.py:graph"}
    assert config["dependencies"] == ["."] and config["python_version"] == "3.11"
    assert "env" not in config or (ROOT / config["env"]).exists()


def test_the_studio_graph_registers_the_settings_default_nodes_fall_back_to(monkeypatch):
    """Studio sends plain JSON as the context: nodes (which never import app/) resolve it through the
    default ``app.studio`` registers; with none registered the run fails with a pointed message."""
    import app.studio
    from app.wiring import default_context
    from nodes import context

    assert context._default is default_context
    monkeypatch.setattr(context, "_default", None)
    with pytest.raises(RuntimeError, match=r"pass context=app\.build_context"):
        context.resolve_context({"index_dir": "x"})


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_until_ok(url: str, server: subprocess.Popen, log: Path, timeout_s: float = 90) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if server.poll() is not None:
            pytest.fail(f"langgraph dev exited with {server.returncode}:\n{log.read_text()[-3000:]}")
        try:
            if httpx.get(f"{url}/ok", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    pytest.fail(f"langgraph dev did not answer /ok within {timeout_s} s:\n{log.read_text()[-3000:]}")


@pytest.fixture(scope="module")
def server_url(tmp_path_factory, embedder) -> Iterator[str]:
    index_dir = tmp_path_factory.mktemp("index")
    settings = load_settings(index_dir=index_dir, embedder="use-multilingual")
    ingest_paths(
        [FIXTURES / "quickstart_en.md", FIXTURES / "install_zh.md"],
        settings,
        embedder,
        index_dir=index_dir,
        progress=False,
    )
    workdir = tmp_path_factory.mktemp("studio")
    shutil.copy(ROOT / "langgraph.json", workdir / "langgraph.json")
    (workdir / "graph").symlink_to(ROOT / "graph", target_is_directory=True)
    (workdir / "app").symlink_to(ROOT / "app", target_is_directory=True)
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("AGENTIC_RAG_", "LANGSMITH_", "LANGCHAIN_"))
    }
    env.update(
        PYTHONPATH=str(ROOT),
        AGENTIC_RAG_INDEX_DIR=str(index_dir),
        AGENTIC_RAG_EMBEDDER="use-multilingual",
        AGENTIC_RAG_RERANKER="lexical",
        AGENTIC_RAG_BRAIN="offline",
        LANGSMITH_TRACING="false",
        LANGCHAIN_TRACING_V2="false",
        LANGGRAPH_CLI_NO_ANALYTICS="1",
        HF_HUB_OFFLINE="1",
    )
    port = free_port()
    log = tmp_path_factory.mktemp("logs") / "langgraph-dev.log"
    with log.open("w") as out:
        server = subprocess.Popen(
            [LANGGRAPH, "dev", "--port", str(port), "--no-browser", "--no-reload"],
            cwd=workdir,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until_ok(url, server, log)
        yield url
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait(timeout=10)


@pytest.mark.slow
def test_a_served_run_answers_with_citations_analysis_and_evaluation(server_url):
    client = get_sync_client(url=server_url)
    thread = client.threads.create()["thread_id"]
    client.runs.wait(
        thread,
        "agentic_rag",
        input={"messages": [{"role": "user", "content": "What Python version do I need?"}]},
        raise_error=True,
    )
    values = client.threads.get_state(thread)["values"]
    assert "3.11" in values["answer"] and "[1]" in values["answer"]
    assert values["citations"][0]["number"] == 1
    assert any(c["source"].endswith(("quickstart_en.md", "install_zh.md")) for c in values["citations"])
    assert values["analysis"]["query_type"] and "recommended_strategy" in values["analysis"]
    assert values["evaluation"]["is_sufficient"] is True
    assert [m["type"] for m in values["messages"]] == ["human", "ai"]

    # The server's checkpointer keeps the thread: a Chinese follow-up is resolved with its history.
    client.runs.wait(
        thread,
        "agentic_rag",
        input={"messages": [{"role": "user", "content": "那安装它大约需要多长时间？"}]},
        raise_error=True,
    )
    values = client.threads.get_state(thread)["values"]
    assert len(values["messages"]) == 4
    assert values["trace"][0]["decision"] == "follow_up"
    assert values["citations"] and values["answer"]


@pytest.mark.slow
def test_the_served_graph_has_the_retry_edge_and_a_studio_input_form(server_url):
    client = get_sync_client(url=server_url)
    (assistant,) = client.assistants.search(graph_id="agentic_rag")
    drawn = client.assistants.get_graph(assistant["assistant_id"])
    edges = {(e["source"], e["target"]): e.get("conditional", False) for e in drawn["edges"]}
    assert edges[("evaluate", "rewrite_query")] is True  # the bounded retry loop
    assert edges[("evaluate", "compress")] is True
    assert {("rewrite_query", "retrieve_hybrid"), ("rewrite_query", "search_sub_query")} <= set(edges)
    schemas = client.assistants.get_schemas(assistant["assistant_id"])
    assert "messages" in schemas["input_schema"]["properties"]
