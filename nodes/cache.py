"""lookup_cache / cache_answer: answer a repeated or near-duplicate question from the answer cache.

The lookup runs on the standalone question (after follow-ups are rewritten), so a cached answer is only
reused for the same question in the same mode, filters and index generation. A hit skips retrieval and
generation and goes straight to the final message; every run records hit or miss in its trace. Without a
cache (``AGENTIC_RAG_ANSWER_CACHE=false``, or a context built without one) both nodes do nothing.
"""

from __future__ import annotations

import time
from typing import Any

from langgraph.runtime import Runtime

from core.schemas import Citation, Passage, SentenceSupport
from core.trace import Decision
from nodes.common import asked_question, ctx, event, mode_of
from nodes.context import AgentContext
from nodes.state import AgentState

CACHED = "cached"
_MODELS = {"citations": Citation, "passages": Passage, "support": SentenceSupport}


def _filters(state: AgentState) -> dict[str, Any] | None:
    filters = state.get("filters")
    return filters.model_dump(mode="json") if filters is not None else None


def _scope(state: AgentState, context: AgentContext) -> str:
    """The mode and the brain that answered: an offline answer is not reused for a model's, or back."""
    return f"{mode_of(state, context)}|{context.brain.name}"


def _vector(context: AgentContext, question: str) -> Any:
    if context.cache is None or context.cache.semantic_threshold >= 1.0:
        return None
    return context.retrievers.embedder.embed_query(question)


def lookup_cache(state: AgentState, runtime: Runtime[AgentContext]) -> dict[str, Any]:
    context = ctx(runtime)
    if context.cache is None or state.get("stop_reason"):
        return {}
    started = time.perf_counter()
    question = asked_question(state)
    hit = context.cache.lookup(question, _scope(state, context), _filters(state), _vector(context, question))
    if hit is None:
        return {"trace": [event("lookup_cache", started, context, Decision.CACHE_MISS)]}
    detail = "exact" if hit.kind == "exact" else f"semantic {hit.similarity:.3f}: {hit.question}"
    update: dict[str, Any] = {
        name: [model.model_validate(item) for item in hit.payload.get(name) or []]
        for name, model in _MODELS.items()
    }
    update.update(answer=hit.payload["answer"], insufficient=False, stop_reason=CACHED)
    update["trace"] = [event("lookup_cache", started, context, Decision.CACHE_HIT, detail)]
    return update


def cache_answer(state: AgentState, runtime: Runtime[AgentContext]) -> dict[str, Any]:
    """Store a fresh, sufficient answer. Cached, failed and insufficient answers are not stored, nor one
    the offline rules wrote because the model failed (it would outlive the outage)."""
    context = ctx(runtime)
    if (
        context.cache is None
        or state.get("stop_reason") in (CACHED, "invalid_input", "small_talk")
        or state.get("error")
        or state.get("insufficient")
        or not state.get("answer")
        or any(event.fallback_reason for event in state.get("trace") or [])
        or state.get("strategy") in ("sql", "api")  # live data: a table or an API may change
    ):
        return {}
    question = asked_question(state)
    payload: dict[str, Any] = {
        name: [item.model_dump(mode="json") for item in state.get(name) or []] for name in _MODELS
    }
    payload["answer"] = state.get("answer")
    context.cache.store(
        question, _scope(state, context), _filters(state), payload, _vector(context, question)
    )
    return {}
