"""Open the checkpointer that keeps each conversation thread: a SQLite file by default, PostgreSQL by URL.

SQLite suits one process (the CLI, a single server); PostgreSQL lets several serving replicas share
threads. Both come back as a ready ``BaseCheckpointSaver`` (tables created) inside a context manager that
closes the connection, so callers never touch driver details.
"""

from __future__ import annotations

import copy
import re
import sqlite3
import time
from collections.abc import AsyncIterator, Iterable, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import psycopg
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.postgres import PostgresSaver
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.checkpoint.sqlite import SqliteSaver
from psycopg.rows import dict_row

from memory.conversation_log import setup_postgres_log

SQLITE_BUSY_TIMEOUT_S = 30.0
POSTGRES_CONNECT_TIMEOUT_S = 10
_SETUP_ATTEMPTS = 3


class CheckpointerError(RuntimeError):
    """The checkpoint store cannot be opened; the message names the store (never its password)."""


def redact_url(url: str) -> str:
    """The URL or key=value DSN with any password replaced by ``***``, for error messages and logs."""
    if "://" in url:
        parts = urlsplit(url)
        shown = url
        if "@" in parts.netloc:
            userinfo, host = parts.netloc.rsplit("@", 1)
            user = userinfo.split(":", 1)[0]
            netloc = f"{user}:***@{host}" if ":" in userinfo else parts.netloc
            shown = url.replace(parts.netloc, netloc, 1)
        return re.sub(r"(?i)([?&]password=)[^&#]*", r"\1***", shown)
    return re.sub(r"(?i)(password\s*=\s*)('(?:[^'\\]|\\.)*'|\S+)", r"\1***", url)


def store_name(sqlite_path: Path, postgres_url: str | None) -> str:
    """How messages name the checkpoint store: the redacted URL, or the SQLite file."""
    return redact_url(postgres_url) if postgres_url else str(sqlite_path)


class CheckpointDamagedError(CheckpointerError):
    """A stored checkpoint cannot be decoded (damaged pages); ``store_errors`` names the file and the fix."""


def damaged_store(store: str, reason: str) -> CheckpointDamagedError:
    return CheckpointDamagedError(
        f"the checkpoint store {store} is damaged ({reason}): delete the damaged thread with "
        "`python main.py threads delete THREAD` or old ones with `threads prune`, restore the file from a "
        "backup, or move it aside to start with no threads; other threads may still work"
    )


class _CheckedSerializer(JsonPlusSerializer):
    """LangGraph's serializer, whose decoding failures say "damaged checkpoint" instead of a raw
    ``ValueError: invalid UTF-8 string`` from msgpack."""

    store: str | None = None  # named in the message when known (set by ``open_checkpointer``)

    def loads_typed(self, data: tuple[str, bytes]) -> Any:
        try:
            return super().loads_typed(data)
        except CheckpointerError:
            raise
        except Exception as exc:
            reason = f"a stored checkpoint cannot be decoded: {exc}"
            raise (
                damaged_store(self.store, reason) if self.store else CheckpointDamagedError(reason)
            ) from None


@contextmanager
def store_errors(store: str) -> Iterator[None]:
    """Turn a driver error while reading or writing checkpoints into one ``CheckpointerError`` line.

    A read-only, full or damaged database otherwise surfaces as a raw ``sqlite3``/``psycopg`` traceback.
    """
    try:
        yield
    except CheckpointDamagedError as exc:
        if str(exc).startswith("the checkpoint store"):
            raise
        raise damaged_store(store, str(exc)) from None
    except (sqlite3.Error, psycopg.Error) as exc:
        reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        if "malformed" in reason or "not a database" in reason:
            raise damaged_store(store, reason) from None
        raise CheckpointerError(
            f"the checkpoint store {store} failed ({reason}); check that it is writable and not damaged, "
            "or set AGENTIC_RAG_CHECKPOINT_DB to another file"
        ) from None


def sqlite_identity(path: Path) -> tuple[int, int] | None:
    """(device, inode) of the SQLite file, None when it is gone: tells a deleted or replaced store.

    A connection keeps writing to a deleted file's inode, so turns would silently vanish with it.
    """
    try:
        info = Path(path).stat()
    except OSError:
        return None
    return info.st_dev, info.st_ino


