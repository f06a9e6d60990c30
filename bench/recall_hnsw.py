"""Recall@10 of HNSW against exact search, on real embeddings, up to a million vectors.

Not a test: prints Markdown tables that docs/benchmarks.md quotes. The graph is built the way the index
builds it (``retrievers.vector_index.VectorIndex.build``: HNSW with float16 vectors, M=32,
efConstruction=80 by default); efSearch is swept; truth is exact inner product on the same float32
vectors.

Real vectors: every passage (title + text) of the sets in ``--sets`` embedded with ``--embedder``
(default ``use-multilingual``), cached as .npy under ``--cache``; queries are those sets' questions
(``--queries`` of them, drawn with a fixed seed). To reach a million vectors without embedding a
million texts, ``--distractors`` more vectors are added:

- ``derived`` (default): blends of two real passages, ``a * x_i + (1 - a) * x_j`` plus Gaussian noise
  (sigma ``--noise`` per dimension), re-normalised. They lie among the real embeddings, as the passages
  of a large corpus on the same topics would, so a query's true neighbours are mostly distractors and the
  graph must resolve a dense region, not just find an isolated cluster;
- ``random``: random unit vectors (no structure: the graph's worst case for navigation).

    python bench/recall_hnsw.py --sets scifact_train --distractors 200000 --kind random   # the old table
    python bench/recall_hnsw.py --sets all --distractors 988765 --ef-search 32,64,96,128  # 1M in total
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import argparse
import json
import sys
import time
from pathlib import Path

import faiss
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from retrievers.vector_index import HnswParams, VectorIndex

DATA = Path("/work/shared/data")
K = 10


def read_jsonl(path: Path) -> list[dict]:
    if not path.exists():
        return []
    with path.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def embed_sets(
    data: Path, sets: list[str], cache: Path, embedder_spec: str
) -> tuple[np.ndarray, list[tuple[str, str]]]:
    """Passage embeddings of every set (cached per set) and every set's (set, question)."""
    blocks: list[np.ndarray] = []
    questions: list[tuple[str, str]] = []
    embedder = None
    for name in sets:
        corpus = read_jsonl(data / name / "corpus.jsonl")
        questions += [(name, row["question"]) for row in read_jsonl(data / name / "queries.jsonl")]
        if not corpus:
            continue
        file = cache / f"{name}_{embedder_spec}_corpus.npy"
        if not file.exists():
            if embedder is None:
                from providers.embeddings import make_embedder

                embedder = make_embedder(embedder_spec)
            passages = [f"{row.get('title', '')}\n{row['text']}".strip() for row in corpus]
            start = time.perf_counter()
            vectors = np.asarray(embedder.embed_documents(passages), dtype=np.float32)
            log(f"embedded {len(passages):,} passages of {name} in {time.perf_counter() - start:.0f} s")
            cache.mkdir(parents=True, exist_ok=True)
            np.save(file, vectors)
        blocks.append(np.load(file))
    return np.vstack(blocks), questions


def embed_queries(questions: list[str], cache: Path, embedder_spec: str, tag: str) -> np.ndarray:
    file = cache / f"queries_{embedder_spec}_{tag}.npy"
    if file.exists():
        return np.load(file)
    from providers.embeddings import make_embedder

    embedder = make_embedder(embedder_spec)
    vectors = np.vstack([np.asarray(embedder.embed_query(q), dtype=np.float32) for q in questions])
    np.save(file, vectors)
    return vectors


def unit_rows(x: np.ndarray) -> np.ndarray:
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    return x


