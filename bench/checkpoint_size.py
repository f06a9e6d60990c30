"""Checkpoint database size after many turns on one conversation thread.

Not a test: prints one line of figures. Indexes the bundled guide (docs/guide) into a temporary folder,
then asks ``--turns`` questions on one thread through ``graph.ask`` with a SQLite checkpointer (offline
brain, lexical reranker), and reports the database file size. ``--cli-cap`` also applies the checkpoint
cap after each turn the way the CLI did before the library applied it itself.

    python bench/checkpoint_size.py --turns 100
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from app import ask, build_context, build_graph  # noqa: E402
from config import load_settings  # noqa: E402
from ingestion.pipeline import ingest_paths  # noqa: E402
from memory.checkpointer import open_checkpointer  # noqa: E402
from memory.threads import cap_checkpoints  # noqa: E402
from retrievers.factory import embedder_for  # noqa: E402

QUESTIONS = [
    "How does hybrid search merge results?",
    "混合检索是如何合并结果的？",
    "What is the default chunk size?",
    "那它的重叠是多少？",
    "How do I rebuild the index?",
    "HNSW 的性能问题怎么解决？",
    "What does the reranker do?",
    "如何查看对话线程？",
]


def checkpoint_bytes(db: Path) -> int:
    """The file size once the write-ahead log is folded into it."""
    with sqlite3.connect(db) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return db.stat().st_size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=100)
    parser.add_argument(
        "--cli-cap", action="store_true", help="cap checkpoints after each turn, as the CLI did"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        settings = load_settings(
            index_dir=folder / "index",
            checkpoint_db=folder / "cp.sqlite",
            reranker="lexical",
            brain="offline",
        )
        ingest_paths(
            [ROOT / "docs" / "guide"],
            settings,
            embedder_for(settings),
            index_dir=settings.index_dir,
            progress=False,
        )
        context = build_context(settings)
        started = time.process_time()
        with open_checkpointer(sqlite_path=settings.checkpoint_db) as saver:
            app = build_graph(checkpointer=saver)
            for turn in range(args.turns):
                ask(app, QUESTIONS[turn % len(QUESTIONS)], context=context, thread_id="bench")
                if args.cli_cap:
                    cap_checkpoints(saver, "bench", settings.max_checkpoints_per_thread)
            with sqlite3.connect(settings.checkpoint_db) as conn:
                kept = conn.execute("SELECT COUNT(*) FROM checkpoints").fetchone()[0]
        size = checkpoint_bytes(settings.checkpoint_db)
        cpu = time.process_time() - started
        print(
            f"turns={args.turns} checkpoints_kept={kept} db_bytes={size} ({size / 1e6:.2f} MB) "
            f"bytes_per_turn={size / args.turns:.0f} cpu_s={cpu:.1f}"
        )


if __name__ == "__main__":
    main()
