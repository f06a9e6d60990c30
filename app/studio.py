"""The module-level graph that ``langgraph.json`` points LangGraph Studio at.

The server supplies its own checkpointer and can only send plain JSON as the run context, so the
served graph declares a JSON context of optional settings overrides; the runtime ``AgentContext`` is
built from settings (``AGENTIC_RAG_*`` in the server's environment) plus those overrides on first use
(``app.wiring.default_context``, registered here so nodes never import the wiring).
"""

from typing_extensions import TypedDict

from app.wiring import default_context
from graph.builder import build_graph
from nodes.context import set_default_context


class StudioContext(TypedDict, total=False):
    """Settings a Studio user may override per run; everything else comes from the environment."""

    index_dir: str
    mode: str
    reranker: str
    brain: str


set_default_context(default_context)
graph = build_graph(context_schema=StudioContext)
