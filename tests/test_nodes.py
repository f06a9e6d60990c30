"""Each node called directly with a typed state and a real context (index, offline brain, lexical
reranker): what it writes to the state and the trace event it records. Chinese and English cases."""

from __future__ import annotations

import dataclasses

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.runtime import Runtime

from core.chunks import Chunk, ScoredChunk
from core.schemas import ChunkJudgement, Citation, Passage, QueryAnalysis, RetrievalEvaluation
from core.trace import Decision
from nodes.analyze_query import analyze_query
from nodes.compress import compress
from nodes.contextualize import contextualize
from nodes.evaluate import evaluate
from nodes.generate import generate
from nodes.rerank import rerank
from nodes.retrieve_hybrid import retrieve_hybrid
from nodes.retrieve_keyword import retrieve_keyword
from nodes.retrieve_multi_hop import fan_out, merge_hops, search_sub_query
from nodes.retrieve_vector import retrieve_vector
from nodes.rewrite_query import rewrite_query
from nodes.state import HopHits, SubQuery
from nodes.verify import verify
from providers.rerankers import LexicalReranker
from tests.graph_fixtures import TWO_HOP, TWO_HOP_QUESTION, TWO_HOP_ZH, TWO_HOP_ZH_QUESTION, make_context

__all__ = ["make_context"]  # the fixture is used by name


@pytest.fixture
def runtime(make_context):
    def build(**overrides) -> Runtime:
        return Runtime(context=make_context(**overrides))

    return build


def hit(chunk_id: str, text: str, *, score: float = 1.0, ranks: dict[str, int] | None = None) -> ScoredChunk:
    return ScoredChunk(
        chunk=Chunk(id=chunk_id, text=text, source=f"docs/{chunk_id}.md"), score=score, ranks=ranks or {}
    )


# --- contextualize ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("first", "answer", "follow_up"),
    [
        ("HNSW 是什么？", "HNSW 是一种图索引 [1]。", "它的内存占用高吗？"),
        ("What is HNSW?", "HNSW is a graph index [1].", "How much memory does it use?"),
    ],
)
def test_contextualize_rewrites_a_follow_up_and_resets_the_turn(runtime, first, answer, follow_up):
    state = {
        "messages": [HumanMessage(first), AIMessage(answer), HumanMessage(follow_up)],
        "answer": "last turn's answer",
        "reranked": [hit("old", "old evidence")],
    }
    update = contextualize(state, runtime())
    assert update["question"] == follow_up
    assert "HNSW" in update["standalone_question"]
    assert update["answer"] == "" and update["reranked"] == []
    [_, event] = update["trace"]
    assert event.decision is Decision.FOLLOW_UP and event.detail == update["standalone_question"]


@pytest.mark.parametrize("question", ["", "x" * 50])
def test_contextualize_rejects_bad_input_with_a_message(runtime, question):
    update = contextualize({"question": question}, runtime(max_question_chars=20))
    assert update["stop_reason"] == "invalid_input" and update["error"]
    assert update["trace"][-1].decision is Decision.INVALID_INPUT


# --- analyze_query ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("question", "strategy"),
    [("错误码 E-4712 是什么意思？", "hybrid"), ("What does error code E-4711 mean?", "hybrid")],
)
def test_analyze_query_stores_the_analysis_and_the_first_strategy(runtime, question, strategy):
    update = analyze_query({"question": question, "mode": "agentic"}, runtime())
    assert isinstance(update["analysis"], QueryAnalysis)
    assert update["strategy"] == strategy and update["query"] == question
    assert update["trace"][0].decision is Decision.ROUTED


# --- retrieve_* ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("question", ["混合检索是如何合并结果的？", "How does hybrid search merge results?"])
@pytest.mark.parametrize("node", [retrieve_vector, retrieve_hybrid])
def test_retrieve_nodes_search_and_record_the_query(runtime, node, question):
    update = node({"question": question, "queries_tried": ["earlier"]}, runtime())
    assert update["retrieved"] and all(isinstance(h, ScoredChunk) for h in update["retrieved"])
    assert update["queries_tried"] == ["earlier", question]
    assert update["trace"][0].decision is Decision.SEARCHED


