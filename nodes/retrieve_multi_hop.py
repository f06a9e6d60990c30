"""retrieve_multi_hop: one ``search_sub_query`` per sub-query (fanned out with Send), then
``merge_hops`` fuses them and, in agentic mode, hops once more through bridge entities."""

from __future__ import annotations

import time
from typing import Any

from langgraph.runtime import Runtime
from langgraph.types import Send

from graph.schemas import QueryAnalysis
from nodes.common import ctx, dump_hits, event, filters_of, load_hits, mode_of, question_of
from nodes.retrieve import depth, retrieval_update
from providers.offline_brain.decompose import strip_bridge
from retrievers.multi_hop import fuse_hops


def sub_queries_of(state: dict[str, Any]) -> list[str]:
    analysis = QueryAnalysis.model_validate(state.get("analysis") or {})
    query = state.get("query") or question_of(state)
    # Second-hop templates ("spouse of <director of X>") are searched without their brackets; the
    # bridge entities found by the first hop get their own searches in merge_hops.
    subs = [strip_bridge(q) for q in analysis.sub_queries if q.strip()]
    # A rewritten query replaces the original question; sub-queries still add their angles.
    return list(dict.fromkeys([*subs, query]))


def fan_out(state: dict[str, Any]) -> list[Send]:
    """One Send per sub-query; each carries only what that search needs."""
    return [
        Send(
            "search_sub_query",
            {"sub_query": sub, "filters": state.get("filters"), "mode": state.get("mode")},
        )
        for sub in sub_queries_of(state)
    ]


def search_sub_query(state: dict[str, Any], runtime: Runtime) -> dict[str, Any]:
    context = ctx(runtime)
    hits = context.retrievers.hybrid.search(state["sub_query"], depth(context), filters_of(state))
    return {"hop_hits": [{"query": state["sub_query"], "hits": dump_hits(hits)}]}


def merge_hops(state: dict[str, Any], runtime: Runtime) -> dict[str, Any]:
    started = time.perf_counter()
    context = ctx(runtime)
    first = {h["query"]: load_hits(h["hits"]) for h in state.get("hop_hits") or []}
    question = question_of(state)
    second: dict = {}
    if mode_of(state, context) == "agentic":
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
    bridges = list(second)
    update["hop_hits"] = [{"__reset__": True}]
    update["trace"] = [
        event(
            "retrieve_multi_hop",
            started,
            context,
            f"{len(first)} sub-queries, {len(bridges)} bridge hops",
            hits=len(fused),
            searches=len(first) + len(bridges),
        )
    ]
    return update
