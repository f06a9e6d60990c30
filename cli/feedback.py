"""`python main.py feedback add THREAD [--turn N] good|bad [--note TEXT]`, `feedback report [--json]`,
`feedback apply [--yes] [--env-file .env]`. ``report --user NAME`` keeps to one server user's feedback.

``report`` also lists the review queue: stored answers whose confidence is below ``review_threshold``.

``report`` classifies each bad answer (retrieval miss, routing, unsupported generation, other) and lists
the setting changes the classes support; ``apply`` shows them with their effect on the bad questions
and writes them to the ``.env`` file only with ``--yes``: nothing changes silently.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from cli.common import add_common, print_json, settings_from, shown
from config import Settings
from core.command import command

EXAMPLES_PER_CLASS = 3


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("feedback", help="record verdicts on answers, classify bad ones, propose fixes")
    actions = p.add_subparsers(dest="feedback_action", metavar="ACTION", required=True)
    add = actions.add_parser("add", help="mark a turn of a thread good or bad")
    add.add_argument("thread_id", help="the conversation thread (a unique prefix of its id is enough)")
    add.add_argument("verdict", choices=["good", "bad"], help="good or bad")
    add.add_argument("--turn", type=int, help="1 for the thread's first question (default: the last)")
    add.add_argument("--note", default="", help='what was wrong; "gold: ANSWER" gives the right answer')
    report = actions.add_parser("report", help="classify the bad answers and propose setting changes")
    report.add_argument(
        "--user",
        help="only this server user's feedback, re-run with their access groups (default: everyone's)",
    )
    apply = actions.add_parser("apply", help="show the proposed changes' effect; write them with --yes")
    apply.add_argument("--yes", action="store_true", help="write the changes to the .env file")
    apply.add_argument("--env-file", type=Path, default=Path(".env"), help="settings file to update")
    for parser in (add, report, apply):
        add_common(parser)
        parser.add_argument(
            "--db", dest="checkpoint_db", help="checkpoint SQLite file (default from settings)"
        )
    p.set_defaults(handler=run)


@contextmanager
def _opened(settings: Settings, *, with_context: bool) -> Iterator[tuple[Any, Any, Any]]:
    """(feedback store, graph app on the checkpoints, agent context or None)."""
    from app.wiring import build_context
    from graph.builder import build_graph
    from memory.checkpointer import open_checkpointer
    from memory.feedback import open_feedback_store

    context = build_context(settings) if with_context else None
    with (
        open_checkpointer(sqlite_path=settings.checkpoint_db, postgres_url=settings.postgres_url) as saver,
        open_feedback_store(
            checkpoint_db=settings.checkpoint_db, postgres_url=settings.postgres_url
        ) as store,
    ):
        yield store, build_graph(checkpointer=saver), context


def run(args: argparse.Namespace) -> int:
    from memory.checkpointer import CheckpointerError
    from memory.threads import ThreadNotFoundError

    settings = settings_from(args, checkpoint_db=getattr(args, "checkpoint_db", None))
    try:
        return {"add": _add, "report": _report, "apply": _apply}[args.feedback_action](args, settings)
    except (ThreadNotFoundError, CheckpointerError) as exc:
        Console(stderr=True).print(f"error: {shown(str(exc))}", highlight=False)
        return 1


def _add(args: argparse.Namespace, settings: Settings) -> int:
    from app.feedback import add_feedback
    from cli.threads import resolve_thread_id

    with _opened(settings, with_context=False) as (store, app, _):
        thread_id = resolve_thread_id(app.checkpointer, args.thread_id)
        record = add_feedback(store, app, thread_id, args.verdict, turn=args.turn, note=args.note)
    if args.json:
        print_json(record.model_dump(mode="json", exclude={"passages", "trace"}))
    else:
        Console(highlight=False).print(
            f"recorded {record.verdict} for turn {record.turn} of thread {record.thread_id}: "
            f"{shown(record.question[:80])}"
        )
    return 0


def _user_access(settings: Settings, name: str) -> list[str] | None:
    """The groups a server user's searches are limited to (None for an admin; none for a revoked user)."""
    from memory.users import UserStore, users_path

    path = users_path(settings)
    store = UserStore(path) if path.exists() else None
    user = store.get(name) if store is not None else None
    if store is not None:
        store.close()
    if user is not None and user.admin:
        return None
    return list(user.groups) if user is not None else []


