"""Users, their API keys and access groups, and who owns which conversation thread (one SQLite file).

A key is shown once, when it is made: ``ark_<key id>_<secret>``. The store keeps the key id (to find the
row without trying every user) and ``sha256(salt + secret)`` with a random per-key salt; the secret is
32 random bytes, so a fast hash is enough (no password to guess) and a stolen file yields no key. Keys
are compared in constant time.

Threads belong to the user and collection that started them; ``claim`` is atomic (INSERT OR IGNORE), so
two callers racing for a new thread id cannot both own it.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import secrets
import sqlite3
import threading
import time
from pathlib import Path

from pydantic import BaseModel, Field

from core.access import groups as access_groups

KEY_PREFIX = "ark"
_NAME_RE = re.compile(r"^[\w][\w.@-]{0,63}$")
_KEY_RE = re.compile(rf"^{KEY_PREFIX}_([0-9a-f]{{16}})_([A-Za-z0-9_-]{{20,}})$")
_SCHEMA = """
CREATE TABLE IF NOT EXISTS users (
    name TEXT PRIMARY KEY,
    admin INTEGER NOT NULL,
    groups TEXT NOT NULL,
    key_id TEXT NOT NULL UNIQUE,
    salt TEXT NOT NULL,
    key_hash TEXT NOT NULL,
    created_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS collections (
    name TEXT PRIMARY KEY,
    readers TEXT NOT NULL,
    writers TEXT NOT NULL,
    created_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS thread_owners (
    thread_id TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    collection TEXT NOT NULL,
    created_at REAL NOT NULL
);
"""


class UserError(ValueError):
    """A bad user name, a user that exists already, or one that does not."""


class User(BaseModel):
    name: str
    admin: bool = False
    groups: list[str] = Field(default_factory=list)
    created_at: float = 0.0


class NewUser(BaseModel):
    """A user just made, with the key shown this once."""

    name: str
    key: str


class CollectionRow(BaseModel):
    """A named collection: groups that may read it (empty: every user) and add documents (empty: admins)."""

    name: str
    readers: list[str] = Field(default_factory=list)
    writers: list[str] = Field(default_factory=list)


def user_name(value: str) -> str:
    name = str(value).strip()
    if not _NAME_RE.match(name):
        raise UserError(f"user name {value!r} must be 1-64 letters, digits, '_', '.', '@' or '-'")
    return name


def _digest(salt: str, secret: str) -> str:
    return hashlib.sha256(bytes.fromhex(salt) + secret.encode()).hexdigest()


class UserStore:
    """Thread-safe (one connection behind a lock); several processes may share the file (SQLite locks)."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._conn = sqlite3.connect(self.path, check_same_thread=False, timeout=30)
        self._lock = threading.Lock()
        with self._lock, self._conn:
            self._conn.executescript(_SCHEMA)

    def close(self) -> None:
        self._conn.close()

    # --- users ------------------------------------------------------------------------------------
    def add(self, name: str, *, admin: bool = False, groups: list[str] | str | None = None) -> NewUser:
        name = user_name(name)
        key_id, secret, salt = secrets.token_hex(8), secrets.token_urlsafe(32), secrets.token_hex(16)
        row = (name, int(admin), json.dumps(access_groups(groups)), key_id, salt, _digest(salt, secret))
        try:
            with self._lock, self._conn:
                self._conn.execute("INSERT INTO users VALUES (?,?,?,?,?,?,?)", (*row, time.time()))
        except sqlite3.IntegrityError:
            raise UserError(f"user {name!r} exists already; revoke it first to issue a new key") from None
        return NewUser(name=name, key=f"{KEY_PREFIX}_{key_id}_{secret}")

    def revoke(self, name: str) -> None:
        with self._lock, self._conn:
            gone = self._conn.execute("DELETE FROM users WHERE name = ?", (name,)).rowcount
        if not gone:
            raise UserError(f"no user {name!r} (users list shows them)")

    def list(self) -> list[User]:
        with self._lock:
            rows = self._conn.execute("SELECT name, admin, groups, created_at FROM users ORDER BY name")
            return [User(name=r[0], admin=bool(r[1]), groups=json.loads(r[2]), created_at=r[3]) for r in rows]

    def get(self, name: str) -> User | None:
        return next((u for u in self.list() if u.name == name), None)

    def count(self) -> int:
        with self._lock:
            return int(self._conn.execute("SELECT COUNT(*) FROM users").fetchone()[0])

    def authenticate(self, key: str) -> User | None:
        """The user a key belongs to, or None (unknown, malformed or revoked)."""
        match = _KEY_RE.match(key.strip())
        if not match:
            return None
        key_id, secret = match.groups()
        with self._lock:
            row = self._conn.execute(
                "SELECT name, admin, groups, created_at, salt, key_hash FROM users WHERE key_id = ?",
                (key_id,),
            ).fetchone()
        if row is None or not hmac.compare_digest(_digest(row[4], secret), row[5]):
            return None
        return User(name=row[0], admin=bool(row[1]), groups=json.loads(row[2]), created_at=row[3])

    # --- collections ------------------------------------------------------------------------------
    def collections(self) -> list[CollectionRow]:
        with self._lock:
            rows = self._conn.execute(
                "SELECT name, readers, writers FROM collections ORDER BY name"
            ).fetchall()
        return [CollectionRow(name=r[0], readers=json.loads(r[1]), writers=json.loads(r[2])) for r in rows]

    def put_collection(self, row: CollectionRow) -> None:
        user_name(row.name)  # the same alphabet: names go into URLs, model ids and folder names
        values = (row.name, json.dumps(access_groups(row.readers)), json.dumps(access_groups(row.writers)))
        with self._lock, self._conn:
            self._conn.execute(
                "INSERT INTO collections VALUES (?,?,?,?) ON CONFLICT(name) DO UPDATE SET "
                "readers = excluded.readers, writers = excluded.writers",
                (*values, time.time()),
            )

    # --- thread owners ----------------------------------------------------------------------------
    def claim(self, thread_id: str, owner: str, collection: str) -> bool:
        """Make ``owner`` the owner of a new thread; True when they own it (now or already)."""
        with self._lock, self._conn:
            self._conn.execute(
                "INSERT OR IGNORE INTO thread_owners VALUES (?,?,?,?)",
                (thread_id, owner, collection, time.time()),
            )
            row = self._conn.execute(
                "SELECT owner, collection FROM thread_owners WHERE thread_id = ?", (thread_id,)
            ).fetchone()
        return tuple(row) == (owner, collection)

    def owner(self, thread_id: str) -> tuple[str, str] | None:
        """(owner, collection) of a thread, None when nobody claimed it (e.g. a CLI session's)."""
        with self._lock:
            row = self._conn.execute(
                "SELECT owner, collection FROM thread_owners WHERE thread_id = ?", (thread_id,)
            ).fetchone()
        return (row[0], row[1]) if row else None

    def owned(self, owner: str, collection: str) -> set[str]:
        with self._lock:
            rows = self._conn.execute(
                "SELECT thread_id FROM thread_owners WHERE owner = ? AND collection = ?", (owner, collection)
            )
            return {r[0] for r in rows}

    def release(self, thread_id: str) -> None:
        with self._lock, self._conn:
            self._conn.execute("DELETE FROM thread_owners WHERE thread_id = ?", (thread_id,))


def users_path(settings) -> Path:  # type: ignore[no-untyped-def]
    """Where the server's users store lives: ``users_db``, else beside the checkpoint database."""
    return Path(settings.users_db or Path(settings.checkpoint_db).parent / "users.sqlite")
