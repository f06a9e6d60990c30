"""contextualize: take the new question, reset per-turn state, rewrite follow-ups as standalone."""

from __future__ import annotations

import time
from typing import Any

from langchain_core.messages import HumanMessage
from langgraph.runtime import Runtime

from core.trace import Decision
from memory.history import history_turns, trim_history
from nodes.common import ctx, event
from nodes.context import AgentContext
from nodes.policy import MODES
from nodes.state import RESET, TURN_RESET, AgentState


def validate_question(question: str, max_chars: int) -> str:
    """A clear message for input we will not search with; "" when the question is fine."""
    if not question.strip():
        return "The question is empty. / 问题为空。"
    if len(question) > max_chars:
        return (
            f"The question is {len(question)} characters long; the limit is {max_chars} "
            f"(AGENTIC_RAG_MAX_QUESTION_CHARS). / 问题过长。"
        )
    return ""


def _latest_human(messages: list[Any]) -> str:
    for message in reversed(messages or []):
        if isinstance(message, HumanMessage):
            return str(message.content)
    return ""


def contextualize(state: AgentState, runtime: Runtime[AgentContext]) -> dict[str, Any]:
    started = time.perf_counter()
    context = ctx(runtime)
    settings = context.settings
    messages = list(state.get("messages") or [])
    update: dict[str, Any] = dict(TURN_RESET)
    if messages and isinstance(messages[-1], HumanMessage):
        # The new turn arrived as a message (Studio, chat clients); ``question`` may be last turn's.
        question = _latest_human(messages[-1:])
    else:
        question = state.get("question") or ""
        if question:
            messages.append(HumanMessage(question))
            update["messages"] = [messages[-1]]
    update["question"] = question
    mode = state.get("mode") or settings.mode
    update["mode"] = mode
    error = validate_question(question, settings.max_question_chars)
    if not error and mode not in MODES:
        error = f"Unknown mode {mode!r}; choose one of {', '.join(MODES)}."
    if error:
        update.update(error=error, answer=error, stop_reason="invalid_input", standalone_question="")
        update["trace"] = [RESET, event("contextualize", started, context, Decision.INVALID_INPUT, error)]
        return update
    earlier = messages[:-1] if messages and _latest_human(messages[-1:]) == question else messages
    history = history_turns(trim_history(earlier, settings.history_token_budget), max_turns=6)
    standalone = (context.brain.contextualise(question, history) if history else question) or question
    update["standalone_question"] = standalone
    decision = Decision.FOLLOW_UP if standalone != question else Decision.STANDALONE
    detail = standalone if decision is Decision.FOLLOW_UP else ""
    update["trace"] = [RESET, event("contextualize", started, context, decision, detail, turns=len(history))]
    return update
