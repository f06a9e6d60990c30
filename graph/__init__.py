"""The agent's state machine: ``build_graph`` (graph.builder) and ``ask`` (graph.run).

Apps that embed the agent import the application layer, which also builds the context from settings:

from app import build_graph, build_context, ask

(``build_context``, ``add_feedback`` and ``feedback_report`` live in ``app``; graph/ never imports it.)
"""

from __future__ import annotations

from typing import Any

__all__ = ["AgentContext", "AskResult", "ask", "build_graph"]

_MOVED = {"build_context": "app.wiring", "add_feedback": "app.feedback", "feedback_report": "app.feedback"}


def __getattr__(name: str) -> Any:  # lazy: importing core.schemas must not load models
    if name == "build_graph":
        from graph.builder import build_graph

        return build_graph
    if name == "AgentContext":
        from nodes.context import AgentContext

        return AgentContext
    if name in ("ask", "AskResult"):
        from graph import run

        return getattr(run, name)
    if name in _MOVED:
        raise AttributeError(f"graph.{name} moved to the application layer: from app import {name}")
    raise AttributeError(name)
