"""What makes /v1/chat/completions behave like OpenAI's: model names resolved leniently (an unknown
name such as ``gpt-4o`` gets the default mode and a ``warning``, unless ``serve_strict_models``),
``usage`` counted with tiktoken, and the chunks of a streamed reply (with the final usage chunk when
``stream_options.include_usage`` asks for it).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from typing import Any

from pydantic import BaseModel

from providers.tokens import count_tokens
from server.schemas import MODEL_PREFIX, ChatMessage, model_target

# OpenAI's published accounting for chat prompts (cl100k models): every message costs 3 tokens of framing
# besides its role and content, and every reply is primed with 3 more.
TOKENS_PER_MESSAGE = 3
REPLY_PRIMING = 3


class ModelChoice(BaseModel):
    mode: str | None  # None: the configured default
    collection: str = "default"  # ``agentic-rag[-MODE]:COLLECTION`` (server/collections.py)
    warning: str | None = None


def resolve_model(model: str, *, strict: bool) -> ModelChoice:
    """The mode a model id selects; an unknown id falls back to the default mode with a warning, or
    raises ``LookupError`` when ``strict``."""
    try:
        mode, collection = model_target(model)
        return ModelChoice(mode=mode, collection=collection)
    except LookupError:
        if strict:
            raise
        warning = (
            f"unknown model {model!r}: answered by {MODEL_PREFIX!r} (the configured mode); "
            f"GET /v1/models lists the models (AGENTIC_RAG_SERVE_STRICT_MODELS=true refuses unknown ones)"
        )
        return ModelChoice(mode=None, warning=warning)


def prompt_tokens(messages: list[ChatMessage]) -> int:
    """Tokens of the prompt as OpenAI counts them: framing, role and content of every message."""
    total = REPLY_PRIMING
    for message in messages:
        total += TOKENS_PER_MESSAGE + count_tokens(message.role) + count_tokens(message.text())
    return total


def usage(messages: list[ChatMessage], completion: str) -> dict[str, int]:
    prompt, reply = prompt_tokens(messages), count_tokens(completion)
    return {"prompt_tokens": prompt, "completion_tokens": reply, "total_tokens": prompt + reply}


def sse(event: str | None, data: Any) -> bytes:
    """One server-sent event (JSON data unless a plain string such as ``[DONE]``)."""
    head = f"event: {event}\n" if event else ""
    body = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False, default=str)
    return f"{head}data: {body}\n\n".encode()


def sse_data(data: Any) -> bytes:
    return sse(None, data)


class ChunkWriter:
    """``chat.completion.chunk`` frames of one streamed reply, counting what was sent for ``usage``."""

    def __init__(self, completion_id: str, created: int, model: str, messages: list[ChatMessage]) -> None:
        self.completion_id, self.created, self.model = completion_id, created, model
        self.messages = messages
        self.sent: list[str] = []

    def _frame(self, choices: list[dict[str, Any]], **extra: Any) -> bytes:
        body = {
            "id": self.completion_id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            "choices": choices,
            **{k: v for k, v in extra.items() if v is not None},
        }
        return sse_data(body)

    def delta(self, delta: dict[str, Any], finish: str | None = None, **extra: Any) -> bytes:
        if delta.get("content"):
            self.sent.append(delta["content"])
        return self._frame([{"index": 0, "delta": delta, "finish_reason": finish}], **extra)

    def usage_frame(self) -> bytes:
        """The last chunk OpenAI sends with ``include_usage``: no choices, the whole reply's usage."""
        return self._frame([], usage=usage(self.messages, "".join(self.sent)))


async def chat_chunks(
    events: AsyncIterator[Any],
    writer: ChunkWriter,
    *,
    sources_of: Callable[[Any], tuple[str, list[dict[str, Any]]]],
    error_of: Callable[[BaseException], dict[str, Any]],
    warning: str | None = None,
    include_usage: bool = False,
) -> AsyncIterator[bytes]:
    """The chunks of a streamed reply: the role (and any warning), each answer piece as the engine sends
    it, the sources list, the stop chunk with the citations, usage when asked, then ``[DONE]``."""
    yield writer.delta({"role": "assistant", "content": ""}, warning=warning)
    try:
        async for event in events:
            if event.kind == "token":
                yield writer.delta({"content": event.data})
            elif event.kind == "result":
                sources, citations = sources_of(event.data)
                if sources:
                    yield writer.delta({"content": sources})
                yield writer.delta({}, "stop", citations=citations)
                if include_usage:
                    yield writer.usage_frame()
            elif event.kind == "error":
                yield sse_data(error_of(event.data))
    except Exception as exc:  # an ApiError raised while checking the result
        yield sse_data(error_of(exc))
    yield sse_data("[DONE]")
