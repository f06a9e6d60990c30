"""The review queue (issue 21): stored answers whose confidence fell below the review threshold.

The verify step puts each answer's ``confidence`` and ``needs_review`` on the reply message it keeps in
the conversation (beside its citations), so the queue is read from the threads themselves: every
thread's latest checkpoint, each answered turn whose reply is marked. Nothing else is stored, and
deleting a thread removes its entries.
"""

from __future__ import annotations

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langgraph.checkpoint.base import BaseCheckpointSaver
from pydantic import BaseModel

from memory.checkpointer import CheckpointDamagedError
from memory.history import message_text
from memory.threads import thread_ids, underlying


class ReviewItem(BaseModel):
    """One answer to look at: where it is (thread, turn), what was asked and said, and how sure."""

    thread_id: str
    turn: int
    question: str
    answer: str
    confidence: float


def marked_turns(thread_id: str, messages: list[BaseMessage]) -> list[ReviewItem]:
    """The turns of one conversation whose reply is marked ``needs_review``, oldest first; turns are
    numbered as ``feedback add --turn`` numbers them (memory.conversation_log.answered_turns)."""
    items, question, turn = [], None, 0
    for message in messages:
        if isinstance(message, HumanMessage):
            question = message
        elif isinstance(message, AIMessage) and question is not None and message_text(message).strip():
            turn += 1
            extra = message.additional_kwargs or {}
            if extra.get("needs_review"):
                items.append(
                    ReviewItem(
                        thread_id=thread_id,
                        turn=turn,
                        question=message_text(question),
                        answer=message_text(message),
                        confidence=float(extra.get("confidence") or 0.0),
                    )
                )
            question = None
    return items


def review_queue(saver: BaseCheckpointSaver) -> list[ReviewItem]:
    """Every marked answer of every thread, least confident first (a damaged thread is left out)."""
    saver = underlying(saver)
    items: list[ReviewItem] = []
    for thread_id in thread_ids(saver):
        try:
            head = saver.get_tuple({"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}})
        except CheckpointDamagedError:
            continue
        if head is None:
            continue
        values = head.checkpoint.get("channel_values") or {}
        messages = [m for m in values.get("messages") or [] if isinstance(m, BaseMessage)]
        items.extend(marked_turns(thread_id, messages))
    return sorted(items, key=lambda item: (item.confidence, item.thread_id, item.turn))
