"""How a model failure is classified: transient (timeouts, dropped connections, 429, 5xx), a request
the server does not support (400/422: ask again without structured output), or a give-up."""

from __future__ import annotations

import openai
from langchain_core.exceptions import (
    ModelAPIError,
    ModelConnectionError,
    ModelInvalidRequestError,
    ModelRateLimitError,
    ModelTimeoutError,
)

TRANSIENT = (
    openai.APITimeoutError,
    openai.APIConnectionError,
    openai.RateLimitError,
    openai.InternalServerError,
    ModelTimeoutError,
    ModelConnectionError,
    ModelRateLimitError,
    ModelAPIError,
    TimeoutError,
    ConnectionError,
)
UNSUPPORTED = (openai.BadRequestError, openai.UnprocessableEntityError, ModelInvalidRequestError)


class LLMUnavailable(Exception):
    """The endpoint cannot be reached (refused, DNS, TLS): no use asking again during this question."""


class ModelGaveUp(Exception):
    """The model cannot answer this step (unusable reply, nothing to ask about); the backup must."""


def is_transient(exc: BaseException) -> bool:
    return isinstance(exc, TRANSIENT)


def is_unreachable(exc: BaseException) -> bool:
    """A failure to connect at all (a timeout is not one: the server may just be slow)."""
    connection = isinstance(exc, (openai.APIConnectionError, ModelConnectionError, ConnectionError))
    timeout = isinstance(exc, (openai.APITimeoutError, ModelTimeoutError, TimeoutError))
    return connection and not timeout


def is_retryable(exc: BaseException) -> bool:
    """Worth asking again after a pause: 429, 5xx and timeouts."""
    return isinstance(
        exc,
        (
            openai.RateLimitError,
            openai.InternalServerError,
            openai.APITimeoutError,
            ModelRateLimitError,
            ModelAPIError,
            ModelTimeoutError,
            TimeoutError,
        ),
    )


def retry_after_s(exc: BaseException) -> float | None:
    """The server's ``retry-after-ms`` / ``retry-after`` header in seconds, when it sent one."""
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None) or {}
    try:
        if "retry-after-ms" in headers:
            return float(headers["retry-after-ms"]) / 1000
        if "retry-after" in headers:
            return float(headers["retry-after"])
    except ValueError:
        return None
    return None


def describe(exc: BaseException) -> str:
    """One line naming the failure: the give-up reason, or the exception's kind and message."""
    if isinstance(exc, ModelGaveUp | LLMUnavailable):
        return str(exc)
    kind = "unreachable" if is_unreachable(exc) else "transient" if is_transient(exc) else "error"
    message = str(exc).replace("\n", " ")[:300]
    return f"{kind}: {type(exc).__name__}: {message}"
