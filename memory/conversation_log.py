"""The conversation log: every answered turn of a thread, stored once, beside the thread's checkpoints.

A checkpoint keeps only the last few turns of messages (what a follow-up is read against), so every
checkpoint of a thread stays the same size however long the conversation runs. The whole conversation
lives here, one row per turn, for ``threads show``, listings and feedback on older turns.

A turn is logged in the same database transaction as the checkpoint that first holds it
(:func:`put_logged`): a turn killed before its checkpoint is written leaves neither. Each write also
makes the log agree with the checkpoint: logged turns the checkpoint no longer holds, newer than the
ones it does, were rolled back (a cancelled question restored to the checkpoint before it) and go.

SQL for the SQLite schema of langgraph-checkpoint-sqlite 3.x and the PostgreSQL schema of
langgraph-checkpoint-postgres 3.x (the checkpoint row is written here, inside our transaction, as
their ``put`` writes it).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import psycopg
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    get_checkpoint_metadata,
    get_serializable_checkpoint_metadata,
)
from langgraph.checkpoint.postgres import PostgresSaver
from langgraph.checkpoint.sqlite import SqliteSaver
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb
from pydantic import BaseModel, Field

from memory.history import message_text

LOG_TABLE = "conversation_log"
_SQLITE_SCHEMA = f"""CREATE TABLE IF NOT EXISTS {LOG_TABLE} (
    thread_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    question_id TEXT NOT NULL,
    question TEXT NOT NULL,
    answer TEXT NOT NULL,
    citations TEXT NOT NULL,
    PRIMARY KEY (thread_id, seq)
)"""
POSTGRES_LOG_SCHEMA = f"""CREATE TABLE IF NOT EXISTS {LOG_TABLE} (
    thread_id TEXT NOT NULL,
    seq BIGINT NOT NULL,
    question_id TEXT NOT NULL,
    question TEXT NOT NULL,
    answer TEXT NOT NULL,
    citations JSONB NOT NULL,
    PRIMARY KEY (thread_id, seq)
)"""


class Turn(BaseModel):
    """One answered question: the user's message and the assistant's reply with its citations."""

    question_id: str
    question: str
    answer: str
    citations: list[dict[str, Any]] = Field(default_factory=list)

    def messages(self) -> list[BaseMessage]:
        return [
            HumanMessage(self.question, id=self.question_id or None),
            AIMessage(self.answer, additional_kwargs={"citations": self.citations}),
        ]


def answered_turns(messages: Sequence[Any]) -> list[Turn]:
    """Each user message followed by an assistant reply with text, oldest first.

    A question with no reply (a turn cut off by a kill or an error) is not a turn.
    """
    turns: list[Turn] = []
    question: BaseMessage | None = None
    for message in messages:
        if isinstance(message, HumanMessage):
            question = message
        elif isinstance(message, AIMessage) and question is not None and message_text(message).strip():
            turns.append(
                Turn(
                    question_id=question.id or "",
                    question=message_text(question),
                    answer=message_text(message),
                    citations=list(message.additional_kwargs.get("citations") or []),
                )
            )
            question = None
    return turns


# --- transactions on the saver's own connection ------------------------------------------------------


@contextmanager
def sqlite_transaction(saver: SqliteSaver) -> Iterator[sqlite3.Cursor]:
    """One write transaction under the saver's lock; BEGIN IMMEDIATE keeps other processes out."""
    saver.setup()
    conn = saver.conn
    with saver.lock:
        if conn.in_transaction:
            conn.commit()
        cur = conn.cursor()
        try:
            cur.execute("BEGIN IMMEDIATE")
            cur.execute(_SQLITE_SCHEMA)
            yield cur
            conn.commit()
        except BaseException:
            conn.rollback()
            raise
        finally:
            cur.close()


@contextmanager
def postgres_cursor(saver: PostgresSaver) -> Iterator[psycopg.Cursor[dict[str, Any]]]:
    """A dict-row cursor on the saver's connection, holding its lock (a pooled connection needs none)."""
    conn = saver.conn
    if isinstance(conn, psycopg.Connection):
        with saver.lock:
            if saver.pipe is not None:
                saver.pipe.sync()
            with conn.cursor(row_factory=dict_row) as cur:
                yield cur
    else:
        with conn.connection() as pooled, pooled.cursor(row_factory=dict_row) as cur:
            yield cur


def setup_postgres_log(conn: psycopg.Connection) -> None:
    """Create the log table (called with the tables' setup lock held, as replicas start together)."""
    conn.execute(POSTGRES_LOG_SCHEMA)


