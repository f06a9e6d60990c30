"""Fusing several rankings into one: reciprocal rank fusion and a normalised convex combination.

Both work on plain keys (index positions, or chunk ids) so the hybrid retriever can fuse positions and
fetch only the final k chunks from the docstore. Weights mean the same in both: a retriever's share of
the fused score (weight 0 removes it; equal weights treat the retrievers alike).

- ``rrf``: score = sum of weight / (k + rank). Ignores score magnitudes, so a retriever that is confidently
  right counts no more than one that is guessing.
- ``convex`` (Bruch et al. 2022, "An Analysis of Fusion Functions for Hybrid Retrieval"): each
  retriever's scores are scaled to [0, 1] within its own candidate list (min-max, the list's lowest
  score counting as 0 unless a theoretical floor is given), then combined as the weighted mean. A chunk a
  retriever did not return counts 0 for it. A weak retriever's flat, low-contrast scores then move the
  result little, which is what keeps the fusion close to its best part.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from core.chunks import ScoredChunk

FUSION_METHODS = ("rrf", "convex")


@dataclass(frozen=True)
class Ranking:
    """One retriever's hits, best first: keys, raw scores, and (optionally) ranks other than 1, 2, ..."""

    keys: Sequence[Hashable]
    scores: Sequence[float]
    ranks: Sequence[int] | None = None

    def rank_list(self) -> list[int]:
        return list(self.ranks) if self.ranks is not None else list(range(1, len(self.keys) + 1))


@dataclass
class Fused:
    key: Hashable
    score: float = 0.0
    ranks: dict[str, int] = field(default_factory=dict)
    scores: dict[str, float] = field(default_factory=dict)


def _weight(weights: Mapping[str, float] | None, name: str) -> float:
    return 1.0 if weights is None else float(weights.get(name, 1.0))


def _collect(rankings: Mapping[str, Ranking]) -> dict[Hashable, Fused]:
    """One entry per key, holding every ranking's rank and raw score for it."""
    fused: dict[Hashable, Fused] = {}
    for name, ranking in rankings.items():
        for key, score, rank in zip(ranking.keys, ranking.scores, ranking.rank_list(), strict=True):
            entry = fused.setdefault(key, Fused(key))
            entry.ranks.setdefault(name, int(rank))
            entry.scores.setdefault(name, float(score))
    return fused


def _ordered(fused: dict[Hashable, Fused]) -> list[Fused]:
    """Best score first; ties on the best single rank, then the key, so output is deterministic."""
    return sorted(fused.values(), key=lambda f: (-f.score, min(f.ranks.values(), default=0), f.key))


def rrf(
    rankings: Mapping[str, Ranking], *, k: int = 60, weights: Mapping[str, float] | None = None
) -> list[Fused]:
    fused = _collect(rankings)
    for name, ranking in rankings.items():
        weight = _weight(weights, name)
        for key, rank in zip(ranking.keys, ranking.rank_list(), strict=True):
            fused[key].score += weight / (k + rank)
    return _ordered(fused)


def minmax_unit(scores: Sequence[float], floor: float | None = None) -> np.ndarray:
    """Scale to [0, 1]: the list's maximum maps to 1, ``floor`` (default: the list's minimum) to 0.

    A list whose scores are all equal maps to 1: it ranks nothing, but a retriever that returned a
    single hit still vouches for it.
    """
    arr = np.asarray(scores, dtype=np.float64)
    if arr.size == 0:
        return arr
    low = float(arr.min()) if floor is None else min(float(floor), float(arr.min()))
    span = float(arr.max()) - low
    if not np.isfinite(span) or span <= 1e-12:
        return np.ones_like(arr)
    return (arr - low) / span


def convex(
    rankings: Mapping[str, Ranking],
    *,
    weights: Mapping[str, float] | None = None,
    floors: Mapping[str, float] | None = None,
) -> list[Fused]:
    fused = _collect(rankings)
    total = sum(_weight(weights, name) for name in rankings) or 1.0
    for name, ranking in rankings.items():
        weight = _weight(weights, name) / total
        if weight == 0:
            continue
        unit = minmax_unit(ranking.scores, (floors or {}).get(name))
        for key, value in zip(ranking.keys, unit.tolist(), strict=True):
            fused[key].score += weight * value
    return _ordered(fused)


def fuse(
    method: str,
    rankings: Mapping[str, Ranking],
    *,
    rrf_k: int = 60,
    weights: Mapping[str, float] | None = None,
    floors: Mapping[str, float] | None = None,
) -> list[Fused]:
    if method == "rrf":
        return rrf(rankings, k=rrf_k, weights=weights)
    if method == "convex":
        return convex(rankings, weights=weights, floors=floors)
    raise ValueError(f"unknown fusion {method!r}; choose one of: {', '.join(FUSION_METHODS)}")


def reciprocal_rank_fusion(
    rankings: Mapping[str, list[ScoredChunk]],
    *,
    k: int = 60,
    weights: Mapping[str, float] | None = None,
) -> list[ScoredChunk]:
    """RRF over lists of ScoredChunks (multi-hop hops, the keyword top-up), keyed by chunk id.

    A chunk found by several rankings appears once, with its metadata and every ranking's rank and
    score kept. Ties break on the best single rank, then on chunk id, so output is deterministic.
    """
    fused: dict[str, ScoredChunk] = {}
    for name, hits in rankings.items():
        weight = _weight(weights, name)
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
