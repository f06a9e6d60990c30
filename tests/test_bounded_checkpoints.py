"""Checkpoints keep the conversation (question, answer, citations, passage ids), not the evidence's
text, and at most N per thread, whoever drives the graph: ``graph.ask`` here, on SQLite and PostgreSQL."""

from __future__ import annotations

import uuid

import pytest

from graph.builder import build_graph
from graph.run import ask
from memory.threads import list_threads
from tests.graph_fixtures import CONVERSATION, make_context, saver
from tests.postgres_server import postgres_url

__all__ = ["make_context", "postgres_url", "saver"]  # fixtures used by name

TURNS = CONVERSATION


def count_checkpoints(saver, thread_id: str) -> int:
    return {info.thread_id: info.n_checkpoints for info in list_threads(saver)}[thread_id]


def test_ask_keeps_at_most_n_slim_checkpoints_per_thread(make_context, saver):
    context = make_context()
    t1, other = f"t1-{uuid.uuid4().hex}", f"other-{uuid.uuid4().hex}"  # the server is shared per session
    app = build_graph(checkpointer=saver, max_checkpoints_per_thread=3)
    results = [ask(app, question, context=context, thread_id=t1) for question in TURNS]
    ask(app, TURNS[0], context=context, thread_id=other)
    # a turn is written whole when it ends (durability="exit"): five turns, three kept; one turn, one
    assert count_checkpoints(saver, t1) == 3 and count_checkpoints(saver, other) == 1
    last = results[-1]
    assert last.passages and all(p.text for p in last.passages)  # the caller gets the evidence
    assert last.ranked_ids
    stored = app.get_state({"configurable": {"thread_id": t1}}).values
    assert stored["answer"] == last.answer and stored["citations"] == last.citations
    assert [p.chunk_id for p in stored["passages"]] == [p.chunk_id for p in last.passages]
    assert all(p.text == "" for p in stored["passages"])  # ids only
    assert stored["retrieved"] == [] and stored["reranked"] == []
    humans = [m for m in stored["messages"] if m.type == "human"]
    assert len(humans) == len(TURNS)  # the conversation itself is whole
    assert "混合检索" in results[1].standalone_question  # the follow-up still read the history


def test_without_a_cap_every_checkpoint_stays(make_context, saver):
    app = build_graph(checkpointer=saver, max_checkpoints_per_thread=None)
    thread, context = f"t1-{uuid.uuid4().hex}", make_context()
    for question in TURNS:
        ask(app, question, context=context, thread_id=thread)
    assert count_checkpoints(saver, thread) == len(TURNS)