@pytest.mark.parametrize(
    ("mode", "decision"), [("agentic", Decision.TOPPED_UP), ("keyword", Decision.SEARCHED)]
)
def test_keyword_search_is_topped_up_by_vectors_unless_the_mode_is_keyword(runtime, mode, decision):
    update = retrieve_keyword({"question": "Is E-9999 about a feline?", "mode": mode}, runtime())
    event = update["trace"][0]
    assert event.decision is decision
    assert (len(update["retrieved"]) > event.counts["keyword_hits"]) == (decision is Decision.TOPPED_UP)


def test_multi_hop_fans_out_one_typed_send_per_sub_query():
    analysis = QueryAnalysis(sub_queries=["BM25 是什么", "spouse of <director of Inception>"])
    sends = fan_out(
        {"question": "BM25 和 HNSW 的区别？", "analysis": analysis, "filters": {"language": "zh"}}
    )
    payloads = [send.arg for send in sends]
    assert all(isinstance(p, SubQuery) for p in payloads)
    assert [p.sub_query for p in payloads] == [
        "BM25 是什么",
        "spouse of director of Inception",
        "BM25 和 HNSW 的区别？",
    ]
    assert payloads[0].filters.language == "zh"


def titled(chunk_id: str, title: str, text: str) -> ScoredChunk:
    return ScoredChunk(
        chunk=Chunk(id=chunk_id, text=text, source=f"history/{chunk_id}.md", title=title), score=1.0
    )


HOP_CASES = [
    (TWO_HOP_QUESTION, TWO_HOP, "Harbor Lights Festival"),
    (TWO_HOP_ZH_QUESTION, TWO_HOP_ZH, "灯河往事"),
]


@pytest.mark.parametrize(("question", "chain", "target"), HOP_CASES, ids=["en", "zh"])
def test_evaluate_looks_one_hop_further_only_through_a_document_the_search_did_not_find(
    runtime, question, chain, target
):
    """A question word is missing and the best passage names a corpus document not retrieved: hop
    there, once; the same passage with that document already retrieved is answered as it is."""
    rt = runtime()
    first = titled(*chain[0])
    state = {"question": question, "mode": "agentic", "analysis": QueryAnalysis(), "reranked": [first]}
    update = evaluate(state, rt)
    event = update["trace"][0]
    assert update["stop_reason"] == "" and update["hop_targets"] == [target]
    assert event.decision is Decision.RETRY and "one hop further" in event.detail and target in event.detail
    assert update["evaluation"].suggested_action == "multi_hop"

    covered = evaluate({**state, "reranked": [first, titled(*chain[1])]}, rt)
    assert covered["hop_targets"] == [] and "one hop further" not in covered["trace"][0].detail
    again = evaluate({**state, "attempt": 1}, rt)
    assert again["hop_targets"] == [] and again["evaluation"].suggested_action != "multi_hop"
    single_pass = evaluate({**state, "mode": "self_query"}, rt)
    assert "hop_targets" not in single_pass and single_pass["stop_reason"] == "single_pass"


@pytest.mark.parametrize(("question", "chain", "target"), HOP_CASES, ids=["en", "zh"])
def test_one_hop_further_searches_the_named_documents_and_keeps_the_first_search(
    runtime, question, chain, target
):
    """The hop costs one search per named document: the question is not searched again."""
    rt = runtime()
    first = titled(*chain[0])
    state = {
        "question": question,
        "mode": "agentic",
        "query": question,
        "queries_tried": [question],
        "retrieved": [first],
        "hop_targets": [target],
        "evaluation": RetrievalEvaluation(suggested_action="multi_hop", missing_info=["founded"]),
    }
    rewritten = rewrite_query(state, rt)
    assert rewritten["query"] == question and rewritten["strategy"] == "multi_hop"
    assert f"one hop further through {target}" in rewritten["trace"][0].detail
    sends = fan_out(state)
    assert [(s.arg.sub_query, s.arg.through) for s in sends] == [(question, target)]
    hops = [search_sub_query(s.arg, rt)["hop_hits"][0] for s in sends]
    assert hops[0].hits and {h.chunk.title for h in hops[0].hits} == {target}
    update = merge_hops({**state, "hop_hits": hops}, rt)
    event = update["trace"][0]
    assert event.counts["sub_queries"] == 0 and event.counts["bridge_hops"] == 1
    assert "one hop further" in event.detail
    ids = [h.id for h in update["retrieved"]]
    assert ids[0] == chain[0][0] and chain[1][0] in ids
    assert update["hop_targets"] == [] and update["hop_hits"] == ["__reset__"]


