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

from nodes.common import ctx, event, mode_of, question_of

CACHED_FIELDS = ("answer", "citations", "passages", "support", "insufficient")
CACHED = "cached"


def _vector(context: Any, question: str) -> Any:
    if context.cache.semantic_threshold >= 1.0:
        return None
    return context.retrievers.embedder.embed_query(question)


def lookup_cache(state: dict[str, Any], runtime: Runtime) -> dict[str, Any]:
    context = ctx(runtime)
    if context.cache is None or state.get("stop_reason"):
        return {}
    started = time.perf_counter()
    question = question_of(state)
    hit = context.cache.lookup(
        question, mode_of(state, context), state.get("filters"), _vector(context, question)
    )
    if hit is None:
        return {"trace": [event("lookup_cache", started, context, "miss")]}
    decision = (
        "hit exact" if hit.kind == "exact" else f"hit semantic ({hit.similarity:.3f}: {hit.question!r})"
    )
    update = {name: hit.payload[name] for name in CACHED_FIELDS if name in hit.payload}
    update["stop_reason"] = CACHED
    update["trace"] = [event("lookup_cache", started, context, decision)]
    return update


def cache_answer(state: dict[str, Any], runtime: Runtime) -> dict[str, Any]:
    """Store a fresh, sufficient answer; cached, failed and insufficient answers are not stored."""
    context = ctx(runtime)
    if (
        context.cache is None
        or state.get("stop_reason") in (CACHED, "invalid_input")
        or state.get("error")
        or state.get("insufficient")
        or not state.get("answer")
    ):
        return {}
    question = question_of(state)
    payload = {name: state.get(name) for name in CACHED_FIELDS}
    context.cache.store(
        question, mode_of(state, context), state.get("filters"), payload, _vector(context, question)
    )
    return {}
