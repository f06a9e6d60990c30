"""Dense vector search with FAISS: exact inner product for small indexes, HNSW for large ones.

Vectors are L2-normalised, so inner product is cosine similarity. Positions in the FAISS index are
the docstore positions (0..n-1), which keeps the three stores aligned without an id map.

The HNSW graph keeps its vectors as float16 (``IndexHNSWSQ`` with ``QT_fp16``): half the memory of
float32 (768 instead of 1,536 bytes per 384-d vector, the bulk of a million-chunk index), while cosine
scores move by ~1e-4, far below what separates neighbours an approximate search finds anyway. The exact
index below the threshold stays float32, so small indexes score exactly.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path

import faiss
import numpy as np

# Below this many allowed positions a filtered search scores the allowed vectors directly: exact,
# and faster than walking an HNSW graph that rejects most of its neighbours.
_DIRECT_FILTER_LIMIT = 50_000
_SUBSET_BYTES = 256 << 20  # decoded vectors of filtered subsets kept for HNSW indexes
# Chosen at a million vectors (real embeddings of every shared set plus derived distractors): the
# smallest efSearch with recall@10 >= 0.95 against exact search both at 512-d (bench/recall_hnsw.py,
# 1,000 queries: 0.908 at 192, 0.950 at 384, 0.958 at 512) and on a 384-d index folder
# (bench/index_memory.py: 0.946 at 384, 0.953 at 512), for ~1.3 ms of CPU per query; docs/benchmarks.md.
DEFAULT_EF_SEARCH = 512


@dataclass(frozen=True)
class HnswParams:
    threshold: int = 200_000
    m: int = 32
    ef_construction: int = 80
    ef_search: int = DEFAULT_EF_SEARCH


class VectorIndex:
    def __init__(self, index: faiss.Index, ef_search: int = DEFAULT_EF_SEARCH) -> None:
        self.index = index
        self.ef_search = ef_search
        self.is_hnsw = isinstance(index, faiss.IndexHNSW)
        self._subsets: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        self._subset_lock = threading.Lock()
        if self.is_hnsw:
            faiss.downcast_index(index).hnsw.efSearch = ef_search

    @property
    def size(self) -> int:
        return int(self.index.ntotal)

    @property
    def dim(self) -> int:
        return int(self.index.d)

    @classmethod
    def build(cls, vectors: np.ndarray, dim: int, params: HnswParams | None = None) -> VectorIndex:
        params = params or HnswParams()
        vectors = np.ascontiguousarray(vectors, dtype=np.float32).reshape(-1, dim)
        if vectors.shape[0] >= params.threshold > 0:
            index = faiss.IndexHNSWSQ(
                dim, faiss.ScalarQuantizer.QT_fp16, params.m, faiss.METRIC_INNER_PRODUCT
            )
            index.hnsw.efConstruction = params.ef_construction
            index.train(vectors[:1])  # float16 needs no statistics; this only marks the index trained
        else:
            index = faiss.IndexFlatIP(dim)
        if vectors.shape[0]:
            index.add(vectors)
        return cls(index, params.ef_search)

    def search(
        self, query: np.ndarray, k: int, allowed: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Top-k positions and cosine scores; ``allowed`` is a boolean mask over positions."""
        if self.size == 0 or k <= 0:
            return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.float32)
        q = np.ascontiguousarray(query, dtype=np.float32).reshape(1, -1)
        if allowed is None:
            scores, ids = self.index.search(q, min(k, self.size))
            return _valid(ids[0], scores[0])
        positions = np.flatnonzero(allowed)
        if positions.size == 0:
            return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.float32)
        if positions.size <= _DIRECT_FILTER_LIMIT or not self.is_hnsw:
            vectors = self._subset(allowed, positions)
            scores = vectors @ q[0]
            top = np.argsort(-scores, kind="stable")[:k]
            return positions[top].astype(np.int64), scores[top].astype(np.float32)
        selector = faiss.IDSelectorBitmap(np.packbits(allowed, bitorder="little"))
        search_params = faiss.SearchParametersHNSW(sel=selector, efSearch=max(self.ef_search, k))
        scores, ids = self.index.search(q, min(k, self.size), params=search_params)
        return _valid(ids[0], scores[0])

    def _subset(self, allowed: np.ndarray, positions: np.ndarray) -> np.ndarray:
        """The allowed vectors as float32. For HNSW they are kept for the masks in use (the index caches
        its mask arrays, so one caller's group set is the same array every query), within a byte
        budget: decoding the float16 storage per query would cost more than the search it replaces."""
        if not self.is_hnsw:
            return self.index.reconstruct_batch(positions.astype(np.int64))
        with self._subset_lock:
            hit = self._subsets.get(id(allowed))
            if hit is not None and hit[0] is allowed:
                return hit[1]
        vectors = self.index.reconstruct_batch(positions.astype(np.int64))
        with self._subset_lock:
            self._subsets[id(allowed)] = (allowed, vectors)
            while sum(v.nbytes for _, v in self._subsets.values()) > _SUBSET_BYTES and len(self._subsets) > 1:
                self._subsets.pop(next(iter(self._subsets)))
        return vectors

    def save(self, path: Path) -> None:
        faiss.write_index(self.index, str(path))

    @classmethod
    def load(cls, path: Path, ef_search: int = DEFAULT_EF_SEARCH) -> VectorIndex:
        return cls(faiss.read_index(str(path)), ef_search)


def _valid(ids: np.ndarray, scores: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    keep = ids >= 0
    return ids[keep].astype(np.int64), scores[keep].astype(np.float32)
