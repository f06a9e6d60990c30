"""Public entry points for apps that embed the agent:

from graph import build_graph, build_context, ask
app = build_graph(checkpointer=my_saver)
result = ask(app, "BM25 和向量检索有什么区别？", context=build_context(), thread_id="t1")

Feedback on a turn (``graph.feedback``): ``add_feedback(store, app, "t1", "bad", note="gold: ...")`` with a
store from ``memory.feedback.open_feedback_store``, then ``feedback_report(store, app, context)``.
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


def __getattr__(name: str) -> Any:  # lazy: importing core.schemas must not load models
    if name == "build_graph":
        from graph.builder import build_graph

        return build_graph
    if name in ("AgentContext", "build_context"):
        from nodes import context

        return getattr(context, name)
    if name in ("add_feedback", "feedback_report"):
        from graph import feedback

        return getattr(feedback, name)
    if name in ("ask", "AskResult"):
        from graph import run

        return getattr(run, name)
    raise AttributeError(name)
