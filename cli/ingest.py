"""`python main.py ingest PATH...`"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from rich.table import Table

from cli.common import add_common, make_console, print_json, settings_from, shown


def register(sub: argparse._SubParsersAction) -> None:
    from ingestion.formats import CODE_SUFFIXES
    from ingestion.loaders import supported_suffixes

    documents = " ".join(s for s in supported_suffixes() if s not in CODE_SUFFIXES)
    p = sub.add_parser("ingest", help="add, update or remove documents in the index")
    p.add_argument(
        "paths",
        nargs="+",
        type=Path,
        help=f"files or folders: {documents}, and source code ({' '.join(CODE_SUFFIXES[:6])} ...)",
    )
    p.add_argument("--rebuild", action="store_true", help="ignore the existing index and rebuild")
    p.add_argument(
        "--include",
        action="append",
        default=[],
        metavar="GLOB",
        help="read only files matching GLOB (path relative to the folder, or file name: '*.md', 'docs/**'); "
        "repeatable",
    )
    p.add_argument(
        "--exclude",
        action="append",
        default=[],
        metavar="GLOB",
        help="skip files or folders matching GLOB ('build', '*.min.js'); repeatable; already indexed "
        "files it matches are kept",
    )
    p.add_argument(
        "--access",
        action="append",
        default=[],
        metavar="GROUP[,GROUP]",
        help="only these groups may read this run's files (where front matter 'access:' names none); "
        "repeatable; without it files are readable by every user of the collection",
    )
    p.add_argument(
        "--chunk-size", type=int, dest="chunk_size", help="target chunk size in characters (default 800)"
    )
    p.add_argument(
        "--chunk-overlap",
        type=int,
        dest="chunk_overlap",
        help="characters repeated between consecutive chunks (default 100)",
    )
    p.add_argument(
        "--semantic",
        action="store_true",
        default=None,
        dest="semantic_split",
        help="also split where the topic changes (embeds every sentence: slower)",
    )
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


def prewarm_reranker(settings, progress=None) -> int:
    """Fill the reranker's window cache for every chunk in the index (cached ones cost nothing)."""
    from app.wiring import reranker_for
    from retrievers.factory import embedder_for
    from retrievers.store import open_store

    reranker = reranker_for(settings, embedder_for(settings))
    warm = getattr(reranker, "warm", None)
    if warm is None:
        return 0
    store = open_store(settings)
    try:
        return warm(list(store.iter_chunks()), progress=progress)
    finally:
        store.close()


def timed_prewarm(settings, *, show_progress: bool) -> tuple[int, float]:
    """Pre-warm (with a progress bar on stderr when asked); returns (windows embedded, seconds)."""
    from rich.progress import Progress

    started = time.perf_counter()
    if not show_progress:
        return prewarm_reranker(settings), round(time.perf_counter() - started, 2)
    with Progress(console=make_console(stderr=True), transient=True) as bar:
        task = bar.add_task("reranker warm-up (e5 windows)", total=None)
        warmed = prewarm_reranker(settings, lambda done, total: bar.update(task, completed=done, total=total))
    return warmed, round(time.perf_counter() - started, 2)


def run(args: argparse.Namespace) -> int:
    from ingestion.loaders import supported_suffixes
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
        include=args.include,
        exclude=args.exclude,
        processor=processor,
        access=args.access,
    )
    warm_rows: list[tuple[str, object]] = []
    if settings.rerank_prewarm:
        warmed, warm_seconds = timed_prewarm(settings, show_progress=not args.json)
        warm_rows = [
            ("reranker windows embedded", warmed),
            ("reranker warm-up seconds", warm_seconds),
            ("total seconds", round(report.seconds + warm_seconds, 2)),
        ]
    if args.json:
        print_json(
            {**report.model_dump(), **{k.replace(" ", "_").replace("-", "_"): v for k, v in warm_rows}}
        )
        return 0
    console = make_console()
    table = Table(title=f"ingest into {shown(report.index_dir)}", show_header=False)
    for label, value in [
        ("files seen", report.files_seen),
        ("added", len(report.added)),
        ("updated", len(report.updated)),
        ("unchanged (skipped)", len(report.unchanged)),
        ("removed", len(report.removed)),
        ("failed", len(report.failed)),
        ("unsupported (not read)", len(report.unsupported)),
        ("excluded by --include/--exclude", report.excluded),
        ("chunks embedded", report.chunks_embedded),
        ("chunks in index", report.chunks_total),
        ("ingest seconds" if warm_rows else "seconds", report.seconds),
        *warm_rows,
    ]:
        table.add_row(label, str(value))
    console.print(table)
    for failed in report.failed:
        console.print(f"[yellow]skipped[/] {shown(failed.source)}: {shown(failed.reason)}")
    for source, reason in report.removal_reasons.items():
        if reason != "no longer on disk" or getattr(args, "verbose", 0):
            console.print(
                f"[yellow]removed[/] {shown(source)}: {shown(reason)} (its old chunks were dropped)"
            )
    for link in report.outside_links:
        console.print(
            f"[yellow]followed[/] {shown(link)}: outside the folders given "
            "(AGENTIC_RAG_OUTSIDE_SYMLINKS=false refuses such links)"
        )
    if getattr(args, "verbose", 0):
        for path in report.unsupported:
            console.print(f"[dim]unsupported[/] {shown(path)}")
    elif report.unsupported:
        console.print(f"[dim]{len(report.unsupported)} unsupported files not read; -v lists them[/]")
    if report.chunks_total == 0:
        make_console(stderr=True).print(
            "[yellow]the index is empty: nothing readable was found "
            f"(supported: {shown(' '.join(supported_suffixes()))})[/]",
            highlight=False,
        )
    return 0
