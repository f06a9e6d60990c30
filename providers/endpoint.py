"""Is the configured OpenAI-compatible endpoint there, and does it serve the configured model?

One cheap request (``GET /models``, no tokens spent), with the client's retries off and a short
timeout, so ``doctor`` and the session's start-up check answer within seconds.
"""

from __future__ import annotations

from dataclasses import dataclass

import openai

from providers.llm import PLACEHOLDER_API_KEY


@dataclass(frozen=True)
class EndpointStatus:
    reachable: bool
    endpoint: str
    problem: str = ""  # what is wrong and how to fix it, one line; "" when usable
    models: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return self.reachable and not self.problem


def check_endpoint(
    base_url: str | None, api_key: str | None, model: str, *, timeout_s: float = 5.0
) -> EndpointStatus:
    """Reachability, key and model of an endpoint; ``base_url=None`` is api.openai.com."""
    endpoint = base_url or "https://api.openai.com/v1"
    client = openai.OpenAI(
        base_url=base_url, api_key=api_key or PLACEHOLDER_API_KEY, max_retries=0, timeout=timeout_s
    )
    try:
        listed = tuple(m.id for m in client.models.list())
    except openai.APITimeoutError:
        return EndpointStatus(
            False,
            endpoint,
            f"{endpoint} did not answer within {timeout_s:g} s: is the server overloaded or stuck?",
        )
    except openai.APIConnectionError as exc:
        return EndpointStatus(
            False,
            endpoint,
            f"cannot reach {endpoint} ({exc.__cause__ or exc}): start the server, fix OPENAI_BASE_URL, "
            "or use the offline brain (AGENTIC_RAG_BRAIN=offline)",
        )
    except openai.AuthenticationError:
        return EndpointStatus(True, endpoint, f"{endpoint} rejected the API key: set OPENAI_API_KEY")
    except openai.NotFoundError:
        return EndpointStatus(True, endpoint)  # no model listing on this server: nothing more to check
    except openai.APIError as exc:
        return EndpointStatus(True, endpoint, f"{endpoint} answered {type(exc).__name__}: {exc}")
    if listed and model not in listed:
        shown = ", ".join(listed[:5]) + (" …" if len(listed) > 5 else "")
        return EndpointStatus(
            True,
            endpoint,
            f"{endpoint} does not serve model {model!r} (it serves {shown}): set AGENTIC_RAG_LLM_MODEL",
            listed,
        )
    return EndpointStatus(True, endpoint, "", listed)


EXERCISE_TIMEOUT_S = 10.0


def exercise_endpoint(
    base_url: str | None,
    api_key: str | None,
    *,
    chat_model: str | None = None,
    embedding_model: str | None = None,
    timeout_s: float = EXERCISE_TIMEOUT_S,
) -> str:
    """One real request the way questions use the endpoint: a one-token chat completion (``chat_model``)
    or a one-text embedding (``embedding_model``), retries off, within ``timeout_s``. Returns "" when it
    worked, else what failed, one line. ``GET /models`` answering says nothing about these: a server
    can list its models and answer 500 to every completion."""
    endpoint = base_url or "https://api.openai.com/v1"
    client = openai.OpenAI(
        base_url=base_url, api_key=api_key or PLACEHOLDER_API_KEY, max_retries=0, timeout=timeout_s
    )
    what = "a one-token chat completion" if chat_model else "an embedding of one text"
    try:
        if chat_model:
            response = client.chat.completions.create(
                model=chat_model, messages=[{"role": "user", "content": "Reply with OK."}], max_tokens=1
            )
            if not response.choices:
                return f"{endpoint} answered {what} with no choices"
        else:
            result = client.embeddings.create(
                model=str(embedding_model), input=["doctor"], encoding_format="float"
            )
            if not result.data or not result.data[0].embedding:
                return f"{endpoint} answered {what} with no vector"
    except openai.APITimeoutError:
        return f"{endpoint} did not answer {what} within {timeout_s:g} s"
    except openai.APIStatusError as exc:
        message = " ".join(str(getattr(exc, "message", "") or exc).split())[:200]
        return f"{endpoint} answered {what} with HTTP {exc.status_code}: {message}"
    except openai.APIError as exc:
        return f"{endpoint} failed {what}: {type(exc).__name__}: {' '.join(str(exc).split())[:200]}"
    return ""
