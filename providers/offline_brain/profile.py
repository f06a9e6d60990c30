"""The question parsed once: a ``QuestionProfile`` every offline role reads instead of the raw string.

Before, each role re-ran the same readings of the question (its key terms at 26 places, its language at
13, its sub-questions twice); the profile holds them, built once per question (memoised by text) and
serialisable, so a trace or a test can show exactly what the brain read the question as.
"""

from __future__ import annotations

from functools import lru_cache

from pydantic import BaseModel, ConfigDict, Field

from core.text import detect_language
from providers.offline_brain.analysis import key_terms
from providers.offline_brain.contextualize import has_referring_word
from providers.offline_brain.decompose import decompose
from providers.offline_brain.facts import defined_term, wanted
from providers.offline_brain.lexicon import lexicon


class QuestionProfile(BaseModel):
    """What the offline brain reads a question as."""

    model_config = ConfigDict(frozen=True)

    text: str
    language: str = Field(description="detect_language of the question (zh, en, ...)")
    reader: str = Field(description="the answer's language: zh for a Chinese question, else en")
    terms: list[str] = Field(default_factory=list, description="key terms, in question order")
    kinds: list[str] = Field(default_factory=list, description="kinds of fact asked for (number, date, ...)")
    defined_term: str | None = Field(default=None, description="X of 什么是X / What is X")
    parts: list[str] = Field(
        default_factory=list, description="sub-questions (the analysis's sub_queries); [] for a simple one"
    )
    asks_for_code: bool = Field(default=False, description="asks for a command, code or an example")
    has_referring_word: bool = Field(
        default=False, description="leans on an earlier turn (它 / this / what about)"
    )

    @property
    def kind_set(self) -> set[str]:
        return set(self.kinds)


@lru_cache(maxsize=2048)
def profile(question: str) -> QuestionProfile:
    """The profile of ``question`` (memoised: the analyzer, judge and writer share one reading)."""
    language = detect_language(question)
    return QuestionProfile(
        text=question,
        language=language,
        reader="zh" if language == "zh" else "en",
        terms=key_terms(question),
        kinds=sorted(wanted(question)),
        defined_term=defined_term(question),
        parts=decompose(question),
        asks_for_code=bool(lexicon().pattern("asks_for_code").search(question)),
        has_referring_word=has_referring_word(question),
    )


def as_profile(question: str | QuestionProfile) -> QuestionProfile:
    """A profile from either a profile or the question's text (the roles' public entry points take both)."""
    return question if isinstance(question, QuestionProfile) else profile(question)
