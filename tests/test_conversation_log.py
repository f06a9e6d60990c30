"""A thread's checkpoints stay the same size however long the conversation runs; the whole conversation
is in the conversation log, written in the same transaction as the checkpoint of its turn.

Real SQLite files and a real PostgreSQL server, the real graph with the offline brain.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import pytest

from graph.builder import build_graph
from graph.run import ask
from memory.conversation_log import LOG_TABLE, logged_turns
from memory.threads import conversation, delete_thread, list_threads, prune_threads, show_thread
from tests.graph_fixtures import CONVERSATION, make_context, saver
from tests.postgres_server import postgres_url

__all__ = ["make_context", "postgres_url", "saver"]  # fixtures used by name

# Five questions in a cycle: after 10 and after 50 turns the last six turns are the same questions.
CYCLE = CONVERSATION
local_only = pytest.mark.parametrize("make_context", ["local"], indirect=True)


def is_postgres(saver) -> bool:
    return hasattr(saver, "pipe")


def sql(saver, query: str, *args):
    """Rows of a query written with ``?`` placeholders, on either backend."""
    if is_postgres(saver):
        return [tuple(r.values()) for r in saver.conn.execute(query.replace("?", "%s"), args).fetchall()]
    return list(saver.conn.execute(query, args).fetchall())


def newest_checkpoint_bytes(saver, thread_id: str) -> int:
    """Bytes of the thread's latest root checkpoint: its row, plus (PostgreSQL) the blobs it points at."""
    if not is_postgres(saver):
        ((size,),) = sql(
            saver,
            "SELECT length(checkpoint) FROM checkpoints WHERE thread_id = ? AND checkpoint_ns = '' "
            "ORDER BY checkpoint_id DESC LIMIT 1",
            thread_id,
        )
        return int(size)
    ((size,),) = sql(
        saver,
        "WITH head AS (SELECT checkpoint FROM checkpoints WHERE thread_id = ? AND checkpoint_ns = '' "
        "ORDER BY checkpoint_id DESC LIMIT 1) "
        "SELECT (SELECT octet_length(checkpoint::text) FROM head) + COALESCE(SUM(length(b.blob)), 0) "
        "FROM checkpoint_blobs b, head, jsonb_each_text(head.checkpoint -> 'channel_versions') v "
        "WHERE b.thread_id = ? AND b.checkpoint_ns = '' AND b.channel = v.key AND b.version = v.value",
        thread_id,
        thread_id,
    )
    return int(size)


def log_rows(saver, thread_id: str) -> int:
    ((count,),) = sql(saver, f"SELECT COUNT(*) FROM {LOG_TABLE} WHERE thread_id = ?", thread_id)
    return int(count)


@local_only
def test_checkpoints_stay_the_same_size_as_the_conversation_grows(make_context, saver):
    context, thread = make_context(), f"long-{uuid.uuid4().hex}"
    app = build_graph(checkpointer=saver, max_checkpoints_per_thread=3)
    sizes = {}
    results = []
    for turn in range(1, 51):
        results.append(ask(app, CYCLE[(turn - 1) % len(CYCLE)], context=context, thread_id=thread))
        if turn in (10, 50):
            sizes[turn] = newest_checkpoint_bytes(saver, thread)
    # the same last six questions at both points: the history did not leak into the checkpoint
    assert abs(sizes[50] - sizes[10]) <= 0.05 * sizes[10], sizes
    stored = app.get_state({"configurable": {"thread_id": thread}}).values
    assert sum(m.type == "human" for m in stored["messages"]) == 6  # a window of the last turns
    # ... while the whole conversation is in the log, once
    turns = conversation(saver, thread)
    assert [t.question for t in turns] == [CYCLE[n % len(CYCLE)] for n in range(50)]
    assert [t.answer for t in turns] == [r.answer for r in results]
    assert log_rows(saver, thread) == 50
    detail = show_thread(saver, thread)
    assert len(detail.turns) == 100 and detail.title == CYCLE[0]
    assert detail.turns[-1] == ("assistant", results[-1].answer)
    # follow-ups late in a long thread still read the recent turns
    assert "混合检索" in results[-4].standalone_question  # turn 47: "那它的常数是多少？"


@local_only
def test_delete_and_prune_remove_the_log_too(make_context, saver):
    context = make_context()
    app = build_graph(checkpointer=saver)
    keep, gone, old = (f"{name}-{uuid.uuid4().hex}" for name in ("keep", "gone", "old"))
    for thread in (keep, gone, old):
        ask(app, "What does error code E-4711 mean?", context=context, thread_id=thread)
        ask(app, "HNSW 是什么？", context=context, thread_id=thread)
    assert log_rows(saver, gone) == 2
    assert delete_thread(saver, gone) is True
    assert (
        log_rows(saver, gone) == 0 and sql(saver, "SELECT 1 FROM checkpoints WHERE thread_id = ?", gone) == []
    )
    # pruning everything older than a day, seen from two days ahead: every thread goes, log and all
    pruned = prune_threads(saver, timedelta(days=1), now=datetime.now(UTC) + timedelta(days=2))
    assert set(pruned) >= {keep, old}
    assert log_rows(saver, keep) == 0 and log_rows(saver, old) == 0
    assert keep not in {t.thread_id for t in list_threads(saver)}


