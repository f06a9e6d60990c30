"""The per-mode policies and the routing decisions as pure functions (zh and en analyses)."""

from __future__ import annotations

import pytest

from core.chunks import Chunk, ScoredChunk
from core.schemas import QueryAnalysis, RetrievalEvaluation
from nodes.policy import (
    MODES,
    POLICIES,
    initial_strategy,
    policy_for,
    route_reason,
    second_hop_reason,
    stop_reason,
    strategy_after,
)
from retrievers.multi_hop import fuse_hops

AGENTIC = policy_for("agentic")


def test_every_mode_has_a_policy_and_only_agentic_loops():
    assert set(POLICIES) == set(MODES)
    assert [m for m in MODES if policy_for(m).loop] == ["agentic"]
    assert [m for m in MODES if policy_for(m).second_hop] == ["agentic"]
    assert not policy_for("keyword").keyword_top_up


@pytest.mark.parametrize("complexity", ["simple", "moderate", "complex"])
@pytest.mark.parametrize("language", ["zh", "en"])
def test_a_single_hop_question_gets_one_search(complexity, language):
    """No sub-queries: one search whatever the complexity, and the trace says why."""
    analysis = QueryAnalysis(recommended_strategy="hybrid", complexity=complexity, language=language)
    strategy, why = route_reason(AGENTIC, analysis)
    assert strategy == "hybrid" and "single-hop" in why
    assert initial_strategy(policy_for("self_query"), analysis) == "hybrid"
    recommended_multi_hop = QueryAnalysis(recommended_strategy="multi_hop", language=language)
    assert initial_strategy(AGENTIC, recommended_multi_hop) == "hybrid"  # nothing to split


@pytest.mark.parametrize(
    ("sub_queries", "kind"),
    [
        (["HNSW 的内存占用", "IVF 的内存占用"], "parts"),
        (["director of Inception", "spouse of <director of Inception>"], "a nested relation"),
        (["《红楼梦》的作者", "<《红楼梦》的作者>出生在哪里"], "a nested relation"),
    ],
)
def test_a_question_with_parts_searches_each_part(sub_queries, kind):
    strategy, why = route_reason(
        AGENTIC, QueryAnalysis(recommended_strategy="multi_hop", sub_queries=sub_queries)
    )
    assert strategy == "multi_hop" and kind in why


def test_the_second_hop_runs_only_when_the_question_or_the_evidence_calls_for_it():
    comparison = QueryAnalysis(sub_queries=["BM25 是什么", "HNSW 是什么"])
    bridge = QueryAnalysis(sub_queries=["director of Inception", "spouse of <director of Inception>"])
    pointed = RetrievalEvaluation(suggested_action="multi_hop", missing_info=["academy"])
    assert second_hop_reason(AGENTIC, comparison, None) == ""
    assert "nested" in second_hop_reason(AGENTIC, bridge, None)
    assert "point to" in second_hop_reason(AGENTIC, QueryAnalysis(), pointed)
    assert second_hop_reason(AGENTIC, QueryAnalysis(), RetrievalEvaluation(suggested_action="rewrite")) == ""
    assert second_hop_reason(policy_for("self_query"), bridge, pointed) == ""  # the mode never hops


@pytest.mark.parametrize(
    ("analysis", "strategy"),
    [
        (QueryAnalysis(identifiers=["E-4711"], recommended_strategy="keyword"), "keyword"),
        (QueryAnalysis(identifiers=["E-4711"], recommended_strategy="vector"), "vector"),
        (
            QueryAnalysis(recommended_strategy="multi_hop", sub_queries=["BM25 是什么", "HNSW 是什么"]),
            "multi_hop",
        ),
        (QueryAnalysis(recommended_strategy="vector"), "vector"),
        (None, "hybrid"),
    ],
)
def test_agentic_first_strategy_follows_the_analysis(analysis, strategy):
    assert initial_strategy(AGENTIC, analysis) == strategy


@pytest.mark.parametrize("mode", ["naive", "keyword", "hybrid", "hybrid_rerank"])
def test_fixed_modes_ignore_the_analysis(mode):
    assert (
        initial_strategy(policy_for(mode), QueryAnalysis(recommended_strategy="multi_hop"))
        == POLICIES[mode].strategy
    )


@pytest.mark.parametrize(
    ("action", "current", "expected"),
    [
        ("retry_vector", "keyword", "vector"),
        ("multi_hop", "hybrid", "multi_hop"),
        ("rewrite", "keyword", "hybrid"),
        ("rewrite", "multi_hop", "multi_hop"),
    ],
)
def test_retry_strategy(action, current, expected):
    assert strategy_after(RetrievalEvaluation(suggested_action=action), current) == expected


@pytest.mark.parametrize(
    ("sufficient", "attempt", "new", "expected"),
    [
        (True, 0, 0, "sufficient"),
        (False, 2, 3, "max_retries"),
        (False, 1, 0, "no_progress"),
        (False, 0, 0, ""),
    ],
)
def test_stop_reasons(sufficient, attempt, new, expected):
    evaluation = RetrievalEvaluation(is_sufficient=sufficient, suggested_action="rewrite")
    assert (
        stop_reason(policy=AGENTIC, evaluation=evaluation, attempt=attempt, new_relevant=new, max_retries=2)
        == expected
    )
    assert (
        stop_reason(
            policy=policy_for("hybrid"), evaluation=evaluation, attempt=0, new_relevant=0, max_retries=2
        )
        == "single_pass"
    )


def scored(chunk_id: str) -> ScoredChunk:
    return ScoredChunk(chunk=Chunk(id=chunk_id, text=chunk_id, source="x.md"), score=1.0)


def test_second_hop_passages_get_slots_near_the_top():
    """A passage only the bridge search found is placed right after the first hop's head, not after all of it."""
    first = {"question as asked": [scored(f"first-{i}") for i in range(12)]}
    second = {"bridge entity": [scored("bridge-only"), scored("first-3")]}
    fused = [h.id for h in fuse_hops(first, second, rrf_k=60)]
    assert fused.index("bridge-only") < 7


@pytest.mark.parametrize(
    ("analysis", "strategy"),
    [
        (None, "hybrid"),
        (QueryAnalysis(), "hybrid"),
        (QueryAnalysis(sub_queries=["BM25 是什么", "HNSW 是什么"]), "multi_hop"),
        (QueryAnalysis(sub_queries=["What is BM25?"], recommended_strategy="vector"), "multi_hop"),
    ],
)
def test_self_query_searches_the_parts_it_found_else_once(analysis, strategy):
    assert initial_strategy(policy_for("self_query"), analysis) == strategy


def test_the_evaluator_saying_answer_ends_the_loop_even_when_not_sufficient():
    evaluation = RetrievalEvaluation(is_sufficient=False, suggested_action="answer")
    assert (
        stop_reason(policy=AGENTIC, evaluation=evaluation, attempt=0, new_relevant=0, max_retries=2)
        == "sufficient"
    )


@pytest.mark.parametrize("current", ["vector", "keyword"])
def test_a_failed_single_retriever_search_is_retried_as_hybrid(current):
    assert strategy_after(RetrievalEvaluation(suggested_action="rewrite"), current) == "hybrid"


@pytest.mark.parametrize("text", ["price < 5 dollars", "a > b", "spouse of director"])
def test_only_bracketed_phrases_are_bridge_templates(text):
    assert second_hop_reason(AGENTIC, QueryAnalysis(sub_queries=[text, "x"]), None) == ""
