"""evaluate: judge the evidence (relevance per chunk, sufficiency) and decide whether to retry."""

from __future__ import annotations

import time
from typing import Any

from langgraph.runtime import Runtime

from core.schemas import QueryAnalysis
from core.trace import Decision
from nodes.common import ctx, event, policy_of, question_of
from nodes.context import AgentContext
from nodes.policy import stop_reason
from nodes.state import AgentState


def evaluate(state: AgentState, runtime: Runtime[AgentContext]) -> dict[str, Any]:
    started = time.perf_counter()
    context = ctx(runtime)
    policy = policy_of(state, context)
    if not policy.loop:
        return {
            "stop_reason": "single_pass",
            "trace": [event("evaluate", started, context, Decision.SKIPPED, "single pass mode")],
        }
    question = question_of(state)
    analysis = state.get("analysis") or QueryAnalysis()
    chunks = (state.get("reranked") or [])[: context.settings.top_k]
    evaluation = context.brain.judge(question, analysis, chunks, list(state.get("queries_tried") or []))
    before = list(state.get("relevant_ids") or [])
    now_relevant = evaluation.relevant_ids()
    new = [cid for cid in now_relevant if cid not in before]
    reason = stop_reason(
        policy=policy,
        evaluation=evaluation,
        attempt=int(state.get("attempt") or 0),
        new_relevant=len(new),
        max_retries=context.settings.max_retries,
    )
    if reason == "sufficient":
        decision, detail = Decision.SUFFICIENT, ""
    elif reason:
        decision, detail = Decision.STOPPED, reason
    else:
        decision, detail = Decision.RETRY, evaluation.suggested_action
    return {
        "evaluation": evaluation,
        "relevant_ids": before + new,
        "new_relevant": len(new),
        "stop_reason": reason,
        "trace": [
            event(
                "evaluate",
                started,
                context,
                decision,
                detail,
                relevant=len(now_relevant),
                new_relevant=len(new),
            )
        ],
    }
