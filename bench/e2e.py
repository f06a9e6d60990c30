"""End-to-end `ask` latency at scale: every mode through the real graph, offline brain.

Not a test: prints a Markdown table that docs/benchmarks.md quotes.

Corpus: every passage of the ../shared/data sets (one chunk per passage, ~11k: SciFact, HotpotQA, MuSiQue,
CMRC, DRCD, RGB zh/en), repeated with variation until ``--chunks`` (copy r > 0 rotates the passage's
sentences by r and tags the title with the copy number, so BM25 sees distinct texts of the same length).
Each base passage is embedded once with the configured embedder; a copy's vector is the base vector plus
small Gaussian noise (sigma ``--noise``), re-normalised: embedding 100k texts on a shared 2-core box would
take longer than the benchmark, and the vectors' values do not change the exact search's cost.
Questions: ``--questions`` drawn round-robin from the sets' queries.

A pass asks every question once per mode, in a fresh process-level context; the first pass is "cold" (model
loads, jieba dictionary, empty caches, SQLite pages not yet read), the second "warm" (same questions again).

    python bench/e2e.py --chunks 100000 --questions 200 --reranker lexical
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from config import load_settings
from core.chunks import Chunk
from core.text import detect_language, split_sentences
from evaluators.datasets import load_dataset, resolve_dataset_dir
from ingestion.indexing import embedding_text, index_chunks
from retrievers.factory import embedder_for
from retrievers.index import index_exists

SETS = (
    "scifact_train",
    "hotpotqa_hipporag100",
    "musique_hipporag100",
    "cmrc2018_trial",
    "drcd_dev",
    "rgb_zh_fact",
    "rgb_en_fact",
)
MODES = ("naive", "keyword", "hybrid", "hybrid_rerank", "self_query", "agentic")


def base_chunks() -> tuple[list[Chunk], list[str]]:
    """Every passage of the shared sets as one chunk, and the questions of the sets, round-robin."""
    chunks: list[Chunk] = []
    per_set: list[list[str]] = []
    for name in SETS:
        dataset = load_dataset(resolve_dataset_dir(name), require_corpus=True)
        for doc in dataset.corpus:
            chunks.append(
                Chunk(
                    id=f"{name}/{doc.id}",
                    text=doc.text,
                    title=doc.title,
                    source=f"{name}/{doc.id}",
                    heading_path=[doc.title] if doc.title else [],
                    char_end=len(doc.text),
                    language=detect_language(doc.title + " " + doc.text),
                )
            )
        per_set.append([q.question for q in dataset.queries])
    questions = [q for group in zip(*per_set, strict=False) for q in group]
    return chunks, questions


def variant(chunk: Chunk, copy: int) -> Chunk:
    sentences = split_sentences(chunk.text) or [chunk.text]
    shift = copy % len(sentences)
    text = " ".join(sentences[shift:] + sentences[:shift])
    return chunk.model_copy(
        update={
            "id": f"{chunk.id}~{copy}",
            "source": f"{chunk.source}~{copy}",
            "title": f"{chunk.title} ({copy})" if chunk.title else f"({copy})",
            "text": text,
            "char_end": len(text),
        }
    )


def build(folder: Path, n_chunks: int, n_base: int, noise: float, settings) -> tuple[int, float]:
    """Index ``n_chunks`` chunks (copies of the first ``n_base`` passages) into ``folder``."""
    started = time.perf_counter()
    base = base_chunks()[0][: min(n_chunks, n_base or n_chunks)]
    embedder = embedder_for(settings)
    log(f"embedding {len(base):,} base passages with {embedder.name}")
    base_vectors = np.vstack(
        [
            embedder.embed_documents([embedding_text(c) for c in base[i : i + 256]])
            for i in range(0, len(base), 256)
        ]
    )
    rng = np.random.default_rng(0)
    chunks: list[Chunk] = []
    blocks: list[np.ndarray] = []
    copy = 0
    while len(chunks) < n_chunks:
        take = base[: n_chunks - len(chunks)]
        chunks += take if copy == 0 else [variant(c, copy) for c in take]
        block = base_vectors[: len(take)]
        if copy:
            block = block + rng.normal(0.0, noise, block.shape).astype(np.float32)
            block /= np.linalg.norm(block, axis=1, keepdims=True)
        blocks.append(block)
        copy += 1
    log(f"indexing {len(chunks):,} chunks ({copy} copies of the base corpus)")
    index_chunks(chunks, settings, embedder, index_dir=folder, vectors=np.vstack(blocks), progress=False)
    return len(chunks), time.perf_counter() - started


def percentile(values: list[float], p: float) -> float:
    return float(np.percentile(values, p)) if values else float("nan")


def run_pass(app, context, questions: list[str], modes: list[str]) -> dict[str, dict]:
    from graph.run import ask

    out: dict[str, dict] = {}
    for mode in modes:
        wall: list[float] = []
        cpu: list[float] = []
        retrievals: list[int] = []
        stops: Counter[str] = Counter()
        nodes: dict[str, list[float]] = defaultdict(list)
        for question in questions:
            c0 = time.process_time()
            result = ask(app, question, context=context, mode=mode)
            cpu.append((time.process_time() - c0) * 1000)
            wall.append(result.latency_ms)
            retrievals.append(sum(1 for e in result.trace if e.node.startswith("retrieve_")))
            stops[result.stop_reason or "-"] += 1
            for entry in result.trace:
                nodes[entry.node].append(float(entry.ms))
        out[mode] = {
            "first": wall[0],
            "first_cpu": cpu[0],
            "later_p50": percentile(wall[1:], 50),
            "later_cpu_p50": percentile(cpu[1:], 50),
            "p50": percentile(wall, 50),
            "p95": percentile(wall, 95),
            "cpu_p50": percentile(cpu, 50),
            "retrievals": float(np.mean(retrievals)),
            "stops": dict(stops.most_common()),
            "nodes": {name: (float(np.median(ms)), len(ms) / len(questions)) for name, ms in nodes.items()},
        }
        log(f"{mode}: p50 {out[mode]['p50']:.0f} ms, p95 {out[mode]['p95']:.0f} ms")
    return out


def table(label: str, results: dict[str, dict]) -> list[str]:
    lines = [
        f"### {label}",
        "",
        "| mode | p50 ms | p95 ms | process CPU p50 ms | first question ms (CPU) | later p50 ms (CPU) "
        "| retrievals/q | per node: median ms (calls/q) | why the loop ended |",
        "|---|---:|---:|---:|---:|---:|---:|---|---|",
    ]
    for mode, r in results.items():
        nodes = ", ".join(f"{n} {ms:.1f} ({calls:.1f})" for n, (ms, calls) in r["nodes"].items())
        stops = ", ".join(f"{reason} {n}" for reason, n in r.get("stops", {}).items())
        lines.append(
            f"| {mode} | {r['p50']:.0f} | {r['p95']:.0f} | {r['cpu_p50']:.0f} | {r['first']:.0f} "
            f"({r['first_cpu']:.0f}) | {r['later_p50']:.0f} ({r['later_cpu_p50']:.0f}) | {r['retrievals']:.2f} "
            f"| {nodes} | {stops} |"
        )
    return [*lines, ""]


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--chunks", type=int, default=100_000)
    p.add_argument("--questions", type=int, default=200)
    p.add_argument("--modes", default=",".join(MODES))
    p.add_argument("--reranker", default=None, help="none | lexical | e5 (default: the settings default)")
    p.add_argument("--base", type=int, default=0, help="copy only the first N passages (0: all)")
    p.add_argument("--noise", type=float, default=0.02, help="sigma of the noise added to copies' vectors")
    p.add_argument("--index-dir", type=Path, default=Path("/tmp/agentic_rag_bench_e2e"))
    p.add_argument("--passes", type=int, default=2, help="1: cold only; 2: cold then warm")
    p.add_argument("--question-offset", type=int, default=0, help="skip this many questions first")
    p.add_argument(
        "--fresh-cache", action="store_true", help="delete the index's reranker cache first (never warmed)"
    )
    p.add_argument("--json", type=Path)
    args = p.parse_args(argv)
    modes = [m for m in args.modes.split(",") if m]
    if bad := [m for m in modes if m not in MODES]:
        p.error(f"unknown mode(s) {bad}; choose from {', '.join(MODES)}")

    settings = load_settings(brain="offline", reranker=args.reranker)
    folder = args.index_dir / f"n{args.chunks}-b{args.base}-{settings.embedder}"
    log(f"load average at start: {os.getloadavg()}")
    if not index_exists(folder):
        n, seconds = build(folder, args.chunks, args.base, args.noise, settings)
        log(f"built {n:,} chunks in {seconds:.0f} s")
    _, questions = base_chunks()
    questions = questions[args.question_offset : args.question_offset + args.questions]
    if args.fresh_cache:
        shutil.rmtree(folder / "cache", ignore_errors=True)

    from app.wiring import build_context
    from graph.builder import build_graph

    started = time.perf_counter()
    context = build_context(load_settings(brain="offline", reranker=args.reranker), index_dir=folder)
    log(f"context (index open, models) in {time.perf_counter() - started:.1f} s")
    app = build_graph()
    passes = {}
    for number in range(args.passes):
        label = "cold (first pass in a fresh process)" if number == 0 else f"warm (pass {number + 1})"
        passes[label] = run_pass(app, context, questions, modes)
    log(f"load average at end: {os.getloadavg()}")
    size = context.retrievers.index.count()
    print(f"## `ask` at {size:,} chunks, {len(questions)} questions, reranker {settings.reranker}\n")
    for label, results in passes.items():
        print("\n".join(table(label, results)))
    if args.json:
        args.json.write_text(json.dumps(passes, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
