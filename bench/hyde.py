"""Does HyDE help? Retrieval with the question alone vs with a hypothetical answer, on the dev sets.

Offline, the hypothetical answer is the best first-pass sentence (``providers.offline_brain.hyde``).
Rows: ``vector`` and ``hybrid`` (the question alone), ``hyde`` (the hypothetical answer's vector mixed
with the question's, as ``HydeRetriever`` does), ``hybrid+hyde`` (RRF of the hybrid first pass and the
HyDE ranking, the route the graph would take). Also split by the offline analyzer's query type, since
the route is meant for conceptual questions only. Not a test: prints Markdown for docs/evaluation.md.

    python bench/hyde.py --sets scifact_train,hotpotqa_hipporag100 --limit 100
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from config import load_settings
from evaluators import metrics as m
from evaluators.datasets import load_dataset, resolve_dataset_dir
from evaluators.modes import prepare_index
from providers.brain.hyde import best_first_pass_sentence
from providers.offline_brain.analysis import analyze_question
from retrievers.factory import open_retrievers
from retrievers.fusion import reciprocal_rank_fusion

K = 10
ROWS = ("vector", "hybrid", "hyde", "hybrid+hyde")


def rankings(retrievers, question: str, depth: int) -> dict[str, list[str]]:
    first = retrievers.hybrid.search(question, depth)
    hypothesis = best_first_pass_sentence(question, first)
    hyde = retrievers.hyde.search(question, depth, hypothetical_answer=hypothesis or None)
    fused = reciprocal_rank_fusion({"hybrid": first, "hyde": hyde})
    return {
        "vector": [h.id for h in retrievers.vector.search(question, K)],
        "hybrid": [h.id for h in first[:K]],
        "hyde": [h.id for h in hyde[:K]],
        "hybrid+hyde": [h.id for h in fused[:K]],
    }


def measure(name: str, limit: int) -> list[str]:
    dataset = load_dataset(resolve_dataset_dir(name), limit=limit, require_corpus=True)
    settings = load_settings(reranker="none")
    settings, folder = prepare_index(dataset, settings, None, progress=False)
    retrievers = open_retrievers(settings, folder)
    scores: dict[tuple[str, str], list[tuple[float, float]]] = defaultdict(list)
    started = time.process_time()
    for query in dataset.queries:
        kind = analyze_question(query.question).query_type
        for row, ranked in rankings(retrievers, query.question, settings.candidate_k).items():
            pair = (m.recall_at_k(ranked, query.gold_ids, K), m.ndcg_at_k(ranked, query.gold_ids, K))
            if None not in pair:
                scores[(row, "all")].append(pair)
                scores[(row, kind)].append(pair)
    cpu = time.process_time() - started
    retrievers.index.close()
    kinds = sorted({kind for _row, kind in scores if kind != "all"})
    lines = [
        f"### {name} (first {len(dataset.queries)} queries, {cpu:.0f} s CPU)",
        "",
        "| rows | "
        + " | ".join(
            f"{kind} (n={len(scores[('hybrid', kind)])}) recall@10 / nDCG@10" for kind in ["all", *kinds]
        )
        + " |",
        "|---|" + "---:|" * (len(kinds) + 1),
    ]
    for row in ROWS:
        cells = []
        for kind in ["all", *kinds]:
            values = scores[(row, kind)]
            recall = sum(v[0] for v in values) / len(values)
            ndcg = sum(v[1] for v in values) / len(values)
            cells.append(f"{recall:.3f} / {ndcg:.3f}")
        lines.append(f"| {row} | " + " | ".join(cells) + " |")
    return [*lines, ""]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", default="scifact_train,hotpotqa_hipporag100,rgb_zh_fact,cmrc2018_trial")
    parser.add_argument("--limit", type=int, default=100)
    args = parser.parse_args()
    for name in args.sets.split(","):
        print("\n".join(measure(name.strip(), args.limit)), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
