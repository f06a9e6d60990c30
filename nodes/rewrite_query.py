"""rewrite_query: a new query aimed at what is missing, and the strategy for the next attempt."""

from __future__ import annotations

import time
from typing import Any

from langgraph.runtime import Runtime

from core.schemas import RetrievalEvaluation
from core.trace import Decision
from nodes.common import ctx, event, policy_of, question_of
from nodes.context import AgentContext
from nodes.policy import second_hop_reason, strategy_after
from nodes.state import AgentState


def rewrite_query(state: AgentState, runtime: Runtime[AgentContext]) -> dict[str, Any]:
    started = time.perf_counter()
    context = ctx(runtime)
    evaluation = state.get("evaluation") or RetrievalEvaluation()
    analysis = state.get("analysis")
    tried = list(state.get("queries_tried") or [])
    targets = list(state.get("hop_targets") or [])
    if targets:
        # one hop further searches the question as asked within the named documents, no rewrite
        query, strategy = question_of(state), "multi_hop"
        why = f"one hop further through {', '.join(targets[:3])}"
    else:
        query = context.brain.rewrite(question_of(state), evaluation, tried)
        strategy = strategy_after(evaluation, state.get("strategy") or "hybrid")
        why = second_hop_reason(policy_of(state, context), analysis) if strategy == "multi_hop" else ""
    attempt = int(state.get("attempt") or 0) + 1
    return {
        "query": query,
        "strategy": strategy,
        "attempt": attempt,
        "trace": [
            event(
                "rewrite_query",
                started,
                context,
                Decision.REWRITTEN,
                f"attempt {attempt}: {strategy} ({evaluation.suggested_action}"
                + (f"; {why}" if why else "")
                + (f"; missing {', '.join(evaluation.missing_info[:3])}" if evaluation.missing_info else "")
                + ")",
                query=query,
                attempt=attempt,
            )
        ],
    }
