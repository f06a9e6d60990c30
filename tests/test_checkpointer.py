"""Conversation memory survives restarts and stays per thread, on SQLite and on a real PostgreSQL server."""

from __future__ import annotations

import asyncio
import json
import logging
import socket
import sqlite3
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langgraph.checkpoint.base import BaseCheckpointSaver, empty_checkpoint
from langgraph.checkpoint.postgres import PostgresSaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.graph.state import CompiledStateGraph
from pydantic import BaseModel

from memory.checkpointer import CheckpointerError, open_async_checkpointer, open_checkpointer, redact_url
from tests.postgres_server import postgres_url

REPO = Path(__file__).resolve().parents[1]


class ChatState(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]


def respond(state: ChatState) -> dict[str, list[AnyMessage]]:
    """Answer with what the thread has heard so far, so a test can see the remembered history."""
    heard = [m.text for m in state["messages"] if isinstance(m, HumanMessage)]
    return {"messages": [AIMessage(f"heard {len(heard)}: {' | '.join(heard)}")]}


def chat_graph(saver: BaseCheckpointSaver) -> CompiledStateGraph:
    builder = StateGraph(ChatState)
    builder.add_node("respond", respond)
    builder.add_edge(START, "respond")
    builder.add_edge("respond", END)
    return builder.compile(checkpointer=saver)


def say(graph: CompiledStateGraph, thread_id: str, text: str) -> str:
    result = graph.invoke({"messages": [HumanMessage(text)]}, {"configurable": {"thread_id": thread_id}})
    return result["messages"][-1].text


Opener = Callable[[], AbstractContextManager[BaseCheckpointSaver]]


