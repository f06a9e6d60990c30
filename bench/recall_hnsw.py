"""Recall@10 of HNSW against exact search, on real embeddings (scifact with the default embedder).

Not a test: prints Markdown tables that docs/benchmarks.md quotes. The index parameters are the
defaults of ``retrievers.vector_index.HnswParams`` (M=32, efConstruction=80); efSearch is swept.
Two corpora: the 5,183 scifact passages alone, and the same passages hidden among random unit
vectors (the worst case for a graph index: no cluster structure to navigate by).

    python bench/recall_hnsw.py                       # embeds once, caches to /tmp, prints tables
    python bench/recall_hnsw.py --distractors 200000 --ef-search 16,32,64,128
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import faiss
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from retrievers.vector_index import HnswParams

DATA = Path("/work/shared/data/scifact_train")
K = 10


def read_jsonl(path: Path) -> list[dict]:
    with path.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def embed_scifact(data: Path, cache: Path, embedder_spec: str) -> tuple[np.ndarray, np.ndarray]:
    """Passage (title + text) and query embeddings, cached as .npy so a rerun skips the model."""
    corpus_file, query_file = cache / "scifact_corpus.npy", cache / "scifact_queries.npy"
    if corpus_file.exists() and query_file.exists():
        return np.load(corpus_file), np.load(query_file)
    from providers.embeddings import make_embedder

    embedder = make_embedder(embedder_spec)
    passages = [f"{row.get('title', '')}\n{row['text']}".strip() for row in read_jsonl(data / "corpus.jsonl")]
    questions = [row["question"] for row in read_jsonl(data / "queries.jsonl")]
    start = time.perf_counter()
    corpus = embedder.embed_documents(passages)
    queries = np.vstack([embedder.embed_query(q) for q in questions])
    print(
        f"embedded {len(passages)} passages + {len(questions)} queries in {time.perf_counter() - start:.0f} s"
    )
    cache.mkdir(parents=True, exist_ok=True)
    np.save(corpus_file, corpus)
    np.save(query_file, queries)
    return corpus, queries


def random_unit(n: int, dim: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    out = rng.standard_normal((n, dim), dtype=np.float32)
    out /= np.linalg.norm(out, axis=1, keepdims=True)
    return out


def recall_at_k(found: np.ndarray, truth: np.ndarray) -> float:
    """Mean overlap of the top-k id sets (order ignored), as a fraction of k."""
    hits = [len(set(f[f >= 0].tolist()) & set(t.tolist())) for f, t in zip(found, truth, strict=True)]
    return float(np.mean(hits)) / truth.shape[1]


def sweep(
    name: str, corpus: np.ndarray, queries: np.ndarray, params: HnswParams, ef_values: list[int]
) -> list[str]:
    dim = corpus.shape[1]
    exact = faiss.IndexFlatIP(dim)
    exact.add(corpus)
    faiss.omp_set_num_threads(1)
    start = time.perf_counter()
    _, truth = exact.search(queries, K)
    exact_ms = (time.perf_counter() - start) * 1000 / len(queries)
    faiss.omp_set_num_threads(max(1, os.cpu_count() or 1))
    hnsw = faiss.IndexHNSWFlat(dim, params.m, faiss.METRIC_INNER_PRODUCT)
    hnsw.hnsw.efConstruction = params.ef_construction
    start = time.perf_counter()
    hnsw.add(corpus)
    build_s = time.perf_counter() - start
    faiss.omp_set_num_threads(1)
    rows = [
        f"\n### {name}: {corpus.shape[0]:,} vectors, dim {dim}, {len(queries)} queries "
        f"(HNSW M={params.m}, efConstruction={params.ef_construction}, built in {build_s:.1f} s on "
        f"{os.cpu_count()} threads; exact search {exact_ms:.2f} ms/query)\n",
        "| efSearch | recall@10 | ms/query (1 thread) |",
        "|---:|---:|---:|",
    ]
    for ef in ef_values:
        hnsw.hnsw.efSearch = ef
        start = time.perf_counter()
        _, found = hnsw.search(queries, K)
        ms = (time.perf_counter() - start) * 1000 / len(queries)
        rows.append(f"| {ef} | {recall_at_k(found, truth):.3f} | {ms:.3f} |")
    return rows


def main(argv: list[str] | None = None) -> int:
    defaults = HnswParams()
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data", type=Path, default=DATA, help="folder with corpus.jsonl and queries.jsonl")
    parser.add_argument("--cache", type=Path, default=Path("/tmp/agentic_rag_bench"))
    parser.add_argument("--embedder", default="use-multilingual")
    parser.add_argument(
        "--distractors", type=int, default=200_000, help="random unit vectors added (0: none)"
    )
    parser.add_argument("--ef-search", default="16,32,64,128", help="comma-separated efSearch values")
    parser.add_argument("--hnsw-m", type=int, default=defaults.m)
    parser.add_argument("--ef-construction", type=int, default=defaults.ef_construction)
    args = parser.parse_args(argv)
    if not (args.data / "corpus.jsonl").exists():
        print(f"error: {args.data}/corpus.jsonl not found; pass --data FOLDER", file=sys.stderr)
        return 2
    try:
        ef_values = [int(x) for x in args.ef_search.split(",") if x.strip()]
    except ValueError:
        print(f"error: --ef-search must be comma-separated integers, got {args.ef_search!r}", file=sys.stderr)
        return 2
    params = HnswParams(threshold=1, m=args.hnsw_m, ef_construction=args.ef_construction)
    corpus, queries = embed_scifact(args.data, args.cache, args.embedder)
    corpus = np.ascontiguousarray(corpus, dtype=np.float32)
    queries = np.ascontiguousarray(queries, dtype=np.float32)
    lines = sweep("scifact", corpus, queries, params, ef_values)
    if args.distractors > 0:
        mixed = np.vstack([corpus, random_unit(args.distractors, corpus.shape[1], seed=0)])
        lines += sweep(
            f"scifact + {args.distractors:,} random unit distractors", mixed, queries, params, ef_values
        )
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