def distractors(real: np.ndarray, n: int, kind: str, noise: float, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    dim = real.shape[1]
    out = np.empty((n, dim), dtype=np.float32)
    for start in range(0, n, 100_000):
        size = min(100_000, n - start)
        if kind == "random":
            block = rng.standard_normal((size, dim), dtype=np.float32)
        else:
            a = rng.random((size, 1), dtype=np.float32)
            i, j = rng.integers(0, len(real), size), rng.integers(0, len(real), size)
            block = a * real[i] + (1 - a) * real[j] + rng.normal(0, noise, (size, dim)).astype(np.float32)
        out[start : start + size] = unit_rows(block)
    return out


def all_sets(data: Path) -> list[str]:
    """Every set folder with a non-empty corpus."""
    return sorted(
        p.name
        for p in data.iterdir()
        if (p / "corpus.jsonl").is_file() and (p / "corpus.jsonl").stat().st_size
    )


def real_vectors(
    data: Path, sets: list[str], n_queries: int, seed: int, cache: Path, embedder: str
) -> tuple[np.ndarray, np.ndarray, str]:
    """Unit passage vectors of the sets, unit vectors of ``n_queries`` of their questions, and a tag."""
    real, questions = embed_sets(data, sets, cache, embedder)
    rng = np.random.default_rng(seed)
    picked = sorted(rng.choice(len(questions), size=min(n_queries, len(questions)), replace=False))
    tag = f"{'-'.join(sets)}_{len(picked)}_{seed}"
    queries = embed_queries([questions[i][1] for i in picked], cache, embedder, tag)
    real = unit_rows(np.ascontiguousarray(real, dtype=np.float32))
    return real, unit_rows(np.ascontiguousarray(queries, dtype=np.float32)), tag


def with_distractors(real: np.ndarray, n: int, kind: str, noise: float, seed: int) -> np.ndarray:
    """The real vectors first, then ``n`` distractors (the same ones for the same arguments)."""
    return np.vstack([real, distractors(real, n, kind, noise, seed + 1)])


def graph_name(kind: str, total: int, tag: str, params: HnswParams) -> str:
    """File name of the cached graph, shared with bench/retrieval.py --vectors derived."""
    return f"hnsw_{kind}_n{total}_{tag}_m{params.m}_efc{params.ef_construction}.faiss"


def recall_at_k(found: np.ndarray, truth: np.ndarray) -> float:
    """Mean overlap of the top-k id sets (order ignored), as a fraction of k."""
    hits = [len(set(f[f >= 0].tolist()) & set(t.tolist())) for f, t in zip(found, truth, strict=True)]
    return float(np.mean(hits)) / truth.shape[1]


def sweep(
    name: str,
    corpus: np.ndarray,
    queries: np.ndarray,
    params: HnswParams,
    ef_values: list[int],
    threads: int,
    cache_file: Path | None,
) -> list[str]:
    dim = corpus.shape[1]
    exact = faiss.IndexFlatIP(dim)
    exact.add(corpus)
    faiss.omp_set_num_threads(threads)
    start = time.perf_counter()
    _, truth = exact.search(queries, K)
    exact_s = time.perf_counter() - start
    del exact
    if cache_file is not None and cache_file.exists():
        meta = json.loads(cache_file.with_suffix(".json").read_text())
        index = VectorIndex.load(cache_file)
        build_s, build_cpu = meta["seconds"], meta["cpu_seconds"]
        log(f"graph loaded from {cache_file} (first build: {build_s:.0f} s wall, {build_cpu:.0f} s CPU)")
    else:
        log(f"building HNSW over {corpus.shape[0]:,} vectors on {threads} threads")
        start, cpu = time.perf_counter(), time.process_time()
        index = VectorIndex.build(corpus, dim, params)
        build_s, build_cpu = time.perf_counter() - start, time.process_time() - cpu
        log(f"built in {build_s:.0f} s wall, {build_cpu:.0f} s CPU")
        if cache_file is not None:
            cache_file.parent.mkdir(parents=True, exist_ok=True)
            index.save(cache_file)
            meta = {"seconds": build_s, "cpu_seconds": build_cpu, "threads": threads}
            cache_file.with_suffix(".json").write_text(json.dumps(meta))
    faiss.omp_set_num_threads(1)
    size_mb = faiss.serialize_index(index.index).nbytes / 1e6
    rows = [
        f"\n### {name}: {corpus.shape[0]:,} vectors, dim {dim}, {len(queries)} queries "
        f"({type(index.index).__name__}, M={params.m}, efConstruction={params.ef_construction}; "
        f"build {build_s:.0f} s wall / {build_cpu:.0f} s CPU on {threads} threads; {size_mb:,.0f} MB; "
        f"exact truth {exact_s * 1000 / len(queries):.1f} ms/query on {threads} threads)\n",
        "| efSearch | recall@10 | CPU ms/query p50 (1 thread, one query at a time) | p95 |",
        "|---:|---:|---:|---:|",
    ]
    for ef in ef_values:
        index.ef_search = ef
        faiss.downcast_index(index.index).hnsw.efSearch = ef
        found = np.empty((len(queries), K), dtype=np.int64)
        cpu = np.empty(len(queries))
        for i, query in enumerate(queries):
            c0 = time.thread_time_ns()
            ids, _ = index.search(query, K)
            cpu[i] = (time.thread_time_ns() - c0) / 1e6
            found[i, : len(ids)], found[i, len(ids) :] = ids, -1
        rows.append(
            f"| {ef} | {recall_at_k(found, truth):.3f} | {np.percentile(cpu, 50):.3f} "
            f"| {np.percentile(cpu, 95):.3f} |"
        )
        print(rows[-1], flush=True)
    return rows


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


def main(argv: list[str] | None = None) -> int:
    defaults = HnswParams()
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data", type=Path, default=DATA, help="folder holding the sets")
    parser.add_argument(
        "--sets",
        default="scifact_train",
        help="comma-separated set names, or 'all' (every set with a corpus)",
    )
    parser.add_argument("--queries", type=int, default=1000, help="questions drawn from the sets (seeded)")
    parser.add_argument("--cache", type=Path, default=Path("/tmp/agentic_rag_bench"))
    parser.add_argument("--embedder", default="use-multilingual")
    parser.add_argument("--distractors", type=int, default=200_000, help="vectors added (0: none)")
    parser.add_argument("--kind", choices=["derived", "random"], default="derived")
    parser.add_argument("--noise", type=float, default=0.02, help="sigma per dimension of derived vectors")
    parser.add_argument("--ef-search", default="16,32,64,128", help="comma-separated efSearch values")
    parser.add_argument("--hnsw-m", type=int, default=defaults.m)
    parser.add_argument("--ef-construction", type=int, default=defaults.ef_construction)
    parser.add_argument("--threads", type=int, default=2, help="FAISS threads for building and truth")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if args.sets == "all":
        sets = all_sets(args.data)
    else:
        sets = [s.strip() for s in args.sets.split(",") if s.strip()]
    missing = [s for s in sets if not (args.data / s / "corpus.jsonl").exists()]
    if missing or not sets:
        print(
            f"error: no corpus.jsonl for {missing or 'any set'} under {args.data}; pass --data/--sets",
            file=sys.stderr,
        )
        return 2
    try:
        ef_values = [int(x) for x in args.ef_search.split(",") if x.strip()]
    except ValueError:
        print(f"error: --ef-search must be comma-separated integers, got {args.ef_search!r}", file=sys.stderr)
        return 2
    log(f"load average at start: {os.getloadavg()}; sets {sets}")
    params = HnswParams(threshold=1, m=args.hnsw_m, ef_construction=args.ef_construction)
    real, queries, tag = real_vectors(args.data, sets, args.queries, args.seed, args.cache, args.embedder)
    lines = sweep(f"{'+'.join(sets)} alone", real, queries, params, ef_values, args.threads, None)
    if args.distractors > 0:
        mixed = with_distractors(real, args.distractors, args.kind, args.noise, args.seed)
        name = graph_name(args.kind, len(mixed), tag, params)
        lines += sweep(
            f"{'+'.join(sets)} + {args.distractors:,} {args.kind} distractors",
            mixed,
            queries,
            params,
            ef_values,
            args.threads,
            args.cache / name,
        )
    log(f"load average at end: {os.getloadavg()}")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
