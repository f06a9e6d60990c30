"""BM25 keyword retrieval with the mixed Chinese/English tokenizer."""

from __future__ import annotations

from collections.abc import Callable

from core.chunks import Filters, ScoredChunk
from core.tokenize import tokenize
from retrievers.base import ranked
from retrievers.fusion import Ranking
from retrievers.store import Store


class KeywordRetriever:
    name = "keyword"

    def __init__(self, index: Store, tokenizer: Callable[[str], list[str]] = tokenize) -> None:
        self.index = index
        self.tokenizer = tokenizer

    def search(self, query: str, k: int, filters: Filters | None = None) -> list[ScoredChunk]:
        positions, scores = self.index.keyword_search(self.tokenizer(query), k, filters)
        return ranked(self.name, self.index.resolve(positions, scores))

    def rank(self, query: str, k: int, filters: Filters | None = None) -> Ranking:
        """Positions and BM25 scores only, for fusion before any chunk is fetched."""
        positions, scores = self.index.keyword_search(self.tokenizer(query), k, filters)
        return Ranking(positions.tolist(), scores.tolist())
