"""A small on-disk cache of passage embeddings, keyed by (model name, sha1 of the text).

The e5 reranker embeds ~10 passages/s on 2 cores; the same passages come back as candidates again and
again, so each one should be embedded once ever. SQLite gives atomic writes, concurrent readers (WAL)
and a single file that can sit next to the index. A fault of the file never fails a question: see
``providers.cache_file``.
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from providers.cache_file import CacheFile
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


def text_key(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8")).hexdigest()


class EmbeddingCache:
    """Vectors by (model, sha1(text)); ``path=None`` keeps them in memory for this process only.

    The file is optional (``providers.cache_file``): damaged -> moved aside and rebuilt, read-only ->
    read, full or unusable -> nothing stored; the caller then embeds what it does not find.
    """

    def __init__(self, path: Path | str | None = None) -> None:
        self.path = Path(path) if path is not None else None
        self.file = CacheFile(self.path, _SCHEMA, "embedding cache")

    def get_many(self, model: str, texts: Sequence[str]) -> dict[str, np.ndarray]:
        """Cached vectors for the texts that have one, by text key."""
        keys = list(dict.fromkeys(text_key(t) for t in texts))

        def read(conn: sqlite3.Connection) -> dict[str, np.ndarray]:
            found: dict[str, np.ndarray] = {}
            for start in range(0, len(keys), _MAX_VARS):
                part = keys[start : start + _MAX_VARS]
                marks = ",".join("?" * len(part))
                rows = conn.execute(
                    f"SELECT key, dim, vec FROM embeddings WHERE model = ? AND key IN ({marks})",
                    [model, *part],
                ).fetchall()
                for key, dim, blob in rows:
                    if len(blob) == 4 * dim:  # a short blob is damage the pages' checks missed
                        found[key] = np.frombuffer(blob, dtype=np.float32, count=dim).copy()
            return found

        return self.file.read(read, {})

    def put_many(self, model: str, texts: Sequence[str], vectors: np.ndarray) -> None:
        if len(texts) != len(vectors):
            raise ValueError(f"{len(texts)} texts but {len(vectors)} vectors")
        rows = [
            (model, text_key(t), int(v.shape[0]), np.asarray(v, dtype=np.float32).tobytes())
            for t, v in zip(texts, vectors, strict=True)
        ]
        self.file.write(
            lambda conn: conn.executemany("INSERT OR REPLACE INTO embeddings VALUES (?, ?, ?, ?)", rows)
        )

    def count(self, model: str | None = None) -> int:
        if model is None:
            return int(
                self.file.read(lambda c: c.execute("SELECT COUNT(*) FROM embeddings").fetchone()[0], 0)
            )
        query = "SELECT COUNT(*) FROM embeddings WHERE model = ?"
        return int(self.file.read(lambda c: c.execute(query, (model,)).fetchone()[0], 0))

    def close(self) -> None:
        self.file.close()


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