def require_same_store(path: Path, opened: tuple[int, int] | None, holder: str) -> None:
    """Refuse a turn when the SQLite store a long-running ``holder`` opened was deleted or replaced.

    ``opened`` is ``sqlite_identity`` taken at start (None for PostgreSQL: nothing to check).
    """
    if opened is not None and sqlite_identity(path) != opened:
        raise CheckpointerError(
            f"the checkpoint database {path} was deleted or replaced while this {holder} ran, "
            f"so this turn could not be kept; restart the {holder}"
        )


def _serializer(allowed_types: Iterable[type], store: str | None = None) -> JsonPlusSerializer:
    """Strict deserialisation limited to LangGraph's safe types plus ``allowed_types``, when given.

    LangGraph loads any stored class by default and warns that this will be blocked; naming the state's
    own types (pydantic models, dataclasses) silences that and refuses everything else. A compiled graph
    adds its state schema's types itself, but a saver read directly (thread listings) needs them here.
    Decoding failures name ``store`` (the file or redacted URL) and the way out.
    """
    modules = sorted({(t.__module__, t.__name__) for t in allowed_types})
    serde = _CheckedSerializer(allowed_msgpack_modules=modules) if modules else _CheckedSerializer()
    serde.store = store
    return serde


def loading(saver: BaseCheckpointSaver, allowed_types: Iterable[type]) -> BaseCheckpointSaver:
    """A shallow copy of ``saver`` that loads exactly ``allowed_types`` besides LangGraph's own, quietly.

    A saver built with LangGraph's default serializer loads any class with a warning (and ignores the
    allowlist a compiled graph derives from its state); a saver with another serializer is kept as is.
    """
    allowed = list(allowed_types)
    serde = _serializer(allowed, getattr(saver.serde, "store", None))
    if not allowed or type(saver.serde) not in (JsonPlusSerializer, _CheckedSerializer):
        return saver
    clone = copy.copy(saver)
    clone.serde = serde
    return clone


def _connect_sqlite(path: Path) -> sqlite3.Connection:
    """A connection shared across threads (the saver locks itself), in WAL mode so readers never block."""
    target = str(path)
    if target != ":memory:":
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise CheckpointerError(f"cannot create the folder for checkpoints {path}: {exc}") from exc
        if path.is_dir():
            raise CheckpointerError(f"checkpoint database {path} is a directory, expected a file")
    try:
        conn = sqlite3.connect(target, check_same_thread=False, timeout=SQLITE_BUSY_TIMEOUT_S)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
    except sqlite3.Error as exc:
        raise CheckpointerError(f"cannot open checkpoint database {path}: {exc}") from exc
    return conn


def _sqlite_saver(conn: sqlite3.Connection, path: Path, serde: JsonPlusSerializer | None) -> SqliteSaver:
    saver = SqliteSaver(conn, serde=serde)
    try:
        saver.setup()
    except sqlite3.DatabaseError as exc:
        raise CheckpointerError(f"{path} is not a usable checkpoint database: {exc}") from exc
    return saver


# How PostgresSaver needs its connection: autocommit, dict rows, no server-side prepares.
_PG_OPTIONS: dict[str, Any] = {
    "autocommit": True,
    "prepare_threshold": 0,
    "row_factory": dict_row,
    "connect_timeout": POSTGRES_CONNECT_TIMEOUT_S,
}


def _unreachable(url: str, exc: psycopg.Error) -> CheckpointerError:
    reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return CheckpointerError(
        f"cannot connect to the PostgreSQL checkpoint store at {redact_url(url)}: {reason}"
    )


def _connect_postgres(url: str) -> psycopg.Connection:
    try:
        return psycopg.Connection.connect(url, **_PG_OPTIONS)
    except psycopg.Error as exc:
        raise _unreachable(url, exc) from exc


def _is_setup_race(exc: psycopg.Error) -> bool:
    """Two replicas creating the tables at once collide on a unique key; the loser simply retries."""
    return isinstance(exc, psycopg.errors.UniqueViolation | psycopg.errors.DuplicateTable)


