"""The agent graph, offline: routes, bounded retries, multi-hop, modes, citations and trace."""

from __future__ import annotations

import dataclasses

import pytest

from core.schemas import ChunkJudgement, RetrievalEvaluation
from core.trace import Decision, TraceEvent
from graph.builder import build_graph
from graph.run import ask
from providers.brain import offline_brain
from tests.graph_fixtures import TWO_HOP_QUESTION, TWO_HOP_ZH_QUESTION, make_context

__all__ = ["make_context"]  # the fixture is used by name


def nodes_of(result) -> list[str]:
    return [event.node for event in result.trace]


def run(context, question, **kwargs):
    return ask(build_graph(), question, context=context, **kwargs)


@pytest.mark.parametrize(
    ("question", "route"),
    [
        ("What does error code E-4711 mean?", "retrieve_hybrid"),
        ("错误码 E-4712 是什么意思？", "retrieve_hybrid"),
        ("BM25 和 HNSW 的区别是什么？", "retrieve_multi_hop"),
        ("Compare BM25 keyword search vs HNSW vector index", "retrieve_multi_hop"),
    ],
)
def test_agentic_routes_follow_the_analysis(make_context, question, route):
    result = run(make_context(), question)
    assert route in nodes_of(result)
    assert result.answer


def test_a_single_hop_question_costs_one_search_in_agentic_mode(make_context):
    for question in (
        "混合检索是如何合并结果的？",
        "How does keyword search rank chunks?",
        "What does error code E-4711 mean?",
    ):
        result = run(make_context(), question)
        searches = [n for n in nodes_of(result) if n.startswith("retrieve_")]
        assert searches == ["retrieve_hybrid"], result.trace_line()
        assert "single-hop question: one hybrid search" in result.trace[1].detail


def test_every_route_is_reachable_in_agentic_mode(make_context):
    seen: set[str] = set()
    questions = [
        "What does error code E-4711 mean?",
        "BM25 和 HNSW 的区别是什么？",
        "混合检索是如何合并结果的？",
        "How does keyword search rank chunks?",
        "Why would a feline rest on a rug all afternoon?",
        "为什么要把两种检索的结果融合在一起？",
        "Is E-9999 about a feline?",  # the identifier is nowhere: the retry searches keywords
    ]
    for question in questions:
        seen |= {n for n in nodes_of(run(make_context(), question)) if n.startswith("retrieve_")}
    # keyword search alone is the retry for a missing identifier; vector search alone is the naive
    # mode's and the retry after keyword hits alone (tests/test_offline_brain.py)
    assert seen == {"retrieve_keyword", "retrieve_multi_hop", "retrieve_hybrid"}


def test_too_few_keyword_hits_are_supplemented_by_vector_search(make_context):
    result = run(make_context(), "Is E-9999 about a feline?")
    keyword = next(e for e in result.trace if e.node == "retrieve_keyword")
    assert keyword.decision is Decision.TOPPED_UP


@pytest.mark.parametrize(
    ("question", "expected_chunk"),
    [
        ("What does error code E-4711 mean?", "err-4711"),
        ("混合检索用什么算法合并结果？", "rrf-zh"),
    ],
)
def test_answers_cite_the_chunks_they_come_from(make_context, question, expected_chunk):
    result = run(make_context(), question)
    assert not result.insufficient
    cited = [c.chunk_id for c in result.citations]
    assert expected_chunk in cited
    for citation in result.citations:
        assert f"[{citation.number}]" in result.answer
        assert citation.source


@pytest.mark.parametrize(
    ("question", "phrase"),
    [
        ("What is the population of the capital of Mongolia?", "cannot be determined"),
        ("蒙古国首都的人口是多少？", "根据现有资料无法确定"),
    ],
)
def test_insufficient_evidence_is_said_plainly_and_the_loop_ends(make_context, question, phrase):
    result = run(make_context(), question)
    assert result.insufficient
    assert phrase in result.answer
    assert result.stop_reason in ("no_progress", "max_retries")
    assert "rewrite_query" in nodes_of(result)


def test_retry_exit_max_retries(make_context):
    def judge(question, analysis, chunks, tried):
        """Finds every chunk relevant yet never enough: only the retry budget can stop it."""
        return RetrievalEvaluation(
            judgements=[ChunkJudgement(chunk_id=c.id, relevance=1.0) for c in chunks],
            is_sufficient=False,
            missing_info=[f"more about {question} #{len(tried)}"],
            suggested_action="rewrite",
        )

    def rewrite(question, evaluation, tried):
        # Each retry asks about something new, so every retry makes progress.
        return ["error code E-4711", "the cat on the mat", "安装 Python 版本"][len(tried) - 1]

    always_hungry = dataclasses.replace(offline_brain(), judge=judge, rewrite=rewrite)
    result = run(make_context(always_hungry, max_retries=2, top_k=3, candidate_k=3), "HNSW 是什么？")
    assert result.stop_reason == "max_retries"
    assert nodes_of(result).count("rewrite_query") == 2
    assert nodes_of(result).count("evaluate") == 3


