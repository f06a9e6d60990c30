"""BM25 keyword retrieval with the mixed Chinese/English tokenizer."""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence

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

    def unmentioned(
        self, names: Sequence[str], filters: Filters | None = None, without: Collection[str] = ()
    ) -> list[str]:
        """The names no chunk the caller may read mentions (one posting lookup each, by the name's
        longest term: the whole identifier, the whole Chinese word): a question naming what the
        collection never mentions ("Django" over Vue's docs) cannot be answered from it. ``without``:
        chunk ids to treat as absent (the answerability fit removes gold passages)."""
        missing = []
        for name in dict.fromkeys(names):
            terms = self.tokenizer(name)
            if not terms:
                continue
            keys = self.index.holders(max(terms, key=len), len(without) + 1, filters)
            if without and len(keys):
                keys = [c.id for c in self.index.chunks_at(keys).values() if c.id not in without]
            if not len(keys):
                missing.append(name)
        return missing
