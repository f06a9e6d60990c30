"""BM25 keyword retrieval with the mixed Chinese/English tokenizer."""

from __future__ import annotations

from collections.abc import Callable

from core.chunks import Filters, ScoredChunk
from core.tokenize import tokenize
from retrievers.base import ranked
from retrievers.index import Index


class KeywordRetriever:
    name = "keyword"

    def __init__(self, index: Index, tokenizer: Callable[[str], list[str]] = tokenize) -> None:
        self.index = index
        self.tokenizer = tokenizer

    def search(self, query: str, k: int, filters: Filters | None = None) -> list[ScoredChunk]:
        return ranked(self.name, self.index.keyword_search(self.tokenizer(query), k, filters))
