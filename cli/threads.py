"""`python main.py threads list | show ID | delete ID | prune --older-than 30d`

Conversation threads live in the checkpoint store (``AGENTIC_RAG_CHECKPOINT_DB``, or PostgreSQL when
``AGENTIC_RAG_POSTGRES_URL`` is set); these commands inspect and tidy it without starting the agent.
"""

from __future__ import annotations

import argparse
from datetime import datetime

from langgraph.checkpoint.base import BaseCheckpointSaver
from rich.table import Table

from cli.common import make_console, print_json, shown
from config import Settings, load_settings

ROLE_LABEL = {"user": "you", "assistant": "agent"}


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("threads", help="list, show, delete or prune conversation threads")
    actions = p.add_subparsers(dest="threads_action", metavar="ACTION", required=True)
    add = actions.add_parser
    _options(add("list", help="every thread, most recent first"))
    show = _options(add("show", help="the conversation of one thread"))
    show.add_argument("thread_id", help="the thread's id (a unique prefix is enough)")
    delete = _options(add("delete", help="delete a thread and all its checkpoints"))
    delete.add_argument("thread_id", help="the thread's id (a unique prefix is enough)")
    prune = _options(add("prune", help="delete threads not updated for a while"))
    prune.add_argument("--older-than", required=True, metavar="AGE", help="e.g. 30d, 12h, 45m, 2w")
    p.set_defaults(handler=run)


def _options(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Threads live in the checkpoint store only: no index or embedder options here."""
    parser.add_argument("--db", dest="checkpoint_db", help="checkpoint SQLite file (default from settings)")
    parser.add_argument("--json", action="store_true", help="print one JSON document on stdout")
    return parser


def resolve_thread_id(saver: BaseCheckpointSaver, text: str) -> str:
    """An exact thread id, or the one thread whose id starts with ``text`` (ids are long to type)."""
    from memory.threads import ThreadNotFoundError, thread_ids

    wanted = text.strip()
    if not wanted:
        raise ThreadNotFoundError("no thread id given")
    ids = thread_ids(saver)  # damaged threads too: deleting one is the way out
    if wanted in ids:
        return wanted
    matches = [tid for tid in ids if tid.startswith(wanted)]
    if len(matches) == 1:
        return matches[0]
    if matches:
        raise ThreadNotFoundError(f"{wanted!r} matches several threads: {', '.join(sorted(matches))}")
    raise ThreadNotFoundError(f"no conversation thread {wanted!r}")


def when(stamp: datetime | None) -> str:
    return stamp.astimezone().strftime("%Y-%m-%d %H:%M") if stamp else "-"


def threads_table(infos: list, current: str | None = None) -> Table:
    """The thread list as a table (shared with the interactive session's /threads)."""
    table = Table(show_edge=False, pad_edge=False)
    for column in ("thread", "updated", "checkpoints", "first question"):
        table.add_column(column)
    for info in infos:
        mark = " *" if info.thread_id == current else ""
        table.add_row(
            shown(info.thread_id) + mark, when(info.updated_at), str(info.n_checkpoints), shown(info.title)
        )
    return table


def run(args: argparse.Namespace) -> int:
    from memory.checkpointer import CheckpointerError, store_errors, store_name
    from memory.threads import ThreadNotFoundError

    settings = load_settings(checkpoint_db=args.checkpoint_db)
    try:
        with store_errors(store_name(settings.checkpoint_db, settings.postgres_url)):
            return _dispatch(args, settings)
    except (ThreadNotFoundError, CheckpointerError) as exc:
        make_console(stderr=True).print(f"error: {shown(str(exc))}", highlight=False)
        return 1


def _dispatch(args: argparse.Namespace, settings: Settings) -> int:
    from memory.checkpointer import open_checkpointer
    from memory.threads import (
        delete_thread,
        list_threads,
        parse_duration,
        prune_threads,
        reclaim_space,
        show_thread,
    )
    from nodes.state import CHECKPOINT_TYPES

    console = make_console(highlight=False)
    action = args.threads_action
    older_than = parse_duration(args.older_than) if action == "prune" else None
    with open_checkpointer(
        sqlite_path=settings.checkpoint_db, postgres_url=settings.postgres_url, allowed_types=CHECKPOINT_TYPES
    ) as saver:
        if action == "list":
            infos = list_threads(saver)
            if args.json:
                print_json([info.model_dump(mode="json") for info in infos])
            elif not infos:
                console.print(f"no conversation threads in {_store(settings)}")
            else:
                console.print(threads_table(infos))
            return 0
        if action == "show":
            detail = show_thread(saver, resolve_thread_id(saver, args.thread_id))
            if args.json:
                print_json(detail.model_dump(mode="json"))
                return 0
            console.print(
                f"[bold]thread {shown(detail.thread_id)}[/] · updated {when(detail.updated_at)} · "
                f"{detail.n_checkpoints} checkpoints"
            )
            for role, text in detail.turns:
                console.print(f"\n[bold]{ROLE_LABEL.get(role, role)}:[/] {shown(text)}")
            return 0
        if action == "delete":
            thread_id = resolve_thread_id(saver, args.thread_id)
            delete_thread(saver, thread_id)
            if args.json:
                print_json({"deleted": [thread_id]})
            else:
                console.print(f"deleted thread {shown(thread_id)}")
            return 0
        pruned = prune_threads(saver, older_than or parse_duration(args.older_than))
        if pruned:
            reclaim_space(saver)
        if args.json:
            print_json({"deleted": pruned, "older_than": args.older_than})
        else:
            listed = f": {shown(', '.join(pruned))}" if pruned else ""
            console.print(f"deleted {len(pruned)} thread(s) not updated for {args.older_than}{listed}")
        return 0


def _store(settings: Settings) -> str:
    if settings.postgres_url:
        from memory.checkpointer import redact_url

        return redact_url(settings.postgres_url)
    return str(settings.checkpoint_db)
