"""The permission filter at 100k chunks with 10 access groups, on the local index and on Milvus Lite.

Not a test: prints a Markdown table that docs/benchmarks.md quotes.

Data as in bench/milvus_store.py: a synthetic English corpus (Zipfian pseudo-words, 60-120 tokens per chunk,
already tokenised) with random 384-d unit vectors (cheap: no model runs, and random vectors are the hard
case for an ANN graph). 20 chunks per document; document d is readable by group ``g{d % 10}`` only, so a
caller in one group may read 10 % of the documents. Both stores get the rows through their real write
paths and are searched through the store API the retrievers use, with the same ``Filters`` the server
builds for a caller (``Filters().for_caller(["g3"])``): hybrid = dense top 30 + BM25 top 30, RRF, then
the final 10 chunks fetched.

- p50 hybrid unfiltered vs. filtered (warm: the local index caches a filter's mask per generation; the
  first filtered query, which builds the mask, is reported as "cold").
- recall@10 of the permitted documents: the filtered dense top 10 against the dense top 10 of a separate
  index holding only the permitted chunks (same vectors; exact search), and against numpy's exact answer.
- HNSW (``--hnsw``): the same local index built as an HNSW graph (M=32, efConstruction=80), searched with
  the 10 % filter (below 50,000 allowed positions the filter scores the allowed vectors directly) and with
  a 60 % one (6 groups: FAISS's IDSelectorBitmap inside the graph walk).

    python bench/permissions.py --size 100000 --queries 100 --hnsw
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


def p50(store, qvecs, qtokens, filters) -> tuple[float, float]:
    """(first query ms, p50 ms of the rest) of hybrid search under ``filters``."""
    started = time.perf_counter()
    hybrid(store, qvecs[0], qtokens[0], filters)
    first = (time.perf_counter() - started) * 1000
    ms = []
    for qvec, toks in zip(qvecs[1:], qtokens[1:], strict=True):
        started = time.perf_counter()
        hits = hybrid(store, qvec, toks, filters)
        ms.append((time.perf_counter() - started) * 1000)
        if filters is not None:
            assert all(filters.access and c.metadata["access"][0] in filters.access for c in hits)
    return first, float(np.percentile(ms, 50))


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
    print(
        f"load {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; {args.size} chunks, {args.queries} queries"
    )
    table = []
    with tempfile.TemporaryDirectory() as tmp:
        separate = local_index(Path(tmp) / "only_g3", tokens, vectors, permitted, 200_000)
        alone = [[permitted[p] for p in ids] for ids in dense_ids(separate, qvecs, None, int)]
        separate.close()

        def local(name: str, threshold: int) -> None:
            index = local_index(Path(tmp) / name, tokens, vectors, range(args.size), threshold)
            _, base = p50(index, qvecs, qtokens, None)
            cold, warm = p50(index, qvecs, qtokens, one)
            found = dense_ids(index, qvecs, one, int)
            row = [name, base, warm, warm / base, cold, overlap(found, alone), overlap(found, exact)]
            if threshold == 1:
                every = np.argsort(-(qvecs @ vectors.T), axis=1)[:, :10].tolist()
                row.append(overlap(dense_ids(index, qvecs, None, int), every))  # the graph's own recall
                _, wide = p50(index, qvecs, qtokens, six)
                allowed = [i for i in range(args.size) if group_of(i) in six.access]
                truth = np.asarray(allowed)[
                    np.argsort(-(qvecs @ vectors[allowed].T), axis=1)[:, :10]
                ].tolist()
                row.append((wide, overlap(dense_ids(index, qvecs, six, int), truth)))
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
            store.upsert(rows(tokens, vectors, range(args.size)))
            store.flush()
            positions = {key(f"c{i}"): i for i in range(args.size)}
            _, base = p50(store, qvecs, qtokens, None)
            cold, warm = p50(store, qvecs, qtokens, one)
            found = dense_ids(store, qvecs, one, positions.__getitem__)
            table.append(
                [
                    "Milvus Lite (HNSW M=32, ef 64)",
                    base,
                    warm,
                    warm / base,
                    cold,
                    overlap(found, alone),
                    overlap(found, exact),
                ]
            )
            print(table[-1], flush=True)
            store.client.drop_collection(target.collection)
            store.client.drop_collection(target.files_collection)
            store.close()
    print(f"\nload after: {os.getloadavg()[0]:.1f}\n")
    print(
        "| store | hybrid p50, no filter (ms) | hybrid p50, 10 % filter (ms) | ratio | first filtered query (ms) "
        "| recall@10 vs separate index | recall@10 vs exact |"
    )
    print("|---|---|---|---|---|---|---|")
    for name, base, warm, ratio, cold, rec_alone, rec_exact, *hnsw in table:
        print(
            f"| {name} | {base:.1f} | {warm:.1f} | {ratio:.2f} | {cold:.1f} | {rec_alone:.3f} | {rec_exact:.3f} |"
        )
        if hnsw:
            unfiltered, (ms, rec) = hnsw
            print(f"| {name}, no filter: the graph's own recall@10 | | | | | | {unfiltered:.3f} |")
            print(
                f"| {name}, 60 % filter (IDSelector in the graph) | | {ms:.1f} | {ms / base:.2f} | | | {rec:.3f} |"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
