"""An optional SQLite cache file: it only saves time, so no fault of it may cost an answer.

Every cache of the project (answers, semantic answers, passage embeddings, e5 windows) is a SQLite file
beside the index. What can go wrong with such a file, and what happens then:

- damaged (random bytes, bad pages: ``SQLITE_CORRUPT`` / ``SQLITE_NOTADB``), found when it is opened or
  when a damaged page is read: one warning naming the file, the file is moved aside
  (``NAME.damaged-<time>``, kept for inspection) and an empty cache is created in its place;
- unwritable (read-only folder or bind mount, a file without write permission): it is read as it is,
  nothing is stored, one warning; when it cannot even be opened (or its folder is a file) the cache
  is off for this process, one warning;
- the disk is full: that write is skipped, one warning naming the disk;
- busy (another process holds a write lock for longer than the timeout): that lookup or write is skipped.

Warnings are logged once per file and kind per process (a server does not repeat them per request).
"""

from __future__ import annotations

import errno
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

log = logging.getLogger(__name__)

T = TypeVar("T")

_DAMAGED = {sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB}
_READ_ONLY = {sqlite3.SQLITE_READONLY, sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_PERM, sqlite3.SQLITE_AUTH}
_BUSY = {sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED}
_warned: set[tuple[str, str]] = set()
_warned_lock = threading.Lock()


def warn_once(path: object, kind: str, message: str) -> None:
    """Log ``message`` as a warning the first time this file has this kind of problem in this process."""
    with _warned_lock:
        if (str(path), kind) in _warned:
            return
        _warned.add((str(path), kind))
    log.warning("%s", message)


def _code(exc: BaseException) -> int | None:
    code = getattr(exc, "sqlite_errorcode", None)
    return code & 0xFF if isinstance(code, int) else None


def is_damage(exc: BaseException) -> bool:
    text = str(exc)
    return _code(exc) in _DAMAGED or "malformed" in text or "not a database" in text


def is_disk_full(exc: BaseException) -> bool:
    return _code(exc) == sqlite3.SQLITE_FULL or getattr(exc, "errno", None) == errno.ENOSPC


def is_read_only(exc: BaseException) -> bool:
    if isinstance(exc, OSError):
        return exc.errno in (errno.EROFS, errno.EACCES, errno.EPERM)
    return _code(exc) in _READ_ONLY or "readonly" in str(exc)


def moved_aside(path: Path) -> Path:
    """Rename a damaged SQLite file (and its WAL and shared-memory files) out of the way."""
    target = path.with_name(f"{path.name}.damaged-{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}")
    os.rename(path, target)
    for suffix in ("-wal", "-shm"):
        extra = path.with_name(path.name + suffix)
        if extra.exists():
            os.rename(extra, target.with_name(target.name + suffix))
    return target


