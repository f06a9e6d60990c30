"""The per-mode policies and the routing decisions as pure functions (zh and en analyses)."""

from __future__ import annotations

import pytest

from core.chunks import Chunk, ScoredChunk
from core.schemas import QueryAnalysis, RetrievalEvaluation
from nodes.policy import MODES, POLICIES, initial_strategy, policy_for, stop_reason, strategy_after
from retrievers.multi_hop import fuse_hops

AGENTIC = policy_for("agentic")


def test_every_mode_has_a_policy_and_only_agentic_loops():
    assert set(POLICIES) == set(MODES)
    assert [m for m in MODES if policy_for(m).loop] == ["agentic"]
    assert [m for m in MODES if policy_for(m).second_hop] == ["agentic"]
    assert not policy_for("keyword").keyword_top_up


@pytest.mark.parametrize("complexity", ["simple", "moderate", "complex"])
@pytest.mark.parametrize("language", ["zh", "en"])
def test_agentic_hybrid_recommendation_takes_the_bridge_route(complexity, language):
    """Pinned at this commit: a hybrid recommendation goes multi-hop so a bridge hop can run."""
    analysis = QueryAnalysis(recommended_strategy="hybrid", complexity=complexity, language=language)
    assert initial_strategy(AGENTIC, analysis) == "multi_hop"
    assert initial_strategy(policy_for("self_query"), analysis) == "hybrid"


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
    ("action", "current", "subs", "expected"),
    [
        ("retry_vector", "keyword", False, "vector"),
        ("multi_hop", "hybrid", False, "hybrid"),
        ("multi_hop", "hybrid", True, "multi_hop"),
        ("rewrite", "keyword", False, "hybrid"),
        ("rewrite", "multi_hop", True, "multi_hop"),
    ],
)
def test_retry_strategy(action, current, subs, expected):
    assert strategy_after(RetrievalEvaluation(suggested_action=action), current, subs) == expected


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
