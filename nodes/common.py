"""Small helpers every node uses: the runtime context, chunk (de)serialisation, trace events."""

from __future__ import annotations

import logging
import time
from typing import Any

from langgraph.runtime import Runtime

from graph.context import AgentContext, resolve_context
from retrievers.types import Filters, ScoredChunk

log = logging.getLogger(__name__)


def ctx(runtime: Runtime | None) -> AgentContext:
    return resolve_context(runtime.context if runtime is not None else None)


def dump_hits(hits: list[ScoredChunk]) -> list[dict[str, Any]]:
    return [hit.model_dump() for hit in hits]


def load_hits(data: list[dict[str, Any]] | None) -> list[ScoredChunk]:
    return [ScoredChunk.model_validate(item) for item in data or []]


def filters_of(state: dict[str, Any]) -> Filters | None:
    raw = state.get("filters")
    return Filters.model_validate(raw) if raw else None


def mode_of(state: dict[str, Any], context: AgentContext) -> str:
    return state.get("mode") or context.settings.mode


def question_of(state: dict[str, Any]) -> str:
    return state.get("standalone_question") or state.get("question") or ""


def event(
    node: str, started: float, context: AgentContext | None, decision: str = "", **counts: Any
) -> dict[str, Any]:
    """One compact trace entry; includes the brain's model calls and fallbacks during this node."""
    calls: list[dict[str, Any]] = []
    if context is not None:
        drain = getattr(context.brain, "drain_calls", None)
        calls = drain() if drain else []
    entry: dict[str, Any] = {
        "node": node,
        "decision": decision,
        "counts": counts,
        "ms": round((time.perf_counter() - started) * 1000, 1),
        "model_calls": sum(int(c.get("model_calls", 0)) for c in calls),
    }
    fallbacks = [f"{c.get('step')}: {c.get('error') or 'fallback'}" for c in calls if c.get("fallback")]
    if fallbacks:
        entry["fallbacks"] = fallbacks
        log.info("%s fell back: %s", node, "; ".join(fallbacks))
    log.debug("%s: %s %s (%.0f ms)", node, decision or "-", counts or "", entry["ms"])
    return entry
