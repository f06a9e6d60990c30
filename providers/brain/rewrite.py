"""Rewrite: a new search query aimed at what the evaluation found missing."""

from __future__ import annotations

from core.schemas import RetrievalEvaluation
from providers import prompts
from providers.brain.chat import Chat, messages, norm, one_line
from providers.brain.errors import ModelGaveUp
from providers.offline_brain.rewrite import rewrite_query


class OfflineRewriter:
    """Missing terms and synonyms added to the question (providers/offline_brain/rewrite.py)."""

    def __call__(self, question: str, evaluation: RetrievalEvaluation, tried: list[str]) -> str:
        return rewrite_query(question, evaluation, tried)


class LLMRewriter:
    def __init__(self, chat: Chat) -> None:
        self.chat = chat

    def __call__(self, question: str, evaluation: RetrievalEvaluation, tried: list[str]) -> str:
        asked = messages(
            prompts.REWRITE_SYSTEM,
            prompts.rewrite_user(question, evaluation.missing_info, evaluation.reasoning, tried),
        )
        query = one_line(self.chat.text("rewrite", asked))
        if not query:
            raise ModelGaveUp("empty rewrite")
        if norm(query) in {norm(q) for q in tried}:
            raise ModelGaveUp("rewrite repeated a query already tried")
        return query
