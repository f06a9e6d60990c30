"""`python main.py serve [--host H] [--port P]`: the HTTP API and OpenAI-compatible endpoint."""

from __future__ import annotations

import argparse
import logging
import sys

from cli.common import add_common, settings_from


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("serve", help="serve the HTTP API (/v1/ask, /v1/chat/completions, threads, health)")
    p.add_argument("--host", dest="serve_host", help="address to listen on (default 127.0.0.1)")
    p.add_argument(
        "--port", type=int, dest="serve_port", help="port to listen on (default 8000; 0 = any free)"
    )
    p.add_argument("--workers", type=int, dest="serve_workers", help="questions answered at the same time")
    p.add_argument("--brain", choices=["auto", "offline", "llm"], help="force the offline or LLM brain")
    add_common(p, json_flag=False)
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    import uvicorn

    from server.app import create_app
    from server.engine import running_engine

    settings = settings_from(
        args,
        serve_host=args.serve_host,
        serve_port=args.serve_port,
        serve_workers=args.serve_workers,
        brain=args.brain,
    )
    with running_engine(settings) as engine:
        verbose = logging.getLogger("server").isEnabledFor(logging.DEBUG)
        config = uvicorn.Config(
            create_app(engine),
            host=settings.serve_host,
            port=settings.serve_port,
            log_level="info" if verbose else "warning",
            access_log=False,  # server/access_log.py writes one line per request instead
        )
        server = uvicorn.Server(config)
        auth = "bearer token required" if settings.serve_token else "no auth (set AGENTIC_RAG_SERVE_TOKEN)"
        sys.stderr.write(
            f"agentic-rag serving {settings.index_dir} on http://{settings.serve_host}:{settings.serve_port}"
            f" ({auth}); Ctrl-C stops\n"
        )
        server.run()
    return 0
