"""rerank: rescore the candidates (cross-encoder or the offline default), keeping earlier evidence.

On a retry the chunks already judged relevant join the new candidates, so a retry can only add
evidence, never lose it.
"""

from __future__ import annotations

import time
from typing import Any

from langgraph.runtime import Runtime

from graph.routing import uses_rerank
from nodes.common import ctx, dump_hits, event, load_hits, mode_of, question_of
from retrievers.types import ScoredChunk


def merge_with_relevant(
    retrieved: list[dict[str, Any]], previous: list[dict[str, Any]], relevant_ids: list[str]
) -> list[dict[str, Any]]:
    seen = {item["chunk"]["id"] for item in retrieved}
    keep = [
        item for item in previous if item["chunk"]["id"] in relevant_ids and item["chunk"]["id"] not in seen
    ]
    return retrieved + keep


def keep_second_hop_slots(fused: list[ScoredChunk], reranked: list[ScoredChunk]) -> list[ScoredChunk]:
    """Passages found only by the second hop keep their places from multi-hop fusion.

    They were reached through a bridge document, so they rarely share the question's words; a
    reranker that scores them against the question alone would push exactly them out of the top.
    """
    pinned = {i: hit for i, hit in enumerate(fused[:10]) if "hop2" in hit.ranks and "hop1" not in hit.ranks}
    if not pinned:
        return reranked
    ids = {hit.id for hit in pinned.values()}
    out = [hit for hit in reranked if hit.id not in ids]
    for position, hit in sorted(pinned.items()):
        out.insert(min(position, len(out)), hit)
    return out


def rerank(state: dict[str, Any], runtime: Runtime) -> dict[str, Any]:
    started = time.perf_counter()
    context = ctx(runtime)
    candidates = load_hits(
        merge_with_relevant(
            state.get("retrieved") or [], state.get("reranked") or [], state.get("relevant_ids") or []
        )
    )
    if context.reranker is None or not uses_rerank(mode_of(state, context)):
        reason = "skipped (mode)" if context.reranker is not None else "skipped (no reranker)"
        return {
            "reranked": dump_hits(candidates),
            "trace": [event("rerank", started, context, reason, candidates=len(candidates))],
        }
    query = question_of(state)
    reranked = keep_second_hop_slots(candidates, context.reranker.rerank(query, candidates))
    return {
        "reranked": dump_hits(reranked),
        "trace": [event("rerank", started, context, context.reranker.name, candidates=len(candidates))],
    }
