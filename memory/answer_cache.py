"""Answer caches for frequent questions: an exact cache and a semantic (near-duplicate) cache.

Both live in one SQLite file next to the index (``INDEX/cache/answers.sqlite``). A key is the normalised
question + mode + filters + the index generation it was answered from; the semantic cache also accepts a
stored question whose query vector has cosine similarity >= the threshold, under the same mode, filters
and generation, naming the same numbers and codes. Entries of any other generation are deleted when the cache is opened and never returned,
so re-ingesting (which writes a new generation) invalidates everything at once. Hit and miss counts are
kept in the file so ``index stats`` can show them. Every entry carries a SHA-256 over its key, generation
and payload, and is checked against the current passages before it is served (``passage_verifier``).
The file is optional: a damaged, read-only or missing one never costs an answer (``providers.cache_file``).
"""

from __future__ import annotations

import hashlib
import json
import re
import sqlite3
import time
import unicodedata
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel

from core.entities import entity_key, extract_entities
from core.text import split_sentences
from providers.cache_file import CacheFile, warn_once

CacheKind = Literal["exact", "semantic"]

_SCHEMA = """
DROP TABLE IF EXISTS entries;
CREATE TABLE IF NOT EXISTS answers (
    key TEXT PRIMARY KEY,
    generation TEXT NOT NULL,
    scope TEXT NOT NULL,
    question TEXT NOT NULL,
    signature TEXT NOT NULL,
    vector BLOB,
    payload TEXT NOT NULL,
    checksum TEXT NOT NULL,
    created REAL NOT NULL,
    used REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS answers_scope ON answers (generation, scope);
CREATE TABLE IF NOT EXISTS counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL);
"""
_TRAILING = re.compile(r"[\s?？!！.。;；,，]+$")
_NUMERIC_TOKEN = re.compile(r"[\w.\-/]*\d[\w.\-/]*")


def normalise_question(question: str) -> str:
    """Case, width, whitespace and trailing punctuation do not make a different question."""
    text = unicodedata.normalize("NFKC", question).casefold()
    return _TRAILING.sub("", " ".join(text.split()))


def signature(question: str) -> str:
    """The codes, numbers and names a question names. Embeddings place "error E-4711" and "error E-4712"
    closer (cosine 0.96-0.98) than true paraphrases, and "Who founded Initech?" near "Who founded
    Initrode?", so a semantic hit must name exactly the same ones (names: ``core.entities``, folded);
    an appended reference code ("(ticket 5-26)") is a number too, so its answer is never another's."""
    numbers = set(_NUMERIC_TOKEN.findall(normalise_question(question)))
    names = {entity_key(name) for name in extract_entities(unicodedata.normalize("NFKC", question))}
    return " ".join(sorted(numbers | {f"@{name}" for name in names if name}))


def scope_key(mode: str, filters: dict[str, Any] | None) -> str:
    """Mode and filters as one stable string: answers under other filters are other answers."""
    return json.dumps({"mode": mode, "filters": filters or {}}, sort_keys=True, ensure_ascii=False)


def entry_key(generation: str, scope: str, question: str) -> str:
    """THE cache key: the index generation, the scope (mode, brain, filters) and the normalised question.

    Everything that makes an answer another answer goes here and nowhere else (the place to add, say,
    the asker's permission groups)."""
    return f"{generation}\x1f{scope}\x1f{normalise_question(question)}"


def entry_checksum(key: str, generation: str, payload_json: str) -> str:
    """SHA-256 over an entry's key, generation and payload: an edited or moved payload no longer matches."""
    return hashlib.sha256(f"{key}\0{generation}\0{payload_json}".encode()).hexdigest()


# Checks a cached payload against the index it would be served from: None when it still holds, else why not.
Verifier = Callable[[dict[str, Any]], str | None]


def passage_verifier(store: Any) -> Verifier:
    """A verifier over a store with ``chunks_by_id``: every passage and citation must name a chunk the
    index holds, and every sentence of a passage must be that chunk's text (compression keeps whole
    sentences, or cuts the one it keeps)."""

    def verify(payload: dict[str, Any]) -> str | None:
        passages = payload.get("passages") or []
        ids = {p.get("chunk_id") for p in passages} | {
            c.get("chunk_id") for c in payload.get("citations") or []
        }
        current = store.chunks_by_id([i for i in ids if isinstance(i, str)])
        missing = sorted(str(i) for i in ids if i not in current)
        if missing:
            return f"it cites chunks the index no longer holds ({', '.join(missing[:3])})"
        for passage in passages:
            text = _squashed(current[passage["chunk_id"]].text)
            pieces = [_squashed(s).rstrip("…") for s in split_sentences(str(passage.get("text", "")))]
            if not all(piece in text for piece in pieces if piece):
                return f"passage [{passage.get('number')}] is not the text of chunk {passage['chunk_id']}"
        return None

    return verify


def _squashed(text: str) -> str:
    return "".join(text.split())


class CacheHit(BaseModel):
    kind: CacheKind
    question: str
    similarity: float
    payload: dict[str, Any]


