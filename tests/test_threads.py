"""Thread management over a real checkpointer: list, show, delete, prune by age and cap history.

Every behaviour runs on SQLite and on a real PostgreSQL server; capping uses backend SQL, so the
tests also check the tables directly (no writes or blobs left pointing at nothing).
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langgraph.channels.delta import DeltaChannel
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.graph.state import CompiledStateGraph

from memory.checkpointer import open_checkpointer
from memory.threads import (
    ThreadNotFoundError,
    cap_checkpoints,
    delete_thread,
    list_threads,
    parse_duration,
    prune_threads,
    show_thread,
)
from tests.postgres_server import postgres_url
from tests.test_checkpointer import ChatState, chat_graph, respond  # one tiny chat graph for both


def graph_with_subgraph(saver: BaseCheckpointSaver) -> CompiledStateGraph:
    """The answer comes from a compiled subgraph, whose calls are checkpointed in their own namespaces."""
    inner = StateGraph(ChatState)
    inner.add_node("respond", respond)
    inner.add_edge(START, "respond")
    inner.add_edge("respond", END)
    outer = StateGraph(ChatState)
    outer.add_node("answer", inner.compile())
    outer.add_edge(START, "answer")
    outer.add_edge("answer", END)
    return outer.compile(checkpointer=saver)


def say(graph: CompiledStateGraph, thread_id: str, text: str) -> str:
    result = graph.invoke({"messages": [HumanMessage(text)]}, {"configurable": {"thread_id": thread_id}})
    return result["messages"][-1].text


@pytest.fixture(params=["sqlite", "postgres"])
def saver(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[BaseCheckpointSaver]:
    url = request.getfixturevalue("postgres_url") if request.param == "postgres" else None
    with open_checkpointer(sqlite_path=tmp_path / "checkpoints.sqlite", postgres_url=url) as opened:
        if url:
            for table in ("checkpoints", "checkpoint_blobs", "checkpoint_writes"):
                opened.conn.execute(f"TRUNCATE {table}")
        yield opened


def rows(saver: BaseCheckpointSaver, sql_sqlite: str, sql_postgres: str) -> list[tuple[Any, ...]]:
    """Raw rows, to check what the tables hold after a cap."""
    if hasattr(saver, "pipe"):  # PostgresSaver
        return [tuple(r.values()) for r in saver.conn.execute(sql_postgres).fetchall()]
    return list(saver.conn.execute(sql_sqlite).fetchall())


def backdate(saver: BaseCheckpointSaver, thread_id: str, when: datetime) -> None:
    """Rewrite the thread's latest checkpoint with an older ``ts``, as if its last turn were that old.

    Checkpoints get ``ts`` from the clock when written, so this goes through the saver's own ``put``
    with the same checkpoint id (both backends upsert on it); the values and versions are unchanged.
    """
    head = saver.get_tuple({"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}})
    assert head is not None
    parent_id = head.parent_config["configurable"]["checkpoint_id"] if head.parent_config else None
    config = {"configurable": {"thread_id": thread_id, "checkpoint_ns": "", "checkpoint_id": parent_id}}
    saver.put(config, {**head.checkpoint, "ts": when.isoformat()}, head.metadata, {})


# --- list / show / delete ------------------------------------------------------------------------------


def test_list_threads_gives_count_title_and_latest_first(saver: BaseCheckpointSaver) -> None:
    graph = chat_graph(saver)
    say(graph, "zh", "  什么是检索增强生成？\n请详细说明")
    say(graph, "zh", "和微调有什么区别？")
    say(graph, "en", "What is hybrid search?")

    threads = list_threads(saver)

    assert [t.thread_id for t in threads] == ["en", "zh"]
    en, zh = threads
    assert zh.title == "什么是检索增强生成？ 请详细说明"
    assert en.title == "What is hybrid search?"
    # Each turn saves three checkpoints: its input, the step after START, the step after the node.
    assert (zh.n_checkpoints, en.n_checkpoints) == (6, 3)
    assert en.updated_at is not None and zh.updated_at is not None
    assert en.updated_at >= zh.updated_at
    assert abs(datetime.now(UTC) - en.updated_at) < timedelta(minutes=5)


def test_a_long_first_question_is_shortened_for_the_title(saver: BaseCheckpointSaver) -> None:
    say(chat_graph(saver), "long", "why " * 100)
    (info,) = list_threads(saver)
    assert len(info.title) == 80 and info.title.endswith("…")


def test_show_thread_gives_the_conversation_as_turns(saver: BaseCheckpointSaver) -> None:
    graph = chat_graph(saver)
    say(graph, "t", "你好")
    say(graph, "t", "And then?")

    detail = show_thread(saver, "t")

    assert detail.turns == [
        ("user", "你好"),
        ("assistant", "heard 1: 你好"),
        ("user", "And then?"),
        ("assistant", "heard 2: 你好 | And then?"),
    ]
    assert detail.title == "你好"


def test_show_thread_of_an_unknown_id_is_a_clear_error(saver: BaseCheckpointSaver) -> None:
    with pytest.raises(ThreadNotFoundError, match="no conversation thread 'nope'"):
        show_thread(saver, "nope")


def test_delete_thread_removes_only_that_thread(saver: BaseCheckpointSaver) -> None:
    graph = chat_graph(saver)
    say(graph, "keep", "保留我")
    say(graph, "drop", "delete me")

    assert delete_thread(saver, "drop") is True
    assert delete_thread(saver, "drop") is False

    assert [t.thread_id for t in list_threads(saver)] == ["keep"]
    assert say(graph, "drop", "fresh start") == "heard 1: fresh start"
    assert say(graph, "keep", "还在吗") == "heard 2: 保留我 | 还在吗"


# --- prune by age --------------------------------------------------------------------------------------


def test_prune_deletes_threads_idle_longer_than_the_limit_and_keeps_the_rest(
    saver: BaseCheckpointSaver,
) -> None:
    graph = chat_graph(saver)
    now = datetime.now(UTC)
    for thread_id in ("old-zh", "old-en", "recent", "fresh"):
        say(graph, thread_id, f"{thread_id} 第一句 first line")
    backdate(saver, "old-zh", now - timedelta(days=45))
    backdate(saver, "old-en", now - timedelta(days=31))
    backdate(saver, "recent", now - timedelta(days=29))

    assert prune_threads(saver, parse_duration("30d"), now=now) == ["old-en", "old-zh"]

    assert sorted(t.thread_id for t in list_threads(saver)) == ["fresh", "recent"]
    assert say(graph, "recent", "still here?").startswith("heard 2:")
    assert say(graph, "old-zh", "还记得吗？") == "heard 1: 还记得吗？"


def test_prune_with_nothing_old_deletes_nothing(saver: BaseCheckpointSaver) -> None:
    say(chat_graph(saver), "t", "hi")
    assert prune_threads(saver, timedelta(hours=1)) == []
    assert [t.thread_id for t in list_threads(saver)] == ["t"]


# --- cap checkpoints -----------------------------------------------------------------------------------

WRITES = {"sqlite": "writes", "postgres": "checkpoint_writes"}


def test_cap_keeps_the_latest_checkpoints_and_the_thread_continues(saver: BaseCheckpointSaver) -> None:
    graph = chat_graph(saver)
    for text in ("一", "two", "三", "four"):
        say(graph, "t", text)
    say(graph, "other", "untouched")
    before = [
        c.config["configurable"]["checkpoint_id"] for c in saver.list({"configurable": {"thread_id": "t"}})
    ]
    assert len(before) == 12

    assert cap_checkpoints(saver, "t", keep=3) == 9

    after = list(saver.list({"configurable": {"thread_id": "t"}}))
    assert [c.config["configurable"]["checkpoint_id"] for c in after] == before[:3]
    assert after[-1].parent_config is None  # its parent is gone, and nothing points at it
    assert show_thread(saver, "t").turns[-1] == ("assistant", "heard 4: 一 | two | 三 | four")
    assert say(graph, "t", "五") == "heard 5: 一 | two | 三 | four | 五"
    assert say(graph, "other", "again") == "heard 2: untouched | again"
    assert {t.thread_id: t.n_checkpoints for t in list_threads(saver)} == {"t": 6, "other": 6}


def test_cap_leaves_no_dangling_writes_or_blobs(saver: BaseCheckpointSaver) -> None:
    graph = chat_graph(saver)
    for i in range(5):
        say(graph, "t", f"turn {i} 第{i}轮")
    cap_checkpoints(saver, "t", keep=2)

    table = "checkpoint_writes" if hasattr(saver, "pipe") else "writes"
    dangling_writes = f"""SELECT w.checkpoint_id FROM {table} w WHERE NOT EXISTS (
        SELECT 1 FROM checkpoints c WHERE c.thread_id = w.thread_id AND c.checkpoint_ns = w.checkpoint_ns
        AND c.checkpoint_id = w.checkpoint_id)"""
    assert rows(saver, dangling_writes, dangling_writes) == []
    if hasattr(saver, "pipe"):
        versions = """SELECT DISTINCT v.key, v.value FROM checkpoints c
            CROSS JOIN LATERAL jsonb_each_text(c.checkpoint -> 'channel_versions') AS v"""
        blobs = "SELECT channel, version FROM checkpoint_blobs"
        referenced = set(rows(saver, "", versions))
        stored = set(rows(saver, "", blobs))
        # Every version a kept checkpoint reads is stored; no stored blob is unreachable.
        messages_versions = {v for v in referenced if v[0] == "messages"}
        assert messages_versions <= stored
        assert stored <= referenced


def test_cap_drops_subgraph_calls_of_deleted_checkpoints(saver: BaseCheckpointSaver) -> None:
    graph = graph_with_subgraph(saver)
    for text in ("一", "two", "三"):
        say(graph, "t", text)
    namespaces = "SELECT DISTINCT checkpoint_ns FROM checkpoints WHERE checkpoint_ns <> ''"
    assert len(rows(saver, namespaces, namespaces)) == 3

    cap_checkpoints(saver, "t", keep=2)

    # The two kept root checkpoints belong to the last turn, so only its subgraph call remains.
    assert len(rows(saver, namespaces, namespaces)) == 1
    assert say(graph, "t", "four") == "heard 4: 一 | two | 三 | four"


def test_cap_with_more_room_than_checkpoints_changes_nothing(saver: BaseCheckpointSaver) -> None:
    say(chat_graph(saver), "t", "hi")
    assert cap_checkpoints(saver, "t", keep=10) == 0
    assert cap_checkpoints(saver, "missing", keep=1) == 0
    assert list_threads(saver)[0].n_checkpoints == 3


class DeltaState(TypedDict):
    log: Annotated[list[str], DeltaChannel(lambda state, writes: [*state, *(x for w in writes for x in w)])]


def test_cap_refuses_threads_whose_state_is_rebuilt_from_older_checkpoints(
    saver: BaseCheckpointSaver,
) -> None:
    builder = StateGraph(DeltaState)
    builder.add_node("note", lambda state: {"log": [f"note {len(state['log'])}"]})
    builder.add_edge(START, "note")
    builder.add_edge("note", END)
    graph = builder.compile(checkpointer=saver)
    config = {"configurable": {"thread_id": "delta"}}
    for _ in range(3):
        graph.invoke({"log": ["用户 user"]}, config)

    with pytest.raises(ValueError, match="uses a DeltaChannel"):
        cap_checkpoints(saver, "delta", keep=1)

    assert graph.get_state(config).values["log"][-1] == "note 5"


def test_cap_rejects_bad_arguments(saver: BaseCheckpointSaver) -> None:
    with pytest.raises(ValueError, match="keep must be at least 1"):
        cap_checkpoints(saver, "t", keep=0)
    with pytest.raises(TypeError, match="not InMemorySaver"):
        cap_checkpoints(InMemorySaver(), "t", keep=1)


def test_list_show_delete_work_on_any_saver() -> None:
    memory = InMemorySaver()
    graph = chat_graph(memory)
    say(graph, "a", "内存里的对话")
    assert [(t.thread_id, t.title, t.n_checkpoints) for t in list_threads(memory)] == [
        ("a", "内存里的对话", 3)
    ]
    assert delete_thread(memory, "a") is True
    assert list_threads(memory) == []


# --- durations -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("30d", timedelta(days=30)),
        ("12h", timedelta(hours=12)),
        ("45m", timedelta(minutes=45)),
        (" 90s ", timedelta(seconds=90)),
        ("2w", timedelta(weeks=2)),
        ("1.5d", timedelta(hours=36)),
    ],
)
def test_parse_duration(text: str, expected: timedelta) -> None:
    assert parse_duration(text) == expected


@pytest.mark.parametrize("text", ["", "30", "d", "30 days", "三十天", "-5d", "30M", "1y"])
def test_parse_duration_rejects_what_it_cannot_read(text: str) -> None:
    with pytest.raises(ValueError, match=r"invalid duration.*\(e\.g\. 30d, 12h, 45m\)"):
        parse_duration(text)


def test_parse_duration_rejects_zero() -> None:
    with pytest.raises(ValueError, match="greater than zero"):
        parse_duration("0h")
