"""The MCP server, spoken to by the official SDK's own client over both transports: stdio (a real
`python main.py mcp` subprocess) and streamable HTTP (a real `python main.py serve` on 127.0.0.1, at
/mcp behind the bearer token). English and Chinese questions side by side."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from server.auth import is_admin
from tests.corpus import index_of_files
from tests.test_serve import DOCS, TOKEN, Server
from tests.test_session import session_env

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent
RECORDS = (
    '{"id": "r1", "title": "Team handbook", "team": "search", "text": "The search team owns the BM25 '
    'keyword index and answers pager alerts within fifteen minutes."}\n'
    '{"id": "r2", "title": "Team handbook", "team": "infra", "text": "The infra team owns the HNSW '
    'vector index hosts and rotates the pager weekly."}\n'
)
FILES = {**DOCS, "teams.jsonl": RECORDS}
TOOLS = {"search", "ask", "list_collections", "index_stats", "ingest"}


@pytest.fixture(scope="module")
def index_dir(tmp_path_factory, embedder) -> Path:
    return index_of_files(tmp_path_factory, embedder, FILES)


def _env(index_dir: Path, tmp: Path) -> dict[str, str]:
    return {**session_env(index_dir, tmp / "checkpoints.sqlite"), "PYTHONPATH": str(ROOT)}


def stdio_client(index_dir: Path, tmp: Path) -> Client:
    """`python main.py mcp --index DIR` as the client's own subprocess."""
    params = StdioServerParameters(
        command=sys.executable,
        args=[str(ROOT / "main.py"), "mcp", "--index", str(index_dir)],
        env=_env(index_dir, tmp),
        cwd=str(tmp),
    )
    return Client(params, read_timeout_seconds=120)


def http_client(url: str, token: str | None) -> Client:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    http = httpx2.AsyncClient(headers=headers, timeout=120)
    return Client(streamable_http_client(url + "/mcp", http_client=http), read_timeout_seconds=120)


async def call(client: Client, tool: str, **arguments: Any) -> tuple[bool, Any]:
    """(is_error, structured result or the error text)."""
    result = await client.call_tool(tool, arguments)
    if result.is_error:
        return True, " ".join(getattr(block, "text", "") for block in result.content)
    return False, result.structured_content


def run(coro: Any) -> Any:
    return asyncio.run(coro)


# --- stdio ---------------------------------------------------------------------------------------------


def test_stdio_lists_the_tools_and_searches_in_english_and_chinese(index_dir, tmp_path):
    async def scenario() -> dict[str, Any]:
        async with stdio_client(index_dir, tmp_path) as client:
            tools = {tool.name: tool for tool in (await client.list_tools()).tools}
            found = {
                "en": await call(client, "search", query="reciprocal rank fusion constant", k=3),
                "zh": await call(client, "search", query="HNSW 性能调优", mode="keyword", k=3),
                "zh_only": await call(client, "search", query="index", k=10, filters={"language": "zh"}),
            }
            return {"tools": tools, **found}

    out = run(scenario())
    assert set(out["tools"]) == TOOLS
    assert {"query", "mode", "k", "filters"} <= set(out["tools"]["search"].input_schema["properties"])
    error, en = out["en"]
    assert not error and en["results"][0]["source"].endswith("hybrid_en.md")
    assert "60" in en["results"][0]["text"]
    error, zh = out["zh"]
    assert not error and zh["results"][0]["source"].endswith("hnsw_zh.md") and zh["mode"] == "keyword"
    error, only = out["zh_only"]
    assert not error and only["results"] and {r["language"] for r in only["results"]} == {"zh"}


def test_stdio_ask_answers_with_citations_and_sources_and_keeps_a_thread(index_dir, tmp_path):
    async def scenario() -> tuple[Any, ...]:
        async with stdio_client(index_dir, tmp_path) as client:
            en = await call(client, "ask", question="What is the fusion constant k of hybrid search?")
            zh = await call(client, "ask", question="HNSW 索引的性能问题怎么解决？", thread_id="t-zh")
            again = await call(client, "ask", question="代价是什么？", thread_id="t-zh")
            return en, zh, again

    (en_error, en), (zh_error, zh), (again_error, again) = run(scenario())
    assert not en_error and "60" in en["answer"]
    assert en["citations"] and "[1]" in en["text"] and "Sources:" in en["text"]
    assert en["sources"][0]["source"].endswith("hybrid_en.md") and "60" in en["sources"][0]["text"]
    assert {s["number"] for s in en["sources"]} == {c["number"] for c in en["citations"]}
    assert not zh_error and "ef_search" in zh["answer"] and zh["thread_id"] == "t-zh"
    assert zh["sources"][0]["source"].endswith("hnsw_zh.md")
    assert not again_error and again["thread_id"] == "t-zh" and again["sources"]


