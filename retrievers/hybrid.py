"""Hybrid retrieval: several retrievers fused with reciprocal rank fusion."""

from __future__ import annotations

from collections.abc import Mapping

from core.chunks import Filters, ScoredChunk
from retrievers.base import Retriever
from retrievers.fusion import reciprocal_rank_fusion


class HybridRetriever:
    name = "hybrid"

    def __init__(
        self,
        retrievers: list[Retriever],
        *,
        rrf_k: int = 60,
        weights: Mapping[str, float] | None = None,
        candidate_k: int = 50,
    ) -> None:
        self.retrievers = retrievers
        self.rrf_k = rrf_k
        self.weights = dict(weights or {})
        self.candidate_k = candidate_k

    def search(self, query: str, k: int, filters: Filters | None = None) -> list[ScoredChunk]:
        depth = max(k, self.candidate_k)
        rankings = {r.name: r.search(query, depth, filters) for r in self.retrievers}
        return reciprocal_rank_fusion(rankings, k=self.rrf_k, weights=self.weights)[:k]
