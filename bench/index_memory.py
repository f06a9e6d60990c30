"""A real index folder of a million Chinese chunks: build time and peak, then what a query process holds.

Not a test: prints Markdown that docs/benchmarks.md quotes.

1. Build: ``retrievers.index.write_generation`` (the function ``ingest`` calls) writes one generation of
   ``--chunks`` rows: synthetic Chinese chunks (jieba's dictionary words drawn with its frequencies, as in
   bench/retrieval.py, already tokenised, so the tokenizer is not timed) and ``--dim``-d vectors with the
   structure of real embeddings (bench/recall_hnsw.py's real passage vectors of every shared set plus
   derived distractors, randomly rotated and cut to ``--dim`` dimensions, re-normalised). Above the HNSW
   threshold this builds the default graph (float16, M=32, efConstruction=80) on ``--threads`` threads.
   Reported: wall and CPU time, and the peak RSS above the RSS before the call (the token ids and vectors
   generated beforehand are in the baseline; the rows are made from them as the build reads them).
2. Open: a fresh process runs ``retrievers.index.open_index`` on the folder (checksums included) and
   reports its RSS after the imports, after opening, after ``--queries`` hybrid searches (the full path:
   both sides, fusion, the final 10 chunks from SQLite), and its peak.

    python bench/index_memory.py --chunks 1000000 --out /tmp/agentic_rag_bench_memory
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import argparse
import json
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from core.chunks import Chunk
from retrievers.docstore import FileRecord
from retrievers.index import BuildParams, open_index, write_generation, write_lock
from retrievers.vector_index import HnswParams

CHUNKS_PER_FILE = 20
TOP_K = 10


def status_mb(field_name: str) -> float:
    with open("/proc/self/status", encoding="ascii") as handle:
        for line in handle:
            if line.startswith(field_name + ":"):
                return int(line.split()[1]) / 1024
    return 0.0


def reset_peak() -> None:
    with open("/proc/self/clear_refs", "w", encoding="ascii") as handle:
        handle.write("5")  # Linux: VmHWM back to the current RSS


def log(message: str) -> None:
    print(
        f"[{time.strftime('%H:%M:%S')} rss {status_mb('VmRSS'):,.0f} MB] {message}",
        file=sys.stderr,
        flush=True,
    )


def structured_vectors(n: int, dim: int, n_queries: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """recall_hnsw's real + derived vectors and real queries, rotated and cut to ``dim`` dimensions."""
    import recall_hnsw

    real, queries, _ = recall_hnsw.real_vectors(
        recall_hnsw.DATA,
        recall_hnsw.all_sets(recall_hnsw.DATA),
        n_queries,
        seed,
        Path("/tmp/agentic_rag_bench"),
        "use-multilingual",
    )
    rotation, _ = np.linalg.qr(np.random.default_rng(seed).standard_normal((real.shape[1], real.shape[1])))
    cut = rotation[:, :dim].astype(np.float32)
    vectors = recall_hnsw.with_distractors(real, n - len(real), "derived", 0.02, seed)
    out = np.empty((n, dim), dtype=np.float32)
    for start in range(0, n, 100_000):
        out[start : start + 100_000] = recall_hnsw.unit_rows(vectors[start : start + 100_000] @ cut)
    return out, recall_hnsw.unit_rows(queries @ cut)


