"""What the web page needs beyond the question API: the page itself (plain files shipped in
server/web/, no build step, nothing fetched from elsewhere), ``GET /v1/info`` telling a client what
this server offers, ``POST /v1/threads/{id}/feedback`` recording a verdict in the feedback store (as
given by the caller), and ``GET /v1/feedback`` listing it: a user sees only their own, an admin everyone's.

Upload is advertised only when the app has a route ``POST /v1/collections/{collection}/documents``:
the page shows its upload control from that flag, so the server, not the page, decides.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib import resources
from typing import Any

from fastapi import APIRouter, FastAPI, Request
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles
from pydantic import BaseModel, ConfigDict, Field

from core.access import cited_ids
from core.feedback import FeedbackRecord, Verdict
from memory.threads import WITHHELD
from nodes.policy import MODES
from retrievers.readable import unreadable_chunks
from server.access_log import noted
from server.collections import DEFAULT
from server.engine import Engine
from server.identity import LOCAL_ADMIN, Caller
from server.schemas import model_ids

WEB_FILES = resources.files("server") / "web"
UPLOAD_PATH = "/v1/collections/{collection}/documents"


class FeedbackRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    verdict: Verdict
    note: str = Field(default="", max_length=4000)
    turn: int | None = Field(
        default=None, ge=1, description="1 for the thread's first question; default last"
    )


def _routes(app: FastAPI) -> list[tuple[str, set[str]]]:
    """(path, methods) of every route, through included routers: FastAPI 0.165 keeps an included
    router as one entry whose ``effective_route_contexts()`` lists its routes with their full paths."""
    found = []
    for route in app.routes:
        contexts = getattr(route, "effective_route_contexts", None)
        for item in contexts() if callable(contexts) else [route]:
            found.append((getattr(item, "path", ""), set(getattr(item, "methods", None) or ())))
    return found


def upload_route(app: FastAPI) -> str | None:
    """The path of the document-upload route when this app has one (its parameter named as it likes)."""
    for path, methods in _routes(app):
        parts = path.split("/")
        if (
            "POST" in methods
            and len(parts) == 5
            and parts[:3] == ["", "v1", "collections"]
            and parts[3].startswith("{")
            and parts[4] == "documents"
        ):
            return path
    return None


def server_info(engine: Engine, app: FastAPI) -> dict[str, Any]:
    settings = engine.settings
    upload = upload_route(app)
    return {
        "name": "agentic-rag",
        "version": app.version,
        "mode": settings.mode,
        "modes": list(MODES),
        "models": model_ids(),
        "auth": bool(settings.serve_token),
        "brain": "llm" if settings.llm_configured else "offline",
        "capabilities": {"threads": True, "feedback": True, "stream": True, "upload": upload is not None},
        "upload_path": upload,
    }


def add_web_api(api: APIRouter, engine: Engine, error: Callable[[int, str, str], Exception]) -> None:
    """``/v1/info`` and the feedback route, on the API router (behind its bearer auth)."""
    from app.feedback import add_feedback
    from memory.feedback import FeedbackError, open_feedback_store

    settings = engine.settings

    @api.get("/info")
    async def info(request: Request) -> dict[str, Any]:
        return server_info(engine, request.app)

    def record(thread_id: str, body: FeedbackRequest, author: str) -> dict[str, Any]:
        with open_feedback_store(
            checkpoint_db=settings.checkpoint_db, postgres_url=settings.postgres_url
        ) as store:
            saved = add_feedback(
                store,
                engine.threaded_app,
                thread_id,
                body.verdict,
                turn=body.turn,
                note=body.note,
                author=author,
            )
        return {"id": saved.id, "thread_id": thread_id, "turn": saved.turn, "verdict": saved.verdict}

    def records(author: str | None, caller: Caller, index: Any) -> list[dict[str, Any]]:
        with open_feedback_store(
            checkpoint_db=settings.checkpoint_db, postgres_url=settings.postgres_url
        ) as store:
            found = store.records(author=author)
        cited = [cited_ids(r.citations) for r in found]
        hidden = unreadable_chunks(index, [i for ids in cited for i in ids], caller.access)
        return [feedback_view(r, bool(hidden & set(ids))) for r, ids in zip(found, cited, strict=True)]

    @api.get("/feedback")
    async def feedback_list(request: Request, user: str | None = None) -> dict[str, Any]:
        """Feedback given so far: a user's own; an admin's view is everyone's, or one user's (``?user=``)."""
        caller: Caller = request.state.caller
        if not caller.admin and user not in (None, caller.name):
            raise error(403, "not_admin", "only an admin may read another user's feedback")
        author = user if caller.admin else caller.name
        async with request.app.state.collections.lease(DEFAULT, caller) as leased:
            data = await engine.call(records, author, caller, leased.context.retrievers.index)
        return {"object": "list", "data": data}

    @api.post("/threads/{thread_id}/feedback")
    async def feedback(
        thread_id: str, body: FeedbackRequest, request: Request, collection: str = "default"
    ) -> dict[str, Any]:
        noted(request, thread_id)
        from server.threads_api import require_visible

        # only on one's own thread (others' are 404, as for reading them): server/threads_api.py
        require_visible(request.app.state.users, request.state.caller, collection, thread_id)
        caller: Caller = request.state.caller
        try:
            return await engine.call(record, thread_id, body, "" if caller is LOCAL_ADMIN else caller.name)
        except FeedbackError as exc:
            raise error(404, "feedback_target_not_found", str(exc)) from None


def feedback_view(record: FeedbackRecord, withheld: bool) -> dict[str, Any]:
    """A record as the API shows it: no passages or trace, and no answer or citations when they cite a
    document the reader can no longer read."""
    data = record.model_dump(mode="json", exclude={"passages", "trace"})
    if withheld:
        data.update(answer=WITHHELD, citations=[])
    return data


def mount_page(app: FastAPI) -> None:
    """The page at ``/`` and its script and style under ``/web/`` (public: the API calls carry the key)."""
    page = (WEB_FILES / "index.html").read_text(encoding="utf-8")

    @app.get("/", include_in_schema=False)
    async def index() -> HTMLResponse:
        return HTMLResponse(page, headers=PAGE_HEADERS)

    app.mount("/web", StaticFiles(directory=str(WEB_FILES)), name="web")


# The page runs only its own script and style, and nothing may load from elsewhere: a planted
# <script> or <img onerror> in a document would be inert even if it reached the DOM as markup.
PAGE_HEADERS = {
    "content-security-policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "connect-src 'self'; form-action 'none'; base-uri 'none'; frame-ancestors 'none'"
    ),
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
}
