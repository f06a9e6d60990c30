"""Hybrid fusion variants replayed on the real retrievers' candidate lists, nDCG@10 per set.

Not a test: prints a Markdown table that docs/evaluation.md quotes. For every query of every set the
dense and BM25 retrievers of the evaluation index (``python main.py eval`` builds and caches the same
index; RGB with its counterfactual passages planted) return their top ``candidate_k`` (30) positions and
scores once; each fusion is then replayed on those lists. The shipped fusions come from
``retrievers.fusion``; the per-query weightings tried for issue 10 are defined here:

- ``conf b``: each side's confidence is how far its top hit stands above the rest of its list
  (1 - mean of its min-max scaled scores at ranks 2-10); the dense share is ``b * c_dense / (b * c_dense
  + (1 - b) * c_keyword)``, so a side whose list is flat counts less on that query;
- ``dbsf w``: distribution-based score fusion (each list scaled by its mean +- 3 standard deviations);
- ``agree b``: dense share ``b`` times the overlap of the two top-10 lists (trust dense where it agrees).

Two BM25 rows show how much its RGB figure depends on corpus order: BM25 breaks exact score ties by
index position, and the planted counterfactual copies (which tie their true passage whenever the
changed word is not a query term) are indexed after the corpus. ``ties random`` is the expected nDCG@10
with exact ties in random order (mean of 50 shuffles), ``ties reversed`` puts later positions first.

    python bench/fusion_replay.py                      # every set with a corpus
    python bench/fusion_replay.py scifact_train cmrc2018_trial --limit 200
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from config import load_settings
from evaluators.datasets import (
    has_counterfactuals,
    load_dataset,
    plant_counterfactuals,
    resolve_dataset_dir,
    shared_data_dir,
)
from evaluators.metrics import ndcg_at_k
from evaluators.modes import prepare_index
from retrievers.factory import build_retrievers, embedder_for
from retrievers.fusion import Ranking, convex, minmax_unit, rrf
from retrievers.store import open_store

Lists = dict[str, Ranking]
Fusion = Callable[[Lists, random.Random], list[int]]


def candidate_lists(name: str, limit: int | None) -> tuple[list[Lists], list[list[str]], dict[int, str]]:
    settings = load_settings(brain="offline")
    dataset = load_dataset(resolve_dataset_dir(name), limit=limit, require_corpus=True)
    if has_counterfactuals(dataset):
        dataset = plant_counterfactuals(dataset)
    settings, folder = prepare_index(dataset, settings, None, progress=False)
    store = open_store(settings, folder)
    retrievers = build_retrievers(store, settings, embedder_for(settings))
    depth = settings.candidate_k
    lists, golds, positions = [], [], set()
    for query in dataset.queries:
        pair = {
            "vector": retrievers.vector.rank(query.question, depth),
            "keyword": retrievers.keyword.rank(query.question, depth),
        }
        lists.append(pair)
        golds.append(list(query.gold_ids))
        positions.update(pair["vector"].keys, pair["keyword"].keys)
    ids = {p: chunk.id for p, chunk in store.chunks_at(positions).items()}
    store.close()
    if has_counterfactuals(dataset):
        print(f"{name}: {tied_pairs(lists, golds, ids)}", file=sys.stderr)
    return lists, golds, ids


def tied_pairs(lists: list[Lists], golds: list[list[str]], ids: dict[int, str]) -> str:
    """How often dense prefers a planted copy over a true passage with exactly the same BM25 score."""
    ties = copy_first = 0
    for r, gold in zip(lists, golds, strict=True):
        bm25 = {ids[k]: s for k, s in zip(r["keyword"].keys, r["keyword"].scores, strict=True)}
        dense = {ids[k]: s for k, s in zip(r["vector"].keys, r["vector"].scores, strict=True)}
        for copy in (i for i in bm25 if "::counterfactual" in i):
            for true in (g for g in gold if g in bm25 and abs(bm25[g] - bm25[copy]) < 1e-6):
                if true in dense and copy in dense:
                    ties += 1
                    copy_first += dense[copy] > dense[true]
    return f"{ties} (true, planted copy) pairs tie exactly in BM25 with both in the dense list; dense puts the copy first in {copy_first}"


def side(name: str) -> Fusion:
    return lambda r, _: list(r[name].keys)


def keyword_ties(order: str) -> Fusion:
    """BM25's list with exact score ties reordered: at random, or later positions first."""

    def fuse(r: Lists, rng: random.Random) -> list[int]:
        keys, scores = list(r["keyword"].keys), list(r["keyword"].scores)
        tie = {k: (rng.random() if order == "random" else -k) for k in keys}
        return sorted(keys, key=lambda k: (-round(scores[keys.index(k)], 5), tie[k]))

    return fuse


