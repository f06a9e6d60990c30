"""The application's wiring: an ``AgentContext`` built from settings (index, models, cache, routes).

Nodes never import this module; they receive the context. Callers that embed the graph pass their own
``AgentContext``; LangGraph Studio (which can only send plain JSON) gets ``default_context``, built
from settings once per process and set of overrides (``app.studio`` registers it).
"""

from __future__ import annotations

import threading
from dataclasses import replace
from pathlib import Path
from typing import Any

from config import Settings, load_settings
from memory.answer_cache import AnswerCache, passage_verifier
from nodes.context import AgentContext, set_default_context
from providers.brain import make_brain
from providers.embeddings import Embedder
from providers.rerankers import Reranker
from retrievers.sql import SqlSources


def build_context(settings: Settings | None = None, *, index_dir: Path | None = None) -> AgentContext:
    """Open the index and load models as the settings say."""
    from retrievers.factory import open_retrievers

    settings = settings or load_settings()
    retrievers = open_retrievers(settings, index_dir)
    folder = Path(index_dir or settings.index_dir)
    return AgentContext(
        settings=settings,
        retrievers=retrievers,
        brain=make_brain(settings, retrievers.embedder),
        reranker=reranker_for(settings, retrievers.embedder, folder),
        cache=open_answer_cache(settings, folder, generation_key(retrievers.index), store=retrievers.index),
        sql=sql_sources_for(settings, folder),
        api_tools=api_tools_for(settings),
    )


def sql_sources_for(settings: Settings, index_dir: Path) -> SqlSources | None:
    """The index's tables (from ingested CSV/TSV) and ``AGENTIC_RAG_SQL_URLS``; None when off or none."""
    from retrievers.sql import index_tables_path, open_sql_sources, parse_sql_urls

    if not settings.sql_route:
        return None
    return open_sql_sources(
        parse_sql_urls(settings.sql_urls),
        index_tables_path(index_dir),
        max_rows=settings.sql_max_rows,
        timeout_s=settings.sql_timeout_s,
    )


def api_tools_for(settings: Settings) -> Any:
    """The HTTP APIs of ``AGENTIC_RAG_TOOLS_FILE``, or None."""
    if settings.tools_file is None:
        return None
    from providers.api_tools import load_tools_file

    return load_tools_file(
        settings.tools_file, timeout_s=settings.tool_timeout_s, max_kb=settings.tool_max_kb
    )


def reopened(context: AgentContext) -> AgentContext:
    """The same models over the index as it is now (after an ingest): a fresh store, retrievers and
    answer cache. The old store stays open for runs still reading it."""
    from retrievers.factory import build_retrievers
    from retrievers.store import open_store

    settings = context.settings
    store = open_store(settings)
    retrievers = build_retrievers(store, settings, context.retrievers.embedder)
    cache = open_answer_cache(settings, Path(settings.index_dir), generation_key(store))
    return replace(context, retrievers=retrievers, cache=cache)


def reranker_for(settings: Settings, embedder: Embedder, index_dir: Path | None = None) -> Reranker | None:
    """The reranker the settings name, over the first stage's ``embedder``, its passage-vector cache in
    the index folder's ``cache``."""
    from providers.rerankers import make_reranker

    return make_reranker(
        settings.reranker,
        embedder=embedder,
        cache_dir=Path(index_dir or settings.index_dir) / "cache",
        blend=settings.rerank_blend,
        window_tokens=settings.rerank_window_tokens,
        depth=settings.rerank_depth,
        e5_runtime=settings.e5_runtime,
    )


def generation_key(store: Any) -> str | None:
    """Names the local index's contents (a rebuilt folder may reuse a generation number, not its
    timestamp); None for a Milvus collection, which has no generations: no answer cache there."""
    generation = getattr(store, "generation", None)
    if generation is None:
        return None
    return f"{generation.name}@{store.manifest.get('created_at')}"


def cache_path(index_dir: Path) -> Path:
    return Path(index_dir) / "cache" / "answers.sqlite"


def open_answer_cache(
    settings: Settings, index_dir: Path, generation: str | None, *, store: Any = None
) -> AnswerCache | None:
    """The answer cache of this index generation, or None when ``answer_cache`` is off or there are no
    generations to invalidate it by (Milvus). With ``store``, a hit is served only while its passages
    are still the store's text."""
    if not settings.answer_cache or generation is None:
        return None
    return AnswerCache(
        cache_path(index_dir),
        generation=generation,
        semantic_threshold=settings.semantic_cache_threshold,
        max_entries=settings.cache_max_entries,
        verify=passage_verifier(store) if store is not None else None,
    )


_default_lock = threading.Lock()
_defaults: dict[str, AgentContext] = {}


def default_context(raw: dict[str, Any]) -> AgentContext:
    """The context of a run that sent only JSON (Studio): built from settings plus the overrides."""
    # The server mirrors run configuration (thread_id, graph_id, ...) into the context: keep settings only.
    overrides = {k: v for k, v in raw.items() if k in Settings.model_fields and v not in (None, "")}
    key = repr(sorted(overrides.items()))
    with _default_lock:
        if key not in _defaults:
            _defaults[key] = build_context(load_settings(**overrides))
        return _defaults[key]


# Any program using the application layer keeps the settings default for runs without a context.
set_default_context(default_context)
