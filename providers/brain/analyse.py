"""Analyse: classify the question, split it into sub-queries and recommend a retrieval strategy."""

from __future__ import annotations

from core.schemas import QueryAnalysis
from core.text import detect_language
from providers import prompts
from providers.brain.chat import Chat, messages, norm
from providers.offline_brain.analysis import analyze_question


class OfflineAnalyser:
    """Deterministic zh/en rules (providers/offline_brain/analysis.py)."""

    def __call__(self, question: str) -> QueryAnalysis:
        return analyze_question(question)


class LLMAnalyser:
    def __init__(self, chat: Chat) -> None:
        self.chat = chat

    def __call__(self, question: str) -> QueryAnalysis:
        asked = messages(prompts.ANALYZE_SYSTEM, prompts.analyze_user(question))
        return tidy_analysis(self.chat.structured("analyze", QueryAnalysis, asked), question)


def tidy_analysis(analysis: QueryAnalysis, question: str) -> QueryAnalysis:
    """Drop blank and repeated sub-queries; a language other than zh/en is detected from the question."""
    subs: list[str] = []
    for q in analysis.sub_queries:
        if q.strip() and norm(q) not in {norm(s) for s in subs}:
            subs.append(q.strip())
    language = analysis.language.lower()[:2] if analysis.language else ""
    return analysis.model_copy(
        update={
            "sub_queries": subs,
            "language": language if language in ("zh", "en") else detect_language(question),
        }
    )
