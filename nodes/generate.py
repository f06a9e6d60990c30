"""generate: the answer with numbered citations [n] that map to chunk ids and sources."""

from __future__ import annotations

import time
from typing import Any

from langgraph.runtime import Runtime

from core.schemas import Citation, Passage
from core.text import parse_citations, replace_citations
from core.trace import Decision
from nodes.common import ctx, event, question_of
from nodes.context import AgentContext
from nodes.state import AgentState


def citations_for(answer: str, passages: list[Passage]) -> list[Citation]:
    """Citations for the markers that refer to real passages, in order of first use."""
    by_number = {p.number: p for p in passages}
    return [
        Citation(
            number=n,
            chunk_id=by_number[n].chunk_id,
            source=by_number[n].source,
            heading=by_number[n].heading,
            snippet=by_number[n].text[:160],
        )
        for n in parse_citations(answer)
        if n in by_number
    ]


def strip_unknown_markers(answer: str, passages: list[Passage]) -> str:
    """Drop [n] markers that point at no passage (a model may invent them)."""
    numbers = {p.number for p in passages}
    return replace_citations(answer, lambda n: n in numbers)


def generate(state: AgentState, runtime: Runtime[AgentContext]) -> dict[str, Any]:
    started = time.perf_counter()
    context = ctx(runtime)
    passages = state.get("passages") or []
    draft = context.brain.write(question_of(state), passages)
    answer = strip_unknown_markers(draft.answer, passages)
    citations = citations_for(answer, passages)
    insufficient = draft.insufficient or not passages
    decision = Decision.INSUFFICIENT if insufficient else Decision.ANSWERED
    tools = "; ".join(f"{call['name']}: {call['shown']}" for call in draft.tool_calls)
    return {
        "answer": answer,
        "citations": citations,
        "insufficient": insufficient,
        "trace": [
            event(
                "generate",
                started,
                context,
                decision,
                tools,
                citations=len(citations),
                tool_calls=len(draft.tool_calls),
            )
        ],
    }
