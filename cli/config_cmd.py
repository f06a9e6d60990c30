"""`python main.py config`: the effective settings and where each value came from.

A setting named ``top_k`` is set by ``AGENTIC_RAG_TOP_K`` (``--json`` shows each one's variable), or by
that name as a key of the settings file (``agentic-rag.toml``, or ``--config FILE``)."""

from __future__ import annotations

import argparse

from rich.markup import escape
from rich.table import Table

from cli.common import add_common, make_console, print_json


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("config", help="print the effective settings and where each came from")
    add_common(p)
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from config import env_names, load_settings, setting_sources, settings_file, shown_value

    overrides = {"index_dir": args.index_dir, "embedder": args.embedder}
    settings = load_settings(**overrides)
    sources = setting_sources(overrides)
    rows = [
        (field, shown_value(field, getattr(settings, field)), sources[field], env_names(field)[0])
        for field in type(settings).model_fields
    ]
    if args.json:
        print_json(
            {field: {"value": value, "source": source, "env": env} for field, value, source, env in rows}
        )
        return 0
    path = settings_file()
    make_console(highlight=False).print(
        f"settings file: {escape(str(path)) if path else 'none (agentic-rag.toml or --config FILE)'}"
    )
    table = Table(show_edge=False, pad_edge=False)
    for column in ("setting", "value", "from"):
        table.add_column(column)
    for field, value, source, _ in rows:
        table.add_row(field, escape(value), source, style="" if source == "default" else "bold")
    make_console(highlight=False).print(table)
    return 0
