"""One access-log line per request on stderr: method, path, status, milliseconds, thread.

``serve`` is quiet otherwise (warnings only), so this is the line an operator watches. The question
text is left out unless the server runs with ``-v``: questions can be private. Endpoints name the
thread and question through ``request.state`` (``access_thread``, ``access_question``); the line is
written when the response has been sent in full, so a streamed answer is timed to its last byte.
"""

from __future__ import annotations

import json
import logging
import sys
import time
from collections.abc import Callable
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

ACCESS_LOGGER = "agentic_rag.access"


def access_logger() -> logging.Logger:
    """A logger writing bare lines to stderr at INFO, whatever level the rest of logging is at."""
    logger = logging.getLogger(ACCESS_LOGGER)
    if not logger.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(asctime)s access %(message)s", "%Y-%m-%dT%H:%M:%S"))
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)
        logger.propagate = False
    return logger


def access_line(
    method: str, path: str, status: int, ms: float, thread: str | None, question: str | None = None
) -> str:
    line = f"{method} {path} {status} {ms:.0f}ms thread={thread or '-'}"
    if question is not None:
        line += f" question={json.dumps(question, ensure_ascii=False)}"
    return line


def noted(request: Any, thread: str | None, question: str | None = None) -> None:
    """Tell the access log which thread (and question) the request is about."""
    request.state.access_thread = thread
    if question is not None:
        request.state.access_question = question


class AccessLog:
    """ASGI middleware timing each HTTP request to its last byte and logging one line."""

    def __init__(
        self,
        app: ASGIApp,
        show_questions: Callable[[], bool] = lambda: False,
        logger: logging.Logger | None = None,
    ) -> None:
        self.app, self.show_questions = app, show_questions
        self.logger = logger or access_logger()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500  # what the client sees when the app fails before answering

        async def watch(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, watch)
        finally:
            state = scope.get("state") or {}
            question = state.get("access_question") if self.show_questions() else None
            ms = (time.perf_counter() - started) * 1000
            line = access_line(
                scope["method"], scope["path"], status, ms, state.get("access_thread"), question
            )
            self.logger.info(line)
