"""One conversation turn at a time per thread, across processes.

Two turns on one thread that run at once both read the same latest checkpoint and each writes its own
successor: one question/answer pair is lost and the second question is contextualized against the
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


def lock_path(sqlite_path: Path, thread_id: str) -> Path:
    """The lock file of one thread of a SQLite checkpoint database."""
    return lock_folder(sqlite_path) / (_digest(thread_id).hex()[:32] + ".lock")


def _open_lock(target: Path) -> int:
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        return os.open(target, os.O_RDWR | os.O_CREAT, 0o600)
    except OSError as exc:
        raise CheckpointerError(
            f"cannot create the thread lock {target} ({exc.strerror or exc}); "
            f"make {target.parent.parent} writable or set AGENTIC_RAG_CHECKPOINT_DB to a writable place"
        ) from None


def _same_file(fd: int, target: Path) -> bool:
    """Whether the locked descriptor is still the file at ``target`` (a deleted thread's lock file is
    unlinked under its lock: a waiter that then gets it holds a lock nobody else can see)."""
    try:
        return os.fstat(fd).st_ino == os.stat(target).st_ino
    except FileNotFoundError:
        return False


@contextmanager
def _sqlite_lock(sqlite_path: Path, thread_id: str, timeout_s: float) -> Iterator[None]:
    target = lock_path(sqlite_path, thread_id)
    fd = _open_lock(target)

    def try_once() -> bool:
        nonlocal fd
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        if _same_file(fd, target):
            return True
        os.close(fd)  # the thread was deleted meanwhile: lock the file that is there now
        fd = _open_lock(target)
        return False

    try:
        _wait(try_once, thread_id, timeout_s)
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def remove_lock_file(sqlite_path: Path, thread_id: str) -> bool:
    """Delete a deleted thread's lock file; kept (False) while a turn holds it or when it is not there."""
    target = lock_path(sqlite_path, thread_id)
    try:
        fd = os.open(target, os.O_RDWR)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return False
    try:
        if _same_file(fd, target):
            target.unlink()
            return True
        return False
    finally:
        os.close(fd)  # closing releases the lock


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
