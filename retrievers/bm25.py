"""BM25 (Okapi) as a sparse term-by-document weight matrix.

Scores equal rank-bm25's ``BM25Okapi`` on the same tokens (same idf with the epsilon floor) wherever
that idf is positive, but a query touches only the postings of its own terms instead of scanning every
document per term in Python, which is what makes keyword search fast at a million chunks. In a tiny
index (one document, or two sharing every term) Okapi's idf is negative for every term and rank-bm25
finds nothing; there Lucene's idf, ``log(1 + (N - df + 0.5) / (df + 0.5))``, always positive, is used.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np
from scipy import sparse

_BLOCK = 50_000


class BM25Index:
    """Precomputed BM25 weights ``W[term, doc]``; a query's score is the sum of its terms' rows."""

    def __init__(
        self,
        weights: sparse.csr_matrix,
        vocab: dict[str, int],
        *,
        k1: float,
        b: float,
        avgdl: float,
    ) -> None:
        self.weights = weights
        self.vocab = vocab
        self.k1 = k1
        self.b = b
        self.avgdl = avgdl

    @property
    def n_docs(self) -> int:
        return int(self.weights.shape[1])

    @classmethod
    def build(
        cls,
        docs: Iterable[Sequence[str]],
        *,
        k1: float = 1.2,
        b: float = 0.75,
        epsilon: float = 0.25,
    ) -> BM25Index:
        vocab: dict[str, int] = {}
        # Postings go to int32 numpy blocks every BLOCK documents: Python lists of ints would
        # take several GB at a million chunks.
        blocks: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        term_ids: list[int] = []
        doc_ids: list[int] = []
        counts: list[int] = []
        lengths: list[int] = []

        def flush() -> None:
            if term_ids:
                blocks.append(
                    (
                        np.asarray(term_ids, dtype=np.int32),
                        np.asarray(doc_ids, dtype=np.int32),
                        np.asarray(counts, dtype=np.int32),
                    )
                )
                term_ids.clear()
                doc_ids.clear()
                counts.clear()

        for doc_index, tokens in enumerate(docs):
            lengths.append(len(tokens))
            for token, count in Counter(tokens).items():
                term_ids.append(vocab.setdefault(token, len(vocab)))
                doc_ids.append(doc_index)
                counts.append(count)
            if doc_index % _BLOCK == _BLOCK - 1:
                flush()
        flush()
        n_docs = len(lengths)
        n_terms = len(vocab)
        if n_docs == 0:
            return cls(sparse.csr_matrix((0, 0), dtype=np.float32), {}, k1=k1, b=b, avgdl=0.0)
        rows = np.concatenate([b[0] for b in blocks])
        cols = np.concatenate([b[1] for b in blocks])
        tf = np.concatenate([b[2] for b in blocks]).astype(np.float32)
        blocks.clear()
        doc_len = np.asarray(lengths, dtype=np.float64)
        avgdl = float(doc_len.mean()) if n_docs else 0.0
        df = np.bincount(rows, minlength=n_terms).astype(np.float64)
        idf = okapi_idf(df, n_docs, epsilon)
        # float32 in place: the weights are stored as float32 anyway
        norm = (k1 * (1.0 - b + b * doc_len / (avgdl or 1.0))).astype(np.float32)[cols]
        data = tf * np.float32(k1 + 1.0)
        norm += tf
        data /= norm
        del norm, tf
        data *= idf.astype(np.float32)[rows]
        matrix = sparse.csr_matrix((data, (rows, cols)), shape=(n_terms, n_docs), dtype=np.float32)
        matrix.sort_indices()
        return cls(matrix, vocab, k1=k1, b=b, avgdl=avgdl)

    def scores(self, query_tokens: Sequence[str]) -> np.ndarray:
        """Score every document; repeated query terms count each time, as in rank-bm25."""
        out = np.zeros(self.n_docs, dtype=np.float32)
        indptr, indices, data = self.weights.indptr, self.weights.indices, self.weights.data
        for token, count in Counter(query_tokens).items():
            term = self.vocab.get(token)
            if term is None:
                continue
            start, end = indptr[term], indptr[term + 1]
            out[indices[start:end]] += count * data[start:end]
        return out

    def top_k(
        self, query_tokens: Sequence[str], k: int, allowed: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Positions and scores of the best ``k`` documents with a positive score.

        ``allowed`` is a boolean mask over documents (metadata filters).
        """
        scores = self.scores(query_tokens)
        if allowed is not None:
            scores = np.where(allowed, scores, 0.0)
        hits = np.flatnonzero(scores > 0)
        if hits.size == 0 or k <= 0:
            return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.float32)
        if hits.size > k:
            part = np.argpartition(-scores[hits], k - 1)[:k]
            hits = hits[part]
        order = np.lexsort((hits, -scores[hits]))
        hits = hits[order]
        return hits.astype(np.int64), scores[hits]

    # --- persistence (numpy arrays and JSON only; never pickle) ---------------------------------
    def save(self, folder: Path) -> list[str]:
        folder.mkdir(parents=True, exist_ok=True)
        np.savez(
            folder / "bm25.npz",
            data=self.weights.data,
            indices=self.weights.indices,
            indptr=self.weights.indptr,
            shape=np.asarray(self.weights.shape, dtype=np.int64),
        )
        terms = [""] * len(self.vocab)
        for term, index in self.vocab.items():
            terms[index] = term
        meta = {"k1": self.k1, "b": self.b, "avgdl": self.avgdl, "terms": terms}
        (folder / "bm25_vocab.json").write_text(json.dumps(meta, ensure_ascii=False), encoding="utf-8")
        return ["bm25.npz", "bm25_vocab.json"]

    @classmethod
    def load(cls, folder: Path) -> BM25Index:
        with np.load(folder / "bm25.npz", allow_pickle=False) as arrays:
            shape = tuple(int(x) for x in arrays["shape"])
            matrix = sparse.csr_matrix(
                (arrays["data"], arrays["indices"], arrays["indptr"]), shape=shape, dtype=np.float32
            )
        meta = json.loads((folder / "bm25_vocab.json").read_text(encoding="utf-8"))
        vocab = {term: index for index, term in enumerate(meta["terms"])}
        if len(vocab) != shape[0]:
            raise ValueError("BM25 vocabulary does not match the weight matrix")
        return cls(matrix, vocab, k1=meta["k1"], b=meta["b"], avgdl=meta["avgdl"])


def okapi_idf(df: np.ndarray, n_docs: int, epsilon: float) -> np.ndarray:
    """rank-bm25's BM25Okapi idf: negative values are replaced by epsilon times the mean idf.

    When that floor is not positive (the mean idf is <= 0: a one-document index) every term would
    score zero or less, so Lucene's idf, positive for every term, is used instead.
    """
    idf = np.log(n_docs - df + 0.5) - np.log(df + 0.5)
    if idf.size:
        floor = epsilon * float(idf.mean())
        if floor <= 0:
            return lucene_idf(df, n_docs)
        idf = np.where(idf < 0, floor, idf)
    return idf


def lucene_idf(df: np.ndarray, n_docs: int) -> np.ndarray:
    """Lucene's (and bm25s's) BM25 idf: ``log(1 + (N - df + 0.5) / (df + 0.5))``, always positive."""
    return np.log1p((n_docs - df + 0.5) / (df + 0.5))
