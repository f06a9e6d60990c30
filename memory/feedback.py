"""Feedback on answers: a user marks a turn good or bad (with an optional note), and the turn's question,
answer, citations, passages and trace are kept with the verdict for the failure analysis.

SQLite next to the checkpoints by default (``feedback.sqlite`` beside ``checkpoints.sqlite``); the
PostgreSQL database of the checkpoints when ``postgres_url`` is set, so replicas share it. Both stores
speak the same SQL; only the placeholder style and the id column differ.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Protocol

from core.feedback import FeedbackRecord, Verdict

FEEDBACK_FILE = "feedback.sqlite"
_COLUMNS = (
    "thread_id",
    "author",
    "turn",
    "verdict",
    "note",
    "question",
    "answer",
    "mode",
    "citations",
    "passages",
    "trace",
    "created_at",
)
_JSON_COLUMNS = ("citations", "passages", "trace")
_TABLE = """
CREATE TABLE IF NOT EXISTS feedback (
    id {id},
    thread_id TEXT NOT NULL,
    author TEXT NOT NULL DEFAULT '',
    turn INTEGER NOT NULL,
    verdict TEXT NOT NULL,
    note TEXT NOT NULL,
    question TEXT NOT NULL,
    answer TEXT NOT NULL,
    mode TEXT NOT NULL,
    citations TEXT NOT NULL,
    passages TEXT NOT NULL,
    trace TEXT NOT NULL,
    created_at DOUBLE PRECISION NOT NULL
)
"""
_ADD_AUTHOR = "ALTER TABLE feedback ADD COLUMN author TEXT NOT NULL DEFAULT ''"


class FeedbackError(ValueError):
    """Feedback that cannot be recorded (unknown thread or turn, bad verdict), with what to do."""


class FeedbackStore(Protocol):
    def add(self, record: FeedbackRecord) -> int: ...

    def records(self, verdict: Verdict | None = None, author: str | None = None) -> list[FeedbackRecord]: ...

    def close(self) -> None: ...


class _SqlFeedbackStore:
    """The SQL both backends share; subclasses give the connection and placeholder."""

    placeholder = "?"

    def __init__(self, conn: Any) -> None:
        self._conn = conn
        self._lock = threading.Lock()

    def add(self, record: FeedbackRecord) -> int:
        data = record.model_dump(exclude={"id"})
        values = [
            json.dumps(data[c], ensure_ascii=False) if c in _JSON_COLUMNS else data[c] for c in _COLUMNS
        ]
        marks = ", ".join([self.placeholder] * len(_COLUMNS))
        sql = f"INSERT INTO feedback ({', '.join(_COLUMNS)}) VALUES ({marks}) RETURNING id"
        with self._lock:
            row = self._conn.execute(sql, values).fetchone()
            self._conn.commit()
        return int(row[0])

    def records(self, verdict: Verdict | None = None, author: str | None = None) -> list[FeedbackRecord]:
        """Every record, oldest first; only one verdict's, or only one user's (``author``), when given."""
        sql = f"SELECT id, {', '.join(_COLUMNS)} FROM feedback"
        pairs = (("verdict", verdict or None), ("author", author))
        where = [(column, value) for column, value in pairs if value is not None]
        if where:
            sql += " WHERE " + " AND ".join(f"{column} = {self.placeholder}" for column, _ in where)
        with self._lock:
            rows = self._conn.execute(sql + " ORDER BY id", [v for _, v in where]).fetchall()
        return [self._record(row) for row in rows]

    def close(self) -> None:
        self._conn.close()

    @staticmethod
    def _record(row: Any) -> FeedbackRecord:
        data = dict(zip(("id", *_COLUMNS), row, strict=True))
        for column in _JSON_COLUMNS:
            data[column] = json.loads(data[column])
        return FeedbackRecord.model_validate(data)


class SqliteFeedbackStore(_SqlFeedbackStore):
    placeholder = "?"

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(path, check_same_thread=False, timeout=30)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute(_TABLE.format(id="INTEGER PRIMARY KEY AUTOINCREMENT"))
        columns = {row[1] for row in conn.execute("PRAGMA table_info(feedback)")}
        if "author" not in columns:  # a store written before feedback had authors: theirs is the CLI's
            conn.execute(_ADD_AUTHOR)
        conn.commit()
        super().__init__(conn)


class PostgresFeedbackStore(_SqlFeedbackStore):
    placeholder = "%s"

    def __init__(self, conn: Any) -> None:
        conn.execute(_TABLE.format(id="BIGSERIAL PRIMARY KEY"))
        conn.execute(_ADD_AUTHOR.replace("ADD COLUMN", "ADD COLUMN IF NOT EXISTS"))
        conn.commit()
        super().__init__(conn)


def feedback_path(checkpoint_db: Path) -> Path:
    return Path(checkpoint_db).parent / FEEDBACK_FILE


@contextmanager
def open_feedback_store(*, checkpoint_db: Path, postgres_url: str | None = None) -> Iterator[FeedbackStore]:
    """The feedback store beside the checkpoints: PostgreSQL when ``postgres_url`` is set, else SQLite."""
    if postgres_url:
        import psycopg

        from memory.checkpointer import CheckpointerError, redact_url

        try:
            conn = psycopg.connect(postgres_url, connect_timeout=10)
        except psycopg.Error as exc:
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise CheckpointerError(
                f"cannot connect to the PostgreSQL feedback store at {redact_url(postgres_url)}: {first}"
            ) from exc
        store: FeedbackStore = PostgresFeedbackStore(conn)
    else:
        store = SqliteFeedbackStore(feedback_path(checkpoint_db))
    try:
        yield store
    finally:
        store.close()
