"""agentic-rag command line: ingest, search, ask, eval, threads, or an interactive session."""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import re
import sys

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

# The project's own loggers; -v shows their debug lines, -vv everything (faiss, httpx, ...) too.
PROJECT_LOGGERS = (
    "config",
    "cli",
    "server",
    "graph",
    "nodes",
    "retrievers",
    "providers",
    "memory",
    "ingestion",
    "evaluators",
    "core",
)
LOG_FORMAT = "%(levelname)s %(name)s: %(message)s"

COMMANDS = [
    "ingest",
    "search",
    "index_cmd",
    "ask",
    "eval_cmd",
    "threads",
    "doctor",
    "feedback",
    "session",
    "serve",
    "config_cmd",
    "mcp",
    "llm",
    "users",
]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=_prog(),
        description="Agentic RAG over your documents (Chinese and English). "
        "Without a command: an interactive session.",
    )
    parser.add_argument(
        "-v",
        "--verbose",
        action="count",
        default=0,
        help="log the engine's decisions (files, routes, fallbacks, timings) to stderr; -vv adds libraries' "
        "debug lines; accepted anywhere on the command line",
    )
    parser.add_argument(
        "--config",
        metavar="FILE",
        help="read settings from this TOML file (default: ./agentic-rag.toml when present; keys are the "
        "environment variables' names); accepted anywhere on the command line",
    )
    parser.add_argument(
        "--log-file",
        metavar="FILE",
        help="also write the engine's debug log, with times, to FILE; accepted anywhere on the command line",
    )
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


def _prog() -> str:
    from core.command import cli_name

    return cli_name()


def split_global_options(argv: list[str]) -> tuple[int, str | None, list[str]]:
    """Take ``-v``/``-vv``/``--verbose``, ``--log-file FILE`` and ``--config FILE`` from anywhere before
    ``--``; argparse only accepts top-level options before the subcommand, which is not where people
    type them. ``--config`` is handed on as ``AGENTIC_RAG_CONFIG``, so child processes read it too."""
    verbose, log_file, rest = 0, None, []
    items = iter(argv)
    for item in items:
        if item == "--":
            rest.append(item)
            rest.extend(items)
            break
        if item == "--verbose" or re.fullmatch(r"-v+", item):
            verbose += 1 if item == "--verbose" else len(item) - 1
        elif item in ("--log-file", "--config"):
            value = next(items, None)
            if value is None:
                raise SystemExit(f"error: {item} needs a file name")
            log_file = value if item == "--log-file" else log_file
            if item == "--config":
                os.environ["AGENTIC_RAG_CONFIG"] = value
        elif item.startswith(("--log-file=", "--config=")):
            name, value = item.split("=", 1)
            log_file = value if name == "--log-file" else log_file
            if name == "--config":
                os.environ["AGENTIC_RAG_CONFIG"] = value
        else:
            rest.append(item)
    return verbose, log_file, rest


def session_by_default(rest: list[str]) -> list[str]:
    """Options with no command (``main.py --index DIR --mode keyword``) are the session's options."""
    if rest and rest[0].startswith("-") and rest[0] not in ("-h", "--help", "--"):
        return ["session", *rest]
    return rest


def setup_logging(verbose: int, log_file: str | None) -> None:
    """Quiet by default (warnings only); -v shows the project's debug lines, -vv every library's too.
    Messages are escaped (``core.logs``): a file name cannot forge a log line or drive the terminal."""
    from core.logs import EscapingFormatter

    root = logging.getLogger()
    root.setLevel(logging.DEBUG if verbose >= 2 else logging.WARNING)
    console = logging.StreamHandler(sys.stderr)
    console.setFormatter(EscapingFormatter(LOG_FORMAT))
    console.setLevel(logging.DEBUG if verbose else logging.WARNING)
    root.addHandler(console)
    project_level = logging.DEBUG if verbose or log_file else logging.WARNING
    for name in PROJECT_LOGGERS:
        logging.getLogger(name).setLevel(project_level)
    if log_file:
        try:
            handler = logging.FileHandler(log_file, encoding="utf-8")
        except OSError as exc:
            raise SystemExit(f"error: cannot write the log file {log_file}: {exc.strerror}") from None
        handler.setFormatter(EscapingFormatter("%(asctime)s " + LOG_FORMAT))
        handler.setLevel(logging.DEBUG)
        root.addHandler(handler)


def main(argv: list[str] | None = None) -> int:
    verbose, log_file, rest = split_global_options(sys.argv[1:] if argv is None else list(argv))
    parser = build_parser()
    args = parser.parse_args(session_by_default(rest))
    args.verbose, args.log_file = verbose, log_file
    setup_logging(verbose, log_file)
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


def console_main() -> None:
    """The installed ``agentic-rag`` command."""
    from cli.errors import INTERRUPTED

    code = main()
    if code == INTERRUPTED:
        # After Ctrl-C, tearing down the ~2,000 imported modules would cost ~0.5 CPU-s (seconds on a
        # busy box) before the shell prompt comes back; every write worth keeping is already committed.
        sys.stdout.flush()
        sys.stderr.flush()
        logging.shutdown()
        os._exit(code)
    sys.exit(code)


if __name__ == "__main__":
    console_main()