def weighted(r: Lists, units: dict[str, np.ndarray], share: float) -> list[int]:
    score: dict[int, float] = {}
    best: dict[int, int] = {}
    for name, weight in (("vector", share), ("keyword", 1 - share)):
        for rank, (key, unit) in enumerate(zip(r[name].keys, units[name].tolist(), strict=True)):
            score[key] = score.get(key, 0.0) + weight * unit
            best[key] = min(best.get(key, rank), rank)
    return sorted(score, key=lambda k: (-score[k], best[k], k))


def confidence(base: float) -> Fusion:
    def fuse(r: Lists, _: random.Random) -> list[int]:
        units = {n: minmax_unit(r[n].scores) for n in r}
        c = {n: (1 - float(np.mean(u[1:10]))) if len(u) > 1 else 1.0 for n, u in units.items()}
        share = base * c["vector"] / max(1e-9, base * c["vector"] + (1 - base) * c["keyword"])
        return weighted(r, units, share)

    return fuse


def dbsf(share: float) -> Fusion:
    def scale(scores: list[float]) -> np.ndarray:
        s = np.asarray(scores, dtype=np.float64)
        if s.size < 2 or s.std() == 0:
            return np.ones_like(s)
        low, high = s.mean() - 3 * s.std(), s.mean() + 3 * s.std()
        return np.clip((s - low) / (high - low), 0, 1)

    return lambda r, _: weighted(r, {n: scale(list(r[n].scores)) for n in r}, share)


def agreement(base: float) -> Fusion:
    def fuse(r: Lists, _: random.Random) -> list[int]:
        overlap = len(set(r["vector"].keys[:10]) & set(r["keyword"].keys[:10])) / 10
        return weighted(r, {n: minmax_unit(r[n].scores) for n in r}, base * overlap)

    return fuse


def variants(vector_weight: float, keyword_weight: float) -> dict[str, tuple[Fusion, int]]:
    """Name -> (fusion, repeats); repeats > 1 averages over seeded random tie orders."""
    weights = {"vector": vector_weight, "keyword": keyword_weight}
    return {
        "dense alone (naive)": (side("vector"), 1),
        "BM25 alone (keyword), ties by position (as shipped)": (side("keyword"), 1),
        "BM25 alone, exact ties random (mean of 50)": (keyword_ties("random"), 50),
        "BM25 alone, exact ties reversed": (keyword_ties("reversed"), 1),
        "**hybrid: convex min-max (default)**": (lambda r, _: [f.key for f in convex(r, weights=weights)], 1),
        "hybrid: RRF, dense weight 0.5 (old default)": (
            lambda r, _: [f.key for f in rrf(r, weights={"vector": 0.5, "keyword": 1.0})],
            1,
        ),
        **{f"conf b={b}": (confidence(b), 1) for b in (0.2, 0.3, 0.5)},
        **{f"dbsf w={w}": (dbsf(w), 1) for w in (0.2, 0.3)},
        **{f"agree b={b}": (agreement(b), 1) for b in (0.3, 0.5)},
    }


def ndcg(
    lists: list[Lists], golds: list[list[str]], ids: dict[int, str], fusion: Fusion, repeats: int
) -> float:
    values = []
    for seed in range(repeats):
        rng = random.Random(seed)
        for r, gold in zip(lists, golds, strict=True):
            value = ndcg_at_k([ids[k] for k in fusion(r, rng)][:10], gold, 10)
            if value is not None:
                values.append(value)
    return float(np.mean(values))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("sets", nargs="*", help="set names (default: every set with a corpus)")
    parser.add_argument("--limit", type=int, help="first N queries of each set")
    args = parser.parse_args(argv)
    data = shared_data_dir()
    sets = args.sets or sorted(
        p.name
        for p in (data.iterdir() if data else [])
        if (p / "corpus.jsonl").is_file() and (p / "corpus.jsonl").stat().st_size
    )
    if not sets:
        print("error: no sets given and no shared data folder found; name the sets", file=sys.stderr)
        return 2
    settings = load_settings(brain="offline")
    table = variants(settings.vector_weight, settings.keyword_weight)
    results: dict[str, dict[str, float]] = {}
    for name in sets:
        start = time.perf_counter()
        lists, golds, ids = candidate_lists(name, args.limit)
        results[name] = {v: ndcg(lists, golds, ids, f, n) for v, (f, n) in table.items()}
        print(
            f"{name}: {len(lists)} queries, {time.perf_counter() - start:.0f} s", file=sys.stderr, flush=True
        )
    print("| fusion | " + " | ".join(sets) + " |")
    print("|---|" + "---:|" * len(sets))
    for v in table:
        print(f"| {v} | " + " | ".join(f"{results[s][v]:.3f}" for s in sets) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
