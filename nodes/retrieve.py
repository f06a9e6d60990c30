"""Shared body of the retrieve_* nodes: search, record the query tried."""

from __future__ import annotations

import time
from typing import Any

from core.chunks import ScoredChunk
from core.schemas import QueryAnalysis
from nodes.common import filters_of, question_of
from nodes.context import AgentContext
from nodes.policy import ModePolicy
from nodes.state import AgentState
from retrievers.base import Retriever


def current_query(state: AgentState) -> str:
    return state.get("query") or question_of(state)


def retrieval_update(state: AgentState, strategy: str, hits: list[ScoredChunk], query: str) -> dict[str, Any]:
    tried = list(state.get("queries_tried") or [])
    if query not in tried:
        tried.append(query)
    return {"retrieved": hits, "strategy": strategy, "queries_tried": tried}


def depth(context: AgentContext) -> int:
    return max(context.settings.candidate_k, context.settings.top_k)


def graph_or_hybrid(
    context: AgentContext, policy: ModePolicy, analysis: QueryAnalysis | None = None
) -> Retriever:
    """Hybrid fused with the entity-graph walk where the mode asks for it and the index has entities
    (issue 26; an index ingested before entities existed has none), else plain hybrid. For a how-to
    question (``asks_how_to``) the walk joins hybrid's ranking instead of leading it."""
    graph = context.retrievers.entity_graph
    if policy.entity_graph and graph is not None and graph.available():
        return graph.for_how_to() if asks_how_to(analysis) else graph
    return context.retrievers.hybrid


def asks_how_to(analysis: QueryAnalysis | None) -> bool:
    """The analysis reads the question as procedural ("How do I …", "如何 …"): it asks for the passage that
    says how, not for a fact reached through the entities it names."""
    return analysis is not None and analysis.query_type == "procedural"


def search(
    retriever: Retriever, state: AgentState, context: AgentContext
) -> tuple[list[ScoredChunk], str, float]:
    started = time.perf_counter()
    query = current_query(state)
    return retriever.search(query, depth(context), filters_of(state)), query, started