NESTED = QueryAnalysis(
    sub_queries=["celebrations the Quillon Bridge was opened during", "founder of <celebrations>"]
)


@pytest.mark.parametrize(
    ("mode", "analysis", "bridges"),
    [("agentic", NESTED, True), ("agentic", QueryAnalysis(), False), ("self_query", NESTED, False)],
    ids=["agentic-nested", "agentic-single-hop", "self-query"],
)
def test_merge_hops_takes_the_second_hop_only_when_policy_and_question_call_for_it(
    runtime, mode, analysis, bridges
):
    rt = runtime()
    [found] = search_sub_query(SubQuery(sub_query=TWO_HOP_QUESTION), rt)["hop_hits"]
    state = {"question": TWO_HOP_QUESTION, "mode": mode, "analysis": analysis, "hop_hits": [found]}
    update = merge_hops(state, rt)
    event = update["trace"][0]
    assert (event.counts["bridge_hops"] > 0) == bridges
    assert ("nested relation" in event.detail) == bridges
    found_by = {h.id: h.ranks for h in update["retrieved"]}
    assert ("hop2" in found_by["hop-2"]) == bridges
    assert update["hop_hits"] == ["__reset__"]


# --- rerank -------------------------------------------------------------------------------------------


def reranking(runtime, mode: str = "agentic") -> Runtime:
    rt = runtime()
    return Runtime(context=dataclasses.replace(rt.context, reranker=LexicalReranker()))


@pytest.mark.parametrize(
    ("question", "kept", "new"),
    [
        ("HNSW 的内存占用", "HNSW 的内存占用较高，因为每个节点保存多层邻居。", "向量检索使用余弦相似度。"),
        (
            "HNSW memory use",
            "HNSW memory use is high because every node keeps neighbours.",
            "Cosine similarity.",
        ),
    ],
)
def test_rerank_keeps_evidence_judged_relevant_earlier(runtime, question, kept, new):
    """A retry can only add evidence: a chunk judged relevant before stays although the new search missed it."""
    state = {
        "question": question,
        "retrieved": [hit("new-1", new)],
        "reranked": [hit("old-1", kept), hit("old-2", "unrelated")],
        "relevant_ids": ["old-1"],
    }
    update = rerank(state, reranking(runtime))
    assert {h.id for h in update["reranked"]} == {"new-1", "old-1"}
    assert update["trace"][0].decision is Decision.RERANKED


def test_rerank_pins_passages_only_the_second_hop_found(runtime):
    question = "Who started the festival the Quillon Bridge opening was part of?"
    fused = [
        hit("a", "The Quillon Bridge opened in 1932.", ranks={"hop1": 1}),
        hit("b", "Quillon Bridge opening festival started by bridge builders.", ranks={"hop1": 2}),
        hit("bridge-only", "Marta Kowalczyk, a painter, designed its paper lanterns.", ranks={"hop2": 1}),
        hit("c", "Who started the Quillon Bridge opening festival? The festival bridge.", ranks={"hop1": 3}),
    ]
    update = rerank({"question": question, "retrieved": fused}, reranking(runtime))
    assert [h.id for h in update["reranked"]].index("bridge-only") == 2


def test_rerank_is_skipped_by_single_pass_modes(runtime):
    update = rerank({"question": "q", "mode": "hybrid", "retrieved": [hit("a", "x")]}, reranking(runtime))
    assert [h.id for h in update["reranked"]] == ["a"]
    assert update["trace"][0].decision is Decision.SKIPPED


# --- evaluate and rewrite_query -----------------------------------------------------------------------


def judged(brain_judge):
    def build(runtime_, **overrides):
        rt = runtime_(**overrides)
        return Runtime(
            context=dataclasses.replace(
                rt.context, brain=dataclasses.replace(rt.context.brain, judge=brain_judge)
            )
        )

    return build


def hungry(question, analysis, chunks, tried):
    return RetrievalEvaluation(
        judgements=[ChunkJudgement(chunk_id=c.id, relevance=0.9) for c in chunks],
        is_sufficient=False,
        suggested_action="retry_keyword",
        missing_info=["E-4711"],
    )


