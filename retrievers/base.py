"""The one interface every retriever offers."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from core.chunks import Chunk, Filters, ScoredChunk


@runtime_checkable
class Retriever(Protocol):
    name: str

    def search(self, query: str, k: int, filters: Filters | None = None) -> list[ScoredChunk]: ...


def ranked(name: str, hits: list[tuple[Chunk, float]]) -> list[ScoredChunk]:
    """Wrap raw (chunk, score) hits, best first, recording this retriever's rank and score."""
    return [
        ScoredChunk(chunk=chunk, score=score, ranks={name: rank}, scores={name: score})
        for rank, (chunk, score) in enumerate(hits, start=1)
    ]
