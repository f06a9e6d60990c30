"""Retrieval engine speed and memory at 100k and 1M chunks, side by side with the seed-style baseline.

Not a test: prints Markdown tables that docs/benchmarks.md quotes.

Ours: ``retrievers.bm25.BM25Index`` (sparse term x doc weights) + ``retrievers.vector_index.VectorIndex``
(exact IndexFlatIP below the HNSW threshold, HNSW above it). Hybrid asks each side for ``--candidates``
(50) and keeps the fused top 10, timed three ways:

- floor: the two engine calls only, ids out (dense scan or graph walk + BM25 postings); nothing can be
  faster than this without changing an engine;
- dict RRF on ids: the engines plus a Python dict RRF on raw positions (weights 1, k 60);
- full path: ``retrievers.hybrid.HybridRetriever.search`` over a real ``Index`` (SQLite docstore of the
  synthetic chunks), default fusion weights, convex and RRF: fusion on positions, then only the final 10
  chunks fetched and turned into ``ScoredChunk``s. Embedding and tokenising the query are not included
  (vectors and tokens are precomputed), so it compares with the floor; the "x floor" column is the ratio.

Baseline: ``rank_bm25.BM25Okapi.get_scores`` + argsort, ``faiss.IndexFlatIP`` and the same dict RRF.

Corpora are synthetic: Zipfian draws from a vocabulary (English: generated pseudo-words; Chinese: jieba's
own dictionary with its frequencies), 60-120 tokens per chunk, already tokenised, so the figures measure
the engine, not the tokenizer; the tokenizer's throughput on real text is measured separately. Vectors
are random unit vectors (384-d), the hardest case for HNSW. Queries: 2-6 terms drawn with the same
frequencies, skipping the most frequent 50 words (the real tokenizer drops stopwords).

Building uses ``--build-threads`` (2) FAISS threads; every query is timed on one thread. A built HNSW
graph is cached under ``--cache-dir`` so a rerun does not rebuild it (its first build time is kept).

    python bench/retrieval.py --sizes 100000,1000000 --langs en,zh --queries 200
"""

from __future__ import annotations

import os

os.environ["OMP_NUM_THREADS"] = "1"
os.environ["MKL_NUM_THREADS"] = "1"
os.environ["OPENBLAS_NUM_THREADS"] = "1"
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import argparse
import gc
import json
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import faiss
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from config import Settings
from core.chunks import Chunk
from retrievers.bm25 import BM25Index
from retrievers.docstore import DocStore
from retrievers.fusion import Ranking
from retrievers.hybrid import HybridRetriever
from retrievers.index import Index
from retrievers.vector_index import HnswParams, VectorIndex

TOP_K = 10
RRF_K = 60
SKIP_TOP_WORDS = 50
EN_ONSETS = [
    *"bcdfghjklmnprstvwz",
    "br",
    "ch",
    "cl",
    "dr",
    "fl",
    "gr",
    "pl",
    "pr",
    "sh",
    "st",
    "th",
    "tr",
    "",
]
EN_VOWELS = ["a", "e", "i", "o", "u", "ai", "ea", "ou", "io"]
EN_CODAS = ["", "", "", "n", "r", "s", "t", "l", "m", "nd", "st", "ng"]
CJK_RANGE = ("\u4e00", "\u9fff")


# --- memory --------------------------------------------------------------------------------------------
def _status_kb(field_name: str) -> int:
    with open("/proc/self/status", encoding="ascii") as handle:
        for line in handle:
            if line.startswith(field_name + ":"):
                return int(line.split()[1])
    return 0


def rss_mb() -> float:
    return _status_kb("VmRSS") / 1024


def peak_mb() -> float:
    return _status_kb("VmHWM") / 1024


def reset_peak() -> None:
    """Linux resets VmHWM to the current RSS when "5" is written to clear_refs."""
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as handle:
            handle.write("5")
    except OSError:
        pass


def available_mb() -> float:
    with open("/proc/meminfo", encoding="ascii") as handle:
        for line in handle:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) / 1024
    return 0.0


@dataclass
class Build:
    seconds: float
    rss_delta_mb: float
    peak_extra_mb: float
    index_mb: float | None = None
    note: str = ""
    cpu_seconds: float | None = None  # all threads of this process; other jobs on the box do not count


