"""The graph's conditional edges: each router reads the state and names the next node(s)."""

from __future__ import annotations

from typing import Literal

from langgraph.types import Send

from nodes.cache import CACHED
from nodes.policy import ANSWERED_BEFORE_SEARCH, policy_for
from nodes.retrieve_multi_hop import fan_out
from nodes.state import AgentState

RetrieveNode = Literal[
    "retrieve_vector", "retrieve_keyword", "retrieve_hybrid", "retrieve_global", "retrieve_sql", "call_api"
]
EntryNode = Literal["analyze_query", "retrieve_vector", "retrieve_keyword", "retrieve_hybrid", "verify"]
RETRIEVE_NODE: dict[str, RetrieveNode] = {
    "vector": "retrieve_vector",
    "keyword": "retrieve_keyword",
    "hybrid": "retrieve_hybrid",
    "global": "retrieve_global",  # issue 26: whole-document and collection questions
    "sql": "retrieve_sql",  # issue 26: table questions (nodes/retrieve_sql.py)
    "api": "call_api",  # issue 26: configured HTTP APIs (nodes/call_api.py)
}


def route_entry(state: AgentState) -> EntryNode:
    """Invalid input and unresolvable follow-ups go straight to the end; modes with analysis analyze;
    others search as fixed."""
    if state.get("stop_reason") in ANSWERED_BEFORE_SEARCH:
        return "verify"
    policy = policy_for(state.get("mode") or "agentic")
    if policy.analyze or policy.strategy is None:
        return "analyze_query"
    return RETRIEVE_NODE[policy.strategy]


def route_after_cache(state: AgentState) -> EntryNode:
    """A cached answer goes straight to the final message; anything else is routed as usual."""
    return "verify" if state.get("stop_reason") == CACHED else route_entry(state)


def route_by_strategy(state: AgentState) -> RetrieveNode | list[Send]:
    """The retrieve node for the planned strategy; multi-hop fans out one search per sub-query."""
    strategy = state.get("strategy") or "hybrid"
    if strategy == "multi_hop":
        return fan_out(state)
    return RETRIEVE_NODE.get(strategy, "retrieve_hybrid")


def decide_next(state: AgentState) -> Literal["compress", "rewrite_query"]:
    """Once evaluate named a stop reason the answer is written; otherwise the query is rewritten."""
    return "compress" if state.get("stop_reason") else "rewrite_query"
