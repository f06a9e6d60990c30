"""compress: pick the best passages and sentences within the token budget, keeping their sources."""

from __future__ import annotations

import time
from typing import Any

from langgraph.runtime import Runtime

from core.passages import MAX_PASSAGES, select_evidence, to_passages
from core.trace import Decision
from nodes.common import ctx, event, question_of
from nodes.context import AgentContext
from nodes.state import AgentState
from providers.tokens import count_tokens


def compress(state: AgentState, runtime: Runtime[AgentContext]) -> dict[str, Any]:
    started = time.perf_counter()
    context = ctx(runtime)
    limit = min(MAX_PASSAGES, context.settings.top_k)
    ranked = state.get("reranked") or []
    relevant = [] if context.brain.rank_order_evidence else state.get("relevant_ids") or []
    hits = select_evidence(ranked, relevant, limit)  # with no relevant ids: the top ``limit`` in rank order
    passages = to_passages(hits)
    before = sum(count_tokens(p.text) for p in passages)
    budget = context.brain.context_budget or context.settings.context_token_budget
    compressed = context.brain.compress(question_of(state), passages, budget) if passages else []
    after = sum(count_tokens(p.text) for p in compressed)
    return {
        "passages": compressed,
        "trace": [
            event(
                "compress",
                started,
                context,
                Decision.COMPRESSED,
                f"{before} -> {after} tokens (budget {budget})",
                passages=len(compressed),
                tokens_before=before,
                tokens_after=after,
            )
        ],
    }
