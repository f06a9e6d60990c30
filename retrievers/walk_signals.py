"""What a question's first-stage rankings say about whether the entity-graph walk should lead.

The walk (``retrievers/entity_graph.py``) reaches a bridge passage that shares an entity, not words,
with the question: that wins multi-hop questions. On a single-hop question it ranks every passage of the
page the question names by PageRank and pushes the passage hybrid search had right down (issue 20's
measurements, docs/evaluation.md). Each signal below is a number in [0, 1] computed from the question's
entity seeds, hybrid's ranking and the walk's ranking, before either is chosen, so a fitted combiner
(``retrievers/walk_gate.py``) can decide per question. None reads the language or the data set.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from core.chunks import ScoredChunk

TOP = 10  # the rankings' heads the signals compare (nDCG@10's depth)


def _ids(hits: list[ScoredChunk]) -> list[str]:
    return [h.id for h in hits[:TOP]]


def _reciprocal_rank(wanted: str | None, ids: list[str]) -> float:
    return 1.0 / (ids.index(wanted) + 1) if wanted is not None and wanted in ids else 0.0


def hybrid_top_in_walk(w: WalkView) -> float:
    """1 / rank of hybrid's best passage in the walk's top 10 (0 when the walk drops it): the walk
    keeps what hybrid is sure of."""
    return _reciprocal_rank(w.hybrid[0].id if w.hybrid else None, _ids(w.walked))


def walk_top_in_hybrid(w: WalkView) -> float:
    """1 / rank of the walk's best passage in hybrid's top 10: the walk's pick also shares the
    question's words (0: reached through a bridge only)."""
    return _reciprocal_rank(w.walked[0].id if w.walked else None, _ids(w.hybrid))


def overlap(w: WalkView) -> float:
    """Share of the walk's top 10 that hybrid's top 10 holds too."""
    walked = _ids(w.walked)
    return len(set(walked) & set(_ids(w.hybrid))) / max(1, len(walked))


def seeds_named(w: WalkView) -> float:
    """How many graph entities the question names (capped at 4): a question naming two or more
    things is more often a bridge question."""
    return min(len(w.seeds), 4) / 4


def seed_specificity(w: WalkView) -> float:
    """The most specific seed's 1 / (passages naming it): a rare name anchors the walk."""
    return max(w.seeds.values(), default=0.0)


def top_covers_seeds(w: WalkView) -> float:
    """Share of the seeds' specificity that hybrid's best passage itself names: when it names every
    entity of the question, no bridge is missing."""
    return _covered(w, w.hybrid[:1])


def _covered(w: WalkView, hits: list[ScoredChunk]) -> float:
    total = sum(w.seeds.values())
    if not total:
        return 0.0
    named: set[str] = set()
    for hit in hits:
        named |= w.entities_of(hit.id)
    return sum(weight for key, weight in w.seeds.items() if key in named) / total


@dataclass(frozen=True)
class WalkView:
    """One question's inputs to the signals: its entity seeds (key -> specificity), both rankings, and
    the entities each passage links to in the graph."""

    seeds: dict[str, float]
    hybrid: list[ScoredChunk]
    walked: list[ScoredChunk]
    entities_of: Callable[[str], set[str]]


SIGNALS: dict[str, Callable[[WalkView], float]] = {
    f.__name__: f
    for f in (
        hybrid_top_in_walk,
        walk_top_in_hybrid,
        overlap,
        seeds_named,
        seed_specificity,
        top_covers_seeds,
    )
}


def extract(view: WalkView) -> dict[str, float]:
    return {name: float(signal(view)) for name, signal in SIGNALS.items()}
