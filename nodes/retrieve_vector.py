"""retrieve_vector: dense search (paraphrases, vague or conceptual questions)."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from core.trace import Decision
from nodes.common import ctx, event
from nodes.context import AgentContext
from nodes.retrieve import retrieval_update, search
from nodes.state import AgentState


def retrieve_vector(state: AgentState, runtime: Runtime[AgentContext]) -> dict[str, Any]:
    context = ctx(runtime)
    hits, query, started = search(context.retrievers.vector, state, context)
    update = retrieval_update(state, "vector", hits, query)
    update["trace"] = [event("retrieve_vector", started, context, Decision.SEARCHED, "dense", hits=len(hits))]
    return update
