"""The MCP door: the engine as tools for Claude Desktop, IDE agents and any MCP client.

Tools: ``search`` (one retriever, no agent), ``ask`` (the agent: a cited answer and its sources, in a
conversation thread when given one), ``list_collections`` and ``index_stats`` (what can be searched),
and ``ingest`` (admins only, ``server.auth.is_admin``). Two transports over the same tools: stdio
(``python main.py mcp``, a client starts it as a subprocess) and streamable HTTP, mounted by ``serve``
at ``/mcp`` behind the same bearer token as ``/v1``. Bad input comes back as a tool error whose text
says what to fix; nothing is printed on stdout except the protocol.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Annotated, Any

from fastapi import FastAPI
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import Field
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from core.chunks import Filters
from graph.run import AskResult
from retrievers.search import SearchMode, hit_record, search
from server.answer_text import cited_text
from server.auth import bearer_ok, is_admin
from server.engine import Engine
from server.schemas import Mode

log = logging.getLogger(__name__)

MCP_PATH = "/mcp"
INSTRUCTIONS = (
    "Search and question a document collection (Chinese and English). `ask` answers with numbered "
    "citations [n] that refer to the returned sources; `search` returns raw passages without an answer. "
    "Filters: source=GLOB, language=zh|en, after/before=DATE, or any metadata key the index holds."
)

FiltersArg = Annotated[
    dict[str, str] | None,
    Field(description="source=GLOB, language=zh|en, after=YYYY-MM-DD, before=..., or any metadata key"),
]


def _filters(engine: Engine, pairs: dict[str, str] | None) -> Filters | None:
    """Filters from the tool's mapping, a key no chunk holds refused with the keys it does hold."""
    if not pairs:
        return None
    try:
        filters = Filters.from_pairs([f"{key}={value}" for key, value in pairs.items()])
        engine.check_filters(filters)
    except ValueError as exc:  # pydantic's ValidationError and UnknownFilterKeyError included
        raise ToolError(f"invalid filters: {str(exc).splitlines()[0]}") from None
    return filters


def ask_record(result: AskResult) -> dict[str, Any]:
    """The answer, its citations and the cited passages in full, plus the text a chat client shows."""
    cited = {cite.number for cite in result.citations}
    return {
        "answer": result.answer,
        "text": cited_text(result),
        "citations": [cite.model_dump() for cite in result.citations],
        "sources": [p.model_dump() for p in result.passages if p.number in cited],
        "insufficient": result.insufficient,
        "mode": result.mode,
        "stop_reason": result.stop_reason,
        "thread_id": result.thread_id,
        "trace": result.trace_line(),
        "warnings": result.warnings,
    }