class AnswerCache:
    """Exact + semantic answer cache bound to one index generation; thread-safe.

    The file is optional (``providers.cache_file``): damaged -> moved aside and rebuilt, unwritable ->
    read as it is, unusable -> off; a lookup then misses and a store does nothing. A hit is served only
    when its checksum matches and ``verify`` (when given) accepts it against the current index; an entry
    failing either is deleted (one warning per process).
    """

    def __init__(
        self,
        path: Path,
        *,
        generation: str,
        semantic_threshold: float = 0.95,
        max_entries: int = 5000,
        verify: Verifier | None = None,
    ) -> None:
        self.path = Path(path)
        self.generation = generation
        self.semantic_threshold = semantic_threshold
        self.max_entries = max_entries
        self.verify = verify
        self.file = CacheFile(self.path, _SCHEMA, "answer cache")
        self.file.write(lambda db: db.execute("DELETE FROM answers WHERE generation != ?", (generation,)))

    @property
    def usable(self) -> bool:
        return self.file.usable

    def lookup(
        self, question: str, mode: str, filters: dict[str, Any] | None, vector: np.ndarray | None = None
    ) -> CacheHit | None:
        """The exact entry, else (given a query vector) the most similar one above the threshold."""
        scope = scope_key(mode, filters)
        key = entry_key(self.generation, scope, question)

        def find(db: sqlite3.Connection) -> tuple[CacheHit, str] | None:
            row = db.execute(
                "SELECT question, payload, checksum FROM answers WHERE key = ? AND generation = ?",
                (key, self.generation),
            ).fetchone()
            if row is not None:
                return CacheHit(
                    kind="exact", question=row[0], similarity=1.0, payload=self._payload(key, row)
                ), key
            if vector is not None:
                return self._similar(db, scope, signature(question), vector)
            return None

        found = self.file.read(find, None)
        hit, hit_key = found if found is not None else (None, None)
        if hit is not None and hit.payload.get(_BAD) is not None:
            self._drop(hit_key, hit.payload[_BAD])
            hit = None
        elif hit is not None and self.verify is not None:
            problem = self.verify(hit.payload)
            if problem is not None:
                self._drop(hit_key, f"it no longer matches the index: {problem}")
                hit = None

        def count(db: sqlite3.Connection) -> None:
            if hit is not None:
                db.execute("UPDATE answers SET used = ? WHERE key = ?", (time.time(), hit_key))
            self._count(db, f"hits_{hit.kind}" if hit else "misses")

        self.file.write(count)
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
        key = entry_key(self.generation, scope, question)
        blob = _unit(vector).astype(np.float32).tobytes() if vector is not None else None
        body = json.dumps(payload, ensure_ascii=False, sort_keys=True)
        now = time.time()

        def put(db: sqlite3.Connection) -> None:
            db.execute(
                "INSERT OR REPLACE INTO answers VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    key,
                    self.generation,
                    scope,
                    question,
                    signature(question),
                    blob,
                    body,
                    entry_checksum(key, self.generation, body),
                    now,
                    now,
                ),
            )
            db.execute(
                "DELETE FROM answers WHERE key IN (SELECT key FROM answers ORDER BY used DESC LIMIT -1 OFFSET ?)",
                (self.max_entries,),
            )

        self.file.write(put)

    def stats(self) -> dict[str, int]:
        """Entries of the current generation and hit/miss counts since the file was created."""

        def read(db: sqlite3.Connection) -> tuple[int, dict[str, int]]:
            entries = db.execute("SELECT COUNT(*) FROM answers WHERE generation = ?", (self.generation,))
            return int(entries.fetchone()[0]), dict(db.execute("SELECT name, value FROM counters").fetchall())

        entries, counts = self.file.read(read, (0, {}))
        return {
            "entries": entries,
            "hits_exact": int(counts.get("hits_exact", 0)),
            "hits_semantic": int(counts.get("hits_semantic", 0)),
            "misses": int(counts.get("misses", 0)),
        }

    def close(self) -> None:
        self.file.close()

    def _payload(self, key: str, row: tuple) -> dict[str, Any]:
        """The stored payload, or a marker saying why it may not be served."""
        body, checksum = row[1], row[2]
        if checksum != entry_checksum(key, self.generation, body):
            return {_BAD: "its checksum does not match (the entry was changed after it was stored)"}
        try:
            payload = json.loads(body)
        except ValueError:
            return {_BAD: "its payload is not JSON"}
        return payload if isinstance(payload, dict) else {_BAD: "its payload is not an object"}

    def _drop(self, key: str | None, why: str) -> None:
        warn_once(self.path, "entry", f"a cached answer in {self.path} was not served: {why}; it was deleted")
        self.file.write(lambda db: db.execute("DELETE FROM answers WHERE key = ?", (key,)))

    def _similar(
        self, db: sqlite3.Connection, scope: str, numbers: str, vector: np.ndarray
    ) -> tuple[CacheHit, str] | None:
        query = _unit(vector).astype(np.float32)
        rows = [
            row
            for row in db.execute(
                "SELECT key, question, vector, payload, checksum FROM answers"
                " WHERE generation = ? AND scope = ? AND signature = ? AND vector IS NOT NULL",
                (self.generation, scope, numbers),
            )
            if len(row[2]) == query.nbytes  # another embedder's vectors are never compared
        ]
        if not rows:
            return None
        similarities = np.stack([np.frombuffer(row[2], dtype=np.float32) for row in rows]) @ query
        best = int(np.argmax(similarities))
        if float(similarities[best]) < self.semantic_threshold:
            return None
        key, question, _vector, payload, checksum = rows[best]
        hit = CacheHit(
            kind="semantic",
            question=question,
            similarity=round(float(similarities[best]), 4),
            payload=self._payload(key, (question, payload, checksum)),
        )
        return hit, key

    @staticmethod
    def _count(db: sqlite3.Connection, name: str) -> None:
        db.execute(
            "INSERT INTO counters VALUES (?, 1) ON CONFLICT(name) DO UPDATE SET value = value + 1", (name,)
        )


_BAD = "__not_servable__"


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
