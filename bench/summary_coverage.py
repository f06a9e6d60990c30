"""Whole-document questions: key-fact recall of the summary tree's answer vs top-k passages.

Usage:
    python bench/summary_coverage.py [--set bench/data/summary_set] [--k 5] [--reranker lexical]

Ingests the set's documents (public multi-section docs, zh/en) into a fresh index with the summary
tree, then for each document's question measures the share of its reference key facts (each a list
of words that must all appear, case-insensitive) found in:

- ``global top-k``: what the global route retrieves (the document's summary and section summaries);
- ``passages top-k``: the best k passages of hybrid search for the same question;
- ``answer agentic`` / ``answer hybrid``: the offline answers of the agentic mode (routed to global)
  and of the hybrid mode (the answer writer over top-k passages).

The facts were written before the summariser (``bench/data/summary_set/facts.jsonl``).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from app.wiring import build_context
from config import Settings
from core.global_intent import global_scope
from graph.builder import build_graph
from graph.run import ask
from ingestion.pipeline import ingest_paths
from retrievers.factory import embedder_for


def recall(text: str, facts: list[list[str]]) -> float:
    low = text.lower()
    return sum(all(word.lower() in low for word in fact) for fact in facts) / len(facts)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", type=Path, default=Path("bench/data/summary_set"))
    parser.add_argument("--k", type=int, default=5)
    parser.add_argument("--reranker", default="lexical")
    parser.add_argument(
        "--llm-summaries",
        action="store_true",
        help="the configured LLM (OPENAI_BASE_URL, AGENTIC_RAG_LLM_MODEL) writes the summaries; answers stay offline",
    )
    args = parser.parse_args()
    rows = [
        json.loads(x)
        for x in (args.set / "facts.jsonl").read_text(encoding="utf-8").splitlines()
        if x.strip()
    ]
    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(
            index_dir=Path(tmp) / "index",
            reranker=args.reranker,
            answer_cache=False,
            summary_tree=True,
            llm_ingest="summaries" if args.llm_summaries else "none",
            brain="auto" if args.llm_summaries else "offline",
        )
        ingest_paths([args.set / "docs"], settings, embedder_for(settings), progress=False)
        settings = settings.model_copy(update={"brain": "offline"})  # the same offline answers either way
        context = build_context(settings)
        app = build_graph()
        totals: dict[str, list[float]] = {}
        print(
            f"| document | lang | global top-{args.k} | passages top-{args.k} | answer agentic | answer hybrid |"
        )
        print("|---|---|---:|---:|---:|---:|")
        for row in rows:
            q, facts = row["question"], row["facts"]
            found = context.retrievers.summaries.search(q, args.k, scope=global_scope(q))
            passages = context.retrievers.hybrid.search(q, args.k)
            agentic = ask(app, q, context=context, mode="agentic")
            hybrid = ask(app, q, context=context, mode="hybrid")
            scores = {
                "global": recall(" ".join(h.chunk.text for h in found), facts),
                "passages": recall(" ".join(h.chunk.text for h in passages), facts),
                "answer_agentic": recall(agentic.answer, facts),
                "answer_hybrid": recall(hybrid.answer, facts),
            }
            for name, value in scores.items():
                totals.setdefault(name, []).append(value)
            print(
                f"| {row['doc']} | {row['language']} | "
                + " | ".join(f"{v:.3f}" for v in scores.values())
                + " |"
            )
        means = {name: sum(v) / len(v) for name, v in totals.items()}
        print("| **mean** | | " + " | ".join(f"**{v:.3f}**" for v in means.values()) + " |")
        context.close() if hasattr(context, "close") else context.retrievers.index.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
