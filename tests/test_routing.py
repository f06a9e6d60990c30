"""The graph's routers: which node comes next for a given state (the graph's conditional edges)."""

from __future__ import annotations

import pytest

from core.schemas import QueryAnalysis
from graph.routing import decide_next, route_by_strategy, route_entry
from nodes.state import SubQuery


@pytest.mark.parametrize(
    ("mode", "node"),
    [
        ("agentic", "analyze_query"),
        ("self_query", "analyze_query"),
        ("naive", "retrieve_vector"),
        ("keyword", "retrieve_keyword"),
        ("hybrid", "retrieve_hybrid"),
        ("hybrid_rerank", "retrieve_hybrid"),
        (None, "analyze_query"),
    ],
)
def test_entry_follows_the_mode(mode, node):
    assert route_entry({"question": "HNSW 是什么？", "mode": mode}) == node


@pytest.mark.parametrize("reason", ["invalid_input", "needs_clarification"])
def test_questions_answered_before_search_go_straight_to_verify(reason):
    assert route_entry({"question": "", "mode": "hybrid", "stop_reason": reason}) == "verify"


@pytest.mark.parametrize(
    ("strategy", "node"),
    [
        ("vector", "retrieve_vector"),
        ("keyword", "retrieve_keyword"),
        ("hybrid", "retrieve_hybrid"),
        ("", "retrieve_hybrid"),
    ],
)
def test_strategy_picks_the_retrieve_node(strategy, node):
    assert route_by_strategy({"question": "What is RRF?", "strategy": strategy}) == node


def test_multi_hop_fans_out_one_search_per_part():
    state = {
        "question": "BM25 和 HNSW 有什么区别？",
        "strategy": "multi_hop",
        "analysis": QueryAnalysis(sub_queries=["BM25 是什么", "HNSW 是什么"]),
    }
    sends = route_by_strategy(state)
    assert [s.node for s in sends] == ["search_sub_query"] * 3
    assert [s.arg.sub_query for s in sends] == ["BM25 是什么", "HNSW 是什么", state["question"]]
    assert all(isinstance(s.arg, SubQuery) for s in sends)


@pytest.mark.parametrize(
    ("stop", "node"), [("", "rewrite_query"), ("sufficient", "compress"), ("max_retries", "compress")]
)
def test_a_stop_reason_ends_the_loop(stop, node):
    assert decide_next({"stop_reason": stop}) == node