@pytest.mark.parametrize(
    ("attempt", "relevant_before", "decision", "reason"),
    [
        (0, [], Decision.RETRY, ""),
        (2, [], Decision.STOPPED, "max_retries"),
        (1, ["a"], Decision.STOPPED, "no_progress"),
    ],
)
def test_evaluate_retries_until_a_stop_rule_fires(runtime, attempt, relevant_before, decision, reason):
    state = {
        "question": "错误码 E-4711 是什么？",
        "mode": "agentic",
        "reranked": [hit("a", "E-4711 表示磁盘已满。")],
        "relevant_ids": relevant_before,
        "attempt": attempt,
    }
    update = evaluate(state, judged(hungry)(runtime, max_retries=2))
    assert update["stop_reason"] == reason
    assert update["trace"][0].decision is decision
    assert isinstance(update["evaluation"], RetrievalEvaluation)


def test_evaluate_is_skipped_in_single_pass_modes(runtime):
    update = evaluate({"question": "What is HNSW?", "mode": "hybrid_rerank"}, runtime())
    assert update["stop_reason"] == "single_pass" and update["trace"][0].decision is Decision.SKIPPED


@pytest.mark.parametrize("question", ["错误码是什么意思？", "What does the error code mean?"])
def test_rewrite_query_writes_a_new_query_and_the_next_strategy(runtime, question):
    evaluation = RetrievalEvaluation(missing_info=["E-4711"], suggested_action="retry_keyword")
    state = {"question": question, "evaluation": evaluation, "queries_tried": [question], "attempt": 0}
    update = rewrite_query(state, runtime())
    assert update["query"] != question and "E-4711" in update["query"]
    assert update["strategy"] == "keyword" and update["attempt"] == 1
    assert update["trace"][0].query == update["query"]


# --- compress, generate, verify -----------------------------------------------------------------------


def test_compress_puts_relevant_chunks_first_within_top_k(runtime):
    hits = [hit("x", "HNSW is a graph index."), hit("y", "BM25 scores terms."), hit("z", "RRF fuses lists.")]
    state = {"question": "What do HNSW and RRF do?", "reranked": hits, "relevant_ids": ["z"]}
    update = compress(state, runtime(top_k=2))
    assert [p.chunk_id for p in update["passages"]] == ["z", "x"]  # relevant first; "y" is past top_k
    assert [p.number for p in update["passages"]] == [1, 2]


@pytest.mark.parametrize(
    ("question", "text"),
    [
        ("HNSW 是什么？", "HNSW 是一种基于图的近似最近邻索引。"),
        ("What is HNSW?", "HNSW is a graph-based approximate nearest neighbour index."),
    ],
)
def test_generate_cites_real_passages_only(runtime, question, text):
    passages = [Passage(number=1, chunk_id="h", source="docs/hnsw.md", text=text)]
    update = generate({"question": question, "passages": passages}, runtime())
    assert "[1]" in update["answer"] and [c.chunk_id for c in update["citations"]] == ["h"]
    assert update["trace"][0].decision is Decision.ANSWERED


PASSAGE_ZH = "HNSW 是一种基于图的近似最近邻索引。它的内存占用较高。"
PASSAGE_EN = "HNSW is a graph-based approximate nearest neighbour index. Its memory use is high."


@pytest.mark.parametrize(
    ("text", "answer", "unsupported"),
    [
        (PASSAGE_ZH, "HNSW 是一种基于图的近似最近邻索引 [1]。月球表面覆盖着奶酪和巧克力 [1]。", "月球"),
        (
            PASSAGE_EN,
            "HNSW is a graph-based approximate nearest neighbour index [1]. The moon is cheese and chocolate [1].",
            "moon",
        ),
    ],
)
@pytest.mark.parametrize("remove", [True, False])
def test_verify_removes_unsupported_sentences_when_asked(runtime, text, answer, unsupported, remove):
    passages = [Passage(number=1, chunk_id="h", source="docs/hnsw.md", text=text)]
    state = {"question": "HNSW?", "answer": answer, "passages": passages, "citations": []}
    update = verify(state, runtime(remove_unsupported=remove))
    event = update["trace"][0]
    assert event.counts["unsupported"] == 1 and event.counts["supported"] == 1
    final = update["messages"][0].content
    assert (unsupported in final) is not remove
    assert event.decision is (Decision.REMOVED_UNSUPPORTED if remove else Decision.VERIFIED)


