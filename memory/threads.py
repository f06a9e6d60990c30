"""Manage conversation threads kept by a checkpointer: list, show, delete, prune by age, cap history.

Reads go through the saver's public API (``list``, ``get_tuple``, ``delete_thread``) plus the
conversation log (memory/conversation_log.py), so they work on every backend. Counting and capping need
SQL the savers do not offer, written here for the SQLite and PostgreSQL schemas of
langgraph-checkpoint-sqlite 3.x and langgraph-checkpoint-postgres 3.x.
"""

from __future__ import annotations

import json
import logging
import re
import sqlite3
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg
from langchain_core.messages import BaseMessage
from langgraph.checkpoint.base import BaseCheckpointSaver, CheckpointTuple
from langgraph.checkpoint.postgres import PostgresSaver
from langgraph.checkpoint.sqlite import SqliteSaver
from pydantic import BaseModel, ConfigDict

from core.access import cited_ids
from memory.checkpointer import CheckpointDamagedError
from memory.conversation_log import (
    LOG_TABLE,
    Turn,
    answered_turns,
    delete_logged,
    logged_turns,
    postgres_cursor,
    sqlite_transaction,
)
from memory.history import Role
from memory.thread_lock import remove_lock_file

log = logging.getLogger(__name__)

TITLE_CHARS = 80
ROOT_NS = ""
# Metadata keys LangGraph writes on threads that use a DeltaChannel, whose latest value is rebuilt from
# older checkpoints: capping such a thread would lose state, so we refuse.
_DELTA_METADATA_KEYS = ("counters_since_delta_snapshot", "delta_writes_versioned")


class ThreadNotFoundError(LookupError):
    """No checkpoint exists for the thread id."""


class ThreadInfo(BaseModel):
    model_config = ConfigDict(frozen=True)

    thread_id: str
    n_checkpoints: int
    updated_at: datetime | None
    title: str


class ThreadDetail(ThreadInfo):
    turns: list[tuple[Role, str]]


def parse_duration(text: str) -> timedelta:
    """``"30d"``, ``"12h"``, ``"45m"`` (also ``s`` and ``w``) as a positive timedelta."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*", text or "")
    if not match:
        raise ValueError(
            f"invalid duration {text!r}: use a number followed by s, m, h, d or w (e.g. 30d, 12h, 45m)"
        )
    amount = float(match.group(1))
    if amount <= 0:
        raise ValueError(f"invalid duration {text!r}: it must be greater than zero")
    unit = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}[match.group(2)]
    try:
        return timedelta(**{unit: amount})
    except OverflowError:
        raise ValueError(f"invalid duration {text!r}: too long (at most {timedelta.max.days} days)") from None


# --- reading threads through the public API ------------------------------------------------------------


def _root_config(thread_id: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread_id, "checkpoint_ns": ROOT_NS}}


def _timestamp(head: CheckpointTuple) -> datetime | None:
    raw = head.checkpoint.get("ts")
    if not isinstance(raw, str):
        return None
    try:
        stamp = datetime.fromisoformat(raw)
    except ValueError:
        return None
    return stamp if stamp.tzinfo else stamp.replace(tzinfo=UTC)


def _messages(head: CheckpointTuple) -> list[BaseMessage]:
    values = head.checkpoint.get("channel_values") or {}
    return [m for m in values.get("messages") or [] if isinstance(m, BaseMessage)]


def underlying(saver: BaseCheckpointSaver) -> BaseCheckpointSaver:
    """The saver that stores the rows, under wrappers that keep theirs in ``.saver`` (BoundedSaver)."""
    while isinstance(getattr(saver, "saver", None), BaseCheckpointSaver):
        saver = saver.saver
    return saver


def _conversation(saver: BaseCheckpointSaver, thread_id: str, head: CheckpointTuple) -> list[Turn]:
    """The logged turns, then any answered turn of the latest checkpoint not logged (a thread written
    before the log existed, or a saver without one)."""
    logged = logged_turns(saver, thread_id)
    ids = {t.question_id for t in logged}
    return logged + [t for t in answered_turns(_messages(head)) if t.question_id not in ids]


def conversation(saver: BaseCheckpointSaver, thread_id: str) -> list[Turn]:
    """Every answered turn of the thread, oldest first ([] for an unknown thread)."""
    saver = underlying(saver)
    head = saver.get_tuple(_root_config(thread_id))
    return [] if head is None else _conversation(saver, thread_id, head)


def _one_line(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= TITLE_CHARS else flat[: TITLE_CHARS - 1] + "…"


def _title(saver: BaseCheckpointSaver, thread_id: str, head: CheckpointTuple) -> str:
    for turn in _conversation(saver, thread_id, head):
        if turn.question.strip():
            return _one_line(turn.question)
    for message in _messages(head):  # an unanswered first question
        if message.type == "human" and message.text.strip():
            return _one_line(message.text)
    question = (head.checkpoint.get("channel_values") or {}).get("question")
    return _one_line(question) if isinstance(question, str) else ""


def _thread_counts(saver: BaseCheckpointSaver) -> dict[str, int]:
    """Root-graph checkpoints per thread; SQL where we know the schema, else one pass over ``list``."""
    backend = _backend(saver)
    if backend is not None:
        return backend.thread_counts()
    counts: Counter[str] = Counter()
    for item in saver.list(None):
        configurable = item.config["configurable"]
        if configurable.get("checkpoint_ns", ROOT_NS) == ROOT_NS:
            counts[str(configurable["thread_id"])] += 1
    return dict(counts)


def _info(saver: BaseCheckpointSaver, thread_id: str, count: int, head: CheckpointTuple) -> ThreadInfo:
    return ThreadInfo(
        thread_id=thread_id,
        n_checkpoints=count,
        updated_at=_timestamp(head),
        title=_title(saver, thread_id, head),
    )


def _heads(saver: BaseCheckpointSaver) -> Iterator[tuple[str, int, CheckpointTuple]]:
    """Each thread's latest checkpoint; a thread whose checkpoint is damaged is logged and left out, so
    the others are still listed and pruned."""
    for thread_id, count in _thread_counts(saver).items():
        try:
            head = saver.get_tuple(_root_config(thread_id))
        except CheckpointDamagedError as exc:
            log.warning(
                "thread %s left out: %s (python main.py threads delete %s)", thread_id, exc, thread_id
            )
            continue
        if head is not None:
            yield thread_id, count, head


def thread_ids(saver: BaseCheckpointSaver) -> list[str]:
    """Every thread's id, damaged ones included (they can still be deleted)."""
    return sorted(_thread_counts(underlying(saver)))


