"""`python main.py mcp [--index DIR]`: the engine as an MCP server on stdin/stdout.

An MCP client (Claude Desktop, an IDE agent) starts this command and speaks JSON-RPC to it; stdout
carries only the protocol, messages go to stderr. Over HTTP the same tools are at ``/mcp`` of ``serve``.
"""

from __future__ import annotations

import argparse

from cli.common import add_common, settings_from


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "mcp", help="serve the MCP tools (search, ask, list_collections, index_stats, ingest) on stdio"
    )
    p.add_argument("--brain", choices=["auto", "offline", "llm"], help="force the offline or LLM brain")
    add_common(p, json_flag=False)
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from server.engine import running_engine
    from server.mcp import run_stdio

    with running_engine(settings_from(args, brain=args.brain)) as engine:
        run_stdio(engine)
    return 0
