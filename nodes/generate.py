"""generate: the answer with numbered citations [n] that map to chunk ids and sources."""

from __future__ import annotations

import re
import time
from typing import Any

from langgraph.runtime import Runtime

from graph.schemas import Citation, Passage
from nodes.common import ctx, event, question_of

_MARKER = re.compile(r"\[(\d+)\]")


def cited_numbers(answer: str) -> list[int]:
    return list(dict.fromkeys(int(n) for n in _MARKER.findall(answer)))


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
        for n in cited_numbers(answer)
        if n in by_number
    ]


def strip_unknown_markers(answer: str, passages: list[Passage]) -> str:
    """Drop [n] markers that point at no passage (a model may invent them)."""
    numbers = {p.number for p in passages}
    return _MARKER.sub(lambda m: m.group() if int(m.group(1)) in numbers else "", answer)


def generate(state: dict[str, Any], runtime: Runtime) -> dict[str, Any]:
    started = time.perf_counter()
    context = ctx(runtime)
    passages = [Passage.model_validate(p) for p in state.get("passages") or []]
    draft = context.brain.answer(question_of(state), passages)
    answer = strip_unknown_markers(draft.answer, passages)
    citations = citations_for(answer, passages)
    insufficient = draft.insufficient or not passages
    decision = "insufficient evidence" if insufficient else "answered"
    if draft.tool_calls:
        decision += "; " + "; ".join(f"{call['name']}: {call['shown']}" for call in draft.tool_calls)
    return {
        "answer": answer,
        "citations": [c.model_dump() for c in citations],
        "insufficient": insufficient,
        "trace": [
            event(
                "generate",
                started,
                context,
                decision,
                citations=len(citations),
                tool_calls=len(draft.tool_calls),
            )
        ],
    }