def check_thread(saver: BaseCheckpointSaver, thread_id: str) -> None:
    """Raise ``CheckpointDamagedError`` when the thread's latest checkpoint cannot be read back whole
    (decoded, and its messages real messages): before a turn, so damage is one line, not a traceback."""
    head = underlying(saver).get_tuple(_root_config(thread_id))
    if head is None:
        return
    messages = (head.checkpoint.get("channel_values") or {}).get("messages") or []
    if not isinstance(messages, list) or not all(isinstance(m, BaseMessage) for m in messages):
        raise CheckpointDamagedError(f"thread {thread_id!r} holds messages that are not messages")


def list_threads(saver: BaseCheckpointSaver) -> list[ThreadInfo]:
    """Every thread, most recently updated first."""
    saver = underlying(saver)
    infos = [_info(saver, thread_id, count, head) for thread_id, count, head in _heads(saver)]
    oldest = datetime.min.replace(tzinfo=UTC)
    return sorted(infos, key=lambda i: (i.updated_at or oldest, i.thread_id), reverse=True)


WITHHELD = "(answer withheld: it cites a document you can no longer read / 此回答已隐藏：它引用了您现在无权阅读的文档)"


def show_thread(
    saver: BaseCheckpointSaver,
    thread_id: str,
    unreadable: Callable[[list[str]], set[str]] | None = None,
) -> ThreadDetail:
    """The thread's conversation as (role, text) turns: its log, and its latest checkpoint.

    ``unreadable`` (chunk ids -> those the reader may not read now) withholds each answer citing any
    of them: a user who lost a group since does not get its documents back through an old thread."""
    saver = underlying(saver)
    head = saver.get_tuple(_root_config(thread_id))
    if head is None:
        raise ThreadNotFoundError(f"no conversation thread {thread_id!r}")
    count = _thread_counts(saver).get(thread_id, 1)
    logged = _conversation(saver, thread_id, head)
    values = head.checkpoint.get("channel_values") or {}
    pairs = [(t.question, t.answer, t.citations) for t in logged]
    from_log = bool(pairs)
    if not pairs and isinstance(values.get("answer"), str) and values["answer"].strip():
        pairs = [
            (str(values.get("question") or "").strip(), values["answer"].strip(), values.get("citations"))
        ]
    cited = [cited_ids(citations) for _, _, citations in pairs]
    hidden = unreadable([i for ids in cited for i in ids]) if unreadable else set()
    turns: list[tuple[Role, str]] = []
    for (question, answer, _), ids in zip(pairs, cited, strict=True):
        if question or from_log:
            turns.append(("user", question))
        turns.append(("assistant", WITHHELD if hidden & set(ids) else answer))
    if not turns and isinstance(values.get("question"), str) and values["question"].strip():
        turns.append(("user", values["question"].strip()))
    info = _info(saver, thread_id, count, head)
    return ThreadDetail(**info.model_dump(), turns=turns)