def build_mcp(engine: Engine) -> MCPServer:
    """An MCP server over one engine: the same indexes, models, threads and settings as ``/v1``."""
    settings = engine.settings
    server = MCPServer("agentic-rag", instructions=INSTRUCTIONS, version="0.1.0")

    @server.tool(name="search")  # the Python name keeps retrievers.search.search visible here
    async def search_tool(
        query: Annotated[str, Field(description="words, an identifier or a question")],
        mode: Annotated[SearchMode, Field(description="which retriever")] = "hybrid",
        k: Annotated[int, Field(ge=1, le=100, description="number of passages")] = 10,
        filters: FiltersArg = None,
    ) -> dict[str, Any]:
        """Search the indexed documents without the agent: the k best passages, best first."""
        engine.require_documents()
        found = _filters(engine, filters)
        try:
            result = await engine.call(
                lambda: search(
                    engine.context.retrievers,
                    query,
                    mode=mode,
                    k=k,
                    filters=found,
                    depth=settings.candidate_k,
                )
            )
        except ValueError as exc:
            raise ToolError(str(exc)) from None
        return {
            "query": query,
            "mode": mode,
            "results": [hit_record(rank, hit) for rank, hit in enumerate(result.hits, start=1)],
        }

    @server.tool()
    async def ask(
        question: Annotated[str, Field(min_length=1, description="the question, in English or Chinese")],
        thread_id: Annotated[
            str | None, Field(max_length=200, description="continue (or start) this conversation thread")
        ] = None,
        mode: Annotated[Mode | None, Field(description="retrieval mode; default from settings")] = None,
        filters: FiltersArg = None,
    ) -> dict[str, Any]:
        """Ask the agent: a grounded answer with numbered citations [n] and the cited sources."""
        engine.require_documents()
        result = await engine.ask(question, mode=mode, thread_id=thread_id, filters=_filters(engine, filters))
        if result.stop_reason == "invalid_input":
            raise ToolError(result.error)
        return ask_record(result)

    @server.tool()
    async def list_collections() -> dict[str, list[dict[str, Any]]]:
        """The document collections this server can search (one: its index)."""
        index = engine.context.retrievers.index
        name = settings.milvus_collection if settings.store == "milvus" else Path(settings.index_dir).name
        count = await engine.call(index.count)
        collection = {"name": name, "store": settings.store, "location": index.location, "chunks": count}
        return {"collections": [collection]}

    @server.tool()
    async def index_stats() -> dict[str, Any]:
        """Size of the index: chunks, sources, languages, embedder, when it was built."""
        from cli.index_cmd import readable_times

        return readable_times(await engine.call(engine.context.retrievers.index.stats))

    @server.tool()
    async def ingest(
        paths: Annotated[list[str], Field(min_length=1, description="files or folders on the server")],
        ctx: Context,
    ) -> dict[str, Any]:
        """Admins: add, update or remove documents (paths on the server's disk), then search them."""
        if not is_admin(ctx.headers, settings.serve_token):
            raise ToolError(
                "ingest needs an admin: over HTTP the server's bearer token (AGENTIC_RAG_SERVE_TOKEN)"
            )
        missing = [p for p in paths if not Path(p).exists()]
        if missing:
            raise ToolError(f"no such file or folder on the server: {', '.join(missing)}")
        report = await engine.call(_ingest, engine, [Path(p) for p in paths])
        return report.model_dump(mode="json")

    return server


def _ingest(engine: Engine, paths: list[Path]) -> Any:
    from ingestion.pipeline import ingest_paths

    report = ingest_paths(paths, engine.settings, engine.context.retrievers.embedder, progress=False)
    engine.reopen()
    return report


def run_stdio(engine: Engine) -> None:
    """Speak MCP on stdin/stdout until the client closes them."""
    build_mcp(engine).run("stdio")


class _BearerGate:
    """The MCP endpoint behind the server's bearer token. Its tools search without a user's access
    groups, so once users exist (``users add``) only the token's holder (an admin) may use it, and with
    no token set nobody may: a user's key never reaches documents it may not read through MCP."""

    def __init__(self, app: ASGIApp, token: str | None, unauthorized: ASGIApp, users: Any = None) -> None:
        self.app, self.token, self.unauthorized, self.users = app, token, unauthorized, users

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = dict(scope.get("headers") or [])
        has_users = self.users is not None and self.users.count() > 0
        if (has_users and not self.token) or not bearer_ok(
            headers.get(b"authorization", b"").decode("latin-1"), self.token
        ):
            await self.unauthorized(scope, receive, send)
            return
        await self.app(scope, receive, send)


def mount_mcp(app: FastAPI, engine: Engine, *, unauthorized: ASGIApp) -> None:
    """Serve MCP (streamable HTTP, stateless, JSON replies) at ``/mcp`` of the HTTP API."""
    server = build_mcp(engine)
    mcp_app = server.streamable_http_app(
        streamable_http_path=MCP_PATH,
        stateless_http=True,
        json_response=True,
        host=engine.settings.serve_host,
        max_request_body_size=engine.settings.serve_max_request_kb * 1024,
    )
    endpoint = next(route for route in mcp_app.routes if getattr(route, "path", None) == MCP_PATH)
    app.router.routes.append(
        Route(
            MCP_PATH,
            endpoint=_BearerGate(
                endpoint.app,
                engine.settings.serve_token,
                unauthorized,
                users=getattr(app.state, "users", None),
            ),
        )
    )
    outer = app.router.lifespan_context

    @contextlib.asynccontextmanager
    async def lifespan(instance: Any) -> AsyncIterator[Any]:
        async with server.session_manager.run(), outer(instance) as state:
            yield state

    app.router.lifespan_context = lifespan
