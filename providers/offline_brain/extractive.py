"""Extractive compression: keep the sentences of the evidence that matter for the question.

Sentences are scored by key-term coverage and, when the runtime hands over an embedder, by meaning (so
an English passage keeps the sentences that answer a Chinese question). The answer writer
(``answer.py``) and the support checker (``support.py``) build on the splitter and citation parser here.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, replace

from core.schemas import Passage
from core.text import detect_language, join_sentences, parse_citations, split_sentences
from providers.meaning import Meaning
from providers.offline_brain.analysis import key_terms
from providers.tokens import count_tokens, truncate_to_tokens

__all__ = ["compress_passages", "coverage", "found_share", "parse_citations", "split_sentences"]


def coverage(terms: list[str], text: str) -> float:
    """Share of the terms that occur among the text's terms."""
    return found_share(terms, set(key_terms(text))) if terms else 0.0


def found_share(terms: list[str], found: set[str]) -> float:
    """Share of the terms that are among ``found`` (0 without terms)."""
    return sum(1 for t in terms if t in found) / len(terms) if terms else 0.0


@dataclass(frozen=True)
class _Scored:
    passage_index: int
    position: int
    sentence: str
    score: float
    terms: frozenset[str]


def _score_sentences(question: str, passages: list[Passage], meaning: Meaning | None = None) -> list[_Scored]:
    """Coverage of the question's key terms (plus small heading and language bonuses), or the meaning
    match when that is higher."""
    from providers.offline_brain.features import meaning_match
    from providers.offline_brain.weights import params

    semantic_match, other = params().judge.semantic_match, params().other
    heading_share, own_language = other.compress_heading, other.compress_language
    terms = key_terms(question)
    language = detect_language(question)
    split = [split_sentences(p.text) for p in passages]
    flat = [s for group in split for s in group]
    sims = iter(meaning.similarity(question, flat) if meaning and flat else [0.0] * len(flat))
    scored: list[_Scored] = []
    for p_index, passage in enumerate(passages):
        heading_terms = set(key_terms(passage.heading)) if passage.heading else set()
        for position, sentence in enumerate(split[p_index]):
            by_meaning = meaning_match(next(sims), semantic_match)
            found = set(key_terms(sentence)) & set(terms)
            # the heading gives context: a sentence under a matching heading is slightly more relevant
            bonus = heading_share * len(heading_terms & set(terms)) / len(terms) if terms else 0.0
            # a sentence in the question's own language reads better as an answer (small tie-breaker)
            if found and detect_language(sentence) == language:
                bonus += own_language
            score = (len(found) / len(terms) if terms else 0.0) + (bonus if found else 0.0)
            score = max(score, by_meaning if by_meaning >= 0.5 else 0.0)
            scored.append(_Scored(p_index, position, sentence, score, frozenset(found)))
    return scored


def compress_passages(
    question: str, passages: list[Passage], token_budget: int, meaning: Meaning | None = None
) -> list[Passage]:
    """Keep the most relevant sentences (in their original order) within ``token_budget`` tokens."""
    if token_budget <= 0:
        raise ValueError(f"token_budget must be a positive number of tokens, got {token_budget}")
    if not passages:
        return []
    scored = _score_sentences(question, passages, meaning)
    relevant = [s for s in scored if s.score > 0]
    if not relevant:
        # nothing matches the question's terms: keep leading sentences so the writer still sees the evidence
        relevant = [s for s in scored if s.position == 0]
    ranked = sorted(relevant, key=lambda s: (-s.score, s.passage_index, s.position))
    # Spare budget goes to the other sentences of the passages that matched, best passages first and
    # neighbours of kept sentences first: an answer often sits next to the sentence that shares the
    # question's words without sharing any itself.
    kept = {(s.passage_index, s.position) for s in ranked}
    matched = {s.passage_index for s in ranked}
    rest = [s for s in scored if s.passage_index in matched and (s.passage_index, s.position) not in kept]
    rest.sort(key=lambda s: (s.passage_index, _distance(s, kept), s.position))
    ranked += rest
    chosen: dict[int, list[_Scored]] = {}
    used = 0
    for item in ranked:
        cost = count_tokens(item.sentence) + 1
        if used + cost > token_budget:
            if used == 0:  # the single best sentence is too long: cut it rather than return nothing
                cut = truncate_to_tokens(item.sentence, max(token_budget - 1, 1))
                chosen.setdefault(item.passage_index, []).append(replace(item, sentence=cut))
                used = token_budget
            continue
        chosen.setdefault(item.passage_index, []).append(item)
        used += cost
    totals = Counter(s.passage_index for s in scored)
    out: list[Passage] = []
    for p_index, passage in enumerate(passages):
        if p_index not in chosen:
            continue
        sentences = sorted(chosen[p_index], key=lambda s: s.position)
        if len(sentences) == totals[p_index] and all(s.sentence in passage.text for s in sentences):
            out.append(passage)  # nothing dropped: keep the original text and its layout
            continue
        out.append(passage.model_copy(update={"text": join_sentences([s.sentence for s in sentences])}))
    return out


def _distance(sentence: _Scored, kept: set[tuple[int, int]]) -> float:
    positions = [pos for index, pos in kept if index == sentence.passage_index]
    return min((abs(sentence.position - pos) for pos in positions), default=math.inf)
