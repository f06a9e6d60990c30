"""`python main.py llm serve|models`: a packaged local model behind an OpenAI-compatible server.

The server is llama-cpp-python's own (``llama_cpp.server``: ``/v1/chat/completions`` with streaming and
grammar-enforced JSON schemas, ``/v1/models``), run in this process with uvicorn on 127.0.0.1, behind one
thin request translation (providers/local_llm.py ``openai_compatible``): release 0.3.9 accepts a JSON
schema only in its own ``json_object`` form and reads ``max_tokens``, not ``max_completion_tokens``.
Point the engine at it with the two lines it prints.
"""

from __future__ import annotations

import argparse
import os
import sys

DEFAULT_PORT = 8080


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "llm", help="serve a packaged local model (Qwen2.5-Coder) over an OpenAI-compatible API"
    )
    actions = p.add_subparsers(dest="llm_command", required=True)
    serve = actions.add_parser("serve", help="start the local model server on 127.0.0.1")
    serve.add_argument(
        "--model",
        default=None,
        help="qwen2.5-coder-0.5b (default) | qwen2.5-coder-1.5b | PATH.gguf",
    )
    serve.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"port (default {DEFAULT_PORT})")
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    serve.add_argument("--threads", type=int, default=None, help="CPU threads (default: all cores)")
    serve.add_argument("--ctx", type=int, default=4096, help="context window in tokens (default 4096)")
    serve.set_defaults(handler=run_serve)
    models = actions.add_parser("models", help="list the packaged models: installed? assembled?")
    models.set_defaults(handler=run_models)


def run_models(args: argparse.Namespace) -> int:
    from providers.local_llm import MODELS, cached_path, installed, runtime_available

    for model in MODELS.values():
        state = (
            "assembled" if cached_path(model).is_file() else "installed" if installed(model) else "missing"
        )
        print(f"{model.name:<20} {state:<10} {model.title}, {model.licence}")
        if state == "missing":
            print(f"{'':<20} install: {model.pip_install()}")
    runtime = "ok" if runtime_available() else "missing: pip install '.[local-llm]'"
    print(f"runtime (llama_cpp and its server's dependencies): {runtime}")
    return 0


def run_serve(args: argparse.Namespace) -> int:
    from providers.local_llm import (
        DEFAULT_MODEL,
        LocalModelError,
        openai_compatible,
        resolve_model,
        runtime_available,
    )

    if not runtime_available():
        raise LocalModelError(
            "the llama.cpp runtime is not installed: pip install '.[local-llm]' (docs/local-llm.md)"
        )
    if not 0 < args.port < 65536:
        raise LocalModelError(f"--port must be 1-65535, got {args.port}")
    alias, path = resolve_model(args.model or DEFAULT_MODEL)
    import uvicorn
    from llama_cpp.server.app import create_app
    from llama_cpp.server.settings import ModelSettings, ServerSettings

    threads = args.threads or os.cpu_count() or 1
    model_settings = ModelSettings(
        model=str(path),
        model_alias=alias,
        n_ctx=args.ctx,
        n_threads=threads,
        n_threads_batch=threads,
        verbose=False,
    )
    server_settings = ServerSettings(host=args.host, port=args.port, interrupt_requests=True)
    app = create_app(server_settings=server_settings, model_settings=[model_settings])
    sys.stderr.write(
        f"serving {alias} ({path}) on http://{args.host}:{args.port}/v1; use it with:\n"
        f"  export OPENAI_BASE_URL=http://{args.host}:{args.port}/v1 AGENTIC_RAG_LLM_MODEL={alias}\n"
    )
    uvicorn.run(openai_compatible(app), host=args.host, port=args.port, log_level="warning")
    return 0