def ensure_log(saver: BaseCheckpointSaver) -> None:
    """Create the log table of a PostgreSQL saver opened elsewhere (SQLite creates it as it writes)."""
    if isinstance(saver, PostgresSaver):
        with postgres_cursor(saver) as cur:
            cur.execute(POSTGRES_LOG_SCHEMA)


# --- keeping the log in step with the checkpoint -------------------------------------------------------


def _unlogged(turns: list[Turn], known: dict[str, int], last_seq: int) -> Iterator[tuple[int, Turn]]:
    """The turns the log does not hold yet, each with the next sequence number after ``last_seq``."""
    fresh = [turn for turn in turns if turn.question_id not in known]
    return zip(range(last_seq + 1, last_seq + 1 + len(fresh)), fresh, strict=True)


def _sync_sqlite(cur: sqlite3.Cursor, thread_id: str, turns: list[Turn]) -> None:
    ids = [t.question_id for t in turns]
    marks = ",".join("?" * len(ids))
    cur.execute(
        f"SELECT seq, question_id FROM {LOG_TABLE} WHERE thread_id = ? AND question_id IN ({marks})",
        (thread_id, *ids),
    )
    known = {qid: seq for seq, qid in cur.fetchall()}
    if known:  # logged turns after the checkpoint's first known one that it does not hold: rolled back
        cur.execute(
            f"DELETE FROM {LOG_TABLE} WHERE thread_id = ? AND seq >= ? AND question_id NOT IN ({marks})",
            (thread_id, min(known.values()), *ids),
        )
    cur.execute(f"SELECT COALESCE(MAX(seq), 0) FROM {LOG_TABLE} WHERE thread_id = ?", (thread_id,))
    for seq, turn in _unlogged(turns, known, int(cur.fetchone()[0])):
        cur.execute(
            f"INSERT INTO {LOG_TABLE} (thread_id, seq, question_id, question, answer, citations) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            (thread_id, seq, turn.question_id, turn.question, turn.answer, json.dumps(turn.citations)),
        )


def _sync_postgres(cur: psycopg.Cursor[dict[str, Any]], thread_id: str, turns: list[Turn]) -> None:
    ids = [t.question_id for t in turns]
    cur.execute(
        f"SELECT seq, question_id FROM {LOG_TABLE} WHERE thread_id = %s AND question_id = ANY(%s)",
        (thread_id, ids),
    )
    known = {r["question_id"]: r["seq"] for r in cur.fetchall()}
    if known:
        cur.execute(
            f"DELETE FROM {LOG_TABLE} WHERE thread_id = %s AND seq >= %s AND NOT (question_id = ANY(%s))",
            (thread_id, min(known.values()), ids),
        )
    cur.execute(f"SELECT COALESCE(MAX(seq), 0) AS seq FROM {LOG_TABLE} WHERE thread_id = %s", (thread_id,))
    for seq, turn in _unlogged(turns, known, int(cur.fetchone()["seq"])):
        cur.execute(
            f"INSERT INTO {LOG_TABLE} (thread_id, seq, question_id, question, answer, citations) "
            "VALUES (%s, %s, %s, %s, %s, %s)",
            (thread_id, seq, turn.question_id, turn.question, turn.answer, Jsonb(turn.citations)),
        )


def _put_sqlite(
    saver: SqliteSaver,
    config: RunnableConfig,
    checkpoint: Checkpoint,
    metadata: CheckpointMetadata,
    turns: list[Turn],
) -> None:
    configurable = config["configurable"]
    type_, blob = saver.serde.dumps_typed(checkpoint)
    meta = json.dumps(get_checkpoint_metadata(config, metadata), ensure_ascii=False).encode("utf-8", "ignore")
    with sqlite_transaction(saver) as cur:
        _sync_sqlite(cur, str(configurable["thread_id"]), turns)
        cur.execute(
            "INSERT OR REPLACE INTO checkpoints (thread_id, checkpoint_ns, checkpoint_id, "
            "parent_checkpoint_id, type, checkpoint, metadata) VALUES (?, ?, ?, ?, ?, ?, ?)",
            (
                str(configurable["thread_id"]),
                configurable["checkpoint_ns"],
                checkpoint["id"],
                configurable.get("checkpoint_id"),
                type_,
                blob,
                meta,
            ),
        )