def _report(args: argparse.Namespace, settings: Settings) -> int:
    from app.feedback import feedback_report

    scope = {}
    if args.user is not None:
        scope = {"author": args.user, "access": _user_access(settings, args.user)}
    with _opened(settings, with_context=True) as (store, app, context):
        report = feedback_report(store, app, context, **scope)
    if args.json:
        print_json(report.model_dump(mode="json"))
        return 0
    print_report(Console(highlight=False), report)
    return 0


def print_review_queue(console: Console, items: list[Any]) -> None:
    """The answers below the review threshold (issue 21), least confident first."""
    console.print(f"[bold]review queue[/]: {len(items)} answers below the confidence threshold")
    if not items:
        return
    table = Table(show_edge=False, pad_edge=False)
    for column in ("confidence", "thread", "turn", "question", "answer"):
        table.add_column(column)
    for item in items:
        table.add_row(
            f"{item.confidence:.2f}",
            item.thread_id,
            str(item.turn),
            shown(item.question[:60]),
            shown(item.answer[:70]),
        )
    console.print(table)


def print_report(console: Console, report: Any) -> None:
    print_review_queue(console, report.review)
    console.print(f"[bold]feedback[/]: {report.good} good, {report.bad} bad")
    if not report.bad:
        return
    table = Table(show_edge=False, pad_edge=False)
    for column in ("class", "count", "examples"):
        table.add_column(column)
    for name, count in report.counts.items():
        examples = [d for d in report.diagnoses if d.failure == name][:EXAMPLES_PER_CLASS]
        lines = "\n".join(f"{shown(d.question[:70])} — {shown(d.reason)}" for d in examples)
        table.add_row(name, str(count), lines or "-")
    console.print(table)
    print_proposals(console, report.proposals)


def print_proposals(console: Console, proposals: list[Any]) -> None:
    if not proposals:
        console.print("no setting change is supported by this feedback")
        return
    console.print(f"[bold]proposed changes[/] (`{command('feedback apply --yes')}` writes them):")
    for p in proposals:
        console.print(f"  {p.setting}: {p.current} -> {p.proposed}  ({shown(p.reason)})")


def _apply(args: argparse.Namespace, settings: Settings) -> int:
    from app.feedback import env_name, feedback_report, rerun_effect, write_env

    console = Console(highlight=False)
    with _opened(settings, with_context=True) as (store, app, context):
        report = feedback_report(store, app, context)
        effects = rerun_effect(app, context, report.diagnoses, report.proposals) if report.proposals else []
    if args.json:
        payload = {
            "proposals": [p.model_dump(mode="json") for p in report.proposals],
            "effects": [e.model_dump() for e in effects],
            "applied": bool(args.yes and report.proposals),
            "env_file": str(args.env_file),
        }
    else:
        print_proposals(console, report.proposals)
        if effects:
            before = sum(e.before for e in effects)
            after = sum(e.after for e in effects)
            console.print(
                f"bad questions whose passages hold the answer terms: {before} -> {after} of {len(effects)}"
            )
    if report.proposals and args.yes:
        write_env(args.env_file, report.proposals)
        if not args.json:
            names = ", ".join(env_name(p.setting) for p in report.proposals)
            console.print(f"wrote {names} to {args.env_file}")
    elif report.proposals and not args.json:
        console.print("nothing written: add --yes to apply")
    if args.json:
        print_json(payload)
    return 0
