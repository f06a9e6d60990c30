"""The evidence behind an answer, for a reader who opens a citation: each cited passage's text with the
sentences that support the answer marked as character spans.

A passage sentence is marked when it holds at least ``SUPPORT_SHARE`` of the key terms of an answer
sentence citing that passage, the lexical rule verify applies (providers/offline_brain/support.py);
when no sentence reaches it, the passage sentence sharing most terms is marked, so an opened citation
always shows where to look when the two share any term.
"""

from __future__ import annotations

from functools import lru_cache

from pydantic import BaseModel

from core.schemas import Passage
from core.text import CITATION_RE, parse_citations, split_sentences
from providers.brain.analyze import key_terms
from server.spans import sentence_spans

SUPPORT_SHARE = 0.6  # check_answer_support's default lexical threshold


class Evidence(BaseModel):
    number: int
    chunk_id: str
    source: str
    heading: str = ""
    text: str
    highlights: list[tuple[int, int]]  # [start, end) offsets of supporting sentences in ``text``


@lru_cache(maxsize=2048)
def _sentences(text: str) -> tuple[list[tuple[int, int]], list[frozenset[str]]]:
    """A passage's sentence spans and each one's key terms, kept for the passages cited lately: they
    depend on the text alone, and popular passages are cited again and again."""
    spans = sentence_spans(text)
    return spans, [frozenset(key_terms(text[a:b])) for a, b in spans]


def supporting_spans(claims: list[str], text: str) -> list[tuple[int, int]]:
    """Spans of the sentences of ``text`` that support any of the claims (answer sentences).

    A passage's sentences are split and tokenised once (``_sentences``), not once per claim: that is
    what costs (jieba for Chinese); a claim is then a few set intersections."""
    spans, terms_of = _sentences(text)
    marked: set[tuple[int, int]] = set()
    for claim in claims:
        terms = set(key_terms(CITATION_RE.sub("", claim)))
        if not terms:
            continue
        scored = [
            (len(terms & sentence) / len(terms), span) for sentence, span in zip(terms_of, spans, strict=True)
        ]
        good = [span for share, span in scored if share >= SUPPORT_SHARE]
        best = max(scored, default=(0.0, (0, 0)))
        marked.update(good or ([best[1]] if best[0] > 0 else []))
    return sorted(marked)


def evidence_for(answer: str, passages: list[Passage]) -> list[Evidence]:
    """One entry per passage the answer cites, in citation-number order."""
    claims: dict[int, list[str]] = {}
    for sentence in split_sentences(answer):
        for number in parse_citations(sentence):
            claims.setdefault(number, []).append(sentence)
    return [
        Evidence(
            number=p.number,
            chunk_id=p.chunk_id,
            source=p.source,
            heading=p.heading,
            text=p.text,
            highlights=supporting_spans(claims[p.number], p.text),
        )
        for p in sorted(passages, key=lambda p: p.number)
        if p.number in claims
    ]
