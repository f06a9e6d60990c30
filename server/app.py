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
from retrievers.filter_keys import UnknownFilterKeyError
from retrievers.index import IndexEmptyError, require_chunks
from server.access_log import AccessLog, noted
from server.answer_text import cited_text
from server.engine import Engine
from server.errors import ApiError, error_response
from server.evidence import evidence_for
from server.hardening import exception_body, public_result
from server.identity import UNAUTHORIZED, Caller, act_for, bearer_auth
from server.openai_compat import ChunkWriter, chat_chunks, resolve_model, sse, usage
from server.schemas import (
    AskRequest,
    AskResponse,
    ChatMessage,
    ChatRequest,
    collection_model_ids,
)
from server.web_api import add_web_api, mount_page

log = logging.getLogger(__name__)
EMPTY = (
    "the index is empty: run ingest (python main.py ingest PATH...) or upload documents "
    "(POST /v1/collections/{collection}/documents)"
)


# --- request size limit ----------------------------------------------------------------------------------


class BodyLimit:
    """Refuse request bodies over ``max_bytes`` with 413, whether announced (Content-Length) or streamed."""

    def __init__(self, app: ASGIApp, max_bytes: int, upload_bytes: int | None = None) -> None:
        self.app, self.max_bytes, self.upload_bytes = app, max_bytes, upload_bytes or max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or [])
        declared = headers.get(b"content-length", b"0")
        upload = str(scope.get("path", "")).endswith("/documents")  # document uploads have their own limit
        limit = self.upload_bytes if upload else self.max_bytes
        setting = "AGENTIC_RAG_SERVE_MAX_UPLOAD_MB" if upload else "AGENTIC_RAG_SERVE_MAX_REQUEST_KB"
        too_big = error_response(413, "request_too_large", f"request body over {limit} bytes ({setting})")
        if declared.isdigit() and int(declared) > limit:
            await too_big(scope, receive, send)
            return
        seen = 0

        async def limited() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > limit:  # FastAPI passes HTTPException from body reading through
                    raise FastAPIHTTPException(413, f"request body over {limit} bytes")
            return message

        await self.app(scope, limited, send)


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


def ask_response(result: AskResult, evidence: bool = True) -> dict[str, Any]:
    """The /v1/ask body; ``evidence`` (highlights of the cited passages) only when the caller wants it."""
    fields = AskResponse.model_fields
    data = result.model_dump(mode="json")
    data["evidence"] = (
        [e.model_dump() for e in evidence_for(result.answer, result.passages)] if evidence else []
    )
    return AskResponse(**{k: v for k, v in data.items() if k in fields}).model_dump()


