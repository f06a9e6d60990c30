"""A small on-disk cache of passage embeddings, keyed by (model name, sha1 of the text).

The e5 reranker embeds ~10 passages/s on 2 cores; the same passages come back as candidates again and
again, so each one should be embedded once ever. SQLite gives atomic writes, concurrent readers (WAL)
and a single file that can sit next to the index.
"""

from __future__ import annotations

import hashlib
import sqlite3
import threading
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from providers.embeddings import Embedder

_SCHEMA = """
CREATE TABLE IF NOT EXISTS embeddings (
    model TEXT NOT NULL,
    key   TEXT NOT NULL,
    dim   INTEGER NOT NULL,
    vec   BLOB NOT NULL,
    PRIMARY KEY (model, key)
) WITHOUT ROWID
"""
_MAX_VARS = 500  # stay well below SQLite's bound-parameter limit


class EmbeddingCacheError(RuntimeError):
    """The cache file cannot be used; the message names it and says how to recover."""


def _unusable(target: str, exc: sqlite3.Error) -> EmbeddingCacheError:
    return EmbeddingCacheError(
        f"the embedding cache {target} cannot be used ({exc}); delete that file: "
        "it only saves time and is rebuilt automatically"
    )


def text_key(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8")).hexdigest()


class EmbeddingCache:
    """Vectors by (model, sha1(text)); ``path=None`` keeps them in memory for this process only."""

    def __init__(self, path: Path | str | None = None) -> None:
        self.path = Path(path) if path is not None else None
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        target = str(self.path) if self.path is not None else ":memory:"
        try:
            self._conn = sqlite3.connect(target, check_same_thread=False, timeout=30.0)
            if self.path is not None:
                self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute(_SCHEMA)
            self._conn.commit()
        except sqlite3.Error as exc:
            raise _unusable(target, exc) from None
        self._target = target
        self._lock = threading.Lock()

    def get_many(self, model: str, texts: Sequence[str]) -> dict[str, np.ndarray]:
        """Cached vectors for the texts that have one, by text key."""
        keys = list(dict.fromkeys(text_key(t) for t in texts))
        found: dict[str, np.ndarray] = {}
        with self._lock:
            for start in range(0, len(keys), _MAX_VARS):
                part = keys[start : start + _MAX_VARS]
                marks = ",".join("?" * len(part))
                try:
                    rows = self._conn.execute(
                        f"SELECT key, dim, vec FROM embeddings WHERE model = ? AND key IN ({marks})",
                        [model, *part],
                    ).fetchall()
                except sqlite3.DatabaseError as exc:  # damage found only when its pages are read
                    raise _unusable(self._target, exc) from None
                for key, dim, blob in rows:
                    found[key] = np.frombuffer(blob, dtype=np.float32, count=dim).copy()
        return found

    def put_many(self, model: str, texts: Sequence[str], vectors: np.ndarray) -> None:
        if len(texts) != len(vectors):
            raise ValueError(f"{len(texts)} texts but {len(vectors)} vectors")
        rows = [
            (model, text_key(t), int(v.shape[0]), np.asarray(v, dtype=np.float32).tobytes())
            for t, v in zip(texts, vectors, strict=True)
        ]
        with self._lock:
            try:
                self._conn.executemany("INSERT OR REPLACE INTO embeddings VALUES (?, ?, ?, ?)", rows)
                self._conn.commit()
            except sqlite3.DatabaseError as exc:
                self._conn.rollback()
                raise _unusable(self._target, exc) from None

    def count(self, model: str | None = None) -> int:
        with self._lock:
            if model is None:
                return int(self._conn.execute("SELECT COUNT(*) FROM embeddings").fetchone()[0])
            query = "SELECT COUNT(*) FROM embeddings WHERE model = ?"
            return int(self._conn.execute(query, (model,)).fetchone()[0])

    def close(self) -> None:
        with self._lock:
            self._conn.close()


class CachedEmbedder:
    """Wrap an embedder so documents already seen are read from the cache, never re-embedded.

    Query vectors are not stored here: the inner embedder keeps them in memory (``embed_query``), the
    one query-vector cache of the process. Uncached texts are
    sorted by ``size`` (a model pads a batch to its longest text), embedded ``batch_size`` at a time
    and stored after each batch, so an interrupted run keeps its progress and Ctrl-C (delivered between
    native calls) is never held up by more than one batch.
    """

    WRITE_BATCH = 64

    def __init__(
        self,
        inner: Embedder,
        cache: EmbeddingCache,
        *,
        batch_size: int = WRITE_BATCH,
        size: Callable[[str], int] = len,
    ) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1 (got {batch_size})")
        self.inner = inner
        self.cache = cache
        # An embedder whose vectors depend on how it runs names them apart (e5's int8 graph).
        self.name = getattr(inner, "vector_name", inner.name)
        self.batch_size = batch_size
        self.size = size
        self.misses = 0  # passages actually embedded by this wrapper, for tests and benchmarks

    @property
    def dim(self) -> int:
        return self.inner.dim

    def embed_documents(
        self, texts: list[str], progress: Callable[[int, int], None] | None = None
    ) -> np.ndarray:
        """Rows for ``texts``; ``progress(done, total)`` is called before and after each batch to embed."""
        texts = list(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        cached = self.cache.get_many(self.name, texts)
        # Texts of like length share a batch: a batch is padded to its longest text.
        todo = sorted(dict.fromkeys(t for t in texts if text_key(t) not in cached), key=self.size)
        if progress is not None and todo:
            progress(0, len(todo))
        for start in range(0, len(todo), self.batch_size):
            batch = todo[start : start + self.batch_size]
            fresh = self.inner.embed_documents(batch)
            self.cache.put_many(self.name, batch, fresh)
            cached.update(zip((text_key(t) for t in batch), fresh, strict=True))
            self.misses += len(batch)
            if progress is not None:
                progress(start + len(batch), len(todo))
        return np.vstack([cached[text_key(t)] for t in texts]).astype(np.float32, copy=False)

    def embed_query(self, text: str) -> np.ndarray:
        return self.inner.embed_query(text)
