"""`python main.py ask "question" [--mode MODE] [--thread ID] [--json]`"""

from __future__ import annotations

import argparse
from contextlib import nullcontext

from rich.console import Console

from cli.common import add_common, make_console, print_json, settings_from, show_rerank_progress, shown
from nodes.policy import MODES


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("ask", help="ask one question (answer with citations)")
    p.add_argument("question", help="the question, in English or Chinese")
    p.add_argument("--mode", choices=MODES, help="retrieval mode (default: agentic)")
    p.add_argument("--thread", help="continue (or start) a conversation thread with this id")
    p.add_argument(
        "--filter",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="source=GLOB, language=zh, after=2024-01-01, before=..., or any metadata key; repeatable",
    )
    p.add_argument("--brain", choices=["auto", "offline", "llm"], help="force the offline or LLM brain")
    add_common(p)
    p.set_defaults(handler=run)


def render_answer(console: Console, result, *, streamed: str = "") -> None:
    """Answer, numbered sources, one-line trace: shared by `ask` and the interactive session.

    ``streamed`` is the answer text already shown token by token; the answer is printed again only
    when checking changed it (unsupported sentences removed, or the offline brain answered instead).
    Every document- or model-derived string goes through ``shown`` (no live markup, no control).
    """
    if not streamed:
        console.print(shown(result.answer) if result.answer else "[dim](no answer)[/]", highlight=False)
    elif streamed.strip() != result.answer.strip():
        console.print(f"\n[dim]checked answer:[/] {shown(result.answer)}", highlight=False)
    if result.citations:
        console.print()
        for cite in result.citations:
            heading = f" — {cite.heading}" if cite.heading else ""
            console.print(f"[bold][{cite.number}][/] {shown(cite.source + heading)}", highlight=False)
            console.print(f"    [dim]{shown(cite.snippet[:120].replace(chr(10), ' '))}[/]", highlight=False)
    console.print(f"\n[dim]{shown(result.trace_line())}[/]", highlight=False)


def run(args: argparse.Namespace) -> int:
    from app.wiring import build_context
    from core.chunks import Filters
    from graph.builder import build_graph
    from graph.run import ask
    from memory.checkpointer import open_checkpointer, store_errors, store_name
    from memory.thread_lock import thread_lock
    from memory.threads import check_thread
    from nodes.state import CHECKPOINT_TYPES
    from retrievers.filter_keys import require_known_keys
    from retrievers.index import require_chunks

    settings = settings_from(args, brain=args.brain)
    filters = Filters.from_pairs(args.filter) if args.filter else None
    context = build_context(settings)
    require_chunks(context.retrievers.index)
    require_known_keys(context.retrievers.index, filters)
    show_rerank_progress(context.reranker)
    saver_cm = (
        open_checkpointer(
            sqlite_path=settings.checkpoint_db,
            postgres_url=settings.postgres_url,
            allowed_types=CHECKPOINT_TYPES,
        )
        if args.thread
        else nullcontext(None)
    )
    lock = (
        thread_lock(args.thread, sqlite_path=settings.checkpoint_db, postgres_url=settings.postgres_url)
        if args.thread
        else nullcontext()
    )
    failures = store_errors(store_name(settings.checkpoint_db, settings.postgres_url))
    with failures, saver_cm as saver, lock:
        if saver is not None:
            check_thread(saver, args.thread)  # damaged pages: one line naming the store, not a traceback
        app = build_graph(checkpointer=saver, max_checkpoints_per_thread=settings.max_checkpoints_per_thread)
        result = ask(
            app,
            args.question,
            context=context,
            thread_id=args.thread,
            mode=args.mode,
            filters=filters,
        )
    for warning in result.warnings:
        Console(stderr=True, highlight=False, soft_wrap=True).print(f"warning: {shown(warning)}")
    if args.json:
        print_json(result.model_dump(mode="json"))
    else:
        render_answer(make_console(), result)
    return 1 if result.error and not result.answer else 0
