"""The HTTP API: ask (plain or streamed as server-sent events), threads, health, and an OpenAI-compatible
chat endpoint so any OpenAI client or chat UI can use the engine.

Every error is JSON in the OpenAI shape ``{"error": {"message", "type", "code"}}`` with a fitting status.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import AsyncIterator
from typing import Any

from fastapi import APIRouter, Depends, FastAPI, Request
from fastapi import HTTPException as FastAPIHTTPException
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, StreamingResponse
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from core.chunks import Filters
from graph.run import AskResult
from memory.checkpointer import CheckpointerError
from retrievers.filter_keys import UnknownFilterKeyError
from retrievers.index import IndexEmptyError
from server.access_log import AccessLog, noted
from server.auth import bearer_ok
from server.engine import Engine
from server.evidence import evidence_for
from server.openai_compat import ChunkWriter, chat_chunks, resolve_model, sse, usage
from server.schemas import AskRequest, AskResponse, ChatMessage, ChatRequest, model_ids
from server.web_api import add_web_api, mount_page

log = logging.getLogger(__name__)


class ApiError(Exception):
    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


def error_body(code: str, message: str) -> dict[str, Any]:
    kind = "server_error" if code == "internal_error" else "invalid_request_error"
    return {"error": {"message": message, "type": kind, "code": code, "param": None}}


def error_response(status: int, code: str, message: str) -> JSONResponse:
    return JSONResponse(error_body(code, message), status_code=status)


# --- request size limit ----------------------------------------------------------------------------------


class BodyLimit:
    """Refuse request bodies over ``max_bytes`` with 413, whether announced (Content-Length) or streamed."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app, self.max_bytes = app, max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or [])
        declared = headers.get(b"content-length", b"0")
        too_big = error_response(
            413,
            "request_too_large",
            f"request body over {self.max_bytes} bytes (AGENTIC_RAG_SERVE_MAX_REQUEST_KB)",
        )
        if declared.isdigit() and int(declared) > self.max_bytes:
            await too_big(scope, receive, send)
            return
        seen = 0

        async def limited() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.max_bytes:  # FastAPI passes HTTPException from body reading through
                    raise FastAPIHTTPException(413, f"request body over {self.max_bytes} bytes")
            return message

        await self.app(scope, limited, send)


# --- auth --------------------------------------------------------------------------------------------------


UNAUTHORIZED = "missing or wrong bearer token (Authorization: Bearer ...)"


def bearer_auth(token: str | None):  # type: ignore[no-untyped-def]
    """A dependency checking ``Authorization: Bearer <token>`` in constant time; open when no token is set."""

    async def check(request: Request) -> None:
        if not bearer_ok(request.headers.get("authorization", ""), token):
            raise ApiError(401, "invalid_api_key", UNAUTHORIZED)

    return check


# --- helpers -----------------------------------------------------------------------------------------------


def _filters(pairs: dict[str, str]) -> Filters | None:
    try:
        return Filters.from_pairs([f"{k}={v}" for k, v in pairs.items()]) if pairs else None
    except ValueError as exc:  # pydantic's ValidationError included
        raise ApiError(400, "invalid_filters", f"invalid filters: {exc}".splitlines()[0]) from None


def _checked(result: AskResult) -> AskResult:
    if result.stop_reason == "invalid_input":
        raise ApiError(400, "invalid_question", result.error)
    return result


def ask_response(result: AskResult) -> dict[str, Any]:
    fields = AskResponse.model_fields
    data = result.model_dump(mode="json")
    data["evidence"] = [e.model_dump() for e in evidence_for(result.answer, result.passages)]
    return AskResponse(**{k: v for k, v in data.items() if k in fields}).model_dump()


def _exception_body(exc: BaseException) -> tuple[int, dict[str, Any]]:
    if isinstance(exc, ApiError):
        return exc.status, error_body(exc.code, exc.message)
    if isinstance(exc, CheckpointerError):
        return 503, error_body("checkpoint_store_unavailable", str(exc))
    return 500, error_body("internal_error", f"the question failed: {type(exc).__name__}: {exc}")


