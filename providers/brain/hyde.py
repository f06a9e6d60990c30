"""The offline stand-in for HyDE's hypothetical answer: the first-pass sentence that covers the most
question terms. Without a model to write an answer-shaped text, the best sentence already retrieved is
the closest thing to one, and it is real text in the corpus's own wording."""

from __future__ import annotations

from core.chunks import ScoredChunk
from core.text import split_sentences
from providers.offline_brain.analysis import key_terms
from providers.offline_brain.extractive import coverage


def best_first_pass_sentence(question: str, hits: list[ScoredChunk], passages: int = 3) -> str:
    """The sentence of the top ``passages`` hits with the highest question-term coverage ("" if none)."""
    terms = key_terms(question)
    best, best_score = "", 0.0
    for hit in hits[:passages]:
        for sentence in split_sentences(hit.chunk.text):
            score = coverage(terms, sentence)
            if score > best_score:
                best, best_score = sentence, score
    return best
