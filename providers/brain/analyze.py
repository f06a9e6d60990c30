"""Analyze: classify the question, split it into sub-queries and recommend a retrieval strategy."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, Field

from core.schemas import Complexity, QueryAnalysis, QueryType, StrategyName
from core.text import detect_language
from providers import prompts
from providers.brain.chat import Chat, messages, norm
from providers.brain.roles import Analyze
from providers.offline_brain.analysis import key_terms
from providers.offline_brain.profile import analyze

__all__ = [
    "AnalysisReply",
    "CompactAnalysisReply",
    "LLMAnalyzer",
    "OfflineAnalyzer",
    "key_terms",
]  # key_terms: the server's evidence

# Bounds of the analysis reply's JSON schema (maxItems / maxLength): a grammar-constrained server cannot
# loop on sub-queries, and a reply that breaks them is invalid for any server.
MAX_SUB_QUERIES = 4
MAX_TERMS = 6
MAX_QUERY_CHARS = 160
MAX_TERM_CHARS = 60
MAX_REASONING_CHARS = 200
Language = Literal["zh", "en"]
_Query = Annotated[str, Field(max_length=MAX_QUERY_CHARS)]
_Term = Annotated[str, Field(max_length=MAX_TERM_CHARS)]


class AnalysisReply(BaseModel):
    """How to search for the question: its type, parts, strategy, names, exact tokens and language."""

    query_type: QueryType = "factual"
    complexity: Complexity = "simple"
    sub_queries: list[_Query] = Field(default_factory=list, max_length=MAX_SUB_QUERIES)
    recommended_strategy: StrategyName = "hybrid"
    reasoning: str = Field(default="", max_length=MAX_REASONING_CHARS)
    entities: list[_Term] = Field(default_factory=list, max_length=MAX_TERMS)
    identifiers: list[_Term] = Field(default_factory=list, max_length=MAX_TERMS)
    language: Language | None = Field(default=None, description="zh for a Chinese question, en otherwise")


class CompactAnalysisReply(BaseModel):
    """The part of an analysis that needs a model's judgement, two choices and no free text: what a
    2-core local model can afford (about 15 generated tokens instead of 80; the 1.5B model also wrote
    answers, not searches, into sub-queries: docs/benchmarks.md, issue 22). Complexity is not asked:
    it counts the question's parts, which the rules write here, and only the trace reads it."""

    query_type: QueryType = "factual"
    recommended_strategy: StrategyName = "hybrid"


class OfflineAnalyzer:
    """Deterministic zh/en rules (providers/offline_brain/analysis.py); the analysis carries the
    question's profile (providers/offline_brain/profile.py) for the offline judge and writer."""

    def __call__(self, question: str) -> QueryAnalysis:
        return analyze(question)


class LLMAnalyzer:
    """The model's analysis. With ``compact`` (an offline analyzer) the model only classifies the
    question (``CompactAnalysisReply``, asked under the writer's system prompt so the server reuses
    it); its parts, names, exact tokens, language and profile come from ``compact``'s rules, which
    cost milliseconds instead of generated tokens."""

    def __init__(self, chat: Chat, compact: Analyze | None = None) -> None:
        self.chat = chat
        self.compact = compact

    def __call__(self, question: str) -> QueryAnalysis:
        if self.compact is not None:
            return self._compact(question)
        asked = messages(prompts.ANALYZE_SYSTEM, prompts.analyze_user(question))
        reply = self.chat.structured("analyze", AnalysisReply, asked)
        fields = reply.model_dump()
        # The script of the question is a fact, not a judgement: a small model that labels an English
        # question "zh" is overruled (the reply was still invalid if it named no allowed value).
        fields["language"] = detect_language(question)
        return tidy_analysis(QueryAnalysis(**fields))

    def _compact(self, question: str) -> QueryAnalysis:
        assert self.compact is not None
        asked = messages(prompts.ANSWER_SYSTEM, prompts.analyze_compact_user(question))
        reply = self.chat.structured("analyze", CompactAnalysisReply, asked)
        offline = self.compact(question)
        reasoning = "type and strategy by the model; complexity, parts, names and language by the rules"
        return tidy_analysis(offline.model_copy(update={**reply.model_dump(), "reasoning": reasoning}))


def tidy_analysis(analysis: QueryAnalysis) -> QueryAnalysis:
    """Drop blank and repeated sub-queries (the language was validated by the reply's schema: a value
    such as "zh|en" copied from the prompt makes the reply invalid, never guessed into "zh")."""
    subs: list[str] = []
    for q in analysis.sub_queries:
        if q.strip() and norm(q) not in {norm(s) for s in subs}:
            subs.append(q.strip())
    return analysis.model_copy(update={"sub_queries": subs})