def cited_text(result: AskResult) -> str:
    """The answer followed by its numbered sources, the way a chat UI shows it."""
    if not result.citations:
        return result.answer
    lines = [result.answer, "", "Sources:"]
    for cite in result.citations:
        heading = f" — {cite.heading}" if cite.heading else ""
        lines.append(f"[{cite.number}] {cite.source}{heading}")
    return "\n".join(lines)


def conversation(messages: list[ChatMessage]) -> tuple[str, list[AnyMessage]]:
    """The last user message as the question, with the earlier user/assistant turns as history."""
    turns: list[AnyMessage] = []
    for message in messages:
        if message.role == "user":
            turns.append(HumanMessage(message.text()))
        elif message.role == "assistant":
            turns.append(AIMessage(message.text()))
        # system/developer/tool messages: the engine has its own instructions and no tools
    if not turns or not isinstance(turns[-1], HumanMessage) or not str(turns[-1].content).strip():
        raise ApiError(400, "invalid_messages", "the last message must be a non-empty user message")
    return str(turns[-1].content), turns


# --- the app -----------------------------------------------------------------------------------------------


def create_app(engine: Engine) -> FastAPI:
    settings = engine.settings
    app = FastAPI(title="agentic-rag", version="0.1.0", docs_url="/docs", redoc_url=None)
    app.state.engine = engine
    api = APIRouter(prefix="/v1", dependencies=[Depends(bearer_auth(settings.serve_token))])

    @app.exception_handler(ApiError)
    async def _api_error(_: Request, exc: ApiError) -> JSONResponse:
        return error_response(exc.status, exc.code, exc.message)

    @app.exception_handler(IndexEmptyError)
    async def _empty(_: Request, exc: IndexEmptyError) -> JSONResponse:
        return error_response(503, "index_empty", str(exc))

    @app.exception_handler(RequestValidationError)
    async def _invalid(_: Request, exc: RequestValidationError) -> JSONResponse:
        parts = []
        for err in exc.errors():
            where = ".".join(str(p) for p in err.get("loc", ()) if p != "body") or "body"
            parts.append(f"{where}: {err.get('msg')}")
        return error_response(422, "invalid_request", "; ".join(parts))

    @app.exception_handler(HTTPException)
    async def _http(_: Request, exc: HTTPException) -> JSONResponse:
        code = {404: "not_found", 405: "method_not_allowed", 413: "request_too_large"}.get(
            exc.status_code, "http_error"
        )
        return error_response(exc.status_code, code, str(exc.detail))

    @app.exception_handler(Exception)
    async def _crash(_: Request, exc: Exception) -> JSONResponse:
        log.exception("request failed")
        status, body = _exception_body(exc)
        return JSONResponse(body, status_code=status)

    @app.get("/healthz")
    async def healthz() -> dict[str, str]:
        return {"status": "ok"}

    @app.get("/readyz")
    async def readyz() -> JSONResponse:
        chunks = await engine.call(engine.chunk_count)
        if chunks == 0:
            return error_response(503, "index_empty", engine.empty_index_message())
        return JSONResponse({"status": "ready", "chunks": chunks, "mode": settings.mode})

    # -- ask --

    @api.post("/ask")
    async def ask(body: AskRequest, request: Request) -> Any:
        noted(request, body.thread_id, body.question)
        filters = _filters(body.filters)
        try:
            engine.check_filters(filters)
        except UnknownFilterKeyError as exc:
            raise ApiError(400, "invalid_filters", str(exc)) from None
        if body.stream:
            engine.require_documents()
            events = engine.stream(body.question, mode=body.mode, thread_id=body.thread_id, filters=filters)
            return StreamingResponse(_ask_events(events), media_type="text/event-stream")
        result = await engine.ask(body.question, mode=body.mode, thread_id=body.thread_id, filters=filters)
        return ask_response(_checked(result))

    async def _ask_events(events: AsyncIterator[Any]) -> AsyncIterator[bytes]:
        try:
            async for event in events:
                if event.kind == "step":
                    yield sse("step", event.data)
                elif event.kind == "token":
                    yield sse("token", {"text": event.data})
                elif event.kind == "result":
                    yield sse("answer", ask_response(_checked(event.data)))
                else:
                    yield sse("error", _exception_body(event.data)[1])
        except ApiError as exc:
            yield sse("error", error_body(exc.code, exc.message))

    # -- threads --

    @api.get("/threads")
    async def threads() -> list[dict[str, Any]]:
        from memory.threads import list_threads

        infos = await engine.call(list_threads, engine.saver)
        return [info.model_dump(mode="json") for info in infos]

    @api.get("/threads/{thread_id}")
    async def thread(thread_id: str, request: Request) -> dict[str, Any]:
        noted(request, thread_id)
        from memory.threads import ThreadNotFoundError, show_thread

        try:
            detail = await engine.call(show_thread, engine.saver, thread_id)
        except ThreadNotFoundError as exc:
            raise ApiError(404, "thread_not_found", str(exc)) from None
        return detail.model_dump(mode="json")

    @api.delete("/threads/{thread_id}")
    async def delete(thread_id: str, request: Request) -> dict[str, Any]:
        noted(request, thread_id)
        from memory.threads import delete_thread

        if not await engine.call(delete_thread, engine.saver, thread_id):
            raise ApiError(404, "thread_not_found", f"no conversation thread {thread_id!r}")
        return {"deleted": thread_id}

    # -- OpenAI-compatible --

    @api.get("/models")
    async def models() -> dict[str, Any]:
        created = int(time.time())
        return {
            "object": "list",
            "data": [
                {"id": m, "object": "model", "created": created, "owned_by": "agentic-rag"}
                for m in model_ids()
            ],
        }

    @api.post("/chat/completions")
    async def chat(body: ChatRequest, request: Request) -> Any:
        try:
            choice = resolve_model(body.model, strict=settings.serve_strict_models)
        except LookupError as exc:
            raise ApiError(404, "model_not_found", str(exc)) from None
        if choice.warning:
            log.warning(choice.warning)
        question, turns = conversation(body.messages)
        noted(request, None, question)
        engine.require_documents()
        completion_id = f"chatcmpl-{uuid.uuid4().hex}"
        created = int(time.time())
        if body.stream:
            events = engine.stream(question, mode=choice.mode, messages=turns)
            writer = ChunkWriter(completion_id, created, body.model, body.messages)
            chunks = chat_chunks(
                events,
                writer,
                sources_of=_sources,
                error_of=lambda exc: _exception_body(exc)[1],
                warning=choice.warning,
                include_usage=body.include_usage(),
            )
            return StreamingResponse(chunks, media_type="text/event-stream")
        result = _checked(await engine.ask(question, mode=choice.mode, messages=turns))
        content = cited_text(result)
        reply = {
            "id": completion_id,
            "object": "chat.completion",
            "created": created,
            "model": body.model,
            "choices": [
                {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}
            ],
            "usage": usage(body.messages, content),
            "citations": [cite.model_dump() for cite in result.citations],
        }
        return reply | ({"warning": choice.warning} if choice.warning else {})

    def _sources(result: AskResult) -> tuple[str, list[dict[str, Any]]]:
        result = _checked(result)
        return cited_text(result)[len(result.answer) :], [cite.model_dump() for cite in result.citations]

    add_web_api(api, engine, ApiError)
    app.include_router(api)
    from server.mcp import mount_mcp

    mount_mcp(app, engine, unauthorized=error_response(401, "invalid_api_key", UNAUTHORIZED))
    mount_page(app)
    app.add_middleware(BodyLimit, max_bytes=settings.serve_max_request_kb * 1024)
    app.add_middleware(
        AccessLog, show_questions=lambda: logging.getLogger("server").isEnabledFor(logging.DEBUG)
    )
    return app
