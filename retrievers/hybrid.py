"""Hybrid retrieval: dense and BM25 rankings fused on index positions, then only the final k fetched."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from core.chunks import Filters, ScoredChunk
from retrievers.fusion import Ranking, fuse
from retrievers.store import Store


class RankingRetriever(Protocol):
    """A retriever that can answer with index positions and scores instead of chunks."""

    name: str

    def rank(self, query: str, k: int, filters: Filters | None = None) -> Ranking: ...


class HybridRetriever:
    name = "hybrid"

    def __init__(
        self,
        retrievers: list[RankingRetriever],
        index: Store,
        *,
        fusion: str = "rrf",
        rrf_k: int = 60,
        weights: Mapping[str, float] | None = None,
        candidate_k: int = 50,
    ) -> None:
        self.retrievers = retrievers
        self.index = index
        self.fusion = fusion
        self.rrf_k = rrf_k
        self.weights = dict(weights or {})
        self.candidate_k = candidate_k

    def search(self, query: str, k: int, filters: Filters | None = None) -> list[ScoredChunk]:
        depth = max(k, self.candidate_k)
        rankings = {r.name: r.rank(query, depth, filters) for r in self.retrievers}
        fused = fuse(self.fusion, rankings, rrf_k=self.rrf_k, weights=self.weights)[:k]
        chunks = self.index.chunks_at(f.key for f in fused)
        return [
            ScoredChunk(
                chunk=chunks[f.key], score=f.score, ranks=f.ranks, scores={**f.scores, self.fusion: f.score}
            )
            for f in fused
            if f.key in chunks
        ]
