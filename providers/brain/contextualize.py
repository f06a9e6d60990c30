"""Contextualize: a follow-up question rewritten to stand alone, using the conversation so far."""

from __future__ import annotations

from providers import prompts
from providers.brain.chat import Chat, messages, one_line
from providers.brain.errors import ModelGaveUp
from providers.offline_brain.contextualize import (
    contextualize_question,
    needs_clarification,
    the_one_document,
)

__all__ = ["LLMContextualizer", "OfflineContextualizer", "needs_clarification", "the_one_document"]


class OfflineContextualizer:
    """Reference resolution rules (providers/offline_brain/contextualize.py). ``needs_clarification``
    is asked before either brain: a fresh thread that says "it" has nothing any model could resolve."""

    def __call__(self, question: str, history: list[tuple[str, str]]) -> str:
        return contextualize_question(question, history)


class LLMContextualizer:
    def __init__(self, chat: Chat) -> None:
        self.chat = chat

    def __call__(self, question: str, history: list[tuple[str, str]]) -> str:
        if not history:
            return question
        asked = messages(prompts.CONTEXTUALIZE_SYSTEM, prompts.contextualize_user(question, history))
        standalone = one_line(self.chat.text("contextualize", asked))
        if not standalone:
            raise ModelGaveUp("empty standalone question")
        return standalone