def measured_build(make: Callable[..., object], *args: object) -> tuple[Any, Build]:
    gc.collect()
    before = rss_mb()
    reset_peak()
    start, cpu_start = time.perf_counter(), time.process_time()
    built = make(*args)
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu_start
    gc.collect()
    return built, Build(seconds, rss_mb() - before, peak_mb() - before, cpu_seconds=cpu)


# --- synthetic data ------------------------------------------------------------------------------------
@dataclass
class Vocabulary:
    words: np.ndarray  # object array of str, most frequent first
    probs: np.ndarray

    @property
    def cumulative(self) -> np.ndarray:
        return np.cumsum(self.probs)


def english_vocabulary(size: int, rng: np.random.Generator) -> Vocabulary:
    """Pronounceable pseudo-words; shorter ones get the frequent ranks (Zipf's law of abbreviation)."""
    words: set[str] = set()
    while len(words) < size:
        syllables = rng.integers(1, 5)
        words.add(
            "".join(
                EN_ONSETS[rng.integers(len(EN_ONSETS))]
                + EN_VOWELS[rng.integers(len(EN_VOWELS))]
                + EN_CODAS[rng.integers(len(EN_CODAS))]
                for _ in range(syllables)
            )
        )
    ordered = sorted(words, key=lambda w: (len(w), w))
    order = np.argsort(np.array([len(w) for w in ordered]) + rng.random(len(ordered)), kind="stable")
    ranked = [ordered[i] for i in order]
    probs = 1.0 / np.arange(1, size + 1, dtype=np.float64)
    return Vocabulary(np.array(ranked, dtype=object), probs / probs.sum())


def chinese_vocabulary(size: int) -> Vocabulary:
    """The most frequent all-Chinese words of jieba's dictionary, drawn with its own frequencies."""
    import jieba

    entries: list[tuple[int, str]] = []
    with open(Path(jieba.__file__).parent / "dict.txt", encoding="utf-8") as handle:
        for line in handle:
            parts = line.split()
            if len(parts) >= 2 and all(CJK_RANGE[0] <= ch <= CJK_RANGE[1] for ch in parts[0]):
                entries.append((int(parts[1]), parts[0]))
    entries.sort(key=lambda e: (-e[0], e[1]))
    entries = entries[:size]
    freqs = np.array([f for f, _ in entries], dtype=np.float64)
    return Vocabulary(np.array([w for _, w in entries], dtype=object), freqs / freqs.sum())


def make_vocabulary(lang: str, size: int, seed: int) -> Vocabulary:
    if lang == "en":
        return english_vocabulary(size, np.random.default_rng(seed))
    if lang == "zh":
        return chinese_vocabulary(size)
    raise ValueError(f"unknown language {lang!r}; use en or zh")


def make_corpus(
    vocab: Vocabulary, n: int, rng: np.random.Generator, lengths: tuple[int, int] = (60, 120)
) -> list[list[str]]:
    """Token lists (what splitting a space-joined chunk would give), generated in blocks."""
    cumulative = vocab.cumulative
    last = len(vocab.words) - 1
    sizes = rng.integers(lengths[0], lengths[1] + 1, size=n)
    docs: list[list[str]] = []
    block = 100_000
    for start in range(0, n, block):
        part = sizes[start : start + block]
        ids = np.minimum(np.searchsorted(cumulative, rng.random(int(part.sum())), side="right"), last)
        tokens = vocab.words[ids]
        bounds = np.concatenate([[0], np.cumsum(part)])
        docs.extend(tokens[bounds[i] : bounds[i + 1]].tolist() for i in range(len(part)))
    return docs


def make_queries(vocab: Vocabulary, n: int, rng: np.random.Generator) -> list[list[str]]:
    probs = vocab.probs[SKIP_TOP_WORDS:] / vocab.probs[SKIP_TOP_WORDS:].sum()
    words = vocab.words[SKIP_TOP_WORDS:]
    return [words[rng.choice(len(words), size=int(rng.integers(2, 7)), p=probs)].tolist() for _ in range(n)]


