"""Reciprocal rank fusion, keyed by chunk id."""

from __future__ import annotations

from collections.abc import Mapping

from core.chunks import ScoredChunk


def reciprocal_rank_fusion(
    rankings: Mapping[str, list[ScoredChunk]],
    *,
    k: int = 60,
    weights: Mapping[str, float] | None = None,
) -> list[ScoredChunk]:
    """Fuse named rankings: score = sum of weight / (k + rank) over the rankings that hold a chunk.

    A chunk found by several rankings appears once, with its metadata and every ranking's rank and
    score kept. Ties break on the best single rank, then on chunk id, so output is deterministic.
    """
    fused: dict[str, ScoredChunk] = {}
    for name, hits in rankings.items():
        weight = 1.0 if weights is None else float(weights.get(name, 1.0))
        for position, hit in enumerate(hits, start=1):
            rank = hit.ranks.get(name, position)
            entry = fused.get(hit.id)
            if entry is None:
                entry = fused[hit.id] = ScoredChunk(chunk=hit.chunk, score=0.0)
            entry.score += weight / (k + rank)
            for key, value in hit.ranks.items():
                entry.ranks.setdefault(key, value)
            for key, value in hit.scores.items():
                entry.scores.setdefault(key, value)
            entry.ranks.setdefault(name, rank)
    out = list(fused.values())
    for entry in out:
        entry.scores["rrf"] = entry.score
    out.sort(key=lambda h: (-h.score, min(h.ranks.values(), default=0), h.id))
    return out
