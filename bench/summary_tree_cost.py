"""What the summary tree costs and changes for questions that are not about a whole document.

Usage:
    python bench/summary_tree_cost.py [--docs docs/guide bench/data/summary_set/docs] [--repeat 5]

Ingests the same folders twice into fresh local indexes, with ``summary_tree`` off and on, and reports:
ingest seconds and chunks; hybrid-search latency p50/p95 over the questions (both indexes searched in
turn, so both see the same machine load); and, for the questions that are not whole-document ones
(``tests/data/global_questions.jsonl`` lines with ``global: false``, plus the guide's five
questions), how many agentic answers, top-10 rankings and routes are the same with the tree on, and
how many were routed to the global route; and how many vector-only and keyword-only top 10s are
the same (which half of hybrid search the summary chunks move).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from app.wiring import build_context
from config import Settings
from graph.builder import build_graph
from graph.run import ask
from ingestion.pipeline import ingest_paths
from retrievers.factory import embedder_for

GUIDE_QUESTIONS = Path("tests/data/guide_questions.txt")  # the guide's five, also asked by test_milvus_store


def questions(path: Path) -> list[str]:
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    guide = GUIDE_QUESTIONS.read_text(encoding="utf-8").splitlines()
    return [row["q"] for row in rows if not row["global"]] + guide


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def route(result) -> str:
    return next((e.node for e in result.trace if e.node.startswith("retrieve_")), "none")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--docs", type=Path, nargs="+", default=[Path("docs/guide"), Path("bench/data/summary_set/docs")]
    )
    parser.add_argument("--questions", type=Path, default=Path("tests/data/global_questions.jsonl"))
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--reranker", default="lexical")
    args = parser.parse_args()
    asked = questions(args.questions)
    embedder = embedder_for(Settings())
    embedder.embed_documents(["warm-up: the model loads before either ingest is timed"])
    with tempfile.TemporaryDirectory() as tmp:
        contexts = {}
        for tree in (False, True):
            settings = Settings(
                index_dir=Path(tmp) / f"index-{tree}",
                reranker=args.reranker,
                answer_cache=False,
                summary_tree=tree,
            )
            began = time.perf_counter()
            report = ingest_paths(args.docs, settings, embedder, progress=False)
            seconds = time.perf_counter() - began
            contexts[tree] = build_context(settings)
            chunks = contexts[tree].retrievers.index.count()
            print(
                f"summary tree {'on ' if tree else 'off'}: ingest {seconds:.1f} s, {chunks} chunks, {len(report.added)} files"
            )
        for name in ("vector", "keyword", "hybrid"):
            timings: dict[bool, list[float]] = {False: [], True: []}
            for _ in range(args.repeat):
                for q in asked:
                    for tree in (False, True):
                        retriever = contexts[tree].retrievers.by_name(name)
                        began = time.perf_counter()
                        retriever.search(q, 10)
                        timings[tree].append((time.perf_counter() - began) * 1000)
            print(
                f"{name} search p50 / p95 ms ({len(timings[False])} searches each): tree off "
                f"{statistics.median(timings[False]):.2f} / {percentile(timings[False], 0.95):.1f}, on "
                f"{statistics.median(timings[True]):.2f} / {percentile(timings[True], 0.95):.1f}"
            )
        for name in ("vector", "keyword"):
            same = sum(
                [h.id for h in contexts[False].retrievers.by_name(name).search(q, 10)]
                == [h.id for h in contexts[True].retrievers.by_name(name).search(q, 10)]
                for q in asked
            )
            print(f"{name} search: same top 10 with the tree on for {same}/{len(asked)} questions")
        app = build_graph()
        same_answer = same_ranking = same_route = to_global = 0
        for q in asked:
            off = ask(app, q, context=contexts[False], mode="agentic")
            on = ask(app, q, context=contexts[True], mode="agentic")
            same_answer += off.answer == on.answer
            same_ranking += off.ranked_ids[:10] == on.ranked_ids[:10]
            same_route += route(off) == route(on)
            to_global += route(on) == "retrieve_global"
            if off.answer != on.answer:
                print(f"  differs: {q} [{route(off)} -> {route(on)}]")
        n = len(asked)
        print(
            f"{n} questions that are not whole-document ones: same answer {same_answer}/{n}, same top 10 "
            f"{same_ranking}/{n}, same route {same_route}/{n}, routed to global with the tree {to_global}/{n}"
        )
        for context in contexts.values():
            context.retrievers.index.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
