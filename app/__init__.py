"""The application layer: builds what the graph runs with from settings, and the services cli/ and
server/ share. It sits above graph/ (graph and nodes never import it) and below cli/, server/, main.py.

Public entry points for apps that embed the agent:

from app import build_graph, build_context, ask
agent = build_graph(checkpointer=my_saver)
result = ask(agent, "BM25 和向量检索有什么区别？", context=build_context(), thread_id="t1")

Feedback on a turn (``app.feedback``): ``add_feedback(store, agent, "t1", "bad", note="gold: ...")`` with a
store from ``memory.feedback.open_feedback_store``, then ``feedback_report(store, agent, context)``.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "AgentContext",
    "AskResult",
    "add_feedback",
    "ask",
    "build_context",
    "build_graph",
    "feedback_report",
]


def __getattr__(name: str) -> Any:  # lazy: importing the package must not load models
    if name == "build_context":
        from app.wiring import build_context

        return build_context
    if name in ("add_feedback", "feedback_report"):
        from app import feedback

        return getattr(feedback, name)
    if name in ("build_graph", "AgentContext", "ask", "AskResult"):
        import graph

        return getattr(graph, name)
    raise AttributeError(name)
