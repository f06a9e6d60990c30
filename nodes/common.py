"""Small helpers every node uses: the runtime context, typed reads of the state, trace events."""

from __future__ import annotations

import logging
import time
from typing import Any

from langgraph.runtime import Runtime

from core.chunks import Filters
from core.cues import without_reference_code
from core.trace import Decision, TraceEvent
from nodes.context import AgentContext, resolve_context
from nodes.policy import ModePolicy, policy_for
from nodes.state import AgentState

log = logging.getLogger(__name__)


def ctx(runtime: Runtime[AgentContext] | None) -> AgentContext:
    return resolve_context(runtime.context if runtime is not None else None)


def filters_of(state: AgentState | dict[str, Any]) -> Filters | None:
    """The call's filters; LangGraph Studio sends them as plain JSON."""
    raw = state.get("filters")
    return Filters.model_validate(raw) if raw else None


def mode_of(state: AgentState, context: AgentContext) -> str:
    return state.get("mode") or context.settings.mode


def policy_of(state: AgentState, context: AgentContext) -> ModePolicy:
    return policy_for(mode_of(state, context))


def question_of(state: AgentState) -> str:
    """The question the agent works on: the standalone question, without a reference code the asker
    appended ("… [case 0.1]", "(ticket 5-26)": ``core.cues``), which names their ticket, not the topic."""
    return without_reference_code(asked_question(state))


def asked_question(state: AgentState) -> str:
    """The standalone question as asked, reference codes included (the answer cache keys on this)."""
    return state.get("standalone_question") or state.get("question") or ""


def event(
    node: str,
    started: float,
    context: AgentContext | None,
    decision: Decision,
    detail: str = "",
    *,
    query: str = "",
    **counts: int,
) -> TraceEvent:
    """One trace entry; includes the brain's model calls and fallbacks during this node."""
    calls = context.brain.calls.drain() if context is not None else []
    reasons = [f"{c.step}: {c.error or 'fallback'}" for c in calls if c.fallback]
    for name in ("capped", "runaway", "citations_attached", "sentences_removed"):  # bounds and citer at work
        if total := sum(getattr(c, name) for c in calls):
            counts[name] = total
    entry = TraceEvent(
        node=node,
        decision=decision,
        detail=detail,
        query=query,
        counts=counts,
        ms=round((time.perf_counter() - started) * 1000, 1),
        model_calls=sum(c.model_calls for c in calls),
        tokens_in=sum(c.tokens_in for c in calls),
        tokens_out=sum(c.tokens_out for c in calls),
        fallback_reason="; ".join(reasons),
    )
    if reasons:
        log.info("%s fell back: %s", node, entry.fallback_reason)
    log.debug("%s: %s %s %s (%.0f ms)", node, decision.value, detail, counts or "", entry.ms)
    return entry
