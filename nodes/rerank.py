"""rerank: rescore the candidates (cross-encoder or the offline default), keeping earlier evidence.

On a retry the chunks already judged relevant join the new candidates, so a retry can only add
evidence, never lose it.
"""

from __future__ import annotations

import time
from typing import Any

from langgraph.runtime import Runtime

from core.chunks import ScoredChunk
from core.trace import Decision
from nodes.common import ctx, event, policy_of, question_of
from nodes.context import AgentContext
from nodes.state import AgentState


def merge_with_relevant(
    retrieved: list[ScoredChunk], previous: list[ScoredChunk], relevant_ids: list[str]
) -> list[ScoredChunk]:
    """The new candidates plus earlier chunks judged relevant that the new search did not find."""
    seen = {hit.id for hit in retrieved}
    keep = [hit for hit in previous if hit.id in relevant_ids and hit.id not in seen]
    return retrieved + keep


def reached_through_a_bridge(hit: ScoredChunk) -> bool:
    """Found only by the second hop, or only by the entity-graph walk (not by hybrid's own search)."""
    ranks = hit.ranks
    if "hop2" in ranks and "hop1" not in ranks:
        return True
    return "entity_graph" in ranks and "vector" not in ranks and "keyword" not in ranks


def keep_second_hop_slots(fused: list[ScoredChunk], reranked: list[ScoredChunk]) -> list[ScoredChunk]:
    """Passages found only by the second hop or the entity-graph walk keep their places from the
    first stage.

    They were reached through a bridge document or entity, so they rarely share the question's words;
    a reranker that scores them against the question alone would push exactly them out of the top.
    """
    pinned = {i: hit for i, hit in enumerate(fused[:10]) if reached_through_a_bridge(hit)}
    if not pinned:
        return reranked
    ids = {hit.id for hit in pinned.values()}
    out = [hit for hit in reranked if hit.id not in ids]
    for position, hit in sorted(pinned.items()):
        out.insert(min(position, len(out)), hit)
    return out


def rerank(state: AgentState, runtime: Runtime[AgentContext]) -> dict[str, Any]:
    started = time.perf_counter()
    context = ctx(runtime)
    candidates = merge_with_relevant(
        state.get("retrieved") or [], state.get("reranked") or [], state.get("relevant_ids") or []
    )
    if context.reranker is None or not policy_of(state, context).rerank:
        reason = "mode" if context.reranker is not None else "no reranker"
        return {
            "reranked": candidates,
            "trace": [
                event("rerank", started, context, Decision.SKIPPED, reason, candidates=len(candidates))
            ],
        }
    reranked = keep_second_hop_slots(candidates, context.reranker.rerank(question_of(state), candidates))
    return {
        "reranked": reranked,
        "trace": [
            event(
                "rerank",
                started,
                context,
                Decision.RERANKED,
                context.reranker.name,
                candidates=len(candidates),
            )
        ],
    }
