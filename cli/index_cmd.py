"""`python main.py index stats`"""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.console import Console
from rich.table import Table

from cli.common import add_common, print_json, settings_from


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("index", help="inspect the index")
    p.add_argument("action", choices=["stats"])
    add_common(p)
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from memory.answer_cache import read_cache_stats
    from nodes.context import cache_path, generation_key
    from retrievers.index import open_index

    settings = settings_from(args)
    index = open_index(Path(settings.index_dir))
    stats = index.stats()
    cache = read_cache_stats(cache_path(Path(settings.index_dir)), generation_key(index))
    stats["answer_cache"] = (cache or {"entries": 0}) | {"enabled": settings.answer_cache}
    index.close()
    if args.json:
        print_json(stats)
        return 0
    table = Table(title="index stats", show_header=False)
    for key, value in stats.items():
        table.add_row(key, str(value))
    Console().print(table)
    return 0