def test_citations_are_numbered_by_first_use():
    from core.schemas import Passage
    from nodes.citations import renumber_by_first_use

    passages = [Passage(number=n, chunk_id=f"c{n}", source=f"{n}.md", text=f"text {n}") for n in (1, 2, 3)]
    answer, renumbered = renumber_by_first_use("甲[3]。B [1]. 丙[3]。", passages)
    assert answer == "甲[1]。B [2]. 丙[1]。"
    assert [(p.number, p.chunk_id) for p in renumbered] == [(1, "c3"), (2, "c1"), (3, "c2")]
    same, unchanged = renumber_by_first_use("A [1]. B [2].", passages)
    assert same == "A [1]. B [2]." and unchanged == passages


@pytest.mark.parametrize("answer", ["尤金袋鼠被认为是害虫[1]。", "Eugene's wallaby is a pest [1]."])
def test_the_support_check_sees_the_writers_numbers_even_where_compression_left_gaps(answer):
    """Issue 22: compression dropped passages 2 and 4-6, so the writer read [1] [3] [7]; the check must
    show the same numbers (a llama.cpp server then reuses the writer's whole passages block), and its
    verdicts come back in the reader's numbering."""
    from core.schemas import Passage, SentenceSupport
    from nodes.citations import check_as_written, renumber_by_first_use

    written = [Passage(number=n, chunk_id=f"c{n}", source=f"{n}.md", text=f"text {n}") for n in (1, 3, 7)]
    as_writer = answer.replace("[1]", "[7]")
    reader_answer, reader_passages = renumber_by_first_use(as_writer, written)
    assert reader_answer == answer and [p.chunk_id for p in reader_passages] == ["c7", "c1", "c3"]
    seen: list[tuple[str, list[int]]] = []

    def check(text: str, passages: list[Passage]) -> list[SentenceSupport]:
        seen.append((text, [p.number for p in passages]))
        return [SentenceSupport(sentence=text, cited=[7], supported=True)]

    numbers = {p.chunk_id: p.number for p in written}
    [support] = check_as_written(check, reader_answer, reader_passages, numbers)
    assert seen == [(as_writer, [1, 3, 7])]
    assert support.cited == [1] and support.sentence == answer


def cite(number: int, chunk_id: str = "h") -> Citation:
    return Citation(number=number, chunk_id=chunk_id, source="docs/hnsw.md")


@pytest.mark.parametrize(
    ("text", "answer", "kept"),
    [
        (
            PASSAGE_EN,
            "HNSW is a graph-based approximate nearest neighbour index [1]. The moon is cheese [1]. "
            "Its memory use is high [2].",
            "HNSW is a graph-based approximate nearest neighbour index [1]. Its memory use is high [2].",
        ),
        (
            PASSAGE_ZH,
            "HNSW 是一种基于图的近似最近邻索引 [1]。月球表面覆盖着奶酪和巧克力 [1]。它的内存占用较高 [2]。",
            "HNSW 是一种基于图的近似最近邻索引 [1]。 它的内存占用较高 [2]。",
        ),
    ],
)
def test_verify_keeps_the_supported_sentences_and_their_citations(runtime, text, answer, kept):
    passages = [
        Passage(number=1, chunk_id="h", source="docs/hnsw.md", text=text),
        Passage(number=2, chunk_id="m", source="docs/memory.md", text=text),
    ]
    state = {
        "question": "HNSW?",
        "answer": answer,
        "passages": passages,
        "citations": [cite(1), cite(2, "m")],
    }
    update = verify(state, runtime(remove_unsupported=True))
    assert update["answer"] == kept
    assert [c.chunk_id for c in update["citations"]] == ["h", "m"]
    assert update["messages"][0].content == kept
    assert update["messages"][0].additional_kwargs["citations"] == [
        c.model_dump() for c in update["citations"]
    ]
    assert [s.supported for s in update["support"]] == [True, False, True]
    assert update["trace"][0].counts == {"sentences": 3, "supported": 2, "unsupported": 1}


