"""Search without the agent: one retriever by name, shared by ``python main.py search`` and MCP's
``search`` tool, so both return the same hits and the same JSON records."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, get_args

from core.chunks import Filters, ScoredChunk

SearchMode = Literal["vector", "keyword", "hybrid", "multi_hop", "hyde"]
SEARCH_MODES: tuple[str, ...] = get_args(SearchMode)


@dataclass
class SearchResult:
    hits: list[ScoredChunk] = field(default_factory=list)
    hypothesis: str | None = None  # hyde only: the hypothetical answer searched with ("" = none found)


def first_pass_hypothesis(retrievers: Any, query: str, depth: int, filters: Filters | None) -> str:
    """Offline HyDE: the best sentence of a first hybrid pass stands in for a hypothetical answer."""
    from providers.brain.hyde import best_first_pass_sentence

    return best_first_pass_sentence(query, retrievers.hybrid.search(query, depth, filters))


def search(
    retrievers: Any,
    query: str,
    *,
    mode: str = "hybrid",
    k: int = 10,
    filters: Filters | None = None,
    hypothesis: str | None = None,
    depth: int = 30,
) -> SearchResult:
    """The ``k`` best chunks for ``query`` from one retriever; ``depth`` is hyde's first-pass breadth."""
    if not query.strip():
        raise ValueError("the query is empty")
    if mode not in SEARCH_MODES:
        raise ValueError(f"unknown search mode {mode!r}; choose one of: {', '.join(SEARCH_MODES)}")
    if k < 1:
        raise ValueError(f"k must be 1 or more (got {k})")
    if mode != "hyde":
        return SearchResult(retrievers.by_name(mode).search(query, k, filters))
    hypothesis = hypothesis or first_pass_hypothesis(retrievers, query, depth, filters)
    hits = retrievers.hyde.search(query, k, filters, hypothetical_answer=hypothesis or None)
    return SearchResult(hits, hypothesis)


def hit_record(rank: int, hit: ScoredChunk) -> dict[str, Any]:
    """One hit as plain JSON: where it is, how it scored, and its text."""
    return {
        "rank": rank,
        "id": hit.id,
        "score": hit.score,
        "ranks": hit.ranks,
        "scores": hit.scores,
        "source": hit.chunk.source,
        "locator": hit.chunk.locator(),
        "title": hit.chunk.title,
        "heading_path": hit.chunk.heading_path,
        "language": hit.chunk.language,
        "text": hit.chunk.text,
    }