@pytest.fixture(params=["sqlite", "postgres"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> dict[str, Any]:
    """Keyword arguments of open_checkpointer for each backend; a fresh database every test."""
    if request.param == "sqlite":
        return {"sqlite_path": tmp_path / "memory" / "checkpoints.sqlite", "postgres_url": None}
    url = request.getfixturevalue("postgres_url")
    with open_checkpointer(sqlite_path=tmp_path / "unused.sqlite", postgres_url=url) as saver:
        for table in ("checkpoints", "checkpoint_blobs", "checkpoint_writes"):
            saver.conn.execute(f"TRUNCATE {table}")
    return {"sqlite_path": tmp_path / "unused.sqlite", "postgres_url": url}


RESUME_SCRIPT = """
import json, sys
from pathlib import Path
from memory.checkpointer import open_checkpointer
from tests.test_checkpointer import chat_graph, say

args = json.loads(sys.argv[1])
with open_checkpointer(sqlite_path=Path(args["sqlite_path"]), postgres_url=args["postgres_url"]) as saver:
    print(json.dumps(say(chat_graph(saver), args["thread_id"], args["text"]), ensure_ascii=False))
"""


def say_in_new_process(backend: dict[str, Any], thread_id: str, text: str) -> str:
    """One turn in a fresh Python process: nothing can be remembered except through the store."""
    args = {**backend, "sqlite_path": str(backend["sqlite_path"]), "thread_id": thread_id, "text": text}
    done = subprocess.run(
        [sys.executable, "-c", RESUME_SCRIPT, json.dumps(args)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_a_thread_resumes_after_restart(backend: dict[str, Any]) -> None:
    assert (
        say_in_new_process(backend, "user-42", "我叫小明，记住我的名字") == "heard 1: 我叫小明，记住我的名字"
    )
    assert say_in_new_process(backend, "user-42", "What is my name?") == (
        "heard 2: 我叫小明，记住我的名字 | What is my name?"
    )


def test_threads_do_not_see_each_others_history(backend: dict[str, Any]) -> None:
    with open_checkpointer(**backend) as saver:
        graph = chat_graph(saver)
        say(graph, "alice", "我的订单号是 A-1")
        say(graph, "bob", "My order number is B-2")
        assert say(graph, "alice", "订单号是多少？") == "heard 2: 我的订单号是 A-1 | 订单号是多少？"
        assert say(graph, "bob", "Which order?") == "heard 2: My order number is B-2 | Which order?"
        assert say(graph, "carol", "hello") == "heard 1: hello"


def test_the_saver_type_follows_the_settings(backend: dict[str, Any]) -> None:
    expected = PostgresSaver if backend["postgres_url"] else SqliteSaver
    with open_checkpointer(**backend) as saver:
        assert isinstance(saver, expected)


def test_sqlite_file_is_created_with_its_folder_in_wal_mode(tmp_path: Path) -> None:
    path = tmp_path / "a" / "b" / "checkpoints.sqlite"
    with open_checkpointer(sqlite_path=path, postgres_url=None) as saver:
        say(chat_graph(saver), "t", "hi")
    assert path.is_file()
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("SELECT COUNT(*) FROM checkpoints").fetchone()[0] > 0


def test_a_file_that_is_not_a_database_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "notes.sqlite"
    path.write_text("这不是数据库 / not a database\n" * 100)
    with (
        pytest.raises(CheckpointerError, match=r"notes\.sqlite"),
        open_checkpointer(sqlite_path=path, postgres_url=None),
    ):
        pass


def test_a_folder_in_place_of_the_file_is_a_clear_error(tmp_path: Path) -> None:
    with (
        pytest.raises(CheckpointerError, match="is a directory"),
        open_checkpointer(sqlite_path=tmp_path, postgres_url=None),
    ):
        pass


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_unreachable_postgres_names_the_server_but_not_the_password(tmp_path: Path) -> None:
    url = f"postgresql://alice:s3cret-pw@127.0.0.1:{_closed_port()}/memory"
    with (
        pytest.raises(CheckpointerError) as caught,
        open_checkpointer(sqlite_path=tmp_path / "x", postgres_url=url),
    ):
        pass
    message = str(caught.value)
    assert "cannot connect to the PostgreSQL checkpoint store" in message
    assert "alice:***@127.0.0.1" in message
    assert "s3cret-pw" not in message


def test_a_malformed_postgres_url_is_a_clear_error(tmp_path: Path) -> None:
    with (
        pytest.raises(CheckpointerError, match="cannot connect") as caught,
        open_checkpointer(sqlite_path=tmp_path / "x", postgres_url="not a url password=hunter2"),
    ):
        pass
    assert "hunter2" not in str(caught.value)


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("postgresql://app:pa:ss@db.example:5432/chat", "postgresql://app:***@db.example:5432/chat"),
        (
            "postgresql://app@db/chat?password=x&sslmode=require",
            "postgresql://app@db/chat?password=***&sslmode=require",
        ),
        ("host=db user=app password='p w' dbname=chat", "host=db user=app password=*** dbname=chat"),
        ("postgresql:///chat", "postgresql:///chat"),
    ],
)
def test_urls_are_shown_without_passwords(url: str, shown: str) -> None:
    assert redact_url(url) == shown


async def _two_async_turns(backend: dict[str, Any]) -> list[str]:
    async with open_async_checkpointer(**backend) as saver:
        graph = chat_graph(saver)
        config = {"configurable": {"thread_id": "async"}}
        first = await graph.ainvoke({"messages": [HumanMessage("异步你好")]}, config)
        second = await graph.ainvoke({"messages": [HumanMessage("async again")]}, config)
        return [first["messages"][-1].text, second["messages"][-1].text]


def test_async_checkpointer_remembers_the_thread(backend: dict[str, Any]) -> None:
    assert asyncio.run(_two_async_turns(backend)) == ["heard 1: 异步你好", "heard 2: 异步你好 | async again"]
    # The sync opener reads what the async one wrote: same tables, same format.
    with open_checkpointer(**backend) as saver:
        assert say(chat_graph(saver), "async", "sync now").startswith("heard 3:")


@pytest.fixture
def sqlite_saver(tmp_path: Path) -> Iterator[BaseCheckpointSaver]:
    with open_checkpointer(sqlite_path=tmp_path / "c.sqlite", postgres_url=None) as saver:
        yield saver


def test_one_sqlite_saver_serves_several_threads_at_once(sqlite_saver: BaseCheckpointSaver) -> None:
    from concurrent.futures import ThreadPoolExecutor

    graph = chat_graph(sqlite_saver)
    with ThreadPoolExecutor(max_workers=4) as pool:
        replies = list(pool.map(lambda i: [say(graph, f"t{i}", f"q{j}") for j in range(3)][-1], range(8)))
    assert replies == ["heard 3: q0 | q1 | q2" for _ in range(8)]


class Evidence(BaseModel):
    source: str
    score: float


class Secret(BaseModel):
    note: str


def test_named_state_types_load_strictly_and_quietly(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "c.sqlite"
    checkpoint = {
        **empty_checkpoint(),
        "channel_values": {"evidence": [Evidence(source="手册.md", score=0.9)], "other": Secret(note="x")},
    }
    config = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}
    with open_checkpointer(sqlite_path=path, postgres_url=None, allowed_types=[Evidence]) as saver:
        saver.put(config, checkpoint, {}, {})
        with caplog.at_level(logging.WARNING):
            values = saver.get_tuple(config).checkpoint["channel_values"]

    assert values["evidence"] == [Evidence(source="手册.md", score=0.9)]
    assert not isinstance(values["other"], Secret)  # not named: refused, left as plain data
    assert [r for r in caplog.records if "Evidence" in r.getMessage()] == []
