"""agentic-rag command line: ingest, search, ask, eval, threads, or an interactive session."""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import sys

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

COMMANDS = ["ingest", "search", "index_cmd", "ask", "eval_cmd", "threads", "doctor", "feedback", "session"]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python main.py",
        description="Agentic RAG over your documents (Chinese and English). "
        "Without a command: an interactive session.",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="log debug information to stderr")
    sub = parser.add_subparsers(dest="command")
    for name in COMMANDS:
        try:
            module = importlib.import_module(f"cli.{name}")
        except ModuleNotFoundError as exc:
            if exc.name and exc.name.startswith("cli."):
                continue  # command not built yet
            raise
        module.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.WARNING,
        stream=sys.stderr,
        format="%(levelname)s %(name)s: %(message)s",
    )
    handler = getattr(args, "handler", None)
    if handler is None:
        try:
            from cli.session import run_session
        except ModuleNotFoundError:
            parser.print_help()
            return 0
        return run_session(args)
    from cli.errors import run_safely

    return run_safely(handler, args)


if __name__ == "__main__":
    sys.exit(main())
