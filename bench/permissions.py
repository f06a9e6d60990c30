"""The permission filter at 100k chunks with 10 access groups, on the local index and on Milvus Lite.

Not a test: prints a Markdown table that docs/benchmarks.md quotes.

Data as in bench/milvus_store.py: a synthetic English corpus (Zipfian pseudo-words, 60-120 tokens per chunk,
already tokenised) with random 384-d unit vectors (cheap: no model runs, and random vectors are the hard
case for an ANN graph). 20 chunks per document; document d is readable by group ``g{d % 10}`` only, so a
caller in one group may read 10 % of the documents. Both stores get the rows through their real write
paths and are searched through the store API the retrievers use, with the same ``Filters`` the server
builds for a caller (``Filters().for_caller(["g3"])``): hybrid = dense top 30 + BM25 top 30, RRF, then
the final 10 chunks fetched.

- p50 hybrid unfiltered vs. filtered, interleaved query by query (so the shared machine's load hits both
  alike), with the load average before and after each store; the first filtered query is reported
  apart ("cold": the local index builds its per-group masks once per generation).
- recall@10 of the permitted documents: the filtered dense top 10 against the dense top 10 of a separate
  index holding only the permitted chunks (same vectors; exact search), and against numpy's exact answer.
- HNSW (``--hnsw``): the same local index built as an HNSW graph (M=32, efConstruction=80), searched with
  the 10 % filter (below 50,000 allowed positions the filter scores the allowed vectors directly) and with
  a 60 % one (6 groups: FAISS's IDSelectorBitmap inside the graph walk).

    python bench/permissions.py --size 100000 --queries 100 --hnsw
    python bench/permissions.py --size 100000 --queries 100 --skip-exact --milvus-queries 30  # Milvus only
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

from core.chunks import Chunk, Filters  # noqa: E402
from retrievers.fusion import Ranking, fuse  # noqa: E402
from retrievers.index import BuildParams, open_index, write_generation  # noqa: E402
from retrievers.milvus_store import MilvusBuild, MilvusStore, MilvusTarget, key  # noqa: E402
from retrievers.vector_index import HnswParams  # noqa: E402

DIM = 384
CANDIDATES = 30
WEIGHTS = {"vector": 0.5, "keyword": 1.0}
GROUPS = 10
PER_DOC = 20


def group_of(i: int) -> str:
    return f"g{(i // PER_DOC) % GROUPS}"


def rows(tokens, vectors, positions):
    for i in positions:
        chunk = Chunk(
            id=f"c{i}",
            text=" ".join(tokens[i]),
            source=f"bench/{i // PER_DOC}.txt",
            chunk_index=i % PER_DOC,
            metadata={"access": [group_of(i)]},
        )
        yield chunk, tokens[i], vectors[i]


def hybrid(store, qvec: np.ndarray, qtokens: list[str], filters: Filters | None, k: int = 10) -> list:
    """What ``HybridRetriever.search`` does, with a precomputed query vector."""
    rankings = {
        "vector": Ranking(*[a.tolist() for a in store.vector_search(qvec, CANDIDATES, filters)]),
        "keyword": Ranking(*[a.tolist() for a in store.keyword_search(qtokens, CANDIDATES, filters)]),
    }
    fused = fuse("rrf", rankings, rrf_k=60, weights=WEIGHTS)[:k]
    chunks = store.chunks_at(f.key for f in fused)
    return [chunks[f.key] for f in fused]


def paired(store, qvecs, qtokens, filters) -> tuple[float, float, float]:
    """(first filtered query ms, after one unfiltered query; p50 ms unfiltered; p50 ms filtered).

    Each query is searched both ways back to back, in alternating order, so whatever the shared
    machine's load does during the run it does to both columns alike."""
    hybrid(store, qvecs[0], qtokens[0], None)  # the store warm (Milvus Lite builds its index here)
    started = time.perf_counter()
    hybrid(store, qvecs[0], qtokens[0], filters)
    first = (time.perf_counter() - started) * 1000
    ms: dict[bool, list[float]] = {False: [], True: []}
    for n, (qvec, toks) in enumerate(zip(qvecs[1:], qtokens[1:], strict=True)):
        for current in (None, filters) if n % 2 == 0 else (filters, None):
            started = time.perf_counter()
            hits = hybrid(store, qvec, toks, current)
            ms[current is not None].append((time.perf_counter() - started) * 1000)
            if current is not None:
                assert all(current.access and c.metadata["access"][0] in current.access for c in hits)
    return first, float(np.percentile(ms[False], 50)), float(np.percentile(ms[True], 50))


def load() -> str:
    return "/".join(f"{x:.1f}" for x in os.getloadavg())


def overlap(found: list[list[int]], truth: list[list[int]]) -> float:
    return float(np.mean([len(set(f) & set(t)) / max(len(t), 1) for f, t in zip(found, truth, strict=True)]))


def local_index(folder: Path, tokens, vectors, positions, threshold: int):
    params = BuildParams(hnsw=HnswParams(threshold=threshold))
    write_generation(folder, rows(tokens, vectors, positions), [], embedder="bench", dim=DIM, params=params)
    return open_index(folder)