def test_verify_leaves_a_supported_answer_and_its_citations_alone(runtime):
    passages = [Passage(number=1, chunk_id="h", source="docs/hnsw.md", text=PASSAGE_EN)]
    answer = "HNSW is a graph-based approximate nearest neighbour index [1]."
    state = {"question": "HNSW?", "answer": answer, "passages": passages, "citations": [cite(1)]}
    update = verify(state, runtime(remove_unsupported=True))
    assert "answer" not in update and update["trace"][0].decision is Decision.VERIFIED
    assert update["trace"][0].counts["unsupported"] == 0
    assert update["messages"][0].additional_kwargs["citations"] == [cite(1).model_dump()]


@pytest.mark.parametrize(
    ("state", "why"),
    [
        (
            {
                "answer": "HNSW is a graph-based approximate nearest neighbour index [1]. The moon is cheese [1].",
                "insufficient": True,
            },
            "an insufficient answer is left as said",
        ),
        ({"answer": "The moon is cheese [1]."}, "nothing would be left: the answer stays, flagged"),
    ],
)
def test_verify_never_empties_an_answer(runtime, state, why):
    passages = [Passage(number=1, chunk_id="h", source="docs/hnsw.md", text=PASSAGE_EN)]
    update = verify(
        {"question": "HNSW?", "passages": passages, "citations": [], **state},
        runtime(remove_unsupported=True),
    )
    assert update["messages"][0].content == state["answer"], why
    assert update["trace"][0].counts["unsupported"] == 1


def test_verify_without_passages_checks_nothing_and_an_error_becomes_the_reply(runtime):
    update = verify({"question": "q", "answer": "Something [1].", "passages": []}, runtime())
    assert update["support"] == [] and update["trace"][0].counts["sentences"] == 0
    failed = verify({"question": "", "error": "The question is empty. / 问题为空。"}, runtime())
    assert failed == {
        "messages": [
            AIMessage(content="The question is empty. / 问题为空。", additional_kwargs={"citations": []})
        ]
    }


@pytest.mark.parametrize(
    ("question", "text"),
    [
        ("HNSW 的内存占用为什么高？", "HNSW 的内存占用较高，因为每个节点保存多层邻居。"),
        (
            "Why is the memory use of HNSW high?",
            "The memory use of HNSW is high because every node keeps neighbours.",
        ),
    ],
)
def test_evaluate_with_the_offline_judge_finds_covering_evidence_sufficient(runtime, question, text):
    state = {
        "question": question,
        "mode": "agentic",
        "reranked": [hit("covers", text), hit("other", "Paris has mild weather in spring.")],
        "queries_tried": [question],
    }
    update = evaluate(state, runtime())
    event = update["trace"][0]
    assert event.node == "evaluate" and event.decision is Decision.SUFFICIENT
    assert update["stop_reason"] == "sufficient"
    assert update["relevant_ids"] == ["covers"] and update["new_relevant"] == 1


def test_evaluate_adds_newly_relevant_chunks_to_those_found_before_within_top_k(runtime):
    reranked = [hit(f"c{i}", f"E-4711 passage {i}") for i in range(5)]
    state = {"question": "E-4711?", "mode": "agentic", "reranked": reranked, "relevant_ids": ["old", "c0"]}
    update = evaluate(state, judged(hungry)(runtime, top_k=3))
    assert update["relevant_ids"] == ["old", "c0", "c1", "c2"]  # c3, c4 are past top_k
    assert update["new_relevant"] == 2


def test_evaluate_first_attempt_counts_from_zero(runtime):
    state = {"question": "E-4711?", "mode": "agentic", "reranked": [hit("a", "E-4711")]}
    assert evaluate(state, judged(hungry)(runtime, max_retries=1))["stop_reason"] == ""


def test_rerank_moves_passages_found_by_both_hops_freely(runtime):
    """Only passages the second hop alone found are pinned; one both hops found is reranked like any."""
    question = "Who founded the Harbor Lights Festival?"
    fused = [
        hit("a", "Bridges were opened with parades.", ranks={"hop1": 1}),
        hit("b", "River ferries carried passengers.", ranks={"hop1": 2}),
        hit("both", "Marta Kowalczyk founded the Harbor Lights Festival.", ranks={"hop1": 3, "hop2": 1}),
    ]
    update = rerank({"question": question, "retrieved": fused}, reranking(runtime))
    assert update["reranked"][0].id == "both"
