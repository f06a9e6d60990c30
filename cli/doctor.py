"""`python main.py doctor`: check the LLM endpoint and model, the embedder, the index and the
checkpoint store; one line each, saying what is wrong and how to fix it. Exit 1 if any check fails.
Configured endpoints are exercised for real: one tiny chat completion, one embedding for a remote
embedder, each within a short timeout (a server listing its models may still fail every request)."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass

from rich.console import Console
from rich.markup import escape

from cli.common import add_common, print_json, settings_from
from config import Settings
from core.command import command


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("doctor", help="check endpoint, model, embedder, index and checkpoint store")
    add_common(p)
    p.set_defaults(handler=run)


def check_llm(settings: Settings) -> list[Check]:
    """Endpoint and model; with no endpoint configured the offline brain answers, which is fine."""
    from providers.endpoint import check_endpoint, exercise_endpoint

    if not settings.llm_configured:
        return [
            Check(
                "endpoint",
                True,
                "none configured: the offline brain answers (set OPENAI_BASE_URL to use an LLM"
                + local_model_hint()
                + ")",
            )
        ]
    status = check_endpoint(settings.openai_base_url, settings.openai_api_key, settings.llm_model)
    if not status.reachable:
        return [Check("endpoint", False, status.problem)]
    endpoint = Check("endpoint", True, f"{status.endpoint} answers")
    if status.problem:
        return [endpoint, Check("model", False, status.problem)]
    listed = "served" if status.models else "not listed by the server (cannot verify)"
    model = Check("model", True, f"{settings.llm_model} {listed}{local_model_note(settings)}")
    failure = exercise_endpoint(
        settings.openai_base_url, settings.openai_api_key, chat_model=settings.llm_model
    )
    if failure:
        return [
            endpoint,
            model,
            Check("chat", False, f"{failure}: questions would fail (or set AGENTIC_RAG_BRAIN=offline)"),
        ]
    return [endpoint, model, Check("chat", True, f"{settings.llm_model} answered a one-token completion")]


def check_remote_embedder(settings: Settings) -> list[Check]:
    """A remote embedder (``AGENTIC_RAG_EMBEDDER=openai``) gets one real embedding call, short timeout."""
    from providers.endpoint import exercise_endpoint

    if not (settings.embedder == "openai" or settings.embedder.startswith("openai:")):
        return []
    model = settings.embedder.split(":", 1)[1] if ":" in settings.embedder else settings.embedding_model
    failure = exercise_endpoint(settings.openai_base_url, settings.openai_api_key, embedding_model=model)
    if failure:
        return [Check("embeddings", False, f"{failure} (AGENTIC_RAG_EMBEDDER, AGENTIC_RAG_EMBEDDING_MODEL)")]
    return [Check("embeddings", True, f"{model} answered one embedding")]


def local_model_hint() -> str:
    """When a packaged local model and its runtime are installed: how to serve it."""
    from providers.local_llm import MODELS, installed, runtime_available

    ready = [m.name for m in MODELS.values() if installed(m)] if runtime_available() else []
    return (
        f"; or serve the installed local model: python main.py llm serve --model {ready[0]}" if ready else ""
    )


def local_model_note(settings: Settings) -> str:
    """What doctor knows about a packaged model served by ``llm serve`` (name, licence, roles)."""
    from providers.local_llm import MODELS

    model = MODELS.get(settings.llm_model)
    if model is None:
        return ""
    chosen = settings.llm_role_set(small_model=True)
    roles = "all roles" if len(chosen) == 7 else f"roles {','.join(sorted(chosen))}"
    return f" (packaged local model {model.title}, {model.licence}; {roles}, AGENTIC_RAG_LLM_ROLES)"


def check_embedder(settings: Settings) -> Check:
    from retrievers.factory import embedder_for

    try:
        embedder = embedder_for(settings)
        vectors = embedder.embed_documents(["doctor check / 健康检查"])
    except Exception as exc:
        return Check("embedder", False, f"{settings.embedder!r} does not work: {exc} (AGENTIC_RAG_EMBEDDER)")
    return Check("embedder", True, f"{embedder.name} ({len(vectors[0])} dimensions)")


def check_index(settings: Settings) -> Check:
    from retrievers.factory import open_retrievers
    from retrievers.store import store_exists

    where = str(settings.index_dir) if settings.store == "local" else settings.milvus_uri
    try:
        exists = store_exists(settings)
    except Exception as exc:
        return Check("index", False, f"{where}: {exc}")
    if not exists:
        return Check(
            "index",
            False,
            f"no index in {where}: run {command('ingest PATH')} (or set AGENTIC_RAG_INDEX_DIR / "
            "AGENTIC_RAG_STORE)",
        )
    try:
        retrievers = open_retrievers(settings)
    except Exception as exc:
        return Check("index", False, f"{where}: {exc}")
    try:
        store = retrievers.index
        return Check("index", True, f"{store.location} ({store.count()} chunks)")
    finally:
        retrievers.index.close()


def check_checkpoints(settings: Settings) -> Check:
    from memory.checkpointer import open_checkpointer, redact_url

    where = redact_url(settings.postgres_url) if settings.postgres_url else str(settings.checkpoint_db)
    try:
        with open_checkpointer(sqlite_path=settings.checkpoint_db, postgres_url=settings.postgres_url):
            pass
    except Exception as exc:
        fix = "AGENTIC_RAG_POSTGRES_URL" if settings.postgres_url else "AGENTIC_RAG_CHECKPOINT_DB"
        return Check("checkpoints", False, f"{exc} (set {fix})")
    return Check("checkpoints", True, where)


CHECKS: list[Callable[[Settings], Check | list[Check]]] = [
    check_llm,
    check_remote_embedder,
    check_embedder,
    check_index,
    check_checkpoints,
]


def diagnose(settings: Settings) -> list[Check]:
    checks: list[Check] = []
    for check in CHECKS:
        found = check(settings)
        checks += found if isinstance(found, list) else [found]
    return checks


def run(args: argparse.Namespace) -> int:
    checks = diagnose(settings_from(args))
    if args.json:
        print_json([c.__dict__ for c in checks])
    else:
        console = Console(highlight=False, soft_wrap=True)
        for check in checks:
            mark = "[green]ok  [/]" if check.ok else "[red]FAIL[/]"
            console.print(f"{mark} {check.name:<12} {escape(check.detail)}")
    return 0 if all(c.ok for c in checks) else 1
