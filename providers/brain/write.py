"""Write: the answer, with [n] markers citing the numbered passages."""

from __future__ import annotations

import re

from core.schemas import DraftAnswer, Passage
from providers import prompts
from providers.brain.chat import THINK_RE, Chat, messages
from providers.brain.errors import ModelGaveUp
from providers.offline_brain.compute import computed_answer, plan_computation
from providers.offline_brain.extractive import extractive_answer


class OfflineWriter:
    """A computation the question asks for over values in the passages (a tool call,
    providers/offline_brain/compute.py), else an extractive answer (providers/offline_brain/extractive.py);
    ``threshold`` is the coverage needed."""

    def __init__(self, threshold: float = 0.5) -> None:
        self.threshold = threshold

    def __call__(self, question: str, passages: list[Passage]) -> DraftAnswer:
        computation = plan_computation(question, passages)
        if computation is not None:
            draft = computed_answer(question, computation)
            draft.tool_calls = [computation.result.model_dump()]
            return draft
        return extractive_answer(question, passages, threshold=self.threshold)


class LLMWriter:
    """Streams the answer so LangGraph's ``messages`` mode shows tokens as they arrive."""

    def __init__(self, chat: Chat) -> None:
        self.chat = chat

    def __call__(self, question: str, passages: list[Passage]) -> DraftAnswer:
        if not passages:
            raise ModelGaveUp("no passages to answer from")
        asked = messages(prompts.ANSWER_SYSTEM, prompts.answer_user(question, passages))
        text = THINK_RE.sub("", "".join(self.chat.stream("answer", asked))).strip()
        if not text:
            raise ModelGaveUp("empty answer")
        return draft_from_text(text)


def draft_from_text(text: str) -> DraftAnswer:
    """Build a DraftAnswer, marking it insufficient when the canned phrase appears."""
    folded = text.casefold()
    insufficient = any(marker.casefold() in folded for marker in prompts.INSUFFICIENT_MARKERS)
    missing: list[str] = []
    for line in text.splitlines():
        stripped = line.strip().lstrip("-*• ").strip()
        for prefix in prompts.MISSING_PREFIXES:
            if stripped.casefold().startswith(prefix):
                items = re.split(r"[;；、]|,\s", stripped[len(prefix) :])
                missing += [item.strip(" .。") for item in items if item.strip(" .。")]
    return DraftAnswer(answer=text, insufficient=insufficient or bool(missing), missing=missing)