def test_a_misspelt_filter_key_is_refused_with_the_keys_the_index_holds(index_dir, tmp_path):
    async def scenario() -> tuple[Any, ...]:
        async with stdio_client(index_dir, tmp_path) as client:
            return (
                await call(client, "search", query="pager", filters={"langauge": "zh"}),
                await call(client, "ask", question="谁负责寻呼？", filters={"teem": "search"}),
                await call(client, "search", query="pager alerts", filters={"team": "search"}),
            )

    (s_error, s_text), (a_error, a_text), (c_error, custom) = run(scenario())
    assert s_error and "'langauge'" in s_text and "did you mean 'language'" in s_text
    assert "team" in s_text and "source" in s_text  # the keys it holds, custom metadata included
    assert a_error and "'teem'" in a_text and "team" in a_text
    assert not c_error and custom["results"]
    assert all("search team" in r["text"] for r in custom["results"])


def test_stdio_collections_stats_and_an_admin_ingest_that_later_searches_see(index_dir, tmp_path):
    extra = tmp_path / "new_docs"
    extra.mkdir()
    (extra / "rollout.md").write_text(
        "# Rollout\n\nThe canary rollout of release Zephyr-42 lasts three days.\n", encoding="utf-8"
    )

    async def scenario() -> tuple[Any, ...]:
        async with stdio_client(index_dir, tmp_path) as client:
            collections = await call(client, "list_collections")
            before = await call(client, "index_stats")
            missing = await call(client, "ingest", paths=[str(tmp_path / "nope")])
            ingested = await call(client, "ingest", paths=[str(extra)])
            after = await call(client, "search", query="Zephyr-42 canary", mode="keyword", k=1)
            return collections, before, missing, ingested, after

    collections, before, missing, ingested, after = run(scenario())
    [collection] = collections[1]["collections"]
    assert collection["chunks"] == before[1]["chunks"] > 0 and collection["store"] == "local"
    assert set(before[1]["languages"]) == {"en", "zh"}
    assert missing[0] and "no such file or folder" in missing[1]
    assert not ingested[0] and ingested[1]["chunks_embedded"] >= 1
    assert after[1]["results"][0]["source"].endswith("rollout.md")


# --- streamable HTTP -------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def guarded_server(tmp_path_factory, embedder) -> Iterator[Server]:
    """`python main.py serve` with a bearer token over its own copy of the index."""
    folder = index_of_files(tmp_path_factory, embedder, FILES)
    srv = Server(folder, tmp_path_factory.mktemp("mcp_serve"), AGENTIC_RAG_SERVE_TOKEN=TOKEN)
    yield srv
    srv.stop()


def test_http_mcp_at_slash_mcp_needs_the_bearer_token(guarded_server):
    initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}
    denied = httpx.post(guarded_server.url + "/mcp", json=initialize)
    assert denied.status_code == 401 and denied.json()["error"]["code"] == "invalid_api_key"

    async def refused() -> None:
        async with http_client(guarded_server.url, "wrong-token") as client:
            await client.list_tools()

    with pytest.raises(Exception):  # noqa: B017 - the SDK reports the 401 in its own way
        run(refused())


def test_http_v1_ask_refuses_a_filter_key_no_chunk_holds(guarded_server):
    auth = {"Authorization": f"Bearer {TOKEN}"}
    body = {"question": "谁负责寻呼？", "filters": {"langauge": "zh"}}
    refused = httpx.post(guarded_server.url + "/v1/ask", json=body, headers=auth, timeout=120)
    assert refused.status_code == 400 and refused.json()["error"]["code"] == "invalid_filters"
    assert "did you mean 'language'" in refused.json()["error"]["message"]
    body = {"question": "Who answers pager alerts?", "filters": {"team": "search"}}
    answered = httpx.post(guarded_server.url + "/v1/ask", json=body, headers=auth, timeout=120)
    assert answered.status_code == 200 and "fifteen minutes" in answered.json()["answer"]


