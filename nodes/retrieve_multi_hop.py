"""retrieve_multi_hop: one ``search_sub_query`` per sub-query (fanned out with Send), then
``merge_hops`` fuses them and, when the mode's policy says so, hops once more through bridge entities."""

from __future__ import annotations

import time
from typing import Any

from langgraph.runtime import Runtime
from langgraph.types import Send

from core.chunks import ScoredChunk
from core.schemas import strip_bridge
from core.trace import Decision
from nodes.common import ctx, event, filters_of, policy_of, question_of
from nodes.context import AgentContext
from nodes.policy import second_hop_reason
from nodes.retrieve import depth, retrieval_update
from nodes.state import RESET, AgentState, HopHits, SubQuery
from retrievers.multi_hop import fuse_hops


def sub_queries_of(state: AgentState) -> list[str]:
    analysis = state.get("analysis")
    query = state.get("query") or question_of(state)
    # Second-hop templates ("spouse of <director of X>") are searched without their brackets; the
    # bridge entities found by the first hop get their own searches in merge_hops.
    subs = [strip_bridge(q) for q in (analysis.sub_queries if analysis else []) if q.strip()]
    # A rewritten query replaces the original question; sub-queries still add their angles.
    return list(dict.fromkeys([*subs, query]))


def fan_out(state: AgentState) -> list[Send]:
    """One Send per sub-query; each carries only what that search needs."""
    filters = filters_of(state)
    return [
        Send("search_sub_query", SubQuery(sub_query=sub, filters=filters)) for sub in sub_queries_of(state)
    ]


def search_sub_query(state: SubQuery, runtime: Runtime[AgentContext]) -> dict[str, Any]:
    context = ctx(runtime)
    hits = context.retrievers.hybrid.search(state.sub_query, depth(context), state.filters)
    return {"hop_hits": [HopHits(query=state.sub_query, hits=hits)]}


def merge_hops(state: AgentState, runtime: Runtime[AgentContext]) -> dict[str, Any]:
    started = time.perf_counter()
    context = ctx(runtime)
    first = {h.query: h.hits for h in state.get("hop_hits") or []}
    question = question_of(state)
    second: dict[str, list[ScoredChunk]] = {}
    why = second_hop_reason(policy_of(state, context), state.get("analysis"), state.get("evaluation"))
    if why:
        for bridge in context.retrievers.multi_hop.bridges(question, first):
            second[bridge] = context.retrievers.multi_hop.search_bridge(
                bridge, question, depth(context), filters_of(state)
            )
    fused = fuse_hops(first, second, rrf_k=context.settings.rrf_k)[: depth(context)]
    update = retrieval_update(state, "multi_hop", fused, state.get("query") or question)
    tried = update["queries_tried"]
    for sub in first:
        if sub not in tried:
            tried.append(sub)
    update["hop_hits"] = [RESET]
    update["trace"] = [
        event(
            "retrieve_multi_hop",
            started,
            context,
            Decision.SEARCHED,
            f"{len(first)} sub-queries, {len(second)} bridge hops"
            + (f" ({why})" if why else " (no second hop: the parts answer the question)"),
            sub_queries=len(first),
            bridge_hops=len(second),
            hits=len(fused),
        )
    ]
    return update
