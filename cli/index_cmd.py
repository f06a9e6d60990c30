"""`python main.py index stats`"""

from __future__ import annotations

import argparse
from datetime import datetime
from pathlib import Path
from typing import Any

from rich.table import Table

from cli.common import add_common, make_console, print_json, settings_from


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("index", help="inspect the index")
    p.add_argument("action", choices=["stats"], help="stats: chunks, files, languages, sizes, build time")
    add_common(p)
    p.set_defaults(handler=run)


def readable_times(stats: dict[str, Any]) -> dict[str, Any]:
    """Epoch seconds under ``*_at`` keys as ISO 8601 local times with their UTC offset."""
    return {
        key: datetime.fromtimestamp(value).astimezone().isoformat(timespec="seconds")
        if key.endswith("_at") and isinstance(value, int | float)
        else value
        for key, value in stats.items()
    }


def run(args: argparse.Namespace) -> int:
    from retrievers.index import open_index

    settings = settings_from(args)
    index = open_index(Path(settings.index_dir))
    stats = readable_times(index.stats())
    index.close()
    if args.json:
        print_json(stats)
        return 0
    table = Table(title="index stats", show_header=False)
    for key, value in stats.items():
        table.add_row(key, str(value))
    make_console().print(table)
    return 0
