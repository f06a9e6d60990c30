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


class ModelGaveUp(Exception):
    """The model cannot answer this step (unusable reply, nothing to ask about); the backup must."""


def is_transient(exc: BaseException) -> bool:
    return isinstance(exc, TRANSIENT)


def describe(exc: BaseException) -> str:
    """One line naming the failure: the give-up reason, or the exception's kind and message."""
    if isinstance(exc, ModelGaveUp):
        return str(exc)
    kind = "transient" if is_transient(exc) else "error"
    message = str(exc).replace("\n", " ")[:300]
    return f"{kind}: {type(exc).__name__}: {message}"
