"""All-gold recall@10 of hybrid search vs the entity-graph retriever, over a dataset's eval index (built
or reused as ``python main.py eval`` does), for a grid of walk settings, on a dev half and the rest.

Usage:
    python bench/entity_graph.py DATASET [--grid] [--limit N] [--damping D] [--share S] [--weight W]
                                 [--title-weight T] [--misses]

Retrieval only (no brain, no reranker): the figure isolates what the graph adds. Each line gives the
first half of the questions (the dev split parameters are chosen on), the second half (held out) and
all. ``--weight walk`` ranks by the walk alone (hybrid seeds it and fills what it leaves: the default);
a number fuses the walk with hybrid by RRF at that weight. ``--misses`` prints, for every question the
chosen settings miss, where each gold passage ended in hybrid, the walk and the result, and whether it
shares a graph entity with the question.
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
from retrievers.entity_graph import EntityGraphRetriever, GraphParams, walk_first
from retrievers.factory import open_retrievers
from retrievers.fusion import reciprocal_rank_fusion


def mean(values: list[float | None]) -> float:
    kept = [v for v in values if v is not None]
    return sum(kept) / len(kept) if kept else 0.0


def halves(values: list[float | None]) -> str:
    half = len(values) // 2
    return f"dev {mean(values[:half]):.3f}  held-out {mean(values[half:]):.3f}  all {mean(values):.3f}"


def weight_arg(text: str) -> float | None:
    return None if text == "walk" else float(text)


def final(graph: EntityGraphRetriever, walked, hybrid, weight: float | None):
    if not walked:
        return hybrid
    if weight is None:
        return walk_first(walked, hybrid)
    return reciprocal_rank_fusion(
        {"hybrid": hybrid, graph.name: walked}, weights={"hybrid": 1.0, graph.name: weight}
    )


def position(ids: list[str], wanted: str) -> int | None:
    return ids.index(wanted) + 1 if wanted in ids else None


def show_misses(graph: EntityGraphRetriever, queries, hybrid, k: int, depth: int) -> None:
    g = graph.graph
    for q in queries:
        walked = graph.rank(q.question, hybrid[q.id], depth)
        ranked = [h.id for h in final(graph, walked, hybrid[q.id], graph.params.fusion_weight)]
        if all_gold_recall_at_k(ranked, q.gold_ids, k):
            continue
        seeds = g.seeds_for(q.question)
        print(f"MISS {q.question[:100]}\n     seeds {sorted(seeds)}")
        for gold in q.gold_ids:
            row = g.position.get(gold)
            names = set() if row is None else {key for key, col in g.vocab.items() if g.to_entities[col, row]}
            print(
                f"     {gold}: hybrid {position([h.id for h in hybrid[q.id]], gold)}, walk "
                f"{position([h.id for h in walked], gold)}, result {position(ranked, gold)}; "
                f"shares {sorted(names & set(seeds)) or 'no entity'} with the question"
            )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dataset")
    parser.add_argument("--limit", type=int)
    parser.add_argument("--grid", action="store_true")
    parser.add_argument("--damping", type=float, default=GraphParams.damping)
    parser.add_argument("--share", type=float, default=GraphParams.passage_seed_share)
    parser.add_argument("--weight", type=weight_arg, default=GraphParams.fusion_weight)
    parser.add_argument("--title-weight", type=float, default=GraphParams.title_weight)
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--misses", action="store_true")
    args = parser.parse_args()
    settings = Settings()
    dataset = load_dataset(resolve_dataset_dir(args.dataset), limit=args.limit, require_corpus=True)
    settings, folder = prepare_index(dataset, settings, None, progress=False)
    retrievers = open_retrievers(settings, folder)
    queries = [q for q in dataset.queries if q.gold_ids]
    depth = max(settings.candidate_k, args.k)
    started = time.perf_counter()
    hybrid = {q.id: retrievers.hybrid.search(q.question, depth) for q in queries}
    base = [all_gold_recall_at_k([h.id for h in hybrid[q.id]], q.gold_ids, args.k) for q in queries]
    print(f"{dataset.name}: {len(queries)} questions; hybrid all-gold R@{args.k}: {halves(base)}")
    grid = (
        list(itertools.product([0.7, 0.8, 0.85, 0.9], [0.01, 0.05, 0.1], [1.0, 2.0, None]))
        if args.grid
        else [(args.damping, args.share, args.weight)]
    )
    graph = EntityGraphRetriever(
        retrievers.hybrid, retrievers.index, replace(GraphParams(), title_weight=args.title_weight)
    )
    g = graph.graph
    print(
        f"graph: {len(g.ids)} passages, {len(g.vocab)} entities, {g.edges} edges "
        f"({time.perf_counter() - started:.1f} s with the hybrid searches)"
    )
    for damping, share, weight in grid:
        graph.params = replace(graph.params, damping=damping, passage_seed_share=share, fusion_weight=weight)
        began = time.perf_counter()
        recalls = []
        for q in queries:
            ranked = final(graph, graph.rank(q.question, hybrid[q.id], depth), hybrid[q.id], weight)
            recalls.append(all_gold_recall_at_k([h.id for h in ranked], q.gold_ids, args.k))
        ms = (time.perf_counter() - began) * 1000 / len(queries)
        label = "walk order" if weight is None else f"RRF weight {weight:.1f}"
        print(
            f"damping {damping:.2f} passage share {share:.2f} {label}: all-gold R@{args.k} "
            f"{halves(recalls)} (walk {ms:.1f} ms/question)"
        )
    if args.misses:  # under the settings given on the command line (the defaults unless set)
        graph.params = replace(
            graph.params, damping=args.damping, passage_seed_share=args.share, fusion_weight=args.weight
        )
        show_misses(graph, queries, hybrid, args.k, depth)
    retrievers.index.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
