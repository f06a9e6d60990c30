"""Answer caches for frequent questions: an exact cache and a semantic (near-duplicate) cache.

Both live in one SQLite file next to the index (``INDEX/cache/answers.sqlite``). A key is the normalised
question + mode + filters + the index generation it was answered from; the semantic cache also accepts a
stored question whose query vector has cosine similarity >= the threshold, under the same mode, filters
and generation, naming the same numbers and codes. Entries of any other generation are deleted when the cache is opened and never returned,
so re-ingesting (which writes a new generation) invalidates everything at once. Hit and miss counts are
kept in the file so ``index stats`` can show them.
"""

from __future__ import annotations

import json
import re
import sqlite3
import threading
import time
import unicodedata
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel

CacheKind = Literal["exact", "semantic"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS entries (
    key TEXT PRIMARY KEY,
    generation TEXT NOT NULL,
    scope TEXT NOT NULL,
    question TEXT NOT NULL,
    signature TEXT NOT NULL,
    vector BLOB,
    payload TEXT NOT NULL,
    created REAL NOT NULL,
    used REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS entries_scope ON entries (generation, scope);
CREATE TABLE IF NOT EXISTS counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL);
"""
_TRAILING = re.compile(r"[\s?？!！.。;；,，]+$")
_NUMERIC_TOKEN = re.compile(r"[\w.\-/]*\d[\w.\-/]*")


def normalise_question(question: str) -> str:
    """Case, width, whitespace and trailing punctuation do not make a different question."""
    text = unicodedata.normalize("NFKC", question).casefold()
    return _TRAILING.sub("", " ".join(text.split()))


def signature(question: str) -> str:
    """The codes and numbers a question names. Embeddings place "error E-4711" and "error E-4712" closer
    (cosine 0.96-0.98) than true paraphrases, so a semantic hit must name exactly the same ones."""
    return " ".join(sorted(set(_NUMERIC_TOKEN.findall(normalise_question(question)))))


def scope_key(mode: str, filters: dict[str, Any] | None) -> str:
    """Mode and filters as one stable string: answers under other filters are other answers."""
    return json.dumps({"mode": mode, "filters": filters or {}}, sort_keys=True, ensure_ascii=False)


class CacheHit(BaseModel):
    kind: CacheKind
    question: str
    similarity: float
    payload: dict[str, Any]


class AnswerCache:
    """Exact + semantic answer cache bound to one index generation; thread-safe."""

    def __init__(
        self, path: Path, *, generation: str, semantic_threshold: float = 0.95, max_entries: int = 5000
    ) -> None:
        self.path = Path(path)
        self.generation = generation
        self.semantic_threshold = semantic_threshold
        self.max_entries = max_entries
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(self.path, check_same_thread=False, timeout=30)
        self._db.execute("PRAGMA journal_mode=WAL")
        with self._lock, self._db:
            self._db.executescript(_SCHEMA)
            self._db.execute("DELETE FROM entries WHERE generation != ?", (generation,))

    def lookup(
        self, question: str, mode: str, filters: dict[str, Any] | None, vector: np.ndarray | None = None
    ) -> CacheHit | None:
        """The exact entry, else (given a query vector) the most similar one above the threshold."""
        scope = scope_key(mode, filters)
        key = self._key(question, scope)
        with self._lock, self._db:
            row = self._db.execute(
                "SELECT question, payload FROM entries WHERE key = ? AND generation = ?",
                (key, self.generation),
            ).fetchone()
            hit = (
                CacheHit(kind="exact", question=row[0], similarity=1.0, payload=json.loads(row[1]))
                if row
                else None
            )
            if hit is None and vector is not None:
                hit = self._similar(scope, signature(question), vector)
            if hit is not None:
                self._db.execute(
                    "UPDATE entries SET used = ? WHERE key = ?", (time.time(), self._key(hit.question, scope))
                )
            self._count(f"hits_{hit.kind}" if hit else "misses")
        return hit

    def store(
        self,
        question: str,
        mode: str,
        filters: dict[str, Any] | None,
        payload: dict[str, Any],
        vector: np.ndarray | None = None,
    ) -> None:
        scope = scope_key(mode, filters)
        blob = _unit(vector).astype(np.float32).tobytes() if vector is not None else None
        now = time.time()
        with self._lock, self._db:
            self._db.execute(
                "INSERT OR REPLACE INTO entries VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    self._key(question, scope),
                    self.generation,
                    scope,
                    question,
                    signature(question),
                    blob,
                    json.dumps(payload, ensure_ascii=False),
                    now,
                    now,
                ),
            )
            self._db.execute(
                "DELETE FROM entries WHERE key IN (SELECT key FROM entries ORDER BY used DESC LIMIT -1 OFFSET ?)",
                (self.max_entries,),
            )

    def stats(self) -> dict[str, int]:
        """Entries of the current generation and hit/miss counts since the file was created."""
        with self._lock:
            entries = self._db.execute(
                "SELECT COUNT(*) FROM entries WHERE generation = ?", (self.generation,)
            ).fetchone()[0]
            counts = dict(self._db.execute("SELECT name, value FROM counters").fetchall())
        return {
            "entries": int(entries),
            "hits_exact": int(counts.get("hits_exact", 0)),
            "hits_semantic": int(counts.get("hits_semantic", 0)),
            "misses": int(counts.get("misses", 0)),
        }

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def _key(self, question: str, scope: str) -> str:
        return f"{self.generation}\x1f{scope}\x1f{normalise_question(question)}"

    def _similar(self, scope: str, numbers: str, vector: np.ndarray) -> CacheHit | None:
        query = _unit(vector).astype(np.float32)
        rows = [
            row
            for row in self._db.execute(
                "SELECT question, vector, payload FROM entries"
                " WHERE generation = ? AND scope = ? AND signature = ? AND vector IS NOT NULL",
                (self.generation, scope, numbers),
            )
            if len(row[1]) == query.nbytes  # another embedder's vectors are never compared
        ]
        if not rows:
            return None
        similarities = np.stack([np.frombuffer(row[1], dtype=np.float32) for row in rows]) @ query
        best = int(np.argmax(similarities))
        if float(similarities[best]) < self.semantic_threshold:
            return None
        question, _vector, payload = rows[best]
        return CacheHit(
            kind="semantic",
            question=question,
            similarity=round(float(similarities[best]), 4),
            payload=json.loads(payload),
        )

    def _count(self, name: str) -> None:
        self._db.execute(
            "INSERT INTO counters VALUES (?, 1) ON CONFLICT(name) DO UPDATE SET value = value + 1", (name,)
        )


def _unit(vector: np.ndarray) -> np.ndarray:
    array = np.asarray(vector, dtype=np.float64).ravel()
    norm = float(np.linalg.norm(array))
    return array / norm if norm > 0 else array


def read_cache_stats(path: Path, generation: str) -> dict[str, int] | None:
    """Stats for ``index stats`` without creating a cache file that does not exist yet."""
    if not Path(path).exists():
        return None
    cache = AnswerCache(path, generation=generation)
    try:
        return cache.stats()
    finally:
        cache.close()
