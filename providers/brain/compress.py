"""Compress: the most relevant sentences of each passage within the token budget, quoted, never invented."""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, Field

from core.schemas import Passage
from core.text import join_sentences, split_sentences
from providers import prompts
from providers.brain.chat import Chat, messages
from providers.brain.errors import ModelGaveUp
from providers.meaning import Meaning
from providers.offline_brain.extractive import compress_passages
from providers.tokens import count_tokens


class OfflineCompressor:
    """Sentences scored by key-term overlap or meaning (providers/offline_brain/extractive.py)."""

    def __init__(self, meaning: Meaning | None = None) -> None:
        self.meaning = meaning

    def __call__(self, question: str, passages: list[Passage], token_budget: int) -> list[Passage]:
        return compress_passages(question, passages, token_budget, meaning=self.meaning)


MAX_KEPT = 24  # sentence tags in one reply (the JSON schema's maxItems)


class _KeepReply(BaseModel):
    """Tags ("passage.sentence") of the sentences to keep, most important first."""

    keep: list[str | int | float] = Field(default_factory=list, max_length=MAX_KEPT)


class LLMCompressor:
    """The model picks sentence tags; passages already within the budget pass unchanged, unasked."""

    def __init__(self, chat: Chat) -> None:
        self.chat = chat

    def __call__(self, question: str, passages: list[Passage], token_budget: int) -> list[Passage]:
        if sum(count_tokens(p.text) for p in passages) <= token_budget:
            return list(passages)
        sentences = {p.number: split_sentences(p.text) for p in passages}
        entries = [
            (f"{p.number}.{i}", prompts.passage_label(p) if i == 1 else "…", s)
            for p in passages
            for i, s in enumerate(sentences[p.number], 1)
        ]
        asked = messages(
            prompts.COMPRESS_SYSTEM, prompts.compress_user(question, prompts.context_block(entries))
        )
        reply = self.chat.structured("compress", _KeepReply, asked)
        kept = select_sentences(reply.keep, sentences, token_budget)
        if not kept:
            raise ModelGaveUp("model kept no sentence")
        return [
            p.model_copy(
                update={"text": join_sentences([sentences[p.number][i] for i in sorted(kept[p.number])])}
            )
            for p in passages
            if p.number in kept
        ]


def select_sentences(
    keep: Sequence[str | int | float], sentences: dict[int, list[str]], budget: int
) -> dict[int, set[int]]:
    """Sentence indices to keep per passage, in the model's priority order, within the token budget."""
    chosen: dict[int, set[int]] = {}
    used = 0
    for tag in keep:
        number_text, _, index_text = str(tag).strip("[] ").partition(".")
        if not number_text.isdigit() or int(number_text) not in sentences:
            continue
        number = int(number_text)
        indices = [int(index_text) - 1] if index_text.isdigit() else range(len(sentences[number]))
        for index in indices:
            if not 0 <= index < len(sentences[number]) or index in chosen.get(number, set()):
                continue
            cost = count_tokens(sentences[number][index])
            if used + cost > budget:
                continue
            used += cost
            chosen.setdefault(number, set()).add(index)
    return chosen
