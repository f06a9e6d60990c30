"""`python main.py index stats`, `index warm` (e5 reranker windows) and `index migrate` (local -> Milvus)."""

from __future__ import annotations

import argparse
from datetime import datetime
from pathlib import Path
from typing import Any

from rich.table import Table

from cli.common import add_common, make_console, print_json, settings_from


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("index", help="inspect the index, or copy a local index into Milvus")
    p.add_argument(
        "action",
        choices=["stats", "warm", "migrate"],
        help="stats: size and settings of the selected store; warm: embed every passage window the e5 "
        "reranker may read, so later questions find them cached (resumable: Ctrl-C keeps what is done; "
        "can run beside a session); migrate: copy the local index (--index) into the Milvus collection "
        "of AGENTIC_RAG_MILVUS_* without re-embedding",
    )
    p.add_argument("--replace", action="store_true", help="migrate: overwrite a non-empty collection")
    add_common(p)
    p.set_defaults(handler=run)


def answer_cache_stats(settings, store) -> dict[str, object]:  # type: ignore[no-untyped-def]
    """Entries and hit/miss counts of the answer cache of this index generation."""
    from app.wiring import cache_path, generation_key
    from memory.answer_cache import read_cache_stats

    key = generation_key(store)
    counts = read_cache_stats(cache_path(Path(settings.index_dir)), key) if key else None
    return (counts or {"entries": 0}) | {"enabled": settings.answer_cache and key is not None}


def readable_times(stats: dict[str, Any]) -> dict[str, Any]:
    """Epoch seconds under ``*_at`` keys as ISO 8601 local times with their UTC offset."""
    return {
        key: datetime.fromtimestamp(value).astimezone().isoformat(timespec="seconds")
        if key.endswith("_at") and isinstance(value, int | float)
        else value
        for key, value in stats.items()
    }


def run(args: argparse.Namespace) -> int:
    settings = settings_from(args)
    if args.action == "migrate":
        from ingestion.migrate import migrate_to_milvus

        result = migrate_to_milvus(Path(settings.index_dir), settings, replace=args.replace)
        title = "migrated"
    elif args.action == "warm":
        from cli.ingest import timed_prewarm

        warmed, seconds = timed_prewarm(settings, show_progress=not args.json)
        result = {"reranker": settings.reranker, "reranker_windows_embedded": warmed, "seconds": seconds}
        title = "reranker warm-up"
    else:
        from retrievers.store import open_store

        store = open_store(settings)
        try:
            result = readable_times(store.stats())
            result["answer_cache"] = answer_cache_stats(settings, store)
        finally:
            store.close()
        title = "index stats"
    if args.json:
        print_json(result)
        return 0
    table = Table(title=title, show_header=False)
    for key, value in result.items():
        table.add_row(key, str(value))
    make_console().print(table)
    return 0
