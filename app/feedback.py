"""Feedback from users, end to end: record a verdict on a turn of a thread, classify the bad answers by
re-running them through the graph in the other modes, and propose (or apply) the setting changes the
report supports, re-running the bad questions to show the effect. The CLI, the session and embedding
apps call these functions.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from app.wiring import reranker_for
from core.chunks import Filters
from evaluators.feedback_analysis import Diagnosis, Proposal, class_counts, diagnose, holds_answer, propose
from graph.run import ask
from memory.conversation_log import answered_turns
from memory.feedback import FeedbackError, FeedbackRecord, FeedbackStore, Verdict
from memory.review import ReviewItem, review_queue
from memory.threads import conversation
from nodes.context import AgentContext
from nodes.policy import MODES

RERUN_MODES: tuple[str, ...] = ("naive", "keyword", "hybrid", "hybrid_rerank", "agentic")


def turn_record(
    app: Any, thread_id: str, verdict: Verdict, *, turn: int | None = None, note: str = ""
) -> FeedbackRecord:
    """The record for one turn of a thread (the last by default): question, answer and citations from
    the conversation log, passages and trace from the turn's final checkpoint when it is still kept.

    For an older turn whose checkpoints were capped away (``max_checkpoints_per_thread``) only the
    question, answer and citations remain.
    """
    config = {"configurable": {"thread_id": thread_id}}
    turns = conversation(app.checkpointer, thread_id)
    if not turns:
        raise FeedbackError(
            f"thread {thread_id!r} has no answered question: ask first, or check the thread id"
        )
    number = turn or len(turns)
    if not 1 <= number <= len(turns):
        raise FeedbackError(
            f"thread {thread_id!r} has {len(turns)} turns; --turn must be between 1 and {len(turns)}"
        )
    chosen = turns[number - 1]
    final = _state_after_turn(app, config, chosen.question_id)
    return FeedbackRecord(
        thread_id=thread_id,
        turn=number,
        verdict=verdict,
        note=note,
        question=chosen.question,
        answer=chosen.answer,
        mode=final.get("mode") or "",
        citations=chosen.citations,
        passages=[p.model_dump(mode="json") for p in final.get("passages") or []],
        trace=[e.model_dump(mode="json") for e in final.get("trace") or []],
    )


def _state_after_turn(app: Any, config: dict[str, Any], question_id: str) -> dict[str, Any]:
    """The values of the finished checkpoint whose latest answered turn is the question ``question_id``."""
    for snapshot in app.get_state_history(config):
        answered = answered_turns(snapshot.values.get("messages") or [])
        if answered and answered[-1].question_id == question_id and not snapshot.next:
            return snapshot.values
    return {}


def add_feedback(
    store: FeedbackStore,
    app: Any,
    thread_id: str,
    verdict: Verdict,
    *,
    turn: int | None = None,
    note: str = "",
    author: str = "",
) -> FeedbackRecord:
    """Record a verdict on a turn (the last by default) with its question, answer, citations and trace,
    as given by ``author`` (a server user; "" for the CLI)."""
    record = turn_record(app, thread_id, verdict, turn=turn, note=note).model_copy(update={"author": author})
    record.id = store.add(record)
    return record


class FeedbackReport(BaseModel):
    counts: dict[str, int]
    good: int
    bad: int
    diagnoses: list[Diagnosis] = Field(default_factory=list)
    proposals: list[Proposal] = Field(default_factory=list)
    review: list[ReviewItem] = Field(
        default_factory=list,
        description="issue 21: answers below the review_threshold, least confident first",
    )


def _passage_texts(
    app: Any, context: AgentContext, question: str, mode: str, filters: Filters | None = None
) -> list[str]:
    result = ask(app, question, context=replace(context, cache=None), mode=mode, filters=filters)
    return [p.text for p in result.passages]


def chunk_texts(store: Any, chunk_ids: list[str]) -> dict[str, str]:
    """Chunk id -> text from the index (local: through its docstore; Milvus: ids are its keys)."""
    docstore = getattr(store, "docstore", None)
    found = (
        docstore.get(docstore.positions_of(chunk_ids).values()) if docstore else store.chunks_at(chunk_ids)
    )
    return {chunk.id: chunk.text for chunk in found.values()}


def with_passage_texts(record: FeedbackRecord, store: Any) -> FeedbackRecord:
    """The record with its passages' text: checkpoints keep a passage's id, not its text."""
    blank = [p["chunk_id"] for p in record.passages if not p.get("text")]
    if not blank:
        return record
    texts = chunk_texts(store, blank)
    passages = [p | {"text": p.get("text") or texts.get(p["chunk_id"], "")} for p in record.passages]
    return record.model_copy(update={"passages": passages})


def feedback_report(
    store: FeedbackStore,
    app: Any,
    context: AgentContext,
    *,
    author: str | None = None,
    access: list[str] | None = None,
) -> FeedbackReport:
    """Classify every bad answer (re-running it in the other modes when its passages missed).

    ``author`` limits the report to one user's feedback; ``access`` (that user's groups) makes the
    re-runs search only what they may read, so a diagnosis never rests on documents hidden from them."""
    records = store.records(author=author)
    bad = [r for r in records if r.verdict == "bad"]
    filters = Filters().for_caller(access) if access is not None else None
    diagnoses = [
        diagnose(
            with_passage_texts(record, context.retrievers.index),
            RERUN_MODES,
            lambda question, mode: _passage_texts(app, context, question, mode, filters),
        )
        for record in bad
    ]
    return FeedbackReport(
        counts=class_counts(diagnoses),
        good=len(records) - len(bad),
        bad=len(bad),
        diagnoses=diagnoses,
        proposals=propose(diagnoses, context.settings),
        review=review_queue(app.checkpointer) if app.checkpointer is not None else [],
    )


def with_settings(context: AgentContext, changes: dict[str, Any]) -> AgentContext:
    """A context using changed settings, reusing the opened index, embedder and brain (no proposal
    changes a brain setting)."""
    from retrievers.factory import build_retrievers

    settings = context.settings.model_copy(update=changes)
    retrievers = build_retrievers(context.retrievers.index, settings, context.retrievers.embedder)
    reranker = context.reranker
    if settings.reranker != context.settings.reranker:
        reranker = reranker_for(settings, retrievers.embedder)
    return AgentContext(settings=settings, retrievers=retrievers, brain=context.brain, reranker=reranker)


class Effect(BaseModel):
    """How the bad questions fare before and after the proposed changes (answer terms in the passages)."""

    question: str
    mode: str
    before: bool
    after: bool


def rerun_effect(
    app: Any, context: AgentContext, diagnoses: Sequence[Diagnosis], proposals: Sequence[Proposal]
) -> list[Effect]:
    """Re-run each bad question in its mode with the current and with the proposed settings."""
    changed = with_settings(context, {p.setting: p.proposed for p in proposals})
    effects = []
    for item in diagnoses:
        mode = item.mode if item.mode in MODES else context.settings.mode
        before = holds_answer(_passage_texts(app, context, item.question, mode), item.question, item.gold)
        after = holds_answer(_passage_texts(app, changed, item.question, mode), item.question, item.gold)
        effects.append(Effect(question=item.question, mode=mode, before=before, after=after))
    return effects


def env_name(setting: str) -> str:
    from config import ENV_PREFIX

    return f"{ENV_PREFIX}{setting.upper()}"


def write_env(path: Path, proposals: Sequence[Proposal]) -> Path:
    """Set each proposed value in the ``.env`` file the settings read, keeping every other line."""
    values = {
        env_name(p.setting): str(p.proposed).lower() if isinstance(p.proposed, bool) else str(p.proposed)
        for p in proposals
    }
    lines = path.read_text(encoding="utf-8").splitlines() if path.exists() else []
    kept = [line for line in lines if line.split("=", 1)[0].strip() not in values]
    kept += [f"{name}={value}" for name, value in values.items()]
    path.write_text("\n".join(kept) + "\n", encoding="utf-8")
    return path
