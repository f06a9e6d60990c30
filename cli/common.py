"""Helpers shared by the CLI commands: settings from flags, JSON output, readable errors."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from rich.console import Console
from rich.markup import escape

from config import Settings, load_settings
from core.logs import CONTROL_CODES

# Wide enough that nothing wraps, small enough that rich's layout arithmetic stays cheap.
UNWRAPPED_WIDTH = 10_000

# Control and bidi-override characters (core.logs) shown as <U+XXXX>; tab and newline stay.
_NEUTRALISE = {code: f"<U+{code:04X}>" for code in CONTROL_CODES if chr(code) not in "\t\n"}


def neutralised(text: str) -> str:
    """The text with control and bidi-override characters shown as ``<U+XXXX>``, harmless to print."""
    return str(text).translate(_NEUTRALISE)


def shown(text: object) -> str:
    """Document-derived text made safe for ``rich``: no live markup (``[link=...]``), no terminal control."""
    return escape(neutralised(str(text)))


def positive_int(text: str) -> int:
    """An argparse type: a whole number of at least 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} is too small: give 1 or more")
    return value


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


def show_rerank_progress(reranker: Any, stream: Any = None) -> None:
    """While the e5 reranker embeds uncached windows, keep one status line on stderr (terminals only)."""
    stream = stream or sys.stderr
    if reranker is None or not hasattr(reranker, "progress") or not stream.isatty():
        return

    def report(done: int, total: int) -> None:
        line = "" if done >= total else f"reranking: embedding passage windows {done}/{total} (Ctrl-C stops)"
        stream.write(f"\r\033[2K{line}")
        stream.flush()

    reranker.progress = report


def make_console(*, stderr: bool = False, **options: Any) -> Console:
    """A console for a terminal, or, when output goes to a file or pipe, one that never hard-wraps lines
    (a wrapped line would split citation markers such as ``[1]`` and break scripts reading the output)."""
    stream = sys.stderr if stderr else sys.stdout
    if stream.isatty():
        return Console(stderr=stderr, **options)
    return Console(stderr=stderr, soft_wrap=True, width=UNWRAPPED_WIDTH, **options)
