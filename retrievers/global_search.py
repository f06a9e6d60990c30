"""Search of the summary tree for questions about a whole document or collection (the ``global`` route).

``document`` scope ("总结这份报告的主要结论"): the document summary that matches the question best, then
that document's section summaries, best first. ``collection`` scope ("What are the main topics of these
docs?"): one document summary per document (map: each is its document's central sentences, written at
ingest; reduce: the answer writer combines them), at most ``max_documents`` of them, best matching
first. An index without summaries (ingested before the tree, or a dataset corpus of passages) falls
back to the ordinary passage search, so the route never answers from nothing.
"""

from __future__ import annotations

from typing import Literal

from core.chunks import Filters, ScoredChunk
from retrievers.base import Retriever
from retrievers.levels import DOCUMENT, SECTION, at_level

Scope = Literal["document", "collection"]


class GlobalRetriever:
    name = "global"

    def __init__(
        self, base: Retriever, *, max_documents: int = 12, vote_depth: int = 30, rrf_k: int = 60
    ) -> None:
        self.base = base
        self.max_documents = max_documents
        self.vote_depth = vote_depth
        self.rrf_k = rrf_k

    def search(
        self, query: str, k: int, filters: Filters | None = None, scope: Scope = "document"
    ) -> list[ScoredChunk]:
        passages = self.base.search(query, self.vote_depth, filters)
        documents = self.base.search(query, max(k, self.max_documents), at_level(filters, DOCUMENT))
        if not documents:
            return passages[:k]
        ranked = self._by_votes(passages, documents)
        if scope == "collection":
            return _tag(ranked[: self.max_documents], "collection")
        best = ranked[0]
        scoped = at_level(filters, SECTION)
        scoped.equals["source"] = best.chunk.source
        sections = self.base.search(query, k, scoped)
        return _tag([best, *sections][:k], "document")

    def _by_votes(self, passages: list[ScoredChunk], documents: list[ScoredChunk]) -> list[ScoredChunk]:
        """Document summaries ordered by which document the question is about: the reciprocal rank of
        its best passage among the best passages plus that of its summary (reciprocal rank fusion of
        the two rankings of documents)."""
        votes: dict[str, float] = {}
        for rank, hit in enumerate(passages, start=1):  # a document's best passage, not its number of
            votes.setdefault(hit.chunk.source, 1.0 / (self.rrf_k + rank))  # passages: long ones would win
        fused = {
            hit.chunk.source: votes.get(hit.chunk.source, 0.0) + 1.0 / (self.rrf_k + rank)
            for rank, hit in enumerate(documents, start=1)
        }
        order = sorted(range(len(documents)), key=lambda i: (-fused[documents[i].chunk.source], i))
        return [documents[i] for i in order]


def _tag(hits: list[ScoredChunk], scope: str) -> list[ScoredChunk]:
    for rank, hit in enumerate(hits, start=1):
        hit.ranks[f"global:{scope}"] = rank
    return hits
