"""Ingest throughput (passages/s) of the plain path and of Ray with 1 and 2 local workers.

Not a test. Reads, splits and embeds the files under PATH without writing any store; Ray is started
and its workers load the model before timing (a warm-up run), so the figures are the steady state.

    python bench/ray_ingest.py PATH [--workers 1,2]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from config import load_settings  # noqa: E402
from ingestion.pipeline import file_sha256, local_processor  # noqa: E402
from ingestion.sources import scan_sources  # noqa: E402
from retrievers.factory import embedder_for  # noqa: E402


def rate(process, items) -> tuple[int, float, float]:
    started, cpu = time.perf_counter(), time.process_time()
    outcomes, _ = process(items)
    passages = sum(len(o.chunks) for o in outcomes)
    return passages, time.perf_counter() - started, time.process_time() - cpu


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("path", type=Path)
    parser.add_argument("--workers", default="1,2")
    args = parser.parse_args()
    settings = load_settings(reranker="none")
    files = [p.resolve() for p in scan_sources([args.path.resolve()]).files]
    items = [(p, file_sha256(p)) for p in files]
    print(f"{len(files)} files; load {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    embedder = embedder_for(settings)
    embedder.embed_documents(["warm-up"])
    n, wall, cpu = rate(local_processor(settings, embedder, progress=False), items)
    rows = [("plain (this process)", n, wall)]
    print(rows[-1], f"driver CPU {cpu:.1f} s", flush=True)
    import ray

    from ingestion.ray_ingest import ray_processor

    for workers in [int(w) for w in args.workers.split(",")]:
        process = ray_processor(settings, workers=workers)
        rate(process, items)  # starts Ray and loads the model in each worker
        n, wall, _ = rate(process, items)
        rows.append((f"Ray, {workers} local worker(s)", n, wall))
        print(rows[-1], flush=True)
        ray.shutdown()
    print(
        f"\nload after: {os.getloadavg()[0]:.1f}\n\n| path | passages | seconds | passages/s |\n|---|---|---|---|"
    )
    for name, n, wall in rows:
        print(f"| {name} | {n} | {wall:.1f} | {n / wall:.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
