"""The agent's typed state. Only plain data: it is checkpointed per conversation thread.

Chunks, analyses and evaluations are stored as ``model_dump()`` dicts of the pydantic types in
``retrievers.types`` and ``graph.schemas``; nodes validate them back when they need the models.
"""

from __future__ import annotations

from typing import Annotated, Any

from langchain_core.messages import AnyMessage
from langgraph.graph.message import add_messages
from typing_extensions import TypedDict

RESET = {"__reset__": True}


def append_or_reset(old: list[dict] | None, new: list[dict] | None) -> list[dict]:
    """Append per-turn events; an update starting with ``RESET`` starts a fresh list (new turn)."""
    old = old or []
    new = new or []
    if new and new[0] == RESET:
        return list(new[1:])
    return old + new


class AgentState(TypedDict, total=False):
    # conversation
    messages: Annotated[list[AnyMessage], add_messages]
    question: str
    standalone_question: str
    # per-call options (set in the input; kept for the turn)
    mode: str
    filters: dict[str, Any] | None
    # analysis and search
    analysis: dict[str, Any]
    strategy: str
    query: str
    queries_tried: list[str]
    attempt: int
    hop_hits: Annotated[list[dict[str, Any]], append_or_reset]
    retrieved: list[dict[str, Any]]
    reranked: list[dict[str, Any]]
    evaluation: dict[str, Any]
    relevant_ids: list[str]
    new_relevant: int
    stop_reason: str
    # answer
    passages: list[dict[str, Any]]
    answer: str
    citations: list[dict[str, Any]]
    support: list[dict[str, Any]]
    insufficient: bool
    error: str
    trace: Annotated[list[dict[str, Any]], append_or_reset]


class InputState(TypedDict, total=False):
    """What a caller sends: a message (or question) plus optional per-call options."""

    messages: Annotated[list[AnyMessage], add_messages]
    question: str
    mode: str
    filters: dict[str, Any] | None


TURN_RESET: dict[str, Any] = {
    "analysis": {},
    "strategy": "",
    "query": "",
    "queries_tried": [],
    "attempt": 0,
    "hop_hits": [RESET],
    "retrieved": [],
    "reranked": [],
    "evaluation": {},
    "relevant_ids": [],
    "new_relevant": 0,
    "stop_reason": "",
    "passages": [],
    "answer": "",
    "citations": [],
    "support": [],
    "insufficient": False,
    "error": "",
}