def token_ids(n: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Word ids of every chunk (one flat int32 array and chunk bounds) and the vocabulary."""
    from retrieval import chinese_vocabulary

    vocab = chinese_vocabulary(100_000)
    rng = np.random.default_rng(seed)
    sizes = rng.integers(60, 121, size=n)
    ids = np.minimum(
        np.searchsorted(vocab.cumulative, rng.random(int(sizes.sum())), side="right"), len(vocab.words) - 1
    ).astype(np.int32)
    return ids, np.concatenate([[0], np.cumsum(sizes)]), vocab.words


def rows(
    ids: np.ndarray, bounds: np.ndarray, words: np.ndarray, vectors: np.ndarray
) -> Iterator[tuple[Chunk, list[str], np.ndarray]]:
    for i in range(len(bounds) - 1):
        tokens = words[ids[bounds[i] : bounds[i + 1]]].tolist()
        chunk = Chunk(
            id=f"c{i}",
            text="".join(tokens),
            source=f"doc{i // CHUNKS_PER_FILE}.md",
            chunk_index=i % CHUNKS_PER_FILE,
            language="zh",
        )
        yield chunk, tokens, vectors[i]


def build(args: argparse.Namespace) -> dict:
    import faiss

    log(f"load average at start: {os.getloadavg()}")
    vectors, queries = structured_vectors(args.chunks, args.dim, args.queries, args.seed)
    ids, bounds, words = token_ids(args.chunks, args.seed)
    log(f"{args.chunks:,} chunks ready: {len(ids):,} tokens, {args.dim}-d vectors")
    folder = args.out / f"zh_n{args.chunks}_d{args.dim}"
    shutil.rmtree(folder, ignore_errors=True)
    now = time.time()
    files = [
        FileRecord(
            source=f"doc{f}.md",
            file_hash=f"{f:064x}",
            mtime=now,
            size=4096,
            n_chunks=CHUNKS_PER_FILE,
            ingested_at=now,
        )
        for f in range((args.chunks + CHUNKS_PER_FILE - 1) // CHUNKS_PER_FILE)
    ]
    faiss.omp_set_num_threads(args.threads)
    params = BuildParams(HnswParams(threshold=args.hnsw_threshold))
    before = status_mb("VmRSS")
    reset_peak()
    wall, cpu = time.perf_counter(), time.process_time()
    with write_lock(folder):
        generation = write_generation(
            folder, rows(ids, bounds, words, vectors), files, embedder="bench", dim=args.dim, params=params
        )
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    peak = status_mb("VmHWM") - before
    log(f"written {generation} in {wall:.0f} s wall, {cpu:.0f} s CPU; peak +{peak:,.0f} MB")
    sizes = {p.name: p.stat().st_size for p in sorted(generation.iterdir()) if p.is_file()}
    rng = np.random.default_rng(args.seed + 1)
    picked = rng.choice(len(words) - 50, size=(args.queries, 4)) + 50  # skip the 50 most frequent words
    side = args.out / f"zh_n{args.chunks}_d{args.dim}_queries"
    np.save(side.with_suffix(".npy"), queries)
    side.with_suffix(".json").write_text(json.dumps([words[p].tolist() for p in picked], ensure_ascii=False))
    return {
        "chunks": args.chunks,
        "dim": args.dim,
        "threads": args.threads,
        "load_start": os.getloadavg(),
        "build_wall_s": wall,
        "build_cpu_s": cpu,
        "build_peak_extra_mb": peak,
        "files": sizes,
        "folder": str(folder),
        "queries": str(side),
    }


def open_and_query(folder: Path, queries: Path, n: int) -> dict:
    """Runs in a fresh process: RSS of the imports, of the opened index, after ``n`` hybrid searches."""
    import faiss
    from retrieval import full_path

    faiss.omp_set_num_threads(1)
    imports = status_mb("VmRSS")
    wall, cpu = time.perf_counter(), time.process_time()
    index = open_index(folder)
    opened = status_mb("VmRSS"), status_mb("VmHWM")
    open_wall, open_cpu = time.perf_counter() - wall, time.process_time() - cpu
    qvecs = np.load(queries.with_suffix(".npy"))
    tokens = json.loads(queries.with_suffix(".json").read_text(encoding="utf-8"))
    search = full_path(index, "convex", 50, tokens, qvecs)
    cpu_ms = []
    for i in range(min(n, len(tokens))):
        c0 = time.thread_time_ns()
        hits = search(i)
        cpu_ms.append((time.thread_time_ns() - c0) / 1e6)
        assert len(hits) == TOP_K
    return {
        "rss_imports_mb": imports,
        "rss_opened_mb": opened[0],
        "peak_while_opening_mb": opened[1],
        "open_wall_s": open_wall,
        "open_cpu_s": open_cpu,
        "rss_after_queries_mb": status_mb("VmRSS"),
        "peak_mb": status_mb("VmHWM"),
        "queries": len(cpu_ms),
        "query_cpu_p50_ms": float(np.percentile(cpu_ms, 50)),
        "query_cpu_p95_ms": float(np.percentile(cpu_ms, 95)),
        "vector_index": type(index.vectors.index).__name__,
        "ef_search": index.vectors.ef_search,
    }


def report(built: dict, opened: dict) -> str:
    mb = 1e6
    files = built["files"]
    held = opened["rss_opened_mb"] - opened["rss_imports_mb"]
    lines = [
        f"## A real index folder: {built['chunks']:,} Chinese chunks, {built['dim']}-d "
        f"({opened['vector_index']}, efSearch {opened['ef_search']})",
        "",
        "| | figure |",
        "|---|---:|",
        f"| build (`write_generation`, {built['threads']} FAISS threads), wall | {built['build_wall_s']:,.0f} s |",
        f"| build CPU (all threads) | {built['build_cpu_s']:,.0f} s |",
        f"| build peak RSS above its start | {built['build_peak_extra_mb']:,.0f} MB |",
        *(f"| file {name} | {size / mb:,.1f} MB |" for name, size in files.items()),
        f"| query process: RSS after imports | {opened['rss_imports_mb']:,.0f} MB |",
        f"| query process: RSS with the index open | {opened['rss_opened_mb']:,.0f} MB |",
        f"| **held by the opened index** (difference) | **{held:,.0f} MB** |",
        f"| query process: peak while opening | {opened['peak_while_opening_mb']:,.0f} MB |",
        f"| open_index (checksums included), wall / CPU | {opened['open_wall_s']:.1f} s / {opened['open_cpu_s']:.1f} s |",
        f"| RSS after {opened['queries']} hybrid searches | {opened['rss_after_queries_mb']:,.0f} MB |",
        f"| hybrid full path, CPU p50 / p95 | {opened['query_cpu_p50_ms']:.2f} / {opened['query_cpu_p95_ms']:.2f} ms |",
        "",
        f"Load average at the start of the build: {built['load_start']}; at the end: {os.getloadavg()}.",
    ]
    return "\n".join(lines)


def hot_path(folder: Path, ef_values: list[int], n: int, seed: int) -> str:
    """On the opened folder: the floor (both engines, ids only) and the hybrid full path, CPU per query on
    one thread, at each efSearch and exact (a flat index over ``vectors.npy``), with HNSW's recall@10
    against exact search. Keyword queries: bench/retrieval.py's (2-6 words drawn with their frequencies)."""
    import faiss
    from retrieval import Latency, full_path, latencies, make_queries, make_vocabulary

    from retrievers.index import Index
    from retrievers.vector_index import VectorIndex

    index = open_index(folder)
    qvecs = np.load(folder.parent / f"{folder.name}_queries.npy")[:n]
    tokens = make_queries(make_vocabulary("zh", 100_000, seed), len(qvecs), np.random.default_rng(seed + 100))
    flat = VectorIndex(faiss.IndexFlatIP(index.vectors.dim))
    flat.index.add(np.ascontiguousarray(np.load(index.generation / "vectors.npy", mmap_mode="r")))
    faiss.omp_set_num_threads(1)
    truth = [flat.search(q, TOP_K)[0] for q in qvecs]
    engines = [(VectorIndex(index.vectors.index, ef), f"HNSW efSearch {ef}") for ef in ef_values]
    rows = [
        f"## Hot path on the opened {index.size:,}-chunk folder, {len(qvecs)} queries, top 10 of 50 per side, "
        "one thread (CPU ms)",
        "",
        "| vector side | recall@10 vs exact | floor CPU p50 | full path CPU p50 | full path CPU p95 | x floor |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for vectors, label in [*engines, (flat, "exact (IndexFlatIP)")]:
        if vectors.is_hnsw:  # one FAISS graph shared by every efSearch: set this one's before use
            faiss.downcast_index(vectors.index).hnsw.efSearch = vectors.ef_search
        found = [vectors.search(q, TOP_K)[0] for q in qvecs]
        recall = np.mean(
            [len(set(f.tolist()) & set(t.tolist())) / TOP_K for f, t in zip(found, truth, strict=True)]
        )
        floor = Latency.of(
            latencies(
                lambda i, v=vectors: (index.bm25.top_k(tokens[i], 50), v.search(qvecs[i], 50)), len(qvecs)
            )
        )
        bench = Index(index.folder, index.generation, index.manifest, index.docstore, vectors, index.bm25)
        full = Latency.of(latencies(full_path(bench, "convex", 50, tokens, qvecs), len(qvecs)))
        rows.append(
            f"| {label} | {recall:.3f} | {floor.cpu_p50:.2f} | {full.cpu_p50:.2f} | {full.cpu_p95:.2f} "
            f"| {full.cpu_p50 / floor.cpu_p50:.2f} |"
        )
        log(rows[-1])
    return "\n".join([*rows, "", f"Load average at the end: {os.getloadavg()}."])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--chunks", type=int, default=1_000_000)
    p.add_argument("--dim", type=int, default=384)
    p.add_argument("--queries", type=int, default=200)
    p.add_argument("--threads", type=int, default=2, help="FAISS threads for the HNSW build")
    p.add_argument("--hnsw-threshold", type=int, default=HnswParams().threshold)
    p.add_argument("--out", type=Path, default=Path("/tmp/agentic_rag_bench_memory"))
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--open-only", type=Path, help=argparse.SUPPRESS)  # the child: folder to open
    p.add_argument("--query-file", type=Path, help=argparse.SUPPRESS)
    p.add_argument(
        "--hot-path", default="", help="comma-separated efSearch values: also time the hybrid hot path"
    )
    p.add_argument("--reuse", action="store_true", help="skip the build and the open: use --out's folder")
    args = p.parse_args(argv)
    if args.open_only:
        print(json.dumps(open_and_query(args.open_only, args.query_file, args.queries)))
        return 0
    if args.chunks < 11_235 + 1 or args.dim > 512:
        p.error("--chunks must exceed the 11,235 real passages and --dim must be at most 512")
    ef_values = [int(x) for x in args.hot_path.split(",") if x.strip()]
    folder = args.out / f"zh_n{args.chunks}_d{args.dim}"
    if args.reuse:
        print(hot_path(folder, ef_values, args.queries, args.seed))
        return 0
    args.out.mkdir(parents=True, exist_ok=True)
    built = build(args)
    log("opening the index in a fresh process")
    child = subprocess.run(
        [
            sys.executable,
            __file__,
            "--open-only",
            built["folder"],
            "--query-file",
            built["queries"],
            "--queries",
            str(args.queries),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    if child.returncode:
        print(child.stderr, file=sys.stderr)
        return child.returncode
    opened = json.loads(child.stdout.strip().splitlines()[-1])
    (args.out / "result.json").write_text(json.dumps({"build": built, "open": opened}, indent=1))
    print(report(built, opened))
    if ef_values:
        print("\n" + hot_path(folder, ef_values, args.queries, args.seed))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
