"""Chat model factory: ``ChatOpenAI`` pointed at OpenAI or any OpenAI-compatible server.

vLLM, Ollama, llama.cpp server, LM Studio and hosted APIs all speak ``/v1/chat/completions``, so one
client covers them. The brain builds its model with the client's retries off: it retries 429, 5xx and
timeouts itself within the question's deadline and never retries a refused connection
(providers/brain/chat.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from langchain_openai import ChatOpenAI

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

    from config import Settings

# Local servers ignore the key but the openai client refuses to start without one.
PLACEHOLDER_API_KEY = "not-needed"


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