# Session advisory lock held while creating tables: replicas starting together take turns (LangGraph's
# migrations run as separate statements, so without it the loser's retries can keep colliding). Waiters
# poll with pg_try_advisory_lock: a blocked pg_advisory_lock is an open transaction, which the holder's
# CREATE INDEX CONCURRENTLY waits for -> deadlock.
_SETUP_LOCK_KEY = 0x6167_7261  # any fixed 64-bit number private to agentic-rag
_SETUP_LOCK_WAIT_S = 120.0


def _take_setup_lock(conn: psycopg.Connection, url: str) -> None:
    deadline = time.monotonic() + _SETUP_LOCK_WAIT_S
    while not conn.execute("SELECT pg_try_advisory_lock(%s) AS ok", (_SETUP_LOCK_KEY,)).fetchone()["ok"]:
        if time.monotonic() > deadline:
            raise CheckpointerError(
                f"another process has been creating the checkpoint tables at {redact_url(url)} for "
                f"{_SETUP_LOCK_WAIT_S:g} s; check it, then retry"
            )
        time.sleep(0.1)


def _setup_postgres(saver: PostgresSaver, url: str, conn: psycopg.Connection) -> None:
    _take_setup_lock(conn, url)
    try:
        for attempt in range(_SETUP_ATTEMPTS):
            try:
                saver.setup()
                setup_postgres_log(conn)
                return
            except psycopg.Error as exc:
                if _is_setup_race(exc) and attempt + 1 < _SETUP_ATTEMPTS:
                    continue
                raise CheckpointerError(
                    f"cannot create checkpoint tables at {redact_url(url)}: {exc}".strip()
                ) from exc
    finally:
        conn.execute("SELECT pg_advisory_unlock(%s)", (_SETUP_LOCK_KEY,))


@contextmanager
def open_checkpointer(
    *, sqlite_path: Path, postgres_url: str | None = None, allowed_types: Iterable[type] = ()
) -> Iterator[BaseCheckpointSaver]:
    """Yield a set-up checkpointer: PostgreSQL when ``postgres_url`` is given, else the SQLite file."""
    serde = _serializer(allowed_types, store_name(Path(sqlite_path), postgres_url))
    if postgres_url:
        with _connect_postgres(postgres_url) as conn:
            saver = PostgresSaver(conn, serde=serde)
            _setup_postgres(saver, postgres_url, conn)
            yield saver
        return
    path = Path(sqlite_path)
    conn = _connect_sqlite(path)
    try:
        yield _sqlite_saver(conn, path, serde)
    finally:
        conn.close()


@asynccontextmanager
async def open_async_checkpointer(
    *, sqlite_path: Path, postgres_url: str | None = None, allowed_types: Iterable[type] = ()
) -> AsyncIterator[BaseCheckpointSaver]:
    """The async twin of :func:`open_checkpointer`, for ``graph.ainvoke``/``astream`` in async servers."""
    serde = _serializer(allowed_types, store_name(Path(sqlite_path), postgres_url))
    if postgres_url:
        from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver

        try:
            aconn = await psycopg.AsyncConnection.connect(postgres_url, **_PG_OPTIONS)
        except psycopg.Error as exc:
            raise _unreachable(postgres_url, exc) from exc
        async with aconn:
            asaver = AsyncPostgresSaver(aconn, serde=serde)
            try:
                await asaver.setup()
            except psycopg.Error as exc:
                raise CheckpointerError(
                    f"cannot create checkpoint tables at {redact_url(postgres_url)}: {exc}"
                ) from exc
            yield asaver
        return

    import aiosqlite
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    path = Path(sqlite_path)
    # Create the folder and switch the file to WAL once with the sync driver (WAL mode persists).
    _connect_sqlite(path).close()
    try:
        conn = await aiosqlite.connect(str(path), timeout=SQLITE_BUSY_TIMEOUT_S)
    except sqlite3.Error as exc:
        raise CheckpointerError(f"cannot open checkpoint database {path}: {exc}") from exc
    try:
        saver = AsyncSqliteSaver(conn, serde=serde)
        try:
            await saver.setup()
        except sqlite3.DatabaseError as exc:
            raise CheckpointerError(f"{path} is not a usable checkpoint database: {exc}") from exc
        yield saver
    finally:
        await conn.close()
