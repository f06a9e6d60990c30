"""Answer cache: latency of a question answered by the graph (miss), asked again (exact hit) and
paraphrased (semantic hit). Not a test: prints Markdown for docs/evaluation.md.

The corpus is the tests' bilingual fixture corpus; the paraphrases are hand-written pairs (written before
measuring, none tuned). Wall time is noisy on a shared machine, so CPU time of this process is shown too.

    python bench/cache_latency.py
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from app.wiring import build_context
from config import load_settings
from graph.builder import build_graph
from graph.run import ask
from ingestion.indexing import index_chunks
from retrievers.factory import embedder_for
from tests.graph_fixtures import graph_corpus

PAIRS = [
    ("BM25 和向量检索有什么区别？", "BM25 与向量检索的区别是什么？"),
    ("混合检索的常数 k 取多少？", "混合检索里常数 k 是多少？"),
    ("安装需要什么 Python 版本？", "安装时需要哪个版本的 Python？"),
    ("中文关键词检索怎么切词？", "中文关键词检索如何切词？"),
    ("What does error code E-4711 mean?", "What is the meaning of error code E-4711?"),
    ("When does the vector index switch to HNSW?", "At what point does the vector index switch to HNSW?"),
    (
        "Which parameters does keyword search use for BM25?",
        "What parameters are used for BM25 in keyword search?",
    ),
    ("Who started the Harbor Lights Festival?", "Who was the founder of the Harbor Lights Festival?"),
]


def timed(app, question: str, context) -> tuple[float, float, str]:
    wall, cpu = time.perf_counter(), time.process_time()
    result = ask(app, question, context=context)
    event = next((e for e in result.trace if e.node == "lookup_cache"), None)
    decision = f"{event.decision.value} {event.detail.split(':')[0]}".strip() if event else "off"
    return (time.perf_counter() - wall) * 1000, (time.process_time() - cpu) * 1000, decision


def main() -> int:
    folder = Path(tempfile.mkdtemp())
    settings = load_settings(index_dir=folder / "index", reranker="lexical", brain="offline")
    index_chunks(
        graph_corpus(), settings, embedder_for(settings), index_dir=settings.index_dir, progress=False
    )
    context = build_context(settings)
    app = build_graph()
    rows: dict[str, list[tuple[float, float]]] = {
        "miss": [],
        "exact": [],
        "semantic": [],
        "paraphrase missed": [],
    }
    for question, paraphrase in PAIRS:
        wall, cpu, _ = timed(app, question, context)
        rows["miss"].append((wall, cpu))
        wall, cpu, _ = timed(app, question.rstrip("？?") + " ", context)
        rows["exact"].append((wall, cpu))
        wall, cpu, decision = timed(app, paraphrase, context)
        rows["semantic" if decision.startswith("cache_hit") else "paraphrase missed"].append((wall, cpu))
    print(
        f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs, reranker lexical, offline brain\n"
    )
    print("| run | n | wall p50 ms | CPU p50 ms |")
    print("|---|---:|---:|---:|")
    for name, values in rows.items():
        if values:
            print(
                f"| {name} | {len(values)} | {statistics.median(v[0] for v in values):.1f} | "
                f"{statistics.median(v[1] for v in values):.1f} |"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
