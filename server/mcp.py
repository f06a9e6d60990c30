"""The MCP door: the engine as tools for Claude Desktop, IDE agents and any MCP client.

Tools: ``search`` (one retriever, no agent), ``ask`` (the agent: a cited answer and its sources, in a
conversation thread when given one), ``list_collections`` and ``index_stats`` (what can be searched),
and ``ingest`` (admins only). Two transports over the same tools: stdio (``python main.py mcp``, a
client starts it as a subprocess; the local user is the admin) and streamable HTTP, mounted by ``serve``
at ``/mcp`` behind the same keys as ``/v1``: each call runs as its caller (server/identity.py), so a
user's key searches and asks only what their groups may read, continues only their own threads, and
never sees server paths or index-wide statistics. Bad input comes back as a tool error whose text says
what to fix; nothing is printed on stdout except the protocol.
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
from server.collections import DEFAULT
from server.engine import Engine
from server.errors import ApiError, error_response
from server.identity import ACT_AS_HEADER, LOCAL_ADMIN, Caller, caller_of
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


def build_mcp(engine: Engine, users: Any = None) -> MCPServer:
    """An MCP server over one engine: the same indexes, models, threads and settings as ``/v1``;
    ``users`` (the server's users store) says who an HTTP call's key belongs to."""
    settings = engine.settings
    server = MCPServer("agentic-rag", instructions=INSTRUCTIONS, version="0.1.0")

    def caller(ctx: Context) -> Caller:
        """Who makes this call: over stdio the local user (an admin), over HTTP the key's owner."""
        headers = ctx.headers
        if headers is None:
            return LOCAL_ADMIN
        try:
            return caller_of(
                headers.get("authorization", ""), headers.get(ACT_AS_HEADER), settings.serve_token, users
            )
        except ApiError as exc:
            raise ToolError(exc.message) from None

    def authenticated_admin(ctx: Context) -> bool:
        """Stdio's local user, or an admin key over HTTP (an open server with no keys has no admin)."""
        if ctx.headers is None:
            return True
        keys_exist = bool(settings.serve_token) or (users is not None and users.count() > 0)
        return keys_exist and caller(ctx).admin

    def readable(found: Filters | None, who: Caller) -> Filters | None:
        return found if who.access is None else (found or Filters()).for_caller(who.access)

    @server.tool(name="search")  # the Python name keeps retrievers.search.search visible here
    async def search_tool(
        query: Annotated[str, Field(description="words, an identifier or a question")],
        ctx: Context,
        mode: Annotated[SearchMode, Field(description="which retriever")] = "hybrid",
        k: Annotated[int, Field(ge=1, le=100, description="number of passages")] = 10,
        filters: FiltersArg = None,
    ) -> dict[str, Any]:
        """Search the indexed documents without the agent: the k best passages, best first."""
        found = readable(_filters(engine, filters), caller(ctx))
        engine.require_documents()
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
        ctx: Context,
        thread_id: Annotated[
            str | None, Field(max_length=200, description="continue (or start) this conversation thread")
        ] = None,
        mode: Annotated[Mode | None, Field(description="retrieval mode; default from settings")] = None,
        filters: FiltersArg = None,
    ) -> dict[str, Any]:
        """Ask the agent: a grounded answer with numbered citations [n] and the cited sources."""
        who = caller(ctx)
        found = readable(_filters(engine, filters), who)
        if thread_id and users is not None and ctx.headers is not None:
            from server.threads_api import claim_thread

            try:  # only one's own threads, as over /v1
                claim_thread(users, engine.saver, who, DEFAULT, thread_id)
            except ApiError as exc:
                raise ToolError(exc.message) from None
        engine.require_documents()
        result = await engine.ask(question, mode=mode, thread_id=thread_id, filters=found)
        if result.stop_reason == "invalid_input":
            raise ToolError(result.error)
        return ask_record(result)

    @server.tool()
    async def list_collections(ctx: Context) -> dict[str, list[dict[str, Any]]]:
        """The document collections this server can search (one: its index)."""
        index = engine.context.retrievers.index
        name = settings.milvus_collection if settings.store == "milvus" else Path(settings.index_dir).name
        collection: dict[str, Any] = {"name": name, "store": settings.store}
        if caller(ctx).admin:  # where it lies and how big it is, all groups' documents counted
            collection |= {"location": index.location, "chunks": await engine.call(index.count)}
        return {"collections": [collection]}

    @server.tool()
    async def index_stats(ctx: Context) -> dict[str, Any]:
        """Admins: size of the index: chunks, sources, languages, embedder, when it was built."""
        from cli.index_cmd import readable_times

        if not caller(ctx).admin:
            raise ToolError("index_stats needs an admin: it counts every group's documents")
        return readable_times(await engine.call(engine.context.retrievers.index.stats))

    @server.tool()
    async def ingest(
        paths: Annotated[list[str], Field(min_length=1, description="files or folders on the server")],
        ctx: Context,
    ) -> dict[str, Any]:
        """Admins: add, update or remove documents (paths on the server's disk), then search them."""
        if not authenticated_admin(ctx):
            raise ToolError(
                "ingest needs an admin: over HTTP the server's bearer token (AGENTIC_RAG_SERVE_TOKEN) "
                "or the key of a user made with --admin"
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
    """The MCP endpoint behind the same keys as ``/v1`` (server/identity.py ``caller_of``): a request
    without a valid key is refused before MCP sees it; the tools then run as the key's owner."""

    def __init__(self, app: ASGIApp, token: str | None, users: Any = None) -> None:
        self.app, self.token, self.users = app, token, users

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers") or []}
        try:
            caller_of(headers.get("authorization", ""), headers.get(ACT_AS_HEADER), self.token, self.users)
        except ApiError as exc:
            await error_response(exc.status, exc.code, exc.message)(scope, receive, send)
            return
        await self.app(scope, receive, send)


def mount_mcp(app: FastAPI, engine: Engine, *, unauthorized: ASGIApp | None = None) -> None:
    """Serve MCP (streamable HTTP, stateless, JSON replies) at ``/mcp`` of the HTTP API.

    (``unauthorized`` is kept for callers of the older signature: refusals now carry their own status.)"""
    users = getattr(app.state, "users", None)
    server = build_mcp(engine, users)
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
            endpoint=_BearerGate(endpoint.app, engine.settings.serve_token, users=users),
        )
    )
    outer = app.router.lifespan_context

    @contextlib.asynccontextmanager
    async def lifespan(instance: Any) -> AsyncIterator[Any]:
        async with server.session_manager.run(), outer(instance) as state:
            yield state

    app.router.lifespan_context = lifespan