def test_retry_exit_no_progress(make_context):
    result = run(make_context(max_retries=10), "What is the population of the capital of Mongolia?")
    assert result.stop_reason == "no_progress"
    assert nodes_of(result).count("rewrite_query") < 10


def test_retry_exit_recursion_limit_is_the_last_guard(make_context):
    def judge(question, analysis, chunks, tried):
        return RetrievalEvaluation(
            judgements=[ChunkJudgement(chunk_id=c.id, relevance=1.0) for c in chunks],
            is_sufficient=False,
            suggested_action="rewrite",
        )

    context = make_context(
        dataclasses.replace(offline_brain(), judge=judge),
        max_retries=1000,
        recursion_limit=12,
        top_k=2,
        candidate_k=2,
    )
    result = run(context, "HNSW 是什么？")
    assert result.stop_reason == "recursion_limit"
    assert "AGENTIC_RAG_RECURSION_LIMIT" in result.error


def test_multi_hop_reaches_a_passage_only_linked_through_the_first(make_context):
    context = make_context()
    single = context.retrievers.hybrid.search(TWO_HOP_QUESTION, 2)
    assert "hop-2" not in [h.id for h in single]
    result = run(context, TWO_HOP_QUESTION, mode="agentic")
    found = context.retrievers.multi_hop.search(TWO_HOP_QUESTION, 10)
    assert "hop-2" in [h.id for h in found]
    assert "hop-2" in result.ranked_ids[: context.settings.top_k]


@pytest.mark.parametrize(
    ("question", "target", "reason"),
    [
        (TWO_HOP_QUESTION, "hop-2", "one hop further"),
        (TWO_HOP_ZH_QUESTION, "zhhop-2", "nested relation"),
    ],
)
def test_agentic_hops_when_the_evidence_names_a_document_it_did_not_judge(
    make_context, question, target, reason
):
    """With few passages judged, the linked document is not among them: the agent hops to it (where
    the index has no entity graph; with one, the first search's walk already reaches it)."""
    result = run(make_context(top_k=3, entity_graph=False), question, mode="agentic")
    hop = next(e for e in result.trace if e.node == "retrieve_multi_hop")
    assert reason in hop.detail and hop.counts["bridge_hops"] >= 1
    assert target in result.ranked_ids[:10]
    walked = run(make_context(top_k=3), question, mode="agentic")
    assert target in walked.ranked_ids[:10], walked.trace_line()


@pytest.mark.parametrize("mode", ["naive", "keyword", "hybrid", "hybrid_rerank", "self_query", "agentic"])
def test_every_mode_runs_through_the_same_graph(make_context, mode):
    result = run(make_context(), "BM25 和 HNSW 的区别是什么？", mode=mode)
    assert result.mode == mode
    assert result.answer
    nodes = nodes_of(result)
    assert nodes[0] == "contextualize" and nodes[-1] == "verify"
    assert ("analyze_query" in nodes) == (mode in ("self_query", "agentic"))
    if mode != "agentic":
        assert "rewrite_query" not in nodes and result.stop_reason == "single_pass"


@pytest.mark.parametrize("question", ["", "   ", "x" * 5000])
def test_empty_or_huge_questions_get_a_clear_message(make_context, question):
    result = run(make_context(), question)
    assert result.stop_reason == "invalid_input"
    assert "empty" in result.answer or "limit" in result.answer


def test_unknown_mode_is_a_clear_error(make_context):
    result = run(make_context(), "What is HNSW?", mode="turbo")
    assert "Unknown mode" in result.answer


def test_trace_records_every_node_with_timing(make_context):
    result = run(make_context(), "混合检索是如何合并结果的？")
    assert all(isinstance(event, TraceEvent) and event.ms >= 0 for event in result.trace)
    assert result.model_calls == 0  # the offline brain makes no model calls
    assert "analyze_query" in result.trace_line()


def test_stream_updates_show_progress_node_by_node(make_context):
    context = make_context()
    app = build_graph()
    nodes = []
    for update in app.stream({"question": "What is HNSW?"}, context=context, stream_mode="updates"):
        nodes.extend(update.keys())
    assert nodes[0] == "contextualize" and nodes[-2:] == ["verify", "cache_answer"]
    assert "evaluate" in nodes
