"""Run one question through the graph and collect the result (used by the CLI, the session,
the evaluation harness and embedding apps)."""

from __future__ import annotations

import logging
import time
import uuid
from typing import Any

from langchain_core.messages import HumanMessage
from langgraph.errors import GraphRecursionError
from pydantic import BaseModel, Field

from core.chunks import Filters
from core.schemas import Citation, Passage, QueryAnalysis, RetrievalEvaluation, SentenceSupport
from core.trace import TraceEvent
from nodes.context import AgentContext
from providers.brain.budget import QuestionBudget, question_budget

log = logging.getLogger(__name__)

# Persist a turn's checkpoint only when the run ends: a process killed mid-turn leaves the thread as it
# was before the question (never a half-turn the next question would inherit), and a turn costs one
# checkpoint instead of one per step.
TURN_DURABILITY = "exit"


class AskResult(BaseModel):
    question: str
    standalone_question: str = ""
    answer: str = ""
    citations: list[Citation] = Field(default_factory=list)
    insufficient: bool = False
    confidence: float | None = Field(default=None, description="issue 21: core/confidence.py, in [0, 1]")
    needs_review: bool = Field(default=False, description="confidence below the review_threshold setting")
    mode: str = ""
    stop_reason: str = ""
    analysis: QueryAnalysis | None = None
    evaluation: RetrievalEvaluation | None = None
    ranked_ids: list[str] = Field(default_factory=list)
    passages: list[Passage] = Field(default_factory=list)
    support: list[SentenceSupport] = Field(default_factory=list)
    trace: list[TraceEvent] = Field(default_factory=list)
    model_calls: int = 0
    latency_ms: float = 0.0
    thread_id: str | None = None
    error: str = ""
    warnings: list[str] = Field(default_factory=list, description="e.g. the LLM endpoint was unreachable")

    def trace_line(self) -> str:
        """One line such as: analyze_query(factual/simple -> hybrid) > retrieve_hybrid > rerank > ..."""
        return (
            " > ".join(event.label() for event in self.trace)
            + f" | {self.latency_ms:.0f} ms, {self.model_calls} model calls"
        )


def turn_durability(app: Any) -> str | None:
    """``TURN_DURABILITY`` for a graph with a checkpointer (LangGraph warns when there is none)."""
    return TURN_DURABILITY if getattr(app, "checkpointer", None) else None


def run_config(context: AgentContext, thread_id: str | None) -> dict[str, Any]:
    return {
        "configurable": {"thread_id": thread_id or uuid.uuid4().hex},
        "recursion_limit": context.settings.recursion_limit,
    }


def result_from_state(
    question: str, state: dict[str, Any], started: float, thread_id: str | None
) -> AskResult:
    trace = list(state.get("trace") or [])
    return AskResult(
        question=question,
        standalone_question=state.get("standalone_question") or "",
        answer=state.get("answer") or state.get("error") or "",
        citations=state.get("citations") or [],
        insufficient=bool(state.get("insufficient")),
        confidence=state.get("confidence"),
        needs_review=bool(state.get("needs_review")),
        mode=state.get("mode") or "",
        stop_reason=state.get("stop_reason") or "",
        analysis=state.get("analysis"),
        evaluation=state.get("evaluation"),
        ranked_ids=[h.id for h in state.get("reranked") or []],
        passages=state.get("passages") or [],
        support=state.get("support") or [],
        trace=trace,
        model_calls=sum(e.model_calls for e in trace),
        latency_ms=round((time.perf_counter() - started) * 1000, 1),
        thread_id=thread_id,
        error=state.get("error") or "",
    )


def build_input(question: str, mode: str | None, filters: Filters | None) -> dict[str, Any]:
    # The question travels as the turn's own message, so the graph never mistakes an unanswered message
    # left by an interrupted turn for this one.
    payload: dict[str, Any] = {"question": question, "messages": [HumanMessage(question)]}
    if mode:
        payload["mode"] = mode
    payload["filters"] = filters if filters and not filters.is_empty() else None
    return payload


def ask(
    app: Any,
    question: str,
    *,
    context: AgentContext,
    thread_id: str | None = None,
    mode: str | None = None,
    filters: Filters | None = None,
) -> AskResult:
    """Ask one question. The loop is bounded by max_retries, the no-progress rule and, as the last
    guard, the recursion limit, which ends the run with a clear message instead of an exception."""
    started = time.perf_counter()
    config = run_config(context, thread_id)
    budget = question_budget_for(context)
    try:
        with question_budget(budget):
            state = app.invoke(
                build_input(question, mode, filters),
                config=config,
                context=context,
                durability=turn_durability(app),
            )
    except GraphRecursionError:
        return AskResult(
            question=question,
            mode=mode or context.settings.mode,
            stop_reason="recursion_limit",
            error=(
                f"stopped after {context.settings.recursion_limit} steps (AGENTIC_RAG_RECURSION_LIMIT) "
                "without an answer"
            ),
            answer="",
            latency_ms=round((time.perf_counter() - started) * 1000, 1),
            thread_id=thread_id,
            warnings=budget.warnings,
        )
    result = result_from_state(question, state, started, thread_id)
    result.warnings = budget.warnings
    log.info(
        "answered in %.0f ms: mode %s, stop %s, %d model calls",
        result.latency_ms,
        result.mode,
        result.stop_reason or "-",
        result.model_calls,
    )
    return result


def question_budget_for(context: AgentContext) -> QuestionBudget:
    """A fresh per-question LLM budget from the settings (deadline ``llm_deadline_s``)."""
    return QuestionBudget(context.settings.llm_deadline_s)
