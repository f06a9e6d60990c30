"""`python main.py ingest PATH...`"""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.console import Console
from rich.table import Table

from cli.common import add_common, print_json, settings_from


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("ingest", help="add, update or remove documents in the index")
    p.add_argument("paths", nargs="+", type=Path, help="files or folders (.md .txt .pdf .html)")
    p.add_argument("--rebuild", action="store_true", help="ignore the existing index and rebuild")
    p.add_argument("--chunk-size", type=int, dest="chunk_size")
    p.add_argument("--chunk-overlap", type=int, dest="chunk_overlap")
    p.add_argument("--semantic", action="store_true", default=None, dest="semantic_split")
    p.add_argument(
        "--prewarm-reranker",
        action="store_true",
        default=None,
        dest="rerank_prewarm",
        help="embed passages for the e5 reranker now (slower ingest, fast first questions)",
    )
    p.add_argument(
        "--ray",
        nargs="?",
        const="",
        metavar="ADDRESS",
        help="read, split and embed on a Ray cluster (a local one without ADDRESS); needs the 'ray' extra",
    )
    p.add_argument("--ray-workers", type=int, help="CPUs of the local Ray cluster (default: all)")
    add_common(p)
    p.set_defaults(handler=run)


def prewarm_reranker(settings) -> int:
    """Fill the reranker's passage cache for every chunk in the index (cached ones cost nothing)."""
    from providers.rerankers import make_reranker
    from retrievers.factory import embedder_for
    from retrievers.store import open_store

    reranker = make_reranker(
        settings.reranker,
        embedder=embedder_for(settings),
        cache_dir=Path(settings.index_dir) / "cache",
        blend=settings.rerank_blend,
    )
    warm = getattr(reranker, "warm", None)
    if warm is None:
        return 0
    store = open_store(settings)
    try:
        return warm(list(store.iter_chunks()))
    finally:
        store.close()


def run(args: argparse.Namespace) -> int:
    from ingestion.pipeline import ingest_paths
    from retrievers.factory import embedder_for

    settings = settings_from(
        args,
        chunk_size=args.chunk_size,
        chunk_overlap=args.chunk_overlap,
        semantic_split=args.semantic_split,
        rerank_prewarm=args.rerank_prewarm,
    )
    processor = None
    if args.ray is not None:
        from ingestion.ray_ingest import ray_processor

        processor = ray_processor(settings, address=args.ray or None, workers=args.ray_workers)
    report = ingest_paths(
        args.paths,
        settings,
        embedder_for(settings),
        rebuild=args.rebuild,
        progress=not args.json,
        processor=processor,
    )
    if settings.rerank_prewarm:
        warmed = prewarm_reranker(settings)
        if not args.json:
            Console(stderr=True).print(f"reranker cache: {warmed} passages embedded")
    if args.json:
        print_json(report.model_dump())
        return 0
    console = Console(stderr=False)
    table = Table(title=f"ingest into {report.index_dir}", show_header=False)
    for label, value in [
        ("files seen", report.files_seen),
        ("added", len(report.added)),
        ("updated", len(report.updated)),
        ("unchanged (skipped)", len(report.unchanged)),
        ("removed", len(report.removed)),
        ("failed", len(report.failed)),
        ("chunks embedded", report.chunks_embedded),
        ("chunks in index", report.chunks_total),
        ("seconds", report.seconds),
    ]:
        table.add_row(label, str(value))
    console.print(table)
    for failed in report.failed:
        console.print(f"[yellow]skipped[/] {failed.source}: {failed.reason}")
    return 0
