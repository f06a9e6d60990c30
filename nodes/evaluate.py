"""evaluate: judge the evidence (relevance per chunk, sufficiency) and decide whether to retry."""

from __future__ import annotations

import time
from typing import Any

from langgraph.runtime import Runtime

from graph.routing import loops, stop_reason
from graph.schemas import QueryAnalysis
from nodes.common import ctx, event, load_hits, mode_of, question_of


def evaluate(state: dict[str, Any], runtime: Runtime) -> dict[str, Any]:
    started = time.perf_counter()
    context = ctx(runtime)
    mode = mode_of(state, context)
    if not loops(mode):
        return {
            "stop_reason": "single_pass",
            "trace": [event("evaluate", started, context, "skipped (single pass mode)")],
        }
    question = question_of(state)
    analysis = QueryAnalysis.model_validate(state.get("analysis") or {})
    chunks = load_hits(state.get("reranked"))[: context.settings.top_k]
    evaluation = context.brain.judge(question, analysis, chunks, list(state.get("queries_tried") or []))
    before = list(state.get("relevant_ids") or [])
    now_relevant = evaluation.relevant_ids()
    new = [cid for cid in now_relevant if cid not in before]
    attempt = int(state.get("attempt") or 0)
    reason = stop_reason(
        mode=mode, evaluation=evaluation, attempt=attempt, new_relevant=len(new), settings=context.settings
    )
    decision = (
        f"{'sufficient' if evaluation.is_sufficient else 'insufficient'}"
        f" -> {reason or 'retry: ' + evaluation.suggested_action}"
    )
    return {
        "evaluation": evaluation.model_dump(),
        "relevant_ids": before + new,
        "new_relevant": len(new),
        "stop_reason": reason,
        "trace": [
            event("evaluate", started, context, decision, relevant=len(now_relevant), new_relevant=len(new))
        ],
    }
