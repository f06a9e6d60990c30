"""retrieve_keyword: BM25 first (identifiers, codes, numbers); too few hits are topped up by vectors."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from core.trace import Decision
from nodes.common import ctx, event, filters_of, policy_of
from nodes.context import AgentContext
from nodes.retrieve import depth, retrieval_update, search
from nodes.state import AgentState
from retrievers.fusion import reciprocal_rank_fusion


def retrieve_keyword(state: AgentState, runtime: Runtime[AgentContext]) -> dict[str, Any]:
    context = ctx(runtime)
    hits, query, started = search(context.retrievers.keyword, state, context)
    decision, detail = Decision.SEARCHED, "bm25"
    keyword_hits = len(hits)
    minimum = context.settings.min_keyword_hits
    if policy_of(state, context).keyword_top_up and keyword_hits < minimum:
        dense = context.retrievers.vector.search(query, depth(context), filters_of(state))
        hits = reciprocal_rank_fusion({"keyword": hits, "vector": dense}, k=context.settings.rrf_k)[
            : depth(context)
        ]
        decision, detail = Decision.TOPPED_UP, f"bm25 found {keyword_hits} < {minimum}: added vector hits"
    update = retrieval_update(state, "keyword", hits, query)
    update["trace"] = [
        event(
            "retrieve_keyword", started, context, decision, detail, keyword_hits=keyword_hits, hits=len(hits)
        )
    ]
    return update
