"""Similarity by meaning, in any language the embedder knows: the offline brain's second signal.

Word overlap cannot see that "混合检索怎么合并结果？" is answered by "Hybrid search ... merges the two
rankings with reciprocal rank fusion"; a multilingual sentence embedding can. The offline brain receives
the runtime's embedder (the one the index was built with, handed over in the context) and asks only
"how close is this text to that one". Vectors are cached per text, so a sentence judged, chosen and then
verified within one question is embedded once.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import Protocol

import numpy as np


class TextEmbedder(Protocol):
    """The part of ``providers.embeddings.Embedder`` this module needs: unit-norm rows."""

    def embed_documents(self, texts: list[str]) -> np.ndarray: ...

    def embed_query(self, text: str) -> np.ndarray: ...


class Meaning:
    """Cosine similarity between a query and texts, with a bounded per-text vector cache."""

    def __init__(self, embedder: TextEmbedder, cache_size: int = 4096) -> None:
        self.embedder = embedder
        self.cache_size = cache_size
        self._queries: OrderedDict[str, np.ndarray] = OrderedDict()
        self._texts: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    def _remember(self, store: OrderedDict[str, np.ndarray], key: str, vector: np.ndarray) -> None:
        store[key] = vector
        store.move_to_end(key)
        while len(store) > self.cache_size:
            store.popitem(last=False)

    def _query_vector(self, text: str) -> np.ndarray:
        with self._lock:
            cached = self._queries.get(text)
        if cached is None:
            cached = np.asarray(self.embedder.embed_query(text), dtype=np.float32)
            with self._lock:
                self._remember(self._queries, text, cached)
        return cached

    def _text_vectors(self, texts: Sequence[str]) -> np.ndarray:
        """Vectors of ``texts`` in order; the cache may evict while a long list is added, so the
        answer is assembled from what this call found or embedded, never re-read from the cache."""
        with self._lock:
            found = {t: self._texts[t] for t in dict.fromkeys(texts) if t in self._texts}
        missing = [t for t in dict.fromkeys(texts) if t not in found]
        if missing:
            vectors = np.asarray(self.embedder.embed_documents(missing), dtype=np.float32)
            found.update(zip(missing, vectors, strict=True))
            with self._lock:
                for text, vector in zip(missing, vectors, strict=True):
                    self._remember(self._texts, text, vector)
        return np.vstack([found[t] for t in texts]) if texts else np.zeros((0, 1), np.float32)

    def similarity(self, query: str, texts: Sequence[str]) -> list[float]:
        """Cosine of the query with each text (texts embedded as passages), clipped to [0, 1]."""
        if not texts:
            return []
        sims = self._text_vectors(list(texts)) @ self._query_vector(query)
        return [float(min(1.0, max(0.0, s))) for s in sims]
