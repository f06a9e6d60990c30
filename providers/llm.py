"""Chat model factory: ``ChatOpenAI`` pointed at OpenAI or any OpenAI-compatible server.

vLLM, Ollama, llama.cpp server, LM Studio and hosted APIs all speak ``/v1/chat/completions``, so one
client covers them. The brain builds its model with the client's retries off: it retries 429, 5xx and
timeouts itself within the question's deadline and never retries a refused connection
(providers/brain/chat.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import openai

try:  # the HTTP library the openai client is built on: httpx2 in openai 3, httpx before
    import httpx2 as httpx
except ImportError:  # pragma: no cover - older openai releases
    import httpx  # type: ignore[no-redef]
from langchain_openai import ChatOpenAI

from providers.brain.budget import current_budget

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

    from config import Settings

# Local servers ignore the key but the openai client refuses to start without one.
PLACEHOLDER_API_KEY = "not-needed"
# A request still waiting this long after its question's deadline is dropped (the connection closed).
DEADLINE_GRACE_S = 0.5


class DeadlineTransport(httpx.HTTPTransport):
    """Every request's timeouts shortened to what is left of the running question's LLM deadline.

    The question's budget gives up waiting at its deadline; this makes the request itself end there
    too, so no abandoned request keeps the process (``ask``) alive until the client's own timeout, and
    the server sees the connection close. The budget is a context variable, read in the thread that
    sends the request (the budget runs each step in a thread with the question's context)."""

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        remaining = current_budget().remaining()
        if remaining is not None:
            limit = remaining + DEADLINE_GRACE_S
            timeouts: dict[str, Any] = dict(request.extensions.get("timeout") or {})
            for key in ("connect", "read", "write", "pool"):
                value = timeouts.get(key)
                timeouts[key] = limit if value is None else min(float(value), limit)
            request.extensions["timeout"] = timeouts
        return super().handle_request(request)


def make_chat_model(
    *,
    base_url: str | None,
    api_key: str | None,
    model: str,
    timeout_s: float,
    max_retries: int,
    temperature: float,
    streaming: bool = True,
) -> BaseChatModel:
    """Build the chat model; ``base_url=None`` means api.openai.com, ``api_key=None`` a local server.

    ``use_responses_api=False`` pins the Chat Completions protocol: langchain-openai switches some
    model names to the Responses API, which OpenAI-compatible servers do not implement.
    """
    if not model or not model.strip():
        raise ValueError("llm model name is empty; set AGENTIC_RAG_LLM_MODEL or OPENAI_MODEL")
    if timeout_s <= 0:
        raise ValueError(f"llm timeout must be positive seconds, got {timeout_s}")
    if max_retries < 0:
        raise ValueError(f"llm max_retries must be >= 0, got {max_retries}")
    if not base_url and not api_key:
        raise ValueError("no OpenAI API key: set OPENAI_API_KEY, or OPENAI_BASE_URL for a local server")
    if base_url and not base_url.startswith(("http://", "https://")):
        raise ValueError(f"llm base_url must start with http:// or https://, got {base_url!r}")
    return ChatOpenAI(
        http_client=openai.DefaultHttpxClient(transport=DeadlineTransport()),
        model=model.strip(),
        base_url=base_url.rstrip("/") if base_url else None,
        api_key=api_key or PLACEHOLDER_API_KEY,
        timeout=timeout_s,
        max_retries=max_retries,
        temperature=temperature,
        streaming=streaming,
        use_responses_api=False,
    )


def chat_model_from_settings(settings: Settings, *, streaming: bool = True) -> BaseChatModel:
    """The chat model described by the ``llm_*`` / ``openai_*`` settings."""
    return make_chat_model(
        base_url=settings.openai_base_url,
        api_key=settings.openai_api_key,
        model=settings.llm_model,
        timeout_s=settings.llm_timeout_s,
        max_retries=0,  # the brain retries (providers/brain/chat.py)
        temperature=settings.llm_temperature,
        streaming=streaming,
    )
