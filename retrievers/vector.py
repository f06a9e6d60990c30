"""Dense retrieval over the FAISS index, plus HyDE (search with a hypothetical answer's embedding)."""

from __future__ import annotations

import numpy as np

from core.chunks import Filters, ScoredChunk
from providers.embeddings import Embedder
from retrievers.base import ranked
from retrievers.fusion import Ranking
from retrievers.store import Store


class VectorRetriever:
    name = "vector"

    def __init__(self, index: Store, embedder: Embedder) -> None:
        self.index = index
        self.embedder = embedder

    def search(self, query: str, k: int, filters: Filters | None = None) -> list[ScoredChunk]:
        return self.search_vector(self.embedder.embed_query(query), k, filters)

    def rank(self, query: str, k: int, filters: Filters | None = None) -> Ranking:
        """Positions and cosines only: the hybrid retriever fuses these before fetching any chunk."""
        positions, scores = self.index.vector_search(self.embedder.embed_query(query), k, filters)
        return Ranking(positions.tolist(), scores.tolist())

    def search_vector(self, vector: np.ndarray, k: int, filters: Filters | None = None) -> list[ScoredChunk]:
        return ranked(self.name, self.index.resolve(*self.index.vector_search(vector, k, filters)))


class HydeRetriever:
    """Searches with the embedding of an answer-shaped text the caller supplies.

    A hypothetical answer sits closer to answer passages than a short question does; the question's
    own embedding is mixed in (``query_weight``) so a wrong guess cannot drag the search off topic.
    """

    name = "hyde"

    def __init__(self, vector: VectorRetriever, query_weight: float = 0.3) -> None:
        self.vector = vector
        self.query_weight = query_weight

    def search(
        self,
        query: str,
        k: int,
        filters: Filters | None = None,
        hypothetical_answer: str | None = None,
    ) -> list[ScoredChunk]:
        embedder = self.vector.embedder
        if not hypothetical_answer:
            return self.vector.search(query, k, filters)
        answer_vec = embedder.embed_documents([hypothetical_answer])[0]
        mixed = (1 - self.query_weight) * answer_vec + self.query_weight * embedder.embed_query(query)
        mixed = mixed / (np.linalg.norm(mixed) or 1.0)
        hits = self.vector.search_vector(mixed, k, filters)
        for hit in hits:
            hit.ranks = {self.name: hit.ranks.pop("vector")}
            hit.scores = {self.name: hit.scores.pop("vector")}
        return hits
