"""retrieve_keyword: BM25 first (identifiers, codes, numbers); too few hits are topped up by vectors."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from nodes.common import ctx, event, filters_of, mode_of
from nodes.retrieve import depth, retrieval_update, search
from retrievers.fusion import reciprocal_rank_fusion


def retrieve_keyword(state: dict[str, Any], runtime: Runtime) -> dict[str, Any]:
    context = ctx(runtime)
    hits, query, started = search(context.retrievers.keyword, state, context)
    decision = "bm25"
    keyword_hits = len(hits)
    if mode_of(state, context) != "keyword" and keyword_hits < context.settings.min_keyword_hits:
        dense = context.retrievers.vector.search(query, depth(context), filters_of(state))
        hits = reciprocal_rank_fusion({"keyword": hits, "vector": dense}, k=context.settings.rrf_k)[
            : depth(context)
        ]
        decision = f"bm25 found {keyword_hits} < {context.settings.min_keyword_hits}: added vector hits"
    update = retrieval_update(state, "keyword", hits, query)
    update["trace"] = [
        event("retrieve_keyword", started, context, decision, keyword_hits=keyword_hits, hits=len(hits))
    ]
    return update