def _sqlite_file(saver: BaseCheckpointSaver) -> Path | None:
    """The file of a SQLite saver (None in memory or for other savers)."""
    if not isinstance(saver, SqliteSaver):
        return None
    with saver.lock:
        rows = saver.conn.execute("PRAGMA database_list").fetchall()
    name = next((row[2] for row in rows if row[1] == "main"), "")
    return Path(name) if name else None


def _forget(saver: BaseCheckpointSaver, thread_id: str) -> None:
    """Delete the thread's rows, then its turn-lock file (``memory.thread_lock``) beside a SQLite store."""
    delete_logged(saver, thread_id)
    path = _sqlite_file(saver)
    if path is not None:
        remove_lock_file(path, thread_id)


def delete_thread(saver: BaseCheckpointSaver, thread_id: str) -> bool:
    """Delete every checkpoint, write, blob and logged turn of the thread, and its lock file; False when
    there was nothing."""
    saver = underlying(saver)
    try:
        existed = (
            next(iter(saver.list({"configurable": {"thread_id": thread_id}}, limit=1)), None) is not None
        )
    except CheckpointDamagedError:
        existed = True  # a damaged thread exists; deleting it is the way out
    _forget(saver, thread_id)
    return existed


def prune_threads(
    saver: BaseCheckpointSaver, older_than: timedelta, *, now: datetime | None = None
) -> list[str]:
    """Delete threads whose latest checkpoint is older than ``older_than``; return their ids."""
    if older_than <= timedelta(0):
        raise ValueError(f"older_than must be positive, got {older_than}")
    saver = underlying(saver)
    try:
        cutoff = (now or datetime.now(UTC)) - older_than
    except OverflowError:  # before year 1: no thread is that old
        return []
    doomed = [
        thread_id
        for thread_id, _, head in _heads(saver)
        if (stamp := _timestamp(head)) is not None and stamp < cutoff
    ]
    for thread_id in doomed:
        _forget(saver, thread_id)
    return sorted(doomed)


def reclaim_space(saver: BaseCheckpointSaver) -> None:
    """Give the space of deleted threads back: SQLite otherwise keeps the file at its largest size.

    SQLite runs ``VACUUM`` (rewrites the file) and truncates the WAL; PostgreSQL runs plain ``VACUUM``
    on the checkpoint tables (space reusable, no exclusive lock). Other savers: nothing to do.
    """
    backend = _backend(underlying(saver))
    if backend is not None:
        backend.vacuum()


def cap_checkpoints(saver: BaseCheckpointSaver, thread_id: str, keep: int) -> int:
    """Delete the thread's checkpoints beyond the latest ``keep`` (with their writes and unused blobs).

    The latest ``keep`` checkpoints stay intact, so the thread resumes and can time-travel within them;
    the oldest kept one loses its parent link. Subgraph calls started from a deleted checkpoint go with
    it. Returns the number of checkpoints deleted.
    """
    if keep < 1:
        raise ValueError(f"keep must be at least 1, got {keep}")
    backend = _backend(saver)
    if backend is None:
        raise TypeError(f"cap_checkpoints supports SqliteSaver and PostgresSaver, not {type(saver).__name__}")
    return backend.cap(thread_id, keep)


# --- backend SQL --------------------------------------------------------------------------------------


def _call_root(namespace: str, metadata: dict[str, Any]) -> str | None:
    """The root checkpoint a subgraph call (namespace ``node:task_id``) started from, if recorded."""
    if ":" not in namespace:
        return None  # a checkpointer=True subgraph keeps its own history across calls
    parents = metadata.get("parents") or {}
    root = parents.get(ROOT_NS)
    return root if isinstance(root, str) else None


def _delta_error(thread_id: str) -> ValueError:
    return ValueError(
        f"thread {thread_id!r} uses a DeltaChannel, whose state is rebuilt from older checkpoints; "
        "it cannot be capped (delete it instead)"
    )


