"""Runtime dependencies handed to every node through LangGraph's ``context_schema``.

Models, indexes and clients live here, never in the checkpointed state. Nodes only receive an
``AgentContext``; building one from settings is the application layer's job (``app.wiring``), which
also registers the default LangGraph Studio gets when it can only send plain JSON (``app.studio``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from config import Settings
from memory.answer_cache import AnswerCache
from providers.brain import Brain
from providers.rerankers import Reranker
from retrievers.factory import RetrieverSet
from retrievers.sql import SqlSources


@dataclass
class AgentContext:
    settings: Settings
    retrievers: RetrieverSet
    brain: Brain
    reranker: Reranker | None = None
    cache: AnswerCache | None = None
    sql: SqlSources | None = None  # the SQL route's databases (None: no route)
    api_tools: Any = None  # tools.http.ApiTools: configured HTTP APIs (None: no route)


# Builds the context for a run that sent none (or plain JSON settings overrides, as Studio does).
DefaultContext = Callable[[dict[str, Any]], AgentContext]
_default: DefaultContext | None = None


def set_default_context(factory: DefaultContext | None) -> None:
    """Register (from above: ``app.studio``) how a run without an ``AgentContext`` gets one."""
    global _default
    _default = factory


def resolve_context(value: Any) -> AgentContext:
    """The context a node should use: the caller's, or the registered default (Studio)."""
    if isinstance(value, AgentContext):
        return value
    if _default is None:
        raise RuntimeError(
            "no AgentContext for this run: pass context=app.build_context(), or serve app/studio.py:graph"
        )
    return _default(value if isinstance(value, dict) else {})
