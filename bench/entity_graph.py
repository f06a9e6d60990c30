"""All-gold recall@10 of hybrid search vs hybrid fused with the entity-graph walk, over a dataset's
eval index (built or reused as ``python main.py eval`` does), for a small grid of walk settings.

Usage:
    python bench/entity_graph.py DATASET [--grid] [--limit N] [--damping D] [--weight W]

Retrieval only (no brain, no reranker): the figure isolates what the graph adds. ``--grid`` prints
every (damping, fusion weight) pair; choose on one set and report the other with the chosen pair.
"""

from __future__ import annotations

import argparse
import itertools
import sys
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from config import Settings
from evaluators.datasets import load_dataset, resolve_dataset_dir
from evaluators.metrics import all_gold_recall_at_k
from evaluators.modes import prepare_index
from retrievers.entity_graph import EntityGraphRetriever, GraphParams
from retrievers.factory import open_retrievers
from retrievers.fusion import reciprocal_rank_fusion


def mean(values: list[float | None]) -> float:
    kept = [v for v in values if v is not None]
    return sum(kept) / len(kept) if kept else 0.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dataset")
    parser.add_argument("--limit", type=int)
    parser.add_argument("--grid", action="store_true")
    parser.add_argument("--damping", type=float, default=GraphParams.damping)
    parser.add_argument("--weight", type=float, default=GraphParams.fusion_weight)
    parser.add_argument("--share", type=float, default=GraphParams.passage_seed_share)
    parser.add_argument("--k", type=int, default=10)
    args = parser.parse_args()
    settings = Settings()
    dataset = load_dataset(resolve_dataset_dir(args.dataset), limit=args.limit, require_corpus=True)
    settings, folder = prepare_index(dataset, settings, None, progress=False)
    retrievers = open_retrievers(settings, folder)
    queries = [q for q in dataset.queries if q.gold_ids]
    depth = max(settings.candidate_k, args.k)
    started = time.perf_counter()
    hybrid = {q.id: retrievers.hybrid.search(q.question, depth) for q in queries}
    base = mean([all_gold_recall_at_k([h.id for h in hybrid[q.id]], q.gold_ids, args.k) for q in queries])
    print(f"{dataset.name}: {len(queries)} questions; hybrid all-gold R@{args.k} {base:.3f}")
    grid = (
        list(itertools.product([0.3, 0.5, 0.7], [0.5, 1.0, 2.0], [0.05, 0.2, 0.5]))
        if args.grid
        else [(args.damping, args.weight, args.share)]
    )
    graph = EntityGraphRetriever(retrievers.hybrid, retrievers.index)
    g = graph.graph
    print(
        f"graph: {len(g.ids)} passages, {len(g.vocab)} entities, {g.edges} edges "
        f"({time.perf_counter() - started:.1f} s with the hybrid searches)"
    )
    for damping, weight, share in grid:
        graph.params = replace(GraphParams(), damping=damping, fusion_weight=weight, passage_seed_share=share)
        began = time.perf_counter()
        recalls = []
        for q in queries:
            walked = graph.rank(q.question, hybrid[q.id], depth)
            fused = reciprocal_rank_fusion(
                {"hybrid": hybrid[q.id], "entity_graph": walked},
                weights={"hybrid": 1.0, "entity_graph": weight},
            )
            recalls.append(all_gold_recall_at_k([h.id for h in fused], q.gold_ids, args.k))
        ms = (time.perf_counter() - began) * 1000 / len(queries)
        print(
            f"damping {damping:.1f} weight {weight:.1f} passage share {share:.2f}: all-gold R@{args.k} {mean(recalls):.3f} "
            f"({mean(recalls) - base:+.3f}; walk {ms:.1f} ms/question)"
        )
    retrievers.index.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
