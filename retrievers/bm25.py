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
        counted: Sequence[bool] | None = None,
    ) -> BM25Index:
        """Weights for ``docs`` (token lists, in position order).

        ``counted``: which documents make the statistics (document count, document frequencies, mean
        length), read once ``docs`` is consumed (it may be filled while they are read); None: all. The
        others (summary chunks) are weighted with those statistics, so adding them moves no counted
        document's score.
        """
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
        counts_in = np.ones(n_docs, dtype=bool) if counted is None else np.asarray(counted, dtype=bool)
        if counts_in.shape != (n_docs,):
            raise ValueError(f"counted has {counts_in.size} flags for {n_docs} documents")
        if not counts_in.any():  # only summaries: they are the statistics
            counts_in = np.ones(n_docs, dtype=bool)
        avgdl = float(doc_len[counts_in].mean())
        df = np.bincount(rows[counts_in[cols]], minlength=n_terms).astype(np.float64)
        idf = okapi_idf(df, int(counts_in.sum()), epsilon, present=df > 0)
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

    def _postings(self, query_tokens: Sequence[str]) -> list[tuple[int, int]]:
        """(term row, times the term occurs in the query) for the query's indexed terms."""
        terms = ((self.vocab.get(token), count) for token, count in Counter(query_tokens).items())
        return [(term, count) for term, count in terms if term is not None]

    def scores(self, query_tokens: Sequence[str]) -> np.ndarray:
        """Score every document; repeated query terms count each time, as in rank-bm25."""
        return self._accumulate(self._postings(query_tokens))[0]

    def _accumulate(self, terms: list[tuple[int, int]]) -> tuple[np.ndarray, list[np.ndarray]]:
        """Every document's score, and the document rows each term touched."""
        out = np.zeros(self.n_docs, dtype=np.float32)
        indptr, indices, data = self.weights.indptr, self.weights.indices, self.weights.data
        touched = []
        for term, count in terms:
            start, end = indptr[term], indptr[term + 1]
            rows = indices[start:end]
            out[rows] += count * data[start:end]
            touched.append(rows)
        return out, touched

    def top_k(
        self, query_tokens: Sequence[str], k: int, allowed: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Positions and scores of the best ``k`` documents with a positive score, best score first
        (ties: lower position first).

        ``allowed`` is a boolean mask over documents (metadata filters). Only the documents the
        query's postings touched are ranked, never the whole score array: at a million chunks that
        skips a scan of every document per query.
        """
        terms = self._postings(query_tokens)
        if not terms or k <= 0:
            return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.float32)
        scores, touched = self._accumulate(terms)
        hits = touched[0] if len(touched) == 1 else np.concatenate(touched)
        if allowed is not None:
            hits = hits[allowed[hits]]
        values = scores[hits]
        keep = values > 0
        if not keep.all():
            hits, values = hits[keep], values[keep]
        # A document appears once per query term it holds, so the best k * terms entries hold the
        # best k distinct documents (ties at the cut included: ties are broken by position below).
        depth = k * len(touched)
        if hits.size > depth:
            cut = np.partition(values, hits.size - depth)[hits.size - depth]
            chosen = values >= cut
            hits, values = hits[chosen], values[chosen]
        if len(touched) > 1:
            hits, first = np.unique(hits, return_index=True)
            values = values[first]
        order = np.lexsort((hits, -values))[:k]
        return hits[order].astype(np.int64), values[order]

    def holders(self, token: str, k: int, allowed: np.ndarray | None = None) -> np.ndarray:
        """Positions of at most ``k`` documents that hold ``token``, whatever its idf (``top_k`` keeps
        positive scores only, and a term in half the documents has idf 0): the posting list itself."""
        term = self.vocab.get(token)
        if term is None or k <= 0:
            return np.empty(0, dtype=np.int64)
        rows = self.weights.indices[self.weights.indptr[term] : self.weights.indptr[term + 1]]
        if allowed is not None:
            rows = rows[allowed[rows]]
        return rows[:k].astype(np.int64)

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


def okapi_idf(df: np.ndarray, n_docs: int, epsilon: float, present: np.ndarray | None = None) -> np.ndarray:
    """rank-bm25's BM25Okapi idf: negative values are replaced by epsilon times the mean idf.

    When that floor is not positive (the mean idf is <= 0: a one-document index) every term would
    score zero or less, so Lucene's idf, positive for every term, is used instead. ``present``: the
    terms whose idf makes the mean (those of the counted documents; default all).
    """
    idf = np.log(n_docs - df + 0.5) - np.log(df + 0.5)
    mean_of = idf if present is None else idf[present]
    if mean_of.size:
        floor = epsilon * float(mean_of.mean())
        if floor <= 0:
            return lucene_idf(df, n_docs)
        idf = np.where(idf < 0, floor, idf)
    return idf


def lucene_idf(df: np.ndarray, n_docs: int) -> np.ndarray:
    """Lucene's (and bm25s's) BM25 idf: ``log(1 + (N - df + 0.5) / (df + 0.5))``, always positive."""
    return np.log1p((n_docs - df + 0.5) / (df + 0.5))
