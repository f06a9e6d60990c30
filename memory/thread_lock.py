"""One conversation turn at a time per thread, across processes.

Two turns on one thread that run at once both read the same latest checkpoint and each writes its own
successor: one question/answer pair is lost and the second question is contextualised against the
wrong history. Holding this lock for the whole turn serialises them. SQLite stores get an ``flock`` on a
small per-thread file beside the database (per open file, so it also separates threads of one process);
PostgreSQL stores get a session advisory lock, which every replica sharing the database sees.
A turn that cannot get the lock in time fails with :class:`ThreadBusyError` rather than run crossed.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg

from memory.checkpointer import POSTGRES_CONNECT_TIMEOUT_S, CheckpointerError, redact_url

THREAD_LOCK_TIMEOUT_S = 300.0
_POLL_S = 0.05


class ThreadBusyError(CheckpointerError):
    """Another turn on the same thread held the lock for longer than the caller would wait."""


def _busy(thread_id: str, timeout_s: float) -> ThreadBusyError:
    return ThreadBusyError(
        f"conversation thread {thread_id!r} is busy: another question on it is still running "
        f"(waited {timeout_s:g} s); ask again when it has finished"
    )


def _digest(thread_id: str) -> bytes:
    return hashlib.sha256(b"agentic-rag-thread\0" + thread_id.encode("utf-8")).digest()


def lock_folder(sqlite_path: Path) -> Path:
    """Where the per-thread lock files of a SQLite checkpoint database live."""
    path = Path(sqlite_path)
    return path.with_name(path.name + ".locks")


def _wait(try_once, thread_id: str, timeout_s: float) -> None:
    deadline = time.monotonic() + max(timeout_s, 0.0)
    while not try_once():
        if time.monotonic() >= deadline:
            raise _busy(thread_id, timeout_s)
        time.sleep(_POLL_S)


@contextmanager
def _sqlite_lock(sqlite_path: Path, thread_id: str, timeout_s: float) -> Iterator[None]:
    folder = lock_folder(sqlite_path)
    target = folder / (_digest(thread_id).hex()[:32] + ".lock")
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd = os.open(target, os.O_RDWR | os.O_CREAT, 0o600)
    except OSError as exc:
        raise CheckpointerError(
            f"cannot create the thread lock {target} ({exc.strerror or exc}); "
            f"make {folder.parent} writable or set AGENTIC_RAG_CHECKPOINT_DB to a writable place"
        ) from None

    def try_once() -> bool:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        return True

    try:
        _wait(try_once, thread_id, timeout_s)
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


@contextmanager
def _postgres_lock(url: str, thread_id: str, timeout_s: float) -> Iterator[None]:
    key = int.from_bytes(_digest(thread_id)[:8], "big", signed=True)
    try:
        conn = psycopg.Connection.connect(url, autocommit=True, connect_timeout=POSTGRES_CONNECT_TIMEOUT_S)
    except psycopg.Error as exc:
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise CheckpointerError(
            f"cannot connect to the PostgreSQL checkpoint store at {redact_url(url)}: {reason}"
        ) from None
    with conn:

        def try_once() -> bool:
            row = conn.execute("SELECT pg_try_advisory_lock(%s)", (key,)).fetchone()
            return bool(row and row[0])

        _wait(try_once, thread_id, timeout_s)
        try:
            yield
        finally:
            conn.execute("SELECT pg_advisory_unlock(%s)", (key,))


@contextmanager
def thread_lock(
    thread_id: str,
    *,
    sqlite_path: Path,
    postgres_url: str | None = None,
    timeout_s: float = THREAD_LOCK_TIMEOUT_S,
) -> Iterator[None]:
    """Hold the thread's turn lock (waiting up to ``timeout_s``) for the body of the ``with``."""
    if postgres_url:
        with _postgres_lock(postgres_url, thread_id, timeout_s):
            yield
        return
    with _sqlite_lock(Path(sqlite_path), thread_id, timeout_s):
        yield