@local_only
def test_a_checkpoint_that_cannot_be_written_takes_its_log_rows_with_it(make_context, saver):
    """The log and the checkpoint of a turn are one commit: when the checkpoint insert fails (here a
    trigger refuses it, as a full disk or a kill would), no logged turn is left behind."""
    context, thread = make_context(), f"fail-{uuid.uuid4().hex}"
    app = build_graph(checkpointer=saver)
    ask(app, "What does error code E-4711 mean?", context=context, thread_id=thread)
    if is_postgres(saver):
        saver.conn.execute(
            "CREATE OR REPLACE FUNCTION refuse_checkpoint() RETURNS trigger AS $$ BEGIN "
            "IF NEW.thread_id LIKE 'fail-%' THEN RAISE EXCEPTION 'disk full'; END IF; RETURN NEW; END $$ "
            "LANGUAGE plpgsql"
        )
        saver.conn.execute(
            "CREATE TRIGGER refuse BEFORE INSERT ON checkpoints FOR EACH ROW EXECUTE FUNCTION refuse_checkpoint()"
        )
    else:
        saver.conn.execute(
            "CREATE TRIGGER refuse BEFORE INSERT ON checkpoints WHEN NEW.thread_id LIKE 'fail-%' "
            "BEGIN SELECT RAISE(ABORT, 'disk full'); END"
        )
        saver.conn.commit()
    try:
        with pytest.raises(Exception, match="disk full"):
            ask(app, "HNSW 是什么？", context=context, thread_id=thread)
    finally:
        saver.conn.execute(
            "DROP TRIGGER refuse ON checkpoints" if is_postgres(saver) else "DROP TRIGGER refuse"
        )
        if not is_postgres(saver):
            saver.conn.commit()
    assert [t.question for t in logged_turns(saver, thread)] == ["What does error code E-4711 mean?"]
    # the thread goes on from its last whole turn
    ask(app, "How does keyword search rank chunks?", context=context, thread_id=thread)
    assert [t.question for t in conversation(saver, thread)] == [
        "What does error code E-4711 mean?",
        "How does keyword search rank chunks?",
    ]


@local_only
def test_a_thread_rolled_back_to_an_earlier_checkpoint_drops_the_later_turns_from_the_log(
    make_context, saver
):
    """The session's Ctrl-C restores the checkpoint before the question: the log follows it."""
    context, thread = make_context(), f"back-{uuid.uuid4().hex}"
    app = build_graph(checkpointer=saver)
    config = {"configurable": {"thread_id": thread}}
    ask(app, "混合检索是如何合并结果的？", context=context, thread_id=thread)
    before = app.get_state(config)
    ask(app, "What does error code E-4711 mean?", context=context, thread_id=thread)
    assert len(conversation(saver, thread)) == 2
    app.update_state(before.config, None, as_node="__copy__")
    assert [t.question for t in conversation(saver, thread)] == ["混合检索是如何合并结果的？"]
    follow = ask(app, "那它的常数是多少？", context=context, thread_id=thread)
    assert "混合检索" in follow.standalone_question
    assert [t.question for t in conversation(saver, thread)] == [
        "混合检索是如何合并结果的？",
        "那它的常数是多少？",
    ]


def test_a_thread_stored_before_the_log_reads_whole_and_is_logged_on_its_next_turn(saver):
    """Checkpoints written with the whole history (before this log existed) are read as they are, and
    the first turn through the bounded saver logs every earlier turn."""
    from langchain_core.messages import AIMessage, HumanMessage

    from memory.bounded import BoundedSaver
    from nodes.state import conversation_values
    from tests.test_checkpointer import chat_graph

    thread = f"old-{uuid.uuid4().hex}"
    plain = chat_graph(saver)  # no bounded saver: whole history in each checkpoint, no log
    for text in ("第一个问题", "second question", "第三个问题"):
        plain.invoke({"messages": [HumanMessage(text)]}, {"configurable": {"thread_id": thread}})
    assert [t.question for t in conversation(saver, thread)] == [
        "第一个问题",
        "second question",
        "第三个问题",
    ]
    assert logged_turns(saver, thread) == []
    bounded = chat_graph(BoundedSaver(saver, slim=conversation_values, keep=2, window_turns=1))
    bounded.invoke({"messages": [HumanMessage("fourth")]}, {"configurable": {"thread_id": thread}})
    assert [t.question for t in logged_turns(saver, thread)] == [
        "第一个问题",
        "second question",
        "第三个问题",
        "fourth",
    ]
    head = saver.get_tuple({"configurable": {"thread_id": thread, "checkpoint_ns": ""}})
    kept = head.checkpoint["channel_values"]["messages"]
    assert [type(m) for m in kept] == [HumanMessage, AIMessage] and kept[0].text == "fourth"
