"""retrieve_hybrid: dense + BM25 fused (settings.fusion: convex combination or reciprocal rank fusion)."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from core.trace import Decision
from nodes.common import ctx, event, policy_of
from nodes.context import AgentContext
from nodes.retrieve import graph_or_hybrid, retrieval_update, search
from nodes.state import AgentState


def retrieve_hybrid(state: AgentState, runtime: Runtime[AgentContext]) -> dict[str, Any]:
    context = ctx(runtime)
    hits, query, started = search(
        graph_or_hybrid(context, policy_of(state, context), state.get("analysis")), state, context
    )
    update = retrieval_update(state, "hybrid", hits, query)
    both = sum(1 for h in hits if len(h.ranks) > 1)
    update["trace"] = [
        event(
            "retrieve_hybrid",
            started,
            context,
            Decision.SEARCHED,
            context.settings.fusion,
            hits=len(hits),
            found_by_both=both,
            by_entity_graph=sum(1 for h in hits if "entity_graph" in h.ranks),
        )
    ]
    return update