_exception_body = exception_body  # no paths or exception text in error bodies (server/hardening.py)


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
    from memory.users import UserStore, users_path
    from server.collections import Collections
    from server.documents import documents_router
    from server.hardening import add_docs
    from server.threads_api import claim_thread, threads_router

    settings = engine.settings
    app = FastAPI(title="agentic-rag", version="0.1.0", docs_url=None, redoc_url=None, openapi_url=None)
    app.state.engine = engine
    users = app.state.users = UserStore(users_path(settings))
    collections = app.state.collections = Collections(engine, users)
    auth = bearer_auth(settings.serve_token, users)
    api = APIRouter(prefix="/v1", dependencies=[Depends(auth)])
    if settings.serve_docs:
        add_docs(app, auth)

    async def has_documents(collection: str, caller: Caller) -> None:
        """A stream on an empty collection is refused with 503 before it starts."""
        async with collections.lease(collection, caller) as leased:
            require_chunks(leased.context.retrievers.index)

    def public(result: AskResult, root: str, evidence: bool = False) -> dict[str, Any]:
        return public_result(ask_response(result, evidence), root, absolute=settings.serve_absolute_sources)

    @app.exception_handler(ApiError)
    async def _api_error(_: Request, exc: ApiError) -> JSONResponse:
        return error_response(exc.status, exc.code, exc.message)

    @app.exception_handler(IndexEmptyError)
    async def _empty(_: Request, exc: IndexEmptyError) -> JSONResponse:
        return error_response(503, "index_empty", EMPTY)

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

    @app.get("/readyz", dependencies=[Depends(auth)])
    async def readyz() -> JSONResponse:
        async with collections.lease("default", Caller("(ready)", admin=True)) as leased:
            chunks = await engine.call(leased.context.retrievers.index.count)
        if chunks == 0:
            return error_response(503, "index_empty", EMPTY)
        return JSONResponse({"status": "ready", "chunks": chunks, "mode": settings.mode})

    # -- ask --

    @api.post("/ask")
    async def ask(body: AskRequest, request: Request, caller: Caller = Depends(auth)) -> Any:
        noted(request, body.thread_id, body.question)
        asked = _filters(body.filters)
        try:
            engine.check_filters(asked)
        except UnknownFilterKeyError as exc:
            raise ApiError(400, "invalid_filters", str(exc)) from None
        filters = (asked or Filters()).for_caller(caller.access)
        collections.row(body.collection, caller)
        if body.thread_id:
            claim_thread(users, engine.saver, caller, body.collection, body.thread_id)
        kwargs = {"mode": body.mode, "thread_id": body.thread_id, "filters": filters}
        if body.stream:
            await has_documents(body.collection, caller)
            return StreamingResponse(_ask_events(body, caller, kwargs), media_type="text/event-stream")
        async with collections.lease(body.collection, caller) as leased:
            result = await engine.ask(body.question, context=leased.context, **kwargs)
            return public(_checked(result), leased.root, body.evidence)

    async def _ask_events(body: AskRequest, caller: Caller, kwargs: dict[str, Any]) -> AsyncIterator[bytes]:
        try:
            async with collections.lease(body.collection, caller) as leased:
                async for event in engine.stream(body.question, context=leased.context, **kwargs):
                    if event.kind == "step":
                        yield sse(
                            "step", public_result({"trace": event.data}, leased.root, absolute=False)["trace"]
                        )
                    elif event.kind == "token":
                        yield sse("token", {"text": event.data})
                    elif event.kind == "result":
                        yield sse("answer", public(_checked(event.data), leased.root, body.evidence))
                    else:
                        yield sse("error", _exception_body(event.data)[1])
        except Exception as exc:  # an empty index, a bad question: told in the stream, never with a path
            yield sse("error", _exception_body(exc)[1])

    # -- OpenAI-compatible --

    @api.get("/models")
    async def models(caller: Caller = Depends(auth)) -> dict[str, Any]:
        from server.collections import can_read

        created = int(time.time())
        ids = [
            m for row in collections.rows() if can_read(row, caller) for m in collection_model_ids(row.name)
        ]
        return {
            "object": "list",
            "data": [
                {"id": m, "object": "model", "created": created, "owned_by": "agentic-rag"} for m in ids
            ],
        }

    @api.post("/chat/completions")
    async def chat(body: ChatRequest, request: Request, caller: Caller = Depends(auth)) -> Any:
        try:
            choice = resolve_model(body.model, strict=settings.serve_strict_models)
        except LookupError as exc:
            raise ApiError(404, "model_not_found", str(exc)) from None
        if choice.warning:
            log.warning(choice.warning)
        if caller.admin:  # a trusted front-end names the person it serves
            caller = act_for(caller, body.user, users)
        collection = choice.collection
        collections.row(collection, caller)
        filters = Filters().for_caller(caller.access)
        question, turns = conversation(body.messages)
        noted(request, None, question)
        completion_id = f"chatcmpl-{uuid.uuid4().hex}"
        created = int(time.time())
        kwargs = {"mode": choice.mode, "messages": turns, "filters": filters}
        if body.stream:
            await has_documents(collection, caller)
            writer = ChunkWriter(completion_id, created, body.model, body.messages)
            return StreamingResponse(
                _chat_chunks(
                    question, collection, caller, kwargs, writer, choice.warning, body.include_usage()
                ),
                media_type="text/event-stream",
            )
        async with collections.lease(collection, caller) as leased:
            result = _checked(await engine.ask(question, context=leased.context, **kwargs))
            citations = public(result, leased.root)["citations"]
        content = cited_text(result, citations)
        reply = {
            "id": completion_id,
            "object": "chat.completion",
            "created": created,
            "model": body.model,
            "choices": [
                {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}
            ],
            "usage": usage(body.messages, content),
            "citations": citations,
            "confidence": result.confidence,  # issue 21: extra fields, as "citations"
            "needs_review": result.needs_review,
        }
        return reply | ({"warning": choice.warning} if choice.warning else {})

    async def _chat_chunks(
        question: str,
        collection: str,
        caller: Caller,
        kwargs: dict[str, Any],
        writer: ChunkWriter,
        warning: str | None,
        include_usage: bool,
    ) -> AsyncIterator[bytes]:
        """OpenAI's chunks (server/openai_compat.py) over one leased collection, sources made public."""
        async with collections.lease(collection, caller) as leased:

            def sources_of(result: AskResult) -> tuple[str, list[dict[str, Any]]]:
                result = _checked(result)
                citations = public(result, leased.root)["citations"]
                return cited_text(result, citations)[len(result.answer) :], citations

            events = engine.stream(question, context=leased.context, **kwargs)
            async for chunk in chat_chunks(
                events,
                writer,
                sources_of=sources_of,
                error_of=lambda exc: _exception_body(exc)[1],
                warning=warning,
                include_usage=include_usage,
            ):
                yield chunk

    api.include_router(threads_router(engine, collections, users, auth))
    api.include_router(documents_router(engine, collections, auth))
    add_web_api(api, engine, ApiError)
    app.include_router(api)
    from server.mcp import mount_mcp

    mount_mcp(app, engine, unauthorized=error_response(401, "invalid_api_key", UNAUTHORIZED))
    mount_page(app)
    upload = settings.serve_max_upload_mb * 1024 * 1024
    app.add_middleware(BodyLimit, max_bytes=settings.serve_max_request_kb * 1024, upload_bytes=upload)
    app.add_middleware(
        AccessLog, show_questions=lambda: logging.getLogger("server").isEnabledFor(logging.DEBUG)
    )
    return app
