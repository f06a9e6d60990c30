"""Assemble the agent graph.

    contextualize -> lookup_cache -> (miss) analyze_query -> (route) retrieve_{vector|keyword|hybrid|multi_hop|global|sql} | call_api
      -> rerank -> evaluate -> (retry) rewrite_query -> (route) ...   |   (enough) compress -> generate
      -> verify -> cache_answer;   lookup_cache -> (hit) verify;   retrieve_sql | call_api -> (answered) verify

Single-pass modes (naive, keyword, hybrid, hybrid_rerank, self_query) use the same nodes and skip
what they do not need, so every mode is comparable through one code path.
"""

from __future__ import annotations

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph

from graph.routing import decide_next, route_after_cache, route_by_strategy
from memory.bounded import BoundedSaver
from memory.threads import supports_capping
from nodes.analyze_query import analyze_query
from nodes.cache import cache_answer, lookup_cache
from nodes.call_api import call_api, route_after_api
from nodes.compress import compress
from nodes.context import AgentContext
from nodes.contextualize import contextualize
from nodes.evaluate import evaluate
from nodes.generate import generate
from nodes.rerank import rerank
from nodes.retrieve_global import retrieve_global
from nodes.retrieve_hybrid import retrieve_hybrid
from nodes.retrieve_keyword import retrieve_keyword
from nodes.retrieve_multi_hop import merge_hops, search_sub_query
from nodes.retrieve_sql import retrieve_sql, route_after_sql
from nodes.retrieve_vector import retrieve_vector
from nodes.rewrite_query import rewrite_query
from nodes.state import CHECKPOINT_TYPES, AgentState, InputState, conversation_values
from nodes.verify import verify

RETRIEVAL_TARGETS = [
    "retrieve_vector",
    "retrieve_keyword",
    "retrieve_hybrid",
    "search_sub_query",
    "retrieve_global",
    "retrieve_sql",
    "call_api",
]


def build_graph(
    checkpointer: BaseCheckpointSaver | None = None,
    *,
    name: str = "agentic-rag",
    context_schema: type = AgentContext,
    max_checkpoints_per_thread: int | None = 20,
) -> CompiledStateGraph:
    """The compiled agent graph. Pass an ``AgentContext`` as ``context=`` when invoking it.

    A SQLite or PostgreSQL ``checkpointer`` is wrapped in ``memory.bounded.BoundedSaver``: each thread
    keeps its latest ``max_checkpoints_per_thread`` checkpoints (None: all), holding the conversation
    and the ids of the passages behind each answer, not the passages' text.

    No node retry policy: model steps never raise (the brain's client retries 429/5xx/timeouts, then
    the offline role answers), and a retry of a whole node would repeat those retries.
    """
    builder = StateGraph(AgentState, context_schema=context_schema, input_schema=InputState)
    builder.add_node("contextualize", contextualize)
    builder.add_node("analyze_query", analyze_query)
    builder.add_node("retrieve_vector", retrieve_vector)
    builder.add_node("retrieve_keyword", retrieve_keyword)
    builder.add_node("retrieve_hybrid", retrieve_hybrid)
    builder.add_node("search_sub_query", search_sub_query)
    builder.add_node("retrieve_global", retrieve_global)
    builder.add_node("retrieve_multi_hop", merge_hops)
    builder.add_node("retrieve_sql", retrieve_sql)
    builder.add_node("call_api", call_api)
    builder.add_node("rerank", rerank)
    builder.add_node("evaluate", evaluate)
    builder.add_node("rewrite_query", rewrite_query)
    builder.add_node("compress", compress)
    builder.add_node("generate", generate)
    builder.add_node("verify", verify)
    builder.add_node("lookup_cache", lookup_cache)
    builder.add_node("cache_answer", cache_answer)

    builder.add_edge(START, "contextualize")
    builder.add_edge("contextualize", "lookup_cache")
    builder.add_conditional_edges(
        "lookup_cache",
        route_after_cache,
        ["analyze_query", "retrieve_vector", "retrieve_keyword", "retrieve_hybrid", "verify"],
    )
    builder.add_conditional_edges("analyze_query", route_by_strategy, RETRIEVAL_TARGETS)
    builder.add_conditional_edges("rewrite_query", route_by_strategy, RETRIEVAL_TARGETS)
    for node in (
        "retrieve_vector",
        "retrieve_keyword",
        "retrieve_hybrid",
        "retrieve_multi_hop",
        "retrieve_global",
    ):
        builder.add_edge(node, "rerank")
    builder.add_edge("search_sub_query", "retrieve_multi_hop")
    builder.add_conditional_edges("retrieve_sql", route_after_sql, ["verify", "retrieve_hybrid"])
    builder.add_conditional_edges("call_api", route_after_api, ["verify", "retrieve_hybrid"])
    builder.add_edge("rerank", "evaluate")
    builder.add_conditional_edges("evaluate", decide_next, ["rewrite_query", "compress"])
    builder.add_edge("compress", "generate")
    builder.add_edge("generate", "verify")
    builder.add_edge("verify", "cache_answer")
    builder.add_edge("cache_answer", END)
    if checkpointer is not None and max_checkpoints_per_thread and supports_capping(checkpointer):
        # Checkpoints keep the conversation, not the evidence, and at most N per thread.
        checkpointer = BoundedSaver(
            checkpointer,
            slim=conversation_values,
            keep=max_checkpoints_per_thread,
            allowed_types=CHECKPOINT_TYPES,
        )
    return builder.compile(checkpointer=checkpointer, name=name)
