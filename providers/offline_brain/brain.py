"""The offline brain: the Brain protocol answered by deterministic rules, no network, no model.

Thin on purpose: each method delegates to the module that owns the idea, so the LLM brain can fall back to
the same functions when a model's reply cannot be parsed.
"""

from __future__ import annotations

from graph.schemas import DraftAnswer, Passage, QueryAnalysis, RetrievalEvaluation, SentenceSupport
from providers.offline_brain.analysis import analyze_question
from providers.offline_brain.compute import computed_answer, plan_computation
from providers.offline_brain.contextualize import contextualize_question
from providers.offline_brain.extractive import check_answer_support, compress_passages, extractive_answer
from providers.offline_brain.judge import evaluate
from providers.offline_brain.rewrite import rewrite_query
from retrievers.types import ScoredChunk


def _check_ratio(name: str, value: float) -> float:
    if not isinstance(value, int | float) or not 0.0 <= float(value) <= 1.0:
        raise ValueError(f"{name} must be a number between 0 and 1, got {value!r}")
    return float(value)


class OfflineBrain:
    """Rule-based brain; ``sufficiency_threshold`` is the key-term coverage the evidence needs."""

    name = "offline"

    def __init__(self, sufficiency_threshold: float = 0.5, support_threshold: float = 0.6) -> None:
        self.sufficiency_threshold = _check_ratio("sufficiency_threshold", sufficiency_threshold)
        self.support_threshold = _check_ratio("support_threshold", support_threshold)

    def analyze(self, question: str) -> QueryAnalysis:
        return analyze_question(question)

    def judge(
        self, question: str, analysis: QueryAnalysis, chunks: list[ScoredChunk], tried: list[str]
    ) -> RetrievalEvaluation:
        return evaluate(question, analysis, chunks, tried, threshold=self.sufficiency_threshold)

    def rewrite(self, question: str, evaluation: RetrievalEvaluation, tried: list[str]) -> str:
        return rewrite_query(question, evaluation, tried)

    def contextualize(self, question: str, history: list[tuple[str, str]]) -> str:
        return contextualize_question(question, history)

    def compress(self, question: str, passages: list[Passage], token_budget: int) -> list[Passage]:
        return compress_passages(question, passages, token_budget)

    def answer(self, question: str, passages: list[Passage]) -> DraftAnswer:
        """A computation the question asks for over values in the passages (a tool call), else extractive."""
        computation = plan_computation(question, passages)
        if computation is not None:
            draft = computed_answer(question, computation)
            draft.tool_calls = [computation.result.model_dump()]
            return draft
        return extractive_answer(question, passages, threshold=self.sufficiency_threshold)

    def check_support(self, answer: str, passages: list[Passage]) -> list[SentenceSupport]:
        return check_answer_support(answer, passages, threshold=self.support_threshold)

    def drain_calls(self) -> list[dict]:
        """Model calls made since the last drain: always none for the offline brain."""
        return []
