"""Helpers shared by the CLI commands: settings from flags, JSON output, readable errors."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from rich.console import Console

from config import Settings, load_settings

# Wide enough that nothing wraps, small enough that rich's layout arithmetic stays cheap.
UNWRAPPED_WIDTH = 10_000


def add_common(parser: argparse.ArgumentParser, *, json_flag: bool = True) -> None:
    parser.add_argument("--index", dest="index_dir", help="index folder (default from settings)")
    parser.add_argument(
        "--store", choices=["local", "milvus"], help="where chunks live (default AGENTIC_RAG_STORE or local)"
    )
    parser.add_argument("--embedder", help="embedding model: use-multilingual | e5-small | openai | st:DIR")
    if json_flag:
        parser.add_argument("--json", action="store_true", help="print one JSON document on stdout")


def settings_from(args: argparse.Namespace, **extra: Any) -> Settings:
    return load_settings(
        index_dir=getattr(args, "index_dir", None),
        embedder=getattr(args, "embedder", None),
        store=getattr(args, "store", None),
        **extra,
    )


def print_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, ensure_ascii=False, indent=2, default=str) + "\n")
    sys.stdout.flush()


def make_console(*, stderr: bool = False, **options: Any) -> Console:
    """A console for a terminal, or, when output goes to a file or pipe, one that never hard-wraps lines
    (a wrapped line would split citation markers such as ``[1]`` and break scripts reading the output)."""
    stream = sys.stderr if stderr else sys.stdout
    if stream.isatty():
        return Console(stderr=stderr, **options)
    return Console(stderr=stderr, soft_wrap=True, width=UNWRAPPED_WIDTH, **options)
