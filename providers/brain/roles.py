"""The seven narrow questions the graph's nodes ask, and ``Brain``: one answerer for each.

Each role is a callable with one job, so an LLM implementation and an offline one of the same role
are interchangeable, and a brain can mix them (an LLM writer with an offline verifier, a test's own
judge). Every role receives plain data and returns ``core.schemas`` models.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from core.chunks import ScoredChunk
from core.schemas import DraftAnswer, Passage, QueryAnalysis, RetrievalEvaluation, SentenceSupport, SqlQuery
from providers.brain.calls import CallLog


class Analyze(Protocol):
    def __call__(self, question: str) -> QueryAnalysis:
        """Classify the question, decompose it and recommend a retrieval strategy."""
        ...


class Judge(Protocol):
    def __call__(
        self, question: str, analysis: QueryAnalysis, chunks: list[ScoredChunk], tried: list[str]
    ) -> RetrievalEvaluation:
        """Judge relevance per chunk and whether the evidence is enough to answer."""
        ...


class Rewrite(Protocol):
    def __call__(self, question: str, evaluation: RetrievalEvaluation, tried: list[str]) -> str:
        """A new search query that targets what is missing and differs from those tried."""
        ...


class Contextualize(Protocol):
    def __call__(self, question: str, history: list[tuple[str, str]]) -> str:
        """A follow-up turned into a standalone question, using (role, text) turns, oldest first."""
        ...


class Compress(Protocol):
    def __call__(self, question: str, passages: list[Passage], token_budget: int) -> list[Passage]:
        """The most relevant sentences of each passage within the token budget."""
        ...


class Write(Protocol):
    def __call__(
        self, question: str, passages: list[Passage], analysis: QueryAnalysis | None = None
    ) -> DraftAnswer:
        """The answer with [n] citations that refer to passage numbers; ``analysis`` is the question's
        (the offline writer reads the question's profile from it instead of parsing it again)."""
        ...


class Verify(Protocol):
    def __call__(self, answer: str, passages: list[Passage]) -> list[SentenceSupport]:
        """Each answer sentence checked against the passages it cites."""
        ...


@dataclass(frozen=True)
class Brain:
    """One answerer per role plus the log of model calls they made (read by the trace)."""

    name: str
    analyze: Analyze
    judge: Judge
    rewrite: Rewrite
    contextualize: Contextualize
    compress: Compress
    write: Write
    verify: Verify
    calls: CallLog = field(default_factory=CallLog)
    # The check of an answer the offline writer wrote (None: ``verify``): its sentences are the passages'
    # own, or a computation the offline check recomputes, so a model asked about them adds a request
    # (1.9 s with the packaged 0.5B, which falls back to that writer on 18 of 20 answers) and a chance
    # of dropping a quote, nothing the offline check misses (issue 22, docs/benchmarks.md session 21).
    verify_offline: Verify | None = None
    # Passage tokens the writer reads (None: the context_token_budget setting); a small model's is smaller.
    context_budget: int | None = None
    # The writer reads the passages in rank order, exactly as the (compact) judge was shown them, rather
    # than the judged-relevant ones first: its request then repeats the judge's prompt and a llama.cpp
    # server reuses the tokens it processed (issue 22; nodes/compress.py).
    rank_order_evidence: bool = False
    # The routes beyond passages (issue 26): a model's SQL for (question, schema, dialect) and its calls
    # of configured HTTP APIs; None (offline) leaves both to the rules in nodes/retrieve_sql.py, nodes/call_api.py.
    write_sql: Callable[[str, str, str], SqlQuery | None] | None = None
    choose_api: Callable[[str, list[Any]], list[dict[str, Any]]] | None = None
