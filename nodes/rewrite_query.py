"""rewrite_query: a new query aimed at what is missing, and the strategy for the next attempt."""

from __future__ import annotations

import time
from typing import Any

from langgraph.runtime import Runtime

from graph.routing import strategy_after
from graph.schemas import QueryAnalysis, RetrievalEvaluation
from nodes.common import ctx, event, question_of


def rewrite_query(state: dict[str, Any], runtime: Runtime) -> dict[str, Any]:
    started = time.perf_counter()
    context = ctx(runtime)
    evaluation = RetrievalEvaluation.model_validate(state.get("evaluation") or {})
    analysis = QueryAnalysis.model_validate(state.get("analysis") or {})
    tried = list(state.get("queries_tried") or [])
    query = context.brain.rewrite(question_of(state), evaluation, tried)
    strategy = strategy_after(evaluation, state.get("strategy") or "hybrid", bool(analysis.sub_queries))
    attempt = int(state.get("attempt") or 0) + 1
    return {
        "query": query,
        "strategy": strategy,
        "attempt": attempt,
        "trace": [event("rewrite_query", started, context, f"attempt {attempt}: {strategy}", query=query)],
    }
