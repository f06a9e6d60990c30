"""The question parsed once: a ``QuestionProfile`` every offline role reads instead of the raw string.

Before, each role re-ran the same readings of the question (its key terms at 26 places, its language at
13, its sub-questions twice); the profile holds them. The offline analyzer builds it from its own parse
(``analyze``: the profile's parts are the analysis's sub-queries) and carries it in the ``QueryAnalysis``;
the judge and the writer take it from there (``profile_for``). A role called with the text alone (a
test, a bench, an LLM analysis) builds one (``profile``, memoised by text). Serialisable, so a trace or a
test can show exactly what the brain read the question as.
"""

from __future__ import annotations

from functools import lru_cache

from core.schemas import QueryAnalysis, QuestionProfile
from core.text import detect_language
from providers.offline_brain.analysis import analyze_question, key_terms
from providers.offline_brain.contextualize import has_referring_word
from providers.offline_brain.decompose import decompose
from providers.offline_brain.facts import defined_term, wanted
from providers.offline_brain.lexicon import lexicon

__all__ = ["QuestionProfile", "analyze", "as_profile", "profile", "profile_for"]


def _read(question: str, parts: list[str]) -> QuestionProfile:
    language = detect_language(question)
    return QuestionProfile(
        text=question,
        language=language,
        reader="zh" if language == "zh" else "en",
        terms=key_terms(question),
        kinds=sorted(wanted(question)),
        defined_term=defined_term(question),
        parts=parts,
        asks_for_code=bool(lexicon().pattern("asks_for_code").search(question)),
        has_referring_word=has_referring_word(question),
    )


@lru_cache(maxsize=2048)
def profile(question: str) -> QuestionProfile:
    """The profile of ``question`` read from its text alone (memoised)."""
    return _read(question, decompose(question))


def analyze(question: str) -> QueryAnalysis:
    """The offline analysis with the question's profile in it, built from the same parse: its parts are
    the analysis's sub-queries (one ``decompose``), what the judge and the writer then read."""
    analysis = analyze_question(question)
    return analysis.model_copy(update={"profile": _read(question, list(analysis.sub_queries))})


def profile_for(question: str | QuestionProfile, analysis: QueryAnalysis | None = None) -> QuestionProfile:
    """The profile ``analysis`` carries when it is this question's, else one read from the text (a judge
    asked about a rewritten query, an LLM analysis without a profile)."""
    if isinstance(question, QuestionProfile):
        return question
    if analysis is not None and analysis.profile is not None and analysis.profile.text == question:
        return analysis.profile
    return profile(question)


as_profile = profile_for  # a profile from either a profile or the text (the roles' entry points take both)
