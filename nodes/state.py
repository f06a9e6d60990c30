"""The agent's typed state. Only serialisable data: it is checkpointed per conversation thread.

Fields hold the pydantic models of ``core`` (LangGraph's serialiser stores and restores them, and
allows exactly the types named here when it reads a checkpoint back).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, TypeVar

from langchain_core.messages import AnyMessage
from langgraph.graph.message import add_messages
from pydantic import BaseModel, Field
from typing_extensions import TypedDict

from core.chunks import Chunk, Filters, ScoredChunk
from core.schemas import (
    ChunkJudgement,
    Citation,
    Passage,
    QueryAnalysis,
    QuestionProfile,
    RetrievalEvaluation,
    SentenceSupport,
)
from core.trace import Decision, TraceEvent
from nodes.attempts import Attempt, AttemptHits

T = TypeVar("T")
RESET: Literal["__reset__"] = "__reset__"


def append_or_reset(old: list[T] | None, new: list[T | Literal["__reset__"]] | None) -> list[T]:
    """Append per-turn items; an update starting with ``RESET`` starts a fresh list (new turn)."""
    old = old or []
    new = new or []
    if new and new[0] == RESET:
        return [item for item in new[1:] if item != RESET]  # type: ignore[misc]
    return old + new  # type: ignore[operator]


class HopHits(BaseModel):
    """What one sub-query of a multi-hop search found."""

    query: str
    hits: list[ScoredChunk] = Field(default_factory=list)
    through: str = ""  # the linked document (title) searched within: a second-hop search


class SubQuery(BaseModel):
    """The ``Send`` payload of one multi-hop sub-query search: only what that search needs."""

    sub_query: str
    filters: Filters | None = None
    through: str = ""  # search the sub-query within this linked document (a second hop), not the corpus
    mode: str | None = None  # the question's mode (its policy decides whether the entity graph joins in)


class AgentState(TypedDict, total=False):
    # conversation
    messages: Annotated[list[AnyMessage], add_messages]
    question: str
    standalone_question: str
    # per-call options (set in the input; kept for the turn)
    mode: str
    filters: Filters | None
    # analysis and search
    analysis: QueryAnalysis | None
    strategy: str
    query: str
    queries_tried: list[str]
    attempt: int
    hop_targets: list[str]  # linked documents the evidence points to: one hop further, once
    hop_hits: Annotated[list[HopHits], append_or_reset]
    retrieved: list[ScoredChunk]
    reranked: list[ScoredChunk]
    evaluation: RetrievalEvaluation | None
    relevant_ids: list[str]
    new_relevant: int
    stop_reason: str
    # session 9: every attempt's evaluated evidence (ids + verdict); the answer uses the best one
    attempts: Annotated[list[Attempt], append_or_reset]
    attempt_hits: Annotated[list[AttemptHits], append_or_reset]  # their ranked chunks (per turn)
    # answer
    passages: list[Passage]
    # each passage's number as the writer saw it, by chunk id (verify checks the answer so)
    written_numbers: dict[str, int]
    answer: str
    answer_offline: bool  # the offline writer wrote it (Brain.verify_offline checks it)
    citations: list[Citation]
    support: list[SentenceSupport]
    insufficient: bool
    confidence: float | None  # issue 21: core/confidence.py; None before the answer is checked
    needs_review: bool  # confidence below the review_threshold setting
    error: str
    trace: Annotated[list[TraceEvent], append_or_reset]


class InputState(TypedDict, total=False):
    """What a caller sends: a message (or question) plus optional per-call options."""

    messages: Annotated[list[AnyMessage], add_messages]
    question: str
    mode: str
    filters: Filters | None


# Per-turn working sets: needed while a turn runs, not by the conversation afterwards.
EVIDENCE_CHANNELS = ("retrieved", "reranked", "hop_hits", "attempt_hits")


def conversation_values(values: dict[str, Any]) -> dict[str, Any]:
    """What a checkpoint keeps: the conversation (question, answer, citations, messages, trace) and the
    ids of the passages behind the answer, not the candidates' or passages' text."""
    slim = {key: ([] if key in EVIDENCE_CHANNELS else value) for key, value in values.items()}
    if slim.get("passages"):
        slim["passages"] = [p.model_copy(update={"text": ""}) for p in slim["passages"]]
    return slim


TURN_RESET: dict[str, Any] = {
    "analysis": None,
    "strategy": "",
    "query": "",
    "queries_tried": [],
    "attempt": 0,
    "hop_targets": [],
    "hop_hits": [RESET],
    "retrieved": [],
    "reranked": [],
    "evaluation": None,
    "relevant_ids": [],
    "new_relevant": 0,
    "stop_reason": "",
    "attempts": [RESET],
    "attempt_hits": [RESET],
    "passages": [],
    "written_numbers": {},
    "answer": "",
    "answer_offline": False,
    "citations": [],
    "support": [],
    "insufficient": False,
    "confidence": None,
    "needs_review": False,
    "error": "",
}


# The classes a checkpoint of this state may hold: a saver read directly (thread listings, the
# session's resume check) loads exactly these, besides LangGraph's own types.
CHECKPOINT_TYPES: tuple[type, ...] = (
    QueryAnalysis,
    QuestionProfile,
    ChunkJudgement,
    RetrievalEvaluation,
    Chunk,
    ScoredChunk,
    Filters,
    Passage,
    Citation,
    SentenceSupport,
    TraceEvent,
    Decision,
    HopHits,
    SubQuery,
    Attempt,
    AttemptHits,
)
