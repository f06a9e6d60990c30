"""What a response may reveal: sources relative to the collection root, errors without paths or exception
text, and /docs + /openapi.json only when enabled (``AGENTIC_RAG_SERVE_DOCS``) and behind the keys."""

from __future__ import annotations

import logging
import os
import re
from typing import Any

from fastapi import Depends, FastAPI
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse, JSONResponse

from memory.checkpointer import CheckpointerError
from retrievers.index import IndexEmptyError
from server.errors import ApiError, error_body

log = logging.getLogger(__name__)


def relative_source(source: str, root: str) -> str:
    """``source`` relative to ``root`` when it lies under it (a record locator's ``#id`` is kept)."""
    if root and os.path.isabs(source) and (source == root or source.startswith(root.rstrip(os.sep) + os.sep)):
        return os.path.relpath(source, root)
    return source


def _strip_root(value: Any, root: str) -> Any:
    """Every string of a JSON value with ``root/`` taken out (trace details name files too)."""
    prefix = root.rstrip(os.sep) + os.sep
    if isinstance(value, str):
        return value.replace(prefix, "")
    if isinstance(value, list):
        return [_strip_root(v, root) for v in value]
    if isinstance(value, dict):
        return {k: _strip_root(v, root) for k, v in value.items()}
    return value


def public_result(data: dict[str, Any], root: str, *, absolute: bool) -> dict[str, Any]:
    """An ask result as clients see it: citations, evidence and trace relative to the collection root."""
    if absolute or not root:
        return data
    data = dict(data)
    for field in ("citations", "evidence"):  # evidence: the cited passages with their highlights
        if field in data:
            data[field] = [
                {**c, "source": relative_source(str(c.get("source", "")), root)} for c in data[field] or []
            ]
    if "trace" in data:
        data["trace"] = _strip_root(data["trace"], root)
    return data


_ABSOLUTE_PATH_RE = re.compile(r"(?<![\w:/.])(?:/[^\s'\"/]+)+/?")


def without_paths(message: str) -> str:
    """A message with every absolute path cut to its last part (what it names, not where it lives)."""
    return _ABSOLUTE_PATH_RE.sub(lambda m: os.path.basename(m.group(0).rstrip("/")), message)


def exception_body(exc: BaseException) -> tuple[int, dict[str, Any]]:
    """Status and body for a failure: our own errors say what to do; anything else says only that it
    failed (the log has the traceback), never a path or exception text."""
    if isinstance(exc, ApiError):
        return exc.status, error_body(exc.code, exc.message)
    if isinstance(exc, IndexEmptyError):
        return 503, error_body("index_empty", without_paths(str(exc)).split(";")[0] + ")")
    if isinstance(exc, CheckpointerError):
        return 503, error_body("checkpoint_store_unavailable", without_paths(str(exc)))
    return 500, error_body(
        "internal_error", f"the question failed ({type(exc).__name__}); see the server log"
    )


def add_docs(app: FastAPI, auth: Any) -> None:
    """/openapi.json and /docs behind the same keys as the API (only called when serving docs is on)."""

    @app.get("/openapi.json", include_in_schema=False, dependencies=[Depends(auth)])
    async def openapi() -> JSONResponse:
        return JSONResponse(app.openapi())

    @app.get("/docs", include_in_schema=False, dependencies=[Depends(auth)])
    async def docs() -> HTMLResponse:
        return get_swagger_ui_html(openapi_url="/openapi.json", title="agentic-rag API")