def dense_ids(store, qvecs, filters, to_position) -> list[list[int]]:
    return [[to_position(k) for k in store.vector_search(q, 10, filters)[0].tolist()] for q in qvecs]


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--hnsw", action="store_true", help="also build and measure an HNSW local index")
    parser.add_argument("--no-milvus", action="store_true")
    parser.add_argument("--skip-exact", action="store_true", help="skip the exact local index")
    parser.add_argument(
        "--milvus-queries",
        type=int,
        help="queries for Milvus Lite (its Python search is slow; default --queries)",
    )
    args = parser.parse_args()
    rng = np.random.default_rng(7)
    vocab = make_vocabulary("en", 50_000, 7)
    tokens = make_corpus(vocab, args.size, rng)
    vectors = random_unit(args.size, DIM, 11)
    qtokens = make_queries(vocab, args.queries, rng)
    qvecs = random_unit(args.queries, DIM, 13)
    one = Filters().for_caller(["g3"])
    six = Filters().for_caller([f"g{g}" for g in range(6)])
    permitted = [i for i in range(args.size) if group_of(i) == "g3"]
    exact = np.asarray(permitted)[np.argsort(-(qvecs @ vectors[permitted].T), axis=1)[:, :10]].tolist()
    print(f"load {load()} on {os.cpu_count()} cores; {args.size} chunks, {args.queries} queries", flush=True)
    table = []
    with tempfile.TemporaryDirectory() as tmp:
        separate = local_index(Path(tmp) / "only_g3", tokens, vectors, permitted, 200_000)
        alone = [[permitted[p] for p in ids] for ids in dense_ids(separate, qvecs, None, int)]
        separate.close()

        def local(name: str, threshold: int) -> None:
            index = local_index(Path(tmp) / name, tokens, vectors, range(args.size), threshold)
            before = load()
            cold, base, warm = paired(index, qvecs, qtokens, one)
            found = dense_ids(index, qvecs, one, int)
            row = [name, base, warm, warm / base, cold, overlap(found, alone), overlap(found, exact)]
            row.append(f"{before} → {load()}")
            if threshold == 1:
                every = np.argsort(-(qvecs @ vectors.T), axis=1)[:, :10].tolist()
                row.append(overlap(dense_ids(index, qvecs, None, int), every))  # the graph's own recall
                _, wide_base, wide = paired(index, qvecs, qtokens, six)
                allowed = [i for i in range(args.size) if group_of(i) in six.access]
                truth = np.asarray(allowed)[
                    np.argsort(-(qvecs @ vectors[allowed].T), axis=1)[:, :10]
                ].tolist()
                row.append((wide, wide / wide_base, overlap(dense_ids(index, qvecs, six, int), truth)))
            index.close()
            table.append(row)
            print(row, flush=True)

        if not args.skip_exact:
            local("local index, exact (below 200k)", 200_000)
        if args.hnsw:
            local("local index, HNSW (M=32, ef 512)", 1)
        if not args.no_milvus:
            target = MilvusTarget(uri=str(Path(tmp) / "milvus.db"), collection=f"p_{uuid.uuid4().hex[:8]}")
            store = MilvusStore.create(target, MilvusBuild(embedder="bench", dim=DIM))
            started = time.perf_counter()
            store.upsert(rows(tokens, vectors, range(args.size)))
            store.flush()
            print(
                f"Milvus Lite: {args.size} rows written in {time.perf_counter() - started:.0f} s", flush=True
            )
            positions = {key(f"c{i}"): i for i in range(args.size)}
            few = args.milvus_queries or args.queries
            before = load()
            cold, base, warm = paired(store, qvecs[:few], qtokens[:few], one)
            found = dense_ids(store, qvecs[:few], one, positions.__getitem__)
            table.append(
                [
                    "Milvus Lite (HNSW M=32, ef 64)",
                    base,
                    warm,
                    warm / base,
                    cold,
                    overlap(found, alone[:few]),
                    overlap(found, exact[:few]),
                    f"{before} → {load()}",
                ]
            )
            print(table[-1], flush=True)
            store.client.drop_collection(target.collection)
            store.client.drop_collection(target.files_collection)
            store.close()
    print(f"\nload after: {load()}\n")
    print(
        "| store | hybrid p50, no filter (ms) | hybrid p50, 10 % filter (ms) | ratio | first filtered query (ms) "
        "| recall@10 vs separate index | recall@10 vs exact | load (1/5/15 min) before → after |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for name, base, warm, ratio, cold, rec_alone, rec_exact, loads, *hnsw in table:
        print(
            f"| {name} | {base:.1f} | {warm:.1f} | {ratio:.2f} | {cold:.1f} | {rec_alone:.3f} | {rec_exact:.3f} "
            f"| {loads} |"
        )
        if hnsw:
            unfiltered, (ms, ratio6, rec) = hnsw
            print(f"| {name}, no filter: the graph's own recall@10 | | | | | | {unfiltered:.3f} | |")
            print(
                f"| {name}, 60 % filter (IDSelector in the graph) | | {ms:.1f} | {ratio6:.2f} | | | {rec:.3f} | |"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
