"""Request and response bodies of the HTTP API (validated by pydantic at the boundary)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from nodes.policy import MODES

Mode = Literal["naive", "keyword", "hybrid", "hybrid_rerank", "self_query", "agentic"]
assert set(Mode.__args__) == set(MODES)  # type: ignore[attr-defined]

MODEL_PREFIX = "agentic-rag"


class AskRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    question: str = Field(min_length=1)
    mode: Mode | None = Field(default=None, description="retrieval mode; default from settings")
    thread_id: str | None = Field(
        default=None, min_length=1, max_length=200, description="continue (or start) this conversation"
    )
    filters: dict[str, str] = Field(
        default_factory=dict, description="source=GLOB, language=zh, after=DATE, before=DATE, any key"
    )
    stream: bool = Field(default=False, description="server-sent events: step, token, answer, error")
    collection: str = Field(default="default", description="the collection to search (GET /v1/collections)")
    evidence: bool = Field(
        default=True, description="include each cited passage with its supporting sentences marked"
    )


class AskResponse(BaseModel):
    question: str
    answer: str
    citations: list[dict[str, Any]]
    insufficient: bool
    confidence: float | None = None  # issue 21: in [0, 1] (core/confidence.py)
    needs_review: bool = False  # confidence below the review_threshold setting
    mode: str
    stop_reason: str
    thread_id: str | None
    trace: list[dict[str, Any]]
    latency_ms: float
    model_calls: int
    warnings: list[str] = Field(default_factory=list, description="e.g. the LLM endpoint was unreachable")
    evidence: list[dict[str, Any]] = Field(
        default_factory=list,
        description="each cited passage's text with the supporting sentences as [start, end) highlights",
    )


# --- OpenAI-compatible ---------------------------------------------------------------------------------


class ChatMessage(BaseModel):
    model_config = ConfigDict(extra="allow")

    role: str
    content: str | list[dict[str, Any]] | None = None

    def text(self) -> str:
        """Plain text of the message; multi-part content keeps its text parts."""
        if isinstance(self.content, list):
            return "\n".join(str(p.get("text", "")) for p in self.content if p.get("type") == "text")
        return self.content or ""


class ChatRequest(BaseModel):
    model_config = ConfigDict(extra="allow")  # temperature, max_tokens, ... are accepted and ignored

    model: str = MODEL_PREFIX
    messages: list[ChatMessage] = Field(min_length=1)
    stream: bool = False
    stream_options: dict[str, Any] | None = None
    user: str | None = None

    def include_usage(self) -> bool:
        return bool((self.stream_options or {}).get("include_usage"))


def model_ids() -> list[str]:
    """``agentic-rag`` (the configured mode) and ``agentic-rag-<mode>`` for every mode."""
    return [MODEL_PREFIX] + [f"{MODEL_PREFIX}-{mode}" for mode in MODES]


def model_target(model: str) -> tuple[str | None, str]:
    """(mode, collection) a model id names: ``agentic-rag[-MODE][:COLLECTION]``, collection ``default``."""
    base, _, collection = model.partition(":")
    return mode_for_model(base), collection or "default"


def collection_model_ids(collection: str) -> list[str]:
    """The model ids of one collection (the plain ones for ``default``)."""
    ids = model_ids()
    return ids if collection == "default" else [f"{m}:{collection}" for m in ids]


def mode_for_model(model: str) -> str | None:
    """The retrieval mode a model id selects; None for the configured default. Bare mode names work too."""
    if model == MODEL_PREFIX:
        return None
    mode = model.removeprefix(f"{MODEL_PREFIX}-")
    if mode in MODES:
        return mode
    raise LookupError(f"unknown model {model!r}; GET /v1/models lists them: {', '.join(model_ids())}")
