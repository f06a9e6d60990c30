"""retrieve_vector: dense search (paraphrases, vague or conceptual questions)."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from nodes.common import ctx, event
from nodes.retrieve import retrieval_update, search


def retrieve_vector(state: dict[str, Any], runtime: Runtime) -> dict[str, Any]:
    context = ctx(runtime)
    hits, query, started = search(context.retrievers.vector, state, context)
    update = retrieval_update(state, "vector", hits, query)
    update["trace"] = [event("retrieve_vector", started, context, "dense", hits=len(hits))]
    return update