class CacheFile:
    """One SQLite cache file (``path=None``: in memory) behind a lock; ``read``/``write`` never raise
    for a fault of the file: they return ``default``/False and the cache heals, degrades or turns off."""

    def __init__(self, path: Path | str | None, schema: str, label: str) -> None:
        self.path = Path(path) if path is not None else None
        self.schema = schema
        self.label = label
        self.lock = threading.RLock()
        self.conn: sqlite3.Connection | None = None
        self.writable = False
        self._inode: int | None = None
        self._open(heal=True)

    @property
    def usable(self) -> bool:
        return self.conn is not None

    # -- opening -----------------------------------------------------------------------------------

    def _open(self, *, heal: bool) -> None:
        if self.path is None:
            self.conn = sqlite3.connect(":memory:", check_same_thread=False)
            self.conn.executescript(self.schema)
            self.writable = True
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except FileExistsError:
            self._off("folder", f"{self.path.parent} is a file, not a folder; move it away")
            return
        except OSError as exc:
            if not self.path.exists():
                self._off("unwritable", f"cannot create {self.path.parent} ({exc.strerror or exc})")
                return
        try:
            self._connect_writable()
        except sqlite3.Error as exc:
            if is_damage(exc) and heal:
                self._heal(exc)
                return
            if is_damage(exc):
                self._off("damaged", f"{self.path} is damaged ({exc}) and could not be replaced")
            elif self._connect_read_only():
                warn_once(
                    self.path,
                    "read-only",
                    f"the {self.label} {self.path} is read-only ({exc}): it is used as it is and nothing "
                    "new is stored; make its folder writable to store again",
                )
            else:
                self._off("unwritable", f"{self.path} cannot be opened ({exc})")

    def _connect_writable(self) -> None:
        assert self.path is not None
        conn = sqlite3.connect(self.path, check_same_thread=False, timeout=10)
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.executescript(self.schema)
        except BaseException:
            conn.close()
            raise
        self.conn, self.writable = conn, True
        self._inode = _inode(self.path)

    def _connect_read_only(self) -> bool:
        assert self.path is not None
        if not self.path.exists():
            return False
        for query in ("mode=ro", "immutable=1"):  # immutable: a read-only medium has no -shm to create
            try:
                conn = sqlite3.connect(f"file:{self.path}?{query}", uri=True, check_same_thread=False)
                conn.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
            except sqlite3.Error:
                continue
            self.conn, self.writable = conn, False
            self._inode = _inode(self.path)
            return True
        return False

    def _off(self, kind: str, why: str) -> None:
        self.conn, self.writable = None, False
        warn_once(self.path, kind, f"the {self.label} is off for this run: {why}")

    def _heal(self, exc: BaseException) -> None:
        """Move the damaged file aside and start an empty one, unless another process already did."""
        assert self.path is not None
        if self.conn is not None:
            self.conn.close()
            self.conn = None
        try:
            if self._inode is None or _inode(self.path) == self._inode:
                aside = moved_aside(self.path)
                warn_once(
                    self.path,
                    "damaged",
                    f"the {self.label} {self.path} was damaged ({exc}); moved aside to {aside.name} "
                    "and rebuilt empty (it only saves time)",
                )
        except OSError as rename_error:
            self._off("damaged", f"{self.path} is damaged ({exc}) and cannot be moved aside ({rename_error})")
            return
        self._inode = None
        self._open(heal=False)

    # -- use ---------------------------------------------------------------------------------------

    def read(self, body: Callable[[sqlite3.Connection], T], default: T) -> T:
        """``body(conn)`` under the lock; on a fault of the file the fault is handled and ``default`` returned."""
        with self.lock:
            if self.conn is None:
                return default
            try:
                return body(self.conn)
            except sqlite3.Error as exc:
                self._fault(exc, writing=False)
                return default

    def write(self, body: Callable[[sqlite3.Connection], object]) -> bool:
        """``body(conn)`` in a transaction; False when nothing was stored (read-only, full, busy, damaged)."""
        with self.lock:
            if self.conn is None or not self.writable:
                return False
            try:
                with self.conn:
                    body(self.conn)
                return True
            except sqlite3.Error as exc:
                self._fault(exc, writing=True)
                return False

    def _fault(self, exc: sqlite3.Error, *, writing: bool) -> None:
        if is_damage(exc):
            self._heal(exc)
        elif is_disk_full(exc):
            warn_once(
                self.path,
                "full",
                f"the disk holding the {self.label} {self.path} is full: nothing new is stored until "
                "space is freed",
            )
        elif _code(exc) in _BUSY:
            log.debug("%s %s busy: skipped", self.label, self.path)
        elif writing and is_read_only(exc):
            self.writable = False
            warn_once(
                self.path,
                "read-only",
                f"the {self.label} {self.path} is read-only ({exc}): nothing new is stored",
            )
        else:
            warn_once(self.path, "error", f"the {self.label} {self.path} failed ({exc}); skipped")

    def close(self) -> None:
        with self.lock:
            if self.conn is not None:
                self.conn.close()
                self.conn = None


def _inode(path: Path) -> int | None:
    try:
        return path.stat().st_ino
    except OSError:
        return None
