"""retrieve_multi_hop: one ``search_sub_query`` per sub-query (fanned out with Send), then
``merge_hops`` fuses them and, when the mode's policy says so, hops once more through bridge entities."""

from __future__ import annotations

import time
from typing import Any

from langgraph.runtime import Runtime
from langgraph.types import Send

from core.schemas import strip_bridge
from core.trace import Decision
from nodes.common import ctx, event, filters_of, policy_of, question_of
from nodes.context import AgentContext
from nodes.policy import policy_for, second_hop_reason
from nodes.retrieve import depth, graph_or_hybrid, retrieval_update
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
    """One Send per sub-query, or per document to hop through; each carries only what that search needs."""
    filters = filters_of(state)
    mode = state.get("mode")
    targets = state.get("hop_targets") or []
    if targets:  # one hop further: the question as asked, searched within each named document
        question = question_of(state)
        return [
            Send("search_sub_query", SubQuery(sub_query=question, filters=filters, through=target, mode=mode))
            for target in targets
        ]
    return [
        Send("search_sub_query", SubQuery(sub_query=sub, filters=filters, mode=mode))
        for sub in sub_queries_of(state)
    ]


def search_sub_query(state: SubQuery, runtime: Runtime[AgentContext]) -> dict[str, Any]:
    context = ctx(runtime)
    if state.through:
        hits = context.retrievers.multi_hop.search_bridge(
            state.through, state.sub_query, depth(context), state.filters
        )
    else:
        policy = policy_for(state.mode or context.settings.mode)
        hits = graph_or_hybrid(context, policy).search(state.sub_query, depth(context), state.filters)
    return {"hop_hits": [HopHits(query=state.sub_query, hits=hits, through=state.through)]}


def merge_hops(state: AgentState, runtime: Runtime[AgentContext]) -> dict[str, Any]:
    started = time.perf_counter()
    context = ctx(runtime)
    hops = state.get("hop_hits") or []
    first = {h.query: h.hits for h in hops if not h.through}
    second = {h.through: h.hits for h in hops if h.through}
    question = question_of(state)
    searched = len(first)
    if second:
        # the search whose passages named these documents is the first hop; it is not run again
        why = "one hop further through what the best passages name"
        first = {state.get("query") or question: list(state.get("retrieved") or [])}
    else:
        why = second_hop_reason(policy_of(state, context), state.get("analysis"))
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
    update["hop_targets"] = []
    update["trace"] = [
        event(
            "retrieve_multi_hop",
            started,
            context,
            Decision.SEARCHED,
            f"{searched} sub-queries, {len(second)} bridge hops"
            + (f" ({why})" if why else " (no second hop: the parts answer the question)"),
            sub_queries=searched,
            bridge_hops=len(second),
            entity_graph=graph_or_hybrid(context, policy_of(state, context)).name == "entity_graph",
            hits=len(fused),
        )
    ]
    return update
