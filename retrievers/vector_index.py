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
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import faiss
import numpy as np

# Below this many allowed positions a filtered search scores the allowed vectors directly: exact,
# and faster than walking an HNSW graph that rejects most of its neighbours.
_DIRECT_FILTER_LIMIT = 50_000
_SELECTORS = 64  # packed bitmaps kept, one per mask in use (a mask is one caller's group set)
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
        self._selectors: dict[int, tuple[np.ndarray, int, faiss.IDSelectorBitmap]] = {}
        self._selector_lock = threading.Lock()
        # An HNSW index keeps its vectors in a flat float16 store: a filtered search scans that store
        # (only the allowed rows are scored) instead of decoding a copy of them.
        self._flat = faiss.downcast_index(index.storage) if self.is_hnsw else index
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
        """Top-k positions and cosine scores; ``allowed`` is a boolean mask over positions.

        One query runs on one thread: FAISS's OpenMP team gains nothing on a single query, and on a
        busy machine its barrier waits for a core (tens of milliseconds on a loaded 2-core box)."""
        if self.size == 0 or k <= 0:
            return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.float32)
        q = np.ascontiguousarray(query, dtype=np.float32).reshape(1, -1)
        if allowed is None:
            index, params, count = self.index, None, self.size
        else:
            count, selector = self._selector(allowed)
            if count == 0:
                return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.float32)
            if count <= _DIRECT_FILTER_LIMIT or not self.is_hnsw:
                # exact over the allowed rows only: the flat index, or the HNSW graph's own vector store
                index, params = self._flat, faiss.SearchParameters(sel=selector)
            else:
                index, params = (
                    self.index,
                    faiss.SearchParametersHNSW(sel=selector, efSearch=max(self.ef_search, k)),
                )
        return _ties_by_position(index, q, min(k, count), count, params)

    def _selector(self, allowed: np.ndarray) -> tuple[int, faiss.IDSelectorBitmap]:
        """(allowed count, FAISS bitmap selector) of a mask, kept per mask array: the index caches its
        masks per filter, so one caller's group set is the same array every query."""
        with self._selector_lock:
            hit = self._selectors.get(id(allowed))
            if hit is not None and hit[0] is allowed:
                return hit[1], hit[2]
        bits = np.packbits(allowed, bitorder="little")
        entry = (allowed, int(np.count_nonzero(allowed)), faiss.IDSelectorBitmap(bits))
        with self._selector_lock:
            if len(self._selectors) >= _SELECTORS:
                self._selectors.pop(next(iter(self._selectors)))
            self._selectors[id(allowed)] = entry
        return entry[1], entry[2]

    def save(self, path: Path) -> None:
        faiss.write_index(self.index, str(path))

    @classmethod
    def load(cls, path: Path, ef_search: int = DEFAULT_EF_SEARCH) -> VectorIndex:
        return cls(faiss.read_index(str(path)), ef_search)


@contextmanager
def _one_thread() -> Iterator[None]:
    """FAISS calls on this thread use one OpenMP thread (the setting is per calling thread)."""
    previous = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(1)
    try:
        yield
    finally:
        faiss.omp_set_num_threads(previous)


def _ties_by_position(
    index: faiss.Index, q: np.ndarray, k: int, count: int, params: faiss.SearchParameters | None
) -> tuple[np.ndarray, np.ndarray]:
    """The best ``k`` of ``count`` searchable rows, best score first and equal scores by position, as
    the exact search (and BM25's ``top_k``) orders them. FAISS's heap returns equal scores (copies of
    one passage, a boilerplate paragraph on every page) in no set order and keeps an arbitrary few of
    those tied at the cut, so the search asks for more until the cut falls between two scores."""
    fetch = min(count, k + 1)  # one more than asked: is the cut between two scores?
    while True:
        with _one_thread():
            scores, ids = index.search(q, fetch) if params is None else index.search(q, fetch, params=params)
        found, values = _valid(ids[0], scores[0])
        if found.size <= k or fetch >= count or found.size < fetch or values[-1] < values[k - 1]:
            break
        fetch = min(count, fetch * 2)
    order = np.lexsort((found, -values))[:k]
    return found[order], values[order]


def _valid(ids: np.ndarray, scores: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    keep = ids >= 0
    return ids[keep].astype(np.int64), scores[keep].astype(np.float32)
