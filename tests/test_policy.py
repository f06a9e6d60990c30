"""The per-mode policies and the routing decisions as pure functions (zh and en analyses)."""

from __future__ import annotations

import pytest

from core.chunks import Chunk, ScoredChunk
from core.schemas import QueryAnalysis, RetrievalEvaluation
from nodes.policy import (
    E5_OFF_TOPIC,
    MODES,
    POLICIES,
    evidence_hop_reason,
    initial_strategy,
    off_topic,
    policy_for,
    route_reason,
    second_hop_reason,
    settle_action,
    stop_reason,
    strategy_after,
    unseen_documents,
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


def test_a_bridge_hop_through_the_first_hop_runs_only_for_a_nested_relation():
    comparison = QueryAnalysis(sub_queries=["BM25 是什么", "HNSW 是什么"])
    bridge = QueryAnalysis(sub_queries=["director of Inception", "spouse of <director of Inception>"])
    zh_bridge = QueryAnalysis(sub_queries=["《红楼梦》的作者", "<《红楼梦》的作者>出生在哪里"])
    assert second_hop_reason(AGENTIC, comparison) == ""
    assert "nested" in second_hop_reason(AGENTIC, bridge)
    assert "nested" in second_hop_reason(AGENTIC, zh_bridge)
    assert second_hop_reason(AGENTIC, QueryAnalysis()) == ""
    assert second_hop_reason(policy_for("self_query"), bridge) == ""  # the mode never hops


POINTED_EN = RetrievalEvaluation(is_sufficient=True, pointers=["Harbor Lights Festival"])
POINTED_ZH = RetrievalEvaluation(is_sufficient=True, pointers=["《灯河往事》"])


@pytest.mark.parametrize(
    ("evaluation", "target"), [(POINTED_EN, "Harbor Lights Festival"), (POINTED_ZH, "灯河往事")]
)
def test_one_hop_further_needs_a_pointer_a_target_and_the_first_search(evaluation, target):
    """Missing words plus a named document the search did not find: hop, once, only without parts."""
    single = QueryAnalysis()
    why = evidence_hop_reason(AGENTIC, single, evaluation, attempt=0, targets=[target])
    assert "one hop further" in why and target in why
    assert evidence_hop_reason(AGENTIC, single, evaluation, attempt=0, targets=[]) == ""  # nowhere to go
    assert evidence_hop_reason(AGENTIC, single, evaluation, attempt=1, targets=[target]) == ""  # once
    unpointed = RetrievalEvaluation(is_sufficient=True)
    assert evidence_hop_reason(AGENTIC, single, unpointed, attempt=0, targets=[target]) == ""
    parts = QueryAnalysis(sub_queries=["HNSW 的内存占用", "IVF 的内存占用"])
    assert evidence_hop_reason(AGENTIC, parts, evaluation, attempt=0, targets=[target]) == ""
    assert (
        evidence_hop_reason(policy_for("self_query"), single, evaluation, attempt=0, targets=[target]) == ""
    )
    llm_says_hop = RetrievalEvaluation(is_sufficient=False, suggested_action="multi_hop")
    assert evidence_hop_reason(AGENTIC, single, llm_says_hop, attempt=0, targets=[target])


def titled(title: str) -> ScoredChunk:
    return ScoredChunk(chunk=Chunk(id=title, text=title, source="x.md", title=title), score=1.0)


def test_a_document_already_retrieved_is_no_target():
    chunks = [titled("Quillon Bridge"), titled("青川大桥")]
    named = ["quillon bridge", "Harbor Lights Festival", "青川大桥", "灯河往事"]
    assert unseen_documents(named, chunks) == ["Harbor Lights Festival", "灯河往事"]


@pytest.mark.parametrize("language", ["zh", "en"])
def test_a_hop_with_nowhere_to_go_becomes_a_rewrite_and_a_taken_hop_is_multi_hop(language):
    judged = RetrievalEvaluation(is_sufficient=False, suggested_action="multi_hop", missing_info=["x"])
    single = QueryAnalysis(language=language)
    assert settle_action(judged, single, hop=False).suggested_action == "rewrite"
    parts = QueryAnalysis(sub_queries=["BM25 是什么", "What is HNSW?"], language=language)
    assert settle_action(judged, parts, hop=False).suggested_action == "multi_hop"  # search the parts
    sufficient = RetrievalEvaluation(is_sufficient=True, pointers=["Harbor Lights Festival"])
    assert settle_action(sufficient, single, hop=True).suggested_action == "multi_hop"


def test_an_earned_hop_retries_even_when_the_evidence_looks_sufficient_but_never_past_the_budget():
    evaluation = RetrievalEvaluation(is_sufficient=True, suggested_action="multi_hop")
    kwargs = {"policy": AGENTIC, "evaluation": evaluation, "new_relevant": 0}
    assert stop_reason(attempt=0, max_retries=2, hop=True, **kwargs) == ""
    assert stop_reason(attempt=0, max_retries=0, hop=True, **kwargs) == "sufficient"
    assert stop_reason(attempt=0, max_retries=2, hop=False, **kwargs) == "sufficient"


@pytest.mark.parametrize(
    ("analysis", "strategy"),
    [
        (QueryAnalysis(identifiers=["E-4711"], recommended_strategy="keyword"), "hybrid"),
        (
            QueryAnalysis(identifiers=["错误码 E-4711"], recommended_strategy="keyword", language="zh"),
            "hybrid",
        ),
        (
            QueryAnalysis(recommended_strategy="multi_hop", sub_queries=["BM25 是什么", "HNSW 是什么"]),
            "multi_hop",
        ),
        (QueryAnalysis(recommended_strategy="vector"), "hybrid"),
        (QueryAnalysis(recommended_strategy="vector", language="zh"), "hybrid"),
        (None, "hybrid"),
    ],
)
def test_agentic_first_search_is_the_fused_one_unless_the_question_has_parts(analysis, strategy):
    """A single retriever is never the first search: the fusion holds it, for the same one search."""
    assert initial_strategy(AGENTIC, analysis) == strategy
    if analysis is not None and analysis.identifiers:
        assert analysis.identifiers[0] in route_reason(AGENTIC, analysis)[1]


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
    assert second_hop_reason(AGENTIC, QueryAnalysis(sub_queries=[text, "x"])) == ""


def with_cosines(*cosines: float | None) -> list[ScoredChunk]:
    """Reranked candidates as the e5 reranker leaves them (None: a candidate past its depth)."""
    return [
        ScoredChunk(chunk=Chunk(id=f"c{i}", text=f"c{i}", source="x.md"), score=1.0, e5_cosine=cosine)
        for i, cosine in enumerate(cosines)
    ]


def test_the_e5_cosine_survives_a_checkpoint_and_a_checkpoint_written_before_it_loads():
    """The field rides in the state through LangGraph's serializer; a chunk stored without it reads None."""
    import ormsgpack

    from memory.checkpointer import _serializer
    from nodes.state import CHECKPOINT_TYPES

    serde = _serializer(CHECKPOINT_TYPES)
    [chunk] = with_cosines(0.5)
    kind, blob = serde.dumps_typed(chunk)
    assert serde.loads_typed((kind, blob)) == chunk and chunk.e5_cosine == 0.5
    ext: list[tuple[int, bytes]] = []
    ormsgpack.unpackb(blob, ext_hook=lambda tag, data: ext.append((tag, data)))
    [(tag, data)] = ext  # as an older version wrote it: the same record without the field
    module, name, values, method = ormsgpack.unpackb(data)
    values.pop("e5_cosine")
    old = ormsgpack.packb(ormsgpack.Ext(tag, ormsgpack.packb((module, name, values, method))))
    loaded = serde.loads_typed((kind, old))
    assert isinstance(loaded, ScoredChunk) and loaded.e5_cosine is None and loaded.id == "c0"


@pytest.mark.parametrize("matched", [True, None])
def test_evidence_is_off_topic_only_when_the_judge_and_the_reranker_agree(matched):
    """Far by e5 alone is not enough: the judge must have found no match by terms or meaning, and a
    judge that does not say (an LLM) never makes evidence off-topic."""
    far = with_cosines(E5_OFF_TOPIC - 0.05, E5_OFF_TOPIC - 0.1, None)
    assert off_topic(RetrievalEvaluation(matched=False), far)
    assert not off_topic(RetrievalEvaluation(matched=matched), far)


def test_one_close_candidate_or_no_e5_scores_keeps_the_retry():
    unmatched = RetrievalEvaluation(matched=False)
    assert not off_topic(unmatched, with_cosines(E5_OFF_TOPIC - 0.1, E5_OFF_TOPIC + 0.01))
    assert not off_topic(unmatched, with_cosines(None, None))  # lexical reranker, or none
    assert not off_topic(unmatched, [])  # nothing found: a rewrite may find something


def test_off_topic_evidence_ends_the_loop_unless_a_hop_was_earned_or_it_suffices():
    evaluation = RetrievalEvaluation(is_sufficient=False, suggested_action="rewrite", matched=False)
    kwargs = {"policy": AGENTIC, "evaluation": evaluation, "new_relevant": 0, "max_retries": 2}
    assert stop_reason(attempt=0, unrelated=True, **kwargs) == "off_topic"
    assert stop_reason(attempt=0, unrelated=False, **kwargs) == ""
    assert stop_reason(attempt=0, unrelated=True, hop=True, **kwargs) == ""  # a named document to visit
    enough = evaluation.model_copy(update={"is_sufficient": True, "suggested_action": "answer"})
    assert stop_reason(attempt=0, unrelated=True, **{**kwargs, "evaluation": enough}) == "sufficient"