def test_http_search_ask_and_ingest_with_the_sdk_client(guarded_server, tmp_path):
    extra = tmp_path / "http_docs"
    extra.mkdir()
    (extra / "发布.md").write_text("# 发布流程\n\n灰度发布版本 Orion-7 需要持续五天。\n", encoding="utf-8")

    async def scenario() -> tuple[Any, ...]:
        async with http_client(guarded_server.url, TOKEN) as client:
            tools = {tool.name for tool in (await client.list_tools()).tools}
            en = await call(client, "ask", question="Which algorithm ranks keyword search?")
            zh = await call(client, "search", query="向量索引 切换", k=2)
            bad = await call(client, "search", query="x", filters={"lang_code": "zh"})
            ingested = await call(client, "ingest", paths=[str(extra)])
            after = await call(client, "ask", question="灰度发布 Orion-7 需要多久？")
            return tools, en, zh, bad, ingested, after

    tools, en, zh, bad, ingested, after = run(scenario())
    assert tools == TOOLS
    assert not en[0] and "BM25" in en[1]["answer"] and en[1]["citations"]
    assert not zh[0] and zh[1]["results"][0]["source"].endswith("hnsw_zh.md")
    assert bad[0] and "'lang_code'" in bad[1] and "language" in bad[1]
    assert not ingested[0], ingested[1]  # the token holder is an admin
    assert not after[0] and "五天" in after[1]["answer"]
    assert after[1]["sources"][0]["source"].endswith("发布.md")


def test_http_without_a_configured_token_nobody_is_an_admin_while_stdio_is():
    assert is_admin(None, None) and is_admin(None, TOKEN)  # stdio: the local user
    assert not is_admin({"authorization": "Bearer anything"}, None)
    assert not is_admin({"authorization": "Bearer wrong"}, TOKEN)
    assert is_admin({"authorization": f"Bearer {TOKEN}"}, TOKEN)


def test_the_readme_client_configuration_is_valid_json_naming_the_mcp_command():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    start = readme.index('{\n  "mcpServers"')
    config = json.loads(readme[start : readme.index("\n}\n", start) + 2])
    servers = config["mcpServers"]
    assert any("mcp" in server.get("args", []) for server in servers.values())
    assert any(server.get("url", "").endswith("/mcp") for server in servers.values())


def test_http_mcp_takes_the_same_keys_as_v1(tmp_path):
    """The gate in front of /mcp asks what /v1 asks (server/identity.py): no token and no users, an open
    local server; once users exist, a user's key passes (its tools then run as that user, see
    tests/test_users_server.py) and a missing or unknown key is refused with 401."""
    from starlette.applications import Starlette
    from starlette.responses import PlainTextResponse
    from starlette.routing import Route
    from starlette.testclient import TestClient

    from memory.users import UserStore
    from server.mcp import _BearerGate

    async def tools(scope, receive, send):
        await PlainTextResponse("tools")(scope, receive, send)

    users = UserStore(tmp_path / "users.sqlite")

    def client(token):
        return TestClient(Starlette(routes=[Route("/mcp", _BearerGate(tools, token, users=users))]))

    assert client(None).post("/mcp").status_code == 200  # no users, no token: the open local server
    key = users.add("alice", groups="hr").key
    for token in (None, "admin-token"):
        assert client(token).post("/mcp", headers={"Authorization": f"Bearer {key}"}).status_code == 200
        assert client(token).post("/mcp").status_code == 401
        refused = client(token).post("/mcp", headers={"Authorization": "Bearer wrong"})
        assert refused.status_code == 401 and refused.json()["error"]["code"] == "invalid_api_key"
    assert (
        client("admin-token").post("/mcp", headers={"Authorization": "Bearer admin-token"}).status_code == 200
    )
    acting = {"Authorization": f"Bearer {key}", "X-Agentic-User": "bob"}
    assert client("admin-token").post("/mcp", headers=acting).status_code == 403  # only admins act for others
