"""The narrow questions nodes ask a "brain". Two implementations: the LLM brain and the offline brain.

Every method is synchronous and pure with respect to the graph: it receives plain data and returns
pydantic models, so nodes stay thin and the two brains are interchangeable.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from graph.schemas import DraftAnswer, Passage, QueryAnalysis, RetrievalEvaluation, SentenceSupport
from retrievers.types import ScoredChunk


@runtime_checkable
class Brain(Protocol):
    name: str

    def analyze(self, question: str) -> QueryAnalysis:
        """Classify the question, decompose it and recommend a retrieval strategy."""
        ...

    def judge(
        self, question: str, analysis: QueryAnalysis, chunks: list[ScoredChunk], tried: list[str]
    ) -> RetrievalEvaluation:
        """Judge relevance per chunk and whether the evidence is enough to answer."""
        ...

    def rewrite(self, question: str, evaluation: RetrievalEvaluation, tried: list[str]) -> str:
        """Produce a new search query that targets what is missing and differs from those tried."""
        ...

    def contextualize(self, question: str, history: list[tuple[str, str]]) -> str:
        """Turn a follow-up into a standalone question using (role, text) turns, oldest first."""
        ...

    def compress(self, question: str, passages: list[Passage], token_budget: int) -> list[Passage]:
        """Keep the most relevant sentences of each passage within the token budget."""
        ...

    def answer(self, question: str, passages: list[Passage]) -> DraftAnswer:
        """Write the answer with [n] citations that refer to passage numbers."""
        ...

    def check_support(self, answer: str, passages: list[Passage]) -> list[SentenceSupport]:
        """Check each answer sentence against the passages it cites."""
        ...
