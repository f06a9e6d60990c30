"""The Milvus store next to the local index at 100k chunks: build, incremental add, hybrid latency, ANN recall.

Not a test: prints a Markdown table that docs/benchmarks.md quotes.

Data as in bench/retrieval.py: a synthetic English corpus (Zipfian pseudo-words, 60-120 tokens per chunk,
already tokenised) with random 384-d unit vectors, so no model runs. Both stores get the same rows
through their real write paths (local: ``write_generation``, the full rewrite every ingest does; Milvus:
``MilvusStore.upsert``), and are searched through the same store API the retrievers use: hybrid = dense
top 30 + BM25 top 30, RRF (k 60, weights as the settings default), then only the final 10 chunks fetched.

- build: all chunks written and searchable.
- add 1,000: 1,000 new chunks into the 100k store. Local: a new generation of all 101k rows (what
  ``ingest`` does today); Milvus: an upsert of the 1,000 rows.
- recall@10: dense top 10 against exact inner-product search over all vectors (numpy).

    python bench/milvus_store.py --size 100000 --queries 100            # Milvus Lite in a temp folder
    python bench/milvus_store.py --uri http://127.0.0.1:19530 ...       # a Milvus server
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import uuid
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from retrieval import make_corpus, make_queries, make_vocabulary, random_unit  # noqa: E402

from core.chunks import Chunk  # noqa: E402
from retrievers.fusion import Ranking, fuse  # noqa: E402
from retrievers.index import BuildParams, open_index, write_generation  # noqa: E402
from retrievers.milvus_store import MilvusBuild, MilvusStore, MilvusTarget, key  # noqa: E402
from retrievers.vector_index import HnswParams  # noqa: E402

DIM = 384
CANDIDATES = 30
WEIGHTS = {"vector": 0.5, "keyword": 1.0}


def rows(tokens: list[list[str]], vectors: np.ndarray, start: int = 0):
    for i, (toks, vector) in enumerate(zip(tokens, vectors, strict=True), start=start):
        chunk = Chunk(id=f"c{i}", text=" ".join(toks), source=f"bench/{i // 20}.txt", chunk_index=i % 20)
        yield chunk, toks, vector


def hybrid(store, qvec: np.ndarray, qtokens: list[str], k: int = 10) -> list:
    """What ``HybridRetriever.search`` does, with a precomputed query vector."""
    rankings = {
        "vector": Ranking(*[a.tolist() for a in store.vector_search(qvec, CANDIDATES)]),
        "keyword": Ranking(*[a.tolist() for a in store.keyword_search(qtokens, CANDIDATES)]),
    }
    fused = fuse("rrf", rankings, rrf_k=60, weights=WEIGHTS)[:k]
    store.chunks_at(f.key for f in fused)
    return [f.key for f in fused]


def timed(fn) -> float:
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


def latency(store, qvecs, qtokens) -> tuple[float, float]:
    for i in range(3):
        hybrid(store, qvecs[i], qtokens[i])
    ms = []
    for qvec, toks in zip(qvecs, qtokens, strict=True):
        started = time.perf_counter()
        hybrid(store, qvec, toks)
        ms.append((time.perf_counter() - started) * 1000)
    return float(np.percentile(ms, 50)), float(np.percentile(ms, 95))


def recall(found: list[list[int]], exact: np.ndarray) -> float:
    return float(np.mean([len(set(f) & set(e.tolist())) / len(e) for f, e in zip(found, exact, strict=True)]))


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--add", type=int, default=1_000)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--uri", help="Milvus URI (default: Milvus Lite in a temp folder)")
    parser.add_argument("--ef", type=int, default=64, help="HNSW ef at search time (settings default 64)")
    args = parser.parse_args()
    rng = np.random.default_rng(7)
    vocab = make_vocabulary("en", 50_000, 7)
    tokens = make_corpus(vocab, args.size + args.add, rng)
    vectors = random_unit(args.size + args.add, DIM, 11)
    qtokens = make_queries(vocab, args.queries, rng)
    qvecs = random_unit(args.queries, DIM, 13)
    exact = np.argsort(-(qvecs @ vectors[: args.size].T), axis=1)[:, :10]
    base, extra = slice(0, args.size), slice(args.size, args.size + args.add)
    print(
        f"load {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; {args.size} chunks, {args.queries} queries"
    )
    table = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "index"
        params = BuildParams(hnsw=HnswParams(threshold=200_000))  # the default: exact below 200k

        def local_write(n: int) -> None:
            write_generation(
                folder, rows(tokens[:n], vectors[:n]), [], embedder="bench", dim=DIM, params=params
            )

        build = timed(lambda: local_write(args.size))
        index = open_index(folder)
        p50, p95 = latency(index, qvecs, qtokens)
        found = [index.vector_search(q, 10)[0].tolist() for q in qvecs]
        index.close()
        add = timed(lambda: local_write(args.size + args.add))
        table.append(("local index (exact below 200k)", build, add, p50, p95, recall(found, exact)))
        print(table[-1], flush=True)

        target = MilvusTarget(
            uri=args.uri or str(Path(tmp) / "milvus.db"), collection=f"b_{uuid.uuid4().hex[:8]}"
        )
        store = MilvusStore.create(target, MilvusBuild(embedder="bench", dim=DIM))
        store.ef_search = args.ef
        build = timed(lambda: (store.upsert(rows(tokens[base], vectors[base])), store.flush()))
        p50, p95 = latency(store, qvecs, qtokens)
        positions = {key(f"c{i}"): i for i in range(args.size)}
        found = [[positions[k] for k in store.vector_search(q, 10)[0].tolist()] for q in qvecs]
        add = timed(
            lambda: (store.upsert(rows(tokens[extra], vectors[extra], start=args.size)), store.flush())
        )
        assert store.count() == args.size + args.add
        store.client.drop_collection(target.collection)
        store.client.drop_collection(target.files_collection)
        store.close()
        where = "server" if target.is_remote else "Lite"
        table.append(
            (f"Milvus {where} (HNSW M=32, ef {args.ef})", build, add, p50, p95, recall(found, exact))
        )
    print(f"\nload after: {os.getloadavg()[0]:.1f}\n")
    print("| store | build 100k (s) | add 1,000 (s) | hybrid p50 (ms) | hybrid p95 (ms) | ANN recall@10 |")
    print("|---|---|---|---|---|---|")
    for name, build, add, p50, p95, rec in table:
        print(f"| {name} | {build:.1f} | {add:.2f} | {p50:.1f} | {p95:.1f} | {rec:.3f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
