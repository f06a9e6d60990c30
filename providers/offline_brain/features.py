"""One small function per signal the offline writer weighs, each a number in [0, 1].

The writer (``answer.candidates``) computes these for every sentence of the evidence and hands them to
its fitted ``Combiner`` (``weights.py``); which signal counts how much is data, not code. Each signal
says what it measures and where it came from (the issue-8 round that introduced it), so a new behaviour
is a new function here, a refit (``bench/fit_offline_brain.py``) and a test, never a new constant.
"""

from __future__ import annotations

import math

from core.text import detect_language
from providers.offline_brain.facts import FACT_KINDS, has_kind
from providers.offline_brain.facts import defines as _defines
from providers.offline_brain.facts import other_edition as _other_edition
from providers.offline_brain.lexicon import lexicon
from providers.offline_brain.profile import QuestionProfile

_ZH, _EN, _ANY = lexicon().tables("features")


def term_weights(terms: list[str], sentences: list[set[str]]) -> dict[str, float]:
    """Inverse sentence frequency of each question term among the candidates: the topic every
    sentence mentions (越南投资发展银行) says little; the asked-about word (初名) says which one answers."""
    n = len(sentences)
    return {t: math.log(1 + (n + 1) / (1 + sum(t in found for found in sentences))) for t in terms}


def coverage(weights: dict[str, float], found: set[str]) -> float:
    """Share of the question's key terms the sentence (with its passage's heading) holds, each term
    weighted by how rare it is among the candidates (``term_weights``). The first signal (round 1)."""
    total = sum(weights.values())
    return sum(w for t, w in weights.items() if t in found) / total if total else 0.0


def meaning(similarity: float) -> float:
    """The cosine between the question's and the sentence's embeddings, clipped to [0, 1]: matches
    across languages where no word can (round 1, the use-multilingual embedder)."""
    return min(1.0, max(0.0, similarity))


def meaning_match(similarity: float, semantic_match: float) -> float:
    """The cosine on the coverage scale: ``semantic_match`` (the judge's cosine for "about the same
    thing", weights.json) reads as 0.5, twice that or more as 1."""
    return min(1.0, max(0.0, similarity) / (2 * semantic_match))


def on_question(cover: float, similarity: float, semantic_match: float) -> float:
    """Is the sentence on the question at all: term coverage or meaning (``meaning_match``), whichever
    says more. The sufficiency scale shared with the judge; a sentence at 0 is never chosen."""
    return max(cover, meaning_match(similarity, semantic_match))


def foreign(sentence: str, profile: QuestionProfile, cover: float) -> float:
    """For a sentence in another language than the question, the share of the question's terms it
    does not hold (1 when it shares none): what only meaning can speak for (meaning counts up to double
    there). Continuous since issue 21: a Chinese question over English docs shares a name or two with
    many sentences (`v-model`, KeepAlive), and sharing one lost the answer its meaning weight."""
    return (1.0 - cover) if detect_language(sentence) != profile.language else 0.0


def restates_question(sentence: str) -> float:
    """1 when the sentence is itself a question: evidence that restates the question does not answer it."""
    return float(bool(_ANY.asks.search(sentence)))


def fits_kind(sentence: str, stated: dict[str, float], profile: QuestionProfile) -> float:
    """Share of the asked kinds of fact the sentence supplies ("how many" → a number the question
    does not state itself; "when" → a date; "who" → a name); 0 when no kind is asked (round 1)."""
    kinds = profile.kinds
    if not kinds:
        return 0.0
    return sum(bool(stated) if k in FACT_KINDS else has_kind(sentence, k) for k in kinds) / len(kinds)


def misses_kind(fits: float, profile: QuestionProfile) -> float:
    """1 when a kind of fact is asked and the sentence supplies none (a gate: "how many" answered
    without any number is probably not the answer)."""
    return float(bool(profile.kinds) and not fits)


def defines(sentence: str, profile: QuestionProfile) -> float:
    """1 when the question asks what X is and the sentence opens with X and a copula (round 4)."""
    term = profile.defined_term
    return float(bool(term and _defines(sentence, term)))


def asks_how_to(profile: QuestionProfile) -> bool:
    """ "How do I …" / "怎么 / 如何 …": the question asks for the way to do something (lexicon ``asks_how_to``)."""
    return bool(lexicon().pattern("asks_how_to").search(profile.text))


def names_code(sentence: str, profile: QuestionProfile) -> float:
    """1 when a how-to question meets a sentence that names, as code, an API, parameter or command the
    question does not name itself (`v-model` for "How do I bind an input to state?", ``--set``,
    ``defineProps()``): technical documentation answers "how" with the name of the thing that does it
    (issue 21). 0 for every other question, and for code the question already names."""
    asked = profile.text.casefold()
    named = (m.group(0).strip("`").casefold() for m in _ANY.names_code.finditer(sentence))
    return float(asks_how_to(profile) and any(name and name not in asked for name in named))


def introduces_block(block: str, profile: QuestionProfile) -> float:
    """1 when a how-to question meets a sentence that introduces a code block, command or table
    ("Create a pinia instance and pass it to the app as a plugin:" and the block after it): the block
    shows how, and the answer includes it (``core.blocks.introduced_block``). 0 for other questions."""
    return float(bool(block) and asks_how_to(profile))


def asked_in(profile: QuestionProfile, language: str) -> float:
    """1 when the question is in ``language`` (features ``chinese_question``, ``english_question``):
    lets the fitted combiner weigh a signal per language (a term ``meaning*english_question``), since
    word coverage over jieba's segments of a Chinese question and over an English question's words are
    not equally telling (session 14: one weight for both, fitted on mostly Chinese questions, lost
    English answers)."""
    return float(profile.language == language)


def prior(passage_index: int) -> float:
    """The reranker's order: 1 for the first passage, 1/2 for the second, ... (round 1)."""
    return 1.0 / (1 + passage_index)


def other_edition(body: str, profile: QuestionProfile) -> float:
    """1 when the sentence is about another year's / season's event than the one asked (round 3)."""
    return float(_other_edition(body, profile.text))


__all__ = [
    "FACT_KINDS",
    "asked_in",
    "asks_how_to",
    "coverage",
    "defines",
    "fits_kind",
    "foreign",
    "introduces_block",
    "meaning",
    "meaning_match",
    "misses_kind",
    "names_code",
    "on_question",
    "other_edition",
    "prior",
    "restates_question",
    "term_weights",
]
