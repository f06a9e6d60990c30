"""The dense search paths return what exact search returns (issue 23's bitmap-selector path, docs21).

A filtered search goes through a FAISS ID selector instead of the exact scoring of the allowed rows it
replaced; unfiltered search is FAISS's own. Every path must give the exact ranking: best score first,
equal scores (copies of one passage: the same paragraph on an English and a Chinese page, a licence
footer on every page) by position, and the tied rows at the cut the lowest positions, as BM25's
``top_k`` does. Real FAISS indexes (flat and HNSW's float16 store), no mocks.
"""

from __future__ import annotations

import numpy as np
import pytest

from retrievers.vector_index import HnswParams, VectorIndex

DIM = 32


@pytest.fixture(scope="module")
def vectors() -> np.ndarray:
    """400 distinct unit vectors, each stored three times at scattered positions (many exact ties,
    some falling at the cut of k)."""
    rng = np.random.default_rng(7)
    base = rng.standard_normal((400, DIM)).astype(np.float32)
    base /= np.linalg.norm(base, axis=1, keepdims=True)
    copies = np.concatenate([base, base[::-1], base[rng.permutation(400)]])
    return np.ascontiguousarray(copies)


def exact(matrix: np.ndarray, query: np.ndarray, k: int, allowed: np.ndarray | None) -> np.ndarray:
    """Score every allowed row and sort: best first, ties by position (what the selector path replaced)."""
    scores = matrix @ query
    rows = np.flatnonzero(allowed) if allowed is not None else np.arange(len(matrix))
    return rows[np.lexsort((rows, -scores[rows]))][:k]


def masks(n: int) -> list[np.ndarray | None]:
    rng = np.random.default_rng(3)
    return [None, np.ones(n, dtype=bool), rng.random(n) < 0.3, np.arange(n) % 7 == 0]


@pytest.mark.parametrize("hnsw", [False, True], ids=["flat", "hnsw-store"])
def test_every_search_path_ranks_as_exact_search_with_ties_by_position(vectors, hnsw):
    """English and Chinese pages often hold the same paragraph twice: equal scores, ordered by position."""
    index = VectorIndex.build(vectors, DIM, HnswParams(threshold=100 if hnsw else 0))
    assert index.is_hnsw == hnsw
    # the rows as the index scores them (HNSW keeps float16: compare against the decoded store)
    stored = index._flat.reconstruct_n(0, index.size) if hnsw else vectors
    for query in vectors[[0, 5, 17, 399]]:
        for allowed in masks(len(vectors)):
            if hnsw and allowed is None:
                continue  # the unfiltered HNSW walk is approximate by design (recall tested elsewhere)
            for k in (1, 2, 3, 10, 50):
                found, scores = index.search(query, k, allowed)
                expected = exact(stored, query, k, allowed)
                assert found.tolist() == expected.tolist(), (k, None if allowed is None else allowed.sum())
                np.testing.assert_allclose(scores, stored[expected] @ query, atol=1e-5)


def test_filtered_search_is_the_unfiltered_ranking_restricted_to_the_allowed_rows(vectors):
    """The selector path and the plain search agree row for row: filtering never reorders."""
    index = VectorIndex.build(vectors, DIM, HnswParams(threshold=0))
    everything, _ = index.search(vectors[42], len(vectors))
    for allowed in masks(len(vectors))[1:]:
        found, _ = index.search(vectors[42], 25, allowed)
        assert found.tolist() == [int(i) for i in everything if allowed[i]][:25]


def test_a_tie_at_the_cut_keeps_the_lowest_positions():
    """Five copies of the best passage, k = 2: the first two positions, whichever FAISS's heap keeps."""
    rng = np.random.default_rng(0)
    other = rng.standard_normal((60, DIM)).astype(np.float32) * 0.1
    best = np.ones(DIM, dtype=np.float32)
    rows = np.concatenate([other[:20], best[None], other[20:40], np.repeat(best[None], 4, 0), other[40:]])
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    index = VectorIndex.build(rows, DIM, HnswParams(threshold=0))
    copies = [20, 41, 42, 43, 44]
    assert index.search(rows[20], 2)[0].tolist() == copies[:2]
    allowed = np.ones(len(rows), dtype=bool)
    allowed[20] = False
    assert index.search(rows[20], 3, allowed)[0].tolist() == copies[1:4]
