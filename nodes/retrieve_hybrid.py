"""retrieve_hybrid: dense + BM25 fused with reciprocal rank fusion (the general default)."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from nodes.common import ctx, event
from nodes.retrieve import retrieval_update, search


def retrieve_hybrid(state: dict[str, Any], runtime: Runtime) -> dict[str, Any]:
    context = ctx(runtime)
    hits, query, started = search(context.retrievers.hybrid, state, context)
    update = retrieval_update(state, "hybrid", hits, query)
    both = sum(1 for h in hits if len(h.ranks) > 1)
    update["trace"] = [event("retrieve_hybrid", started, context, "rrf", hits=len(hits), found_by_both=both)]
    return update