def random_unit(n: int, dim: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    out = np.empty((n, dim), dtype=np.float32)
    for start in range(0, n, 100_000):
        block = rng.standard_normal((min(100_000, n - start), dim), dtype=np.float32)
        block /= np.linalg.norm(block, axis=1, keepdims=True)
        out[start : start + len(block)] = block
    return out


# --- search paths --------------------------------------------------------------------------------------
def rrf(rankings: Sequence[np.ndarray], k: int = RRF_K) -> list[int]:
    """reciprocal_rank_fusion on raw positions: same score, same tie-break (best rank, then id)."""
    fused: dict[int, float] = {}
    best: dict[int, int] = {}
    for positions in rankings:
        for rank, pos in enumerate(positions.tolist(), start=1):
            fused[pos] = fused.get(pos, 0.0) + 1.0 / (k + rank)
            if rank < best.get(pos, 1 << 30):
                best[pos] = rank
    return sorted(fused, key=lambda p: (-fused[p], best[p], p))


def baseline_top(scores: np.ndarray, k: int) -> np.ndarray:
    """The seed's way: argsort every score, keep the k best positive ones."""
    order = np.argsort(scores)[::-1][:k]
    return order[scores[order] > 0]


def latencies(fn: Callable[[int], object], n: int, warmup: int = 5) -> tuple[np.ndarray, np.ndarray]:
    """Wall and thread-CPU milliseconds per call; CPU time is what other jobs on a shared box cannot inflate."""
    for i in range(min(warmup, n)):
        fn(i)
    wall, cpu = np.empty(n), np.empty(n)
    for i in range(n):
        c0, w0 = time.thread_time_ns(), time.perf_counter_ns()
        fn(i)
        wall[i], cpu[i] = (time.perf_counter_ns() - w0) / 1e6, (time.thread_time_ns() - c0) / 1e6
    return wall, cpu


@dataclass
class Latency:
    p50: float
    p95: float
    mean: float
    cpu_p50: float
    cpu_p95: float

    @classmethod
    def of(cls, measured: tuple[np.ndarray, np.ndarray]) -> Latency:
        wall, cpu = measured
        return cls(
            float(np.percentile(wall, 50)),
            float(np.percentile(wall, 95)),
            float(wall.mean()),
            float(np.percentile(cpu, 50)),
            float(np.percentile(cpu, 95)),
        )


@dataclass
class Run:
    size: int
    lang: str
    queries: int
    postings: int = 0
    vocab_terms: int = 0
    latency: dict[str, Latency] = field(default_factory=dict)
    builds: dict[str, Build] = field(default_factory=dict)
    agreement: dict[str, float] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def overlap(a: Sequence[np.ndarray | list[int]], b: Sequence[np.ndarray | list[int]]) -> float:
    hits = [len(set(np.asarray(x).tolist()) & set(np.asarray(y).tolist())) for x, y in zip(a, b, strict=True)]
    sizes = [max(1, len(np.asarray(y))) for y in b]
    return float(np.mean([h / s for h, s in zip(hits, sizes, strict=True)]))


def okapi_mb(okapi: Any) -> float:
    dicts = sum(sys.getsizeof(d) for d in okapi.doc_freqs) + sys.getsizeof(okapi.doc_freqs)
    lists = sys.getsizeof(okapi.doc_len) + sys.getsizeof(okapi.idf) + 24 * len(okapi.idf)
    return (dicts + lists) / 1e6


def faiss_mb(index: faiss.Index) -> float:
    return faiss.serialize_index(index).nbytes / 1e6


def bm25_mb(index: BM25Index) -> tuple[float, float]:
    w = index.weights
    matrix = (w.data.nbytes + w.indices.nbytes + w.indptr.nbytes) / 1e6
    vocab = (sys.getsizeof(index.vocab) + sum(sys.getsizeof(t) + 28 for t in index.vocab)) / 1e6
    return matrix, vocab


# --- the benchmark -------------------------------------------------------------------------------------
def build_hnsw(
    vectors: np.ndarray, params: HnswParams, cache_file: Path | None, threads: int
) -> tuple[VectorIndex, Build]:
    if cache_file is not None and cache_file.exists():
        meta = json.loads(cache_file.with_suffix(".json").read_text())
        index, build = measured_build(faiss.read_index, str(cache_file))
        build.seconds, build.cpu_seconds = meta["seconds"], meta.get("cpu_seconds")
        build.note = f"graph loaded from cache; build time of its first build ({meta['threads']} threads)"
        return VectorIndex(index, params.ef_search), build
    faiss.omp_set_num_threads(threads)
    vindex, build = measured_build(VectorIndex.build, vectors, vectors.shape[1], params)
    faiss.omp_set_num_threads(1)
    build.note = f"{threads} build threads"
    if cache_file is not None:
        cache_file.parent.mkdir(parents=True, exist_ok=True)
        vindex.save(cache_file)
        meta = {"seconds": build.seconds, "cpu_seconds": build.cpu_seconds, "threads": threads}
        cache_file.with_suffix(".json").write_text(json.dumps(meta))
    return vindex, build


def derived_vectors(
    size: int, args: argparse.Namespace, params: HnswParams
) -> tuple[np.ndarray, np.ndarray, Path]:
    """bench/recall_hnsw.py's vectors: real embeddings of every shared set's passages, then derived
    distractors up to ``size``; its real queries; and the file its graph is cached in (reused here)."""
    import recall_hnsw

    real, queries, tag = recall_hnsw.real_vectors(
        recall_hnsw.DATA, recall_hnsw.all_sets(recall_hnsw.DATA), 1000, 0, args.real_cache, "use-multilingual"
    )
    vectors = recall_hnsw.with_distractors(real, size - len(real), "derived", 0.02, 0)
    graph = args.real_cache / recall_hnsw.graph_name("derived", size, tag, params)
    return vectors, queries[: args.queries], graph


def run_size(size: int, args: argparse.Namespace) -> list[Run]:
    params = HnswParams(args.hnsw_threshold, args.hnsw_m, args.ef_construction, args.ef_search[0])
    if args.keyword_only:
        runs = [Run(size, lang, args.queries) for lang in args.langs]
        for run in runs:
            measure_language(run, args, None, None, None, [])
        return runs
    if args.vectors == "derived":
        log(f"== {size:,} chunks: real embeddings + derived distractors (bench/recall_hnsw.py)")
        vectors, qvecs, graph = derived_vectors(size, args, params)
    else:
        log(f"== {size:,} chunks: generating {args.dim}-d unit vectors")
        vectors = random_unit(size, args.dim, seed=args.seed + 1)
        qvecs = random_unit(args.queries, args.dim, seed=args.seed + 2)
        name = f"hnsw_fp16_n{size}_d{args.dim}_m{params.m}_efc{params.ef_construction}.faiss"
        graph = args.cache_dir / name if args.cache_dir is not None else None
    dim = vectors.shape[1]
    flat, flat_build = measured_build(VectorIndex.build, vectors, dim, HnswParams(threshold=0))
    flat_build.index_mb = faiss_mb(flat.index)
    hnsw: VectorIndex | None = None
    hnsw_build: Build | None = None
    if size >= params.threshold:
        log(f"building HNSW (M={params.m}, efC={params.ef_construction}) on {args.build_threads} threads")
        hnsw, hnsw_build = build_hnsw(vectors, params, graph, args.build_threads)
        hnsw_build.index_mb = faiss_mb(hnsw.index)
        log(f"HNSW ready: {hnsw_build.seconds:.0f} s, {hnsw_build.index_mb:.0f} MB")
    del vectors
    gc.collect()
    faiss.omp_set_num_threads(1)

    queries = len(qvecs)
    exact_top = [flat.search(qvecs[i], TOP_K)[0] for i in range(queries)]
    runs = []
    for lang in args.langs:
        run = Run(size, lang, queries)
        run.builds["faiss IndexFlatIP (exact)"] = flat_build
        if hnsw_build is not None:
            run.builds["faiss HNSW"] = hnsw_build
        runs.append(run)
        measure_language(run, args, flat, hnsw, qvecs, exact_top)
    return runs


def measure_language(
    run: Run,
    args: argparse.Namespace,
    flat: VectorIndex | None,
    hnsw: VectorIndex | None,
    qvecs: np.ndarray | None,
    exact_top: list[np.ndarray],
) -> None:
    size, lang, nq, cand = run.size, run.lang, run.queries, args.candidates
    rng = np.random.default_rng(args.seed + (0 if lang == "en" else 100))
    vocab = make_vocabulary(lang, args.vocab_size, args.seed)
    log(f"-- {lang}: generating {size:,} chunks")
    start = time.perf_counter()
    docs = make_corpus(vocab, size, rng)
    queries = make_queries(vocab, nq, rng)
    log(f"corpus ready in {time.perf_counter() - start:.0f} s ({sum(map(len, docs)):,} tokens)")

    bm25, build = measured_build(BM25Index.build, docs)
    matrix_mb, vocab_mb = bm25_mb(bm25)
    build.index_mb = matrix_mb + vocab_mb
    build.note = f"matrix {matrix_mb:.0f} MB + vocabulary dict {vocab_mb:.0f} MB"
    run.builds["ours BM25Index"] = build
    run.postings, run.vocab_terms = int(bm25.weights.nnz), len(bm25.vocab)
    log(f"BM25Index built in {build.seconds:.0f} s, {build.index_mb:.0f} MB")

    def ours_keyword(i: int) -> np.ndarray:
        return bm25.top_k(queries[i], TOP_K)[0]

    run.latency["ours keyword"] = Latency.of(latencies(ours_keyword, nq))
    if flat is None or qvecs is None:  # --keyword-only
        return
    vector = hnsw or flat
    label = f"HNSW ef {hnsw.ef_search}" if hnsw is not None else "exact"

    def engines_with(index: VectorIndex) -> Callable[[int], object]:
        """The floor: both engines' top candidates as ids only (dense scan/graph + BM25 postings)."""

        def engines(i: int) -> object:
            return bm25.top_k(queries[i], cand), index.search(qvecs[i], cand)

        return engines

    def ours_hybrid_with(index: VectorIndex) -> Callable[[int], list[int]]:
        def hybrid(i: int) -> list[int]:
            return rrf([bm25.top_k(queries[i], cand)[0], index.search(qvecs[i], cand)[0]])[:TOP_K]

        return hybrid

    run.latency[f"ours vector ({label})"] = Latency.of(
        latencies(lambda i: vector.search(qvecs[i], TOP_K), nq)
    )
    with docstore_for(docs, args.cache_dir or Path("/tmp")) as docstore:
        for vindex, kind in engines_to_time(flat, hnsw, args.ef_search):  # lazily: one efSearch at a time
            run.latency[f"floor: engines only, ids ({kind})"] = Latency.of(
                latencies(engines_with(vindex), nq)
            )
            run.latency[f"ours hybrid, dict RRF on ids ({kind})"] = Latency.of(
                latencies(ours_hybrid_with(vindex), nq)
            )
            index = bench_index(docstore, vindex, bm25)
            for fusion in ("convex", "rrf"):
                search = full_path(index, fusion, cand, queries, qvecs)
                run.latency[f"ours hybrid full path, {fusion} ({kind})"] = Latency.of(latencies(search, nq))
    for ef in args.ef_search if hnsw is not None else []:
        at_ef = VectorIndex(hnsw.index, ef)
        found = [at_ef.search(qvecs[i], TOP_K)[0] for i in range(nq)]
        run.agreement[f"HNSW ef {ef} recall@10 vs exact ({args.vectors} vectors)"] = overlap(found, exact_top)

    if size > args.skip_baseline_above:
        run.notes.append(f"baseline skipped: {size:,} > --skip-baseline-above {args.skip_baseline_above:,}")
    else:
        measure_baseline(run, args, docs, queries, qvecs, flat, bm25)


def engines_to_time(
    flat: VectorIndex, hnsw: VectorIndex | None, ef_values: list[int]
) -> Iterator[tuple[VectorIndex, str]]:
    """The HNSW graph at each efSearch (one FAISS object, its breadth set before each use), then exact."""
    for ef in ef_values if hnsw is not None else []:
        yield VectorIndex(hnsw.index, ef), f"HNSW ef {ef}"
    yield flat, "exact"


def measure_baseline(
    run: Run,
    args: argparse.Namespace,
    docs: list[list[str]],
    queries: list[list[str]],
    qvecs: np.ndarray,
    flat: VectorIndex,
    bm25: BM25Index,
) -> None:
    from rank_bm25 import BM25Okapi

    # rank-bm25 keeps one dict per chunk: ~5 KB each for ~80 distinct terms, plus the lists around them.
    need_mb = run.size * 6 / 1024 * 1.3
    if need_mb > available_mb() * 0.8:
        run.notes.append(f"baseline skipped: needs ~{need_mb:,.0f} MB, {available_mb():,.0f} MB available")
        return
    log(f"building rank_bm25.BM25Okapi over {run.size:,} chunks")
    okapi, build = measured_build(BM25Okapi, docs, None, bm25.k1, bm25.b)
    build.index_mb = okapi_mb(okapi)
    build.note = "Python dicts (sys.getsizeof; term strings shared with the corpus)"
    run.builds["baseline rank_bm25.BM25Okapi"] = build
    log(f"BM25Okapi built in {build.seconds:.0f} s")
    raw = flat.index  # the baseline's IndexFlatIP is the same FAISS object, searched directly
    nq, cand = min(run.queries, args.baseline_queries or run.queries), args.candidates

    seen_keyword: dict[int, np.ndarray] = {}
    seen_hybrid: dict[int, list[int]] = {}

    def keyword(i: int) -> np.ndarray:
        seen_keyword[i] = baseline_top(okapi.get_scores(queries[i]), TOP_K)
        return seen_keyword[i]

    def vector(i: int, k: int = TOP_K) -> np.ndarray:
        ids = raw.search(qvecs[i].reshape(1, -1), k)[1][0]
        return ids[ids >= 0]

    def hybrid(i: int) -> list[int]:
        seen_hybrid[i] = rrf([baseline_top(okapi.get_scores(queries[i]), cand), vector(i, cand)])[:TOP_K]
        return seen_hybrid[i]

    run.latency["baseline keyword"] = Latency.of(latencies(keyword, nq, warmup=1))
    run.latency["baseline vector (exact)"] = Latency.of(latencies(vector, nq))
    run.latency["baseline hybrid (exact)"] = Latency.of(latencies(hybrid, nq, warmup=1))
    if nq < run.queries:
        run.notes.append(f"baseline timed on the first {nq} queries")
    ours_kw = [bm25.top_k(queries[i], TOP_K)[0] for i in range(nq)]
    run.agreement["keyword top-10 ours vs rank_bm25"] = overlap(ours_kw, [seen_keyword[i] for i in range(nq)])
    ours_hy = [
        rrf([bm25.top_k(queries[i], cand)[0], flat.search(qvecs[i], cand)[0]])[:TOP_K] for i in range(nq)
    ]
    run.agreement["exact hybrid top-10 ours vs baseline"] = overlap(
        ours_hy, [seen_hybrid[i] for i in range(nq)]
    )


@contextmanager
def docstore_for(docs: list[list[str]], folder: Path) -> Iterator[DocStore]:
    """A real SQLite docstore holding the synthetic chunks (text = the space-joined tokens)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"bench_docstore_{os.getpid()}.sqlite"
    path.unlink(missing_ok=True)
    store = DocStore.create(path)
    rows = (
        (Chunk(id=f"c{i}", text=" ".join(t), source=f"doc{i // 20}.md", chunk_index=i % 20), "")
        for i, t in enumerate(docs)
    )
    store.add_chunks(0, rows)
    store.commit()
    store.close()
    reader = DocStore(path)
    try:
        yield reader
    finally:
        reader.close()
        path.unlink(missing_ok=True)


def bench_index(docstore: DocStore, vectors: VectorIndex, bm25: BM25Index) -> Index:
    manifest = {"embedder": "bench", "format_version": 1, "dim": vectors.dim, "n_chunks": bm25.n_docs}
    return Index(docstore.path.parent, docstore.path.parent, manifest, docstore, vectors, bm25)


class _Precomputed:
    """A side of the hybrid retriever whose "query" is a query number: vectors and tokens are ready."""

    def __init__(self, name: str, search: Callable[[int, int], tuple[np.ndarray, np.ndarray]]) -> None:
        self.name = name
        self._search = search

    def rank(self, query: str, k: int, filters: object = None) -> Ranking:
        positions, scores = self._search(int(query), k)
        return Ranking(positions.tolist(), scores.tolist())


def full_path(
    index: Index, fusion: str, cand: int, queries: list[list[str]], qvecs: np.ndarray
) -> Callable[[int], object]:
    """retrievers.hybrid.HybridRetriever as the app runs it (default weights), minus embedding and
    tokenising: both sides, fusion on positions, the final 10 chunks fetched from SQLite."""
    defaults = Settings()
    hybrid = HybridRetriever(
        [
            _Precomputed("vector", lambda i, k: index.vector_search(qvecs[i], k)),
            _Precomputed("keyword", lambda i, k: index.keyword_search(queries[i], k)),
        ],
        index,
        fusion=fusion,
        rrf_k=RRF_K,
        weights={"vector": defaults.vector_weight, "keyword": defaults.keyword_weight},
        candidate_k=cand,
    )
    return lambda i: hybrid.search(str(i), TOP_K)


def tokenizer_throughput(limit: int) -> list[str]:
    """core.tokenize.tokenize on real passages (drcd_dev for Chinese, scifact for English)."""
    from core.tokenize import tokenize

    sets = {"zh (drcd_dev)": "drcd_dev", "en (scifact_train)": "scifact_train"}
    rows = [
        "| text | passages | chars | tokens | wall s | CPU s | chars/s (CPU) | tokens/s (CPU) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    tokenize("预热 jieba warm-up")  # loads jieba's dictionary once, outside the timing
    for label, name in sets.items():
        path = Path("/work/shared/data") / name / "corpus.jsonl"
        if not path.exists():
            rows.append(f"| {label} | data not found at {path} | | | | | | |")
            continue
        with path.open(encoding="utf-8") as handle:
            texts = [json.loads(line)["text"] for _, line in zip(range(limit), handle, strict=False)]
        start, cpu_start = time.perf_counter(), time.thread_time()
        tokens = sum(len(tokenize(t)) for t in texts)
        wall, secs = time.perf_counter() - start, time.thread_time() - cpu_start
        chars = sum(map(len, texts))
        rows.append(
            f"| {label} | {len(texts):,} | {chars:,} | {tokens:,} | {wall:.2f} | {secs:.2f} | {chars / secs:,.0f} | {tokens / secs:,.0f} |"
        )
    return rows


# --- report --------------------------------------------------------------------------------------------
def report(runs: list[Run]) -> list[str]:
    lines = ["## Latency, top-10, one thread (ms)", ""]
    lines += [
        "| chunks | lang | path | p50 | p95 | mean | CPU p50 | CPU p95 | x floor (CPU p50) | baseline p50 "
        "| speedup (p50) | speedup (CPU p50) |",
        "|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for run in runs:
        ours = [(n, lat) for n, lat in run.latency.items() if not n.startswith("baseline")]
        base_rows = [(n, lat) for n, lat in run.latency.items() if n.startswith("baseline")]
        for name, lat in ours + base_rows:
            kind = name.split()[1].rstrip(",") if name.startswith("ours") else ""
            base = run.latency.get(f"baseline {kind} (exact)") or run.latency.get(f"baseline {kind}")
            cells = ["-", "-", "-"]
            if base and name.startswith("ours"):
                cells = [
                    f"{base.p50:.2f}",
                    f"{base.p50 / lat.p50:.1f}x",
                    f"{base.cpu_p50 / lat.cpu_p50:.1f}x",
                ]
            engine = name[name.rfind("(") :] if name.endswith(")") else ""
            floor = run.latency.get(f"floor: engines only, ids {engine}")
            vs_floor = (
                f"{lat.cpu_p50 / floor.cpu_p50:.2f}" if floor and name.startswith("ours hybrid") else "-"
            )
            lines.append(
                f"| {run.size:,} | {run.lang} | {name} | {lat.p50:.2f} | {lat.p95:.2f} | {lat.mean:.2f} "
                f"| {lat.cpu_p50:.2f} | {lat.cpu_p95:.2f} | {vs_floor} | {' | '.join(cells)} |"
            )
    lines += ["", "## Build time and memory", ""]
    lines += [
        "| chunks | lang | structure | build s | build CPU s | RSS delta MB | build peak extra MB | index MB | note |",
        "|---:|---|---|---:|---:|---:|---:|---:|---|",
    ]
    for run in runs:
        for name, b in run.builds.items():
            idx = f"{b.index_mb:,.0f}" if b.index_mb is not None else "-"
            cpu = f"{b.cpu_seconds:.1f}" if b.cpu_seconds is not None else "-"
            lines.append(
                f"| {run.size:,} | {run.lang} | {name} | {b.seconds:.1f} | {cpu} | {b.rss_delta_mb:,.0f} | {b.peak_extra_mb:,.0f} | {idx} | {b.note} |"
            )
    lines += ["", "## Index memory per configuration (what a query process holds)", ""]
    lines += [
        "| chunks | lang | postings | terms | vector index MB | BM25 MB | total MB | per 1M chunks GB |",
        "|---:|---|---:|---:|---:|---:|---:|---:|",
    ]
    for run in runs:
        vec = (
            run.builds.get("faiss HNSW") or run.builds.get("faiss IndexFlatIP (exact)") or Build(0, 0, 0, 0.0)
        )
        bm = run.builds["ours BM25Index"]
        total = (vec.index_mb or 0) + (bm.index_mb or 0)
        lines.append(
            f"| {run.size:,} | {run.lang} | {run.postings:,} | {run.vocab_terms:,} | {vec.index_mb:,.0f} | {bm.index_mb:,.0f} | {total:,.0f} | {total / 1000 * 1e6 / run.size:.2f} |"
        )
    lines += ["", "## Agreement and notes", ""]
    for run in runs:
        for name, value in run.agreement.items():
            lines.append(f"- {run.size:,} {run.lang}: {name}: {value:.3f}")
        for note in run.notes:
            lines.append(f"- {run.size:,} {run.lang}: {note}")
    return lines


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')} rss {rss_mb():,.0f} MB] {message}", flush=True)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    defaults = HnswParams()
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", default="100000,1000000", help="comma-separated corpus sizes")
    p.add_argument("--langs", default="en,zh", help="comma-separated: en, zh")
    p.add_argument("--queries", type=int, default=200)
    p.add_argument(
        "--baseline-queries", type=int, default=0, help="time the baseline on fewer queries (0: all)"
    )
    p.add_argument("--candidates", type=int, default=50, help="per-retriever depth before fusion")
    p.add_argument("--dim", type=int, default=384, help="dimension of random vectors")
    p.add_argument(
        "--vectors",
        choices=["random", "derived"],
        default="random",
        help="random unit vectors, or bench/recall_hnsw.py's real embeddings (512-d) plus derived "
        "distractors, whose graph that script caches under --real-cache",
    )
    p.add_argument(
        "--keyword-only", action="store_true", help="BM25 only: build time, peak memory, size and latency"
    )
    p.add_argument("--real-cache", type=Path, default=Path("/tmp/agentic_rag_bench"))
    p.add_argument("--vocab-size", type=int, default=100_000)
    p.add_argument(
        "--hnsw-threshold", type=int, default=defaults.threshold, help="HNSW from this many chunks"
    )
    p.add_argument("--hnsw-m", type=int, default=defaults.m)
    p.add_argument("--ef-construction", type=int, default=defaults.ef_construction)
    p.add_argument(
        "--ef-search",
        default=str(defaults.ef_search),
        help="comma-separated HNSW efSearch values; each is timed (full path, floor) with its recall",
    )
    p.add_argument("--skip-baseline-above", type=int, default=100_000)
    p.add_argument("--build-threads", type=int, default=2)
    p.add_argument("--cache-dir", type=Path, default=Path("/tmp/agentic_rag_bench_retrieval"))
    p.add_argument("--no-cache", action="store_true", help="always rebuild the HNSW graph")
    p.add_argument("--tokenizer-passages", type=int, default=2000, help="0 skips the tokenizer measurement")
    p.add_argument("--json", type=Path, help="also write the raw figures here")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    try:
        args.sizes = [int(s.replace("_", "")) for s in args.sizes.split(",") if s.strip()]
    except ValueError:
        p.error(f"--sizes must be comma-separated integers, got {args.sizes!r}")
    try:
        args.ef_search = [int(x) for x in args.ef_search.split(",") if x.strip()]
    except ValueError:
        p.error(f"--ef-search must be comma-separated integers, got {args.ef_search!r}")
    if not args.ef_search:
        p.error("--ef-search needs at least one value")
    args.langs = [s.strip() for s in args.langs.split(",") if s.strip()]
    if bad := [lang for lang in args.langs if lang not in ("en", "zh")]:
        p.error(f"--langs accepts en and zh, got {bad}")
    if args.queries < 1 or any(s < TOP_K for s in args.sizes):
        p.error(f"--queries must be >= 1 and every size >= {TOP_K}")
    if args.no_cache:
        args.cache_dir = None
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    log(f"load average at start: {os.getloadavg()}")
    log(f"faiss {faiss.__version__}, numpy {np.__version__}, {os.cpu_count()} cpus, args {vars(args)}")
    lines: list[str] = []
    if args.tokenizer_passages > 0:
        lines += ["## Tokenizer throughput (core.tokenize.tokenize, one thread)", ""]
        lines += [*tokenizer_throughput(args.tokenizer_passages), ""]
        print("\n".join(lines), flush=True)
    runs: list[Run] = []
    for size in args.sizes:
        runs += run_size(size, args)
        print("\n".join(report(runs[-len(args.langs) :])), flush=True)
    log(f"load average at end: {os.getloadavg()}")
    print("\n# Summary\n")
    print("\n".join(lines + report(runs)))
    if args.json:
        args.json.write_text(json.dumps([asdict(r) for r in runs], indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