def _put_postgres(
    saver: PostgresSaver,
    config: RunnableConfig,
    checkpoint: Checkpoint,
    metadata: CheckpointMetadata,
    new_versions: ChannelVersions,
    turns: list[Turn],
) -> None:
    configurable = config["configurable"]
    thread_id, ns = str(configurable["thread_id"]), configurable["checkpoint_ns"]
    inline = dict(checkpoint["channel_values"])
    blobs = {
        key: inline.pop(key)
        for key, value in checkpoint["channel_values"].items()
        if not (value is None or isinstance(value, str | int | float | bool))
    }
    stored = {**checkpoint, "channel_values": inline}
    with postgres_cursor(saver) as cur, cur.connection.transaction():
        _sync_postgres(cur, thread_id, turns)
        if versions := {key: v for key, v in new_versions.items() if key in blobs}:
            cur.executemany(
                saver.UPSERT_CHECKPOINT_BLOBS_SQL, saver._dump_blobs(thread_id, ns, blobs, versions)
            )
        cur.execute(
            saver.UPSERT_CHECKPOINTS_SQL,
            (
                thread_id,
                ns,
                checkpoint["id"],
                configurable.get("checkpoint_id"),
                Jsonb(stored),
                Jsonb(get_serializable_checkpoint_metadata(config, metadata)),
            ),
        )


def put_logged(
    saver: BaseCheckpointSaver,
    config: RunnableConfig,
    checkpoint: Checkpoint,
    metadata: CheckpointMetadata,
    new_versions: ChannelVersions,
    turns: list[Turn],
) -> RunnableConfig:
    """Store the root checkpoint and log its answered ``turns`` not logged yet, in one transaction.

    ``turns`` are every answered turn the (untrimmed) checkpoint holds. Savers other than SQLite and
    PostgreSQL get a plain ``put`` and no log.
    """
    if isinstance(saver, SqliteSaver):
        _put_sqlite(saver, config, checkpoint, metadata, turns)
    elif isinstance(saver, PostgresSaver):
        _put_postgres(saver, config, checkpoint, metadata, new_versions, turns)
    else:
        return saver.put(config, checkpoint, metadata, new_versions)
    configurable = config["configurable"]
    return {
        "configurable": {
            "thread_id": configurable["thread_id"],
            "checkpoint_ns": configurable["checkpoint_ns"],
            "checkpoint_id": checkpoint["id"],
        }
    }


# --- reading and deleting ------------------------------------------------------------------------------


def _sqlite_has_log(cur: sqlite3.Cursor) -> bool:
    cur.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (LOG_TABLE,))
    return cur.fetchone() is not None


def logged_turns(saver: BaseCheckpointSaver, thread_id: str) -> list[Turn]:
    """The thread's logged turns, oldest first ([] for savers without a log)."""
    if isinstance(saver, SqliteSaver):
        with saver.cursor(transaction=False) as cur:
            if not _sqlite_has_log(cur):
                return []
            cur.execute(
                f"SELECT question_id, question, answer, citations FROM {LOG_TABLE} WHERE thread_id = ? "
                "ORDER BY seq",
                (thread_id,),
            )
            rows = cur.fetchall()
        return [Turn(question_id=q, question=t, answer=a, citations=json.loads(c)) for q, t, a, c in rows]
    if isinstance(saver, PostgresSaver):
        with postgres_cursor(saver) as cur:
            cur.execute("SELECT to_regclass(%s) IS NOT NULL AS present", (LOG_TABLE,))
            if not cur.fetchone()["present"]:
                return []
            cur.execute(
                f"SELECT question_id, question, answer, citations FROM {LOG_TABLE} WHERE thread_id = %s "
                "ORDER BY seq",
                (thread_id,),
            )
            return [Turn(**row) for row in cur.fetchall()]
    return []


def delete_logged(saver: BaseCheckpointSaver, thread_id: str) -> None:
    """Delete the thread's checkpoints, writes, blobs and log in one transaction."""
    if isinstance(saver, SqliteSaver):
        with sqlite_transaction(saver) as cur:
            for table in ("checkpoints", "writes", LOG_TABLE):
                cur.execute(f"DELETE FROM {table} WHERE thread_id = ?", (str(thread_id),))
    elif isinstance(saver, PostgresSaver):
        with postgres_cursor(saver) as cur, cur.connection.transaction():
            for table in ("checkpoints", "checkpoint_blobs", "checkpoint_writes", LOG_TABLE):
                cur.execute(f"DELETE FROM {table} WHERE thread_id = %s", (str(thread_id),))
    else:
        saver.delete_thread(thread_id)
