"""verify: check each answer sentence against the passages it cites; flag (or remove) the rest.

The final answer and its citations, not the passages, go into the message history.
"""

from __future__ import annotations

import re
import time
from typing import Any

from langchain_core.messages import AIMessage
from langgraph.runtime import Runtime

from core.confidence import answer_confidence, needs_review
from core.schemas import Citation, SentenceSupport
from core.trace import Decision
from nodes.cache import CACHED
from nodes.citations import check_as_written, citations_for
from nodes.common import ctx, event
from nodes.context import AgentContext
from nodes.policy import ANSWERED_BEFORE_SEARCH
from nodes.state import AgentState


def remove_unsupported(answer: str, support: list[SentenceSupport]) -> str:
    kept = [s.sentence for s in support if s.supported]
    text = " ".join(f"\n\n{s}\n\n" if s.lstrip().startswith(("```", "~~~")) else s for s in kept)
    return re.sub(r" ?\n\n ?", "\n\n", text).strip() if kept else answer


def final_message(answer: str, citations: list[Citation], review: dict[str, Any] | None = None) -> AIMessage:
    """The reply kept in the conversation; ``review`` (confidence, needs_review) feeds the review queue."""
    extra = {"citations": [c.model_dump() for c in citations], **(review or {})}
    return AIMessage(content=answer, additional_kwargs=extra)


def confidence_of(state: AgentState, supported: int, sentences: int, threshold: float) -> dict[str, Any]:
    """The answer's confidence and review flag (core/confidence.py) from the last verdict and the check."""
    evaluation = state.get("evaluation")
    fixed = state.get("stop_reason") in ANSWERED_BEFORE_SEARCH
    confidence = answer_confidence(
        evaluation.answerability if evaluation is not None else None,
        supported,
        sentences,
        refused=bool(state.get("insufficient")),
        fixed_reply=fixed,
    )
    return {"confidence": confidence, "needs_review": needs_review(confidence, threshold)}


def verify(state: AgentState, runtime: Runtime[AgentContext]) -> dict[str, Any]:
    started = time.perf_counter()
    context = ctx(runtime)
    if state.get("error"):
        return {"messages": [final_message(state["error"], [])]}
    threshold = context.settings.review_threshold
    if state.get("stop_reason") == CACHED:  # checked when it was first answered
        answer, citations = state.get("answer") or "", state.get("citations") or []
        checked = state.get("support") or []
        review = confidence_of(state, sum(s.supported for s in checked), len(checked), threshold)
        return {
            **review,
            "messages": [final_message(answer, citations, review)],
            "trace": [event("verify", started, context, Decision.CACHED, "cached answer")],
        }
    passages = state.get("passages") or []
    answer = state.get("answer") or ""
    written = state.get("written_numbers") or {}
    check = (context.brain.verify_offline if state.get("answer_offline") else None) or context.brain.verify
    support = check_as_written(check, answer, passages, written) if passages and answer else []
    unsupported = [s for s in support if not s.supported]
    citations = state.get("citations") or []
    update: dict[str, Any] = {"support": support}
    decision = Decision.VERIFIED
    if unsupported and context.settings.remove_unsupported and not state.get("insufficient"):
        answer = remove_unsupported(answer, support)
        citations = citations_for(answer, passages)
        update.update(answer=answer, citations=citations)
        decision = Decision.REMOVED_UNSUPPORTED
    supported = len(support) - len(unsupported)
    review = confidence_of(state, supported, len(support), threshold)
    update.update(review)
    update["messages"] = [final_message(answer, citations, review)]
    update["trace"] = [
        event(
            "verify",
            started,
            context,
            decision,
            f"{supported}/{len(support)} supported; confidence {review['confidence']:.2f}"
            + (" (needs review)" if review["needs_review"] else ""),
            sentences=len(support),
            supported=supported,
            unsupported=len(unsupported),
        )
    ]
    return update
