"""retrieve_global: a whole-document or collection question searches the summary tree (issue 26).

The scope comes from the question (``core.global_intent``): one document's summary and section
summaries, or one summary per document for the collection (bounded by the retriever).
"""

from __future__ import annotations

import time
from typing import Any

from langgraph.runtime import Runtime

from core.chunks import ScoredChunk
from core.global_intent import global_scope
from core.schemas import ChunkJudgement, RetrievalEvaluation
from core.trace import Decision
from nodes.common import ctx, event, filters_of, question_of
from nodes.context import AgentContext
from nodes.retrieve import current_query, depth, retrieval_update
from nodes.state import AgentState
from retrievers.levels import SUMMARY_LEVELS


def summaries_evaluation(chunks: list[ScoredChunk]) -> RetrievalEvaluation | None:
    """The verdict on a global search that found summaries: they are the evidence a whole-document
    question asks for (the judge would look for its words, 总结 / 这份 / main topics, and retry).
    None when no summary was found (the index has none): the judge decides as usual."""
    found = [c for c in chunks if c.chunk.metadata.get("level") in SUMMARY_LEVELS]
    if not found:
        return None
    return RetrievalEvaluation(
        judgements=[ChunkJudgement(chunk_id=c.id, relevance=1.0, reason="summary") for c in found],
        is_sufficient=True,
        suggested_action="answer",
        reasoning=f"{len(found)} summaries of the documents asked about",
    )


def retrieve_global(state: AgentState, runtime: Runtime[AgentContext]) -> dict[str, Any]:
    started = time.perf_counter()
    context = ctx(runtime)
    query = current_query(state)
    scope = global_scope(question_of(state))
    searcher = context.retrievers.summaries
    if searcher is None:  # a retriever set built without the summary tree's search
        hits, how = context.retrievers.hybrid.search(query, depth(context), filters_of(state)), "passages"
    else:
        hits = searcher.search(query, depth(context), filters_of(state), scope=scope)
        levels = {h.chunk.metadata.get("level") for h in hits}
        how = scope if levels & set(SUMMARY_LEVELS) else "passages (the index has no summaries)"
    update = retrieval_update(state, "global", hits, query)
    update["trace"] = [
        event(
            "retrieve_global",
            started,
            context,
            Decision.SEARCHED,
            how,
            hits=len(hits),
            summaries=sum(1 for h in hits if h.chunk.metadata.get("level")),
        )
    ]
    return update
