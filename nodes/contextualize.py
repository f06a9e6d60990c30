"""contextualize: take the new question, reset per-turn state, rewrite follow-ups as standalone."""

from __future__ import annotations

import time
from itertools import pairwise
from typing import Any

from langchain_core.messages import AIMessage, HumanMessage, RemoveMessage
from langgraph.runtime import Runtime

from graph.routing import MODES
from graph.state import RESET, TURN_RESET
from memory.history import history_turns, trim_history
from nodes.common import ctx, event


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


def abandoned_questions(messages: list[Any]) -> list[Any]:
    """User messages with no reply before the next user message: turns cut off by a kill or an error.

    ``messages`` ends with the current question, which is not judged. An abandoned question carries no
    answer, so keeping it would only make the next follow-up be read against it.
    """
    abandoned = []
    for message, after in pairwise(messages):
        if isinstance(message, HumanMessage) and not isinstance(after, AIMessage):
            abandoned.append(message)
    return abandoned


def contextualize(state: dict[str, Any], runtime: Runtime) -> dict[str, Any]:
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
    dropped = {m.id for m in abandoned_questions(messages) if m.id}
    if dropped:
        messages = [m for m in messages if m.id not in dropped]
        update["messages"] = [RemoveMessage(id=i) for i in sorted(dropped)] + update.get("messages", [])
    mode = state.get("mode") or settings.mode
    update["mode"] = mode
    error = validate_question(question, settings.max_question_chars)
    if not error and mode not in MODES:
        error = f"Unknown mode {mode!r}; choose one of {', '.join(MODES)}."
    if error:
        update.update(error=error, answer=error, stop_reason="invalid_input", standalone_question="")
        update["trace"] = [RESET, event("contextualize", started, context, "invalid input")]
        return update
    earlier = messages[:-1] if messages and _latest_human(messages[-1:]) == question else messages
    history = history_turns(trim_history(earlier, settings.history_token_budget), max_turns=6)
    standalone = context.brain.contextualize(question, history) if history else question
    update["standalone_question"] = standalone or question
    decision = "rewritten follow-up" if standalone != question else "standalone"
    update["trace"] = [RESET, event("contextualize", started, context, decision, turns=len(history))]
    return update
