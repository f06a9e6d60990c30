"""contextualize: take the new question, reset per-turn state, rewrite follow-ups as standalone."""

from __future__ import annotations

import time
from itertools import pairwise
from typing import Any

from langchain_core.messages import AIMessage, HumanMessage, RemoveMessage
from langgraph.runtime import Runtime

from core.access import cited_ids
from core.chunks import ScoredChunk
from core.global_intent import is_global
from core.small_talk import EMPTY_AFTER_NORMALISING, has_content, small_talk_reply
from core.text import detect_language
from core.trace import Decision
from memory.history import CONTEXT_TURNS, history_turns, trim_history
from nodes.common import ctx, event, filters_of
from nodes.context import AgentContext
from nodes.policy import MODES
from nodes.state import RESET, TURN_RESET, AgentState
from providers.brain.contextualize import needs_clarification, the_one_document
from retrievers.readable import unreadable_chunks


def validate_question(question: str, max_chars: int) -> str:
    """A clear message for input we will not search with; "" when the question is fine."""
    if not question.strip():
        return "The question is empty. / 问题为空。"
    if not has_content(question):  # "???", zero-width spaces: nothing to search with (issue 21)
        return EMPTY_AFTER_NORMALISING
    if len(question) > max_chars:
        return (
            f"The question is {len(question)} characters long; the limit is {max_chars} "
            f"(AGENTIC_RAG_MAX_QUESTION_CHARS). / 问题过长。"
        )
    return ""


def clarifying_question(question: str) -> str:
    """What to say when a fresh thread opens with "it" / "那个…": ask, in the question's language."""
    if detect_language(question) == "zh":
        return (
            "您指的是哪一个？这是新的对话，我不知道“" + question.strip() + "”里说的是什么，请说出它的名称。"
        )
    return (
        f'Which one do you mean? This is a new conversation, so I cannot tell what "{question.strip()}" '
        "refers to; please name it."
    )


CORPUS_CHECK_HITS = 10  # keyword hits among which one document must alone fit the question's words


def corpus_check(context: AgentContext, question: str, state: AgentState) -> list[ScoredChunk]:
    """Keyword hits for a fresh-thread question that refers to something unnamed (one BM25 lookup)."""
    return context.retrievers.keyword.search(question, CORPUS_CHECK_HITS, filters_of(state))


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


def readable_history(messages: list[Any], store: Any, access: list[str] | None) -> list[Any]:
    """The earlier turns without those whose answer cites a document the caller may no longer read
    (the question goes with its answer): a follow-up is never read against text they lost access to."""
    if access is None:
        return messages
    cites = [cited_ids(m.additional_kwargs.get("citations")) for m in messages if isinstance(m, AIMessage)]
    hidden = unreadable_chunks(store, [i for ids in cites for i in ids], access)
    if not hidden:
        return messages
    kept: list[Any] = []
    for message in messages:
        if isinstance(message, AIMessage) and hidden & set(
            cited_ids(message.additional_kwargs.get("citations"))
        ):
            if kept and isinstance(kept[-1], HumanMessage):
                kept.pop()
            continue
        kept.append(message)
    return kept


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
        update["trace"] = [RESET, event("contextualize", started, context, Decision.INVALID_INPUT, error)]
        return update
    reply = small_talk_reply(question)
    if reply:  # "hi", "谢谢": what the assistant can do, without a search (issue 21)
        update.update(answer=reply, stop_reason="small_talk", standalone_question="")
        update["trace"] = [RESET, event("contextualize", started, context, Decision.SMALL_TALK, "small talk")]
        return update
    earlier = messages[:-1] if messages and _latest_human(messages[-1:]) == question else messages
    filters = filters_of(state)
    earlier = readable_history(earlier, context.retrievers.index, filters.access if filters else None)
    history = history_turns(trim_history(earlier, settings.history_token_budget), max_turns=CONTEXT_TURNS)
    # "这些文档主要讲什么" speaks of the collection, not of something said before (issue 26)
    unnamed = needs_clarification(question, history) and not is_global(question)
    named = the_one_document(question, corpus_check(context, question, state)) if unnamed else ""
    if unnamed and not named:
        ask = clarifying_question(question)
        update.update(
            answer=ask, insufficient=True, stop_reason="needs_clarification", standalone_question=""
        )
        update["trace"] = [RESET, event("contextualize", started, context, Decision.CLARIFY, ask, turns=0)]
        return update
    standalone = (context.brain.contextualize(question, history) if history else question) or question
    update["standalone_question"] = standalone
    decision = Decision.FOLLOW_UP if standalone != question else Decision.STANDALONE
    detail = standalone if decision is Decision.FOLLOW_UP else ""
    if named:
        detail = (
            f"refers to something unnamed, but only {named!r} in the corpus fits its words: searched as asked"
        )
    update["trace"] = [RESET, event("contextualize", started, context, decision, detail, turns=len(history))]
    return update
