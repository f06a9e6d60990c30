"""Runtime dependencies handed to every node through LangGraph's ``context_schema``.

Models, indexes and clients live here, never in the checkpointed state. Callers that embed the
graph pass their own ``AgentContext``; LangGraph Studio (which can only send plain JSON) gets one
built from settings, once per process and index folder.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from config import Settings, load_settings
from providers.brain import Brain, make_brain
from providers.rerankers import Reranker
from retrievers.factory import RetrieverSet


@dataclass
class AgentContext:
    settings: Settings
    retrievers: RetrieverSet
    brain: Brain
    reranker: Reranker | None = None


def build_context(settings: Settings | None = None, *, index_dir: Path | None = None) -> AgentContext:
    """Open the index and load models as the settings say."""
    from providers.rerankers import make_reranker
    from retrievers.factory import open_retrievers

    settings = settings or load_settings()
    retrievers = open_retrievers(settings, index_dir)
    folder = Path(index_dir or settings.index_dir)
    reranker = make_reranker(
        settings.reranker,
        embedder=retrievers.embedder,
        cache_dir=folder / "cache",
        blend=settings.rerank_blend,
        window_tokens=settings.rerank_window_tokens,
    )
    return AgentContext(
        settings=settings,
        retrievers=retrievers,
        brain=make_brain(settings, retrievers.embedder),
        reranker=reranker,
    )


_default_lock = threading.Lock()
_defaults: dict[str, AgentContext] = {}


def resolve_context(value: Any) -> AgentContext:
    """The context a node should use: the caller's, or a default built from settings (Studio)."""
    if isinstance(value, AgentContext):
        return value
    raw = value if isinstance(value, dict) else {}
    # The server mirrors run configuration (thread_id, graph_id, ...) into the context: keep settings only.
    overrides = {k: v for k, v in raw.items() if k in Settings.model_fields and v not in (None, "")}
    key = repr(sorted(overrides.items()))
    with _default_lock:
        if key not in _defaults:
            _defaults[key] = build_context(load_settings(**overrides))
        return _defaults[key]
