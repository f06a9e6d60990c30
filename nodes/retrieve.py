"""Shared body of the retrieve_* nodes: search, record the query tried, emit a trace event."""

from __future__ import annotations

import time
from typing import Any

from nodes.common import dump_hits, filters_of, question_of
from retrievers.types import ScoredChunk


def current_query(state: dict[str, Any]) -> str:
    return state.get("query") or question_of(state)


def retrieval_update(
    state: dict[str, Any], strategy: str, hits: list[ScoredChunk], query: str
) -> dict[str, Any]:
    tried = list(state.get("queries_tried") or [])
    if query not in tried:
        tried.append(query)
    return {"retrieved": dump_hits(hits), "strategy": strategy, "queries_tried": tried}


def depth(context: Any) -> int:
    return max(context.settings.candidate_k, context.settings.top_k)


def search(retriever: Any, state: dict[str, Any], context: Any) -> tuple[list[ScoredChunk], str, float]:
    started = time.perf_counter()
    query = current_query(state)
    return retriever.search(query, depth(context), filters_of(state)), query, started
