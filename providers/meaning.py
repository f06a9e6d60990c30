"""Similarity by meaning, in any language the embedder knows: a service of both brains.

Word overlap cannot see that "混合检索怎么合并结果？" is answered by "Hybrid search ... merges the two
rankings with reciprocal rank fusion"; a multilingual sentence embedding can. The offline brain's roles
(judge, compressor, writer, verifier) take it as their second signal; the answerability gate that reads
either brain's verdict (providers/brain/answerability) and the check of an LLM's answer
(providers/brain/answer_check.py) use it too, so it lives beside the embedders, not inside the offline
rules. It receives the runtime's embedder (the one the index was built with, handed over in the
context) and answers only "how close is this text to that one". Passage vectors are cached per text,
so a sentence judged, chosen and then verified within one question is embedded once; query vectors are
the embedder's to cache.
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

    def embed_query(self, text: str) -> np.ndarray:
        """Remembered per text by the embedder itself, so Meaning keeps no query cache of its own."""
        ...


class Meaning:
    """Cosine similarity between a query and texts, with a bounded per-text (passage) vector cache."""

    def __init__(self, embedder: TextEmbedder, cache_size: int = 4096) -> None:
        self.embedder = embedder
        self.cache_size = cache_size
        self._texts: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    def _remember(self, text: str, vector: np.ndarray) -> None:
        self._texts[text] = vector
        self._texts.move_to_end(text)
        while len(self._texts) > self.cache_size:
            self._texts.popitem(last=False)

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
                    self._remember(text, vector)
        return np.vstack([found[t] for t in texts]) if texts else np.zeros((0, 1), np.float32)

    def similarity(self, query: str, texts: Sequence[str]) -> list[float]:
        """Cosine of the query with each text (texts embedded as passages), clipped to [0, 1]."""
        if not texts:
            return []
        query_vector = np.asarray(self.embedder.embed_query(query), dtype=np.float32)
        sims = self._text_vectors(list(texts)) @ query_vector
        return [float(min(1.0, max(0.0, s))) for s in sims]

    def pairwise(self, left: Sequence[str], right: Sequence[str]) -> list[list[float]]:
        """Cosine of every text of ``left`` with every text of ``right`` (all embedded as passages, so
        two sentences are compared alike), clipped to [0, 1]: a row per ``left`` text."""
        if not left or not right:
            return [[] for _ in left]
        sims = self._text_vectors(list(left)) @ self._text_vectors(list(right)).T
        return [[float(min(1.0, max(0.0, s))) for s in row] for row in sims]
