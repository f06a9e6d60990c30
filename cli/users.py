"""`python main.py users add NAME [--admin] [--groups a,b] | list | revoke NAME`: who may use the server.

Keys are printed once, when made, and stored hashed (memory/users.py) in the server's users store
(``AGENTIC_RAG_USERS_DB``, default ``users.sqlite`` beside the checkpoint database).
"""

from __future__ import annotations

import argparse
from datetime import UTC, datetime
from pathlib import Path

from rich.table import Table

from cli.common import make_console, print_json
from config import load_settings


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("users", help="add, list or revoke the server's users and their keys")
    actions = p.add_subparsers(dest="users_action", metavar="ACTION", required=True)
    add = _options(actions.add_parser("add", help="make a user and print their key (shown once)"))
    add.add_argument("name", help="user name: letters, digits, '_', '.', '@', '-'")
    add.add_argument(
        "--admin", action="store_true", help="may read everything, manage documents, act for users"
    )
    add.add_argument(
        "--groups", default="", metavar="A,B", help="access groups whose documents they may read"
    )
    _options(actions.add_parser("list", help="every user with their groups (never their keys)"))
    revoke = _options(actions.add_parser("revoke", help="delete a user; their key stops working at once"))
    revoke.add_argument("name", help="the user to revoke")
    p.set_defaults(handler=run)


def _options(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    parser.add_argument("--db", dest="users_db", help="users SQLite file (default from settings)")
    parser.add_argument("--json", action="store_true", help="print one JSON document on stdout")
    return parser


def run(args: argparse.Namespace) -> int:
    from memory.users import UserStore, users_path

    store = UserStore(users_path(load_settings(users_db=Path(args.users_db) if args.users_db else None)))
    try:
        if args.users_action == "add":
            made = store.add(args.name, admin=args.admin, groups=args.groups)
            if args.json:
                print_json(made.model_dump())
            else:
                print(made.key)
                make_console(stderr=True).print(f"[dim]key for {made.name}: shown once, store it now[/]")
        elif args.users_action == "revoke":
            store.revoke(args.name)
            print_json({"revoked": args.name}) if args.json else print(f"revoked {args.name}")
        else:
            users = store.list()
            if args.json:
                print_json([u.model_dump() for u in users])
            else:
                table = Table(title="users")
                for column in ("name", "admin", "groups", "created"):
                    table.add_column(column)
                for u in users:
                    created = datetime.fromtimestamp(u.created_at, UTC).strftime("%Y-%m-%d %H:%M")
                    table.add_row(u.name, "yes" if u.admin else "", ",".join(u.groups), created)
                make_console().print(table)
    finally:
        store.close()
    return 0
