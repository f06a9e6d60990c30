"""verify: check each answer sentence against the passages it cites; flag (or remove) the rest.

The final answer and its citations, not the passages, go into the message history.
"""

from __future__ import annotations

import time
from typing import Any

from langchain_core.messages import AIMessage
from langgraph.runtime import Runtime

from graph.schemas import Passage, SentenceSupport
from nodes.cache import CACHED
from nodes.common import ctx, event
from nodes.generate import citations_for


def remove_unsupported(answer: str, support: list[SentenceSupport]) -> str:
    kept = [s.sentence for s in support if s.supported]
    return " ".join(kept) if kept else answer


def final_message(answer: str, citations: list[dict[str, Any]]) -> AIMessage:
    return AIMessage(content=answer, additional_kwargs={"citations": citations})


def verify(state: dict[str, Any], runtime: Runtime) -> dict[str, Any]:
    started = time.perf_counter()
    context = ctx(runtime)
    if state.get("error"):
        return {"messages": [final_message(state["error"], [])]}
    if state.get("stop_reason") == CACHED:  # checked when it was first answered
        answer, citations = state.get("answer") or "", state.get("citations") or []
        return {
            "messages": [final_message(answer, citations)],
            "trace": [event("verify", started, context, "cached answer")],
        }
    passages = [Passage.model_validate(p) for p in state.get("passages") or []]
    answer = state.get("answer") or ""
    support = context.brain.check_support(answer, passages) if passages and answer else []
    unsupported = [s for s in support if not s.supported]
    citations = state.get("citations") or []
    update: dict[str, Any] = {"support": [s.model_dump() for s in support]}
    decision = f"{len(support) - len(unsupported)}/{len(support)} sentences supported"
    if unsupported and context.settings.remove_unsupported and not state.get("insufficient"):
        answer = remove_unsupported(answer, support)
        citations = [c.model_dump() for c in citations_for(answer, passages)]
        update.update(answer=answer, citations=citations)
        decision += f"; removed {len(unsupported)}"
    update["messages"] = [final_message(answer, citations)]
    update["trace"] = [event("verify", started, context, decision, unsupported=len(unsupported))]
    return update
