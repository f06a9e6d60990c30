"""Verify: is each answer sentence supported by the passages it cites?"""

from __future__ import annotations

from functools import cache

from pydantic import BaseModel, Field, create_model

from core.schemas import Passage, SentenceSupport
from core.text import parse_citations, split_sentences
from providers import prompts
from providers.brain.chat import Chat, messages
from providers.meaning import Meaning
from providers.offline_brain.support import check_answer_support


class OfflineVerifier:
    """Terms, meaning and stated specifics against the cited passages (providers/offline_brain/support.py)."""

    def __init__(self, threshold: float = 0.6, meaning: Meaning | None = None) -> None:
        self.threshold = threshold
        self.meaning = meaning

    def __call__(self, answer: str, passages: list[Passage]) -> list[SentenceSupport]:
        return check_answer_support(answer, passages, threshold=self.threshold, meaning=self.meaning)


MAX_FLAGS = 40  # answer sentences one reply judges (the JSON schema's maxItems)


class _SupportReply(BaseModel):
    """One flag per answer sentence: is it supported by the passages it cites."""

    supported: list[bool] = Field(default_factory=list, max_length=MAX_FLAGS)


@cache
def _reply_for(sentences: int) -> type[_SupportReply]:
    """The reply schema for an answer of ``sentences`` sentences: exactly that many flags, so a
    grammar-constrained server (llama.cpp) cannot write more or fewer; the packaged 0.5B wrote two flags
    for one sentence in 3 of 20 answers, each costing a second request (docs/benchmarks.md, session 21)."""
    exact = min(sentences, MAX_FLAGS)
    flags = (list[bool], Field(default_factory=list, min_length=exact, max_length=exact))
    return create_model(
        _SupportReply.__name__, __base__=_SupportReply, __doc__=_SupportReply.__doc__, supported=flags
    )


class LLMVerifier:
    """The model flags each answer sentence. ``compact`` shows it all of the writer's passages under the
    writer's system prompt, the task after them, so the request repeats the writer's prompt prefix (a
    llama.cpp server then reads only the task and the sentences; issue 22)."""

    def __init__(self, chat: Chat, compact: bool = False) -> None:
        self.chat = chat
        self.compact = compact

    def __call__(self, answer: str, passages: list[Passage]) -> list[SentenceSupport]:
        sentences = split_sentences(answer)
        if not sentences:
            return []
        if self.compact:
            asked = messages(prompts.ANSWER_SYSTEM, prompts.check_support_compact_user(sentences, passages))
        else:
            cited = {n for s in sentences for n in parse_citations(s)}
            relevant = [p for p in passages if p.number in cited] or passages
            asked = messages(prompts.CHECK_SUPPORT_SYSTEM, prompts.check_support_user(sentences, relevant))

        def expected_length(reply: _SupportReply) -> None:
            if len(reply.supported) != len(sentences):
                raise ValueError(f"expected {len(sentences)} flags, got {len(reply.supported)}")

        reply = self.chat.structured(
            "check_support", _reply_for(len(sentences)), asked, check=expected_length
        )
        return [
            SentenceSupport(
                sentence=s, cited=sorted(parse_citations(s)), supported=ok, score=1.0 if ok else 0.0
            )
            for s, ok in zip(sentences, reply.supported, strict=True)
        ]
