"""analyze_query: structured QueryAnalysis from the brain, then the retrieval strategy to start with."""

from __future__ import annotations

import time
from typing import Any

from langgraph.runtime import Runtime

from graph.routing import initial_strategy
from nodes.common import ctx, event, mode_of, question_of


def analyze_query(state: dict[str, Any], runtime: Runtime) -> dict[str, Any]:
    started = time.perf_counter()
    context = ctx(runtime)
    question = question_of(state)
    analysis = context.brain.analyze(question)
    strategy = initial_strategy(mode_of(state, context), analysis)
    return {
        "analysis": analysis.model_dump(),
        "strategy": strategy,
        "query": question,
        "trace": [
            event(
                "analyze_query",
                started,
                context,
                f"{analysis.query_type}/{analysis.complexity} -> {strategy}",
                sub_queries=len(analysis.sub_queries),
                identifiers=len(analysis.identifiers),
            )
        ],
    }