class _SqliteBackend:
    """SQLite saver tables: ``checkpoints`` (channel values inline) and ``writes``."""

    def __init__(self, saver: SqliteSaver) -> None:
        self.saver = saver

    def _transaction(self) -> AbstractContextManager[sqlite3.Cursor]:
        return sqlite_transaction(self.saver)

    def vacuum(self) -> None:
        conn = self.saver.conn
        with self.saver.lock:
            if conn.in_transaction:
                conn.commit()
            conn.execute("VACUUM")
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def thread_counts(self) -> dict[str, int]:
        with self.saver.cursor(transaction=False) as cur:
            cur.execute(
                "SELECT thread_id, COUNT(*) FROM checkpoints WHERE checkpoint_ns = ? GROUP BY thread_id",
                (ROOT_NS,),
            )
            return {str(t): int(n) for t, n in cur.fetchall()}

    def cap(self, thread_id: str, keep: int) -> int:
        with self._transaction() as cur:
            cur.execute(
                "SELECT 1 FROM checkpoints WHERE thread_id = ? AND ("
                + " OR ".join(
                    f"json_extract(CAST(metadata AS TEXT), '$.{k}') IS NOT NULL" for k in _DELTA_METADATA_KEYS
                )
                + ") LIMIT 1",
                (thread_id,),
            )
            if cur.fetchone():
                raise _delta_error(thread_id)
            cur.execute("SELECT DISTINCT checkpoint_ns FROM checkpoints WHERE thread_id = ?", (thread_id,))
            namespaces = sorted(ns for (ns,) in cur.fetchall())
            deleted, root_cutoff = self._cap_namespace(cur, thread_id, ROOT_NS, keep)
            for ns in namespaces:
                if ns == ROOT_NS:
                    continue
                cur.execute(
                    "SELECT metadata FROM checkpoints WHERE thread_id = ? AND checkpoint_ns = ? "
                    "ORDER BY checkpoint_id DESC LIMIT 1",
                    (thread_id, ns),
                )
                (raw,) = cur.fetchone()
                root = _call_root(ns, json.loads(raw) if raw else {})
                if root is not None and root_cutoff is not None and root < root_cutoff:
                    cur.execute(
                        "SELECT COUNT(*) FROM checkpoints WHERE thread_id = ? AND checkpoint_ns = ?",
                        (thread_id, ns),
                    )
                    deleted += int(cur.fetchone()[0])
                    for table in ("writes", "checkpoints"):
                        cur.execute(
                            f"DELETE FROM {table} WHERE thread_id = ? AND checkpoint_ns = ?", (thread_id, ns)
                        )
                else:
                    deleted += self._cap_namespace(cur, thread_id, ns, keep)[0]
            return deleted

    @staticmethod
    def _cap_namespace(cur: sqlite3.Cursor, thread_id: str, ns: str, keep: int) -> tuple[int, str | None]:
        """Delete checkpoints older than the ``keep`` newest; return (count, oldest kept id) or (0, None)."""
        cur.execute(
            "SELECT checkpoint_id FROM checkpoints WHERE thread_id = ? AND checkpoint_ns = ? "
            "ORDER BY checkpoint_id DESC",
            (thread_id, ns),
        )
        ids = [cid for (cid,) in cur.fetchall()]
        if len(ids) <= keep:
            return 0, None
        cutoff = ids[keep - 1]
        where = "thread_id = ? AND checkpoint_ns = ?"
        cur.execute(f"DELETE FROM writes WHERE {where} AND checkpoint_id < ?", (thread_id, ns, cutoff))
        cur.execute(f"DELETE FROM checkpoints WHERE {where} AND checkpoint_id < ?", (thread_id, ns, cutoff))
        cur.execute(
            f"UPDATE checkpoints SET parent_checkpoint_id = NULL WHERE {where} AND parent_checkpoint_id < ?",
            (thread_id, ns, cutoff),
        )
        return len(ids) - keep, cutoff


