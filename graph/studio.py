"""The module-level graph that ``langgraph.json`` points LangGraph Studio at.

The server supplies its own checkpointer; the runtime context is built from settings on first use.
"""

from graph.builder import build_graph

graph = build_graph()
