"""Keyword (BM25) ranking in Milvus with its own analyzers against the project's tokenizer.

Not a test: prints a Markdown table that docs/benchmarks.md quotes. For each dataset, the same passages
(title + text) are ranked for each question by BM25 only, four ways:

- ours, local: ``retrievers.bm25.BM25Index`` over ``core.tokenize`` tokens (the local store);
- ours, Milvus: the same tokens in Milvus's BM25 function (hex words + ``standard`` analyzer: what
  ``MilvusStore`` does);
- Milvus ``jieba`` analyzer on the raw text (Milvus's choice for Chinese, also splits Latin words);
- Milvus ``standard`` analyzer on the raw text (Milvus's default, for English).

Scores: recall@10 and nDCG@10 against the dataset's gold passages, first ``--limit`` questions.

    python bench/milvus_analyzer.py cmrc2018_trial rgb_en_fact --limit 200
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from core.tokenize import tokenize  # noqa: E402
from evaluators.datasets import load_dataset, resolve_dataset_dir  # noqa: E402
from retrievers.bm25 import BM25Index  # noqa: E402
from retrievers.milvus_store import MilvusTarget, connect, encode_tokens  # noqa: E402

K = 10


def ndcg(ranked: list[str], gold: set[str]) -> float:
    dcg = sum(1 / math.log2(i + 2) for i, d in enumerate(ranked[:K]) if d in gold)
    ideal = sum(1 / math.log2(i + 2) for i in range(min(len(gold), K)))
    return dcg / ideal if ideal else 0.0


def milvus_rankings(client, name: str, analyzer: str, docs, queries: list[str], encode) -> list[list[str]]:
    from pymilvus import DataType, Function, FunctionType

    schema = client.create_schema(auto_id=False, enable_dynamic_field=False)
    schema.add_field("pk", DataType.VARCHAR, is_primary=True, max_length=256)
    schema.add_field(
        "body",
        DataType.VARCHAR,
        max_length=65535,
        enable_analyzer=True,
        analyzer_params={"tokenizer": analyzer},
    )
    schema.add_field("sparse", DataType.SPARSE_FLOAT_VECTOR)
    schema.add_field("placeholder", DataType.FLOAT_VECTOR, dim=2)
    schema.add_function(
        Function(
            name="bm25",
            function_type=FunctionType.BM25,
            input_field_names=["body"],
            output_field_names=["sparse"],
        )
    )
    index = client.prepare_index_params()
    index.add_index(
        "sparse",
        index_type="SPARSE_INVERTED_INDEX",
        metric_type="BM25",
        params={"bm25_k1": 1.2, "bm25_b": 0.75},
    )
    index.add_index("placeholder", index_type="FLAT", metric_type="L2")
    client.create_collection(name, schema=schema, index_params=index)
    rows = [{"pk": d.id, "body": encode(f"{d.title}\n{d.text}"), "placeholder": [0.0, 0.0]} for d in docs]
    for start in range(0, len(rows), 500):
        client.insert(name, rows[start : start + 500])
    client.flush(name)
    out = []
    for query in queries:
        text = encode(query)
        hits = (
            client.search(name, data=[text], anns_field="sparse", limit=K, output_fields=[])[0]
            if text
            else []
        )
        out.append([h["pk"] for h in hits])
    return out


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("datasets", nargs="+")
    parser.add_argument("--limit", type=int, default=200)
    args = parser.parse_args()
    table = []
    with tempfile.TemporaryDirectory() as tmp:
        client = connect(MilvusTarget(uri=str(Path(tmp) / "a.db"), collection="unused"))
        for name in args.datasets:
            data = load_dataset(resolve_dataset_dir(name), limit=args.limit, require_corpus=True)
            queries = [q for q in data.queries if q.gold_ids]
            docs = data.corpus
            bm25 = BM25Index.build([tokenize(f"{d.title}\n{d.text}") for d in docs])
            ours_local = []
            for q in queries:
                positions, _ = bm25.top_k(tokenize(q.question), K, None)
                ours_local.append([docs[int(p)].id for p in positions])
            ranked = {"ours, local": ours_local}
            questions = [q.question for q in queries]
            ranked["ours, Milvus BM25"] = milvus_rankings(
                client, f"{name}_ours", "standard", docs, questions, lambda t: encode_tokens(tokenize(t))
            )
            ranked["Milvus jieba analyzer"] = milvus_rankings(
                client, f"{name}_jieba", "jieba", docs, questions, str
            )
            ranked["Milvus standard analyzer"] = milvus_rankings(
                client, f"{name}_standard", "standard", docs, questions, str
            )
            for label, lists in ranked.items():
                golds = [set(q.gold_ids) for q in queries]
                rec = np.mean([len(set(r) & g) / len(g) for r, g in zip(lists, golds, strict=True)])
                nd = np.mean([ndcg(r, g) for r, g in zip(lists, golds, strict=True)])
                table.append((name, len(queries), label, rec, nd))
                print(table[-1], flush=True)
        client.close()
    print("\n| dataset | questions | BM25 tokens | recall@10 | nDCG@10 |\n|---|---|---|---|---|")
    for name, n, label, rec, nd in table:
        print(f"| {name} | {n} | {label} | {rec:.3f} | {nd:.3f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