class _PostgresBackend:
    """PostgreSQL saver tables: ``checkpoints`` (JSONB), ``checkpoint_blobs`` (one row per channel
    version, shared by every checkpoint that did not change the channel) and ``checkpoint_writes``."""

    def __init__(self, saver: PostgresSaver) -> None:
        self.saver = saver

    def _cursor(self) -> AbstractContextManager[psycopg.Cursor[dict[str, Any]]]:
        return postgres_cursor(self.saver)

    def vacuum(self) -> None:
        with self._cursor() as cur:
            for table in ("checkpoints", "checkpoint_blobs", "checkpoint_writes", LOG_TABLE):
                cur.execute(f"VACUUM {table}")  # needs autocommit, as PostgresSaver's connection is

    def thread_counts(self) -> dict[str, int]:
        with self._cursor() as cur:
            cur.execute(
                "SELECT thread_id, COUNT(*) AS n FROM checkpoints WHERE checkpoint_ns = %s GROUP BY thread_id",
                (ROOT_NS,),
            )
            return {str(r["thread_id"]): int(r["n"]) for r in cur.fetchall()}

    def cap(self, thread_id: str, keep: int) -> int:
        with self._cursor() as cur, cur.connection.transaction():
            # One snapshot for every statement: a run appending meanwhile is neither seen nor deleted.
            cur.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            cur.execute(
                "SELECT 1 FROM checkpoints WHERE thread_id = %s AND (metadata ? %s OR metadata ? %s) LIMIT 1",
                (thread_id, *_DELTA_METADATA_KEYS),
            )
            if cur.fetchone():
                raise _delta_error(thread_id)
            cur.execute(
                "SELECT DISTINCT ON (checkpoint_ns) checkpoint_ns, metadata FROM checkpoints "
                "WHERE thread_id = %s ORDER BY checkpoint_ns, checkpoint_id DESC",
                (thread_id,),
            )
            heads = {r["checkpoint_ns"]: r["metadata"] or {} for r in cur.fetchall()}
            deleted, root_cutoff = self._cap_namespace(cur, thread_id, ROOT_NS, keep)
            for ns, metadata in sorted(heads.items()):
                if ns == ROOT_NS:
                    continue
                root = _call_root(ns, metadata)
                if root is not None and root_cutoff is not None and root < root_cutoff:
                    cur.execute(
                        "DELETE FROM checkpoints WHERE thread_id = %s AND checkpoint_ns = %s",
                        (thread_id, ns),
                    )
                    deleted += cur.rowcount
                    for table in ("checkpoint_writes", "checkpoint_blobs"):
                        cur.execute(
                            f"DELETE FROM {table} WHERE thread_id = %s AND checkpoint_ns = %s",
                            (thread_id, ns),
                        )
                else:
                    deleted += self._cap_namespace(cur, thread_id, ns, keep)[0]
            return deleted

    @staticmethod
    def _cap_namespace(
        cur: psycopg.Cursor[dict[str, Any]], thread_id: str, ns: str, keep: int
    ) -> tuple[int, str | None]:
        cur.execute(
            "SELECT checkpoint_id FROM checkpoints WHERE thread_id = %s AND checkpoint_ns = %s "
            "ORDER BY checkpoint_id DESC",
            (thread_id, ns),
        )
        ids = [r["checkpoint_id"] for r in cur.fetchall()]
        if len(ids) <= keep:
            return 0, None
        doomed = ids[keep:]
        where = "thread_id = %s AND checkpoint_ns = %s"
        cur.execute(
            f"DELETE FROM checkpoint_writes WHERE {where} AND checkpoint_id = ANY(%s)",
            (thread_id, ns, doomed),
        )
        cur.execute(
            f"DELETE FROM checkpoints WHERE {where} AND checkpoint_id = ANY(%s) "
            "RETURNING checkpoint -> 'channel_versions' AS versions",
            (thread_id, ns, doomed),
        )
        freed = {(ch, str(v)) for r in cur.fetchall() for ch, v in (r["versions"] or {}).items()}
        cur.execute(
            f"UPDATE checkpoints SET parent_checkpoint_id = NULL WHERE {where} AND parent_checkpoint_id = ANY(%s)",
            (thread_id, ns, doomed),
        )
        # A blob is shared by every checkpoint between two changes of its channel: delete only the
        # versions that no kept checkpoint still points at.
        cur.execute(
            "SELECT DISTINCT v.key AS channel, v.value AS version FROM checkpoints c "
            "CROSS JOIN LATERAL jsonb_each_text(c.checkpoint -> 'channel_versions') AS v "
            "WHERE c.thread_id = %s AND c.checkpoint_ns = %s",
            (thread_id, ns),
        )
        referenced = {(r["channel"], r["version"]) for r in cur.fetchall()}
        garbage: dict[str, list[str]] = {}
        for channel, version in freed - referenced:
            garbage.setdefault(channel, []).append(version)
        for channel, versions in garbage.items():
            cur.execute(
                f"DELETE FROM checkpoint_blobs WHERE {where} AND channel = %s AND version = ANY(%s)",
                (thread_id, ns, channel, versions),
            )
        return len(doomed), ids[keep - 1]


def supports_capping(saver: BaseCheckpointSaver) -> bool:
    """Whether ``cap_checkpoints`` knows this saver's tables (SQLite and PostgreSQL)."""
    return _backend(saver) is not None


def _backend(saver: BaseCheckpointSaver) -> _SqliteBackend | _PostgresBackend | None:
    if isinstance(saver, SqliteSaver):
        return _SqliteBackend(saver)
    if isinstance(saver, PostgresSaver):
        return _PostgresBackend(saver)
    return None
